"""The three kinds of file: how to tell them apart, and where each common field lives.

A *field map* says, for one kind, which key path in the file holds each field of the
common view (``cache.chunk_size`` is ``cline.cacheStrategy → chunkSize`` in a Cline file and
``cache → chunk_size`` in CC Switch's). Rules, ``load`` and ``switch`` are written once
against the common names and use the map to find values and their line and column.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvswitch.errors import Location, UnknownKindError
from kvswitch.literals import FileKind

__all__ = [
    "KINDS",
    "KIND_FORMAT",
    "KVSWITCH_CONFIG_NAME",
    "REQUEST_FIELDS",
    "STRATEGY_FIELDS",
    "Subject",
    "detect_kind",
    "get_path",
    "subjects",
]

KINDS: tuple[FileKind, ...] = ("cline", "ccswitch", "kvswitch")
KIND_FORMAT: dict[str, str] = {"cline": "jsonc", "ccswitch": "toml", "kvswitch": "toml"}
KVSWITCH_CONFIG_NAME = "kvswitch.toml"

KeyPath = tuple[str | int, ...]

_CACHE_KEYS = ("chunk_size", "kv_cache_dtype", "prefix_cache")
_SPLIT_KEYS = ("prefill_base_url", "decode_base_url", "transfer_protocol", "max_transfer_concurrency")
_REQUEST_KEYS = ("temperature", "max_tokens", "stream", "timeout_seconds")

STRATEGY_FIELDS: tuple[str, ...] = (*(f"cache.{k}" for k in _CACHE_KEYS), *(f"split.{k}" for k in _SPLIT_KEYS))
"""The common names of a profile's KV-cache settings besides the mode (S-13…S-17)."""
REQUEST_FIELDS: tuple[str, ...] = tuple(f"request.{k}" for k in _REQUEST_KEYS)
"""The common names of a profile's request options."""

_CS = "cline.cacheStrategy"
_RO = "cline.requestOptions"
CLINE_FIELDS: dict[str, KeyPath] = {
    # cline.apiProvider names the protocol ("openai-compatible"), not the provider: no mapping
    "provider.base_url": ("cline.openAiBaseUrl",),
    "provider.api_key": ("cline.openAiApiKey",),
    "provider.model": ("cline.openAiModelId",),
    "cache.mode": (_CS, "mode"),
    "cache.chunk_size": (_CS, "chunkSize"),
    "cache.kv_cache_dtype": (_CS, "kvCacheDtype"),
    "cache.prefix_cache": (_CS, "enablePrefixCache"),
    "split.prefill_base_url": (_CS, "prefillEndpoint"),
    "split.decode_base_url": (_CS, "decodeEndpoint"),
    "split.transfer_protocol": (_CS, "kvTransferProtocol"),
    "request.temperature": (_RO, "temperature"),
    "request.max_tokens": (_RO, "maxTokens"),
    "request.stream": (_RO, "stream"),
}

CCSWITCH_FIELDS: dict[str, KeyPath] = {
    **{f"provider.{k}": ("provider", k) for k in ("name", "base_url", "api_key", "model")},
    **{f"cache.{k}": ("cache", k) for k in ("mode", *_CACHE_KEYS)},
    **{f"split.{k}": ("cache", "split", k) for k in _SPLIT_KEYS},
    **{f"request.{k}": ("request", k) for k in _REQUEST_KEYS},
}


def profile_fields(name: str) -> dict[str, KeyPath]:
    """Field map of one profile in kvswitch's own config (the mode is global)."""
    p: KeyPath = ("profiles", name)
    return {
        "provider.name": (*p, "provider"),
        "provider.base_url": (*p, "base_url"),
        "provider.api_key": (*p, "key"),
        "provider.model": (*p, "model"),
        "cache.mode": ("mode",),
        "cache.chunk_size": (*p, "merged", "chunk_size"),
        "cache.kv_cache_dtype": (*p, "cache", "kv_cache_dtype"),
        "cache.prefix_cache": (*p, "cache", "prefix_cache"),
        **{f"split.{k}": (*p, "split", k) for k in _SPLIT_KEYS},
        **{f"request.{k}": (*p, "request", k) for k in _REQUEST_KEYS},
    }


@dataclass(frozen=True, slots=True)
class Subject:
    """One set of common fields in a file: the file itself, or one profile of kvswitch's config."""

    kind: FileKind
    fields: dict[str, KeyPath]
    profile: str | None = None
    active: bool = True


def subjects(kind: FileKind, data: Any) -> list[Subject]:
    """The subjects of a parsed file of ``kind``."""
    if kind == "cline":
        return [Subject("cline", CLINE_FIELDS)]
    if kind == "ccswitch":
        return [Subject("ccswitch", CCSWITCH_FIELDS)]
    profiles = data.get("profiles") if isinstance(data, dict) else None
    if not isinstance(profiles, dict):
        return []
    active = data.get("active_profile")
    return [
        Subject("kvswitch", profile_fields(name), profile=name, active=name == active)
        for name in profiles
    ]


_MISSING = object()


def get_path(data: Any, path: KeyPath) -> Any:
    """The value at ``path`` or the module's ``MISSING`` sentinel."""
    for part in path:
        if isinstance(data, dict):
            if part not in data:
                return _MISSING
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and -len(data) <= part < len(data):
            data = data[part]
        else:
            return _MISSING
    return data


MISSING = _MISSING

_CLINE_KEY = re.compile(r'"cline\.[A-Za-z]')


def detect_kind(path: Path | None, text: str | None = None) -> FileKind:
    """The kind of a file: by its name first, then by its content (D-12)."""
    if path is not None:
        name = path.name
        if name in ("settings.json", "settings.jsonc"):
            return "cline"
        if name == KVSWITCH_CONFIG_NAME:
            return "kvswitch"
        if name == "config.toml" and path.parent.name in ("cc-switch", ".cc-switch"):
            return "ccswitch"
    if text is not None:
        stripped = text.lstrip("\ufeff \t\r\n")
        if _CLINE_KEY.search(text) and stripped.startswith(("{", "//", "/*")):
            return "cline"
        try:
            data = tomllib.loads(text.removeprefix("\ufeff"))
        except (tomllib.TOMLDecodeError, RecursionError):
            data = None
        if isinstance(data, dict):
            if "profiles" in data or "clients" in data or "active_profile" in data:
                return "kvswitch"
            if "provider" in data or "cache" in data:
                return "ccswitch"
    raise UnknownKindError(
        "cannot tell which kind of file this is (expected a Cline settings.json, "
        "a CC Switch config.toml or kvswitch.toml); name it with --kind cline|ccswitch|kvswitch",
        Location(path) if path is not None else None,
    )
