"""Profiles from what the user already has (``kvswitch import``): a real client's current
provider, or CC Switch's providers.

An import reads and never writes what it reads: the client's file and CC Switch's database
stay as they are. It writes only kvswitch's config (and, when asked, the key into the
keyring). A key is carried as a reference: the variable the client reads it from
(``env:NAME``), or the keyring when the user asks for the key itself to be stored.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.cc_switch import PLACEHOLDER_KEYS
from kvswitch.errors import CcSwitchError, ImportRefusedError, KvswitchError, Location
from kvswitch.i18n import tr
from kvswitch.records import replace
from kvswitch.urls import guess_convention
from kvswitch.validate import show

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.kinds import ClientKind, ClientSettings
    from kvswitch.models import Profile

__all__ = [
    "PLACEHOLDER_KEYS",
    "Imported",
    "Saved",
    "Skipped",
    "from_cc_switch",
    "from_client",
    "profile_from",
    "profile_name_for",
    "save_imports",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Imported:
    """A profile made from a source, not yet saved; ``key`` is a key found in plain text."""

    name: str
    source: str
    profile: Profile
    key: str | None = field(default=None, repr=False)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A source an import passed over, and why."""

    source: str
    reason: str


@dataclass(frozen=True)
class Saved:
    """What :func:`save_imports` wrote."""

    config: Path
    created: bool
    """kvswitch's config did not exist: it was written with the first profile active."""
    profiles: tuple[Imported, ...]
    keys_stored: tuple[str, ...]
    activated: str | None = None
    """The profile made active (there was none)."""


