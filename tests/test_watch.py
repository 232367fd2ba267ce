"""The watcher (D-8, D-12): every way an editor saves is seen, half-written files are never
acted on, kvswitch's own writes are not echoed, adopt/revert/report, auto-fix, bad input
never propagates, nudges end to end, one watcher per KVSWITCH_HOME, ``watch --once`` and the
log.

Everything is real: inotify through watchdog, ``sed -i``, ``vim``, ``os.replace`` saves, real
processes for the signal and command nudges. Waits poll with timeouts (2 shared cores); the
tight latency figures belong to ``bench/watch_latency.py``."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kvswitch.watch import Watcher, WatcherBusyError
from tests.conftest import require_tool
from tests.helpers.observe import cline_data, cline_mode, toml_data, toml_mode
from tests.helpers.watching import (
    CHANGING,
    DEBOUNCE,
    Events,
    Recorder,
    Sandbox,
    WriteSpy,
    cline_as,
    config_data,
    init_sandbox,
    kvswitch,
    running_watcher,
    save_in_place,
    save_replace,
    sed_i,
    wait_until,
)

PROFILE = "taotoken"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> WriteSpy:
    return WriteSpy(monkeypatch)


@pytest.fixture
def recorders(tmp_path: Path) -> Iterator[list[Recorder]]:
    made: list[Recorder] = []
    yield made
    for r in made:
        r.close()


def _profile() -> dict:
    return config_data()["profiles"][PROFILE]


def _in_sync(sb: Sandbox, mode: str) -> bool:
    return cline_mode(sb.cline) == mode and toml_mode(sb.toml) == mode and config_data()["mode"] == mode


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- every way of saving is seen ------------------------------------------------------------


def _vim(path: Path) -> None:
    vim = require_tool("vim")
    # backupskip includes /tmp/* by default, and tmp_path is under /tmp: clear it so vim does
    # its real rename dance (file → file~, write a new file, delete file~)
    subprocess.run(
        [
            vim,
            "-E",
            "-s",
            "-N",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-c",
            "set backupskip=",
            "-c",
            "%s/merged/split/",
            "-c",
            "wq",
            str(path),
        ],
        check=True,
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def _split_toml(text: str) -> str:
    new, n = re.subn(r'(?m)^mode = "merged"', 'mode = "split"', text)
    assert n == 1
    return new


SAVERS = {
    "in-place": lambda p: save_in_place(p, _split_toml(p.read_text())),
    "os.replace": lambda p: save_replace(p, _split_toml(p.read_text())),
    "sed -i": lambda p: sed_i(p, 's/^mode = "merged"/mode = "split"/'),
    "vim": _vim,
}


@pytest.mark.parametrize("how", list(SAVERS))
def test_a_save_of_the_ccswitch_file_is_seen_and_adopted(how: str, sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    inode = sb.toml.stat().st_ino
    with running_watcher(events):
        SAVERS[how](sb.toml)
        assert toml_mode(sb.toml) == "split"
        if how in ("os.replace", "sed -i", "vim"):
            assert sb.toml.stat().st_ino != inode, "the save was meant to replace the file"
        else:
            assert sb.toml.stat().st_ino == inode
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet()
    adopted = events.of("adopted")
    assert len(adopted) == 1 and adopted[0].path == sb.toml and "mode = 'split'" in adopted[0].message
    assert {w.path for w in spy.by_watcher()} == {sb.cline, sb.config}
    assert not events.of("invalid", "error")


def test_a_rename_replace_save_of_the_cline_file_is_seen(sb: Sandbox, events: Events) -> None:
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        save_in_place(sb.cline, cline_as(sb.cline.read_text(), "merged"))
        assert wait_until(lambda: _in_sync(sb, "merged")), events.describe()


def test_delete_and_recreate_is_seen(sb: Sandbox, events: Events) -> None:
    with running_watcher(events):
        text = sb.toml.read_text()
        sb.toml.unlink()
        gone = events.wait(lambda e: e.kind == "error" and "gone" in e.message)
        assert gone is not None, events.describe()
        mark = len(events)
        sb.toml.write_text(_split_toml(text))  # git checkout / a tool that recreates the file
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet()
    assert [e.kind for e in events.since(mark) if e.kind in CHANGING] == ["adopted", "propagated"]


def test_a_symlinked_client_edited_at_its_target_is_seen(sb: Sandbox, events: Events) -> None:
    dotfiles = sb.home / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "cc-switch.toml"
    os.replace(sb.toml, target)
    sb.toml.symlink_to(target)  # registered path (~/.config/cc-switch/config.toml) is now a link
    with running_watcher(events):
        # edited where it really lives: the link's directory sees nothing of this
        sed_i(target, 's/^mode = "merged"/mode = "split"/')
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet(quiet=5 * DEBOUNCE)  # (see test_a_save_right_after_...)
        # and the watcher's own propagation into the link goes to the target, keeping the link
        mark = len(events)
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "merged"))
        assert wait_until(lambda: _in_sync(sb, "merged")), events.describe()
        assert events.wait_quiet()
    assert sb.toml.is_symlink() and sb.toml.resolve() == target
    assert toml_mode(target) == "merged"
    propagated = events.of("propagated", since=mark)
    assert len(propagated) == 1 and propagated[0].written == (sb.toml,)


def test_a_save_right_after_the_watchers_write_is_not_lost(sb: Sandbox, events: Events) -> None:
    original = sb.cline.read_text()
    with running_watcher(events, debounce=1.0):  # a wide window, so the race is not left to chance
        sed_i(sb.toml, 's/^mode = "merged"/mode = "split"/')
        assert wait_until(lambda: cline_mode(sb.cline) == "split"), events.describe()
        # the user's editor saves the Cline file as they had it (e.g. "save all")
        save_replace(sb.cline, original)
        assert wait_until(lambda: _in_sync(sb, "merged"), timeout=3.0), (
            f"cline {cline_mode(sb.cline)}, toml {toml_mode(sb.toml)}, kvswitch {config_data()['mode']}:\n"
            + events.describe()
        )


# -- half-written files -------------------------------------------------------------------------


def _slow_write(path: Path, data: bytes, cuts: list[int], hold: float, check: Callable[[float], None]) -> None:
    """Write ``data`` in place, truncating first, pausing ``hold`` s at every cut (the file
    stays open, as a slow writer keeps it), calling ``check()`` during each pause."""
    with open(path, "wb") as fh:
        start = 0
        for cut in [*cuts, len(data)]:
            fh.write(data[start:cut])
            fh.flush()
            start = cut
            if cut < len(data):
                check(hold)


def test_a_half_written_cline_file_is_never_acted_on(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    text = cline_as(sb.cline.read_text(), "split")
    body = text.rstrip().removesuffix("}").rstrip()
    filler = ",\n".join(f'    "editor.custom{i}": "{"x" * 60}"' for i in range(3000))
    data = f"{body},\n{filler}\n}}\n".encode()
    assert len(data) > 200_000
    cuts = [len(data) * k // 8 for k in range(1, 8)]
    others = {p: _digest(p) for p in (sb.toml, sb.config)}

    def check(hold: float) -> None:
        time.sleep(hold)  # longer than the debounce: the watcher gets to read the partial file
        assert not spy.by_watcher(), f"wrote while the file was incomplete:\n{events.describe()}"
        assert {p: _digest(p) for p in others} == others

    with running_watcher(events):
        _slow_write(sb.cline, data, cuts, hold=3 * DEBOUNCE, check=check)
        complete = len(events)
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet()
    before = events.all[:complete]
    # an "invalid" report before completion is acceptable, a write is not
    assert all(e.kind in ("started", "invalid") for e in before), events.describe()
    assert all(not e.written for e in before)
    assert sb.cline.read_bytes() == data, "the watcher must never write the file being edited"
    assert [e.kind for e in events.since(complete) if e.kind in CHANGING] == ["adopted", "propagated"]


def test_a_half_written_toml_file_is_never_acted_on(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    text = sb.toml.read_text().replace("chunk_size = 512", "chunk_size = 1024")
    data = text.encode()
    cut = data.index(b"chunk_size = 1024") + len(b"chunk_size = 1")  # the prefix parses
    others = {p: _digest(p) for p in (sb.cline, sb.config)}

    def check(hold: float) -> None:
        # give the watcher 15 debounce periods with the half-written file (or until it acts)
        wait_until(lambda: spy.by_watcher(), timeout=hold)
        assert not spy.by_watcher(), f"wrote while the file was incomplete:\n{events.describe()}"
        assert {p: _digest(p) for p in others} == others

    with running_watcher(events):
        _slow_write(sb.toml, data, [cut], hold=15 * DEBOUNCE, check=check)
        assert wait_until(lambda: _profile()["merged"]["chunk_size"] == 1024), events.describe()
        assert wait_until(lambda: cline_data(sb.cline)["cline.cacheStrategy"]["chunkSize"] == 1024)
        assert events.wait_quiet()
    assert sb.toml.read_bytes() == data


def test_an_emptied_client_file_is_looked_at_again_before_anything_is_written(
    sb: Sandbox, events: Events, spy: WriteSpy
) -> None:
    """An in-place save truncates first. If the debounce fires before that event arrives, the
    watcher reads an empty file, which parses ({}); it must look again, not render into it."""
    text = sb.cline.read_text()
    with running_watcher(events) as watcher:
        watcher._stop_observer()  # the truncation's event has not been delivered yet
        real = os.path.realpath(sb.cline)
        with open(sb.cline, "w", encoding="utf-8"):
            pass  # truncated, not yet written
        watcher._handle(real)  # the debounce fired now
        assert not spy.by_watcher(), events.describe()
        save_in_place(sb.cline, text)  # the writer finishes
        watcher._handle(real)
        assert events.wait_quiet(), events.describe()
    assert not spy.by_watcher(), events.describe()
    assert sb.cline.read_text() == text
    assert not events.of(*CHANGING, "invalid", "error"), events.describe()


# -- echo, bursts -------------------------------------------------------------------------------


def test_kvswitch_own_writes_trigger_nothing(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    with running_watcher(events):
        for mode in ("split", "merged"):
            mark = len(events)
            code, out = kvswitch("switch", mode)
            assert code == 0, out
            assert _in_sync(sb, mode)
            assert events.wait_quiet(quiet=5 * DEBOUNCE)
            later = events.since(mark)
            # at most a no-op: "config changed: 0 client(s) brought to ..."
            assert all(not e.written for e in later), events.describe(mark)
            assert not [e for e in later if e.kind in ("adopted", "fixed", "reverted", "invalid", "error")]
            assert all("0 client(s)" in e.message for e in later if e.kind == "propagated")
        assert not spy.by_watcher(), events.describe()
        assert [w.main_thread for w in spy.writes] == [True] * len(spy.writes)


def test_the_watchers_own_writes_start_no_second_cycle(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: _in_sync(sb, "split")), events.describe()
        assert events.wait_quiet(quiet=5 * DEBOUNCE)
    assert [e.kind for e in events.all] == ["started", "adopted", "nudged", "propagated", "stopped"]
    assert sorted(str(w.path) for w in spy.by_watcher()) == sorted([str(sb.toml), str(sb.config)])


@pytest.mark.slow
def test_a_burst_of_saves_ends_consistent_quiet_and_cheap(
    sb: Sandbox, events: Events, spy: WriteSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    firings = [0]
    real_handle = Watcher._handle

    def counting(self: Watcher, real: str, force: bool = False) -> None:
        firings[0] += 1
        real_handle(self, real, force)

    monkeypatch.setattr(Watcher, "_handle", counting)
    texts = {m: cline_as(sb.cline.read_text(), m) for m in ("merged", "split")}
    rate, seconds = 100, 5.0
    saves = int(rate * seconds)
    with running_watcher(events):
        cpu0, wall0 = _cpu(), time.monotonic()
        last = ""
        for i in range(saves):
            last = "split" if i % 2 else "merged"  # the last (odd) save says split
            (save_replace if i % 3 else save_in_place)(sb.cline, texts[last])
            delay = wall0 + (i + 1) / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        burst_end = time.monotonic()
        assert last == "split" and cline_mode(sb.cline) == "split"
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=max(10 * DEBOUNCE, 3.0)), events.describe()
        settled = time.monotonic() - burst_end
        cpu = (_cpu() - cpu0) / (time.monotonic() - wall0)
        # then quiet: no event for 2 s
        assert events.wait_quiet(quiet=2.0, timeout=10.0), events.describe()
        writes = len(spy.by_watcher())
        assert events.wait_quiet(quiet=0.5)
        assert len(spy.by_watcher()) == writes
    assert sb.cline.read_text() == texts["split"], "the watcher must not rewrite the file being edited"
    assert _profile()["merged"]["chunk_size"] == 512
    # no write loop: every watcher write comes from a debounce firing (toml + kvswitch.toml at most)
    assert writes <= 2 * firings[0], (writes, firings[0])
    assert firings[0] <= saves // 5, f"{firings[0]} debounce firings for {saves} saves"
    assert not events.of("invalid", "error"), events.describe()
    # the writer itself is in this process too; the bound is generous (2 shared cores)
    assert cpu < 0.6, f"{cpu:.0%} of a core during the burst (settled {settled:.2f} s after it)"


def test_a_save_that_lands_while_the_watcher_writes_is_neither_lost_nor_reverted(
    sb: Sandbox, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the burst test hit once on a busy machine: while the watcher commits what it
    decided, a save lands (here a comment added to kvswitch.toml by hand), so its commit fails,
    all or none. The watcher must look again, not report an error, not take the config's old
    mode back into the client the user just flipped, and keep the hand edit."""
    import kvswitch.clients

    real_commit = kvswitch.clients.commit_plan
    raced = [0]

    def racing_commit(plan: Any, extra: Any = None) -> Any:
        if not raced[0]:
            raced[0] += 1
            save_replace(sb.config, sb.config.read_text() + "# added by hand meanwhile\n")
        return real_commit(plan, extra)

    monkeypatch.setattr(kvswitch.clients, "commit_plan", racing_commit)
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=5.0), events.describe()
        assert events.wait_quiet(), events.describe()
    assert raced[0] == 1
    assert cline_mode(sb.cline) == "split", events.describe()
    assert "# added by hand meanwhile" in sb.config.read_text()  # the hand edit is kept
    assert not events.of("invalid", "error"), events.describe()
    assert len(events.of("adopted")) == 1, events.describe()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- adopt, revert, report ---------------------------------------------------------------------


