"""``kvswitch import --from cc-switch``: profiles from CC Switch's providers, read-only.

The databases are built from CC Switch's own schema (tests/ccswitch_db.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import ccswitch_db as ccs
from tests.clientenv import cli, config_data, config_file


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}


def no_key_in(*texts: str) -> None:
    for text in texts:
        for key in ccs.KEYS.values():
            assert key not in text


@pytest.fixture
def db(sandbox: Path) -> Path:
    return ccs.build(sandbox / ".cc-switch" / "cc-switch.db")


def test_every_known_providers_becomes_a_profile_and_the_database_is_untouched(db: Path) -> None:
    before = snapshot(db.parent)
    r = cli("import", "--from", "cc-switch")  # the usual place, under HOME
    assert r.rc == 0, r.err
    assert snapshot(db.parent) == before  # bytes, times, and no side file
    no_key_in(r.out, r.err, config_file().read_text())
    profiles = config_data()["profiles"]
    assert set(profiles) == {"local-llama.cpp", "local-vllm", "local-sglang"}
    assert profiles["local-llama.cpp"]["base_url"] == "http://127.0.0.1:8080"
    assert profiles["local-llama.cpp"]["url_convention"] == "append-v1"
    assert profiles["local-vllm"]["base_url"] == "http://127.0.0.1:8081/v1"
    assert profiles["local-vllm"]["model"] == "gpt-oss-120b"
    assert profiles["local-sglang"]["model"] == "qwen3-coder-30b"
    assert profiles["local-sglang"]["headers"] == {"X-Team": "kv"}
    assert all(p["key"] == "none" for p in profiles.values())  # keys only with --key
    for skipped in ("Relay", "Claude Official", "OpenAI Official", "Gemini relay"):
        assert skipped in r.err


def test_json_lists_what_was_skipped_and_why(db: Path) -> None:
    r = cli("import", "--from", "cc-switch", "--db", str(db), "--dry-run", "--format", "json")
    assert r.rc == 0, r.err
    printed = json.loads(r.out)
    assert (printed["command"], printed["ok"]) == ("import", True)
    out = printed["data"]
    reasons = {s["source"]: s["reason"] for s in out["skipped"]}
    assert any("Relay" in s and "--model" in why for s, why in reasons.items())
    assert any("Gemini" in s for s in reasons)
    assert not config_file().exists()
    no_key_in(r.out, r.err)


def test_one_provider_by_name_with_its_key(db: Path) -> None:
    from kvswitch.keys import get_key

    r = cli("import", "--from", "cc-switch", "--app", "codex", "--provider", "Local vLLM", "--profile", "work", "--key")
    assert r.rc == 0, r.err
    assert list(config_data()["profiles"]) == ["work"]
    assert get_key("work") == ccs.KEYS["codex"]
    no_key_in(r.out, r.err, config_file().read_text())


def test_a_model_for_a_provider_without_one(db: Path) -> None:
    r = cli("import", "--from", "cc-switch", "--provider", "Relay", "--model", "glm-4.6")
    assert r.rc == 0, r.err
    assert config_data()["profiles"]["relay"]["model"] == "glm-4.6"


def test_one_profile_name_for_several_providers_is_refused(db: Path) -> None:
    r = cli("import", "--from", "cc-switch", "--profile", "x")
    assert r.rc == 1
    assert "--provider" in r.err
    assert not config_file().exists()


@pytest.mark.parametrize("version", [0, 21, 99])
def test_an_unknown_schema_version_is_refused_naming_it(version: int, sandbox: Path) -> None:
    db = ccs.build(sandbox / ".cc-switch" / "cc-switch.db", version=version)
    before = snapshot(db.parent)
    r = cli("import", "--from", "cc-switch")
    assert r.rc == 1, (r.out, r.err)
    assert str(version) in r.err and "1–20" in r.err
    assert snapshot(db.parent) == before
    assert not config_file().exists()


def test_a_wal_database_is_read_without_a_side_file(sandbox: Path) -> None:
    db = ccs.build(sandbox / ".cc-switch" / "cc-switch.db", wal=True)
    before = snapshot(db.parent)
    r = cli("import", "--from", "cc-switch", "--app", "opencode")
    assert r.rc == 0, r.err
    assert snapshot(db.parent) == before
    assert list(config_data()["profiles"]) == ["local-sglang"]


def test_no_database_is_a_clear_error(sandbox: Path) -> None:
    r = cli("import", "--from", "cc-switch")
    assert r.rc == 2
    assert "cc-switch.db" in r.err


def test_importing_again_refuses_before_writing(db: Path) -> None:
    assert cli("import", "--from", "cc-switch").rc == 0
    before = config_file().read_bytes()
    r = cli("import", "--from", "cc-switch")
    assert r.rc == 1 and "exists" in r.err
    assert config_file().read_bytes() == before


def test_names_with_dots_make_a_valid_config(db: Path) -> None:
    """A provider's name becomes a TOML table name; "Local llama.cpp" must stay one key."""
    assert cli("import", "--from", "cc-switch", "--app", "claude").rc == 0
    assert cli("profile", "use", "local-llama.cpp").rc == 0
    assert config_data()["active_profile"] == "local-llama.cpp"


def test_the_usual_place_follows_home(sandbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere-home"
    ccs.build(other / ".cc-switch" / "cc-switch.db")
    monkeypatch.setenv("HOME", str(other))
    r = cli("import", "--from", "cc-switch", "--app", "codex", "--dry-run")
    assert r.rc == 0, r.err
    assert "Local vLLM" in r.out


def test_a_hostile_provider_name_is_shown_escaped(sandbox: Path) -> None:
    """A provider's name comes from a database anyone may have written: terminal escapes and
    line breaks in it reach the terminal escaped, never raw."""
    name = "evil\x1b[2J\x1b]0;pwned\x07\nkvswitch: all good"
    ccs.build(sandbox / ".cc-switch" / "cc-switch.db", providers=[ccs.claude(name=name)])
    r = cli("import", "--from", "cc-switch", "--dry-run")
    assert r.rc == 0, r.err
    assert "\x1b" not in r.out + r.err and "\x07" not in r.out + r.err
    assert "\nkvswitch: all good" not in r.out + r.err
