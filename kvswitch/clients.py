"""Operations over every registered client: one switch for all of them, a profile change,
their status, and restoring a file from its backups.

Every change to several files is all or nothing (:func:`kvswitch.transaction.commit_all`):
kvswitch's own config (its ``mode`` and ``active_profile``) is one of the files, so it never
says a mode the clients are not in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.config import Config, client_mode, client_path, edited_text, read_config
from kvswitch.document import ConfigFile, parse_config
from kvswitch.edits import Delete, Edit, Set
from kvswitch.errors import ConfigError, EditError, KvswitchError, Location, ReadError
from kvswitch.i18n import tr
from kvswitch.literals import CacheMode
from kvswitch.records import field, record
from kvswitch.switching import refuse_on_errors, render_diff, secrets_in
from kvswitch.worktree import in_git_work_tree

if TYPE_CHECKING:
    from kvswitch.backups import Backup
    from kvswitch.io import WriteResult
    from kvswitch.models import ClientEntry, Profile

__all__ = [
    "ClientChange",
    "ClientPlan",
    "add_client",
    "apply_profile",
    "client_mode",
    "commit_plan",
    "find_client",
    "in_git_work_tree",
    "key_allowed",
    "nudge_changed",
    "plan_clients",
    "registered",
    "restore",
    "switch_clients",
    "wants_key",
]


@record
class ClientChange:
    """What happened (or would happen) to one file."""

    path: Path
    kind: str
    old_mode: str | None
    new_mode: str
    changed: bool
    diff: str
    backup: Path | None = None
    key_written: bool = False
    nudge: str = "none"
    name: str | None = None
    pinned: bool = False
    """Pinned to the gateway: its file keeps the gateway's address in every mode."""


def wants_key(entry: ClientEntry) -> bool:
    """Whether the entry asks for the key in its file (unset: its kind's default)."""
    from kvswitch.kinds import get_kind

    return entry.write_key if entry.write_key is not None else get_kind(entry.kind).write_key_default


def key_allowed(entry: ClientEntry, path: Path) -> bool:
    """D-7: a key goes into a client file only when the client wants it and the file is
    outside any git work tree (unless the entry says ``allow_key_in_repo``)."""
    if not wants_key(entry):
        return False
    if entry.allow_key_in_repo:
        return True
    # a symlink is written at its target: neither the link nor the target may be in a repository
    return not in_git_work_tree(path) and not in_git_work_tree(Path(os.path.realpath(path)))


def registered(config: Config, path: Path | str) -> ClientEntry | None:
    """The registered client that is the file at ``path``, whatever the spelling: paths are
    compared by their real path (symlinks and ``..`` resolved)."""
    real = os.path.realpath(Path(path).expanduser())
    return next((e for e in config.model.clients if os.path.realpath(client_path(e)) == real), None)


def find_client(config: Config, spec: str | Path) -> ClientEntry:
    """The registered client ``spec`` names: its name, its kind (when one client is of that
    kind) or its file, whatever the spelling."""
    from kvswitch.kinds import canonical

    text = str(spec)
    by_name = [e for e in config.model.clients if e.name is not None and e.name == text]
    if by_name:
        return by_name[0]
    by_kind = [e for e in config.model.clients if e.kind == canonical(text)]
    if len(by_kind) == 1:
        return by_kind[0]
    entry = registered(config, Path(text)) if ("/" in text or os.sep in text or Path(text).exists()) else None
    if entry is not None:
        return entry
    from kvswitch.validate import show

    names = ", ".join(e.name or str(client_path(e)) for e in config.model.clients) or tr("none")
    if len(by_kind) > 1:
        message = tr(
            "no registered client {client} ({count} clients are of that kind: name one) (clients: {clients})"
        ).format(client=show(text), count=len(by_kind), clients=names)
    else:
        message = tr("no registered client {client} (clients: {clients})").format(client=show(text), clients=names)
    raise ConfigError(message, Location(config.path))


