"""Reading files, and the one function that writes them: :func:`atomic_write`.

The write promise (D-4): the target of a symlink is written and the link kept; a temp file
in the target's directory is written and fsynced, given the old file's mode and owner, then
renamed over the target, and the directory is fsynced. Just before the rename the file is
compared with the bytes the edit was made from: if someone changed it meanwhile the edit is
re-applied to their version (a few times at most) or the write is refused. The previous
bytes are backed up first. Any failure leaves the file, and the existing backups, as they
were. Nothing else in kvswitch writes files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kvswitch.errors import ChangedOnDiskError, Location, ReadError, WriteError

__all__ = ["PreparedWrite", "WriteResult", "atomic_write", "prepare_write", "read_bytes", "read_optional"]

MAX_REAPPLY = 3
_TMP_TAG = ".kvswitch-"


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``; :class:`ReadError` says why not (missing, permission, a directory)."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ReadError(f"cannot read: {_why(exc)}", Location(Path(path))) from exc


def read_optional(path: Path) -> bytes | None:
    """The bytes of ``path``, or ``None`` when it does not exist."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReadError(f"cannot read: {_why(exc)}", Location(Path(path))) from exc


def _why(exc: OSError) -> str:
    reasons = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a parent is not a directory",
        errno.ENOSPC: "no space left on the device (disk full)",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file too large for this process or file system (disk full?)",
        errno.EROFS: "read-only file system",
        errno.ELOOP: "too many levels of symbolic links",
    }
    return reasons.get(exc.errno or 0, exc.strerror or str(exc))


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_temps(directory: Path, name: str) -> None:
    """Remove temp files a killed kvswitch left next to ``name`` (their pid is gone)."""
    prefix = f".{name}{_TMP_TAG}"
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                try:
                    pid = int(entry.name[len(prefix) :].split("-", 1)[0])
                except ValueError:
                    continue
                if not _pid_alive(pid):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def _fsync_dir(directory: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: no directory fsync
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class PreparedWrite:
    """A temp file holding the new bytes, fsynced and ready to be renamed over ``target``."""

    path: Path
    target: Path
    temp: Path
    data: bytes
    old: bytes | None
    done: bool = False

    def commit(self) -> None:
        """Rename the temp file over the target and fsync the directory."""
        try:
            os.replace(self.temp, self.target)
        except OSError as exc:
            self.abort()
            raise WriteError(f"cannot replace the file: {_why(exc)}", Location(self.path)) from exc
        self.done = True
        with contextlib.suppress(OSError):
            _fsync_dir(self.target.parent)

    def abort(self) -> None:
        """Remove the temp file; the target is untouched."""
        if not self.done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temp)


def prepare_write(
    path: Path, data: bytes, *, mode: int | None = None, old: bytes | None = None
) -> PreparedWrite:
    """Write ``data`` to a temp file beside the real target of ``path`` and fsync it.

    The temp file gets the current file's mode and owner (``mode`` forces one, e.g. 0o600
    for a file that holds a key); a new file gets ``0o666 & ~umask``."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    directory = target.parent
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise WriteError("cannot write: not a regular file", Location(path))
    _sweep_stale_temps(directory, target.name)
    temp = directory / f".{target.name}{_TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise WriteError(f"cannot write in {directory}: {_why(exc)}", Location(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            elif st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            else:
                os.fchmod(fh.fileno(), 0o666 & ~_umask())
            if st is not None and hasattr(os, "fchown"):
                with contextlib.suppress(PermissionError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
            os.fsync(fh.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
    return PreparedWrite(path, target, temp, data, old)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What :func:`atomic_write` did: ``changed`` is False when the bytes were already there."""

    path: Path
    target: Path
    changed: bool
    backup: Path | None
    reapplied: int = 0


def atomic_write(
    path: Path,
    data: bytes,
    *,
    expected: bytes | None = None,
    rebuild: Callable[[bytes], bytes] | None = None,
    mode: int | None = None,
    backup: bool = True,
) -> WriteResult:
    """Replace the contents of ``path`` with ``data``, atomically and durably.

    ``expected`` are the bytes the edit was made from (``None``: no check; ``b""`` with a
    missing file means "create"). When the file no longer holds them, ``rebuild(current)``
    re-applies the edit to the current bytes, at most ``MAX_REAPPLY`` times; without
    ``rebuild`` the write is refused with :class:`ChangedOnDiskError`. ``backup`` keeps the
    previous bytes (see :mod:`kvswitch.backups`)."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    reapplied = 0
    while True:
        current = read_optional(target)
        if expected is not None and (current or b"") != expected:
            if rebuild is None or reapplied >= MAX_REAPPLY:
                raise ChangedOnDiskError(
                    "changed on disk while kvswitch was editing it; nothing was written (run the command again)",
                    Location(path),
                )
            data = rebuild(current or b"")
            expected = current or b""
            reapplied += 1
            continue
        if current == data:
            return WriteResult(path, target, False, None, reapplied)
        prepared = prepare_write(path, data, mode=mode, old=current)
        # the last look before the rename: did someone write meanwhile?
        latest = read_optional(target)
        if latest != current:
            prepared.abort()
            if rebuild is None or reapplied >= MAX_REAPPLY:
                raise ChangedOnDiskError(
                    "changed on disk while kvswitch was writing it; nothing was written (run the command again)",
                    Location(path),
                )
            data = rebuild(latest or b"")
            expected = latest or b""
            reapplied += 1
            continue
        saved: Path | None = None
        if backup and current is not None:
            from kvswitch.backups import save_backup

            try:
                saved = save_backup(target, current)
            except WriteError:
                prepared.abort()
                raise
        try:
            prepared.commit()
        except WriteError:
            if saved is not None:
                with contextlib.suppress(OSError):
                    os.unlink(saved)
            raise
        if saved is not None:
            from kvswitch.backups import prune

            prune(target)
        return WriteResult(path, target, True, saved, reapplied)


def write_private(path: Path, data: bytes) -> None:
    """Write one of kvswitch's own files (state, backups): 0600 in a 0700 directory."""
    path = Path(path)
    missing = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise WriteError(f"cannot create directory: {_why(exc)}", Location(directory)) from exc
    prepare_write(path, data, mode=0o600).commit()
