"""Garbage collection on the GUI thread only.

Python's cyclic collector runs in whichever thread allocates when a threshold is crossed. A
cycle that holds Qt objects (a closed dialog and its callbacks, a controller and its menus) is
then freed on a worker thread, and Qt widgets destroyed off the GUI thread crash the process
(CI saw it: a segfault while a pool thread started the watcher). So while the app runs,
automatic collection is off and a timer on the GUI thread collects instead, generation by
generation, when the interpreter's own thresholds are crossed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QObject, QTimer

__all__ = ["GuiThreadCollector", "collecting_on_gui_thread"]

INTERVAL_MS = 250


class GuiThreadCollector(QObject):
    """Turns automatic collection off while started; its timer collects on this thread."""

    def __init__(self, interval_ms: int = INTERVAL_MS, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._was_enabled = False
        self.collections = 0  # how many times check() collected

    @property
    def active(self) -> bool:
        return self._timer.isActive()

    def start(self) -> None:
        if self.active:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect everything once more, here, and give automatic collection back."""
        if not self.active:
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def check(self) -> None:
        """Collect the oldest generation whose count passed its threshold (and the younger ones)."""
        counts, limits = gc.get_count(), gc.get_threshold()
        due = [g for g in range(3) if limits[g] and counts[g] > limits[g]]
        if due:
            gc.collect(max(due))
            self.collections += 1


@contextmanager
def collecting_on_gui_thread(interval_ms: int = INTERVAL_MS) -> Iterator[GuiThreadCollector]:
    """A started collector for the ``with`` block (call it on the GUI thread)."""
    collector = GuiThreadCollector(interval_ms)
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()
