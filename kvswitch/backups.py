"""Backups of the previous bytes of every file kvswitch writes: where they are, which there
are, and bounded retention.

Layout: ``<backups>/<file name>-<hash of its real path>/`` holds ``source`` (the path, for
people and for ``restore --list``) and one ``<UTC time>-<n>.bak`` per write. Files are 0600
in 0700 directories, since a client file may hold a key. A backup is a write, so
:func:`kvswitch.io.save_backup` (the one writer) stores one; this module names, lists and
prunes them, and writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from kvswitch import paths
from kvswitch.records import record

__all__ = ["KEEP", "Backup", "backup_dir", "backup_stamp", "list_backups", "next_number", "prune"]

KEEP = 20
"""Backups kept per file; older ones are removed after a successful write."""


@record(slots=True)
class Backup:
    """One saved version of a file."""

    id: str
    path: Path
    source: Path
    created: float
    size: int


def backup_dir(target: Path) -> Path:
    """The folder that holds the backups of ``target`` (of its real path: a link shares them)."""
    real = os.path.realpath(target)
    import hashlib  # here: reading and linting never name a backup, and OpenSSL costs their start-up

    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return paths.dirs().backups / f"{Path(real).name}-{digest}"


def backup_stamp() -> str:
    """The UTC time a backup taken now is named after (to the second)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _order(name: str) -> tuple[str, int]:
    """Sort key of a backup id ``<UTC time>-<n>``: the time, then ``n`` as a number (so that
    ``-1000`` comes after ``-999``)."""
    stamp, _, n = name.rpartition("-")
    return (stamp, int(n)) if n.isdigit() else (name, -1)


def next_number(directory: Path, stamp: str) -> int:
    """One past the newest backup of the second ``stamp`` in ``directory`` (never a freed lower
    number, which would sort as the oldest and be pruned at once)."""
    same_second = [_order(name[:-4])[1] for name in _names(directory) if name.startswith(f"{stamp}-")]
    return max(same_second, default=-1) + 1


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