def profile_name_for(text: str) -> str:
    """A profile name from a provider's or client's name: letters, digits, ``.``, ``_``, ``-``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip()).strip("-._").lower()
    return slug[:64] or "imported"


def profile_from(settings: ClientSettings, *, name: str, source: str, model: str | None = None) -> Imported:
    """A profile from an endpoint a client uses (``model`` given where the source has none)."""
    from pydantic import ValidationError

    from kvswitch.models import Profile
    from kvswitch.profile_input import check_profile_input
    from kvswitch.validate import InvalidValueError, clean_url, header_problem

    notes: list[str] = []
    if settings.key in PLACEHOLDER_KEYS:
        raise ImportRefusedError(
            tr(
                "{source} is set up by CC Switch's local proxy (its key is the placeholder "
                "{placeholder}); import CC Switch's providers instead: kvswitch import --from cc-switch"
            ).format(source=source, placeholder=settings.key)
        )
    try:
        url, _ = clean_url(settings.url, tr("{source}: base URL").format(source=source))
    except InvalidValueError as exc:
        raise ImportRefusedError(exc.message) from None
    convention = "includes-v1" if settings.url_has_v1 else guess_convention(url)
    chosen = model or settings.model
    if not chosen:
        raise ImportRefusedError(
            tr("{source} names no model (the client uses its default); give one with --model").format(source=source)
        )
    headers: dict[str, str] = {}
    for header, value in settings.headers.items():
        problem = header_problem(header, value)
        if problem is None:
            headers[header] = value
        else:
            notes.append(tr("not imported: {problem}").format(problem=problem))
    if settings.key_env is not None and _ENV_NAME.fullmatch(settings.key_env):
        key_ref = f"env:{settings.key_env}"
    elif settings.key is not None:
        key_ref = "keyring"  # the key itself: stored only when asked (save_imports)
    else:
        key_ref = "none"
    if settings.mode == "split":
        notes.append(
            tr(
                "it was in split mode: its URL became the profile's base URL for both modes; "
                "set the other with: kvswitch profile edit {name} --merged-url URL"
            ).format(name=name)
        )
    data: dict[str, Any] = {
        "provider": profile_name_for(settings.provider) if settings.provider else "custom",
        "base_url": url,
        "url_convention": convention,
        "model": chosen,
        "key": key_ref,
        "headers": headers,
    }
    try:
        profile = check_profile_input(name, Profile.model_validate(data))
    except (ValidationError, InvalidValueError) as exc:
        raise ImportRefusedError(
            tr("{source}: cannot make a profile of it: {error}").format(source=source, error=_first_error(exc))
        ) from None
    return Imported(name, source, profile, settings.key if key_ref == "keyring" else None, tuple(notes))


def _first_error(exc: Exception) -> str:
    from pydantic import ValidationError

    from kvswitch.schema_check import error_message

    if isinstance(exc, ValidationError):
        err = exc.errors(include_url=False)[0]
        message = error_message(err["type"], str(err["msg"]), err.get("ctx"))
        return f"{'.'.join(str(p) for p in err['loc'])}: {message}"
    return str(getattr(exc, "message", exc))


def from_client(
    target: str | Path, *, config: Config | None = None, name: str | None = None, model: str | None = None
) -> Imported:
    """A profile from a client's current provider. ``target``: a registered client (name,
    kind or file), a kind id (its file at the default path) or a file path."""
    from kvswitch.document import parse_config
    from kvswitch.io import read_bytes

    path, kind = _client_file(target, config)
    source = f"{kind.product} ({show(str(path), 300)})"
    cf = parse_config(read_bytes(path), kind.id, path)
    settings = kind.current(cf.data)
    if settings is None:
        raise ImportRefusedError(
            tr(
                "{product}'s file names no endpoint of its own (it uses a built-in provider, "
                "or is not set up); nothing to import"
            ).format(product=kind.product),
            Location(path),
        )
    return profile_from(settings, name=name or kind.id, source=source, model=model)


def _client_file(target: str | Path, config: Config | None) -> tuple[Path, ClientKind]:
    """The file and kind ``target`` stands for."""
    from kvswitch.config import client_path
    from kvswitch.io import read_bytes
    from kvswitch.kinds import all_kinds, canonical, detect_kind, get_kind

    text = str(target)
    if config is not None:
        from kvswitch.clients import find_client

        try:
            entry = find_client(config, text)
        except KvswitchError:
            entry = None
        if entry is not None:
            return client_path(entry), get_kind(entry.kind)
    by_program = {p: k for k in all_kinds(clients_only=True) for p in k.programs}
    kind_id = canonical(text)
    if kind_id in {k.id for k in all_kinds(clients_only=True)} or text in by_program:
        from kvswitch.installed import usual_file

        kind = by_program.get(text) or get_kind(kind_id)
        file = usual_file(kind)
        if file is None:
            raise ImportRefusedError(tr("{product} has no usual file; give its path").format(product=kind.product))
        return file, kind
    path = Path(text).expanduser().absolute()
    raw = read_bytes(path)  # a missing file is the news
    return path, get_kind(detect_kind(path, raw.decode("utf-8", "replace")))


def from_cc_switch(
    database: Path | None = None,
    *,
    app: str | None = None,
    provider: str | None = None,
    name: str | None = None,
    model: str | None = None,
) -> tuple[list[Imported], list[Skipped]]:
    """Profiles from CC Switch's providers (read-only): every provider of the clients
    kvswitch knows, or those of ``app`` / named ``provider`` (its name or id)."""
    from kvswitch.cc_switch import default_database, provider_settings, read_database

    path = database or default_database()
    db = read_database(path)
    providers = list(db.providers)
    if app is not None:
        providers = [p for p in providers if p.app == app]
    if provider is not None:
        providers = [p for p in providers if provider in (p.name, p.id)]
    if not providers:
        raise ImportRefusedError(_no_provider(app, provider), Location(path))
    if name is not None and len(providers) > 1:
        raise ImportRefusedError(
            tr("{count} providers match and --profile names one profile; choose one with --app and --provider").format(
                count=len(providers)
            ),
            Location(path),
        )
    out: list[Imported] = []
    skipped = [
        Skipped(tr("CC Switch row {name} ({app})").format(name=show(row.name), app=_word(row.app)), row.reason)
        for row in db.skipped
        if (app is None or row.app == app) and (provider is None or provider in (row.name, row.id))
    ]
    taken: set[str] = set()
    for p in providers:
        source = tr("CC Switch provider {name} ({app})").format(name=show(p.name), app=_word(p.app))
        try:
            settings = provider_settings(p)
        except CcSwitchError as exc:
            skipped.append(Skipped(source, exc.message))
            continue
        if settings is None:
            skipped.append(
                Skipped(
                    source,
                    tr("no endpoint kvswitch can use (an app kvswitch has no client for, or a built-in provider)"),
                )
            )
            continue
        wanted = name or _unique(profile_name_for(p.name), p.app, taken)
        taken.add(wanted)
        try:
            imp = profile_from(settings, name=wanted, source=source, model=model)
        except ImportRefusedError as exc:
            reason = exc.message.removeprefix(source).lstrip(": ：") if exc.message.startswith(source) else exc.message
            skipped.append(Skipped(source, reason))
            continue
        if p.current:
            imp = replace(imp, notes=(*imp.notes, tr("CC Switch's current provider for {app}").format(app=p.app)))
        out.append(imp)
    return out, skipped


def _no_provider(app: str | None, provider: str | None) -> str:
    """Why nothing was imported: CC Switch's database holds no provider (of ``app``, named ``provider``)."""
    if app and provider:
        return tr("CC Switch's database holds no provider of app {app} named {provider}").format(
            app=repr(app), provider=repr(provider)
        )
    if app:
        return tr("CC Switch's database holds no provider of app {app}").format(app=repr(app))
    if provider:
        return tr("CC Switch's database holds no provider named {provider}").format(provider=repr(provider))
    return tr("CC Switch's database holds no provider")


