"""``kvswitch status`` and ``kvswitch restore``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from datetime import datetime

import pytest

from kvswitch.backups import list_backups
from kvswitch.clients import restore, status
from kvswitch.errors import KvswitchError
from tests.clientenv import (
    KEY_A,
    backups_under,
    ccswitch_file,
    cli,
    cline_file,
    config_file,
    init,
    kvswitch_home,
)


def test_in_sync_right_after_init() -> None:
    init()
    result = cli("status")
    assert result.rc == 0, result
    lines = result.out.splitlines()
    assert lines[0] == f"profile A · mode merged  ({config_file()})"
    assert f"- {cline_file()} [article-cline] mode merged · in sync" in lines
    assert f"- {ccswitch_file()} [article-ccswitch] mode merged · in sync" in lines
    assert result.out.count("key none · last kvswitch write ") == 2
    st = status()
    assert st.in_sync and st.profile == "A" and st.mode == "merged"
    assert [c.path for c in st.clients] == [cline_file(), ccswitch_file()]


def test_a_hand_edit_of_chunk_size_is_reported_as_drift() -> None:
    init()
    toml = ccswitch_file()
    toml.write_text(toml.read_text().replace("chunk_size = 512", "chunk_size = 768"))
    result = cli("status")
    assert result.rc == 1, result
    assert f"- {toml} [article-ccswitch] mode merged · drifted: cache.chunk_size" in result.out
    assert f"- {cline_file()} [article-cline] mode merged · in sync" in result.out
    assert cli("profile", "use", "A").rc == 0  # the profile brings it back
    assert cli("status").rc == 0


def test_a_client_in_the_other_mode_has_drifted() -> None:
    init()
    assert cli("switch", "split", str(cline_file())).rc == 0  # a path switch leaves the config's mode
    result = cli("status")
    assert result.rc == 1
    assert re.search(
        rf"- {re.escape(str(cline_file()))} \[article-cline\] mode split · drifted: .*cache\.mode", result.out
    )


def test_json_shape_with_the_key_masked() -> None:
    init(key=KEY_A)
    assert cli("switch", "split").rc == 0
    result = cli("status", "--format", "json")
    assert result.rc == 0, result
    assert KEY_A not in result.out
    report = json.loads(result.out)
    assert (report["command"], report["ok"]) == ("status", True)
    data = report["data"]
    assert set(data) == {"config", "profile", "mode", "in_sync", "clients", "key_variables"}
    assert data["key_variables"] == []  # the article's shapes keep the key in the file
    assert (data["config"], data["profile"], data["mode"], data["in_sync"]) == (str(config_file()), "A", "split", True)
    assert [c["path"] for c in data["clients"]] == [str(cline_file()), str(ccswitch_file())]
    for c, kind in zip(data["clients"], ("article-cline", "article-ccswitch"), strict=True):
        assert {"path", "kind", "mode", "in_sync", "drift", "key", "last_write", "backups"} <= set(c)
        assert (c["kind"], c["mode"], c["in_sync"], c["drift"], c["exists"], c["problem"]) == (
            kind,
            "split",
            True,
            [],
            True,
            None,
        )
        assert c["key"] == f"{KEY_A[:3]}…{KEY_A[-4:]}"
        written = datetime.fromisoformat(c["last_write"])
        assert c["last_write"].endswith("Z") and abs(written.timestamp() - time.time()) < 60
        assert c["backups"] == 1


def test_a_missing_client_file_is_a_problem() -> None:
    init()
    ccswitch_file().unlink()
    result = cli("status")
    assert result.rc == 1, result
    assert f"- {ccswitch_file()} [article-ccswitch] mode ? · PROBLEM" in result.out
    assert "no such file" in result.out
    report = json.loads(cli("status", "--format", "json").out)
    data = report["data"]
    assert report["ok"] is False  # status exits 1
    missing = data["clients"][1]
    assert data["in_sync"] is False
    assert missing["exists"] is False and missing["in_sync"] is False and "no such file" in missing["problem"]
    assert data["clients"][0]["in_sync"] is True


def test_status_without_clients() -> None:
    init("--no-cline", "--no-ccswitch")
    result = cli("status")
    assert result.rc == 0 and "no clients registered" in result.out, result


# -- after a crash ------------------------------------------------------------------------------

CRASHING_SWITCH = """
    import os, sys
    import kvswitch.io as kio
    from kvswitch.cli import main
    real = kio.PreparedWrite.commit
    clients = set(sys.argv[1:])
    def commit(self):
        if str(self.target) in clients and getattr(self, "verify", True):
            clients.clear()
            real(self)
            os._exit(9)  # the process dies after the first client's swap: no except, no finally
        real(self)
    kio.PreparedWrite.commit = commit
    sys.exit(main(["switch", "split"]))
"""


def _crash_half_way() -> None:
    """``kvswitch switch split`` in a child that dies after writing the first client."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASHING_SWITCH), str(cline_file()), str(ccswitch_file())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 9, done
    assert (kvswitch_home() / "state" / "journal.json").exists()


def test_status_finishes_an_interrupted_switch_before_it_reports() -> None:
    """Before: status read the half-switched files as they were (one client split, the rest
    merged) and left the journal for some later command."""
    init()
    _crash_half_way()
    result = cli("status")
    assert "kvswitch: completed a switch that was interrupted" in result.err, result
    assert not (kvswitch_home() / "state" / "journal.json").exists()
    assert result.rc == 0, result
    assert result.out.splitlines()[0].startswith("profile A · mode split")
    assert f"- {cline_file()} [article-cline] mode split · in sync" in result.out
    assert f"- {ccswitch_file()} [article-ccswitch] mode split · in sync" in result.out
    assert cli("status").err == ""  # said once: the journal is gone


