"""kvswitch's own config file (kind ``kvswitch``): read, validate, edit, render.

It lives at ``<config dir>/kvswitch.toml`` (platformdirs, or ``$KVSWITCH_HOME/config``).
Edits go through the same verified TOML editor and atomic write as client files, so a
hand-written comment in it survives ``kvswitch profile use``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch import paths
from kvswitch.document import ConfigFile, parse_config
from kvswitch.edits import Edit
from kvswitch.errors import ConfigError, ConfigValidationError, ConfigVersionError, Location
from kvswitch.i18n import tr
from kvswitch.kinds import CONFIG
from kvswitch.records import record

if TYPE_CHECKING:
    from kvswitch.literals import CacheMode
    from kvswitch.models import ClientEntry, KvswitchConfig, Profile

__all__ = [
    "Config",
    "add_client_edit",
    "client_mode",
    "client_path",
    "client_table",
    "config_file",
    "edit_config",
    "existing_config",
    "migrated_text",
    "new_config_text",
    "profile_table",
    "read_config",
    "read_config_text",
    "rename_profile",
]


def config_file() -> Path:
    """Where kvswitch's config is."""
    return paths.dirs().config_file


def client_path(entry: ClientEntry) -> Path:
    """A registered client's path, with ``~`` taken from ``HOME``."""
    raw = entry.path
    if raw == "~" or raw.startswith("~/"):
        home = os.environ.get("HOME") or str(Path.home())
        raw = home + raw[1:]
    return Path(raw)


def client_mode(config: Config, entry: ClientEntry) -> CacheMode:
    """The mode ``entry`` is to be in: its own (a switch of it alone), else the config's."""
    return entry.mode or config.model.mode


@record
class Config:
    """The parsed file (with positions, for edits) and its validated model."""

    file: ConfigFile
    model: KvswitchConfig

    @property
    def path(self) -> Path:
        assert self.file.path is not None
        return self.file.path

    def profile(self, name: str | None = None) -> tuple[str, Profile]:
        """A profile by name (default, ``None``: the active one; ``""`` is a name, never that)."""
        name = self.model.active_profile if name is None else name
        if name is None:
            raise ConfigError(
                tr(
                    "no active profile; choose one with: kvswitch profile use NAME "
                    "(or make one from a client's settings: kvswitch import CLIENT)"
                ),
                Location(self.path),
            )
        try:
            return name, self.model.profiles[name]
        except KeyError:
            from kvswitch.validate import NAME_MAX, show, show_name

            known = ", ".join(show_name(n) for n in sorted(self.model.profiles)) or tr("none")
            message = tr("no profile {name} (profiles: {profiles})").format(name=show(name, NAME_MAX), profiles=known)
            raise ConfigError(message, Location(self.path)) from None


def migrated_text(cf: ConfigFile) -> str | None:
    """The text of a config an older kvswitch wrote, brought to this one's version (``None``
    when it is current). Version 1 named the article's kinds ``cline``/``ccswitch`` and the
    split router ``split.probe_url`` (now ``article-cline``/``article-ccswitch`` and
    ``split.url``, renamed where it stands so its comment stays)."""
    from kvswitch.edits import Delete, Set
    from kvswitch.formats.toml import TomlDocument, rename_key
    from kvswitch.kinds import canonical
    from kvswitch.literals import CONFIG_VERSION

    data = cf.data
    if not isinstance(data, dict):
        return None
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version >= CONFIG_VERSION:
        return None
    doc = cf.doc
    assert isinstance(doc, TomlDocument)
    edits: list[Edit] = []
    profiles = data.get("profiles")
    for name, table in profiles.items() if isinstance(profiles, dict) else ():
        split = table.get("split") if isinstance(table, dict) else None
        if not isinstance(split, dict) or "probe_url" not in split:
            continue
        path = ("profiles", name, "split", "probe_url")
        try:
            doc = TomlDocument(rename_key(doc, path, "url"))
        except ValueError:  # dotted, quoted or inline, or url is there already
            edits.append(Delete(path))
            if "url" not in split:
                edits.append(Set((*path[:-1], "url"), split["probe_url"]))
    clients = data.get("clients")
    for i, entry in enumerate(clients if isinstance(clients, list) else ()):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if isinstance(kind, str) and canonical(kind) != kind:
            edits.append(Set(("clients", i, "kind"), canonical(kind)))
    edits.append(Set(("version",), CONFIG_VERSION))
    return doc.apply(edits)


