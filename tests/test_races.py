"""No save is lost and concurrent kvswitch processes agree (issue: trust, points 3, 5, 7, 11).

- the verified swap: a save that lands between kvswitch's look and its swap is swapped back
  and the edit re-applied to it; a roll back checks before it writes; recovery too;
- a kvswitch killed mid-swap leaves what came out of the file in a temp that the next write
  keeps as a backup;
- the switch lock: parallel ``kvswitch switch`` processes end in one of the modes asked for,
  in every file, and ``status`` agrees;
- reads take regular files only (FIFO, device, directory refused at once) up to a size cap;
- a write that cannot keep the file's owner is refused (uid 65534 in a child).
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kvswitch.io as kio
from kvswitch.backups import list_backups
from kvswitch.errors import ChangedOnDiskError, ReadError, WriteError
from kvswitch.io import atomic_write, read_bytes
from kvswitch.transaction import FileWrite, commit_all, recover
from tests.clientenv import (
    backups_under,
    ccswitch_file,
    cli,
    cline_file,
    config_data,
    config_file,
    init,
    temps_under,
)
from tests.unprivileged import run_kvswitch

OLD = b'{\n  "a": 1\n}\n'
NEW = b'{\n  "a": 2\n}\n'


def _bump(current: bytes) -> bytes:
    """The edit under test: ``"a": 1`` → ``"a": 2`` in whatever version is on disk."""
    return current.replace(b'"a": 1', b'"a": 2')


def _save_in_the_window(monkeypatch: pytest.MonkeyPatch, path: Path, versions: list[bytes]) -> None:
    """An editor saves (temp file + rename) each of ``versions`` in turn, one per write, right
    between kvswitch's look at the file and its swap."""
    pending = list(versions)

    def save() -> None:
        if pending:
            tmp = path.with_name(path.name + ".editor")
            tmp.write_bytes(pending.pop(0))
            os.replace(tmp, path)

    monkeypatch.setattr(kio, "_before_swap", save)


def _all_backups(path: Path) -> list[bytes]:
    return [b.path.read_bytes() for b in list_backups(path)]


# -- the verified swap ----------------------------------------------------------------------


def test_a_save_in_the_window_is_kept_and_the_edit_reapplied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "settings.json"
    cfg.write_bytes(OLD)
    theirs = b'{\n  "a": 1,\n  "theirs": true\n}\n'
    _save_in_the_window(monkeypatch, cfg, [theirs])
    result = atomic_write(cfg, NEW, expected=OLD, rebuild=_bump)
    assert cfg.read_bytes() == b'{\n  "a": 2,\n  "theirs": true\n}\n'  # their key and our edit
    assert result.reapplied == 1
    assert theirs in _all_backups(cfg) and OLD in _all_backups(cfg)
    assert temps_under(tmp_path) == []


def test_a_save_in_the_window_without_rebuild_stays_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "settings.json"
    cfg.write_bytes(OLD)
    theirs = b'{\n  "a": 1,\n  "theirs": true\n}\n'
    _save_in_the_window(monkeypatch, cfg, [theirs])
    with pytest.raises(ChangedOnDiskError, match="nothing was written"):
        atomic_write(cfg, NEW, expected=OLD)
    assert cfg.read_bytes() == theirs
    assert _all_backups(cfg) == [theirs]  # kept the moment it raced; no backup of OLD (not written)
    assert temps_under(tmp_path) == []


def test_a_file_created_in_the_window_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "new.json"
    theirs = b'{"theirs": 1}\n'
    _save_in_the_window(monkeypatch, cfg, [theirs])
    with pytest.raises(ChangedOnDiskError):
        atomic_write(cfg, NEW, expected=b"")
    assert cfg.read_bytes() == theirs


