"""Backups of the previous bytes of every file kvswitch writes, with bounded retention.

Layout: ``<backups>/<file name>-<hash of its real path>/`` holds ``source`` (the path, for
people and for ``restore --list``) and one ``<UTC time>-<n>.bak`` per write. Files are 0600
in 0700 directories, since a client file may hold a key.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from kvswitch import paths
from kvswitch.i18n import tr

__all__ = ["KEEP", "Backup", "backup_dir", "list_backups", "prune", "save_backup"]

KEEP = 20
"""Backups kept per file; older ones are removed after a successful write."""


@dataclass(frozen=True, slots=True)
class Backup:
    """One saved version of a file."""

    id: str
    path: Path
    source: Path
    created: float
    size: int


def backup_dir(target: Path) -> Path:
    real = os.path.realpath(target)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return paths.dirs().backups / f"{Path(real).name}-{digest}"


def _order(name: str) -> tuple[str, int]:
    """Sort key of a backup id ``<UTC time>-<n>``: the time, then ``n`` as a number (so that
    ``-1000`` comes after ``-999``)."""
    stamp, _, n = name.rpartition("-")
    return (stamp, int(n)) if n.isdigit() else (name, -1)


def save_backup(target: Path, data: bytes) -> Path:
    """Store ``data`` as the newest backup of ``target``; returns the backup's path.

    The name is one past the newest backup of the same second (never a freed lower number,
    which would sort as the oldest and be pruned at once), and it is claimed with a hard
    link, so two kvswitch processes backing up at once never overwrite each other."""
    from kvswitch.errors import Location, WriteError
    from kvswitch.io import _fsync_dir, _why, prepare_write, write_private

    real = os.path.realpath(target)
    directory = backup_dir(target)
    source = directory / "source"
    try:
        has_source = source.exists()
    except OSError as exc:
        raise WriteError(tr("cannot keep a backup: {reason}").format(reason=_why(exc)), Location(directory)) from exc
    if not has_source:
        write_private(source, real.encode("utf-8", "surrogateescape") + b"\n")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    prepared = prepare_write(directory / f"{stamp}.bak", data, mode=0o600)
    try:
        same_second = [_order(name[:-4])[1] for name in _names(directory) if name.startswith(f"{stamp}-")]
        n = max(same_second, default=-1) + 1
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


def _names(directory: Path) -> list[str]:
    """The backup file names in ``directory`` (no stat: the names say the order)."""
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if e.name.endswith(".bak") and not e.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return []


def list_backups(target: Path) -> list[Backup]:
    """Backups of ``target``, newest first."""
    directory = backup_dir(target)
    source = Path(os.path.realpath(target))
    out: list[Backup] = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(directory):
            if entry.name.endswith(".bak") and not entry.name.startswith("."):
                try:
                    st = entry.stat()
                except FileNotFoundError:  # pruned meanwhile
                    continue
                out.append(Backup(entry.name[:-4], Path(entry.path), source, st.st_mtime, st.st_size))
    return sorted(out, key=lambda b: _order(b.id), reverse=True)


def prune(target: Path, keep: int | None = None) -> None:
    """Remove all but the ``keep`` (default :data:`KEEP`, read at call time) newest backups."""
    for old in list_backups(target)[max(KEEP if keep is None else keep, 0) :]:
        with contextlib.suppress(OSError):
            old.path.unlink()
