"""A profile edited as a form (the tray's settings dialog): its values by common field name,
the edits they make to kvswitch's config, and every finding the rules have about the result.

Each value goes through :func:`kvswitch.validate.profile_value` first, the validation the
command line uses too: a value lint would fix is stored fixed, with its finding kept as a note
(chunk size 500 → "it becomes 512", and 512 is what is saved); a value lint would call an error
(an endpoint that is not an http(s) URL) is an error finding and makes no edit. The check then
renders the edited config text and runs :func:`kvswitch.rules.check` over it, so a form gets
the diagnostics ``kvswitch lint`` would give the saved file. Checking reads nothing from disk;
:func:`save_profile` writes through :func:`kvswitch.config.edit_config` (atomic, backed up,
comments kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvswitch.errors import ConfigValidationError, EditError, Location
from kvswitch.i18n import ntr, tr
from kvswitch.kinds import CONFIG, MISSING, REQUEST_FIELDS, STRATEGY_FIELDS, get_path
from kvswitch.kinds.own_config import profile_fields

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.diagnostics import Diagnostic
    from kvswitch.edits import Edit

__all__ = ["FIELDS", "ProfileCheck", "check_profile", "profile_values", "save_profile"]

FIELDS = (*STRATEGY_FIELDS, *REQUEST_FIELDS)
"""The fields of a profile a form edits (common names, :func:`kvswitch.kinds.own_config.profile_fields`)."""


@dataclass(frozen=True)
class ProfileCheck:
    """What saving a form would do: the edits, the config text after them, and the findings
    about this profile in that text (``errors`` block a save)."""

    profile: str
    edits: tuple[Edit, ...]
    text: str
    diagnostics: tuple[Diagnostic, ...]
    fields: Mapping[str, tuple[str | int, ...]]

    @property
    def changed(self) -> bool:
        return bool(self.edits)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if str(d.severity) == "error")

    def field_of(self, diagnostic: Diagnostic) -> str | None:
        """The form field a finding is about (``None``: another part of the profile)."""
        for name, path in self.fields.items():
            if diagnostic.key_path[: len(path)] == path:
                return name
        return None

    def for_field(self, field: str) -> list[Diagnostic]:
        return [d for d in self.diagnostics if self.field_of(d) == field]


def _paths(name: str) -> dict[str, tuple[str | int, ...]]:
    every = profile_fields(name)
    return {f: every[f] for f in FIELDS}


def profile_values(config: Config, name: str | None = None) -> dict[str, Any]:
    """The form fields of a profile as the config holds them (defaults filled in; an endpoint
    that is not set, so that it falls back to the base URL, is ``None``)."""
    name, profile = config.profile(name)
    return {
        "cache.chunk_size": profile.merged.chunk_size,
        "cache.kv_cache_dtype": profile.cache.kv_cache_dtype,
        "cache.prefix_cache": profile.cache.prefix_cache,
        "split.prefill_base_url": profile.split.prefill_base_url,
        "split.decode_base_url": profile.split.decode_base_url,
        "split.transfer_protocol": profile.split.transfer_protocol,
        "split.max_transfer_concurrency": profile.split.max_transfer_concurrency,
        "request.temperature": profile.request.temperature,
        "request.max_tokens": profile.request.max_tokens,
        "request.stream": profile.request.stream,
        "request.timeout_seconds": profile.request.timeout_seconds,
    }


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same kind (``True`` is not ``1``; ``120`` is ``120.0``)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _edits(
    config: Config, paths: Mapping[str, tuple[str | int, ...]], values: Mapping[str, Any]
) -> tuple[list[Edit], list[Diagnostic]]:
    """The edits the form's values make, and what the input validation said about them."""
    from kvswitch.diagnostics import Diagnostic, Severity
    from kvswitch.edits import Delete, Set
    from kvswitch.validate import InvalidValueError, profile_value

    def said(code: str, severity: Severity, message: str, path: tuple[str | int, ...]) -> Diagnostic:
        loc = config.file.locate(path)
        return Diagnostic(code, severity, message, loc.path, loc.line, loc.column, path)

    unknown = sorted(set(values) - set(paths))
    if unknown:
        raise ValueError(tr("not a profile form field: {fields}").format(fields=", ".join(unknown)))
    defaults = _defaults()
    edits: list[Edit] = []
    notes: list[Diagnostic] = []
    for field, value in values.items():
        path = paths[field]
        current = get_path(config.file.data, path)
        if isinstance(value, str) and field.startswith("split.") and field.endswith("_base_url"):
            value = value.strip() or None
        if value is not None:
            try:
                value, note = profile_value([str(p) for p in path[2:]], value)
            except InvalidValueError as exc:
                notes.append(said(exc.code, Severity.ERROR, exc.message, path))
                continue
            if note is not None:
                notes.append(said(note.code, Severity.WARNING, note.message, path))
        if value is None:
            if current is not MISSING:
                edits.append(Delete(path))
            continue
        if current is MISSING and _same(value, defaults.get(field)):
            continue  # a default the file leaves out stays left out
        if current is MISSING or not _same(current, value):
            edits.append(Set(path, value))
    return edits, notes