def test_status_json_after_an_interrupted_switch_is_still_json() -> None:
    init()
    _crash_half_way()
    result = cli("status", "--format", "json")
    assert "completed a switch that was interrupted" in result.err
    data = json.loads(result.out)["data"]  # the note goes to stderr, never into the JSON
    assert data["mode"] == "split" and data["in_sync"] is True


def test_restore_finishes_an_interrupted_switch_first() -> None:
    init()
    merged = ccswitch_file().read_bytes()
    _crash_half_way()
    result = cli("restore", str(ccswitch_file()))
    assert "kvswitch: completed a switch that was interrupted" in result.err, result
    assert result.rc == 0, result
    assert ccswitch_file().read_bytes() == merged  # the switch's own write is what was replaced
    assert not (kvswitch_home() / "state" / "journal.json").exists()


# -- restore ---------------------------------------------------------------------------------


def _history() -> tuple[bytes, bytes]:
    """init, then split, then merged: two backups of the CC Switch file (merged, then split)."""
    init()
    merged = ccswitch_file().read_bytes()
    assert cli("switch", "split").rc == 0
    split = ccswitch_file().read_bytes()
    assert cli("switch", "merged").rc == 0
    assert ccswitch_file().read_bytes() == merged
    return merged, split


def test_restore_list_is_newest_first() -> None:
    merged, split = _history()
    result = cli("restore", str(ccswitch_file()), "--list")
    assert result.rc == 0, result
    ids = [line.split()[0] for line in result.out.splitlines()]
    backups = list_backups(ccswitch_file())
    assert ids == [b.id for b in backups] and len(ids) == 2
    assert ids == sorted(ids, reverse=True)
    assert [b.path.read_bytes() for b in backups] == [split, merged]
    assert f"{len(split):>8} bytes" in result.out.splitlines()[0]


def test_restore_puts_back_the_newest_backup_that_differs_and_backs_up_what_it_replaced() -> None:
    merged, split = _history()
    newest = list_backups(ccswitch_file())[0]
    result = cli("restore", str(ccswitch_file()))
    assert result.rc == 0, result
    assert f"restored {ccswitch_file()} from backup {newest.id}" in result.out
    assert ccswitch_file().read_bytes() == split
    after = list_backups(ccswitch_file())
    assert len(after) == 3 and after[0].path.read_bytes() == merged  # the replaced version
    assert str(after[0].path) in result.out
    assert list(kvswitch_home().rglob("*.tmp")) == []
    # again: the newest backup now equals the file, so the one before it is used
    assert cli("restore", str(ccswitch_file())).rc == 0
    assert ccswitch_file().read_bytes() == merged


def test_restore_by_id() -> None:
    merged, _ = _history()
    oldest = list_backups(ccswitch_file())[-1]
    assert oldest.path.read_bytes() == merged
    assert cli("switch", "split").rc == 0
    result = cli("restore", str(ccswitch_file()), "--id", oldest.id)
    assert result.rc == 0, result
    assert ccswitch_file().read_bytes() == merged


def test_restore_with_an_unknown_id_changes_nothing() -> None:
    _history()
    before = ccswitch_file().read_bytes()
    result = cli("restore", str(ccswitch_file()), "--id", "20000101T000000Z-000")
    assert result.rc == 1, result
    assert "no backup '20000101T000000Z-000'" in result.err and str(ccswitch_file()) in result.err
    assert ccswitch_file().read_bytes() == before and len(list_backups(ccswitch_file())) == 2


def test_restore_without_backups() -> None:
    init()
    before = cline_file().read_bytes()
    for argv in (("restore", str(cline_file())), ("restore", str(cline_file()), "--list")):
        result = cli(*argv)
        assert result.rc == 1, result
        assert "no backups" in result.err + result.out
    assert cline_file().read_bytes() == before
    assert backups_under(kvswitch_home()) == []


def test_restore_when_every_backup_equals_the_file() -> None:
    init()
    assert cli("switch", "split").rc == 0
    ccswitch_file().write_bytes(list_backups(ccswitch_file())[0].path.read_bytes())
    with pytest.raises(KvswitchError, match="nothing to restore"):
        restore(ccswitch_file())
    assert cli("restore", str(ccswitch_file())).rc == 1


def test_restore_refuses_to_clobber_a_change_made_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """The restore is an atomic write checked against the bytes it read."""
    import kvswitch.io as kio

    _history()
    toml = ccswitch_file()
    real = kio.read_optional
    calls: list[int] = []

    def read_optional(path: object) -> bytes | None:
        data = real(path)  # type: ignore[arg-type]
        if str(path) == str(toml):
            calls.append(1)
            with toml.open("a") as fh:  # another program, every time kvswitch looks
                fh.write(f"# theirs {len(calls)}\n")
        return data

    monkeypatch.setattr(kio, "read_optional", read_optional)
    result = cli("restore", str(toml))
    monkeypatch.setattr(kio, "read_optional", real)
    assert result.rc == 1, result
    assert "changed on disk" in result.err
    assert toml.read_text().endswith(f"# theirs {len(calls)}\n")
