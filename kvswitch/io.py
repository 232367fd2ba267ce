"""Reading files, and the one function that writes them: :func:`atomic_write`.

The write promise (D-4): the target of a symlink is written and the link kept; a temp file
in the target's directory is written and fsynced, given the old file's mode and owner, then
swapped with the target, and the directory is fsynced. The previous bytes are backed up first
(:func:`save_backup`, a write too, where :mod:`kvswitch.backups` says; that module writes nothing).

The swap is verified (no save is ever lost): on Linux the temp file and the target trade
places in one atomic ``renameat2(RENAME_EXCHANGE)``, so what came out of the target is still
there to look at. If it is not the version the edit was made from, an editor saved meanwhile:
that version is kept as a backup at once, swapped back into place, and the edit is re-applied
to it (a few times at most) or refused. A new file is created with ``RENAME_NOREPLACE``. Where
the operating system or file system cannot exchange, the fallback is a last look right before
a plain rename (the backup made before that look, to keep the window small). Any failure
leaves the file, and the existing backups, as they were. Nothing else in kvswitch writes files.

Reading takes regular files only, up to :data:`MAX_FILE_BYTES`, and never blocks: a FIFO, a
device, a socket or a directory is refused without being read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from kvswitch.backups import backup_dir, backup_stamp, list_backups, next_number, prune
from kvswitch.errors import ChangedOnDiskError, Location, ReadError, WriteError
from kvswitch.i18n import tr
from kvswitch.records import field, record

__all__ = [
    "MAX_FILE_BYTES",
    "PreparedWrite",
    "WriteResult",
    "append_private",
    "atomic_write",
    "open_for_reading",
    "prepare_write",
    "read_bytes",
    "read_optional",
    "read_rest",
    "save_backup",
]

MAX_REAPPLY = 3
MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest file kvswitch reads (16 MiB): client settings are kilobytes; a bigger file is
refused with a clear error rather than parsed for seconds in gigabytes of memory."""
_TMP_TAG = ".kvswitch-"
_TMP_RE = re.compile(r"^\.(.+)\.kvswitch-([0-9]+)-[0-9a-f]{8}(?:-([0-9a-f]+))?\.tmp$", re.DOTALL)
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``; :class:`ReadError` says why not (missing, permission, not a
    regular file, larger than :data:`MAX_FILE_BYTES`)."""
    data = _read(Path(path), missing_ok=False)
    assert data is not None
    return data


def read_optional(path: Path) -> bytes | None:
    """The bytes of ``path``, or ``None`` when it does not exist."""
    return _read(Path(path), missing_ok=True)


def open_for_reading(path: Path) -> tuple[int, os.stat_result]:
    """``path`` opened for reading without ever blocking (a FIFO would wait for a writer),
    and its status: the caller checks it is a regular file, and closes the descriptor.
    :class:`ReadError` says why it cannot be opened (its cause: the ``OSError``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it): say which
            with contextlib.suppress(OSError):
                raise ReadError(_cannot_read(_not_regular(path.stat().st_mode)), Location(path)) from exc
        raise ReadError(_cannot_read(_why(exc)), Location(path)) from exc
    try:
        return fd, os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise ReadError(_cannot_read(_why(exc)), Location(path)) from exc


def _read(path: Path, *, missing_ok: bool) -> bytes | None:
    try:
        fd, st = open_for_reading(path)
    except ReadError as exc:
        if missing_ok and isinstance(exc.__cause__, FileNotFoundError):
            return None
        raise
    try:
        if not stat.S_ISREG(st.st_mode):
            raise ReadError(_cannot_read(_not_regular(st.st_mode)), Location(path))
        if st.st_size > MAX_FILE_BYTES:
            raise ReadError(_too_large(st.st_size), Location(path))
        return read_rest(fd, st.st_size, MAX_FILE_BYTES, lambda n: ReadError(_too_large(n), Location(path)))
    except OSError as exc:
        raise ReadError(_cannot_read(_why(exc)), Location(path)) from exc
    finally:
        os.close(fd)


def read_rest(fd: int, size: int, limit: int, too_large: Callable[[int], Exception]) -> bytes:
    """What is left to read from ``fd`` (``size``: the length its status gave), at most
    ``limit`` bytes: past that (the file grew while being read) ``too_large(bytes read)`` is
    raised. ``OSError`` passes through; the caller closes ``fd``."""
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, max(size - total, 0) + 65536):
        total += len(chunk)
        if total > limit:
            raise too_large(total)
        chunks.append(chunk)
    return b"".join(chunks)


