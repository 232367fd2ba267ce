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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch.config import client_path
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.pinned_form import gateway_profile, gateway_url, pinned, reads_token_variable, token_in_file
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.clients import ClientChange
    from kvswitch.config import Config
    from kvswitch.edits import Edit
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
