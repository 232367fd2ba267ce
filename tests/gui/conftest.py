"""GUI tests: offscreen Qt (unless a test starts its own X server), garbage collected on the GUI
thread only (as the app does), a kvswitch sandbox with the article's two client files
registered, and the deterministic SSE server for the probe."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from kvswitch.testing.sse_server import SSEServer


@pytest.fixture(scope="package", autouse=True)
def gui_thread_collection(qapp: object) -> Iterator[object]:
    """What ``kvswitch-tray`` does: no collection on worker threads, where freeing a dropped
    controller's widgets would crash; its timer collects here, and once more at the end."""
    from kvswitch_gui.collector import collecting_on_gui_thread

    with collecting_on_gui_thread() as collector:
        yield collector


@pytest.fixture
def kv_sandbox(sandbox: Path) -> dict[str, Path]:
    """``kvswitch init`` done: the config and both client files, paths by name."""
    from kvswitch.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["init", "--preset", "taotoken", "--model", "gpt-4o-mini", "--no-key"]) == 0
    home = Path(os.environ["HOME"])
    return {
        "cline": home / ".cline" / "settings.json",
        "ccswitch": home / ".config" / "cc-switch" / "config.toml",
        "config": Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml",
    }


@pytest.fixture
def sse_server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=30, split_ttft_ms=90, itl_ms=2, tokens=6, model="gpt-4o-mini") as srv:
        yield srv