def _cannot_read(reason: str) -> str:
    return tr("cannot read: {reason}").format(reason=reason)


def _cannot_write(reason: str) -> str:
    return tr("cannot write: {reason}").format(reason=reason)


def _not_regular(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return tr("is a directory, not a regular file")
    if stat.S_ISFIFO(mode):
        return tr("is a named pipe (FIFO), not a regular file")
    if stat.S_ISSOCK(mode):
        return tr("is a socket, not a regular file")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return tr("is a device, not a regular file")
    return tr("is a special file, not a regular file")


def _too_large(size: int) -> str:
    return tr(
        "too large: {size} MiB; kvswitch reads files of up to {limit} MiB "
        "(a client's settings are far smaller: is this the right file?)"
    ).format(size=f"{size / 1048576:.1f}", limit=MAX_FILE_BYTES // 1048576)


def _why(exc: OSError) -> str:
    """Why the file system said no, in words (in the user's language where kvswitch knows the
    error; the system's own words otherwise)."""
    code = exc.errno or 0
    if code == errno.ENOENT:
        return tr("no such file or directory")
    if code == errno.EACCES:
        return tr("permission denied")
    if code == errno.EPERM:
        return tr("operation not permitted")
    if code == errno.EISDIR:
        return tr("is a directory")
    if code == errno.ENOTDIR:
        return tr("a parent is not a directory")
    if code == errno.ENOSPC:
        return tr("no space left on the device (disk full)")
    if code == errno.EDQUOT:
        return tr("disk quota exceeded")
    if code == errno.EFBIG:
        return tr("file too large for this process or file system (disk full?)")
    if code == errno.EROFS:
        return tr("read-only file system")
    if code == errno.ELOOP:
        return tr("too many levels of symbolic links")
    return exc.strerror or str(exc)


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


def _temp_parts(name: str) -> tuple[str, int, int | None] | None:
    """Target name, pid and inode tag of a kvswitch temp file's name, else None."""
    m = _TMP_RE.match(name)
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3), 16) if m.group(3) else None


def _sweep_stale_temps(directory: Path) -> None:
    """Remove temp files a killed kvswitch left in ``directory`` (their pid is gone).

    Every kvswitch temp file of a dead pid goes, not only those of the file being written:
    a temp of a file that is never written again (a backup, say) would otherwise stay. A temp
    whose inode is no longer the one its name records was swapped with its target by a
    kvswitch killed mid-swap: it holds what came out of the target, which is kept as a backup
    first (unless the target or a backup already holds it)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            parts = _temp_parts(entry.name)
            if parts is None or parts[1] == os.getpid() or _pid_alive(parts[1]):
                continue
            name, _pid, ino = parts
            with contextlib.suppress(OSError):
                if ino is not None and entry.inode() != ino:
                    _keep_displaced(directory / name, Path(entry.path))
                Path(entry.path).unlink()


def _keep_displaced(target: Path, temp: Path) -> None:
    try:
        data = read_optional(temp)
        if data is None or data == read_optional(target):
            return
    except ReadError:
        return
    if any(b.size == len(data) and b.path.read_bytes() == data for b in list_backups(target)):
        return
    save_backup(target, data)
    prune(target)


def _fsync_dir(directory: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows: no directory fsync
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_renameat2: Callable[..., int] | bool | None = False  # False: not looked up yet
_AT_FDCWD = -100


def _rename(src: Path, dst: Path, flags: int = 0) -> None:
    """The one rename onto a user's file (tests inject its errors here).

    ``flags`` 0 replaces ``dst``; :data:`_RENAME_EXCHANGE` swaps the two atomically;
    :data:`_RENAME_NOREPLACE` fails with ``FileExistsError`` when ``dst`` exists. Without
    ``renameat2`` the flagged forms raise ``OSError(ENOSYS)``."""
    if flags == 0:
        os.replace(src, dst)  # noqa: PTH105
        return
    import ctypes  # here: a lint or a status never renames, and ctypes costs its start-up

    global _renameat2
    if _renameat2 is False:
        try:
            _renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
        except OSError:  # pragma: no cover - no C library to load (not on Linux)
            _renameat2 = None
        if _renameat2 is not None:
            _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            _renameat2.restype = ctypes.c_int
    if not callable(_renameat2):
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(src), None, str(dst))


def _unsupported(exc: OSError) -> bool:
    """The system or file system cannot exchange or refuse to replace (use the fallback)."""
    return exc.errno in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP)


def _before_swap() -> None:
    """Nothing; the stress tests put a delay here, between the last look and the swap."""


def _digest(data: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(data).digest()


class RacedError(ChangedOnDiskError):
    """A save landed between kvswitch's look at the file and its swap; the saved version is
    in the file again (or kept as a backup) and nothing of kvswitch's was left in place."""