def add_client(entry: ClientEntry, config: Config | None = None) -> Config:
    """Register ``entry``, its path stored absolute with ``..`` resolved (a symlink stays a
    symlink: it is written through, D-4). A file registered already under any spelling is
    refused: one file written twice in a switch would fail as "changed on disk"."""
    from kvswitch.config import add_client_edit, edit_config, read_config

    config = config or read_config()
    path = os.path.abspath(client_path(entry))
    other = registered(config, path)
    if other is not None:
        if os.path.abspath(client_path(other)) == path:
            message = tr("registered already (the same file); nothing was changed")
        else:
            message = tr("registered already as {path} (the same file); nothing was changed").format(
                path=client_path(other)
            )
        raise ConfigError(message, Location(Path(path)))
    return edit_config([add_client_edit(config, entry.model_copy(update={"path": path}))], config)


def _client_files(config: Config, exclude: frozenset[Path] = frozenset()) -> list[tuple[ClientEntry, Path, ConfigFile]]:
    from kvswitch.io import read_bytes
    from kvswitch.kinds import get_kind

    out = []
    seen: dict[str, Path] = {}
    for entry in config.model.clients:
        path = client_path(entry)
        real = os.path.realpath(path)
        if real in seen:  # one file written twice in one commit would fail as "changed on disk"
            raise ConfigError(
                tr(
                    "clients {first} and {second} are the same file; unregister one "
                    "(kvswitch client remove {second}). Nothing was changed."
                ).format(first=seen[real], second=path),
                Location(config.path),
            )
        seen[real] = path
        if path in exclude:
            continue  # not read at all: an unreadable one (a FIFO, say) must not stop the others
        if not (path.exists() or path.is_symlink()) and get_kind(entry.kind).real:
            out.append((entry, path, get_kind(entry.kind).new_file(path)))  # written by the first change
            continue
        try:
            raw = read_bytes(path)
        except ReadError as exc:
            product = get_kind(entry.kind).product
            raise ReadError(
                tr("registered client ({product}): {error}").format(product=product, error=exc.message), exc.location
            ) from exc
        out.append((entry, path, parse_config(raw, entry.kind, path)))
    return out


@record(frozen=False)
class ClientPlan:
    """The writes a change to the registered clients takes, before any is made."""

    changes: list[ClientChange]
    writes: list[Any]  # transaction.FileWrite
    memos: list[tuple[Path, Any]]  # values a mode flip takes out, to remember first
    entries: dict[Path, ClientEntry]
    rendered: list[Path] = field(default_factory=list)  # profile renders: remembered values end


