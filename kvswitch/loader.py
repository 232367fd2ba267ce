"""``kvswitch.load``: any client file (or kvswitch's config) as the common view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvswitch.diagnostics import Severity
from kvswitch.document import ConfigFile, parse_config
from kvswitch.errors import ConfigError, ConfigValidationError, ConfigVersionError
from kvswitch.i18n import ntr, tr
from kvswitch.kinds import CONFIG, MISSING, get_path, kind_of, subjects
from kvswitch.models.common import ClientConfig, FileKind

__all__ = ["load", "to_view"]


def load(path: Path | str, kind: FileKind | None = None) -> ClientConfig:
    """Read, parse and validate ``path``; return its :class:`ClientConfig`.

    For kvswitch's own config the view is the active profile in the active mode.
    Raises ``ConfigParseError`` (with line:col), ``ConfigValidationError`` (its
    ``diagnostics`` hold every type error) or ``ReadError``."""
    from kvswitch.io import read_bytes

    path = Path(path)
    return to_view(parse_config(read_bytes(path), kind, path))


def to_view(cf: ConfigFile) -> ClientConfig:
    """The common view of a parsed file (validated against its kind's model first)."""
    from kvswitch.rules import check

    errors = [d for d in check(cf, git=False) if d.severity is Severity.ERROR and d.code in ("KVS002", "KVS005")]
    if any(d.code == "KVS005" for d in errors):
        first = next(d for d in errors if d.code == "KVS005")
        raise ConfigVersionError(first.message, first.location)
    if errors:
        first = errors[0]
        count = len(errors) - 1
        more = ntr(" (and {others} more)", " (and {others} more)", count).format(others=count) if count else ""
        raise ConfigValidationError(f"{first.code} {first.message}{more}", first.location, tuple(errors))
    subs = subjects(cf.kind, cf.data)
    if cf.kind == CONFIG:
        subs = [s for s in subs if s.active]
        if not subs:
            raise ConfigError(tr("kvswitch config has no active profile (kvswitch profile use NAME)"), cf.locate(()))
    parts: dict[str, dict[str, Any]] = {"provider": {}, "cache": {}, "split": {}, "request": {}}
    for name, key_path in subs[0].fields.items():
        value = get_path(cf.data, key_path)
        if value is MISSING or (cf.kind == CONFIG and name == "provider.api_key"):
            continue
        group, _, field = name.partition(".")
        parts[group][field] = value
    if "cache.mode" not in subs[0].fields:  # a real client: the mode is what its header says
        mode = kind_of(cf).file_mode(cf, None)
        if mode is not None:
            parts["cache"]["mode"] = mode
    return ClientConfig.model_validate(
        {
            "kind": cf.kind,
            "path": cf.path,
            "provider": parts["provider"],
            "cache": parts["cache"],
            "split": parts["split"] or None,
            "request": parts["request"],
        }
    )