@record(frozen=False)
class PreparedWrite:
    """A temp file holding the new bytes, fsynced and ready to take the place of ``target``.

    A verified write (``verify``) checks that the swap displaced exactly ``old`` (``None``:
    that there was no file); ``keep`` stores a version that raced in (default: a backup).
    With ``undo`` (a roll back) a raced version is kept and the new bytes stay in place."""

    path: Path
    target: Path
    temp: Path
    data: bytes
    old: bytes | None
    done: bool = False
    old_mode: int | None = None  # the replaced file's permission bits (a roll back restores them)
    verify: bool = False
    keep: Callable[[bytes], object] | None = field(default=None, repr=False)
    undo: bool = False  # a roll back: a save on top of what it undoes is kept, not left in place

    def commit(self) -> None:
        """Put the temp file in the target's place and fsync the directory. A verified write
        whose target changed meanwhile raises :class:`RacedError`, with the target holding
        the newer version again and nothing of this write left."""
        try:
            if self.verify:
                self._swap_in()
            else:
                _rename(self.temp, self.target)
        except OSError as exc:
            self.abort()
            raise WriteError(
                tr("cannot replace the file: {reason}").format(reason=_why(exc)), Location(self.path)
            ) from exc
        self.done = True
        with contextlib.suppress(OSError):
            _fsync_dir(self.target.parent)

    def abort(self) -> None:
        """Remove the temp file; the target is untouched."""
        if not self.done:
            with contextlib.suppress(FileNotFoundError):
                self.temp.unlink()

    def _raced(self) -> RacedError:
        self.abort()
        return RacedError(tr("changed on disk while kvswitch was writing it; nothing was written"), Location(self.path))

    def _swap_in(self) -> None:
        if self.old is None:
            try:
                _rename(self.temp, self.target, _RENAME_NOREPLACE)
            except FileExistsError:
                raise self._raced() from None
            except OSError as exc:
                if not _unsupported(exc):
                    raise
                if os.path.lexists(self.target):  # the fallback: look, then rename
                    raise self._raced() from None
                _rename(self.temp, self.target)
            return
        try:
            _rename(self.temp, self.target, _RENAME_EXCHANGE)
        except FileNotFoundError:  # the file was deleted meanwhile
            raise self._raced() from None
        except OSError as exc:
            if not _unsupported(exc):
                raise
            if read_optional(self.target) != self.old:  # the fallback: look, then rename
                raise self._raced() from None
            _rename(self.temp, self.target)
            return
        out = read_optional(self.temp)
        if out == self.old:
            self.temp.unlink()
            return
        if self.undo:
            self._replace_keeping(out or b"")
            return
        self._put_back(out or b"")

    def _put_back(self, out: bytes) -> None:
        """Someone saved ``out`` between the look and the swap: swap it back and raise
        :class:`RacedError`. A save that landed on kvswitch's file in the meantime holds
        kvswitch's unfinished edit, so it is not left in the file: it is kept as a backup.
        ``out`` is kept too (an editor that read kvswitch's file in that instant may save on
        top of ``out`` and drop it itself)."""
        self._keep(out)
        _rename(self.temp, self.target, _RENAME_EXCHANGE)  # what came out goes back in
        came = read_optional(self.temp) or b""
        if came != self.data:
            self._keep(came)
        raise self._raced()

    def _replace_keeping(self, out: bytes) -> None:
        """A roll back found a save on top of the version it undoes: the old bytes stay in
        place (the switch did not happen) and that save is kept as a backup."""
        self._keep(out)
        self.temp.unlink()

    def _keep(self, version: bytes) -> None:
        try:
            if self.keep is not None:
                self.keep(version)
            else:
                save_backup(self.target, version)
        except BaseException:
            self.done = True  # the temp file holds that version: it must not be removed
            raise


