"""kvswitch.transaction: all-or-nothing multi-file writes, the intent journal, recover()."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import kvswitch.io as kio
import kvswitch.transaction as kt
from kvswitch import paths
from kvswitch.backups import list_backups
from kvswitch.errors import ChangedOnDiskError, WriteError
from kvswitch.transaction import FileWrite, commit_all, recover


def temps(*dirs: Path) -> list[str]:
    return sorted(p.name for d in dirs for p in d.iterdir() if ".kvswitch-" in p.name and p.name.endswith(".tmp"))


def journal() -> Path:
    return paths.dirs().state / "journal.json"


def nbackups(*files: Path) -> list[int]:
    return [len(list_backups(f)) for f in files]


@pytest.fixture
def three(tmp_path: Path) -> list[Path]:
    files = []
    for i, sub in enumerate(("a", "b", "c")):
        d = tmp_path / sub
        d.mkdir()
        f = d / "settings.json"
        f.write_bytes(b'{"old": %d}\n' % i)
        files.append(f)
    return files


def old(i: int) -> bytes:
    return b'{"old": %d}\n' % i


def new(i: int) -> bytes:
    return b'{"new": %d}\n' % i


def writes(files: list[Path]) -> list[FileWrite]:
    return [FileWrite(f, new(i), old(i)) for i, f in enumerate(files)]


def fail_replace_of(monkeypatch: pytest.MonkeyPatch, victims: set[Path], after: int = 0) -> None:
    """A rename onto any of ``victims`` fails (after ``after`` successful calls onto them)."""
    real = kio._rename
    hits = {"n": 0}

    def rename(src: Path, dst: Path, flags: int = 0) -> None:
        if Path(dst) in victims:
            hits["n"] += 1
            if hits["n"] > after:
                raise OSError(errno.EROFS, "Read-only file system")
        real(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", rename)


def test_commit_all_writes_every_file(three: list[Path]) -> None:
    results = commit_all(writes(three))
    assert [f.read_bytes() for f in three] == [new(i) for i in range(3)]
    assert all(r.changed for r in results)
    assert [r.backup.read_bytes() for r in results if r.backup] == [old(i) for i in range(3)]
    assert not journal().exists()
    assert temps(*(f.parent for f in three)) == []


def test_unchanged_files_are_not_written(three: list[Path]) -> None:
    ino = three[1].stat().st_ino
    results = commit_all([FileWrite(three[0], new(0), old(0)), FileWrite(three[1], old(1), old(1))])
    assert [r.changed for r in results] == [True, False]
    assert three[1].stat().st_ino == ino and list_backups(three[1]) == []


def test_second_of_three_renames_fails(three: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    commit_all([FileWrite(three[0], old(0) + b" ", old(0))])  # an earlier backup exists
    three[0].write_bytes(old(0))
    earlier = [b.path.read_bytes() for b in list_backups(three[0])]
    counts = nbackups(*three)
    inode3 = three[2].stat().st_ino
    fail_replace_of(monkeypatch, {three[1]})
    with pytest.raises(WriteError) as info:
        commit_all(writes(three))
    message = str(info.value)
    assert message.startswith(f"{three[1]}: ")  # names the file that failed
    assert "read-only file system" in message and "no file was changed" in message
    assert three[0].read_bytes() == old(0)  # put back
    assert three[1].read_bytes() == old(1)
    assert three[2].read_bytes() == old(2) and three[2].stat().st_ino == inode3  # never touched
    assert temps(*(f.parent for f in three)) == []
    assert not journal().exists()
    assert nbackups(*three) == counts  # the new backups are gone
    assert [b.path.read_bytes() for b in list_backups(three[0])] == earlier  # the old ones stay


def test_a_failed_roll_back_keeps_the_journal_for_recover(three: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # file 2 cannot be replaced, and then file 1 cannot be put back either
    real = kio._rename
    calls: list[Path] = []

    def rename(src: Path, dst: Path, flags: int = 0) -> None:
        calls.append(Path(dst))
        if Path(dst) == three[1] or calls.count(three[0]) > 1:
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", rename)
    with pytest.raises(WriteError) as info:
        commit_all(writes(three))
    assert "could not all be put back" in str(info.value) and str(three[0]) in str(info.value)
    assert three[0].read_bytes() == new(0)
    assert journal().exists()
    [b] = list_backups(three[0])
    assert b.path.read_bytes() == old(0)  # the previous bytes are still kept
    monkeypatch.setattr(kio, "_rename", real)
    note = recover()
    assert note is not None and note.startswith("rolled back")
    assert [f.read_bytes() for f in three] == [old(i) for i in range(3)]
    assert not journal().exists()


def test_a_new_file_is_removed_again_on_roll_back(three: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = three[0].parent / "fresh.json"
    fail_replace_of(monkeypatch, {three[1]})
    with pytest.raises(WriteError):
        commit_all([FileWrite(fresh, b"{}", b""), FileWrite(three[1], new(1), old(1))])
    assert not fresh.exists() and three[1].read_bytes() == old(1)


def test_changed_on_disk_writes_nothing(three: list[Path]) -> None:
    three[2].write_bytes(b'{"theirs": true}\n')
    with pytest.raises(ChangedOnDiskError) as info:
        commit_all(writes(three))
    assert str(info.value).startswith(f"{three[2]}: ")
    assert [f.read_bytes() for f in three[:2]] == [old(0), old(1)]
    assert three[2].read_bytes() == b'{"theirs": true}\n'
    assert nbackups(*three) == [0, 0, 0]
    assert temps(*(f.parent for f in three)) == [] and not journal().exists()


def test_changed_on_disk_while_writing_writes_nothing(three: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    real = kt.prepare_write

    def prepare(path: Path, data: bytes, **kw: object) -> kio.PreparedWrite:
        p = real(path, data, **kw)  # type: ignore[arg-type]
        if Path(path) == three[1]:
            three[1].write_bytes(b'{"theirs": true}\n')
        return p

    monkeypatch.setattr(kt, "prepare_write", prepare)
    with pytest.raises(ChangedOnDiskError):
        commit_all(writes(three))
    assert [three[0].read_bytes(), three[2].read_bytes()] == [old(0), old(2)]
    assert three[1].read_bytes() == b'{"theirs": true}\n'
    # theirs is also kept as a backup, the moment it raced (docs/decisions.md 36)
    assert nbackups(*three) == [0, 1, 0]
    assert list_backups(three[1])[0].path.read_bytes() == b'{"theirs": true}\n'
    assert temps(*(f.parent for f in three)) == [] and not journal().exists()


def test_changed_on_disk_with_rebuild_is_reapplied(three: list[Path]) -> None:
    three[1].write_bytes(b'{"old": 1, "theirs": true}\n')
    ws = writes(three)
    ws[1] = FileWrite(three[1], new(1), old(1), rebuild=lambda cur: cur.replace(b'"old"', b'"new"'))
    results = commit_all(ws)
    assert three[1].read_bytes() == b'{"new": 1, "theirs": true}\n'
    assert results[1].reapplied == 1


# -- crash and recovery -------------------------------------------------------------------------

CRASH_CHILD = """
    import os, sys
    from pathlib import Path
    import kvswitch.io as kio
    from kvswitch.transaction import FileWrite, commit_all
    real = kio.PreparedWrite.commit
    n = {"commits": 0}
    a, b = Path(sys.argv[2]), Path(sys.argv[3])
    def commit(self):
        if self.target in (a, b):  # not kvswitch's own files (backup source, journal)
            n["commits"] += 1
            if n["commits"] > int(sys.argv[1]):
                os._exit(9)  # the process dies: no except, no finally
        real(self)
    kio.PreparedWrite.commit = commit
    if sys.argv[1] == "2":  # every rename done: die just before the journal goes
        import kvswitch.transaction as kt
        kt._remove_journal = lambda: os._exit(9)
    a_old = b"" if sys.argv[4:] == ["create"] else b'{"old": 0}\\n'
    commit_all([FileWrite(a, b'{"new": 0}\\n', a_old), FileWrite(b, b'{"new": 1}\\n', b'{"old": 1}\\n')])
    sys.exit(0)
