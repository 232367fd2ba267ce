"""kvswitch_gui.workers: library calls in the thread pool, callbacks on the GUI thread, and an
owner's ``Tasks`` that drops what arrives after the owner is gone."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pytestqt.qtbot import QtBot

from kvswitch_gui.workers import Tasks

WAIT = 10_000


def _counting(progress: Callable[[int, int, str], None], cancel: threading.Event) -> str:
    for i in range(3):
        progress(i + 1, 3, f"step {i + 1}")
    return f"counted on {threading.current_thread().name}, cancelled={cancel.is_set()}"


def _boom() -> None:
    raise ValueError("boom")


def test_results_errors_and_progress_arrive_on_the_gui_thread(qtbot: QtBot) -> None:
    tasks = Tasks()
    seen: list[Any] = []
    main = threading.current_thread()

    def record(*item: Any) -> None:
        assert threading.current_thread() is main
        seen.append(item)

    tasks.run(_counting, on_done=lambda r: record("done", r), on_progress=lambda *p: record("progress", *p))
    assert tasks and len(tasks) == 1
    qtbot.waitUntil(lambda: not tasks, timeout=WAIT)
    assert [s for s in seen if s[0] == "progress"] == [("progress", i, 3, f"step {i}") for i in (1, 2, 3)]
    assert seen[-1][0] == "done" and "cancelled=False" in seen[-1][1] and main.name not in seen[-1][1]

    tasks.run(_boom, on_done=lambda r: record("done", r), on_error=lambda e: record("error", e))
    qtbot.waitUntil(lambda: not tasks, timeout=WAIT)
    assert seen[-1][0] == "error" and isinstance(seen[-1][1], ValueError)


def test_callbacks_are_dropped_once_the_owner_is_gone_unless_always(qtbot: QtBot) -> None:
    alive = True
    tasks = Tasks(lambda: alive)
    release = threading.Event()
    seen: list[str] = []
    tasks.run(release.wait, 10, on_done=lambda _: seen.append("late"))
    tasks.run(release.wait, 10, on_done=lambda _: seen.append("always"), always=True)
    alive = False  # the owner closes while both run
    release.set()
    qtbot.waitUntil(lambda: not tasks, timeout=WAIT)
    assert seen == ["always"]


def test_a_running_task_outlives_its_dropped_owner_and_is_freed_after(qtbot: QtBot) -> None:
    """The crash CI saw: an owner (a tray) dropped while its task ran made a garbage cycle with
    the task; the collector freed the running task. The pool holds it now, until it returns."""
    import gc
    import weakref

    release = threading.Event()
    seen: list[str] = []

    class Owner:
        def __init__(self) -> None:
            self.tasks = Tasks(lambda: True)
            self.tasks.run(release.wait, 10, on_done=lambda _: seen.append(f"done by {self}"), always=True)

    owner = Owner()
    task = weakref.ref(next(iter(owner.tasks._running)))
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert task() is not None  # still running: the pool holds it (the cycle holds nothing alive)
    release.set()
    qtbot.waitUntil(lambda: bool(seen), timeout=WAIT)
    qtbot.wait(50)
    gc.collect()
    assert task() is None and gone() is None  # reported back, then nothing keeps either alive
