"""All-or-nothing writes of several files, with an intent journal (D-4, D-12).

Every new version is first written and fsynced to a temp file beside its target and the
previous bytes are backed up; then a journal naming every temp file is written to the
state directory, the temp files are renamed in order, and the journal is removed. If a
rename fails, the files already replaced get their old bytes back. If the process dies
half way, :func:`recover` (run by the next kvswitch command) finishes the renames when
every temp file is still there, and otherwise puts the old bytes back, and says which.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvswitch import paths
from kvswitch.errors import ChangedOnDiskError, KvswitchError, Location, WriteError
from kvswitch.io import MAX_REAPPLY, PreparedWrite, WriteResult, prepare_write, read_optional, write_private

__all__ = ["FileWrite", "commit_all", "recover"]

_JOURNAL = "journal.json"


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One file of a multi-file write: new bytes, the bytes they were made from, and how to
    re-make them if the file changed meanwhile."""

    path: Path
    data: bytes
    expected: bytes | None
    rebuild: Callable[[bytes], bytes] | None = None
    mode: int | None = None


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _journal_path() -> Path:
    return paths.dirs().state / _JOURNAL


def commit_all(writes: Sequence[FileWrite]) -> list[WriteResult]:
    """Write every file or none; the error names the file that failed and why."""
    from kvswitch.backups import prune, save_backup

    final: list[tuple[FileWrite, bytes, bytes | None]] = []
    for w in writes:
        data, expected = w.data, w.expected
        for attempt in range(MAX_REAPPLY + 1):
            current = read_optional(w.path)
            if expected is None or (current or b"") == expected:
                break
            if w.rebuild is None or attempt == MAX_REAPPLY:
                raise ChangedOnDiskError(
                    "changed on disk while kvswitch was editing it; no file was written", Location(w.path)
                )
            data, expected = w.rebuild(current or b""), current or b""
        final.append((w, data, current))
    todo = [(w, d, c) for w, d, c in final if d != c]
    prepared: list[PreparedWrite] = []
    backups: list[Path | None] = []
    try:
        for w, data, current in todo:
            prepared.append(prepare_write(w.path, data, mode=w.mode, old=current))
        for p in prepared:
            if read_optional(p.target) != p.old:
                raise ChangedOnDiskError(
                    "changed on disk while kvswitch was writing it; no file was written", Location(p.path)
                )
            backups.append(save_backup(p.target, p.old) if p.old is not None else None)
        _write_journal(prepared, backups)
    except KvswitchError:
        for p in prepared:
            p.abort()
        _drop(backups)
        raise
    done: list[PreparedWrite] = []
    for p in prepared:
        try:
            p.commit()
        except WriteError:
            _roll_back(done)
            for rest in prepared:
                rest.abort()
            _drop(backups)
            _remove_journal()
            raise
        done.append(p)
    _remove_journal()
    for p in prepared:
        prune(p.target)
    by_target = {p.target: (p, b) for p, b in zip(prepared, backups, strict=True)}
    results = []
    for w, _data, _current in final:
        target = Path(os.path.realpath(w.path))
        hit = by_target.get(target)
        results.append(WriteResult(w.path, target, hit is not None, hit[1] if hit else None))
    return results


def _write_journal(prepared: list[PreparedWrite], backups: list[Path | None]) -> None:
    entries = [
        {
            "target": str(p.target),
            "temp": str(p.temp),
            "backup": str(b) if b else None,
            "old": _sha(p.old),
            "new": _sha(p.data),
        }
        for p, b in zip(prepared, backups, strict=True)
    ]
    write_private(_journal_path(), json.dumps({"entries": entries}, indent=1).encode())


def _remove_journal() -> None:
    with contextlib.suppress(FileNotFoundError):
        _journal_path().unlink()


def _drop(backups: list[Path | None]) -> None:
    for b in backups:
        if b is not None:
            with contextlib.suppress(OSError):
                b.unlink()


def _roll_back(done: list[PreparedWrite]) -> None:
    for p in reversed(done):
        if p.old is None:
            with contextlib.suppress(OSError):
                p.target.unlink()
            continue
        with contextlib.suppress(KvswitchError):
            prepare_write(p.target, p.old).commit()


def recover() -> str | None:
    """Finish or undo a multi-file write a crash interrupted; a sentence saying what was done,
    or ``None`` when there was nothing to do."""
    journal = _journal_path()
    try:
        entries = json.loads(journal.read_text(encoding="utf-8"))["entries"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _remove_journal()
        return "found an unreadable switch journal and removed it"
    renamed, pending, lost = [], [], []
    for e in entries:
        target, temp = Path(e["target"]), Path(e["temp"])
        if _sha(read_optional(target)) == e["new"]:
            renamed.append(e)
        elif temp.exists() and _sha(temp.read_bytes()) == e["new"]:
            pending.append(e)
        else:
            lost.append(e)
    if not lost:
        for e in pending:
            os.replace(e["temp"], e["target"])
        _remove_journal()
        names = ", ".join(e["target"] for e in entries)
        return f"completed a switch that was interrupted: {names}"
    for e in renamed:
        if e["backup"]:
            data = Path(e["backup"]).read_bytes()
            prepare_write(Path(e["target"]), data).commit()
    for e in pending:
        with contextlib.suppress(OSError):
            os.unlink(e["temp"])
    _remove_journal()
    names = ", ".join(e["target"] for e in entries)
    return f"rolled back a switch that was interrupted: {names}"
