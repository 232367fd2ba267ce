"""The form a client pinned to the gateway takes (``[[clients]] route = "gateway"``): the
gateway's root URL, no ``X-Cache-Mode`` header and the gateway's local token, whatever the mode.

:func:`gateway_profile` is what a pinned file is rendered from; :func:`token_in_file` says
whether the token itself goes into the file (a client that keeps its key there, outside any git
work tree unless ``allow_key_in_repo``) or the client reads it from a variable the file names.
Planning a switch (:mod:`kvswitch.clients`) reads this; pinning and unpinning
(:mod:`kvswitch.gateway.pinning`) sit above both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch.config import client_path
from kvswitch.worktree import in_git_work_tree

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.kinds.base import ModeDefaults
    from kvswitch.models import ClientEntry, Profile

__all__ = [
    "gateway_profile",
    "gateway_url",
    "pinned",
    "reads_token_variable",
    "token_in_file",
]

_PROBE = "KVSWITCH_TOKEN_VARIABLE_PROBE_5C1E"
"""A variable name no file holds: whether a kind's rendering names it tells whether the
client reads its key from a variable."""


def pinned(entry: ClientEntry) -> bool:
    """Whether the client is pinned to the gateway."""
    return entry.route == "gateway"


def gateway_url(config: Config) -> str:
    """The gateway's root URL as clients reach it (no ``/v1``): a wildcard listen address
    is reached on 127.0.0.1."""
    gw = config.model.gateway
    host = gw.listen.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{gw.port}"


def gateway_profile(config: Config, profile_name: str, profile: Profile) -> Profile:
    """What a pinned client's file is rendered from: the gateway's URL for both modes (the
    root for Claude Code, ``…/v1`` for the others), no mode header, no extra headers (the
    gateway sends the profile's), the token's variable as the key reference, and the
    profile's model. Any mode gives the same file."""
    from kvswitch.gateway.token import token_variable
    from kvswitch.models import Profile

    return Profile.model_validate(
        {
            "provider": "kvswitch-gateway",
            "base_url": gateway_url(config) + "/v1",
            "url_convention": "includes-v1",
            "model": profile.model,
            "key": f"env:{token_variable(config)}",
            "mode_header": False,
            "headers": {},
        }
    )


def reads_token_variable(config: Config, entry: ClientEntry) -> bool:
    """Whether the pinned client reads the token from a variable its file names (Codex,
    OpenCode), not from the file itself."""
    from kvswitch.kinds import get_kind
    from kvswitch.kinds.base import mode_defaults

    if not get_kind(entry.kind).real:
        return False
    if token_in_file(entry, client_path(entry)):
        return False
    name, profile = config.profile()
    gp = gateway_profile(config, name, profile)
    return _renders_probe(entry.kind, name, gp, mode_defaults(gp))


def _names_variable(kind_id: str) -> bool:
    """Whether the kind, given no key, names the variable it reads the key from."""
    from kvswitch.kinds.base import ModeDefaults
    from kvswitch.models import Profile

    gp = Profile(base_url="http://127.0.0.1:1/v1", model="m", key=f"env:{_PROBE}")
    d = ModeDefaults(merged_url=gp.base_url, split_url=gp.base_url, mode_header=False)
    return _renders_probe(kind_id, "probe", gp, d)


def _renders_probe(kind_id: str, name: str, profile: Profile, defaults: ModeDefaults) -> bool:
    """Whether the kind's file rendered from ``profile`` with no key names :data:`_PROBE` as
    the variable the key is read from."""
    from kvswitch.kinds import RenderInput, get_kind

    try:
        return _PROBE in get_kind(kind_id).skeleton(RenderInput(name, profile, "merged", defaults, None, _PROBE))
    except (ValueError, TypeError, NotImplementedError):
        return False


def token_in_file(entry: ClientEntry, path: Path) -> bool:
    """Whether the pinned client's file gets the token itself: its kind keeps the key in the
    file (a kind that reads a variable only with ``write_key = true``), the entry does not
    say ``write_key = false``, and the file is outside any git work tree unless
    ``allow_key_in_repo``."""
    if entry.write_key is False:
        return False
    if entry.write_key is None and _names_variable(entry.kind):
        return False
    if entry.allow_key_in_repo:
        return True
    return not in_git_work_tree(path) and not in_git_work_tree(Path(os.path.realpath(path)))