"""


def crash_after(renames: int, a: Path, b: Path, *, create: bool = False) -> None:
    """A child process writes a and b and dies after ``renames`` renames (journal written;
    with 2, just before the journal is removed)."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_CHILD), str(renames), str(a), str(b)]
        + (["create"] if create else []),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 9, out.stderr


def test_recover_completes_an_interrupted_switch(three: list[Path]) -> None:
    a, b = three[0], three[1]
    crash_after(1, a, b)
    assert a.read_bytes() == new(0) and b.read_bytes() == old(1)  # half way
    assert journal().exists() and len(temps(b.parent)) == 1
    note = recover()
    assert note is not None and note.startswith("completed a switch that was interrupted")
    assert str(a) in note and str(b) in note
    assert a.read_bytes() == new(0) and b.read_bytes() == new(1)
    assert not journal().exists() and temps(a.parent, b.parent) == []
    assert [bk.path.read_bytes() for bk in list_backups(b)] == [old(1)]  # the backups stay
    assert recover() is None


def test_recover_completes_when_every_rename_was_done(three: list[Path]) -> None:
    crash_after(2, three[0], three[1])  # died before removing the journal
    assert journal().exists()
    note = recover()
    assert note is not None and note.startswith("completed")
    assert [three[0].read_bytes(), three[1].read_bytes()] == [new(0), new(1)]


