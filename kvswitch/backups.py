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


def save_backup(target: Path, data: bytes) -> Path:
    """Store ``data`` as the newest backup of ``target``; returns the backup's path."""
    from kvswitch.io import write_private

    directory = backup_dir(target)
    source = directory / "source"
    if not source.exists():
        write_private(source, os.path.realpath(target).encode("utf-8", "surrogateescape") + b"\n")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    n = 0
    while (directory / f"{stamp}-{n:03d}.bak").exists():
        n += 1
    dest = directory / f"{stamp}-{n:03d}.bak"
    write_private(dest, data)
    return dest


def list_backups(target: Path) -> list[Backup]:
    """Backups of ``target``, newest first."""
    directory = backup_dir(target)
    out: list[Backup] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(directory):
            if entry.name.endswith(".bak"):
                st = entry.stat()
                out.append(Backup(entry.name[:-4], Path(entry.path), Path(target), st.st_mtime, st.st_size))
    return sorted(out, key=lambda b: b.id, reverse=True)


def prune(target: Path, keep: int = KEEP) -> None:
    """Remove all but the ``keep`` newest backups of ``target``."""
    for old in list_backups(target)[keep:]:
        with contextlib.suppress(OSError):
            old.path.unlink()