def plan_clients(
    config: Config,
    profile_name: str,
    profile: Profile,
    mode: CacheMode,
    *,
    profile_wins: bool,
    with_keys: bool,
    exclude: frozenset[Path] = frozenset(),
    own_modes: bool = True,
    token: str | None = None,
    drop_key: str | None = None,
    bases: Mapping[Path, bytes] | None = None,
) -> ClientPlan:
    """Render ``profile`` in ``mode`` into every registered client but those in ``exclude``
    (a client with a mode of its own in that mode, unless ``own_modes`` is False). A client
    pinned to the gateway is rendered from the gateway's form in any mode, with the gateway's
    ``token`` (default: the stored one) where keys are written; ``drop_key``: a key value
    taken out of the files that get no key (the token, when clients are unpinned); ``bases``:
    files rendered from these bytes (``b""``: from nothing) in place of what they hold now,
    which their write still expects (an unpin starts from the file as it was before the pin)."""
    from kvswitch.transaction import FileWrite

    key: str | None = None
    key_loaded = False
    token_loaded = token is not None
    gateway: Profile | None = None
    plan = ClientPlan([], [], [], {})
    checks: list[tuple[ConfigFile, str, list[Edit]]] = []
    masked: list[str] = []
    everyone = mode
    for entry, path, cf in _client_files(config, exclude):
        if path in exclude:
            continue
        mode = entry.mode if own_modes and entry.mode is not None else everyone
        plan.entries[path] = entry
        use_key = None
        source = profile
        if entry.route == "gateway":  # the gateway's form, whatever the mode (issue 13)
            from kvswitch.gateway.pinned_form import gateway_profile, token_in_file

            if gateway is None:
                gateway = gateway_profile(config, profile_name, profile)
            source = gateway
            if with_keys and token_in_file(entry, path):
                if not token_loaded:
                    from kvswitch.gateway.token import load_token

                    token, token_loaded = load_token(config), True
                use_key = token
        elif with_keys and key_allowed(entry, path):
            if not key_loaded:
                from kvswitch.keys import resolve_key

                key, key_loaded = resolve_key(profile_name, profile.key), True
            use_key = key
        drop = drop_key if use_key is None else None
        base = cf
        if bases is not None and path in bases:
            from kvswitch.kinds import get_kind

            raw = bases[path]
            base = parse_config(raw, entry.kind, path) if raw else get_kind(entry.kind).new_file(path)
        try:
            edits, mode_plan = _render(base, profile_name, source, mode, use_key, profile_wins, drop)
            new_text = base.doc.apply(edits) if edits else base.text
        except (ValueError, TypeError) as exc:
            raise EditError(
                tr("cannot render profile {name} into it: {error}").format(name=repr(profile_name), error=exc),
                Location(path),
            ) from exc
        checks.append((base, new_text, edits))
        key_written = use_key is not None and _writes_key(base, edits)
        secrets = [
            *secrets_in(cf),
            *([use_key] if use_key else []),
            *([drop_key] if drop_key else []),
            *(secrets_in(base) if base is not cf else []),
        ]
        masked += [use_key] if use_key else []
        changed = new_text != cf.text
        plan.changes.append(
            ClientChange(
                path,
                cf.kind,
                mode_plan.old_mode,
                mode,
                changed,
                render_diff(path, cf.text, new_text, secrets) if changed else "",
                key_written=key_written,
                nudge=entry.nudge.kind,
                name=entry.name,
                pinned=entry.route == "gateway",
            )
        )
        if changed:
            if profile_wins:
                plan.rendered.append(path)  # the profile decides these values now
            else:
                plan.memos.append((path, mode_plan.remember))
            plan.writes.append(
                FileWrite(
                    path,
                    new_text.encode("utf-8"),
                    cf.raw,
                    _rebuilder(
                        cf,
                        profile_name,
                        source,
                        mode,
                        use_key,
                        profile_wins,
                        _what(profile_name, mode, profile_wins),
                        drop,
                    ),
                    mode=0o600 if key_written else None,
                )
            )
    # a change never writes what lint rejects; a mode flip never carries an error away
    refuse_on_errors(
        checks,
        _what(profile_name, everyone, profile_wins),
        carried=not profile_wins,
        secrets=[*([key] if key else []), *masked, *([drop_key] if drop_key else [])],
    )
    return plan


def _what(profile_name: str, mode: CacheMode, profile_wins: bool) -> str:
    if profile_wins:
        return tr("profile {name} ({mode})").format(name=repr(profile_name), mode=mode)
    return tr("switch to {mode}").format(mode=mode)


def commit_plan(plan: ClientPlan, extra: list[Any] | None = None) -> list[ClientChange]:
    """Make every write of ``plan`` (and ``extra`` ones, e.g. kvswitch.toml), all or none."""
    from kvswitch.state import forget_file, record_writes, remember
    from kvswitch.transaction import commit_all

    writes = [*plan.writes, *(extra or [])]
    if not writes:
        return plan.changes
    for path, memo in plan.memos:
        remember(path, memo)  # before the files lose them
    from kvswitch.io import _private_dir

    for w in writes:
        if w.expected == b"" and not w.path.parent.exists():  # a real client's first file
            _private_dir(w.path.parent)
    results = {r.path: r for r in commit_all(writes)}
    for path in plan.rendered:
        forget_file(path)  # values remembered under another profile must not come back
    # the bytes written, where no save was re-applied: a save just after must not pass for ours
    record_writes(
        [w.path for w in writes],
        {w.path: w.data for w in writes if w.path in results and not results[w.path].reapplied},
    )
    return [
        ClientChange(
            c.path,
            c.kind,
            c.old_mode,
            c.new_mode,
            c.changed,
            c.diff,
            results[c.path].backup if c.path in results else None,
            c.key_written,
            c.nudge,
            c.name,
            c.pinned,
        )
        for c in plan.changes
    ]


