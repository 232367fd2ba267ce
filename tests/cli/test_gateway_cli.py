"""``kvswitch gateway pin|unpin`` as the CLI renders them, what ``switch`` says about pinned
clients with no gateway running, and the command's usage errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvswitch.config import read_config
from kvswitch.gateway.token import TOKEN_VARIABLE, load_token
from tests.clientenv import KEY_A, cli, init

CODEX = ("codex", ".codex/config.toml")
CLAUDE = ("claude-code", ".claude/settings.json")


def home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture(autouse=True)
def clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    init(profile="work", key=KEY_A)
    for kind, rel in (CODEX, CLAUDE):
        added = cli("client", "add", str(home() / rel), "--kind", kind)
        assert added.rc == 0, added
    assert cli("profile", "use", "work").rc == 0


def test_pin_renders_the_changes_and_the_masked_export_line() -> None:
    codex = home() / CODEX[1]
    before = codex.read_bytes()
    dry = cli("gateway", "pin", "--dry-run")
    assert dry.rc == 0, dry
    assert f"--- {codex} (now)" in dry.out and "127.0.0.1:18090" in dry.out
    assert codex.read_bytes() == before  # a dry run writes nothing
    assert load_token(read_config()) is None  # and stores no token
    pinned = cli("gateway", "pin")
    assert pinned.rc == 0, pinned
    token = load_token(read_config())
    assert token is not None
    assert f"{codex}: " in pinned.out and "pinned 2 clients" in pinned.out
    assert f"Codex reads the gateway's token from ${TOKEN_VARIABLE}; set it where you start it:" in pinned.out
    assert f'  export {TOKEN_VARIABLE}="$(kvswitch gateway token --reveal)"   # {token[:3]}…{token[-4:]}' in pinned.out
    assert "the gateway is not running: start it with kvswitch gateway --detach" in pinned.out
    for text in (dry.out, dry.err, pinned.out, pinned.err):
        assert token not in text and KEY_A not in text


def test_switch_with_pinned_clients_and_no_gateway_says_when_they_get_the_mode() -> None:
    assert cli("gateway", "pin", "codex").rc == 0
    codex = home() / CODEX[1]
    before = codex.read_bytes()
    switched = cli("switch", "split")
    assert switched.rc == 0, switched
    assert "the gateway is not running; pinned clients get split when it starts" in switched.out
    assert codex.read_bytes() == before  # a pinned file holds the gateway, in any mode
    assert read_config().model.mode == "split"  # what a gateway started now takes


def test_switch_without_pinned_clients_or_gateway_says_nothing_of_it() -> None:
    switched = cli("switch", "split")
    assert switched.rc == 0, switched
    assert "gateway" not in switched.out


def test_unpin_puts_the_direct_form_back() -> None:
    codex = home() / CODEX[1]
    direct = codex.read_bytes()
    assert cli("gateway", "pin", "codex").rc == 0
    assert codex.read_bytes() != direct
    unpinned = cli("gateway", "unpin", "codex")
    assert unpinned.rc == 0, unpinned
    assert "unpinned 1 client" in unpinned.out and "export" not in unpinned.out
    assert codex.read_bytes() == direct


def test_status_without_a_gateway_names_the_pinned_clients() -> None:
    assert cli("gateway", "pin", "codex").rc == 0
    st = cli("gateway", "status")
    assert st.rc == 1
    assert st.out.startswith("the gateway is not running (kvswitch gateway --detach starts it)\n")
    assert "pinned clients, which need it: " in st.out and ".codex/config.toml" in st.out


@pytest.mark.parametrize(
    "argv",
    [
        ("gateway", "run", "--port", "70000"),
        ("gateway", "--port", "-1"),
        ("gateway", "run", "--port", "x"),
        ("gateway", "sideways"),
        ("gateway", "status", "--format", "yaml"),
    ],
)
def test_usage_errors_exit_2(argv: tuple[str, ...]) -> None:
    got = cli(*argv)
    assert got.rc == 2, got


def test_gateway_token_is_masked_unless_revealed() -> None:
    none_yet = cli("gateway", "token")
    assert none_yet.rc == 1 and "no token yet" in none_yet.err
    assert cli("gateway", "pin", "codex").rc == 0
    token = load_token(read_config())
    assert token is not None
    masked = cli("gateway", "token")
    assert masked.rc == 0 and token not in masked.out and masked.out.strip() == f"{token[:3]}…{token[-4:]}"
    revealed = cli("gateway", "token", "--reveal")
    assert revealed.rc == 0 and revealed.out.strip() == token


def test_status_shows_pinned_clients_as_via_the_gateway() -> None:
    assert cli("gateway", "pin", "codex").rc == 0
    st = cli("status")
    codex = home() / CODEX[1]
    line = next(x for x in st.out.splitlines() if x.startswith(f"- {codex}"))
    assert "via the gateway (not running" in line and "pinned" in line, st.out
    claude = next(x for x in st.out.splitlines() if x.startswith(f"- {home() / CLAUDE[1]}"))
    assert "via the gateway" not in claude and "mode merged" in claude
    import json

    data = json.loads(cli("status", "--format", "json").out)["data"]
    routes = {c["kind"]: (c["route"], c["gateway_running"]) for c in data["clients"]}
    assert routes["codex"] == ("gateway", False) and routes["claude-code"] == ("direct", None)
    assert all(route == "direct" for kind, (route, _) in routes.items() if kind != "codex")


def test_switching_a_pinned_file_by_its_path_is_refused() -> None:
    assert cli("gateway", "pin", "codex").rc == 0
    codex = home() / CODEX[1]
    before = codex.read_bytes()
    refused = cli("switch", "split", str(codex))
    assert refused.rc == 1, refused
    assert "pinned to the gateway" in refused.err and "Nothing was changed" in refused.err
    assert codex.read_bytes() == before
