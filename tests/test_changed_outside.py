"""A client file changed outside kvswitch (issue 12, point 3): kvswitch keeps a digest of
what it wrote into each file (``state.record_writes``); ``status`` (text, json,
``ClientStatus.changed_outside``) says when the file differs from it. Every way kvswitch
writes a client file counts as its own write (a switch of every client, of one, of files
named on the command line, a profile render, a restore, a lint fix, the watcher's fix); a
hand edit, a save landing just after kvswitch's write, a removed file do not. An older
``writes.json`` (bare timestamps) or a damaged one is still read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import kvswitch.transaction as kt
from kvswitch import state
from kvswitch.clients import status
from tests.clientenv import cli, cline_file, init
from tests.helpers.watching import Events, running_watcher, save_in_place, save_replace, wait_until
from tests.kinds.kindenv import add, place, setup

OUTSIDE = "changed outside kvswitch since its last write"


def _ok(*argv: str) -> str:
    result = cli(*argv)
    assert result.rc == 0, result
    return result.out


def _claude() -> Path:
    setup()
    path = place("claude-code")
    add(path)
    _ok("profile", "use", "A")
    return path


def _outside(path: Path) -> bool:
    (st,) = [c for c in status().clients if c.path == path]
    return st.changed_outside


def _writes_file() -> Path:
    from kvswitch.paths import dirs

    return dirs().state / "writes.json"


def _hand_edit(path: Path) -> None:
    save_replace(path, path.read_text().replace('"cleanupPeriodDays": 20', '"cleanupPeriodDays": 30'))


def test_a_file_edited_by_hand_right_after_a_write_is_changed_outside() -> None:
    path = _claude()
    assert not _outside(path)
    report = json.loads(_ok("status", "--format", "json"))["data"]
    assert report["clients"][0]["changed_outside"] is False
    assert OUTSIDE not in _ok("status")
    _hand_edit(path)
    assert _outside(path)
    assert json.loads(_ok("status", "--format", "json"))["data"]["clients"][0]["changed_outside"] is True
    text = _ok("status")
    assert f"- {path} [claude-code]" in text and f"    {OUTSIDE}\n" in text
    # kvswitch's next write of it makes it kvswitch's again
    _ok("switch", "split")
    assert not _outside(path)


def test_an_edit_in_place_with_the_same_length_is_seen() -> None:
    path = _claude()
    text = path.read_text()
    save_in_place(path, text.replace('"cleanupPeriodDays": 20', '"cleanupPeriodDays": 21'))
    assert _outside(path)
    save_in_place(path, text)  # put back byte for byte: it is what kvswitch wrote again
    assert not _outside(path)


def test_a_save_landing_just_after_kvswitchs_write_is_not_taken_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest is of the bytes kvswitch wrote, not of what is in the file a moment
    later: a client that rewrites its file right after the switch shows up."""
    path = _claude()
    real = kt.commit_all

    def commit_then_a_save(writes: Any) -> Any:
        results = real(writes)
        if any(w.path == path for w in writes):
            _hand_edit(path)
        return results

    monkeypatch.setattr(kt, "commit_all", commit_then_a_save)
    _ok("switch", "split")
    assert '"cleanupPeriodDays": 30' in path.read_text()
    assert _outside(path)


@pytest.mark.parametrize("how", ["one client", "named file", "restore", "profile use"])
def test_every_kvswitch_write_of_a_client_is_its_own(how: str) -> None:
    path = _claude()
    _hand_edit(path)
    assert _outside(path)
    before = state.last_write(path)
    assert before is not None
    if how == "one client":
        _ok("switch", "split", "--client", "claude-code")
    elif how == "named file":
        _ok("switch", "split", str(path))
    elif how == "restore":
        _ok("restore", str(path))
    else:
        _ok("profile", "edit", "A", "--model", "coder-14b")
        _ok("profile", "use", "A")
    assert not _outside(path)
    after = state.last_write(path)
    assert after is not None and after >= before


def test_a_switch_of_a_file_kvswitch_never_wrote_keeps_no_record_of_it(tmp_path: Path) -> None:
    """A switch of files named on the command line updates the record of files kvswitch
    already keeps one of; any other file (a project's file, a test's) leaves none."""
    _claude()
    other = place("claude-code", path=tmp_path / "project" / ".claude" / "settings.json")
    _ok("profile", "use", "A")
    _ok("switch", "split", str(other))
    recorded = json.loads(_writes_file().read_text())
    assert os.path.realpath(other) not in recorded
    assert len(recorded) == 1


def test_a_lint_fix_of_a_registered_file_is_kvswitchs_own_write() -> None:
    init()
    path = cline_file()
    text = path.read_text().replace('"chunkSize": 512', '"chunkSize": 500')
    save_replace(path, text.replace("add your own freely.", "add your own freely. Mine: none."))
    assert _outside(path)
    result = cli("lint", "--fix", str(path))
    assert result.rc == 1, result  # 1: --fix changed a file
    assert '"chunkSize": 512' in path.read_text() and "Mine: none." in path.read_text()
    assert not _outside(path)


def test_a_removed_file_is_changed_outside() -> None:
    path = _claude()
    path.unlink()
    (st,) = status().clients
    assert st.problem is not None and not st.exists
    assert st.changed_outside


def test_the_watchers_fix_is_recorded_as_kvswitchs_write(events: Events) -> None:
    init()
    path = cline_file()
    text = path.read_text().replace('"chunkSize": 512', '"chunkSize": 500')
    with running_watcher(events):
        save_replace(path, text.replace("add your own freely.", "add your own freely. Mine: none."))
        assert wait_until(lambda: events.of("fixed")), events.describe()
        assert events.wait_quiet()
    assert '"chunkSize": 512' in path.read_text() and "Mine: none." in path.read_text()
    assert not _outside(path)


# -- writes.json from an older kvswitch, or damaged -----------------------------------------


def test_an_older_writes_json_with_bare_timestamps_is_still_read() -> None:
    path = _claude()
    _writes_file().write_text(json.dumps({os.path.realpath(path): 1764000000.5}))
    assert state.last_write(path) == 1764000000.5
    assert not _outside(path)  # no digest: kvswitch cannot tell, so it does not say
    text = _ok("status")
    assert "last kvswitch write 20" in text and OUTSIDE not in text
    _ok("switch", "split")
    entry = json.loads(_writes_file().read_text())[os.path.realpath(path)]
    assert isinstance(entry, dict) and set(entry) == {"at", "sha256"}
    _hand_edit(path)
    assert _outside(path)


@pytest.mark.parametrize(
    "content",
    ["[1, 2]", "not json", '{"%s": true}', '{"%s": {"at": true, "sha256": 5}}', '{"%s": "yesterday"}', ""],
)
def test_a_damaged_writes_json_reads_as_no_record(content: str) -> None:
    path = _claude()
    _writes_file().write_text(content.replace("%s", os.path.realpath(path)))
    assert state.last_write(path) is None
    assert not _outside(path)
    assert "last kvswitch write never" in _ok("status")
    _ok("switch", "split")  # and the next write mends it
    assert state.last_write(path) is not None and not _outside(path)
