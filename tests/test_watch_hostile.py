"""The watcher under hostile paths and races (issue 10, points 5, 7 and 11): whatever a watched
path becomes it never hangs, never reads a special file, reports it once and stays stoppable; a
watched folder deleted or moved away and re-created is watched again; its own writes hold the
switch lock; a save that beats its commit is looked at again, never reported at once.

Everything is real: inotify through watchdog, FIFOs, sockets, devices, ``kvswitch watch`` as a
child process stopped with SIGTERM, a second process holding the switch lock. The waits poll
with bounded timeouts; a special file that could block or exhaust memory is only ever met by a
child process with a time and memory limit, so that a regression fails instead of hanging."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.observe import cline_mode, toml_mode
from tests.helpers.watching import (
    CHANGING,
    DEBOUNCE,
    Events,
    Sandbox,
    WriteSpy,
    cline_as,
    config_data,
    running_watcher,
    save_replace,
    wait_until,
)


def _in_sync(sb: Sandbox, mode: str) -> bool:
    return cline_mode(sb.cline) == mode and toml_mode(sb.toml) == mode and config_data()["mode"] == mode


def _split_toml(text: str) -> str:
    assert text.count('mode = "merged"') == 1, text
    return text.replace('mode = "merged"', 'mode = "split"')


def _back_as_split(sb: Sandbox, merged_text: str) -> None:
    """Whatever is at the CC Switch path goes; the file comes back, flipped to split by hand."""
    path = sb.toml
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    save_replace(path, _split_toml(merged_text))


# -- special files: refused unread, reported once, the watcher goes on ----------------------------


def _directory(path: Path) -> Any:
    path.mkdir()


def _socket(path: Path) -> Any:
    # bound by a relative name: a full tmp path can pass the 108-byte limit of a socket address
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        sock.bind(path.name)
    finally:
        os.chdir(here)
    return sock


def _loop(path: Path) -> Any:
    path.symlink_to(path.name)  # a link to itself


def _huge(path: Path) -> Any:
    from kvswitch.io import MAX_FILE_BYTES

    with open(path, "wb") as fh:  # sparse: costs no disk
        fh.truncate(MAX_FILE_BYTES + 1)


SAFE_HOSTILE: dict[str, tuple[Callable[[Path], Any], str]] = {
    "directory": (_directory, "is a directory"),
    "socket": (_socket, "is a socket, not a regular file"),
    "symlink loop": (_loop, "too many levels of symbolic links"),
    "huge": (_huge, "too large"),
}
"""What a client path may become that cannot hang the test process even if kvswitch regressed
(a FIFO or /dev/zero could: those run in a child process, below)."""


@pytest.mark.parametrize("what", list(SAFE_HOSTILE))
def test_a_client_path_that_becomes_special_is_reported_once_and_the_watcher_goes_on(
    what: str, sb: Sandbox, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, reason = SAFE_HOSTILE[what]
    text = sb.toml.read_text()
    before = (sb.cline.read_bytes(), sb.config.read_bytes())
    with running_watcher(events):
        sb.toml.unlink()
        made = make(sb.toml)
        try:
            error = events.wait(lambda e: e.kind == "error" and reason in e.message, timeout=6.0)
            assert error is not None, events.describe()
            assert error.path == sb.toml and str(sb.toml) not in error.message  # said once, plainly
            # more events on it, and a change of kvswitch.toml: no flood of the same error
            os.utime(sb.toml, follow_symlinks=False)
            save_replace(sb.config, sb.config.read_text() + "# touched\n")
            assert events.wait_quiet(quiet=6 * DEBOUNCE), events.describe()
            same = [e for e in events.all if e.kind == "error" and reason in e.message]
            assert len(same) == 1, events.describe()
            assert not events.of(*CHANGING), events.describe()
            assert sb.cline.read_bytes() == before[0]
            # the watcher is still there for the next real change
            mark = len(events)
            _back_as_split(sb, text)
            assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe(mark)
        finally:
            if isinstance(made, socket.socket):
                made.close()
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 5.0


def test_a_flip_refused_while_another_client_is_unreadable_is_adopted_once_it_is_back(
    sb: Sandbox, events: Events
) -> None:
    text = sb.toml.read_text()
    with running_watcher(events):
        sb.toml.unlink()
        sb.toml.mkdir()
        assert events.wait(lambda e: e.kind == "error" and e.path == sb.toml), events.describe()
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        # not adopted into the config while the CC Switch client cannot be brought along
        refused = events.wait(lambda e: e.kind == "error" and e.path == sb.cline)
        assert refused is not None and str(sb.toml) in refused.message, events.describe()
        assert config_data()["mode"] == "merged"
        sb.toml.rmdir()
        save_replace(sb.toml, text)  # back as it was (merged): the flip is carried through now
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()


def test_a_client_missing_its_folder_at_start_is_seen_when_the_folder_comes(sb: Sandbox, events: Events) -> None:
    text = sb.toml.read_text()
    folder = sb.toml.parent
    shutil.rmtree(folder)
    with running_watcher(events):
        folder.mkdir()
        (folder / "config.toml").write_text(_split_toml(text))
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()


def _delete(folder: Path) -> None:
    shutil.rmtree(folder)


def _move_away(folder: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".old"))


def _delete_parent_too(folder: Path) -> None:
    shutil.rmtree(folder.parent)  # ~/.config itself (kvswitch's own files are elsewhere here)


@pytest.mark.parametrize(
    "how", [_delete, _move_away, _delete_parent_too], ids=["deleted", "moved away", "parent deleted"]
)
def test_a_watched_folder_deleted_and_recreated_is_watched_again(
    how: Callable[[Path], None], sb: Sandbox, events: Events
) -> None:
    text = sb.toml.read_text()
    folder = sb.toml.parent
    with running_watcher(events):
        how(folder)
        time.sleep(3 * DEBOUNCE)  # the watch is gone meanwhile; the next one comes with the folder
        folder.mkdir(parents=True)
        (folder / "config.toml").write_text(text)  # back as it was: nothing to do
        assert events.wait_quiet(quiet=8 * DEBOUNCE)
        mark = len(events)
        # and a later save in the re-created folder is seen like any other
        save_replace(sb.toml, _split_toml(text))
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()
        assert events.wait_quiet()
    assert [e.kind for e in events.since(mark) if e.kind in CHANGING] == ["adopted", "propagated"]
    assert not events.of("invalid"), events.describe()


# -- kvswitch watch as a child process: FIFO, /dev/zero, SIGTERM -------------------------------------

MEMORY_LIMIT = 2 << 30
"""Address space for a child watcher (bytes): a regression reading /dev/zero fails, not the host."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class Child:
    """``kvswitch watch`` in a child process, its output collected in a file."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.out = tmp_path / f"watch-{time.monotonic_ns()}.out"
        with open(self.out, "w") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kvswitch", "watch", "--debounce", "100", *args],
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_limited,
            )

    def text(self) -> str:
        return self.out.read_text(errors="replace")

    def wait_for(self, needle: str, timeout: float = 30.0) -> bool:
        return bool(wait_until(lambda: needle in self.text() or self.proc.poll() is not None, timeout)) and (
            needle in self.text()
        )

    def terminate(self, timeout: float = 10.0) -> tuple[int | None, float]:
        """SIGTERM, then (exit code or None if still running after ``timeout``, seconds taken)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout), time.monotonic() - t0
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - t0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    made: list[Child] = []
    yield made
    for c in made:
        c.kill()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


