"""LlamaServer: starts llama.cpp in a process of its own, waits for health, stops exactly it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kvswitch.lab.llama import LlamaServer, LlamaServerError, available
from tests.lab.conftest import require_lab
from tests.lab.support import http_get, http_post


@pytest.fixture(autouse=True)
def _lab() -> None:
    require_lab()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_available() -> None:
    assert available()


def test_command_line_maps_the_settings(tmp_path: Path) -> None:
    server = LlamaServer(
        tmp_path / "m.gguf",
        port=8123,
        ctx_size=2048,
        n_batch=256,
        n_ubatch=128,
        parallel=3,
        threads=1,
        threads_batch=2,
        slot_save_path=tmp_path / "slots",
        metrics=True,
        cont_batching=False,
        alias="tiny",
    )
    cmd = server.command()
    assert cmd[:3] == [sys.executable, "-m", "kvswitch.lab.llama"]
    flags = " ".join(cmd[3:])
    for part in (
        "--port 8123",
        "--ctx-size 2048",
        "--batch-size 256",
        "--ubatch-size 128",
        "--parallel 3",
        "--threads 1",
        "--threads-batch 2",
        "--metrics",
        f"--slot-save-path {tmp_path / 'slots'}",
        "--no-cont-batching",
        "--alias tiny",
        "--host 127.0.0.1",
    ):
        assert part in flags
    assert "--metrics" not in LlamaServer(tmp_path / "m.gguf", metrics=False).command()
    with pytest.raises(LlamaServerError, match="not started"):
        _ = server.url


def test_start_serve_stop(tiny_model: Path, tmp_path: Path) -> None:
    """Port 0 binds a free port; /health, /slots and /metrics answer; stop() ends exactly that
    process with SIGTERM (exit status 0: it shut down cleanly) and is idempotent."""
    log = tmp_path / "server.log"
    with LlamaServer(tiny_model, parallel=2, threads=1, log_path=log) as server:
        assert server.running and server.pid is not None
        pid = server.pid
        assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith(":0")
        assert http_get(f"{server.url}/health") == (200, b'{"status":"ok"}')
        _status, slots = http_get(f"{server.url}/slots")
        assert [s["n_ctx"] for s in json.loads(slots)] == [2048, 2048]  # 4096 cells split across 2 slots
        status, metrics = http_get(f"{server.url}/metrics")
        assert status == 200 and b"llamacpp:prompt_tokens_total" in metrics
        assert server.stop() == 0
    assert _gone(pid) and not server.running
    assert server.stop() is None
    assert "listening on" in log.read_text()


def test_stop_kills_a_process_that_ignores_sigterm(tiny_model: Path) -> None:
    server = LlamaServer(tiny_model, threads=1).start()
    pid = server.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # a stopped process cannot act on SIGTERM
    try:
        assert server.stop(timeout=0.5) == -signal.SIGKILL
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
    assert _gone(pid)


def test_a_broken_model_fails_with_the_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(LlamaServerError, match="exited") as info:
        LlamaServer(bad, threads=1).start()
    assert "end of the server log" in str(info.value)
    with pytest.raises(LlamaServerError, match="no model"):
        LlamaServer(tmp_path / "missing.gguf").start()


def test_slot_save_writes_into_the_directory(llama: LlamaServer, lab_dir: Path) -> None:
    """KV save/restore (what a later prefill→decode hand-off builds on) lands in
    ``slot_save_path``, not next to it."""
    http_post(
        f"{llama.url}/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hello world " * 20}], "max_tokens": 2, "id_slot": 0},
    )
    saved = http_post(f"{llama.url}/slots/0?action=save", {"filename": "handoff.bin"})
    assert saved["n_saved"] and (lab_dir / "slots" / "handoff.bin").stat().st_size > 0
    restored = http_post(f"{llama.url}/slots/1?action=restore", {"filename": "handoff.bin"})
    assert restored["n_restored"] == saved["n_saved"]


def test_module_entry_point_prints_listening_and_exits_on_sigterm(tiny_model: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvswitch.lab.llama",
            "--model",
            str(tiny_model),
            "--port",
            "0",
            "--threads",
            "1",
            "--parallel",
            "1",
            "--ctx-size",
            "1024",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("LISTENING http://127.0.0.1:"), line
        assert http_get(line.split()[1] + "/health")[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_cpus_session_and_detach(tiny_model: Path) -> None:
    """``cpus`` pins every thread of the server (the child sets its mask before llama.cpp makes
    any); ``start_new_session`` gives it a session of its own; ``detach()`` leaves it running,
    no longer stopped by ``stop()``, and hands over its process."""
    cpu = min(os.sched_getaffinity(0))
    server = LlamaServer(tiny_model, threads=1, parallel=1, ctx_size=1024, cpus=[cpu], start_new_session=True)
    assert server.command()[-2:] == ["--cpus", str(cpu)]
    assert LlamaServer(tiny_model, cpus=[3, 1, 3]).command()[-2:] == ["--cpus", "1,3"]
    assert "--cpus" not in LlamaServer(tiny_model).command()
    server.start()
    pid = server.pid
    assert pid is not None
    proc = None
    try:
        assert os.getsid(pid) == pid
        masks = set()
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    masks.add(line.split(":", 1)[1].strip())
        assert masks == {str(cpu)}
        url = server.url
        proc = server.detach()
        assert proc.pid == pid and not server.running and server.pid is None
        assert server.stop() is None  # no longer its to stop
        assert http_get(f"{url}/health")[0] == 200
        with pytest.raises(LlamaServerError, match="not started"):
            server.detach()
    finally:
        if proc is not None:
            proc.terminate()
            assert proc.wait(10) == 0
        else:
            server.stop()
    assert _gone(pid)
