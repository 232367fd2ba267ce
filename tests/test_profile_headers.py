"""A profile's extra headers (``[profiles.P.headers]``, issue 12 point 2): ``profile use``
writes them into each real client's own header setting (the user's other headers kept), a
mode switch never does, drift reports ``provider.headers``; ``profile edit --header`` and
``--no-header`` change them; a credential, ``X-Cache-Mode``, a bad name, a line break or
a key pasted into a value is refused with its place, never echoed, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvswitch.clients import status
from kvswitch.document import parse_config
from kvswitch.kinds import get_kind
from kvswitch.kinds.real import RealKind
from kvswitch.validate import HEADERS_MAX, header_problem
from tests.clientenv import KEY_A, KEY_B, cli, config_data, config_file
from tests.kinds.kindenv import CLIENTS, add, place, set_profile, setup

REAL = sorted(CLIENTS)
WANT = {"X-Team": "infra", "X-Trace": "on"}


def _ok(*argv: str) -> str:
    result = cli(*argv)
    assert result.rc == 0, result
    return result.out


def _headers(kind_id: str, path: Path) -> dict[str, str]:
    kind = get_kind(kind_id)
    assert isinstance(kind, RealKind)
    return kind.extra_headers(parse_config(path.read_bytes(), kind_id, path).data)


def _mode_header(kind_id: str, path: Path) -> str | None:
    kind = get_kind(kind_id)
    assert isinstance(kind, RealKind)
    return kind.header(parse_config(path.read_bytes(), kind_id, path).data)


def _client(kind_id: str) -> Path:
    setup()
    path = place(kind_id)
    add(path)
    return path


# -- rendering ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind_id", REAL)
def test_profile_use_writes_the_headers_into_each_real_client(kind_id: str) -> None:
    path = _client(kind_id)
    before = _headers(kind_id, path)  # the user's own (the fixtures' X-Team: a, where any)
    set_profile({("headers",): dict(WANT)})
    _ok("profile", "use", "A")
    got = _headers(kind_id, path)
    assert {k: got.get(k) for k in WANT} == WANT
    assert {k: v for k, v in got.items() if k not in WANT} == {k: v for k, v in before.items() if k not in WANT}
    assert _mode_header(kind_id, path) == "merged"
    (st,) = status().clients
    assert st.in_sync and "provider.headers" not in st.drift
    # a mode flip keeps them, both ways
    _ok("switch", "split")
    assert _headers(kind_id, path) == got and _mode_header(kind_id, path) == "split"
    _ok("switch", "merged")
    assert _headers(kind_id, path) == got


def test_claude_code_headers_are_lines_of_its_custom_headers_the_users_kept() -> None:
    path = _client("claude-code")
    set_profile({("headers",): {"X-Org": "ops", "x-team": "infra"}})
    _ok("profile", "use", "A")
    lines = json.loads(path.read_text())["env"]["ANTHROPIC_CUSTOM_HEADERS"].splitlines()
    # the fixture's X-Team line is replaced in place (names ignore case), X-Trace kept
    assert lines == ["x-team: infra", "X-Trace: on", "X-Org: ops", "X-Cache-Mode: merged"] or lines == [
        "x-team: infra",
        "X-Trace: on",
        "X-Cache-Mode: merged",
        "X-Org: ops",
    ], lines
    assert sum(1 for ln in lines if ln.lower().startswith("x-team:")) == 1


@pytest.mark.parametrize("kind_id", REAL)
def test_a_switch_never_writes_headers_and_drift_reports_them(kind_id: str) -> None:
    path = _client(kind_id)
    _ok("profile", "use", "A")
    set_profile({("headers",): {"X-Org": "ops"}})
    before = _headers(kind_id, path)
    assert "X-Org" not in before
    (st,) = status().clients
    assert "provider.headers" in st.drift and not st.in_sync
    _ok("switch", "split")
    assert _headers(kind_id, path) == before  # a mode switch: only the URL and X-Cache-Mode
    (st,) = status().clients
    assert st.drift == ["provider.headers"], st.drift
    result = cli("status", "--format", "json")
    assert result.rc == 1  # a client out of step is a finding
    assert json.loads(result.out)["data"]["clients"][0]["drift"] == ["provider.headers"]
    _ok("profile", "use", "A")
    assert _headers(kind_id, path)["X-Org"] == "ops" and _mode_header(kind_id, path) == "split"
    (st,) = status().clients
    assert st.in_sync, st.drift


def test_without_headers_profile_use_leaves_the_users_headers_as_they_are() -> None:
    path = _client("qwen-code")
    before = _headers("qwen-code", path)
    assert before == {"X-Team": "a"}
    _ok("profile", "use", "A")
    assert _headers("qwen-code", path) == before
    assert "headers" not in config_data()["profiles"]["A"]


# -- profile edit --header / --no-header, profile show ---------------------------------------


def test_profile_edit_sets_replaces_and_removes_headers() -> None:
    setup()
    out = _ok("profile", "edit", "A", "--header", "X-Team=infra", "--header", "X-Trace = on")
    assert "profile A updated" in out
    assert config_data()["profiles"]["A"]["headers"] == WANT
    _ok("profile", "edit", "A", "--header", "x-team=ops", "--no-header", "x-trace")
    assert config_data()["profiles"]["A"]["headers"] == {"X-Team": "ops"}  # the first spelling kept
    result = cli("profile", "edit", "A", "--no-header", "X-Team")
    assert result.rc == 0, result
    assert "keep X-Team until you remove it there" in result.err
    assert "headers" not in config_data()["profiles"]["A"]
    assert "[profiles.A.headers]" not in config_file().read_text()


def test_profile_add_takes_headers_and_refuses_a_credential() -> None:
    setup()
    _ok(
        "profile",
        "add",
        "W",
        "--base-url",
        "http://127.0.0.1:9000/v1",
        "--model",
        "m",
        "--key",
        "none",
        "--header",
        "X-Team=infra",
    )
    assert config_data()["profiles"]["W"]["headers"] == {"X-Team": "infra"}
    before = config_file().read_bytes()
    result = cli(
        "profile",
        "add",
        "V",
        "--base-url",
        "http://127.0.0.1:9000/v1",
        "--model",
        "m",
        "--key",
        "none",
        "--header",
        f"Authorization=Bearer {KEY_A}",
    )
    assert result.rc == 2 and "carries a credential" in result.err and KEY_A not in result.err
    assert config_file().read_bytes() == before


def test_profile_show_lists_the_headers_text_and_json() -> None:
    setup()
    _ok("profile", "edit", "A", "--header", "X-Team=infra")
    assert '  headers.X-Team = "infra"' in _ok("profile", "show", "A").splitlines()
    assert json.loads(_ok("profile", "show", "A", "--format", "json"))["data"]["headers"] == {"X-Team": "infra"}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--header", f"X-Team={KEY_A}"], "its value looks like an API key"),
        (["--header", f"X-Team=team=a;k={KEY_A}"], "its value looks like an API key"),
        (["--header", f"Authorization=Bearer {KEY_A}"], "header Authorization carries a credential"),
        (["--header", f"X-Api-Key={KEY_A}"], "header X-Api-Key carries a credential"),
        (["--header", "X-Auth-Token=abc"], "carries a credential"),
        (["--header", "X-Client-Secret=abc"], "carries a credential"),
        (["--header", "Cookie=a=b"], "carries a credential"),
        (["--header", "X-Cache-Mode=split"], "kvswitch sets it per mode"),
        (["--header", "X-Team=a\r\nX-Evil: 1"], "line break or control character"),
        (["--header", "X-Team=\x1b[31mred"], "line break or control character"),
        (["--header", "X Team=a"], "is not a valid HTTP header name"),
        (["--header", "X:Team=a"], "is not a valid HTTP header name"),
        (["--header", "X-Team"], "give NAME=VALUE"),
        (["--header", "=a"], "give NAME=VALUE"),
        (["--no-header", "X-Nope"], "sends no header 'X-Nope'"),
    ],
)
def test_profile_edit_refuses_a_bad_header_without_echoing_it(argv: list[str], says: str) -> None:
    setup()
    _ok("profile", "edit", "A", "--header", "X-Keep=yes")
    before = config_file().read_bytes()
    result = cli("profile", "edit", "A", *argv)
    assert result.rc == 2, result
    assert says in result.err
    for secret in (KEY_A, "X-Evil", "\x1b", "\r"):
        assert secret not in result.err + result.out
    assert config_file().read_bytes() == before


def test_more_than_the_most_headers_is_refused_and_nothing_written() -> None:
    setup()
    argv = [a for i in range(HEADERS_MAX) for a in ("--header", f"X-H{i}=v")]
    _ok("profile", "edit", "A", *argv)
    before = config_file().read_bytes()
    result = cli("profile", "edit", "A", "--header", "X-One-Too-Many=v")
    assert result.rc == 1, result
    assert f"{HEADERS_MAX + 1} headers (at most {HEADERS_MAX})" in result.err
    assert config_file().read_bytes() == before


# -- headers written into kvswitch.toml by hand -------------------------------------------------


@pytest.mark.parametrize(
    ("table", "says"),
    [
        (f'"X-Api-Key" = "{KEY_A}"', "header X-Api-Key carries a credential"),
        (f'Authorization = "Bearer {KEY_A}"', "header Authorization carries a credential"),
        (f'X-Team = "{KEY_B}"', "header X-Team: its value looks like an API key"),
        ('X-Team = "a\\r\\nX-Evil: 1"', "header X-Team: its value has a line break"),
        ('"X-Cache-Mode" = "split"', "header X-Cache-Mode: kvswitch sets it per mode"),
        ('"X Team" = "a"', "header name 'X Team' is not a valid HTTP header name"),
        ('X-Team = "a"\nx-team = "b"', "header x-team is given twice"),
    ],
)
def test_a_bad_header_in_kvswitch_toml_is_refused_with_its_place(table: str, says: str) -> None:
    path = _client("claude-code")
    _ok("profile", "use", "A")
    text = config_file().read_text()
    hostile = text.replace("[[clients]]", f"[profiles.A.headers]\n{table}\n\n[[clients]]", 1)
    config_file().write_text(hostile)
    line = hostile.splitlines().index("[profiles.A.headers]") + 1
    before = path.read_bytes(), config_file().read_bytes()
    for argv in (("status",), ("profile", "use", "A"), ("switch", "split"), ("profile", "show")):
        result = cli(*argv)
        assert result.rc == 1, (argv, result)
        assert f"{config_file()}:{line}:1: profiles.A.headers: {says}" in result.err, result.err
        for secret in (KEY_A, KEY_B, "X-Evil", "\r", "validation error", "pydantic"):
            assert secret not in result.err + result.out, secret
    assert (path.read_bytes(), config_file().read_bytes()) == before


def test_a_header_value_that_is_not_text_is_refused_with_its_line() -> None:
    _client("codex")
    text = config_file().read_text()
    config_file().write_text(text.replace("[[clients]]", "[profiles.A.headers]\nX-Team = 5\n\n[[clients]]", 1))
    result = cli("status")
    assert result.rc == 1 and "headers" in result.err
    assert f"{config_file()}:" in result.err


# -- the rule itself --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Team", "infra"),
        ("X-Trace", "on"),
        ("X-Request-Source", "kvswitch/1.0 (linux)"),
        ("OpenAI-Project", "proj_abc"),
        ("X-Empty", ""),
        ("x-lower", "a b c"),
    ],
)
def test_plain_headers_are_kept(name: str, value: str) -> None:
    assert header_problem(name, value) is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Proxy-Authorization", "x"),
        ("X-Goog-Api-Key", "x"),
        ("api-key", "x"),
        ("X-Session-Token", "x"),
        ("X-Password", "x"),
        ("x-cache-mode", "merged"),
        ("", "x"),
        ("X\u200bTeam", "x"),
        ("X-Team", "a\nb"),
        ("X-Team", "a\u2028b"),
        ("X-Team", "x" * 1001),
        ("X-Team", KEY_A),
        ("X-Team", f"Bearer {KEY_B}"),
    ],
)
def test_bad_headers_are_refused_and_the_reason_never_holds_the_value(name: str, value: str) -> None:
    problem = header_problem(name, value)
    assert problem is not None
    if value not in ("x", "merged"):
        assert value not in problem


def test_import_leaves_out_a_key_pasted_into_a_header_value(sandbox: Path) -> None:
    path = sandbox / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    headers: dict[str, Any] = {"X-Ok": "fine", "X-Team": KEY_A}
    path.write_text(
        json.dumps(
            {
                "security": {"auth": {"baseUrl": "http://127.0.0.1:1/v1"}},
                "model": {"name": "m", "generationConfig": {"customHeaders": headers}},
            }
        )
    )
    result = cli("import", "qwen-code")
    assert result.rc == 0, result
    assert config_data()["profiles"]["qwen-code"]["headers"] == {"X-Ok": "fine"}
    assert "not imported: header X-Team: its value looks like an API key" in result.out + result.err
    assert KEY_A not in result.out + result.err + config_file().read_text()