def test_a_mode_flipped_in_the_cline_file_is_adopted_and_propagated(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    with running_watcher(events):
        t0 = time.monotonic()
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: toml_mode(sb.toml) == "split", timeout=3.0), events.describe()
        took = time.monotonic() - t0
        assert wait_until(lambda: config_data()["mode"] == "split")
        assert events.wait_quiet()
    config = config_data()
    assert config["active_profile"] == PROFILE
    assert took < 3.0
    (adopted,) = events.of("adopted")
    assert adopted.path == sb.cline and f"into profile {PROFILE}" in adopted.message
    assert "where it is ignored" not in adopted.message  # the split form leaves chunkSize out: nothing changed it
    assert adopted.written == (sb.config,)
    (propagated,) = events.of("propagated")
    assert propagated.written == (sb.toml,) and "mode split" in propagated.message
    # the default nudge is none: the user is told to restart the client (S-35)
    (nudged,) = events.of("nudged")
    assert nudged.path == sb.toml and "restart CC Switch (config.toml) to apply" in nudged.message
    assert nudged.nudges[0].restart_needed
    # the split form the other client got is complete (S-17)
    split = toml_data(sb.toml)["cache"]["split"]
    assert split["prefill_base_url"] == split["decode_base_url"] == "https://taotoken.net/api"


