"""``kvswitch profile list|show|add|edit|remove|rename|use`` and ``kvswitch client
add|remove|list``; profile identity (the CC Switch cross-contamination bug, tested)."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kvswitch.keys import get_key, service_name, set_key
from tests.clientenv import (
    KEY_A,
    KEY_B,
    ccswitch_file,
    cli,
    cline_file,
    config_data,
    config_file,
    init,
)
from tests.conftest import FIXTURES, require_tool

B_URL = "http://127.0.0.1:8000/v1"


def add_b(*extra: str) -> None:
    result = cli(
        "profile",
        "add",
        "B",
        "--preset",
        "vllm",
        "--model",
        "llama-3-8b",
        "--chunk-size",
        "1024",
        "--temperature",
        "0.7",
        *extra,
    )
    assert result.rc == 0, result


def table_lines(name: str) -> list[str]:
    """The raw lines of profile ``name``'s tables in kvswitch.toml."""
    out, inside = [], False
    for line in config_file().read_text().splitlines(keepends=True):
        if line.startswith("["):
            inside = line.startswith((f"[profiles.{name}]", f"[profiles.{name}."))
        if inside:
            out.append(line)
    return out


def client_values() -> dict[str, Any]:
    cline = json.loads(
        "\n".join(line for line in cline_file().read_text().splitlines() if not line.strip().startswith("//"))
    )
    toml = tomllib.loads(ccswitch_file().read_text())
    return {
        "cline": (
            cline["cline.openAiBaseUrl"],
            cline["cline.openAiModelId"],
            cline.get("cline.openAiApiKey"),
            cline["cline.cacheStrategy"].get("chunkSize"),
            cline["cline.requestOptions"]["temperature"],
        ),
        "ccswitch": (
            toml["provider"]["base_url"],
            toml["provider"]["model"],
            toml["provider"].get("api_key"),
            toml["cache"]["chunk_size"],
            toml["request"]["temperature"],
        ),
    }


# -- list / show / add / edit / remove / rename ------------------------------------------------


def test_list_and_show() -> None:
    init()
    add_b()
    result = cli("profile", "list")
    assert result.rc == 0, result
    assert result.out.splitlines() == [
        "* A                https://taotoken.net/api  model=gpt-4o-mini  key=keyring",
        f"  B                {B_URL}  model=llama-3-8b  key=keyring",
    ]
    shown = cli("profile", "show")
    assert shown.rc == 0 and shown.out.startswith("profile A (active)\n"), shown
    assert "  merged.chunk_size = 512\n" in shown.out
    data = json.loads(cli("profile", "show", "B", "--format", "json").out)["data"]
    assert (data["name"], data["active"], data["base_url"], data["url_convention"]) == (
        "B",
        False,
        B_URL,
        "includes-v1",
    )
    assert data["merged"] == {"url": None, "chunk_size": 1024} and data["request"]["temperature"] == 0.7
    assert cli("profile", "show", "nope").rc == 1


def test_add_from_a_preset_with_fields_and_refusals() -> None:
    init()
    before_a = table_lines("A")
    add_b("--prefill-base-url", "http://127.0.0.1:8100", "--prefix-cache", "false", "--key", "env:B_KEY")
    b = config_data()["profiles"]["B"]
    assert (b["provider"], b["base_url"], b["url_convention"], b["model"], b["key"]) == (
        "vllm",
        B_URL,
        "includes-v1",
        "llama-3-8b",
        "env:B_KEY",
    )
    assert b["split"]["prefill_base_url"] == "http://127.0.0.1:8100" and b["cache"]["prefix_cache"] is False
    assert "decode_base_url" not in b["split"]
    assert table_lines("A") == before_a
    assert config_data()["active_profile"] == "A"
    again = cli("profile", "add", "B", "--base-url", B_URL, "--model", "m")
    assert again.rc == 1 and "exists" in again.err, again
    assert cli("profile", "add", "C", "--preset", "nope", "--model", "m").rc == 2
    plain = cli("profile", "add", "C", "--base-url", B_URL, "--model", "m", "--key", KEY_A)
    assert plain.rc == 2 and "KVS213" in plain.err and KEY_A not in plain.err, plain  # a usage error
    assert cli("profile", "add", "C", "--base-url", B_URL, "--model", "m", "--max-tokens", "many").rc == 2
    assert sorted(config_data()["profiles"]) == ["A", "B"]


