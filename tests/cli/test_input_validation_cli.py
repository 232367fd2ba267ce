"""Inputs reach no place they should not: every command takes URLs, names, keys and values
through the one validation (kvswitch.validate), refuses bad ones with a clear message and exit 2
before anything is written or sent, normalises what lint would fix, and shows what it echoes
safely. A config that already holds a name kvswitch no longer allows still loads."""

from __future__ import annotations

import socket
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kvswitch.keys import get_key
from tests.clientenv import ccswitch_file, cli, cline_file, config_data, config_file, init

KEY = "sk-live-7f3kQ9zR2mX8vB1nL4aA"
DEAD = "http://127.0.0.1:9/v1"
HOSTILE_URLS = [
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http://127.0.0.1:99999/v1",
    "http://127.0.0.1:8000/v1\r\nX-Evil: 1",
    "http://127.0.0.1:8000/v1?model=x",
    f"http://u:{KEY}@127.0.0.1:8000/v1",
]


def snapshot() -> list[bytes]:
    return [p.read_bytes() for p in (config_file(), cline_file(), ccswitch_file())]


def test_init_stores_the_base_url_without_the_trailing_slash_the_help_forbids() -> None:
    result = cli(
        "init",
        "--profile",
        "A",
        "--base-url",
        "http://127.0.0.1:8000/v1/",
        "--model",
        "m",
        "--no-key",
    )
    assert result.rc == 0, result
    assert config_data()["profiles"]["A"]["base_url"] == "http://127.0.0.1:8000/v1"
    assert "KVS201" in result.err
    assert '"cline.openAiBaseUrl": "http://127.0.0.1:8000/v1",' in cline_file().read_text()
    assert cli("lint", str(config_file())).rc == 0


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_init_refuses_a_bad_base_url_and_writes_nothing(url: str) -> None:
    result = cli("init", "--profile", "A", "--base-url", url, "--model", "m", "--no-key")
    assert result.rc == 2, result
    assert "KVS202" in result.err and KEY not in result.err and "\r" not in result.err
    assert not config_file().exists() and not cline_file().exists()


@pytest.mark.parametrize("name", ["", "a\nb", "\x1b[31mred", "../../x", ".", "..", "x" * 5000, "a b", "a\u200bb"])
@pytest.mark.parametrize("how", ["init", "add", "rename"])
def test_a_profile_name_kvswitch_does_not_allow_is_refused_everywhere(name: str, how: str) -> None:
    if how != "init":
        init()
    before = config_file().read_bytes() if how != "init" else None
    if how == "init":
        result = cli("init", "--profile", name, "--preset", "vllm", "--model", "m", "--no-key")
    elif how == "add":
        result = cli("profile", "add", name, "--base-url", DEAD, "--model", "m")
    else:
        result = cli("profile", "rename", "A", name)
    assert result.rc == 2, result
    said = result.out + result.err
    message = said.rsplit(": error: ", 1)[-1]  # after the command's usage
    assert "profile name" in message and "\x1b" not in said and "\u200b" not in said and len(message) < 400
    if before is None:
        assert not config_file().exists()
    else:
        assert config_file().read_bytes() == before


def test_a_name_in_any_script_is_a_name() -> None:
    init()
    assert cli("profile", "add", "日本語-2", "--base-url", DEAD, "--model", "m").rc == 0
    assert cli("profile", "rename", "日本語-2", "Ελληνικά.b").rc == 0
    assert "Ελληνικά.b" in config_data()["profiles"]


def test_client_names_follow_the_same_rule() -> None:
    init()
    path = cline_file()
    result = cli("client", "add", str(path.parent / "other.json"), "--kind", "cline", "--name", "\x1b[2J")
    assert result.rc == 2 and "client name" in result.err and "\x1b" not in result.err, result


def test_profile_edit_normalises_what_lint_would_fix_and_says_so() -> None:
    init()
    result = cli("profile", "edit", "A", "--base-url", "http://127.0.0.1:8000/v1/", "--chunk-size", "700")
    assert result.rc == 0, result
    profile = config_data()["profiles"]["A"]
    assert profile["base_url"] == "http://127.0.0.1:8000/v1" and profile["merged"]["chunk_size"] == 704
    assert "KVS201" in result.err and "KVS101" in result.err and "it becomes 704" in result.err
    assert cli("lint", str(config_file())).rc == 0


