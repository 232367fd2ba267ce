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
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kvswitch import paths
from kvswitch.errors import ChangedOnDiskError, KvswitchError, Location, WriteError
from kvswitch.i18n import clauses, tr
from kvswitch.io import (
    MAX_REAPPLY,
    PreparedWrite,
    RacedError,
    WriteResult,
    _fsync_dir,
    prepare_write,
    read_optional,
    write_private,
)
from kvswitch.records import record

__all__ = ["FileWrite", "commit_all", "recover"]

_JOURNAL = "journal.json"
_LOCK = "journal.lock"


@record(slots=True)
class FileWrite:
    """One file of a multi-file write: new bytes, the bytes they were made from, and how to
    re-make them if the file changed meanwhile."""

    path: Path
    data: bytes
    expected: bytes | None
    rebuild: Callable[[bytes], bytes] | None = None
    mode: int | None = None


def _sha(data: bytes | None) -> str | None:
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


def _journal_path() -> Path:
    return paths.dirs().state / _JOURNAL


def _locked() -> contextlib.AbstractContextManager[None]:
    """Hold the state directory's journal lock (released by the kernel if the process dies)."""
    from kvswitch.locks import state_lock

    return state_lock(_LOCK, tr("switch lock"))


def commit_all(writes: Sequence[FileWrite]) -> list[WriteResult]:
    """Write every file or none; the error names the file that failed and why."""
    with _locked():
        if _journal_path().exists():
            _recover_locked()  # a crashed switch first: never overwrite its journal
        return _commit_all(writes)


def _commit_all(writes: Sequence[FileWrite]) -> list[WriteResult]:
    raced: Path | None = None
    datas = [w.data for w in writes]
    expecteds = [w.expected for w in writes]
    attempts = [0] * len(writes)
    for _round in range(MAX_REAPPLY + 1):
        currents: list[bytes | None] = []
        for i, w in enumerate(writes):
            while True:
                current = read_optional(w.path)
                if expecteds[i] is None or (current or b"") == expecteds[i]:
                    break
                if w.rebuild is None or attempts[i] >= MAX_REAPPLY:
                    raise ChangedOnDiskError(
                        tr("changed on disk while kvswitch was editing it; no file was written"), Location(w.path)
                    )
                datas[i], expecteds[i] = w.rebuild(current or b""), current or b""
                attempts[i] += 1
            currents.append(current)
        done = _commit_round(writes, datas, currents, attempts)
        if not isinstance(done, Path):
            return done
        raced = done
        # a save raced one of the swaps: what was written is back out, so plan again from the
        # newer bytes (the next round's reads see them and rebuild)
    raise ChangedOnDiskError(
        tr(
            "changed on disk while kvswitch was writing it, each time it tried; no file was changed "
            "(run the command again)"
        ),
        Location(raced) if raced else None,
    )


def _commit_round(
    writes: Sequence[FileWrite], datas: list[bytes], currents: list[bytes | None], attempts: list[int]
) -> list[WriteResult] | Path:
    """One try at writing every file: the results, or the path of a file a save raced (every
    file is then as it was, and the raced version is in its file or in a backup)."""
    from kvswitch.backups import prune
    from kvswitch.io import RacedError, _before_swap, backup_of

    todo = [(w, d, c) for w, d, c in zip(writes, datas, currents, strict=True) if d != c]
    prepared: list[PreparedWrite] = []
    backups: list[Path | None] = []
    try:
        for w, data, current in todo:
            # the previous bytes are kept first, outside the window between look and swap
            backups.append(backup_of(w.path, current) if current is not None else None)
            p = prepare_write(w.path, data, mode=w.mode, old=current, verify=w.expected is not None)
            prepared.append(p)
        _write_journal(prepared, backups)
    except BaseException:
        for p in prepared:
            p.abort()
        _drop(backups)
        raise
    done: list[PreparedWrite] = []
    for p in prepared:
        try:
            _before_swap()
            p.commit()
        except RacedError:
            for rest in prepared:
                rest.abort()
            stuck = _roll_back(done)
            if stuck:
                raise _stuck_error(
                    stuck, tr("changed on disk while kvswitch was writing it"), Location(p.path)
                ) from None
            _drop(backups)
            _remove_journal()
            return p.path
        except WriteError as exc:
            for rest in prepared:
                rest.abort()
            stuck = _roll_back(done)
            if stuck:
                raise _stuck_error(stuck, exc.message, exc.location) from exc
            _drop(backups)
            _remove_journal()
            if done:
                message = tr("{error}; the files already written were put back, no file was changed")
            else:
                message = tr("{error}; no file was changed")
            raise WriteError(message.format(error=exc.message), exc.location) from exc
        done.append(p)
    _remove_journal()
    for p in prepared:
        prune(p.target)
    by_target = {p.target: (p, b) for p, b in zip(prepared, backups, strict=True)}
    results = []
    for w, n in zip(writes, attempts, strict=True):
        target = Path(os.path.realpath(w.path))
        hit = by_target.get(target)
        results.append(WriteResult(w.path, target, hit is not None, hit[1] if hit else None, n))
    return results