def _apply(
    config: Config,
    profile_name: str,
    profile: Profile,
    mode: CacheMode,
    *,
    profile_wins: bool,
    with_keys: bool,
    dry_run: bool,
    set_active: bool,
    own_modes: bool = True,
) -> list[ClientChange]:
    plan = plan_clients(
        config, profile_name, profile, mode, profile_wins=profile_wins, with_keys=with_keys, own_modes=own_modes
    )
    config_edits: list[Edit] = []
    if config.model.mode != mode:
        config_edits.append(Set(("mode",), mode))
    if not own_modes:  # every client now in one mode: none keeps a mode of its own
        config_edits += [
            Delete(("clients", i, "mode")) for i, e in enumerate(config.model.clients) if e.mode is not None
        ]
    if set_active and config.model.active_profile != profile_name:
        config_edits.append(Set(("active_profile",), profile_name))
    return _commit(config, plan, config_edits, dry_run)


def _commit(config: Config, plan: ClientPlan, config_edits: list[Edit], dry_run: bool) -> list[ClientChange]:
    """Commit ``plan`` with ``config_edits`` to kvswitch's config, all or nothing."""
    from kvswitch.transaction import FileWrite

    extra = []
    if config_edits:
        text = edited_text(config, config_edits)
        extra.append(FileWrite(config.path, text.encode("utf-8"), config.file.raw))
    if dry_run:
        return plan.changes
    return commit_plan(plan, extra)


def _writes_key(cf: ConfigFile, edits: list[Edit]) -> bool:
    """Whether ``edits`` set one of the file's key fields."""
    from kvswitch.edits import apply_to_data
    from kvswitch.kinds import kind_of

    paths = set(kind_of(cf).key_paths(apply_to_data(cf.data, edits)))
    return any(isinstance(e, Set) and e.path in paths for e in edits)


def _render(
    cf: ConfigFile,
    name: str,
    profile: Profile,
    mode: CacheMode,
    key: str | None,
    profile_wins: bool,
    drop: str | None = None,
) -> tuple[list[Edit], Any]:
    from kvswitch.render import render_edits

    edits, plan = render_edits(cf, profile, mode, key=key, profile_wins=profile_wins, name=name)
    if drop:
        edits += _drop_key_edits(cf, edits, drop)
    return edits, plan


def _drop_key_edits(cf: ConfigFile, edits: list[Edit], value: str) -> list[Edit]:
    """Edits that take ``value`` out of every key field of ``cf`` (as ``edits`` leave it)."""
    from kvswitch.edits import apply_to_data
    from kvswitch.kinds import get_path, kind_of

    data = apply_to_data(cf.data, edits) if edits else cf.data
    return [Delete(p) for p in kind_of(cf).key_paths(data) if get_path(data, p) == value]


def _rebuilder(
    cf: ConfigFile,
    name: str,
    profile: Profile,
    mode: CacheMode,
    key: str | None,
    profile_wins: bool,
    what: str,
    drop: str | None = None,
) -> Callable[[bytes], bytes]:
    def rebuild(current: bytes) -> bytes:
        again = parse_config(current, cf.kind, cf.path)
        edits, mode_plan = _render(again, name, profile, mode, key, profile_wins, drop)
        text = again.doc.apply(edits) if edits else again.text
        # the version saved meanwhile must pass too
        refuse_on_errors([(again, text, edits)], what, carried=not profile_wins, secrets=[key] if key else [])
        if not profile_wins and cf.path is not None:
            from kvswitch.state import remember

            remember(cf.path, mode_plan.remember)  # what leaves this version is kept first
        return text.encode("utf-8") if edits else current

    return rebuild


def nudge_changed(changes: list[ClientChange]) -> tuple[Any, ...]:
    """Nudge every changed registered client to reload by its method (D-8); the outcomes
    (:class:`kvswitch.reload.NudgeResult`), one per changed client."""
    from kvswitch.reload import nudge

    changed = [c for c in changes if c.changed]
    if not changed:
        return ()
    entries = {client_path(e): e for e in read_config().model.clients}
    return tuple(nudge(entries[c.path], c.path) for c in changed if c.path in entries)