def _word(text: str) -> str:
    """An app name as it is when it is a plain word, else shown escaped."""
    return text if text.isascii() and text.isidentifier() else show(text)


def _unique(name: str, app: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    candidate = f"{name}-{app}"
    n = 2
    while candidate in taken:
        candidate, n = f"{name}-{app}-{n}", n + 1
    return candidate


def save_imports(imports: Sequence[Imported], *, store_keys: bool, dry_run: bool = False) -> Saved:
    """Add the imported profiles to kvswitch's config (creating it, the first profile active,
    when there is none) and, with ``store_keys``, their keys to the keyring. A profile name
    that exists is refused before anything is written; without ``store_keys`` a profile whose
    source held a key in plain text gets ``key = "none"`` (a note says so)."""
    from kvswitch.config import (
        config_file,
        edit_config,
        new_config_text,
        profile_table,
        read_config,
    )
    from kvswitch.edits import Set
    from kvswitch.io import read_optional, write_private
    from kvswitch.keys import check_key, set_key

    path = config_file()
    exists = read_optional(path) is not None
    config = read_config(path) if exists else None
    names = [i.name for i in imports]
    clash = [n for n in names if config is not None and n in config.model.profiles]
    twice = sorted({n for n in names if names.count(n) > 1})
    if clash or twice:
        which = clash or twice
        raise ImportRefusedError(
            tr("profile {name} exists; name the import with --profile NAME (nothing was written)").format(
                name=repr(which[0])
            ),
            Location(path),
        )
    final: list[Imported] = []
    for imp in imports:
        if imp.profile.key == "keyring" and not store_keys:
            imp = replace(
                imp,
                profile=imp.profile.model_copy(update={"key": "none"}),
                notes=(
                    *imp.notes,
                    tr("the key in it was not imported (add --key to store it in the keyring); the profile sends none"),
                ),
            )
        if store_keys and imp.key is not None:
            check_key(imp.key)
        final.append(imp)
    activated = final[0].name if final and (config is None or config.model.active_profile is None) else None
    if dry_run or not final:
        return Saved(path, not exists, tuple(final), (), activated)
    stored: list[str] = []
    for imp in final:
        if store_keys and imp.key is not None and imp.profile.key == "keyring":
            set_key(imp.name, imp.key)
            stored.append(imp.name)
    try:
        if config is None:
            first, rest = final[0], final[1:]
            write_private(path, new_config_text(first.name, first.profile, []).encode("utf-8"))
            if rest:
                edit_config([Set(("profiles", i.name), profile_table(i.profile)) for i in rest])
        else:
            edits = [Set(("profiles", i.name), profile_table(i.profile)) for i in final]
            if config.model.active_profile is None:  # a config holding only clients (detect --register)
                edits.append(Set(("active_profile",), final[0].name))
            edit_config(edits, config)
    except BaseException:
        from kvswitch.keys import delete_key

        for name in stored:  # no key left behind for a profile that was not written
            with contextlib.suppress(KvswitchError):
                delete_key(name)
        raise
    return Saved(path, not exists, tuple(final), tuple(stored), activated)
