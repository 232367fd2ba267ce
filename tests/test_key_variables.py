"""Keys the real clients' way (issue 11, point 6): Codex and OpenCode read the key from a
variable their file names. For a keyring profile that is ``KVSWITCH_KEY_<PROFILE>``;
``kvswitch status`` and ``kvswitch doctor`` say when it is unset here (with the export line,
the key masked) or set to another key, and never show the whole key. For ``env:NAME`` the
variable is NAME. Clients that keep the key in their file (Claude Code, Cline, Qwen Code, the
article's shapes) and OpenCode with ``--write-key`` read no variable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kvswitch.config import read_config
from kvswitch.key_variables import key_variables
from tests.clientenv import KEY_A, KEY_B, cli, init

VAR = "KVSWITCH_KEY_WORK"
MASK_A = f"{KEY_A[:3]}…{KEY_A[-4:]}"
MASK_B = f"{KEY_B[:3]}…{KEY_B[-4:]}"


@pytest.fixture(autouse=True)
def no_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.delenv("MY_TEAM_KEY", raising=False)


OFFLINE = [
    arg
    for check in ("reachable", "url-convention", "auth", "model", "split", "prefix-cache", "nvidia-smi", "same-gpu")
    for arg in ("--skip", check)
]
"""doctor without the checks that need a server or a GPU."""


def home() -> Path:
    return Path(os.environ["HOME"])


def register(*kinds: tuple[str, str], extra: tuple[str, ...] = ()) -> None:
    for kind, rel in kinds:
        added = cli("client", "add", str(home() / rel), "--kind", kind, *extra)
        assert added.rc == 0, added
    used = cli("profile", "use", "work")
    assert used.rc == 0, used


CODEX = ("codex", ".codex/config.toml")
OPENCODE = ("opencode", ".config/opencode/opencode.json")
CLAUDE = ("claude-code", ".claude/settings.json")


def test_status_and_doctor_print_the_masked_export_line_while_the_variable_is_unset() -> None:
    init(profile="work", key=KEY_A)
    register(CODEX, OPENCODE, CLAUDE)
    assert f'env_key = "{VAR}"' in (home() / CODEX[1]).read_text()
    assert f'"{{env:{VAR}}}"' in (home() / OPENCODE[1]).read_text()
    status = cli("status")
    assert status.rc == 0, status  # the clients are in sync; the variable is a separate line
    assert (
        f"key variable {VAR}: unset · {VAR} is not set in this environment: "
        "Codex and OpenCode read "
        "profile work's key from it"
    ) in status.out
    assert (
        f"    export {VAR}={MASK_A} (the key stored for profile work): export {VAR}="
        f'"$(kvswitch key get work --reveal)"' in status.out
    )
    doctor = cli("doctor", "--format", "json", *OFFLINE)
    check = next(c for c in json.loads(doctor.out)["data"]["checks"] if c["name"] == "key-variables")
    assert check["status"] == "warn" and f"{VAR} is not set" in check["saw"]
    assert check["fix"].startswith(f"export {VAR}={MASK_A} ")
    for text in (status.out, status.err, doctor.out, doctor.err):
        assert KEY_A not in text


def test_set_to_the_key_is_ok_and_set_to_another_says_so_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    init(profile="work", key=KEY_A)
    register(CODEX)
    monkeypatch.setenv(VAR, KEY_A)
    status = cli("status")
    assert f"key variable {VAR}: ok · {VAR} is set to profile work's key ({MASK_A}): Codex reads the key" in status.out
    monkeypatch.setenv(VAR, KEY_B)
    status = cli("status", "--format", "json")
    [variable] = json.loads(status.out)["data"]["key_variables"]
    assert (variable["name"], variable["state"], variable["value"], variable["key"]) == (
        VAR,
        "differs",
        MASK_B,
        MASK_A,
    )
    assert variable["clients"] == ["Codex"] and variable["export"] == f"export {VAR}={MASK_A}"
    assert (
        f"{VAR} holds {MASK_B}, not the key stored for profile work ({MASK_A}): Codex sends that one" in variable["saw"]
    )
    assert KEY_A not in status.out and KEY_B not in status.out
    doctor = cli("doctor", *OFFLINE)
    assert "WARN  key-variables" in doctor.out and KEY_A not in doctor.out and KEY_B not in doctor.out


def test_no_key_stored_says_to_store_one_first() -> None:
    init(profile="work")  # --no-key: the keyring, with nothing stored yet
    register(CODEX)
    status = cli("status")
    assert f"key variable {VAR}: no-key · {VAR} is not set, and no key is stored for profile work" in status.out
    assert "    kvswitch key set work, then export" in status.out


def test_an_env_profile_names_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    init(profile="work")
    assert cli("profile", "edit", "work", "--key", "env:MY_TEAM_KEY").rc == 0
    register(CODEX, OPENCODE)
    assert 'env_key = "MY_TEAM_KEY"' in (home() / CODEX[1]).read_text()
    status = cli("status")
    assert "key variable MY_TEAM_KEY: unset · MY_TEAM_KEY is not set in this environment" in status.out
    assert "    export MY_TEAM_KEY=YOUR_KEY in the shell Codex and OpenCode start from" in status.out
    monkeypatch.setenv("MY_TEAM_KEY", KEY_B)
    [variable] = key_variables(read_config())
    assert variable.ok and variable.value == MASK_B and variable.export is None
    assert KEY_B not in json.dumps(variable.as_dict())


def test_clients_that_keep_the_key_in_their_file_read_no_variable() -> None:
    init(profile="work", key=KEY_A)
    register(
        CLAUDE,
        ("cline-providers", ".cline/data/settings/providers.json"),
        ("qwen-code", ".qwen/settings.json"),
    )
    register(OPENCODE, extra=("--write-key",))  # OpenCode with the key in its file
    assert key_variables(read_config()) == []
    status = cli("status")
    assert "key variable" not in status.out
    assert json.loads(cli("status", "--format", "json").out)["data"]["key_variables"] == []


def test_a_profile_without_a_key_has_no_variable() -> None:
    init(profile="work")
    assert cli("profile", "edit", "work", "--key", "none").rc == 0
    register(CODEX)
    assert "env_key" not in (home() / CODEX[1]).read_text()
    assert key_variables(read_config()) == []


def test_the_library_reads_the_environment_it_is_given() -> None:
    init(profile="work", key=KEY_A)
    register(CODEX)
    config = read_config()
    [unset] = key_variables(config, {})
    [ok] = key_variables(config, {VAR: KEY_A})
    [other] = key_variables(config, {VAR: KEY_B})
    assert (unset.state, ok.state, other.state) == ("unset", "ok", "differs")
    assert unset.export == f"export {VAR}={MASK_A}" and unset.value is None