def test_only_the_mode_flipped_by_hand_in_the_cline_file_is_adopted(sb: Sandbox, events: Events) -> None:
    with running_watcher(events):
        sed_i(sb.cline, 's/"mode": "merged"/"mode": "split"/')  # the other form's keys stay
        assert wait_until(lambda: _in_sync(sb, "split"), timeout=3.0), events.describe()
        assert events.wait_quiet()
    assert not events.of("invalid", "error"), events.describe()
    assert toml_mode(sb.toml) == "split"
    # the edited file keeps its mode; the endpoints split mode needs were filled in (S-12)
    block = cline_data(sb.cline)["cline.cacheStrategy"]
    assert block["mode"] == "split" and block.get("prefillEndpoint") == "https://taotoken.net/api"


def test_a_chunk_size_changed_in_merged_mode_is_adopted(sb: Sandbox, events: Events) -> None:
    with running_watcher(events):
        sed_i(sb.cline, 's/"chunkSize": 512/"chunkSize": 768/')
        assert wait_until(lambda: toml_data(sb.toml)["cache"]["chunk_size"] == 768), events.describe()
        assert wait_until(lambda: _profile()["merged"]["chunk_size"] == 768)
        assert events.wait_quiet()
    assert config_data()["mode"] == "merged" and toml_mode(sb.toml) == "merged"
    (adopted,) = events.of("adopted")
    assert "chunk_size = 768" in adopted.message and "where it is ignored" not in adopted.message


