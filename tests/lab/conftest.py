"""The real peer: llama.cpp's own HTTP server, serving a tiny model generated for the session.

How the server is started (once per test session, by the ``llama`` fixture):

1. ``kvswitch.lab.model.make_model(<session tmp>/tiny.gguf)`` writes the ``tiny`` preset
   (4 layers, hidden 256, seeded random weights, SPM vocabulary of whole English words, ChatML
   template; ~20 MB, ~0.5 s). Nothing is downloaded.
2. ``kvswitch.lab.llama.LlamaServer(model, port=0, parallel=2, threads=THREADS, metrics=True,
   slot_save_path=<session tmp>/slots, log_path=<session tmp>/llama.log).start()`` runs
   ``python -m kvswitch.lab.llama --model … --host 127.0.0.1 --port 0 --ctx-size 4096
   --batch-size 512 --ubatch-size 512 --parallel 2 --threads 1 --metrics --slot-save-path …``
   in a process of its own (llama.cpp's C++ server from the ``xllamacpp`` wheel), reads the
   ``LISTENING http://127.0.0.1:<port>`` line and waits for ``GET /health`` = 200 (~0.2 s).
   Two slots of 2048 tokens each.
   One compute thread, not two: on a 2-core box the test client shares the cores, and with
   ``--threads 2`` any other busy process stalls llama.cpp's thread barrier — single requests
   then took 0.3–2 s instead of 15–250 ms (measured with one or two busy loops beside it),
   while ``--threads 1`` stayed within 1.5× of its median. Timing tests need the quiet one.
3. At the end of the session ``stop()`` sends SIGTERM to that one process (SIGKILL after 10 s).

The tests need the ``lab`` packages (``xllamacpp``, ``gguf``, ``numpy``; the ``test`` extra
installs them) and the system's ``libgomp.so.1`` (Debian ``libgomp1``; tests/run.py installs
it). Without them the tests skip — but fail under ``CI=true``.

Test clients here open a new connection per streamed request (``fresh_client``): llama.cpp
closes the connection right after every streamed response although it advertises keep-alive,
and a pooled connection reused in that instant fails (see test_probe_llama.py).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from ctypes.util import find_library
from pathlib import Path

import pytest

from kvswitch.lab.llama import LlamaServer
from tests.lab.support import MODEL_NAME

THREADS = 1


def require_lab() -> None:
    """Skip without the lab packages, but fail under CI (CI must install them)."""
    missing = [m for m in ("xllamacpp", "gguf", "numpy") if importlib.util.find_spec(m) is None]
    if find_library("gomp") is None:  # xllamacpp's server links the system's OpenMP runtime
        missing.append("libgomp1 (Debian package)")
    if missing:
        message = f"{', '.join(missing)} not installed (tests/run.py installs them)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def lab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lab")


@pytest.fixture(scope="session")
def tiny_model(lab_dir: Path) -> Path:
    require_lab()
    from kvswitch.lab.model import make_model

    return make_model(lab_dir / "tiny.gguf", preset="tiny", seed=0)


@pytest.fixture(scope="session")
def llama(tiny_model: Path, lab_dir: Path) -> Iterator[LlamaServer]:
    """The running server (``.url`` is ``http://127.0.0.1:<port>``)."""
    server = LlamaServer(
        tiny_model,
        port=0,
        ctx_size=4096,
        n_batch=512,
        n_ubatch=512,
        parallel=2,
        threads=THREADS,
        metrics=True,
        slot_save_path=lab_dir / "slots",
        log_path=lab_dir / "llama.log",
        alias=MODEL_NAME,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