def switch_clients(mode: CacheMode, *, dry_run: bool = False, only: list[str] | None = None) -> list[ClientChange]:
    """``kvswitch switch MODE``: flip every registered client (a mode flip: remembered
    values come back, the active profile fills what was never there; keys are not touched).
    ``only`` (names, kinds or files, :func:`find_client`): flip those alone; each keeps the
    mode as its own while it differs from the config's, which stays."""
    from kvswitch.locks import unless_dry_run

    with unless_dry_run(dry_run):
        config = read_config()
        name, profile = config.profile()
        if only is None:
            return _apply(
                config,
                name,
                profile,
                mode,
                profile_wins=False,
                with_keys=False,
                dry_run=dry_run,
                set_active=False,
                own_modes=False,
            )
        chosen = [find_client(config, spec) for spec in only]
        for entry in chosen:
            if entry.route == "gateway":
                from kvswitch.validate import shell_word

                who = entry.name or str(client_path(entry))
                if entry.name:
                    message = tr(
                        "client {name} is pinned to the gateway, which chooses the mode per request: "
                        "kvswitch switch {mode} (without --client) sets it for every pinned client; "
                        "one request picks its own with a /merged or /split path prefix or an "
                        "X-Cache-Mode header; kvswitch gateway unpin {client} gives it a mode of its own. "
                        "Nothing was changed."
                    )
                else:
                    message = tr(
                        "this client is pinned to the gateway, which chooses the mode per request: "
                        "kvswitch switch {mode} (without --client) sets it for every pinned client; "
                        "one request picks its own with a /merged or /split path prefix or an "
                        "X-Cache-Mode header; kvswitch gateway unpin {client} gives it a mode of its own. "
                        "Nothing was changed."
                    )
                raise ConfigError(
                    message.format(name=entry.name, mode=mode, client=shell_word(who)), Location(client_path(entry))
                )
        keep = frozenset(client_path(e) for e in config.model.clients if not any(e is c for c in chosen))
        plan = plan_clients(
            config, name, profile, mode, profile_wins=False, with_keys=False, exclude=keep, own_modes=False
        )
        own = None if mode == config.model.mode else mode
        edits: list[Edit] = []
        for i, e in enumerate(config.model.clients):
            if any(e is c for c in chosen) and e.mode != own:
                edits.append(Delete(("clients", i, "mode")) if own is None else Set(("clients", i, "mode"), own))
        return _commit(config, plan, edits, dry_run)


def apply_profile(name: str | None = None, *, dry_run: bool = False) -> list[ClientChange]:
    """``kvswitch profile use NAME``: make NAME active and render it into every client in the
    current mode (the profile's values win; its key is written where D-7 allows)."""
    from kvswitch.locks import unless_dry_run

    with unless_dry_run(dry_run):
        config = read_config()
        name, profile = config.profile(name)
        return _apply(
            config,
            name,
            profile,
            config.model.mode,
            profile_wins=True,
            with_keys=True,
            dry_run=dry_run,
            set_active=True,
        )


def restore(path: Path, backup_id: str | None = None) -> tuple[Backup, WriteResult]:
    """Put a backup of ``path`` back (default: the newest that differs from the file now).
    The restore is an atomic write, so the current version is backed up first."""
    from kvswitch.locks import switch_lock

    with switch_lock():
        return _restore(path, backup_id)


def _restore(path: Path, backup_id: str | None) -> tuple[Backup, WriteResult]:
    from kvswitch.backups import list_backups
    from kvswitch.io import atomic_write, read_optional
    from kvswitch.state import record_writes

    backups = list_backups(path)
    if not backups:
        raise KvswitchError(tr("no backups of this file"), Location(path))
    current = read_optional(path)
    if backup_id is not None:
        chosen = next((b for b in backups if b.id == backup_id), None)
        if chosen is None:
            raise KvswitchError(
                tr("no backup {id} (see kvswitch restore --list)").format(id=repr(backup_id)), Location(path)
            )
    else:
        chosen = next((b for b in backups if b.path.read_bytes() != current), None)
        if chosen is None:
            raise KvswitchError(tr("every backup equals the file as it is now; nothing to restore"), Location(path))
    data = chosen.path.read_bytes()
    result = atomic_write(path, data, expected=current if current is not None else b"")
    record_writes([path], {path: data})
    return chosen, result


def __getattr__(name: str) -> Any:
    """``status`` and its types moved to :mod:`kvswitch.status` (``kvswitch status`` imports no
    switching); read here too, for callers of the old place."""
    if name in ("NO_PROFILE", "ClientStatus", "Status", "status"):
        import kvswitch.status

        return getattr(kvswitch.status, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