def _parse(raw: bytes | str, path: Path) -> ConfigFile:
    """kvswitch's config parsed, and migrated in memory when an older kvswitch wrote it (the
    file on disk changes with the next write; ``raw`` stays the bytes read)."""
    cf = parse_config(raw, CONFIG, path)
    text = migrated_text(cf)
    if text is None:
        return cf
    return ConfigFile(path, CONFIG, cf.raw, parse_config(text, CONFIG, path).doc)


def _validate(cf: ConfigFile) -> KvswitchConfig:
    """The validated config: lint's checks first (their first error is the message), then the
    models' own rules; valid files never import pydantic (:mod:`kvswitch.config_check`)."""
    from kvswitch.literals import CONFIG_VERSION
    from kvswitch.rules import check

    version = cf.data.get("version") if isinstance(cf.data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > CONFIG_VERSION:
        raise ConfigVersionError(
            tr(
                "written by a newer kvswitch (config version {version}; this one reads up to {supported}); "
                "upgrade kvswitch"
            ).format(version=version, supported=CONFIG_VERSION),
            cf.locate(("version",)),
        )
    errors = [d for d in check(cf, git=False) if str(d.severity) == "error"]
    if errors:
        first = errors[0]
        more = (
            tr(" (and {count} more; see kvswitch lint {path})").format(count=len(errors) - 1, path=cf.path)
            if len(errors) > 1
            else ""
        )
        raise ConfigValidationError(f"{first.code} {first.message}{more}", first.location, tuple(errors))
    from kvswitch.config_check import fast_model

    fast = fast_model(cf.data)  # no pydantic, unless the models' own rules must decide
    if fast is not None:
        return fast
    return _validate_model(cf)


def _validate_model(cf: ConfigFile) -> KvswitchConfig:
    """The config as the pydantic model (the reference: its first error, where it finds one)."""
    from pydantic import ValidationError

    from kvswitch.models import KvswitchConfig
    from kvswitch.schema_check import error_message

    try:
        return KvswitchConfig.model_validate(cf.data)
    except ValidationError as exc:  # check() reports most first; a field's own rule lands here
        err = exc.errors(include_url=False, include_input=False)[0]
        where = tuple(err["loc"])
        message = error_message(err["type"], str(err["msg"]), err.get("ctx"))
        more = tr(" (and {count} more)").format(count=exc.error_count() - 1) if exc.error_count() > 1 else ""
        raise ConfigValidationError(
            f"{'.'.join(str(p) for p in where)}: {message}{more}", _located(cf, where)
        ) from None


def _located(cf: ConfigFile, where: tuple[Any, ...]) -> Location:
    """Where the value at ``where`` (or the nearest table above it that is there) is."""
    from kvswitch.kinds import MISSING, get_path

    while where and get_path(cf.data, where) is MISSING:
        where = where[:-1]
    try:
        return cf.locate(where)
    except (KeyError, IndexError, TypeError, ValueError):
        return Location(cf.path)


def read_config(path: Path | None = None) -> Config:
    """Read and validate kvswitch's config; a missing file says how to create one."""
    path = path or config_file()
    config = _read_optional(path)
    if config is None:
        raise ConfigError(tr("kvswitch is not set up yet: run kvswitch init"), Location(path))
    return config


def existing_config() -> Config | None:
    """kvswitch's config, or ``None`` when kvswitch is not set up yet."""
    return _read_optional(config_file())


def _read_optional(path: Path) -> Config | None:
    """The validated config at ``path``, or ``None`` when there is no file there."""
    from kvswitch.io import read_optional

    raw = read_optional(path)
    if raw is None:
        return None
    cf = _parse(raw, path)
    return Config(cf, _validate(cf))


def read_config_text(text: str, path: Path) -> Config:
    """A config from text (e.g. an edited version not yet written), validated."""
    cf = _parse(text, path)
    return Config(cf, _validate(cf))


def edited_text(config: Config, edits: Sequence[Edit]) -> str:
    """The config's text after ``edits``, verified as TOML and as a valid kvswitch config."""
    text = config.file.doc.apply(list(edits))
    _validate(_parse(text, config.path))
    return text


def edit_config(edits: Sequence[Edit], config: Config | None = None) -> Config:
    """Apply ``edits`` to the config file (atomic, backed up, re-applied if it changed meanwhile)."""
    from kvswitch.io import atomic_write

    config = config or read_config()
    text = edited_text(config, edits)

    def rebuild(current: bytes) -> bytes:
        again = Config(_parse(current, config.path), config.model)
        return edited_text(again, edits).encode("utf-8")

    atomic_write(config.path, text.encode("utf-8"), expected=config.file.raw, rebuild=rebuild)
    return read_config(config.path)


def client_table(entry: ClientEntry) -> dict[str, Any]:
    """A client entry as the table written into ``[[clients]]`` (defaults left out)."""
    data = entry.model_dump(mode="python", exclude_none=True, exclude_defaults=True)
    return {"path": entry.path, "kind": entry.kind, **data}


def add_client_edit(config: Config, entry: ClientEntry) -> Edit:
    """The edit that registers ``entry`` at the end of ``[[clients]]`` (creating the array)."""
    from kvswitch.edits import Set

    table = client_table(entry)
    n = len(config.model.clients)
    if n == 0 and "clients" not in config.file.data:
        return Set(("clients",), [table])
    return Set(("clients", n), table)


def rename_profile(config: Config, old: str, new: str) -> Config:
    """Rename a profile in place (its table headers only: comments inside stay); the active
    profile follows. ``new`` must be a valid name (:func:`kvswitch.validate.check_name`); ``old``
    may be any existing one, so a name kvswitch no longer allows can be renamed away. Inline
    tables fall back to rewriting the profile's tables."""
    from kvswitch.edits import Delete, Set
    from kvswitch.formats.toml import TomlDocument, rename_table
    from kvswitch.io import atomic_write
    from kvswitch.validate import check_name

    check_name(new)
    doc = config.file.doc
    assert isinstance(doc, TomlDocument)
    try:
        text = rename_table(doc, ("profiles", old), new)
    except ValueError:
        text = doc.apply([Delete(("profiles", old)), Set(("profiles", new), profile_table(config.model.profiles[old]))])
    if config.model.active_profile == old:
        text = TomlDocument(text).apply([Set(("active_profile",), new)])
    read_config_text(text, config.path)  # the result must be a valid config
    atomic_write(config.path, text.encode("utf-8"), expected=config.file.raw)
    return read_config(config.path)


def profile_table(profile: Profile) -> dict[str, Any]:
    """A profile as the plain tables written into the config (unset endpoints left out)."""
    data = profile.model_dump(mode="python", exclude_none=True)
    if not data.get("headers"):
        data.pop("headers", None)
    return data


def _toml_key(name: str) -> str:
    """``name`` as a TOML key: bare where it may be, else quoted (``"a.b"`` is one key)."""
    import re

    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_value(name)


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def new_config_text(name: str, profile: Profile, clients: Sequence[ClientEntry], mode: str = "merged") -> str:
    """The text ``kvswitch init`` writes: the article's defaults, with a comment per table."""
    from kvswitch.literals import CONFIG_VERSION

    table = profile_table(profile)
    quoted = _toml_key(name)
    head = tr(
        "kvswitch config. Edit it by hand or with kvswitch profile/client commands;\n"
        "comments you add are kept. API keys are never stored here: a profile's `key` is\n"
        '"keyring" (the OS keyring: kvswitch key set PROFILE), "env:NAME" or "none" (no key).'
    )
    lines = [
        *(f"# {line}" for line in head.splitlines()),
        f"version = {CONFIG_VERSION}",
        f"active_profile = {_toml_value(name)}",
        f"mode = {_toml_value(mode)}   # merged | split",
        "",
        f"[profiles.{quoted}]",
    ]
    for key in ("provider", "base_url", "url_convention", "model", "key"):
        lines.append(f"{key} = {_toml_value(table[key])}")
    if not profile.mode_header:
        lines.append("mode_header = false")
    notes = {
        "merged": tr("merged mode: chunked prefill on one instance"),
        "split": tr("split mode: prefill/decode endpoints (default: base_url) and KV transfer"),
        "cache": tr("both modes"),
        "request": tr("what clients send"),
    }
    for sub in ("merged", "split", "cache", "request"):
        lines += ["", f"[profiles.{quoted}.{sub}]", f"# {notes[sub]}"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in table[sub].items()]
    if profile.headers:
        lines += ["", f"[profiles.{quoted}.headers]", "# " + tr("extra headers the clients send")]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in profile.headers.items()]
    for entry in clients:
        lines += ["", "[[clients]]"]
        data = entry.model_dump(mode="python", exclude_none=True, exclude_defaults=True)
        data = {"path": entry.path, "kind": entry.kind, **data}
        lines += [f"{k} = {_toml_value(v)}" for k, v in data.items()]
    return "\n".join(lines) + "\n"
