"""All-or-nothing writes of several files, with an intent journal (D-4, D-12).

Every new version is first written and fsynced to a temp file beside its target and the
previous bytes are backed up; then a journal naming every temp file is written to the
state directory, the temp files are renamed in order, and the journal is removed. If a
rename fails, the files already replaced get their old bytes back. If the process dies
half way, :func:`recover` (run by the next kvswitch command) finishes the renames when
every temp file is still there, and otherwise puts the old bytes back, and says which.
A file changed by someone else since the crash is never overwritten. One multi-file write
(or recovery) runs at a time per state directory (an advisory lock beside the journal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvswitch import paths
from kvswitch.errors import ChangedOnDiskError, KvswitchError, Location, WriteError
from kvswitch.io import (
    MAX_REAPPLY,
    PreparedWrite,
    WriteResult,
    _fsync_dir,
    _private_dir,
    _why,
    prepare_write,
    read_optional,
    write_private,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, one kvswitch at a time
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileWrite", "commit_all", "recover"]

_JOURNAL = "journal.json"
_LOCK = "journal.lock"


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


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Hold the state directory's journal lock (released by the kernel if the process dies)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    state = paths.dirs().state
    _private_dir(state)
    lock = state / _LOCK
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise WriteError(f"cannot open the switch lock: {_why(exc)}", Location(lock)) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def commit_all(writes: Sequence[FileWrite]) -> list[WriteResult]:
    """Write every file or none; the error names the file that failed and why."""
    with _locked():
        if _journal_path().exists():
            _recover_locked()  # a crashed switch first: never overwrite its journal
        return _commit_all(writes)


def _commit_all(writes: Sequence[FileWrite]) -> list[WriteResult]:
    from kvswitch.backups import prune, save_backup

    final: list[tuple[FileWrite, bytes, bytes | None, int]] = []
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
        final.append((w, data, current, attempt))
    todo = [(w, d, c) for w, d, c, _n in final if d != c]
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
    except BaseException:
        for p in prepared:
            p.abort()
        _drop(backups)
        raise
    done: list[PreparedWrite] = []
    for p in prepared:
        try:
            if read_optional(p.target) != p.old:  # the last look, right before the rename
                raise ChangedOnDiskError(
                    "changed on disk while kvswitch was writing it; no file was changed", Location(p.path)
                )
            p.commit()
        except WriteError as exc:
            for rest in prepared:
                rest.abort()
            stuck = _roll_back(done)
            if stuck:
                # the journal and the backups stay: the next kvswitch command retries (recover)
                names = ", ".join(f"{q.path} (its previous bytes are in {b})" for q, b in stuck)
                raise WriteError(
                    f"{exc.message}; the files already written could not all be put back: {names}; "
                    "the next kvswitch command will try again",
                    exc.location,
                ) from exc
            _drop(backups)
            _remove_journal()
            undone = "the files already written were put back, " if done else ""
            raise WriteError(f"{exc.message}; {undone}no file was changed", exc.location) from exc
        done.append(p)
    _remove_journal()
    for p in prepared:
        prune(p.target)
    by_target = {p.target: (p, b) for p, b in zip(prepared, backups, strict=True)}
    results = []
    for w, _data, _current, attempts in final:
        target = Path(os.path.realpath(w.path))
        hit = by_target.get(target)
        results.append(WriteResult(w.path, target, hit is not None, hit[1] if hit else None, attempts))
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
    write_private(_journal_path(), json.dumps({"pid": os.getpid(), "entries": entries}, indent=1).encode())


def _remove_journal() -> None:
    journal = _journal_path()
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()
    with contextlib.suppress(OSError):
        _fsync_dir(journal.parent)


def _drop(backups: list[Path | None]) -> None:
    for b in backups:
        if b is not None:
            with contextlib.suppress(OSError):
                b.unlink()


def _roll_back(done: list[PreparedWrite]) -> list[tuple[PreparedWrite, Path | None]]:
    """Put the old bytes back into files already replaced; the ones that could not be."""
    stuck: list[tuple[PreparedWrite, Path | None]] = []
    for p in reversed(done):
        try:
            if p.old is None:
                p.target.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    _fsync_dir(p.target.parent)
            else:
                prepare_write(p.target, p.old, mode=p.old_mode).commit()
        except (OSError, KvswitchError):
            stuck.append((p, None))
    return stuck


def recover() -> str | None:
    """Finish or undo a multi-file write a crash interrupted; a sentence saying what was done,
    or ``None`` when there was nothing to do."""
    if not _journal_path().exists():
        return None
    with _locked():
        return _recover_locked()


def _recover_locked() -> str | None:
    journal = _journal_path()
    try:
        entries = json.loads(journal.read_text(encoding="utf-8"))["entries"]
        for e in entries:
            for key in ("target", "temp"):
                if not isinstance(e[key], str):
                    raise TypeError(key)
            for key in ("backup", "old", "new"):
                if not isinstance(e[key], str | None):
                    raise TypeError(key)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _remove_journal()
        return "found an unreadable switch journal and removed it"
    renamed, pending, unchanged, changed = [], [], [], []
    for e in entries:
        target, temp = Path(e["target"]), Path(e["temp"])
        try:
            now = _sha(read_optional(target))
            temp_sha = _sha(read_optional(temp))
        except KvswitchError:
            now, temp_sha = "?", None
        if now == e["new"]:
            renamed.append(e)
        elif now != e["old"]:
            changed.append(e)  # someone wrote it since: it is never overwritten
        elif temp_sha == e["new"]:
            pending.append(e)
        else:
            unchanged.append(e)
    names = ", ".join(e["target"] for e in entries)
    if not changed and not unchanged:
        failed = None
        for e in pending:
            try:
                os.replace(e["temp"], e["target"])  # noqa: PTH105
            except OSError as exc:
                failed = (e, exc)
                break
            renamed.append(e)
            with contextlib.suppress(OSError):
                _fsync_dir(Path(e["target"]).parent)
        if failed is None:
            _remove_journal()
            return f"completed a switch that was interrupted: {names}"
        pending.remove(failed[0])
        unchanged.append(failed[0])
    # roll back: the files already switched get their previous bytes again
    notes = []
    retry = False
    for e in renamed:
        target = Path(e["target"])
        try:
            if e["old"] is None:
                target.unlink(missing_ok=True)
                continue
            data = read_optional(Path(e["backup"])) if e["backup"] else None
        except KvswitchError:
            data = None
        if data is None or _sha(data) != e["old"]:
            notes.append(f"{target} could not be rolled back (its backup is gone) and stays switched")
            continue
        try:
            prepare_write(target, data).commit()
        except KvswitchError as exc:
            notes.append(f"{target} could not be rolled back yet ({exc.message}; its previous bytes are in {e['backup']})")
            retry = True
    for e in pending + unchanged + changed:
        with contextlib.suppress(OSError):
            Path(e["temp"]).unlink()
    for e in changed:
        notes.append(f"{e['target']} was changed since and was left as it is")
    if retry:
        notes.append("the next kvswitch command will try again")
    else:
        _remove_journal()
    extra = "; " + "; ".join(notes) if notes else ""
    return f"rolled back a switch that was interrupted: {names}{extra}"
