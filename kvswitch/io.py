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
import re
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kvswitch.errors import ChangedOnDiskError, Location, ReadError, WriteError

__all__ = [
    "PreparedWrite",
    "WriteResult",
    "append_private",
    "atomic_write",
    "prepare_write",
    "read_bytes",
    "read_optional",
]

MAX_REAPPLY = 3
_TMP_TAG = ".kvswitch-"
_TMP_RE = re.compile(r"^\..+\.kvswitch-([0-9]+)-[0-9a-f]{8}\.tmp$", re.DOTALL)


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


def _temp_owner(name: str) -> int | None:
    """The pid in a kvswitch temp file's name (``.<file>.kvswitch-<pid>-<hex>.tmp``), else None."""
    m = _TMP_RE.match(name)
    return int(m.group(1)) if m else None


def _sweep_stale_temps(directory: Path) -> None:
    """Remove temp files a killed kvswitch left in ``directory`` (their pid is gone).

    Every kvswitch temp file of a dead pid goes, not only those of the file being written:
    a temp of a file that is never written again (a backup, say) would otherwise stay."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            pid = _temp_owner(entry.name)
            if pid is not None and pid != os.getpid() and not _pid_alive(pid):
                with contextlib.suppress(OSError):
                    Path(entry.path).unlink()


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
    old_mode: int | None = None  # the replaced file's permission bits (a roll back restores them)

    def commit(self) -> None:
        """Rename the temp file over the target and fsync the directory."""
        try:
            os.replace(self.temp, self.target)  # noqa: PTH105 (the one rename; tests inject its errors)
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
                self.temp.unlink()


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
        st: os.stat_result | None = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise WriteError("cannot write: not a regular file", Location(path))
    if st is not None and not os.access(target, os.W_OK):
        # the rename would go through in a writable directory; the file's own mode says no
        raise WriteError("cannot write: permission denied", Location(path))
    _sweep_stale_temps(directory)
    temp = directory / f".{target.name}{_TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise WriteError(f"cannot write in {directory}: {_why(exc)}", Location(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            # owner first: a chown clears the set-user/group-ID bits the chmod then restores
            if st is not None and hasattr(os, "fchown"):
                with contextlib.suppress(PermissionError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            elif st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            else:
                os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
        raise
    return PreparedWrite(path, target, temp, data, old, old_mode=stat.S_IMODE(st.st_mode) if st is not None else None)


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

    def reapply(current: bytes | None, when: str) -> None:
        nonlocal data, expected, reapplied
        if rebuild is None or reapplied >= MAX_REAPPLY:
            raise ChangedOnDiskError(
                f"changed on disk while kvswitch was {when} it; nothing was written (run the command again)",
                Location(path),
            )
        data = rebuild(current or b"")
        expected = current or b""
        reapplied += 1

    while True:
        current = read_optional(target)
        if expected is not None and (current or b"") != expected:
            reapply(current, "editing")
            continue
        if current == data:
            if mode is not None:
                _ensure_mode(path, target, mode)
            return WriteResult(path, target, False, None, reapplied)
        prepared = prepare_write(path, data, mode=mode, old=current)
        try:
            # the last look before the rename: did someone write meanwhile?
            latest = read_optional(target)
            if latest != current:
                prepared.abort()
                reapply(latest, "writing")
                continue
            saved: Path | None = None
            if backup and current is not None:
                from kvswitch.backups import save_backup

                saved = save_backup(target, current)
            try:
                prepared.commit()
            except WriteError:
                if saved is not None:
                    with contextlib.suppress(OSError):
                        saved.unlink()
                raise
        finally:
            prepared.abort()
        if saved is not None:
            from kvswitch.backups import prune

            prune(target)
        return WriteResult(path, target, True, saved, reapplied)


def _ensure_mode(path: Path, target: Path, mode: int) -> None:
    """Give an unchanged file the mode a write would have given it (e.g. 0600 for a key)."""
    try:
        if stat.S_IMODE(target.stat().st_mode) != mode:
            target.chmod(mode)
    except OSError as exc:
        raise WriteError(f"cannot set the file's mode: {_why(exc)}", Location(path)) from exc


def write_private(path: Path, data: bytes) -> None:
    """Write one of kvswitch's own files (state, backups): 0600 in a 0700 directory."""
    path = Path(path)
    _private_dir(path.parent)
    prepare_write(path, data, mode=0o600).commit()


def _private_dir(directory: Path) -> None:
    """Create ``directory`` and its missing parents as 0700 directories."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise WriteError(f"cannot create directory: {_why(exc)}", Location(d)) from exc


def append_private(path: Path, data: bytes) -> None:
    """Append to one of kvswitch's own logs (history): 0600 in a 0700 directory, fsynced."""
    path = Path(path)
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
    try:
        os.write(fd, data)
        os.fsync(fd)
    except OSError as exc:
        raise WriteError(f"cannot write: {_why(exc)}", Location(path)) from exc
    finally:
        os.close(fd)