def test_a_chunk_size_changed_in_split_mode_is_explained(sb: Sandbox, events: Events) -> None:
    code, out = kvswitch("switch", "split")
    assert code == 0, out
    with running_watcher(events):
        sed_i(sb.toml, "s/^chunk_size = 512/chunk_size = 1024/")
        adopted = events.wait_kind("adopted")
        assert adopted is not None, events.describe()
        assert wait_until(lambda: _profile()["merged"]["chunk_size"] == 1024)
        assert events.wait_quiet()
    assert "where it is ignored" in adopted.message and "split mode" in adopted.message
    assert cline_mode(sb.cline) == "split" and "chunkSize" not in cline_data(sb.cline)["cline.cacheStrategy"]


def test_base_url_and_model_changed_by_hand_are_drift_never_adopted(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    before = {p: _digest(p) for p in (sb.toml, sb.config)}
    with running_watcher(events):
        sed_i(sb.cline, "s#https://taotoken.net/api#https://elsewhere.example/v1#; s/gpt-4o-mini/gpt-5-huge/")
        drift = events.wait_kind("drift")
        assert drift is not None, events.describe()
        assert events.wait_quiet()
    assert "provider.base_url" in drift.message and "provider.model" in drift.message
    assert "not adopted" in drift.message
    assert {p: _digest(p) for p in before} == before
    assert not spy.by_watcher()
    assert not events.of(*CHANGING)
    assert _profile()["base_url"] == "https://taotoken.net/api" and _profile()["model"] == "gpt-4o-mini"


def test_revert_policy_puts_the_file_back(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    original = sb.cline.read_bytes()
    before = {p: _digest(p) for p in (sb.toml, sb.config)}
    with running_watcher(events, policy="revert"):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: cline_mode(sb.cline) == "merged"), events.describe()
        assert events.wait_quiet()
    assert sb.cline.read_bytes() == original
    assert {p: _digest(p) for p in before} == before
    (reverted,) = events.of("reverted")
    assert reverted.path == sb.cline and reverted.written == (sb.cline,)
    assert [w.path for w in spy.by_watcher()] == [sb.cline]
    assert not events.of("adopted", "propagated")


def test_report_policy_only_reports(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    with running_watcher(events, policy="report"):
        sed_i(sb.toml, 's/^mode = "merged"/mode = "split"/')
        before = {str(p): _digest(p) for p in sb.files}
        drift = events.wait_kind("drift")
        assert drift is not None, events.describe()
        assert events.wait_quiet()
    assert "cache.mode" in drift.message and drift.path == sb.toml
    assert {str(p): _digest(p) for p in sb.files} == before
    assert not spy.by_watcher()
    assert not events.of(*CHANGING)


# -- auto-fix -------------------------------------------------------------------------------------


def test_a_fixable_chunk_size_is_fixed_once(sb: Sandbox, events: Events, spy: WriteSpy) -> None:
    before = {p: _digest(p) for p in (sb.cline, sb.config)}
    with running_watcher(events):
        sed_i(sb.toml, "s/^chunk_size = 512/chunk_size = 500/")
        assert wait_until(lambda: toml_data(sb.toml)["cache"]["chunk_size"] == 512), events.describe()
        assert events.wait_quiet(quiet=5 * DEBOUNCE)
    (fixed,) = events.of("fixed")
    assert fixed.path == sb.toml and "500" in fixed.message and "512" in fixed.message
    assert fixed.written == (sb.toml,)
    assert [e.kind for e in events.all] == ["started", "fixed", "nudged", "stopped"]
    assert [w.path for w in spy.by_watcher()] == [sb.toml]  # the fix's own write started nothing
    assert {p: _digest(p) for p in before} == before


# -- bad input never propagates ---------------------------------------------------------------------

BROKEN = {
    "cline-syntax": ("cline", 's/"chunkSize": 512,/"chunkSize": 512/'),
    "cline-mode-both": ("cline", 's/"mode": "merged"/"mode": "both"/'),
    "toml-syntax": ("toml", "s/^chunk_size = 512/chunk_size = = 512/"),
    "toml-mode-both": ("toml", 's/^mode = "merged"/mode = "both"/'),
    "kvswitch-syntax": ("config", 's/^mode = "merged"/mode = "merged/'),
    "kvswitch-mode-both": ("config", 's/^mode = "merged"/mode = "both"/'),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_file_is_reported_and_nothing_is_written(
    case: str, sb: Sandbox, events: Events, spy: WriteSpy
) -> None:
    which, expression = BROKEN[case]
    path = {"cline": sb.cline, "toml": sb.toml, "config": sb.config}[which]
    with running_watcher(events):
        sed_i(path, expression)
        before = {str(p): _digest(p) for p in sb.files}
        invalid = events.wait_kind("invalid")
        assert invalid is not None, events.describe()
        assert events.wait_quiet()
    assert {str(p): _digest(p) for p in sb.files} == before
    assert not spy.by_watcher()
    assert not events.of(*CHANGING, "nudged")
    assert invalid.path == path
    assert re.search(re.escape(path.name) + r":\d+:\d+", invalid.message), invalid.message
    assert "nothing written" in invalid.message


# -- nudges end to end ---------------------------------------------------------------------------


def _register(client: Path, **nudge: object) -> None:
    """Give the registered client at ``client`` a nudge (by editing kvswitch.toml)."""
    from kvswitch.config import client_path, edit_config, read_config
    from kvswitch.edits import Set

    config = read_config()
    (index,) = [i for i, c in enumerate(config.model.clients) if client_path(c) == client]
    edit_config([Set(("clients", index, "nudge"), nudge)], config)
    entry = read_config().model.clients[index]
    assert entry.nudge.kind == nudge["kind"]


def test_a_signal_nudge_reaches_the_client_after_a_propagation(
    sb: Sandbox, events: Events, tmp_path: Path, recorders: list[Recorder]
) -> None:
    pidfile = tmp_path / "ccswitch.pid"
    _register(sb.toml, kind="signal", pidfile=str(pidfile))
    recorder = Recorder(tmp_path, pidfile)
    recorders.append(recorder)
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        assert wait_until(lambda: recorder.hups() == 1), events.describe()
        assert events.wait_quiet()
    (nudged,) = events.of("nudged")
    assert nudged.path == sb.toml and nudged.nudges[0].ok and f"pid {recorder.pid}" in nudged.message
    assert recorder.alive() and recorder.hups() == 1


def test_a_stale_pidfile_is_reported_and_not_obeyed_by_the_watcher(
    sb: Sandbox, events: Events, tmp_path: Path, recorders: list[Recorder]
) -> None:
    pidfile = tmp_path / "ccswitch.pid"
    _register(sb.toml, kind="signal", pidfile=str(pidfile))
    recorder = Recorder(tmp_path, None)  # started after the pidfile was "written"
    recorders.append(recorder)
    pidfile.write_text(f"{recorder.pid}\n")
    past = time.time() - 120
    os.utime(pidfile, (past, past))
    with running_watcher(events):
        save_replace(sb.cline, cline_as(sb.cline.read_text(), "split"))
        nudged = events.wait_kind("nudged")
        assert nudged is not None, events.describe()
    assert not nudged.nudges[0].ok and "stale pidfile" in nudged.message
    assert nudged.nudges[0].restart_needed
    assert recorder.alive() and recorder.hups() == 0


def test_a_command_nudge_runs_after_a_propagation(sb: Sandbox, events: Events, tmp_path: Path) -> None:
    marker = tmp_path / "reloaded"
    script = tmp_path / "reload.py"
    script.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text('reloaded')\n")
    _register(sb.cline, kind="command", argv=[sys.executable, str(script), str(marker)])
    with running_watcher(events):
        sed_i(sb.toml, 's/^mode = "merged"/mode = "split"/')
        assert wait_until(marker.exists), events.describe()
        assert events.wait_quiet()
    (nudged,) = events.of("nudged")
    assert nudged.path == sb.cline and nudged.nudges[0].ok and "exited 0" in nudged.message
    assert cline_mode(sb.cline) == "split"


def test_a_touch_nudge_after_a_fix(sb: Sandbox, events: Events, tmp_path: Path) -> None:
    trigger = tmp_path / "reload-trigger"  # a file the client watches
    trigger.write_text("")
    past = time.time() - 300
    os.utime(trigger, (past, past))
    _register(sb.toml, kind="touch", path=str(trigger))
    with running_watcher(events):
        sed_i(sb.toml, "s/^chunk_size = 512/chunk_size = 500/")
        nudged = events.wait_kind("nudged")
        assert nudged is not None, events.describe()
    assert nudged.nudges[0].ok and nudged.nudges[0].kind == "touch" and str(trigger) in nudged.message
    assert trigger.stat().st_mtime > past + 200


def test_client_add_registers_a_signal_nudge(sb: Sandbox, tmp_path: Path) -> None:
    # (before 792855c `client add` without --command exited 2: its --command option overwrote the
    # top-level subcommand dest)
    pidfile = tmp_path / "ccswitch.pid"
    code, out = kvswitch("client", "remove", str(sb.toml))
    assert code == 0, out
    code, out = kvswitch("client", "add", str(sb.toml), "--nudge", "signal", "--pidfile", str(pidfile))
    assert code == 0, out
    (entry,) = [c for c in config_data()["clients"] if c["path"] == str(sb.toml)]
    assert entry["nudge"]["kind"] == "signal" and entry["nudge"]["pidfile"] == str(pidfile)


# -- one watcher per KVSWITCH_HOME ----------------------------------------------------------------


def test_a_second_watcher_refuses_naming_the_holder(sb: Sandbox) -> None:
    first = Watcher(debounce=DEBOUNCE)
    first.start()
    try:
        for _ in range(2):  # a refused start does not release the holder's lock
            with pytest.raises(WatcherBusyError) as info:
                Watcher().start()
            assert f"pid {os.getpid()}" in str(info.value)
    finally:
        first.stop()
    second = Watcher()
    second.start()
    second.stop()


def test_kvswitch_watch_in_another_process_holds_the_lock(sb: Sandbox, tmp_path: Path) -> None:
    out = tmp_path / "watch.out"
    with open(out, "w") as fh:
        child = subprocess.Popen(
            [sys.executable, "-m", "kvswitch", "watch"], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        assert wait_until(lambda: "started" in out.read_text(), timeout=30), out.read_text()
        with pytest.raises(WatcherBusyError) as info:
            Watcher().start()
        assert f"pid {child.pid}" in str(info.value)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "stopped" in out.read_text()
    with Watcher():
        # and the other way round: `kvswitch watch` refuses while this process holds the lock
        done = subprocess.run(
            [sys.executable, "-m", "kvswitch", "watch", "--once"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1, done
    assert f"pid {os.getpid()}" in done.stderr


# -- kvswitch watch --once ---------------------------------------------------------------------------


def test_watch_once_in_sync_exits_0(sb: Sandbox, spy: WriteSpy) -> None:
    before = sb.hashes()
    assert kvswitch("watch", "--once")[0] == 0
    assert sb.hashes() == before and not spy.writes


def test_watch_once_a_file_that_does_not_parse_exits_1(sb: Sandbox, spy: WriteSpy) -> None:
    sed_i(sb.cline, 's/"chunkSize": 512,/"chunkSize": 512/')
    before = sb.hashes()
    code, out = kvswitch("watch", "--once")
    assert code == 1, out
    assert "invalid" in out and re.search(r"settings\.json:\d+:\d+", out)
    assert sb.hashes() == before and not spy.writes


def test_watch_once_an_invalid_value_exits_1_and_writes_nothing(sb: Sandbox, spy: WriteSpy) -> None:
    sed_i(sb.cline, 's/"mode": "merged"/"mode": "both"/')
    before = sb.hashes()
    code, out = kvswitch("watch", "--once")
    assert sb.hashes() == before and not spy.writes, out
    assert code == 1, out
    assert "invalid" in out and re.search(r"settings\.json:\d+:\d+", out)


def test_watch_once_report_drifted_exits_1(sb: Sandbox, spy: WriteSpy) -> None:
    sed_i(sb.toml, 's/^mode = "merged"/mode = "split"/')
    before = sb.hashes()
    code, out = kvswitch("watch", "--once", "--policy", "report")
    assert code == 1, out
    assert "drift" in out and "cache.mode" in out
    assert sb.hashes() == before and not spy.writes


def test_watch_once_report_in_sync_exits_0(sb: Sandbox) -> None:
    code, out = kvswitch("watch", "--once", "--policy", "report")
    assert code == 0, out


def test_watch_once_adopts_and_exits_0(sb: Sandbox) -> None:
    sed_i(sb.toml, 's/^mode = "merged"/mode = "split"/')
    code, out = kvswitch("watch", "--once")
    assert code == 0, out
    assert "adopted" in out and _in_sync(sb, "split")


# -- the log -----------------------------------------------------------------------------------------


def test_the_log_records_events_and_never_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: Events
) -> None:
    key = "sk-kvstest-7f3a9c2e5b1d46808a1c"
    monkeypatch.setenv("KVS_TEST_KEY", key)
    sb = init_sandbox("--key-env", "KVS_TEST_KEY")
    code, out = kvswitch("profile", "use", PROFILE)  # writes the key into both clients (not in git)
    assert code == 0, out
    assert key in sb.cline.read_text() and key in sb.toml.read_text()
    with running_watcher(events):
        steps = [
            (sb.cline, f's/"{key}"/["{key}"]/', "invalid"),  # a key of the wrong type
            (sb.cline, f's/\\["{key}"\\]/"{key}/', "invalid"),  # an unterminated key
            (sb.cline, f's/"{key}$/"{key}",/', None),  # mended
            (sb.toml, f's/^api_key = .*/api_key = "{key}/', "invalid"),
            (sb.toml, f's/^api_key = .*/api_key = "{key}"/', None),
            (sb.cline, "s/gpt-4o-mini/gpt-other/", "drift"),
            (sb.toml, 's/^mode = "merged"/mode = "split"/', "propagated"),
        ]
        for path, expression, kind in steps:
            mark = len(events)
            sed_i(path, expression)
            if kind:
                assert events.wait_kind(kind, since=mark) is not None, events.describe()
            assert events.wait_quiet(quiet=3 * DEBOUNCE)
    from kvswitch.paths import dirs

    log = (dirs().logs / "watch.log").read_text()
    for kind in ("started", "invalid", "drift", "adopted", "propagated", "nudged", "stopped"):
        assert f" {kind}: " in log, kind
    assert str(sb.toml) in log
    assert key not in log and key[3:15] not in log and key[-12:] not in log
    assert len(log.splitlines()) >= len(events)
    assert all(key not in str(e) for e in events.all)


def test_stopping_drops_only_watchdogs_inactive_emitter_record(sb: Sandbox, events: Events) -> None:
    """watchdog logs an ERROR when an inotify event lands while its emitter stops; harmless for a
    watcher that is stopping, so it is filtered out then, and only then, and nothing else is."""
    import logging

    from kvswitch import watch

    log = logging.getLogger("watchdog.observers.inotify")

    def record(msg: str) -> logging.LogRecord:
        return log.makeRecord(log.name, logging.ERROR, __file__, 1, msg, (), None)

    assert not watch._drop_inactive_emitter(record("InotifyEmitter.queue_events() called when the thread is inactive"))
    assert watch._drop_inactive_emitter(record("inotify watch limit reached"))
    before = list(log.filters)
    with running_watcher(events):
        pass
    assert log.filters == before  # the filter was there only while the observer stopped
    assert events.of("stopped")
