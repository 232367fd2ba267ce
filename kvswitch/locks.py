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

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the in-process lock only
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_TIMEOUT", "switch_lock"]

DEFAULT_TIMEOUT = 5.0
"""Seconds a switch waits for another one to finish before it refuses."""

_LOCK_NAME = "switch.lock"
_POLL = 0.02

_thread_lock = threading.RLock()
_held = threading.local()  # .depth and .fd of the calling thread


@contextlib.contextmanager
def switch_lock(timeout: float | None = None) -> Iterator[None]:
    """Hold the switch lock for the duration of the ``with`` block.

    ``timeout`` (default :data:`DEFAULT_TIMEOUT`) bounds the wait for another thread or
    process; past it :class:`LockTimeoutError` says that another kvswitch is switching."""
    wait = DEFAULT_TIMEOUT if timeout is None else max(0.0, timeout)
    depth = getattr(_held, "depth", 0)
    if depth:
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    deadline = time.monotonic() + wait
    if not _thread_lock.acquire(timeout=wait):
        raise _busy(wait)
    try:
        fd = _flock(deadline, wait)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
            if fd is not None:
                os.close(fd)  # closing the descriptor releases the flock
    finally:
        _thread_lock.release()


def _flock(deadline: float, wait: float) -> int | None:
    if fcntl is None:  # pragma: no cover
        return None
    from kvswitch.io import _private_dir, _why

    state = paths.dirs().state
    _private_dir(state)
    lock = state / _LOCK_NAME
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise WriteError(f"cannot open the switch lock: {_why(exc)}", Location(lock)) from exc
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise _busy(wait) from None
            time.sleep(_POLL)
        except OSError as exc:
            os.close(fd)
            raise WriteError(f"cannot take the switch lock: {_why(exc)}", Location(lock)) from exc


def _busy(wait: float) -> LockTimeoutError:
    return LockTimeoutError(
        f"another kvswitch is switching (waited {wait:g} s for it); nothing was changed — "
        "run the command again when it has finished",
        Location(paths.dirs().state / _LOCK_NAME),
    )
