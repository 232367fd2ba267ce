"""The gateway's local token: what pinned clients send instead of the upstream key.

It lives where ``[gateway] token`` says: ``"keyring"`` (the OS keyring, under
:data:`TOKEN_ACCOUNT`, made at the first pin) or ``"env:NAME"`` (the user's variable). It is
not the profile's key: the gateway drops it and sends the profile's key upstream. Never
printed unmasked, never written to kvswitch's config.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import TYPE_CHECKING

from kvswitch.gateway.errors import GatewayError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.config import Config

__all__ = [
    "TOKEN_ACCOUNT",
    "TOKEN_PREFIX",
    "TOKEN_VARIABLE",
    "ensure_token",
    "load_token",
    "new_token",
    "token_variable",
]

TOKEN_ACCOUNT = "gateway:token"
"""The keyring account of the token (``:`` is never in a profile name, so no profile's key
can be taken for it)."""

TOKEN_VARIABLE = "KVSWITCH_GATEWAY_TOKEN"
"""The variable pinned clients that read their key from a variable (Codex, OpenCode) are
given, unless ``[gateway] token = "env:NAME"`` names another."""

TOKEN_PREFIX = "kvsgw-"
"""How a token kvswitch made starts (tells it apart from an upstream key at a glance)."""

_ENV_REF = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")


def _env_name(config: Config) -> str | None:
    """NAME of ``token = "env:NAME"``; ``None`` for the keyring. Anything else is refused."""
    reference = config.model.gateway.token
    if reference == "keyring":
        return None
    m = _ENV_REF.fullmatch(reference)
    if m is None:
        from kvswitch.errors import Location
        from kvswitch.validate import show

        raise GatewayError(
            tr("[gateway] token must be 'keyring' or 'env:NAME', not {value}").format(value=show(reference)),
            Location(config.path),
        )
    return m.group(1)


def token_variable(config: Config) -> str:
    """The variable pinned clients read the token from (NAME of ``env:NAME``, else
    :data:`TOKEN_VARIABLE`)."""
    return _env_name(config) or TOKEN_VARIABLE


def load_token(config: Config) -> str | None:
    """The token, or ``None`` when there is none yet (keyring) or the variable is unset.
    A value no request header can carry is a :class:`GatewayError`; a keyring that cannot
    be used raises :class:`kvswitch.keys.SecretStoreError`."""
    name = _env_name(config)
    if name is None:
        from kvswitch.keys import get_key

        value = get_key(TOKEN_ACCOUNT)
        where = tr("the gateway token in the keyring")
    else:
        value = os.environ.get(name)
        where = f"${name}"
    if not value:
        return None
    from kvswitch.validate import key_problem

    problem = key_problem(value)
    if problem is not None:
        raise GatewayError(f"{where}: {problem}")
    return value


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe, that no key check takes for a placeholder."""
    from kvswitch.keys import InvalidKeyError, check_key

    while True:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        try:
            check_key(token)
        except InvalidKeyError:  # pragma: no cover - a random "-your…" run: draw again
            continue
        return token


def ensure_token(config: Config) -> str:
    """The token, made and stored in the keyring when there is none yet; with
    ``token = "env:NAME"`` the variable must be set (else :class:`GatewayError`)."""
    token = load_token(config)
    if token is not None:
        return token
    name = _env_name(config)
    if name is not None:
        raise GatewayError(
            tr(
                '${name} is not set: [gateway] token = "env:{name}" reads the gateway\'s token from it; '
                'export {name}=A_LONG_RANDOM_VALUE, or set token = "keyring" to let kvswitch make one'
            ).format(name=name)
        )
    from kvswitch.keys import set_key

    token = new_token()
    set_key(TOKEN_ACCOUNT, token)
    return token
