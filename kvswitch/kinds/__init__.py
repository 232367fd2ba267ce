"""Client kinds as plug-ins: one module per kind, one registry.

Every kind implements :class:`~kvswitch.kinds.base.ClientKind`; :func:`register` adds one
(the built-in ones register on import), :func:`get_kind` finds one by id or old alias,
:func:`detect_kind` tells a file's kind from its path and content together. Adding a
client is one new module here, its fixtures and a row in docs/clients.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvswitch.errors import Location, UnknownKindError
from kvswitch.i18n import tr
from kvswitch.kinds.base import (
    COMMON_FIELDS,
    MISSING,
    MODE_HEADER,
    ClientKind,
    ClientSettings,
    KeyPath,
    ModeDefaults,
    RenderInput,
    Subject,
    SwitchPlan,
    get_path,
)

__all__ = [
    "COMMON_FIELDS",
    "CONFIG",
    "KVSWITCH_CONFIG_NAME",
    "MISSING",
    "MODE_HEADER",
    "REQUEST_FIELDS",
    "STRATEGY_FIELDS",
    "ClientKind",
    "ClientSettings",
    "KeyPath",
    "ModeDefaults",
    "RenderInput",
    "Subject",
    "SwitchPlan",
    "all_kinds",
    "canonical",
    "choices",
    "client_kind",
    "default_client_paths",
    "detect_kind",
    "get_kind",
    "get_path",
    "kind_of",
    "register",
    "subjects",
    "unregister",
]

CONFIG = "kvswitch"
"""The kind of kvswitch's own config file."""
KVSWITCH_CONFIG_NAME = "kvswitch.toml"

STRATEGY_FIELDS: tuple[str, ...] = tuple(
    f for f in COMMON_FIELDS if f.startswith(("cache.", "split.")) and f != "cache.mode"
)
"""The common names of a profile's KV-cache settings besides the mode."""
REQUEST_FIELDS: tuple[str, ...] = tuple(f for f in COMMON_FIELDS if f.startswith("request."))
"""The common names of a profile's request options."""

_KINDS: dict[str, ClientKind] = {}
_ALIASES: dict[str, str] = {}
_BUILTIN = (
    "own_config",
    "article_cline",
    "article_ccswitch",
    "claude_code",
    "codex",
    "cline",
    "opencode",
    "qwen_code",
)


def register(kind: ClientKind) -> ClientKind:
    """Add ``kind`` to the registry (its id and aliases must be new); returns it."""
    for name in (kind.id, *kind.aliases):
        if name in _KINDS or name in _ALIASES:
            raise ValueError(f"kind id {name!r} is taken")
    _KINDS[kind.id] = kind
    for alias in kind.aliases:
        _ALIASES[alias] = kind.id
    return kind


def unregister(kind_id: str) -> None:
    """Remove a kind (tests register throwaway kinds and take them out again)."""
    kind = _KINDS.pop(kind_id)
    for alias in kind.aliases:
        _ALIASES.pop(alias, None)


def canonical(name: str) -> str:
    """The id ``name`` stands for (an old alias reads as its kind); unknown: unchanged."""
    return _ALIASES.get(name, name)


def get_kind(name: str) -> ClientKind:
    """The kind with id (or old alias) ``name``."""
    kind = _KINDS.get(canonical(name))
    if kind is None:
        known = ", ".join(k.id for k in all_kinds())
        raise UnknownKindError(tr("no client kind {name} (kinds: {known})").format(name=repr(name), known=known))
    return kind


def client_kind(name: str) -> ClientKind:
    """The client kind ``name`` (id or old alias); ``ValueError`` names the known ones."""
    kind = _KINDS.get(canonical(name))
    if kind is None or not kind.client:
        known = ", ".join(choices(clients_only=True))
        raise ValueError(tr("no client kind {name} (kinds: {known})").format(name=repr(name), known=known))
    return kind


def kind_of(cf: Any) -> ClientKind:
    """The kind of a parsed file (:class:`kvswitch.config_file.ConfigFile`)."""
    return get_kind(cf.kind)


def all_kinds(*, clients_only: bool = False) -> list[ClientKind]:
    """Every registered kind, in registration order."""
    return [k for k in _KINDS.values() if k.client or not clients_only]


def default_client_paths() -> dict[str, Path]:
    """Where each client kind usually keeps its user-level file (``HOME``, ``XDG_CONFIG_HOME``
    and the clients' own variables such as ``CODEX_HOME`` followed)."""
    import os

    from kvswitch.paths import user_dirs

    home, xdg = user_dirs()
    out = {}
    for kind in all_kinds(clients_only=True):
        found = kind.default_paths(home, xdg, os.environ)
        if found:
            out[kind.id] = found[0]
    return out


def choices(*, clients_only: bool = False) -> list[str]:
    """The names the command line accepts for a kind: ids, then old aliases."""
    kinds = all_kinds(clients_only=clients_only)
    return [k.id for k in kinds] + [a for k in kinds for a in k.aliases]


def subjects(kind: str, data: Any) -> list[Subject]:
    """The subjects of a parsed file of ``kind``."""
    return get_kind(kind).subjects(data)


def _parsed(fmt: str, text: str) -> Any:
    """``text`` parsed as ``fmt`` (plain values), or ``None`` when it does not parse."""
    body = text.removeprefix("\ufeff")
    if fmt == "toml":
        import tomllib

        try:
            return tomllib.loads(body)
        except (tomllib.TOMLDecodeError, RecursionError):
            return None
    if not body.lstrip(" \t\r\n").startswith(("{", "//", "/*")):
        return None
    from kvswitch.formats.jsonc import JsoncDocument, JsoncSyntaxError

    try:
        return JsoncDocument(body).value
    except (JsoncSyntaxError, RecursionError):
        return None


def detect_kind(path: Path | None, text: str | None = None, *, data_for: Callable[[str], Any] | None = None) -> str:
    """The kind of a file, by its path and content together: each kind scores how sure it
    is (:meth:`ClientKind.detect`) and the surest wins; a tie or no taker is an error.
    ``data_for(format)`` gives the text's values in a format (``None`` when it does not
    parse as that); by default ``text`` is parsed here."""
    parsed: dict[str, Any] = {}
    scores: list[tuple[int, ClientKind]] = []
    for kind in all_kinds():
        data = None
        if text is not None or data_for is not None:
            if kind.format not in parsed:
                parsed[kind.format] = data_for(kind.format) if data_for else _parsed(kind.format, text or "")
            data = parsed[kind.format]
        score = kind.detect(path, data)
        if score > 0:
            scores.append((score, kind))
    scores.sort(key=lambda s: -s[0])
    if scores and (len(scores) == 1 or scores[0][0] > scores[1][0]):
        return scores[0][1].id
    names = [k.id for _, k in scores if _ == scores[0][0]] if scores else []
    kinds = ", ".join(k.id for k in all_kinds())
    if names:
        message = tr(
            "cannot tell which kind of file this is (it could be any of {names}); name it with --kind ({kinds})"
        )
    else:
        message = tr(
            "cannot tell which kind of file this is (no client kind recognises it); name it with --kind ({kinds})"
        )
    raise UnknownKindError(
        message.format(names=", ".join(names), kinds=kinds),
        Location(path) if path is not None else None,
    )


for _module in _BUILTIN:
    importlib.import_module(f"kvswitch.kinds.{_module}")
