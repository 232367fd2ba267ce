"""Running library calls off the GUI thread: ``run_in_thread``, and ``Tasks`` for an owner
(a window, the tray) that keeps its running tasks and drops late callbacks once it is gone.

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

__all__ = ["Task", "Tasks", "run_in_thread"]


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


class Tasks:
    """The tasks one owner has running. Each is kept alive until it reports back; its
    callbacks are dropped when ``alive()`` says the owner is gone or closing (unless the task
    was started with ``always=True``). Truthy while any task runs."""

    def __init__(self, alive: Callable[[], bool] | None = None) -> None:
        self._running: set[Task] = set()
        self._alive = alive

    def __len__(self) -> int:
        return len(self._running)

    def __bool__(self) -> bool:
        return bool(self._running)

    def run(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_progress: Callable[[int, int, str], None] | None = None,
        always: bool = False,
    ) -> Task:
        """``run_in_thread(fn, *args)``; the callbacks run on the GUI thread while the owner lives."""
        holder: list[Task] = []

        def live() -> bool:
            return always or self._alive is None or self._alive()

        def done(result: Any) -> None:
            self._running.discard(holder[0])
            if on_done is not None and live():
                on_done(result)

        def failed(exc: BaseException) -> None:
            self._running.discard(holder[0])
            if on_error is not None and live():
                on_error(exc)

        def progress(done: int, total: int, text: str) -> None:
            if on_progress is not None and live():
                on_progress(done, total, text)

        task = run_in_thread(fn, *args, on_done=done, on_error=failed,
                             on_progress=progress if on_progress is not None else None)
        holder.append(task)  # the callbacks are queued: they run after this returns
        self._running.add(task)
        return task
