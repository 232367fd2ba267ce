"""``kvswitch key set|get|delete PROFILE``: the OS keyring, masked output, refusals that
store nothing and never echo the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import json5
import pytest

from kvswitch.cli import main
from kvswitch.keys import service_name
from tests.helpers.cli import Run

KEY = "sk-KEYCLITEST-0123456789abcd"
MASKED = "sk-…abcd"


@pytest.fixture
def kv(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    run = Run(capsys, monkeypatch)
    assert run("init", "--preset", "taotoken", "--model", "m", "--no-key") == 0
    return run


def cline_file() -> Path:
    return Path(os.environ["HOME"]) / ".cline" / "settings.json"


def test_set_from_stdin_then_get_masked(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("key", "set", "taotoken", stdin=KEY + "\n") == 0
    assert memory_keyring == {(service_name(), "taotoken"): KEY}
    assert KEY not in kv.out + kv.err
    assert f"stored the key for taotoken ({MASKED}) in the OS keyring" in kv.out
    assert kv("key", "get", "taotoken") == 0
    assert kv.out == MASKED + "\n" and kv.err == ""
    assert kv("key", "get", "taotoken", "--reveal") == 0
    assert kv.out == KEY + "\n"


def test_set_without_a_trailing_newline_and_with_stdin_flag(
    kv: Run, memory_keyring: dict[tuple[str, str], str]
) -> None:
    assert kv("key", "set", "taotoken", "--stdin", stdin=KEY) == 0
    assert memory_keyring[(service_name(), "taotoken")] == KEY


def test_set_replaces_the_key(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("key", "set", "taotoken", stdin=KEY + "\n") == 0
    assert kv("key", "set", "taotoken", stdin="sk-SECOND-0123456789wxyz\n") == 0
    assert memory_keyring == {(service_name(), "taotoken"): "sk-SECOND-0123456789wxyz"}
    assert kv("key", "get", "taotoken") == 0 and kv.out == "sk-…wxyz\n"


@pytest.mark.parametrize(
    "bad",
    [
        "sk-你的TaoToken Key",  # the article's placeholder
        "<your-key>",
        "your-api-key",
        " " + KEY,
        KEY + " ",
        KEY + "\r",  # a CRLF paste: the line ends in \r
        KEY[:10] + " " + KEY[10:],
        "",
    ],
)
def test_set_refuses_bad_keys_and_stores_nothing(kv: Run, bad: str, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("key", "set", "taotoken", stdin=bad + "\n") == 1
    assert memory_keyring == {}
    printed = kv.out + kv.err
    assert kv.err.startswith("kvswitch: ")
    for part in bad.split():
        if len(part) >= 5:
            assert part not in printed
    assert kv("key", "get", "taotoken") == 1


def test_a_refused_key_keeps_the_previous_one(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("key", "set", "taotoken", stdin=KEY + "\n") == 0
    assert kv("key", "set", "taotoken", stdin="<your-key>\n") == 1
    assert memory_keyring == {(service_name(), "taotoken"): KEY}


def test_delete_then_get_fails(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("key", "set", "taotoken", stdin=KEY + "\n") == 0
    assert kv("key", "delete", "taotoken") == 0
    assert "deleted the key of taotoken" in kv.out
    assert memory_keyring == {}
    assert kv("key", "get", "taotoken") == 1
    assert "no key for taotoken" in kv.err and kv.out == ""
    assert kv("key", "get", "taotoken", "--reveal") == 1
    assert kv("key", "delete", "taotoken") == 1
    assert "no key stored for taotoken" in kv.err


def test_unknown_profile(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    for args in (("set", "nosuch"), ("get", "nosuch"), ("delete", "nosuch")):
        assert kv("key", *args, stdin=KEY + "\n") == 1, args
        assert "no profile 'nosuch'" in kv.err and KEY not in kv.out + kv.err
    assert memory_keyring == {}


def test_key_usage_errors(kv: Run) -> None:
    assert kv("key") == 2
    assert kv("key", "get") == 2
    assert kv("key", "show", "taotoken") == 2


def test_an_env_profile_refuses_key_set(
    kv: Run, monkeypatch: pytest.MonkeyPatch, memory_keyring: dict[tuple[str, str], str]
) -> None:
    assert kv("profile", "add", "envprof", "--preset", "vllm", "--model", "q", "--key", "env:KVS_CLI_KEY") == 0
    assert kv("key", "set", "envprof", stdin=KEY + "\n") == 1
    assert "env:KVS_CLI_KEY" in kv.err and "not the keyring" in kv.err
    assert KEY not in kv.out + kv.err
    assert memory_keyring == {}
    # get follows the reference
    assert kv("key", "get", "envprof") == 1
    assert "no key for envprof (env:KVS_CLI_KEY)" in kv.err
    monkeypatch.setenv("KVS_CLI_KEY", KEY)
    assert kv("key", "get", "envprof") == 0 and kv.out == MASKED + "\n"
    assert kv("key", "get", "envprof", "--reveal") == 0 and kv.out == KEY + "\n"


def test_set_apply_renders_the_key_into_the_clients(kv: Run) -> None:
    assert "cline.openAiApiKey" not in json5.loads(cline_file().read_text())
    assert kv("key", "set", "taotoken", "--apply", stdin=KEY + "\n") == 0
    assert KEY not in kv.out + kv.err
    assert json5.loads(cline_file().read_text())["cline.openAiApiKey"] == KEY
    assert cline_file().stat().st_mode & 0o777 == 0o600
    assert kv("status", "--format", "json") == 0
    assert KEY not in kv.out
    assert {c["key"] for c in json.loads(kv.out)["data"]["clients"]} == {MASKED}


def test_key_help_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["key", "get", "--help"]) == 0
    assert "--reveal" in capsys.readouterr().out