def _defaults() -> dict[str, Any]:
    """The value each form field has when the config leaves it out."""
    from kvswitch.models import MergedProfile, RequestOptions, SharedCache, SplitProfile

    merged, shared, split, request = MergedProfile(), SharedCache(), SplitProfile(), RequestOptions()
    return {
        "cache.chunk_size": merged.chunk_size,
        "cache.kv_cache_dtype": shared.kv_cache_dtype,
        "cache.prefix_cache": shared.prefix_cache,
        "split.prefill_base_url": None,
        "split.decode_base_url": None,
        "split.transfer_protocol": split.transfer_protocol,
        "split.max_transfer_concurrency": split.max_transfer_concurrency,
        "request.temperature": request.temperature,
        "request.max_tokens": request.max_tokens,
        "request.stream": request.stream,
        "request.timeout_seconds": request.timeout_seconds,
    }


def check_profile(config: Config, name: str, values: Mapping[str, Any]) -> ProfileCheck:
    """Apply the form's ``values`` (any subset of :data:`FIELDS`; ``None`` unsets an endpoint)
    to profile ``name`` in memory, validated and normalised as the command line does, and lint
    the result. Unchanged values make no edit; a refused value makes none either."""
    from kvswitch.document import parse_config
    from kvswitch.errors import ConfigParseError
    from kvswitch.rules import check

    name, _ = config.profile(name)
    paths = _paths(name)
    edits, notes = _edits(config, paths, values)
    try:
        text = config.file.doc.apply(edits) if edits else config.file.text
        cf = parse_config(text, CONFIG, config.path)
    except (ValueError, ConfigParseError) as exc:
        message = tr("profile {name}: cannot apply the form: {error}").format(name=repr(name), error=exc)
        raise EditError(message, Location(config.path)) from exc
    prefix = ("profiles", name)
    found = tuple(notes) + tuple(d for d in check(cf, git=False) if d.key_path[:2] == prefix)
    return ProfileCheck(name, tuple(edits), text, found, paths)


def save_profile(name: str, values: Mapping[str, Any], config: Config | None = None) -> Config:
    """Write the form's values into profile ``name`` (atomic, backed up, comments kept); an
    error finding refuses the save with its message. Returns the config as saved."""
    from kvswitch.config import edit_config, read_config

    config = config or read_config()
    result = check_profile(config, name, values)
    if result.errors:
        first = result.errors[0]
        count = len(result.errors) - 1
        more = ntr(" (and {others} more)", " (and {others} more)", count).format(others=count) if count else ""
        raise ConfigValidationError(f"{first.code} {first.message}{more}", first.location, result.errors)
    if not result.changed:
        return config
    return edit_config(result.edits, config)