def prepare_write(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    old: bytes | None = None,
    verify: bool = False,
) -> PreparedWrite:
    """Write ``data`` to a temp file beside the real target of ``path`` and fsync it.

    The temp file gets the current file's mode and owner (``mode`` forces one, e.g. 0o600
    for a file that holds a key); a new file gets ``0o666 & ~umask``. A file whose owner
    kvswitch cannot keep (another user's file it may write) is refused. ``verify``: the
    commit checks that it displaces exactly ``old`` (see :class:`PreparedWrite`)."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    directory = target.parent
    try:
        st: os.stat_result | None = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteError(_cannot_write(_why(exc)), Location(path)) from exc
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise WriteError(_cannot_write(_not_regular(st.st_mode)), Location(path))
    if st is not None and not os.access(target, os.W_OK):
        # the rename would go through in a writable directory; the file's own mode says no
        raise WriteError(_cannot_write(tr("permission denied")), Location(path))
    _sweep_stale_temps(directory)
    name = f".{target.name}{_TMP_TAG}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        fd = os.open(directory / f"{name}.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        message = tr("cannot write in {directory}: {reason}").format(directory=directory, reason=_why(exc))
        raise WriteError(message, Location(path)) from exc
    temp = directory / f"{name}.tmp"
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            # owner first: a chown clears the set-user/group-ID bits the chmod then restores
            if st is not None and hasattr(os, "fchown"):
                _keep_owner(fh.fileno(), st, path)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            elif st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            else:
                os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
            # the name records the inode: a temp that no longer has it was swapped (see sweep)
            tagged = directory / f"{name}-{os.fstat(fh.fileno()).st_ino:x}.tmp"
            os.rename(temp, tagged)  # noqa: PTH104 (our own temp file)
            temp = tagged
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError):
            raise WriteError(_cannot_write(_why(exc)), Location(path)) from exc
        raise
    return PreparedWrite(
        path,
        target,
        temp,
        data,
        old,
        old_mode=stat.S_IMODE(st.st_mode) if st is not None else None,
        verify=verify,
    )


def _keep_owner(fd: int, st: os.stat_result, path: Path) -> None:
    """Give the temp file the owner and group of the file it replaces, or refuse."""
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        now = os.fstat(fd)
        if (now.st_uid, now.st_gid) != (st.st_uid, st.st_gid):
            message = tr(
                "cannot write without changing the file's owner (it belongs to uid {uid}, "
                "gid {gid}; kvswitch runs as uid {me}): run kvswitch as its owner"
            )
            raise WriteError(message.format(uid=st.st_uid, gid=st.st_gid, me=os.geteuid()), Location(path)) from None


@record(slots=True)
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
    missing file means "create"). When the file no longer holds them — before the write or
    in a save that races it — ``rebuild(current)`` re-applies the edit to the current bytes,
    at most ``MAX_REAPPLY`` times; without ``rebuild`` the write is refused with
    :class:`ChangedOnDiskError`. ``backup`` keeps the previous bytes (see
    :mod:`kvswitch.backups`); a version that raced in is always kept."""
    path = Path(path)
    target = Path(os.path.realpath(path))
    reapplied = 0
    kept: dict[bytes, Path] = {}  # versions this write put in a backup, by digest
    raced: set[bytes] = set()  # of which: versions a save raced in (always kept)

    def keep(version: bytes) -> Path:
        digest = _digest(version)
        if digest not in kept:
            kept[digest] = backup_of(path, version)
        return kept[digest]

    def keep_raced(version: bytes) -> None:
        keep(version)
        raced.add(_digest(version))

    def reapply(current: bytes | None, writing: bool) -> None:
        nonlocal data, expected, reapplied
        if rebuild is None or reapplied >= MAX_REAPPLY:
            if writing:
                message = tr(
                    "changed on disk while kvswitch was writing it; nothing was written (run the command again)"
                )
            else:
                message = tr(
                    "changed on disk while kvswitch was editing it; nothing was written (run the command again)"
                )
            raise ChangedOnDiskError(message, Location(path))
        data = rebuild(current or b"")
        expected = current or b""
        reapplied += 1

    def _write_loop() -> WriteResult:
        while True:
            current = read_optional(target)
            if expected is not None and (current or b"") != expected:
                reapply(current, writing=False)
                continue
            if current == data:
                if mode is not None:
                    _ensure_mode(path, target, mode)
                return WriteResult(path, target, False, None, reapplied)
            fresh = current is not None and backup and _digest(current) not in kept
            saved: Path | None = None
            prepared: PreparedWrite | None = None
            try:
                # the previous bytes are kept before the look-and-swap, not inside its window
                saved = keep(current) if backup and current is not None else None
                prepared = prepare_write(path, data, mode=mode, old=current, verify=expected is not None)
                prepared.keep = keep_raced
                _before_swap()
                prepared.commit()
            except RacedError:
                reapply(read_optional(target), writing=True)
                continue
            except WriteError:
                if fresh and saved is not None:
                    kept.pop(_digest(current or b""), None)
                    with contextlib.suppress(OSError):
                        saved.unlink()
                raise
            finally:
                if prepared is not None:
                    prepared.abort()
            if kept:
                prune(target)
            return WriteResult(path, target, True, saved, reapplied)

    try:
        return _write_loop()
    except ChangedOnDiskError:
        for digest, saved in kept.items():  # nothing written: only raced versions stay kept
            if digest not in raced:
                with contextlib.suppress(OSError):
                    saved.unlink()
        raise