def test_a_second_save_on_top_of_the_swap_is_kept_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two saves race one write: one before the swap, one on top of kvswitch's file right after
    it. The one on top of kvswitch's file may hold kvswitch's unfinished edit, so it never stays
    in the file: it is kept as a backup; the file gets the first save with the edit re-applied."""
    cfg = tmp_path / "settings.json"
    cfg.write_bytes(OLD)
    first = b'{\n  "a": 1,\n  "k1": 1\n}\n'
    second = b'{\n  "a": 1,\n  "k1": 1,\n  "k2": 2\n}\n'
    _save_in_the_window(monkeypatch, cfg, [first])
    real = kio._rename
    fired = []

    def rename(src: Path, dst: Path, flags: int = 0) -> None:
        real(src, dst, flags)
        if flags == kio._RENAME_EXCHANGE and Path(dst) == cfg and not fired:
            fired.append(1)  # the editor saves again just after kvswitch's first swap
            tmp = cfg.with_name("editor.tmp")
            tmp.write_bytes(second)
            os.replace(tmp, cfg)

    monkeypatch.setattr(kio, "_rename", rename)
    atomic_write(cfg, NEW, expected=OLD, rebuild=_bump)
    assert cfg.read_bytes() == _bump(first)
    assert {first, second} <= set(_all_backups(cfg))


def test_without_exchange_the_fallback_looks_then_renames(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = kio._rename

    def no_exchange(src: Path, dst: Path, flags: int = 0) -> None:
        if flags:
            raise OSError(errno.EINVAL, "Invalid argument")
        real(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", no_exchange)
    cfg = tmp_path / "settings.json"
    cfg.write_bytes(OLD)
    assert atomic_write(cfg, NEW, expected=OLD).changed and cfg.read_bytes() == NEW
    fresh = tmp_path / "fresh.json"
    assert atomic_write(fresh, NEW, expected=b"").changed and fresh.read_bytes() == NEW
    theirs = b'{\n  "a": 1,\n  "theirs": true\n}\n'
    cfg.write_bytes(OLD)
    _save_in_the_window(monkeypatch, cfg, [theirs])
    atomic_write(cfg, NEW, expected=OLD, rebuild=_bump)
    assert cfg.read_bytes() == _bump(theirs)  # the look right before the rename saw it


def test_the_roll_back_keeps_a_save_made_after_the_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File 1 is written, then the user saves it, then file 2 fails: the roll back checks before
    it writes and keeps what it replaces (it used to write the old bytes over the save blindly:
    "no file was changed", the save gone). The save holds the switch that did not happen, so
    the file gets its old bytes and the save is a backup."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(OLD)
    b.write_bytes(OLD)
    theirs = b'{\n  "a": 2,\n  "theirs": true\n}\n'
    real = kio._rename

    def rename(src: Path, dst: Path, flags: int = 0) -> None:
        if Path(dst) == b and Path(src).name.startswith(".b.json"):
            a.with_name("x.tmp").write_bytes(theirs)
            os.replace(a.with_name("x.tmp"), a)  # the user saves file 1 after its commit
            raise OSError(errno.EROFS, "Read-only file system")
        real(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", rename)
    with pytest.raises(WriteError, match="no file was changed"):
        commit_all([FileWrite(a, NEW, OLD), FileWrite(b, NEW, OLD)])
    assert a.read_bytes() == OLD and theirs in _all_backups(a)
    assert b.read_bytes() == OLD
    assert temps_under(tmp_path) == []


def test_a_commit_raced_after_the_first_file_rolls_back_and_plans_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(OLD)
    b.write_bytes(OLD)
    theirs = b'{\n  "a": 1,\n  "theirs": true\n}\n'
    calls = []

    def save() -> None:
        calls.append(1)
        if len(calls) == 2:  # between the look at b and its swap, a already swapped
            b.with_name("x.tmp").write_bytes(theirs)
            os.replace(b.with_name("x.tmp"), b)

    monkeypatch.setattr(kio, "_before_swap", save)
    results = commit_all([FileWrite(a, NEW, OLD, _bump), FileWrite(b, NEW, OLD, _bump)])
    assert a.read_bytes() == NEW and b.read_bytes() == _bump(theirs)
    assert [r.changed for r in results] == [True, True] and results[1].reapplied == 1


CHILD_KILLED_MID_SWAP = """
import os, sys
from pathlib import Path
import kvswitch.io as kio
cfg, theirs = Path(sys.argv[1]), sys.argv[2].encode()
real = kio._rename
def rename(src, dst, flags=0):
    if flags == kio._RENAME_EXCHANGE:
        tmp = cfg.with_name("editor.tmp"); tmp.write_bytes(theirs); os.replace(tmp, cfg)
        real(src, dst, flags)
        os._exit(9)  # killed right after the swap: what came out sits in the temp file
    real(src, dst, flags)