@pytest.mark.parametrize(
    ("option", "value", "code"),
    [
        *(("--base-url", url, "KVS202") for url in HOSTILE_URLS),
        ("--prefill-base-url", "file:///etc/passwd", "KVS110"),
        ("--probe-url", "http://127.0.0.1:0", "KVS202"),
        ("--key", KEY, "KVS213"),
        ("--model", "m\x1b]0;pwned\x07", "KVS002"),
        ("--temperature", "nan", "KVS002"),
        ("--timeout-seconds", "inf", "KVS002"),
        ("--max-tokens", "99999999999999999999999", "KVS002"),
        ("--max-transfer-concurrency", "0", "KVS112"),
    ],
)
def test_profile_edit_refuses_a_value_lint_calls_an_error_and_writes_nothing(
    option: str, value: str, code: str
) -> None:
    init()
    before = snapshot()
    result = cli("profile", "edit", "A", option, value)
    assert result.rc == 2, result
    assert code in result.err and option in result.err
    assert KEY not in result.err and "\x1b" not in result.err and "\r" not in result.err
    assert snapshot() == before


@pytest.mark.parametrize("command", ["probe", "doctor"])
@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_probe_and_doctor_refuse_a_bad_address_before_any_connection(
    command: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[Any] = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: tried.append(a) or [])
    result = cli(command, "--base-url", url, "--model", "m")
    assert result.rc == 2, result
    assert "KVS202" in result.err and "--base-url" in result.err
    assert KEY not in result.err and "\r" not in result.err
    assert tried == []


@pytest.mark.parametrize("key", ["sk-abc\u200bdefghijklmnop", "sk-abc\ufeffdefghijklmnop", "sk-abc\u00a0defghijklmnop"])
def test_a_key_with_an_invisible_character_is_never_stored(key: str) -> None:
    init()
    before = snapshot()
    result = cli("key", "set", "A", stdin=key + "\n")
    assert result.rc == 1, result
    assert "KVS210" in result.err and "defghijk" not in result.err
    assert get_key("A") is None
    assert snapshot() == before


@pytest.mark.parametrize("command", ["probe", "doctor"])
def test_a_key_with_an_invisible_character_in_the_environment_is_a_clear_error(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvswitch.testing.sse_server import SSEServer

    monkeypatch.setenv("ZWSP_KEY", "sk-abc\u200bdefghijklmnop")
    init()
    extra = ["--runs", "1", "--warmup", "0", "--no-gpu", "--no-metrics", "--no-history"] if command == "probe" else []
    with SSEServer(ttft_ms=1, itl_ms=1, tokens=2, model="m") as server:
        result = cli(command, "--base-url", server.url, "--model", "m", "--api-key-env", "ZWSP_KEY", *extra)
    said = result.out + result.err
    assert result.rc in (0, 1), result  # probe: refused; doctor: the key is named in its auth check
    assert "Traceback" not in said and "internal error" not in said
    assert "U+200B" in said and "defghijk" not in said
    if command == "probe":
        assert server.requests == {} or sum(server.requests.values()) == 0  # nothing was sent


def test_a_config_with_names_kvswitch_no_longer_allows_still_loads_and_says_how_to_rename() -> None:
    init()
    path = config_file()
    text = path.read_text(encoding="utf-8").replace("[profiles.A", '[profiles."A\\u001b[31m"')
    text = text.replace('active_profile = "A"', 'active_profile = "A\\u001b[31m"')
    path.write_text(text, encoding="utf-8")
    listed = cli("profile", "list")
    assert listed.rc == 0, listed
    assert "\x1b" not in listed.out and "'A\\x1b[31m'" in listed.out
    lint = cli("lint", str(path))
    assert lint.rc == 0, lint  # a warning: the config still loads
    assert "KVS006" in lint.out and "kvswitch profile rename $'A\\x1b[31m' NEW" in lint.out
    assert "\x1b" not in lint.out
    renamed = cli("profile", "rename", "A\x1b[31m", "A")
    assert renamed.rc == 0 and "\x1b" not in renamed.out, renamed
    assert tomllib.loads(path.read_text())["active_profile"] == "A"
    assert "KVS006" not in cli("lint", str(path)).out


def test_a_hostile_file_name_is_shown_escaped_in_errors(tmp_path: Path) -> None:
    result = cli("lint", str(tmp_path / "x\x1b[31m.json"))
    assert result.rc == 2 and "\x1b" not in result.err and "x\\x1b[31m.json" in result.err, result


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http://127.0.0.1:99999/v1",
        "http://127.0.0.1:9/v1?x=1",
        "http://u:p@127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1\r\nX: 1",
    ],
)
def test_probe_refuses_a_bad_endpoint_url_before_any_connection(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_connect(self: socket.socket, address: object) -> None:
        raise AssertionError(f"connected to {address}")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    result = cli("probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--endpoint", f"split={url}")
    assert result.rc == 2, result
    assert "--endpoint split=" in result.err and "KVS202" in result.err
    assert "\r" not in result.err and "\x1b" not in result.err