@pytest.mark.parametrize(
    "argv",
    [
        ("--model", "m"),
        ("--base-url", B_URL),
        ("--base-url", B_URL, "--model", "m", "--transfer-protocol", "bogus"),
    ],
    ids=["no-base-url", "no-model", "bad-protocol"],
)
def test_add_with_missing_or_invalid_fields_is_a_clear_refusal(argv: tuple[str, ...]) -> None:
    init()
    result = cli("profile", "add", "C", *argv)
    assert "Traceback" not in result.err and "internal error" not in result.err, result
    assert result.rc in (1, 2), result


def test_edit_changes_only_the_fields_given() -> None:
    init()
    add_b()
    before = config_file().read_text()
    result = cli("profile", "edit", "A", "--model", "X", "--chunk-size", "768")
    assert result.rc == 0 and "profile use A" in result.out, result
    after = config_file().read_text()
    assert after == before.replace('model = "gpt-4o-mini"', 'model = "X"').replace(
        "# merged mode: chunked prefill on one instance\nchunk_size = 512",
        "# merged mode: chunked prefill on one instance\nchunk_size = 768",
    )
    assert cli("profile", "edit", "A").rc == 2  # nothing to change
    assert cli("profile", "edit", "A", "--stream", "maybe").rc == 2
    bad = cli("profile", "edit", "A", "--temperature", "5")
    assert bad.rc == 1 and "KVS002" in bad.err and "temperature" in bad.err, bad
    assert cli("profile", "edit", "nope", "--model", "m").rc == 1
    assert config_file().read_text() == after


def test_remove_takes_the_profile_and_its_key_but_never_the_active_one(memory_keyring: dict[Any, str]) -> None:
    init(key=KEY_A)
    add_b()
    set_key("B", KEY_B)
    before_a = table_lines("A")
    result = cli("profile", "remove", "B")
    assert result.rc == 0, result
    assert "B" not in config_data()["profiles"] and table_lines("B") == []
    assert "[profiles.B" not in config_file().read_text()
    assert get_key("B") is None and get_key("A") == KEY_A
    assert table_lines("A") == before_a
    active = cli("profile", "remove", "A")
    assert active.rc == 1 and "active profile" in active.err, active
    assert "A" in config_data()["profiles"] and get_key("A") == KEY_A
    assert cli("profile", "remove", "nope").rc == 1


def test_rename_moves_the_key_and_the_active_mark(memory_keyring: dict[Any, str]) -> None:
    init(key=KEY_A)
    add_b()
    a_before = config_data()["profiles"]["A"]
    result = cli("profile", "rename", "A", "main")
    assert result.rc == 0, result
    data = config_data()
    assert data["active_profile"] == "main" and sorted(data["profiles"]) == ["B", "main"]
    assert data["profiles"]["main"] == a_before
    assert get_key("main") == KEY_A and get_key("A") is None
    assert (service_name(), "A") not in memory_keyring
    assert cli("status").rc == 0  # the clients follow the renamed profile as before
    taken = cli("profile", "rename", "B", "main")
    assert taken.rc == 1 and "exists" in taken.err, taken
    assert cli("profile", "rename", "nope", "other").rc == 1


def test_rename_keeps_the_comments_in_the_profile() -> None:
    init()
    text = config_file().read_text().replace('model = "gpt-4o-mini"', 'model = "gpt-4o-mini"   # the cheap one')
    config_file().write_text(text)
    assert cli("profile", "rename", "A", "main").rc == 0
    assert 'model = "gpt-4o-mini"   # the cheap one' in config_file().read_text()


# -- use ---------------------------------------------------------------------------------------


def test_use_dry_run_prints_a_masked_diff_and_writes_nothing(memory_keyring: dict[Any, str]) -> None:
    init(key=KEY_A)
    add_b()
    set_key("B", KEY_B)
    files = (cline_file(), ccswitch_file(), config_file())
    before = [f.read_bytes() for f in files]
    result = cli("profile", "use", "B", "--dry-run")
    assert result.rc == 0, result
    assert f"--- {cline_file()} (now)" in result.out and f"+++ {ccswitch_file()} (after)" in result.out
    assert f'+    "cline.openAiBaseUrl": "{B_URL}",' in result.out and '+model = "llama-3-8b"' in result.out
    assert KEY_A not in result.out and KEY_B not in result.out
    assert f"sk-…{KEY_B[-4:]}" in result.out
    assert "is active" not in result.out
    assert [f.read_bytes() for f in files] == before


