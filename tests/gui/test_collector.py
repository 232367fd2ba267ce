"""kvswitch_gui.collector: garbage holding Qt objects is freed on the GUI thread, never on the
worker thread that happens to allocate (the segfault CI saw), and ``kvswitch-tray`` runs so."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtWidgets import QMenu, QWidget
from pytestqt.qtbot import QtBot

from kvswitch_gui.collector import GuiThreadCollector

WAIT = 10_000


class _Cycle:
    """Cyclic garbage like a dropped controller: it refers to itself and holds Qt objects
    (only when asked: freeing widgets off the GUI thread is what must never happen)."""

    freed_on: ClassVar[list[str]] = []

    def __init__(self, qt: bool) -> None:
        self.me = self
        if qt:
            self.widget = QWidget()
            self.menu = QMenu(self.widget)
            self.menu.addAction("Split")

    def __del__(self) -> None:
        _Cycle.freed_on.append(threading.current_thread().name)


def _allocate_on_a_worker() -> list[list[int]]:
    """Containers allocated on a worker thread, and kept (the counts that trigger a collection
    are allocations less deallocations): well past the youngest generation's threshold."""
    kept: list[list[int]] = []

    def churn() -> None:
        kept.extend([] for _ in range(gc.get_threshold()[0] * 20))

    worker = threading.Thread(target=churn, name="worker")
    worker.start()
    worker.join()
    return kept


def test_without_it_a_worker_thread_frees_the_garbage(gui_thread_collection: GuiThreadCollector) -> None:
    """Why it exists (with plain objects: Qt ones would crash here)."""
    collector = gui_thread_collection  # the package's (tests/gui/conftest.py)
    assert collector.active
    collector.stop()  # automatic collection back on
    try:
        assert gc.isenabled()
        _Cycle.freed_on.clear()
        _Cycle(qt=False)
        kept = _allocate_on_a_worker()
        assert _Cycle.freed_on == ["worker"] and kept
    finally:
        collector.start()


def test_garbage_with_widgets_is_freed_on_the_gui_thread(qtbot: QtBot) -> None:
    assert not gc.isenabled()  # the package's collector is on
    _Cycle.freed_on.clear()
    for _ in range(5):
        _Cycle(qt=True)
    kept = _allocate_on_a_worker()
    assert _Cycle.freed_on == []  # the worker crossed the thresholds and freed nothing
    qtbot.waitUntil(lambda: len(_Cycle.freed_on) == 5, timeout=WAIT)  # the timer collected
    assert set(_Cycle.freed_on) == {threading.main_thread().name} and kept


def test_check_collects_only_past_a_threshold(qtbot: QtBot) -> None:
    collector = GuiThreadCollector(interval_ms=60_000)
    collector.start()
    try:
        gc.collect()
        collector.check()
        assert collector.collections == 0  # nothing due right after a full collection
        kept = _allocate_on_a_worker()
        collector.check()
        assert collector.collections == 1 and kept
    finally:
        collector.stop()
    assert not gc.isenabled()  # it gives back what it found: the package's collector had it off


def test_the_tray_app_runs_with_automatic_collection_off(kv_sandbox: dict[str, Path]) -> None:
    """``main()`` as its own process: off while the app runs, back on after it returns."""
    script = (
        "import gc\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from kvswitch_gui.app import main\n"
        "app = QApplication([])\n"
        "seen = []\n"
        "QTimer.singleShot(300, lambda: (seen.append(gc.isenabled()), app.quit()))\n"
        "rc = main(['--no-watch'])\n"
        "print(rc, seen, gc.isenabled())\n"
    )
    env: dict[str, Any] = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "0 [False] True", done.stdout + done.stderr
