"""``--format json`` of the state commands (switch, status, restore, profile, client, key, watch):
one envelope each, valid against schemas/kvswitch-output.schema.json, ISO 8601 times, ``ok``
false exactly where the command exits nonzero (a failure still prints its envelope, with
``data.error``), and keys only ever masked."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvswitch.backups import list_backups
from tests.clientenv import KEY_A, KEY_B, Result, ccswitch_file, cli, cline_file, config_file, init
from tests.conftest import ROOT

MASK_A = f"{KEY_A[:3]}…{KEY_A[-4:]}"
MASK_B = f"{KEY_B[:3]}…{KEY_B[-4:]}"
ENVELOPE = {"kvswitch", "format", "command", "ok", "generated_at", "data"}


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "schemas" / "kvswitch-output.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _when(text: str) -> datetime:
    """An ISO 8601 UTC time as kvswitch writes it (``…Z``)."""
    assert text.endswith("Z"), text
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    return moment


def report(result: Result, command: str, *, rc: int = 0) -> dict[str, Any]:
    """The one envelope ``result`` printed, checked: its exit code, its command, ``ok`` (false
    exactly when the exit code is not 0), its time, the schema; returns ``data``."""
    assert result.rc == rc, result
    envelope = json.loads(result.out)  # one JSON document on stdout and nothing else
    assert set(envelope) == ENVELOPE
    assert (envelope["command"], envelope["format"], envelope["ok"]) == (command, 1, rc == 0)
    assert abs(_when(envelope["generated_at"]).timestamp() - datetime.now(UTC).timestamp()) < 600
    errors = sorted(_validator().iter_errors(envelope), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])
    data: dict[str, Any] = envelope["data"]
    return data


# -- switch -------------------------------------------------------------------------------------


def test_switch_json_says_per_file_what_changed_and_where_the_backup_is() -> None:
    init(key=KEY_A)
    result = cli("switch", "split", "--format", "json")
    data = report(result, "switch")
    assert KEY_A not in result.out + result.err
    assert (data["mode"], data["dry_run"], data["scope"], data["switched"]) == ("split", False, "all", 2)
    assert [f["path"] for f in data["files"]] == [str(cline_file()), str(ccswitch_file())]
    for f, kind in zip(data["files"], ("article-cline", "article-ccswitch"), strict=True):
        assert (f["kind"], f["old_mode"], f["new_mode"], f["changed"], f["diff"]) == (
            kind,
            "merged",
            "split",
            True,
            None,
        )
        assert f["backup"] and Path(f["backup"]).is_file()
        assert f["takes_effect"] in ("now", "next session", "next start")
    assert data["gateway"] == {"running": False, "told": False, "pinned_clients": False}
    again = report(cli("switch", "split", "--format", "json"), "switch")
    assert again["switched"] == 0 and not any(f["changed"] or f["backup"] for f in again["files"])


def test_switch_json_dry_run_says_so_and_writes_nothing(tmp_path: Path) -> None:
    init(key=KEY_A)
    before = cline_file().read_bytes(), ccswitch_file().read_bytes()
    result = cli("switch", "split", "--dry-run", "--format", "json")
    data = report(result, "switch")
    assert (cline_file().read_bytes(), ccswitch_file().read_bytes()) == before
    assert data["dry_run"] is True and data["switched"] == 2
    assert all(f["changed"] and f["backup"] is None and f["diff"].startswith("---") for f in data["files"])
    assert KEY_A not in result.out


def test_switch_json_of_paths_and_of_one_client() -> None:
    init()
    data = report(cli("switch", "split", str(cline_file()), "--format", "json"), "switch")
    assert data["scope"] == "paths" and data["gateway"] is None
    assert [(f["path"], f["changed"]) for f in data["files"]] == [(str(cline_file()), True)]
    one = report(cli("switch", "split", "--client", "article-ccswitch", "--format", "json"), "switch")
    assert one["scope"] == "clients" and [f["path"] for f in one["files"] if f["changed"]] == [str(ccswitch_file())]


def test_a_failed_switch_still_prints_one_envelope_with_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "settings.json"
    result = cli("switch", "merged", str(missing), "--format", "json")
    data = report(result, "switch", rc=2)
    error = data["error"]
    assert (error["type"], error["path"], error["exit_code"]) == ("ReadError", str(missing), 2)
    assert error["message"] and str(missing) in result.err  # the message still goes to stderr
    usage = report(cli("switch", "split", "--client", "x", str(missing), "--format", "json"), "switch", rc=2)
    assert usage["error"]["message"] == "give PATHs or --client, not both"


def test_a_refused_switch_carries_the_codes(tmp_path: Path) -> None:
    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir()
    path.write_text(
        '[provider]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\n\n[cache]\n'
        'mode = "merged"\nchunk_size = "512"\n',
        encoding="utf-8",
    )
    data = report(cli("switch", "split", str(path), "--format", "json"), "switch", rc=1)
    assert (data["error"]["code"], data["error"]["codes"]) == ("KVS002", ["KVS002"])
    assert "nothing was written" in data["error"]["message"]


def test_switch_json_diffs_mask_keys(tmp_path: Path) -> None:
    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir()
    path.write_text(
        f'[provider]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\napi_key = "{KEY_A}"\n\n'
        f'[cache]\nmode = "merged"  # {KEY_A}\n',
        encoding="utf-8",
    )
    result = cli("switch", "split", str(path), "--dry-run", "--format", "json")
    (shown,) = report(result, "switch")["files"]
    assert KEY_A not in result.out and MASK_A in shown["diff"]


# -- status, restore ----------------------------------------------------------------------------


def test_status_json_has_iso_times_and_ok_follows_the_exit_code() -> None:
    init(key=KEY_A)
    assert cli("switch", "split").rc == 0
    data = report(cli("status", "--format", "json"), "status")
    assert (data["profile"], data["mode"], data["in_sync"]) == ("A", "split", True)
    for c in data["clients"]:
        assert abs(_when(c["last_write"]).timestamp() - datetime.now(UTC).timestamp()) < 600
        assert c["key"] == MASK_A and c["backups"] == 1
    ccswitch_file().write_text(ccswitch_file().read_text().replace("chunk_size = 512", "chunk_size = 768"))
    drifted = report(cli("status", "--format", "json"), "status", rc=1)
    assert drifted["in_sync"] is False and drifted["clients"][1]["drift"] == ["cache.chunk_size"]


def test_restore_list_json_and_restore_json() -> None:
    init()
    assert cli("switch", "split").rc == 0
    assert cli("switch", "merged").rc == 0
    path = ccswitch_file()
    data = report(cli("restore", str(path), "--list", "--format", "json"), "restore --list")
    backups = list_backups(path)
    assert data["path"] == str(path)
    assert [b["id"] for b in data["backups"]] == [b.id for b in backups] and len(backups) == 2
    for shown, b in zip(data["backups"], backups, strict=True):
        assert _when(shown["created"]).timestamp() == pytest.approx(b.created, abs=0.001)
        assert (shown["size"], shown["backup"]) == (b.size, str(b.path))
    done = report(cli("restore", str(path), "--format", "json"), "restore")
    assert done["restored"]["id"] == backups[0].id and Path(done["replaced_backup"]).is_file()
    assert 'mode = "split"' in path.read_text()


def test_restore_list_json_without_backups_fails_with_an_envelope(tmp_path: Path) -> None:
    init()
    other = tmp_path / "other.toml"
    other.write_text("x = 1\n")
    data = report(cli("restore", str(other), "--list", "--format", "json"), "restore --list", rc=1)
    assert data["backups"] == [] and data["error"]["path"] == str(other)
    failed = report(cli("restore", str(other), "--format", "json"), "restore", rc=1)
    assert failed["error"]["message"] == "no backups of this file"


# -- profile, client ----------------------------------------------------------------------------


def test_profile_list_and_show_json() -> None:
    init()
    assert cli("profile", "add", "B", "--preset", "vllm", "--model", "llama", "--key", "env:B_KEY").rc == 0
    data = report(cli("profile", "list", "--format", "json"), "profile list")
    assert data["active"] == "A"
    by_name = {p["name"]: p for p in data["profiles"]}
    assert list(by_name) == ["A", "B"]
    assert (by_name["A"]["active"], by_name["A"]["key"], by_name["A"]["base_url"]) == (
        True,
        "keyring",
        "https://taotoken.net/api",
    )
    assert (by_name["B"]["active"], by_name["B"]["key"], by_name["B"]["model"]) == (False, "env:B_KEY", "llama")
    assert by_name["B"]["merged_url"] and by_name["B"]["split_url"]
    shown = report(cli("profile", "show", "B", "--format", "json"), "profile show")
    assert (shown["name"], shown["active"], shown["key"], shown["model"]) == ("B", False, "env:B_KEY", "llama")
    missing = report(cli("profile", "show", "nope", "--format", "json"), "profile show", rc=1)
    assert "nope" in missing["error"]["message"]


def test_client_list_json() -> None:
    init()
    data = report(cli("client", "list", "--format", "json"), "client list")
    assert [(c["path"], c["kind"], c["exists"]) for c in data["clients"]] == [
        (str(cline_file()), "article-cline", True),
        (str(ccswitch_file()), "article-ccswitch", True),
    ]
    assert all(c["nudge"] == "none" and c["mode"] is None and c["route"] == "direct" for c in data["clients"])
    assert cli("switch", "split", "--client", "article-cline").rc == 0
    own = report(cli("client", "list", "--format", "json"), "client list")
    assert [c["mode"] for c in own["clients"]] == ["split", None]


# -- key get ------------------------------------------------------------------------------------


def test_key_get_json_holds_only_the_masked_key(monkeypatch: pytest.MonkeyPatch) -> None:
    init(key=KEY_A)
    monkeypatch.setenv("B_KEY", KEY_B)
    assert cli("profile", "add", "B", "--preset", "vllm", "--model", "m", "--key", "env:B_KEY").rc == 0
    results = [cli("key", "get", name, "--format", "json") for name in ("A", "B")]
    stored, from_env = (report(r, "key get") for r in results)
    assert stored == {
        "profile": "A",
        "reference": "keyring",
        "present": True,
        "masked": MASK_A,
        "stored_in": "keyring",
        "variable": None,
    }
    assert from_env == {
        "profile": "B",
        "reference": "env:B_KEY",
        "present": True,
        "masked": MASK_B,
        "stored_in": "environment",
        "variable": "B_KEY",
    }
    reveal = cli("key", "get", "A", "--reveal", "--format", "json")
    assert report(reveal, "key get", rc=2)["error"]["type"] == "UsageError"
    monkeypatch.delenv("B_KEY")
    unset = cli("key", "get", "B", "--format", "json")
    data = report(unset, "key get", rc=1)
    assert (data["present"], data["masked"], data["variable"]) == (False, None, "B_KEY") and data["error"]["message"]
    monkeypatch.setenv("B_KEY", KEY_B)
    assert cli("profile", "use", "B").rc == 0  # the article's shapes now hold B's key
    status = cli("status", "--format", "json")
    assert {c["key"] for c in report(status, "status")["clients"]} == {MASK_B}
    for r in [*results, reveal, unset, status]:
        assert KEY_A not in r.out + r.err and KEY_B not in r.out + r.err


def test_key_get_json_of_a_profile_without_a_key() -> None:
    init()
    assert cli("profile", "edit", "A", "--key", "none").rc == 0
    data = report(cli("key", "get", "A", "--format", "json"), "key get", rc=1)
    assert (data["reference"], data["present"], data["stored_in"]) == ("none", False, None)
    assert "sends no key" in data["error"]["message"]


# -- watch --------------------------------------------------------------------------------------


def test_watch_once_json_reports_per_client() -> None:
    init()
    data = report(cli("watch", "--once", "--format", "json"), "watch")
    assert (data["policy"], data["once"], data["problems"]) == ("adopt", True, 0)
    assert [e["kind"] for e in data["events"]][:1] == ["started"]
    for e in data["events"]:
        _when(e["time"])
    ccswitch_file().write_text("mode = [\n")  # no longer TOML
    broken = report(cli("watch", "--once", "--format", "json"), "watch", rc=1)
    assert broken["problems"] >= 1
    (client,) = [c for c in broken["clients"] if c["path"] == str(ccswitch_file())]
    assert client["ok"] is False and client["events"][0]["kind"] == "invalid"
    assert all(c["ok"] for c in broken["clients"] if c["path"] != str(ccswitch_file()))


def test_watch_json_needs_once() -> None:
    init()
    data = report(cli("watch", "--format", "json"), "watch", rc=2)
    assert "--once" in data["error"]["message"]


def test_the_config_path_in_status_is_the_sandbox_one() -> None:
    init()
    data = report(cli("status", "--format", "json"), "status")
    assert data["config"] == str(config_file()) and os.environ["KVSWITCH_HOME"] in data["config"]
