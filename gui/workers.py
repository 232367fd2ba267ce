"""Running library calls off the GUI thread: one helper, ``run_in_thread``.

A ``Task`` (QRunnable on the global QThreadPool) runs a callable and reports through queued Qt
signals: ``progress(done, total, text)``, ``finished(result)`` or ``failed(exception)``. The
callable may accept a ``progress`` keyword (a plain function it can call from its thread) and a
``cancel`` keyword (a ``threading.Event``); ``Task.cancel()`` sets it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

__all__ = ["Task", "run_in_thread"]


class _Signals(QObject):
    progress = Signal(int, int, str)
    finished = Signal(object)
    failed = Signal(object)


class Task(QRunnable):
    """A callable run on the thread pool; connect to ``signals`` before starting it."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.signals = _Signals()
        self.cancel_event = threading.Event()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        params = inspect.signature(fn).parameters
        if "progress" in params:
            self._kwargs["progress"] = lambda done, total, text="": self.signals.progress.emit(done, total, str(text))
        if "cancel" in params:
            self._kwargs["cancel"] = self.cancel_event
        self.setAutoDelete(False)  # the caller keeps a reference while it matters

    def cancel(self) -> None:
        self.cancel_event.set()

    def run(self) -> None:
        try:
            result = self._fn(*self._args, **self._kwargs)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI thread
            self.signals.failed.emit(exc)
        else:
            self.signals.finished.emit(result)


def run_in_thread(
    fn: Callable[..., Any],
    *args: Any,
    on_done: Callable[[Any], None] | None = None,
    on_error: Callable[[BaseException], None] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    **kwargs: Any,
) -> Task:
    """Start ``fn`` on the thread pool; the callbacks run on the GUI thread."""
    task = Task(fn, *args, **kwargs)
    if on_done is not None:
        task.signals.finished.connect(on_done)
    if on_error is not None:
        task.signals.failed.connect(on_error)
    if on_progress is not None:
        task.signals.progress.connect(on_progress)
    QThreadPool.globalInstance().start(task)
    return task
