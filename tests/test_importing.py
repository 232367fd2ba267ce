"""``kvswitch import CLIENT``: a profile from a real client's current provider.

The client files are real-shaped (tests/fixtures/import/), set up by hand the way each client's
users do; the import must read them, never write them, and never show a key."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.clientenv import cli, config_data, config_file

FIXTURES = Path(__file__).parent / "fixtures" / "import"

# kind id → (fixture, its place under HOME, what the profile must hold)
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "claude-code": (
        "claude-settings.json",
        ".claude/settings.json",
        {
            "base_url": "https://gateway.example.test/anthropic",
            "url_convention": "append-v1",
            "model": "qwen3-coder-480b",
            "headers": {"X-Team": "infra", "X-Trace": "on"},
            "key_literal": "sk-import-claude-7f3a9c2e5b8d",
        },
    ),
    "codex": (
        "codex-config.toml",
        ".codex/config.toml",
        {
            "base_url": "http://10.0.0.5:8000/v1",
            "url_convention": "includes-v1",
            "model": "qwen3-coder-30b",
            "headers": {"X-Team": "infra"},
            "key": "env:VLLM_API_KEY",
            "provider": "vllm",
        },
    ),
    "opencode": (
        "opencode.json",
        ".config/opencode/opencode.json",
        {
            "base_url": "http://127.0.0.1:8080/v1",
            "url_convention": "includes-v1",
            "model": "qwen2.5-coder-7b",
            "headers": {"X-Team": "infra"},
            "key": "env:LLAMA_KEY",
            "provider": "llamacpp",
        },
    ),
    "cline-providers": (
        "cline-providers.json",
        ".cline/data/settings/providers.json",
        {
            "base_url": "https://llm.example.test/v1",
            "url_convention": "includes-v1",
            "model": "deepseek-coder-v2",
            "headers": {"X-Team": "infra"},
            "key_literal": "sk-import-cline-91b4e7d0a3",
        },
    ),
    "qwen-code": (
        "qwen-settings.json",
        ".qwen/settings.json",
        {
            "base_url": "http://192.168.1.20:30000/v1",
            "url_convention": "includes-v1",
            "model": "qwen3-coder-plus",
            "headers": {"X-Team": "infra"},
            "key_literal": "sk-import-qwen-5e6f7a8b9c",
        },
    ),
}
ALL_KEYS = (
    "sk-import-claude-7f3a9c2e5b8d",
    "sk-import-header-4d2c8e",
    "sk-import-cline-91b4e7d0a3",
    "sk-import-qwen-5e6f7a8b9c",
    "sk-ant-import-0000",
)


def place(kind: str, home: Path) -> Path:
    fixture, where, _ = CASES[kind]
    path = home / where
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, path)
    return path


def no_key_in(*texts: str) -> None:
    for text in texts:
        for key in ALL_KEYS:
            assert key not in text


@pytest.mark.parametrize("kind", list(CASES))
def test_import_reads_the_clients_provider_and_writes_only_kvswitchs_config(
    kind: str, sandbox: Path, memory_keyring: dict[tuple[str, str], str]
) -> None:
    path = place(kind, sandbox)
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    r = cli("import", kind, "--key")
    assert r.rc == 0, r.err
    no_key_in(r.out, r.err, config_file().read_text())
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # read, never written
    want = CASES[kind][2]
    data = config_data()
    assert data["active_profile"] == kind  # the first profile of a new config is active
    profile = data["profiles"][kind]
    for field in ("base_url", "url_convention", "model"):
        assert profile[field] == want[field], field
    assert profile.get("headers", {}) == want["headers"]
    if "key_literal" in want:
        assert profile["key"] == "keyring"
        from kvswitch.keys import get_key

        assert get_key(kind) == want["key_literal"]
    else:
        assert profile["key"] == want["key"]
        assert not memory_keyring
    if "provider" in want:
        assert profile["provider"] == want["provider"]


def test_without_key_the_key_stays_where_it_was_and_the_profile_says_none(
    sandbox: Path, memory_keyring: dict[tuple[str, str], str]
) -> None:
    place("cline-providers", sandbox)
    r = cli("import", "cline")
    assert r.rc == 0, r.err
    assert config_data()["profiles"]["cline-providers"]["key"] == "none"
    assert "add --key" in r.out
    assert not memory_keyring
    no_key_in(r.out, r.err)


def test_a_credential_header_is_left_out_and_said(sandbox: Path) -> None:
    place("claude-code", sandbox)
    r = cli("import", "claude-code")
    assert r.rc == 0, r.err
    assert "X-Api-Key" in r.out and "credential" in r.out
    assert "X-Api-Key" not in config_file().read_text()
    no_key_in(r.out, r.err, config_file().read_text())


def test_split_mode_is_noted(sandbox: Path) -> None:
    place("codex", sandbox)
    r = cli("import", "codex")
    assert r.rc == 0, r.err
    assert "split mode" in r.out
    assert "X-Cache-Mode" not in config_data()["profiles"]["codex"].get("headers", {})


def test_dry_run_writes_nothing(sandbox: Path) -> None:
    place("qwen-code", sandbox)
    r = cli("import", "qwen-code", "--dry-run", "--format", "json")
    assert r.rc == 0, r.err
    assert not config_file().exists()
    import json

    out = json.loads(r.out)["data"]  # kvswitch's JSON envelope
    assert out["dry_run"] is True
    assert out["profiles"][0]["base_url"] == "http://192.168.1.20:30000/v1"
    no_key_in(r.out)


def test_into_an_existing_config_the_active_profile_stays(sandbox: Path) -> None:
    from tests.clientenv import init

    init()
    place("opencode", sandbox)
    r = cli("import", "opencode", "--profile", "local")
    assert r.rc == 0, r.err
    data = config_data()
    assert data["active_profile"] == "A" and "local" in data["profiles"]
    assert "kvswitch profile use local" in r.out


def test_a_profile_of_that_name_is_refused_and_nothing_written(sandbox: Path) -> None:
    from tests.clientenv import init

    init(profile="opencode")
    before = config_file().read_bytes()
    place("opencode", sandbox)
    r = cli("import", "opencode")
    assert r.rc == 1
    assert "exists" in r.err and "--profile" in r.err
    assert config_file().read_bytes() == before


def test_by_registered_name_and_by_path(sandbox: Path) -> None:
    from tests.clientenv import init

    init()
    path = place("qwen-code", sandbox)
    assert cli("client", "add", str(path), "--name", "laptop-qwen").rc == 0
    r = cli("import", "laptop-qwen", "--profile", "q1")
    assert r.rc == 0, r.err
    r = cli("import", str(path), "--profile", "q2")
    assert r.rc == 0, r.err
    profiles = config_data()["profiles"]
    assert profiles["q1"]["base_url"] == profiles["q2"]["base_url"] == "http://192.168.1.20:30000/v1"


def test_cc_switch_proxy_placeholder_is_refused(sandbox: Path) -> None:
    path = sandbox / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:15721", '
        '"ANTHROPIC_AUTH_TOKEN": "PROXY_MANAGED", "ANTHROPIC_MODEL": "m"}}\n'
    )
    r = cli("import", "claude-code")
    assert r.rc == 1
    assert "--from cc-switch" in r.err
    assert not config_file().exists()


def test_a_builtin_provider_has_nothing_to_import(sandbox: Path) -> None:
    path = sandbox / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    shutil.copyfile(Path(__file__).parent / "fixtures" / "clients" / "codex.toml", path)
    r = cli("import", "codex")
    assert r.rc == 1
    assert "no endpoint" in r.err
    assert not config_file().exists()


def test_no_model_asks_for_one(sandbox: Path) -> None:
    path = sandbox / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}}\n')
    r = cli("import", "claude-code")
    assert r.rc == 1 and "--model" in r.err
    r = cli("import", "claude-code", "--model", "qwen3")
    assert r.rc == 0, r.err
    assert config_data()["profiles"]["claude-code"]["model"] == "qwen3"


@pytest.mark.parametrize(
    "url",
    [
        "http://user:sk-import-claude-7f3a9c2e5b8d@host:1/v1",
        "javascript:alert(1)",
        "http://host:99999/v1",
        "http://host/v1?key=sk-import-claude-7f3a9c2e5b8d",
    ],
)
def test_a_hostile_url_is_refused_without_echoing_it(url: str, sandbox: Path) -> None:
    path = sandbox / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    import json

    path.write_text(json.dumps({"security": {"auth": {"baseUrl": url}}, "model": {"name": "m"}}))
    r = cli("import", "qwen-code")
    assert r.rc == 1, (r.out, r.err)
    assert "base URL" in r.err
    no_key_in(r.out, r.err)
    assert not config_file().exists()


def test_hostile_header_values_are_left_out(sandbox: Path) -> None:
    import json

    path = sandbox / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    headers = {"X-Ok": "fine", "X-Evil": "a\r\nX-Injected: 1", "Bad Name": "x", "X-Bell": "\x07"}
    path.write_text(
        json.dumps(
            {
                "security": {"auth": {"baseUrl": "http://h:1/v1"}},
                "model": {"name": "m", "generationConfig": {"customHeaders": headers}},
            }
        )
    )
    r = cli("import", "qwen-code")
    assert r.rc == 0, r.err
    assert config_data()["profiles"]["qwen-code"]["headers"] == {"X-Ok": "fine"}
    assert "X-Injected" not in config_file().read_text()


def test_the_imported_profile_renders_back_into_its_client(sandbox: Path) -> None:
    """The loop closes: the imported profile, made active and rendered into the client it came
    from, keeps the client's endpoint, model and headers."""
    from kvswitch.document import parse_config
    from kvswitch.kinds import get_kind

    path = place("opencode", sandbox)
    old = get_kind("opencode").current(parse_config(path.read_bytes(), "opencode", path).data)
    assert cli("import", "opencode").rc == 0
    assert cli("client", "add", str(path)).rc == 0
    r = cli("profile", "use", "opencode")
    assert r.rc == 0, r.err
    new = get_kind("opencode").current(parse_config(path.read_bytes(), "opencode", path).data)
    assert old is not None and new is not None
    assert (new.url, new.model, new.key_env) == (old.url, old.model, old.key_env)
    assert new.headers == old.headers
    assert "ollama" in path.read_text()  # the user's other provider stays


