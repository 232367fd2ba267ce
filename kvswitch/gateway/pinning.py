"""Pinning clients to the gateway: a pinned client's file holds the gateway's root URL, no
``X-Cache-Mode`` header and the gateway's local token, whatever the mode; the gateway picks
the mode per request, so a switch writes no pinned file (``[[clients]] route = "gateway"``).

A pinned file is rendered, through its kind, from :func:`gateway_profile`. The token goes
into the file of a client that keeps its key there (Claude Code, Cline, Qwen Code) unless the
entry says ``write_key = false`` or the file is inside a git work tree (``allow_key_in_repo``
lifts that); a client that reads its key from a variable (Codex, OpenCode) gets the
variable's name. :func:`unpin` renders the active profile again, as ``profile use`` does.
Every change is backed up and all or nothing with kvswitch's config.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch.config import client_path
from kvswitch.gateway.errors import GatewayError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.clients import ClientChange
    from kvswitch.config import Config
    from kvswitch.edits import Edit
    from kvswitch.kinds.base import ModeDefaults
    from kvswitch.models import ClientEntry, Profile

__all__ = [
    "gateway_profile",
    "gateway_url",
    "pin",
    "pinned",
    "reads_token_variable",
    "token_in_file",
    "unpin",
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
    from kvswitch.clients import in_git_work_tree

    if entry.write_key is False:
        return False
    if entry.write_key is None and _names_variable(entry.kind):
        return False
    if entry.allow_key_in_repo:
        return True
    return not in_git_work_tree(path) and not in_git_work_tree(Path(os.path.realpath(path)))


def _chosen(config: Config, clients: Sequence[str] | None, *, pinning: bool) -> list[ClientEntry]:
    from kvswitch.clients import find_client
    from kvswitch.errors import Location
    from kvswitch.kinds import get_kind

    if clients is None:
        found = [e for e in config.model.clients if get_kind(e.kind).real and (pinning or pinned(e))]
        if not found and pinning:
            raise GatewayError(
                tr(
                    "no registered client to pin: register one (kvswitch client detect --register, "
                    "or kvswitch client add PATH)"
                ),
                Location(config.path),
            )
        return found
    chosen: list[ClientEntry] = []
    for spec in clients:
        entry = find_client(config, spec)
        kind = get_kind(entry.kind)
        if not kind.real:
            raise GatewayError(
                tr(
                    "{client} ({product}) is a file shape no released client reads: it keeps both modes' "
                    "endpoints itself, so there is nothing to pin to the gateway. Nothing was changed."
                ).format(client=entry.name or client_path(entry), product=kind.product),
                Location(client_path(entry)),
            )
        if not any(c is entry for c in chosen):
            chosen.append(entry)
    return chosen


def pin(clients: Sequence[str] | None = None, *, dry_run: bool = False) -> list[ClientChange]:
    """``kvswitch gateway pin [CLIENT…]``: pin those clients (names, kinds or files; ``None``:
    every registered real client) to the gateway. Makes the token first when the keyring
    holds none (a dry run makes one for the diff and stores nothing)."""
    from kvswitch.edits import Delete, Set
    from kvswitch.gateway.token import ensure_token, load_token
    from kvswitch.locks import unless_dry_run

    with unless_dry_run(dry_run):
        from kvswitch.config import read_config

        config = read_config()
        chosen = _chosen(config, clients, pinning=True)
        name, profile = config.profile()
        token = (load_token(config) or _dry_token(config)) if dry_run else ensure_token(config)
        edits: list[Edit] = []
        for i, e in enumerate(config.model.clients):
            if any(e is c for c in chosen):
                if e.route != "gateway":
                    edits.append(Set(("clients", i, "route"), "gateway"))
                if e.mode is not None:  # the gateway decides the mode now, per request
                    edits.append(Delete(("clients", i, "mode")))
        newly = {client_path(e) for e in chosen if not pinned(e)}
        changes, writes = _render(config, chosen, edits, name, profile, token, drop=None, dry_run=dry_run)
        if not dry_run:
            from kvswitch.state import remember_pin

            for path, before in writes.items():
                if path in newly:  # unpin starts from this version (a re-pin keeps the first)
                    remember_pin(path, before or None)
        return changes


def _dry_token(config: Config) -> str:
    """A token for a dry run's diff (masked there): the variable must be set for ``env:``."""
    from kvswitch.gateway.token import ensure_token, new_token

    if config.model.gateway.token == "keyring":
        return new_token()
    return ensure_token(config)  # env:NAME unset: the same refusal the real pin gives


def unpin(clients: Sequence[str] | None = None, *, dry_run: bool = False) -> list[ClientChange]:
    """``kvswitch gateway unpin [CLIENT…]``: give those clients (``None``: every pinned one)
    their direct form again: the active profile rendered as ``profile use`` renders it, in
    the config's mode, its key where allowed; the gateway's token is taken out of the file."""
    from kvswitch.edits import Delete
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.token import load_token
    from kvswitch.locks import unless_dry_run

    with unless_dry_run(dry_run):
        from kvswitch.config import read_config

        config = read_config()
        chosen = _chosen(config, clients, pinning=False)
        name, profile = config.profile()
        try:
            token = load_token(config)
        except KvswitchError:
            token = None  # no token to take out: the file keeps what it holds
        edits: list[Edit] = [
            Delete(("clients", i, "route"))
            for i, e in enumerate(config.model.clients)
            if any(e is c for c in chosen) and e.route != "direct"
        ]
        bases = {client_path(e): b for e in chosen if (b := _before_pin(client_path(e))) is not None}
        changes, _ = _render(config, chosen, edits, name, profile, None, drop=token, dry_run=dry_run, bases=bases)
        if not dry_run:
            from kvswitch.state import forget_pin

            for e in chosen:
                forget_pin(client_path(e))
        return changes


def _before_pin(path: Path) -> bytes | None:
    """The file as it was just before its pin, while it holds what kvswitch last wrote
    (``b""``: there was no file); ``None`` when that is not known or the file changed since
    (the unpin then starts from the file as it is)."""
    import hashlib

    from kvswitch.backups import list_backups
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_optional
    from kvswitch.state import changed_since_written, pinned_from

    noted = pinned_from(path)
    if noted is None:
        return None
    try:
        now = read_optional(path)
        if now is None or changed_since_written(path, now):
            return None
        if noted is False:
            return b""
        for backup in list_backups(path):
            data = backup.path.read_bytes()
            if hashlib.sha256(data).hexdigest() == noted:
                return data
    except (OSError, KvswitchError):
        return None
    return None  # its backup was pruned


def _render(
    config: Config,
    chosen: list[ClientEntry],
    edits: list[Edit],
    name: str,
    profile: Profile,
    token: str | None,
    *,
    drop: str | None,
    dry_run: bool,
    bases: dict[Path, bytes] | None = None,
) -> tuple[list[ClientChange], dict[Path, bytes]]:
    """Render ``chosen`` from the config as ``edits`` leave it; commit with the edits. Also
    returns what each written file held before."""
    from kvswitch.clients import _commit, plan_clients
    from kvswitch.config import edited_text, read_config_text

    after = read_config_text(edited_text(config, edits), config.path) if edits else config
    keep = {client_path(c) for c in chosen}
    exclude = frozenset(client_path(e) for e in after.model.clients if client_path(e) not in keep)
    plan = plan_clients(
        after,
        name,
        profile,
        config.model.mode,
        profile_wins=True,
        with_keys=True,
        exclude=exclude,
        token=token,
        drop_key=drop,
        bases=bases,
    )
    return _commit(config, plan, edits, dry_run), {w.path: w.expected for w in plan.writes}
