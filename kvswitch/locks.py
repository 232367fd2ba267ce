"""The switch lock: every switch reads, plans and commits its files while holding it.

One lock per state directory (``<state>/switch.lock``), held across processes with ``flock``
and across threads of one process with a re-entrant lock, so that a thread already holding it
(a switch that also writes ``kvswitch.toml``) takes it again freely. It is separate from the
watcher's single-instance lock; the watcher takes this one for its own writes. A kvswitch that
cannot get it within ``timeout`` seconds refuses with :class:`~kvswitch.errors.LockTimeoutError`,
having read nothing and written nothing.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

from kvswitch import paths
from kvswitch.errors import Location, LockTimeoutError, WriteError
from kvswitch.i18n import tr

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the in-process lock only
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_TIMEOUT", "state_lock", "switch_lock", "unless_dry_run"]

DEFAULT_TIMEOUT = 5.0
"""Seconds a switch waits for another one to finish before it refuses."""

_LOCK_NAME = "switch.lock"
_POLL = 0.02

_thread_lock = threading.RLock()
_held = threading.local()  # .depth: how often the calling thread holds the switch lock


@contextlib.contextmanager
def switch_lock(timeout: float | None = None) -> Iterator[None]:
    """Hold the switch lock for the duration of the ``with`` block.

    ``timeout`` (default :data:`DEFAULT_TIMEOUT`) bounds the wait for another thread or
    process; past it :class:`LockTimeoutError` says that another kvswitch is switching."""
    wait = DEFAULT_TIMEOUT if timeout is None else max(0.0, timeout)
    if getattr(_held, "depth", 0):  # this thread holds it already
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    if not _thread_lock.acquire(timeout=wait):
        raise _busy(wait)
    try:
        with state_lock(_LOCK_NAME, tr("switch lock"), wait=wait):
            _held.depth = 1
            try:
                yield
            finally:
                _held.depth = 0
    finally:
        _thread_lock.release()


def unless_dry_run(dry_run: bool) -> contextlib.AbstractContextManager[None]:
    """The switch lock around a read–plan–commit; a dry run reads without it."""
    return contextlib.nullcontext() if dry_run else switch_lock()


@contextlib.contextmanager
def state_lock(name: str, what: str, *, wait: float | None = None) -> Iterator[None]:
    """An exclusive ``flock`` on ``<state>/name`` for the ``with`` block (the kernel releases
    it if the process dies); ``what`` names the lock in errors (translated). ``wait=None`` waits as long as it takes;
    otherwise past ``wait`` seconds :class:`LockTimeoutError` is raised."""
    if fcntl is None:  # pragma: no cover - Windows: the in-process lock only
        yield
        return
    from kvswitch.io import _private_dir, _why

    state = paths.dirs().state
    _private_dir(state)
    lock = state / name
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise WriteError(
            tr("cannot open the {lock}: {reason}").format(lock=what, reason=_why(exc)), Location(lock)
        ) from exc
    try:
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except BlockingIOError:
                if deadline is None or time.monotonic() >= deadline:
                    raise _busy(wait or 0.0) from None
                time.sleep(_POLL)
            except OSError as exc:
                raise WriteError(
                    tr("cannot take the {lock}: {reason}").format(lock=what, reason=_why(exc)), Location(lock)
                ) from exc
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _busy(wait: float) -> LockTimeoutError:
    return LockTimeoutError(
        tr(
            "another kvswitch is switching (waited {seconds} s for it); nothing was changed — "
            "run the command again when it has finished"
        ).format(seconds=f"{wait:g}"),
        Location(paths.dirs().state / _LOCK_NAME),
    )