kio._rename = rename
kio.atomic_write(cfg, sys.argv[3].encode(), expected=sys.argv[4].encode())
"""


def test_a_version_swapped_out_by_a_killed_kvswitch_is_kept_by_the_next_write(tmp_path: Path) -> None:
    cfg = tmp_path / "settings.json"
    cfg.write_bytes(OLD)
    theirs = b'{\n  "a": 1,\n  "theirs": true\n}\n'
    done = subprocess.run(
        [sys.executable, "-c", CHILD_KILLED_MID_SWAP, str(cfg), theirs.decode(), NEW.decode(), OLD.decode()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 9, done.stderr
    assert cfg.read_bytes() == NEW and len(temps_under(tmp_path)) == 1  # theirs is in the temp
    atomic_write(cfg, NEW + b"\n")  # any later write in that folder sweeps the dead temp
    assert temps_under(tmp_path) == []
    assert theirs in _all_backups(cfg)


def test_recovery_finishes_a_rename_only_over_the_version_it_planned(tmp_path: Path) -> None:
    import json

    from kvswitch import paths

    a = tmp_path / "a.json"
    a.write_bytes(OLD)
    prepared = kio.prepare_write(a, NEW, old=OLD, verify=True)
    journal = paths.dirs().state / "journal.json"
    kio.write_private(
        journal,
        json.dumps(
            {
                "pid": 1,
                "entries": [
                    {
                        "target": str(a),
                        "temp": str(prepared.temp),
                        "backup": None,
                        "old": hashlib.sha256(OLD).hexdigest(),
                        "new": hashlib.sha256(NEW).hexdigest(),
                    }
                ],
            }
        ).encode(),
    )
    note = recover()
    assert note is not None and note.startswith("completed") and a.read_bytes() == NEW


# -- reads never block and never blow up --------------------------------------------------


def test_special_files_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ReadError, match="named pipe"):
        read_bytes(fifo)
    with pytest.raises(ReadError, match="device"):
        read_bytes(Path("/dev/zero"))
    with pytest.raises(ReadError, match="directory"):
        read_bytes(tmp_path)
    assert time.monotonic() - started < 5  # nothing waited for a writer


def test_a_file_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    big = tmp_path / "settings.json"
    with big.open("wb") as fh:
        fh.truncate(kio.MAX_FILE_BYTES + 1)
    with pytest.raises(ReadError, match=r"too large: 16\.0 MiB; kvswitch reads files of up to 16 MiB"):
        read_bytes(big)


@pytest.mark.parametrize("command", [["lint"], ["switch", "split"], ["lint", "--fix"]])
def test_the_cli_on_a_fifo_and_dev_zero_exits_2_at_once(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    env = dict(os.environ)
    for target in (str(fifo), "/dev/zero"):
        done = subprocess.run(
            [sys.executable, "-m", "kvswitch", *command, target],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 2, done
        assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_status_with_a_client_that_became_a_fifo_answers(tmp_path: Path) -> None:
    init()
    cline_file().unlink()
    os.mkfifo(cline_file())
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch", "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
        check=False,
    )
    assert done.returncode == 1 and "named pipe" in done.stdout + done.stderr


# -- the owner is kept, or the write refused ------------------------------------------------


def test_a_write_that_would_change_the_owner_is_refused(public_sandbox: Path) -> None:
    """uid 65534 may write a root-owned, world-writable file in its own folder; a rename would
    hand the file to 65534 silently (it did). Refused, the file and its owner unchanged."""
    from tests.conftest import require_tool

    require_tool("setpriv")
    if os.geteuid() != 0:
        pytest.skip("needs root to make a file of another owner")
    folder = public_sandbox / "shared"
    folder.mkdir()
    cfg = folder / "settings.json"
    cfg.write_text(
        '{\n  "cline.openAiBaseUrl": "http://127.0.0.1:8000/v1",\n'
        '  "cline.cacheStrategy": {"mode": "merged", "chunkSize": 512}\n}\n'
    )
    cfg.chmod(0o666)
    os.chown(folder, 65534, 65534)
    before = cfg.read_bytes()
    env = {"KVSWITCH_HOME": str(public_sandbox / "kvswitch-home"), "HOME": str(public_sandbox / "home")}
    (public_sandbox / "kvswitch-home").mkdir()
    os.chown(public_sandbox / "kvswitch-home", 65534, 65534)
    out = run_kvswitch(["switch", "split", str(cfg)], env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "owner" in out.stderr and str(cfg) in out.stderr and "Traceback" not in out.stderr
    assert cfg.read_bytes() == before and cfg.stat().st_uid == 0


# -- concurrent switches agree --------------------------------------------------------------


def _file_mode(path: Path) -> str:
    text = path.read_text()
    found = re.search(r'"mode":\s*"(\w+)"', text) or re.search(r'^mode\s*=\s*"(\w+)"', text, re.M)
    assert found, text
    return found.group(1)


@pytest.mark.slow
def test_parallel_switch_processes_end_in_one_mode_everywhere() -> None:
    init()
    rng = random.Random(5)
    env = dict(os.environ)
    for _round in range(3):
        modes = [rng.choice(["merged", "split"]) for _ in range(8)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "kvswitch", "switch", m],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for m in modes
        ]
        outcomes = [
            (m, p.wait(timeout=120), p.stderr.read() if p.stderr else "") for m, p in zip(modes, procs, strict=True)
        ]
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream:
                    stream.close()
        for _m, rc, err in outcomes:
            assert rc == 0 or (rc == 1 and "another kvswitch is switching" in err), err
            assert "Traceback" not in err
        final = config_data()["mode"]
        assert final in {m for m, rc, _ in outcomes if rc == 0}
        assert _file_mode(cline_file()) == final and _file_mode(ccswitch_file()) == final
        status = cli("status")
        assert status.rc == 0, status


def test_a_switch_that_cannot_get_the_lock_refuses_clearly() -> None:
    from kvswitch.locks import switch_lock

    init()
    before = cline_file().read_bytes(), ccswitch_file().read_bytes(), config_file().read_bytes()
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with switch_lock():
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        import kvswitch.locks as kl

        real = kl.DEFAULT_TIMEOUT
        kl.DEFAULT_TIMEOUT = 0.3
        try:
            result = cli("switch", "split")
        finally:
            kl.DEFAULT_TIMEOUT = real
    finally:
        release.set()
        holder.join()
    assert result.rc == 1 and "another kvswitch is switching" in result.err
    assert (cline_file().read_bytes(), ccswitch_file().read_bytes(), config_file().read_bytes()) == before
    assert backups_under(Path(os.environ["KVSWITCH_HOME"])) == []
