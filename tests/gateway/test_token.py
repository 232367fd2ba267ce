"""The gateway's local token (issue 13, point 9): made once into the keyring, or read from
the variable ``[gateway] token = "env:NAME"`` names; never a placeholder, never echoed."""

from __future__ import annotations

import pytest

from kvswitch.config import edit_config, read_config
from kvswitch.edits import Set
from kvswitch.errors import ConfigValidationError
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.token import (
    TOKEN_ACCOUNT,
    TOKEN_PREFIX,
    TOKEN_VARIABLE,
    ensure_token,
    load_token,
    new_token,
    token_variable,
)
from kvswitch.keys import check_key, service_name
from tests.kinds.kindenv import setup


def _token_setting(value: str) -> None:
    edit_config([Set(("gateway", "token"), value)], read_config())


def test_keyring_token_is_made_once_stored_and_kept(memory_keyring: dict[tuple[str, str], str]) -> None:
    setup()
    config = read_config()
    assert load_token(config) is None
    token = ensure_token(config)
    assert memory_keyring[(service_name(), TOKEN_ACCOUNT)] == token
    assert token.startswith(TOKEN_PREFIX) and len(token) >= len(TOKEN_PREFIX) + 43  # 32 random bytes
    check_key(token)  # a header can carry it, and no check takes it for a placeholder
    assert ensure_token(config) == token and load_token(config) == token
    assert token_variable(config) == TOKEN_VARIABLE
    # the profile's own key is another entry: the token never replaces it
    assert (service_name(), "A") in memory_keyring and memory_keyring[(service_name(), "A")] != token


def test_new_tokens_differ() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50


def test_env_token_is_read_from_its_variable(
    monkeypatch: pytest.MonkeyPatch, memory_keyring: dict[tuple[str, str], str]
) -> None:
    setup()
    _token_setting("env:MY_GW_TOKEN")
    config = read_config()
    assert token_variable(config) == "MY_GW_TOKEN"
    monkeypatch.delenv("MY_GW_TOKEN", raising=False)
    assert load_token(config) is None
    with pytest.raises(GatewayError, match=r"\$MY_GW_TOKEN is not set"):
        ensure_token(config)
    assert (service_name(), TOKEN_ACCOUNT) not in memory_keyring  # nothing made behind the user's back
    monkeypatch.setenv("MY_GW_TOKEN", "tok-0123456789abcdef")
    assert ensure_token(config) == "tok-0123456789abcdef"


def test_a_bad_reference_or_value_is_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    setup()
    path = read_config().path
    path.write_text(path.read_text() + '\n[gateway]\ntoken = "kvsgw-pasted-token-value"\n')
    with pytest.raises(ConfigValidationError, match=r"kvswitch.toml:\d+:\d+: gateway.token") as bad:
        read_config()  # refused where it stands, with its place, before any use
    assert "pasted-token-value" not in str(bad.value)
    path.write_text(path.read_text().replace('\n[gateway]\ntoken = "kvsgw-pasted-token-value"\n', ""))
    _token_setting("env:MY_GW_TOKEN")
    monkeypatch.setenv("MY_GW_TOKEN", "tok-secretvalue\u200b")
    with pytest.raises(GatewayError) as exc:
        load_token(read_config())
    assert "secretvalue" not in str(exc.value) and "MY_GW_TOKEN" in str(exc.value)