def test_use_renders_the_profile_and_writes_the_key_0600(memory_keyring: dict[Any, str]) -> None:
    init()
    add_b()
    set_key("B", KEY_B)
    result = cli("profile", "use", "B")
    assert result.rc == 0, result
    assert "key written (file is 0600)" in result.out and "profile B is active" in result.out
    assert KEY_B not in result.out
    assert config_data()["active_profile"] == "B"
    values = client_values()
    assert values["cline"] == (B_URL, "llama-3-8b", KEY_B, 1024, 0.7)
    assert values["ccswitch"] == (B_URL, "llama-3-8b", KEY_B, 1024, 0.7)
    for path in (cline_file(), ccswitch_file()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cli("status").rc == 0
    again = cli("profile", "use", "B")
    assert again.rc == 0 and "already merged, unchanged" in again.out, again


def test_use_never_writes_a_key_into_a_file_inside_a_git_work_tree(tmp_path: Path) -> None:
    git = require_tool("git")
    init("--no-cline", key=KEY_A)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    settings = repo / ".vscode" / "settings.json"
    settings.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", settings)
    add = cli("client", "add", str(settings), "--nudge", "command", "--command", "true")
    assert add.rc == 0, add
    assert cli("profile", "use", "A").rc == 0
    assert KEY_A not in settings.read_text() and "openAiApiKey" not in settings.read_text()
    assert KEY_A in ccswitch_file().read_text()  # outside the repository: written


# -- identity: profiles never bleed into each other ---------------------------------------------


@pytest.mark.parametrize("b_key", ["keyring", "env"])
def test_switching_a_b_a_leaves_every_profile_as_it_was(
    b_key: str, memory_keyring: dict[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    init(key=KEY_A)
    if b_key == "env":
        monkeypatch.setenv("KVSWITCH_TEST_B_KEY", KEY_B)
        add_b("--key", "env:KVSWITCH_TEST_B_KEY")
    else:
        add_b()
        set_key("B", KEY_B)
    snapshot = (config_data()["profiles"], table_lines("A"), table_lines("B"), dict(memory_keyring))
    a_values = client_values()
    assert a_values["cline"] == ("https://taotoken.net/api", "gpt-4o-mini", KEY_A, 512, 0.2)

    assert cli("profile", "use", "B").rc == 0
    assert client_values()["cline"] == (B_URL, "llama-3-8b", KEY_B, 1024, 0.7)
    # the user edits a client by hand while B is active: the model there, and a chunk size
    for path, old, new in (
        (cline_file(), '"cline.openAiModelId": "llama-3-8b"', '"cline.openAiModelId": "hand-picked"'),
        (ccswitch_file(), 'model = "llama-3-8b"', 'model = "hand-picked"'),
        (ccswitch_file(), "chunk_size = 1024", "chunk_size = 2048"),
    ):
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    assert cli("profile", "use", "A").rc == 0

    assert (config_data()["profiles"], table_lines("A"), table_lines("B"), dict(memory_keyring)) == snapshot
    assert client_values() == a_values  # the clients show A's values again
    assert cli("status").rc == 0
    assert cli("profile", "use", "B").rc == 0  # and B's stored data gave B back, not the hand edit
    assert client_values()["ccswitch"] == (B_URL, "llama-3-8b", KEY_B, 1024, 0.7)


def test_editing_a_never_changes_b() -> None:
    init()
    add_b()
    b_parsed, b_lines = config_data()["profiles"]["B"], table_lines("B")
    for argv in (
        ("--model", "X"),
        ("--base-url", "http://127.0.0.1:9999/v1"),
        ("--chunk-size", "256"),
        ("--decode-base-url", "http://127.0.0.1:8200"),
        ("--stream", "false"),
    ):
        result = cli("profile", "edit", "A", *argv)
        assert result.rc == 0, result
        assert config_data()["profiles"]["B"] == b_parsed
        assert table_lines("B") == b_lines
    a = config_data()["profiles"]["A"]
    assert (a["model"], a["base_url"], a["merged"]["chunk_size"]) == ("X", "http://127.0.0.1:9999/v1", 256)
    assert a["split"]["decode_base_url"] == "http://127.0.0.1:8200" and a["request"]["stream"] is False


def test_values_remembered_under_one_profile_never_come_back_under_another() -> None:
    init()
    add_b()
    assert cli("profile", "use", "B").rc == 0  # Cline: chunkSize 1024
    assert cli("switch", "split").rc == 0  # 1024 leaves the file and is remembered
    assert cli("profile", "use", "A").rc == 0  # A (chunk size 512) rendered in split mode
    assert cli("switch", "merged").rc == 0
    assert client_values()["cline"][3] == 512
    assert cli("status").rc == 0


# -- clients -------------------------------------------------------------------------------------


def _client_files(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "work"
    work.mkdir()
    settings = work / "settings.json"
    shutil.copy(FIXTURES / "cline" / "article.json", settings)
    toml = work / "provider.toml"  # not CC Switch's name: detected by its tables
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", toml)
    return settings, toml


def test_client_add_detects_the_kind_and_leaves_the_file_alone(tmp_path: Path) -> None:
    init()
    settings, toml = _client_files(tmp_path)
    before = settings.read_bytes(), toml.read_bytes()
    # (the plain form, without --command, is test_client_add_without_a_nudge_command)
    for path, kind, product in (
        (settings, "cline", "Cline (settings.json)"),
        (toml, "ccswitch", "CC Switch (config.toml)"),
    ):
        result = cli("client", "add", str(path), "--name", f"my-{kind}", "--nudge", "command", "--command", "true")
        assert result.rc == 0, result
        assert result.out.strip() == f"registered {path} ({product})"
    assert (settings.read_bytes(), toml.read_bytes()) == before
    clients = config_data()["clients"]
    assert [(c["path"], c["kind"], c.get("name"), c.get("nudge")) for c in clients] == [
        (str(cline_file()), "article-cline", None, None),
        (str(ccswitch_file()), "article-ccswitch", None, None),
        (str(settings), "article-cline", "my-cline", {"kind": "command", "argv": ["true"]}),
        (str(toml), "article-ccswitch", "my-ccswitch", {"kind": "command", "argv": ["true"]}),
    ]
    listed = cli("client", "list")
    assert listed.rc == 0 and listed.out.splitlines()[2:] == [
        f"{settings}  (article-cline, nudge=command)",
        f"{toml}  (article-ccswitch, nudge=command)",
    ]
    twice = cli("client", "add", str(settings), "--nudge", "command", "--command", "true")
    assert twice.rc == 1 and "registered already" in twice.err, twice
    assert len(config_data()["clients"]) == 4
    assert cli("status").rc == 1  # the added files are registered, not rendered: they have drifted
    assert (settings.read_bytes(), toml.read_bytes()) == before


def test_client_add_refuses_what_is_not_a_client(tmp_path: Path) -> None:
    init()
    before = config_file().read_bytes()
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    result = cli("client", "add", str(notes), "--nudge", "command", "--command", "true")
    assert result.rc == 2 and "cannot tell which kind" in result.err, result
    missing = cli("client", "add", str(tmp_path / "nope.json"), "--nudge", "command", "--command", "true")
    assert missing.rc == 2 and "no such file" in missing.err, missing
    assert config_file().read_bytes() == before


def test_client_add_without_a_nudge_command(tmp_path: Path) -> None:
    init()
    settings, _ = _client_files(tmp_path)
    result = cli("client", "add", str(settings))
    assert result.rc == 0, result
    assert [c["path"] for c in config_data()["clients"]][-1] == str(settings)


def test_client_add_to_a_config_without_clients(tmp_path: Path) -> None:
    init("--no-cline", "--no-ccswitch")
    settings, _ = _client_files(tmp_path)
    result = cli("client", "add", str(settings), "--nudge", "command", "--command", "true")
    assert result.rc == 0, result
    assert [c["path"] for c in config_data()["clients"]] == [str(settings)]


def test_client_remove_unregisters_and_leaves_the_file(tmp_path: Path) -> None:
    init()
    before = cline_file().read_bytes()
    result = cli("client", "remove", str(cline_file()))
    assert result.rc == 0 and "the file is unchanged" in result.out, result
    assert [c["path"] for c in config_data()["clients"]] == [str(ccswitch_file())]
    assert cline_file().read_bytes() == before
    assert cli("client", "remove", str(cline_file())).rc == 1
    assert cli("switch", "split").rc == 0  # only the registered client follows
    assert cline_file().read_bytes() == before and 'mode = "split"' in ccswitch_file().read_text()
