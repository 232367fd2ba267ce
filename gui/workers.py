"""Running library calls off the GUI thread: ``run_in_thread``, and ``Tasks`` for an owner
(a window, the tray) that keeps its running tasks and drops late callbacks once it is gone.

A ``Task`` runs a callable on the global QThreadPool and reports back on the GUI thread:
``on_progress(done, total, text)``, then ``on_done(result)`` or ``on_error(exception)``. The
callable may accept a ``progress`` keyword (a plain function it can call from its thread) and a
``cancel`` keyword (a ``threading.Event``); ``Task.cancel()`` sets it.

A Task is a plain Python object, not a QRunnable: the pool holds it (a Python reference) until
its callable returns, so the garbage collector can never free a task that is still running, even
when its owner is gone (a QRunnable subclass freed that way crashed the process). The reports
travel through one relay QObject that lives on the GUI thread for the life of the process.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal

__all__ = ["Task", "Tasks", "run_in_thread"]


class _Relay(QObject):
    """Carries reports from pool threads to the GUI thread (queued: it lives there)."""

    progress = Signal(object, int, int, str)
    finished = Signal(object, object)
    failed = Signal(object, object)

    def __init__(self) -> None:
        super().__init__()
        self.progress.connect(self._on_progress)
        self.finished.connect(self._on_finished)
        self.failed.connect(self._on_failed)

    def _on_progress(self, task: Task, done: int, total: int, text: str) -> None:
        if task.on_progress is not None:
            task.on_progress(done, total, text)

    def _on_finished(self, task: Task, result: Any) -> None:
        if task.on_done is not None:
            task.on_done(result)

    def _on_failed(self, task: Task, exc: BaseException) -> None:
        if task.on_error is not None:
            task.on_error(exc)


_relay: _Relay | None = None


def _the_relay() -> _Relay:
    """The relay, created on first use; tasks are started from the GUI thread, so it lives there."""
    global _relay
    if _relay is None:
        _relay = _Relay()
    return _relay


class Task:
    """A callable to run on the thread pool, with the callbacks that get its reports."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        on_progress: Callable[[int, int, str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        self.on_done, self.on_error, self.on_progress = on_done, on_error, on_progress
        self.cancel_event = threading.Event()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._relay = _the_relay()
        params = inspect.signature(fn).parameters
        if "progress" in params:
            self._kwargs["progress"] = self._progress
        if "cancel" in params:
            self._kwargs["cancel"] = self.cancel_event

    def cancel(self) -> None:
        self.cancel_event.set()

    def _progress(self, done: int, total: int, text: object = "") -> None:
        self._relay.progress.emit(self, done, total, str(text))

    def run(self) -> None:
        """Run the callable here (a pool thread) and send its result or failure to the GUI thread."""
        try:
            result = self._fn(*self._args, **self._kwargs)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI thread
            self._relay.failed.emit(self, exc)
        else:
            self._relay.finished.emit(self, result)


def run_in_thread(
    fn: Callable[..., Any],
    *args: Any,
    on_done: Callable[[Any], None] | None = None,
    on_error: Callable[[BaseException], None] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    **kwargs: Any,
) -> Task:
    """Start ``fn`` on the thread pool; the callbacks run on the GUI thread."""
    task = Task(fn, *args, on_done=on_done, on_error=on_error, on_progress=on_progress, **kwargs)
    QThreadPool.globalInstance().start(task.run)  # the pool keeps the task until run returns
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

        task = run_in_thread(
            fn, *args, on_done=done, on_error=failed, on_progress=progress if on_progress is not None else None
        )
        holder.append(task)  # the callbacks are queued: they run after this returns
        self._running.add(task)
        return task