def _stuck_error(stuck: list[tuple[PreparedWrite, Path | None]], message: str, location: Location | None) -> WriteError:
    # the journal and the backups stay: the next kvswitch command retries (recover)
    names = ", ".join(tr("{path} (its previous bytes are in {backup})").format(path=q.path, backup=b) for q, b in stuck)
    return WriteError(
        tr(
            "{error}; the files already written could not all be put back: {files}; "
            "the next kvswitch command will try again"
        ).format(error=message, files=names),
        location,
    )


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
    """Put the old bytes back into files already replaced; the ones that could not be.

    The swap checks what comes out: a save made on top of kvswitch's version since is kept
    as a backup (it holds the switch that did not happen), and the file gets its old bytes."""
    from kvswitch.io import _rename

    stuck: list[tuple[PreparedWrite, Path | None]] = []
    for p in reversed(done):
        try:
            if p.old is None:
                _unwrite(p, _rename)
            else:
                undo = prepare_write(p.target, p.old, mode=p.old_mode, old=p.data, verify=True)
                undo.undo = True  # a save on top of what is undone is kept as a backup
                undo.commit()
        except (OSError, KvswitchError):
            stuck.append((p, None))
    return stuck


def _unwrite(p: PreparedWrite, rename: Callable[..., None]) -> None:
    """Remove a file this write created; a save made on top of it since is kept as a backup."""
    from kvswitch.io import _digest

    aside = p.target.with_name(f".{p.target.name}.kvswitch-{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        rename(p.target, aside)
    except FileNotFoundError:
        return
    came = read_optional(aside)
    if came is not None and _digest(came) != _digest(p.data):
        from kvswitch.io import save_backup

        save_backup(p.target, came)
    aside.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        _fsync_dir(p.target.parent)


def _swap_pending(e: dict[str, Any]) -> None:
    """Finish one rename of an interrupted switch, verified like any other write."""
    temp, target = Path(e["temp"]), Path(e["target"])
    old = read_optional(target)
    data = read_optional(temp)
    if data is None or _sha(data) != e["new"] or _sha(old) != e["old"]:
        raise RacedError("changed on disk", Location(target))
    p = PreparedWrite(target, target, temp, data, old, verify=True)
    p.commit()


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
        return tr("found an unreadable switch journal and removed it")
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
                _swap_pending(e)
            except (OSError, KvswitchError) as exc:
                failed = (e, exc)
                break
            renamed.append(e)
            with contextlib.suppress(OSError):
                _fsync_dir(Path(e["target"]).parent)
        if failed is None:
            _remove_journal()
            return tr("completed a switch that was interrupted: {files}").format(files=names)
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
            notes.append(
                tr("{path} could not be rolled back (its backup is gone) and stays switched").format(path=target)
            )
            continue
        try:
            new = read_optional(target)
            if new is None or _sha(new) != e["new"]:
                raise RacedError("changed on disk", Location(target))
            prepare_write(target, data, old=new, verify=True).commit()
        except RacedError:
            notes.append(tr("{path} was changed since and was left as it is").format(path=target))
        except KvswitchError as exc:
            notes.append(
                tr("{path} could not be rolled back yet ({error}; its previous bytes are in {backup})").format(
                    path=target, error=exc.message, backup=e["backup"]
                )
            )
            retry = True
    for e in pending + unchanged + changed:
        with contextlib.suppress(OSError):
            Path(e["temp"]).unlink()
    for e in changed:
        notes.append(tr("{path} was changed since and was left as it is").format(path=e["target"]))
    if retry:
        notes.append(tr("the next kvswitch command will try again"))
    else:
        _remove_journal()
    said = tr("rolled back a switch that was interrupted: {files}").format(files=names)
    return clauses([said, *notes])