BLOCKING = {"fifo": (_fifo, "named pipe (FIFO)"), "/dev/zero": (_dev_zero, "is a device")}


@pytest.mark.parametrize("what", list(BLOCKING))
def test_kvswitch_watch_stops_promptly_on_sigterm_while_a_client_path_is_special(
    what: str, sb: Sandbox, tmp_path: Path, children: list[Child]
) -> None:
    """A FIFO used to block the watcher's read for good; kvswitch.toml changing then (the
    config path reads every client) left watchdog's thread waiting on it, so SIGTERM never
    stopped the process. /dev/zero was read until memory ran out."""
    make, reason = BLOCKING[what]
    text = sb.toml.read_text()
    child = Child(tmp_path)
    children.append(child)
    assert child.wait_for("started"), child.text()
    sb.toml.unlink()
    make(sb.toml)
    assert child.wait_for(reason, timeout=15), child.text()
    save_replace(sb.config, sb.config.read_text() + "# touched by hand\n")  # every client is read
    time.sleep(1.0)
    assert child.proc.poll() is None, child.text()  # alive and well
    # it still handles a real change
    _back_as_split(sb, text)
    assert wait_until(lambda: _in_sync(sb, "split"), timeout=15), child.text()
    # and special again when it is told to stop
    sb.toml.unlink()
    make(sb.toml)
    time.sleep(0.5)
    code, took = child.terminate()
    assert code == 0, f"still running {took:.1f} s after SIGTERM:\n{child.text()}"
    assert took < 10.0
    out = child.text()
    assert "stopped: watcher stopped" in out
    assert "Traceback" not in out and "unexpected error" not in out, out


def test_watch_once_with_a_fifo_client_reports_it_and_exits_1(
    sb: Sandbox, tmp_path: Path, children: list[Child]
) -> None:
    sb.toml.unlink()
    os.mkfifo(sb.toml)
    child = Child(tmp_path, "--once")
    children.append(child)
    try:
        code = child.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = None
    assert code == 1, child.text()
    assert f"error: {sb.toml}: cannot read: is a named pipe (FIFO), not a regular file" in child.text()
    assert stat_is_fifo(sb.toml)  # nothing was written over it