def test_recover_rolls_back_when_a_temp_file_is_missing(three: list[Path]) -> None:
    a, b = three[0], three[1]
    crash_after(1, a, b)
    for name in temps(b.parent):
        (b.parent / name).unlink()
    note = recover()
    assert note is not None and note.startswith("rolled back a switch that was interrupted")
    assert a.read_bytes() == old(0) and b.read_bytes() == old(1)
    assert not journal().exists() and temps(a.parent, b.parent) == []


def test_recover_rolls_back_when_no_rename_was_done_and_a_temp_is_gone(three: list[Path]) -> None:
    a, b = three[0], three[1]
    crash_after(0, a, b)
    for name in temps(a.parent):
        (a.parent / name).unlink()
    note = recover()
    assert note is not None and note.startswith("rolled back")
    assert a.read_bytes() == old(0) and b.read_bytes() == old(1)
    assert temps(a.parent, b.parent) == []


def test_recover_removes_a_file_the_interrupted_switch_created(three: list[Path]) -> None:
    fresh, b = three[0].parent / "fresh.json", three[1]
    crash_after(1, fresh, b, create=True)
    assert fresh.read_bytes() == new(0)
    for name in temps(b.parent):
        (b.parent / name).unlink()
    note = recover()
    assert note is not None and note.startswith("rolled back")
    assert not fresh.exists() and b.read_bytes() == old(1)


def test_recover_never_overwrites_a_file_changed_since_the_crash(three: list[Path]) -> None:
    a, b = three[0], three[1]
    crash_after(1, a, b)
    b.write_bytes(b'{"edited by hand": true}\n')  # the user edits b before the next kvswitch
    note = recover()
    assert note is not None and note.startswith("rolled back")
    assert f"{b} was changed since and was left as it is" in note
    assert a.read_bytes() == old(0)
    assert b.read_bytes() == b'{"edited by hand": true}\n'
    assert not journal().exists() and temps(a.parent, b.parent) == []


def test_recover_in_process_after_an_interrupting_exception(three: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    class Crash(BaseException):
        pass

    real = kio.PreparedWrite.commit
    n = {"commits": 0}

    def commit(self: kio.PreparedWrite) -> None:
        if self.target in three:
            n["commits"] += 1
            if n["commits"] == 2:
                raise Crash
        real(self)

    monkeypatch.setattr(kio.PreparedWrite, "commit", commit)
    with pytest.raises(Crash):
        commit_all(writes(three))
    monkeypatch.setattr(kio.PreparedWrite, "commit", real)
    assert journal().exists()
    note = recover()
    assert note is not None and note.startswith("completed")
    assert [f.read_bytes() for f in three] == [new(i) for i in range(3)]


def test_commit_all_recovers_a_left_over_journal_before_writing_its_own(three: list[Path]) -> None:
    a, b = three[0], three[1]
    crash_after(1, a, b)
    commit_all([FileWrite(three[2], new(2), old(2))])
    assert not journal().exists()
    assert [f.read_bytes() for f in three] == [new(0), new(1), new(2)]


def test_recover_without_a_journal_returns_none() -> None:
    assert recover() is None


def test_an_unreadable_journal_is_removed_and_said(three: list[Path]) -> None:
    journal().parent.mkdir(parents=True)
    journal().write_text("{not json")
    assert recover() == "found an unreadable switch journal and removed it"
    assert not journal().exists()
    journal().write_text(json.dumps({"entries": [{"target": 3}]}))
    assert recover() == "found an unreadable switch journal and removed it"


def test_recover_waits_for_a_switch_in_progress(three: list[Path]) -> None:
    """A journal of a live switch is not recover()'s to finish: it waits for the lock."""
    state = paths.dirs().state
    state.mkdir(parents=True)
    # the journal of a switch another process is still doing (its temp not yet renamed)
    journal().write_text(
        json.dumps(
            {
                "entries": [
                    {
                        "target": str(three[0]),
                        "temp": str(three[0].parent / ".x.kvswitch-1-00000000.tmp"),
                        "backup": None,
                        "old": "0" * 64,
                        "new": "1" * 64,
                    },
                ]
            }
        )
    )
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import fcntl, os, sys, time
            fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("locked", flush=True)
            time.sleep(0.5)
            os.unlink(sys.argv[2])  # it finished: journal gone
            """),
            str(state / "journal.lock"),
            str(journal()),
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        assert recover() is None
        assert time.monotonic() - started > 0.3
        assert three[0].read_bytes() == old(0)
        holder.wait(timeout=30)