def test_codex_profile_table_chooses_the_provider() -> None:
    from kvswitch.kinds import get_kind

    data = tomllib.loads((FIXTURES / "codex-config.toml").read_text())
    found = get_kind("codex").current(data)
    assert found is not None and found.provider == "vllm" and found.model == "qwen3-coder-30b"
    data["profile"] = "cloud"  # a profile without a provider: the top-level choice (none)
    assert get_kind("codex").current(data) is None


def test_the_key_is_never_in_the_environment_of_anything_printed(sandbox: Path) -> None:
    """The JSON output names where the key is, never the key."""
    import json

    for kind in CASES:
        place(kind, sandbox)
    for kind in CASES:
        r = cli("import", kind, "--format", "json", "--profile", f"p-{kind}", "--dry-run")
        assert r.rc == 0, r.err
        no_key_in(r.out, r.err)
        assert json.loads(r.out)["data"]["profiles"][0]["key"] in ("none", "keyring") or json.loads(r.out)["data"][
            "profiles"
        ][0]["key"].startswith("env:")
    assert os.listdir(sandbox)  # the files are still there


def test_an_editor_saving_kvswitch_toml_during_an_import_loses_nothing(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A racing editor: kvswitch.toml is saved by someone else after the import read it and
    before it writes; both the save and the new profile end up in the file."""
    from tests.clientenv import init

    init()
    place("opencode", sandbox)
    import kvswitch.config as config_module

    real = config_module.profile_table
    saved = []

    def racing(profile: Any) -> Any:
        if not saved:
            path = config_file()
            path.write_text(path.read_text() + "# saved by the editor meanwhile\n")
            saved.append(True)
        return real(profile)

    monkeypatch.setattr(config_module, "profile_table", racing)
    r = cli("import", "opencode", "--profile", "raced")
    assert r.rc == 0, r.err
    text = config_file().read_text()
    assert saved and "# saved by the editor meanwhile" in text
    assert "raced" in tomllib.loads(text)["profiles"]