def backup_of(path: Path, data: bytes) -> Path:
    """Keep ``data`` as the newest backup of ``path``; a failure names ``path`` (the file the
    user asked to write), with the backup's own place in the message."""
    try:
        return save_backup(Path(os.path.realpath(path)), data)
    except WriteError as exc:
        if exc.location and exc.location.path:
            message = tr("{error}, while keeping a backup ({backup}); nothing was written").format(
                error=exc.message, backup=exc.location.path
            )
        else:
            message = tr("{error}, while keeping a backup; nothing was written").format(error=exc.message)
        raise WriteError(message, Location(Path(path))) from exc


def save_backup(target: Path, data: bytes) -> Path:
    """Store ``data`` as the newest backup of ``target`` (in :func:`kvswitch.backups.backup_dir`);
    returns the backup's path.

    The name is one past the newest backup of the same second (never a freed lower number,
    which would sort as the oldest and be pruned at once), and it is claimed with a hard
    link, so two kvswitch processes backing up at once never overwrite each other."""
    real = os.path.realpath(target)
    directory = backup_dir(target)
    source = directory / "source"
    try:
        has_source = source.exists()
    except OSError as exc:
        raise WriteError(tr("cannot keep a backup: {reason}").format(reason=_why(exc)), Location(directory)) from exc
    if not has_source:
        write_private(source, real.encode("utf-8", "surrogateescape") + b"\n")
    stamp = backup_stamp()
    prepared = prepare_write(directory / f"{stamp}.bak", data, mode=0o600)
    try:
        n = next_number(directory, stamp)
        while True:
            dest = directory / f"{stamp}-{n:03d}.bak"
            try:
                os.link(prepared.temp, dest)
            except FileExistsError:
                n += 1
                continue
            except OSError as exc:
                raise WriteError(tr("cannot keep a backup: {reason}").format(reason=_why(exc)), Location(dest)) from exc
            break
    finally:
        prepared.abort()
    with contextlib.suppress(OSError):
        _fsync_dir(directory)
    return dest


def _ensure_mode(path: Path, target: Path, mode: int) -> None:
    """Give an unchanged file the mode a write would have given it (e.g. 0600 for a key)."""
    try:
        if stat.S_IMODE(target.stat().st_mode) != mode:
            target.chmod(mode)
    except OSError as exc:
        raise WriteError(tr("cannot set the file's mode: {reason}").format(reason=_why(exc)), Location(path)) from exc


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
            raise WriteError(tr("cannot create directory: {reason}").format(reason=_why(exc)), Location(d)) from exc


def append_private(path: Path, data: bytes) -> None:
    """Append to one of kvswitch's own logs (history): 0600 in a 0700 directory, fsynced."""
    path = Path(path)
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise WriteError(_cannot_write(_why(exc)), Location(path)) from exc
    try:
        os.write(fd, data)
        os.fsync(fd)
    except OSError as exc:
        raise WriteError(_cannot_write(_why(exc)), Location(path)) from exc
    finally:
        os.close(fd)