def stat_is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(path).st_mode)


# -- a stop never waits for a look in progress ----------------------------------------------------


def test_stop_returns_promptly_while_a_slow_nudge_runs_and_nothing_is_done_after_it(
    sb: Sandbox, events: Events, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look holds the watcher's work lock while it nudges; watchdog's thread used to wait on
    that lock for the next event, holding its own, so stopping (SIGTERM) waited for the nudge.
    And a look that waited behind it must not run once the watcher is stopped."""
    from kvswitch.config import client_path, edit_config, read_config
    from kvswitch.edits import Set
    from kvswitch.watch import Watcher

    started, ended = tmp_path / "nudge-started", tmp_path / "nudge-ended"
    script = tmp_path / "slow_reload.py"
    script.write_text(
        "import pathlib, sys, time\npathlib.Path(sys.argv[1]).write_text('x')\n"
        "time.sleep(4)\npathlib.Path(sys.argv[2]).write_text('x')\n"
    )
    config = read_config()
    (index,) = [i for i, c in enumerate(config.model.clients) if client_path(c) == sb.toml]
    argv = [sys.executable, str(script), str(started), str(ended)]
    edit_config([Set(("clients", index, "nudge"), {"kind": "command", "argv": argv, "timeout_seconds": 60})], config)
    spy = WriteSpy(monkeypatch)
    watcher = Watcher(events, debounce=DEBOUNCE)
    watcher.start()
    try:
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(started.exists, timeout=10), events.describe()
        # while the nudge runs: the CC Switch file flipped back by hand (a look is queued) …
        save_replace(sb.toml, sb.toml.read_text().replace('mode = "split"', 'mode = "merged"', 1))
        time.sleep(4 * DEBOUNCE)
    finally:
        t0 = time.monotonic()
        watcher.stop()
        took = time.monotonic() - t0
        stopped = time.monotonic()
    assert took < 3.0, f"stop took {took:.1f} s"
    # … and it is not handled after the stop, once the nudge is over
    assert wait_until(ended.exists, timeout=15)
    time.sleep(1.0)
    assert not spy.by_watcher(since=stopped), events.describe()
    assert cline_mode(sb.cline) == "split" and toml_mode(sb.toml) == "merged"


# -- the switch lock ----------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from kvswitch.locks import switch_lock
with switch_lock(timeout=10):
    Path(sys.argv[1]).write_text("held")
    time.sleep(float(sys.argv[2]))
"""


def test_the_watcher_waits_for_a_switch_in_another_process_and_drops_nothing(
    sb: Sandbox, events: Events, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = WriteSpy(monkeypatch)
    held, log = tmp_path / "held", tmp_path / "holder.out"
    with running_watcher(events), open(log, "w") as out:
        holder = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(HOLDER), str(held), "2.5"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            assert wait_until(lambda: held.exists() or holder.poll() is not None, timeout=30)
            assert held.exists(), log.read_text()
            t0 = time.monotonic()
            save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
            time.sleep(1.5)
            # nothing is written while another kvswitch holds the lock, and it is no error
            assert holder.poll() is None, "the holder ended early: the test proves nothing"
            assert not spy.by_watcher(), events.describe()
            assert not events.of("error", "invalid"), events.describe()
            assert holder.wait(timeout=30) == 0
            released = time.monotonic()
            assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()
            assert events.wait_quiet()
        finally:
            if holder.poll() is None:
                holder.kill()
            holder.wait(timeout=30)
    assert released - t0 > 1.5
    assert all(w.at >= released - 0.2 for w in spy.by_watcher())
    assert not events.of("error", "invalid"), events.describe()
    assert len(events.of("adopted")) == 1, events.describe()


def test_every_write_of_the_watcher_holds_the_switch_lock(
    sb: Sandbox, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads, plan and commit under one hold: each write of a fix, an adoption and its
    propagation, a revert and a config change is made while the watcher thread holds it."""
    import kvswitch.io
    import kvswitch.locks

    unlocked: list[str] = []
    real = kvswitch.io.PreparedWrite.commit

    def commit(prepared: Any) -> None:
        if threading.current_thread() is not threading.main_thread() and not getattr(kvswitch.locks._held, "depth", 0):
            unlocked.append(str(prepared.target))
        real(prepared)

    monkeypatch.setattr(kvswitch.io.PreparedWrite, "commit", commit)
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))  # adopt + propagate
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet()
        save_replace(sb.toml, sb.toml.read_text().replace("chunk_size = 512", "chunk_size = 500"))  # fix
        assert wait_until(lambda: events.of("fixed")), events.describe()
        assert events.wait_quiet()
        save_replace(sb.config, sb.config.read_text().replace('mode = "split"', 'mode = "merged"', 1))  # config
        assert wait_until(lambda: _in_sync(sb, "merged")), events.describe()
        assert events.wait_quiet()
    with running_watcher(events, policy="revert"):
        save_replace(sb.toml, _split_toml(sb.toml.read_text()))
        assert wait_until(lambda: events.of("reverted")), events.describe()
        assert events.wait_quiet()
    assert {e.kind for e in events.all} >= {"adopted", "propagated", "fixed", "reverted"}, events.describe()
    assert not unlocked, unlocked


# -- a save that beats the watcher's commit -------------------------------------------------------


def _race_config(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, times: int, where: str = "swap") -> list[int]:
    """Save kvswitch.toml by hand (a comment added) while the watcher commits it, the first
    ``times`` times: ``swap``, between its last look at the file and its swap; ``journal``,
    once the commit's journal is written (before that last look)."""
    import kvswitch.io
    import kvswitch.transaction

    raced = [0]
    config = os.path.realpath(sb.config)

    def save() -> None:
        raced[0] += 1
        save_replace(sb.config, sb.config.read_text() + f"# added by hand {raced[0]}\n")

    def ours() -> bool:
        return raced[0] < times and threading.current_thread() is not threading.main_thread()

    if where == "swap":
        real_commit = kvswitch.io.PreparedWrite.commit

        def commit(prepared: Any) -> None:
            if ours() and str(prepared.target) == config:
                save()
            real_commit(prepared)

        monkeypatch.setattr(kvswitch.io.PreparedWrite, "commit", commit)
    else:
        real_journal = kvswitch.transaction._write_journal

        def write_journal(prepared: Any, *rest: Any) -> None:
            real_journal(prepared, *rest)
            if ours() and any(str(p.target) == config for p in prepared):
                save()

        monkeypatch.setattr(kvswitch.transaction, "_write_journal", write_journal)
    return raced


@pytest.mark.parametrize("where", ["swap", "journal"])
def test_a_save_that_lands_while_the_watcher_commits_is_looked_at_again(
    where: str, sb: Sandbox, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a save landing after the journal was seen by the commit's last look, and the
    watcher reported "changed on disk …; no file was changed; no file was changed" as an error
    at once (the docs promise a new look, and an error only after many conflicts in a row); one
    landing between that last look and the rename was overwritten, lost."""
    raced = _race_config(sb, monkeypatch, times=1, where=where)
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()
        assert events.wait_quiet(), events.describe()
    assert raced[0] == 1
    assert "# added by hand 1" in sb.config.read_text()  # the hand save is kept
    assert not events.of("invalid", "error"), events.describe()
    assert len(events.of("adopted")) == 1, events.describe()


def test_conflicts_in_a_row_become_one_error_after_the_retries(
    sb: Sandbox, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvswitch.watch

    monkeypatch.setattr(kvswitch.watch, "MAX_RETRIES", 2)
    raced = _race_config(sb, monkeypatch, times=3)  # the first try and both looks again are beaten
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        error = events.wait_kind("error", timeout=15.0)
        assert error is not None, f"{events.describe()}\n(raced {raced[0]} times)"
        # the next look (the last hand save pokes it) goes through
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=6.0), events.describe()
        assert events.wait_quiet(), events.describe()
    assert raced[0] == 3
    (error,) = events.of("error")
    assert error.path == sb.cline and "changed on disk" in error.message
    assert error.message.count("no file was") == 1, error.message
    assert events.of("adopted")[-1].path == sb.cline
    hand = sb.config.read_text()
    assert all(f"# added by hand {i}\n" in hand for i in (1, 2, 3)), hand  # no save lost


# -- its own files -------------------------------------------------------------------------------


@pytest.mark.parametrize("home", ["KVSWITCH_HOME", "XDG state"])
def test_the_folders_the_watcher_creates_are_private(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: its state and log folders were 0700 but every missing folder above them (the
    kvswitch home itself) was made 0755."""
    from tests.helpers.watching import kvswitch

    fresh = tmp_path / "fresh"
    if home == "KVSWITCH_HOME":
        monkeypatch.setenv("KVSWITCH_HOME", str(fresh / "deep" / "kvswitch-home"))
    else:
        monkeypatch.delenv("KVSWITCH_HOME")
        monkeypatch.setenv("XDG_STATE_HOME", str(fresh / "state"))
    code, out = kvswitch("watch", "--once")  # no config yet: reported, exit 1; its folders made
    assert code == 1, out
    made = [fresh, *(p for p in fresh.rglob("*") if p.is_dir())]
    assert len(made) >= 3, made
    assert {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in made if p.stat().st_mode & 0o077} == {}
