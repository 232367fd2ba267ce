"""kvswitch's own config, ``kvswitch.toml``: profiles, the active profile and mode, clients.

It is a kind so that lint, ``load`` and the schema treat it like any file; it cannot be
registered as a client. Its subjects are its profiles (the mode is global).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from kvswitch.kinds import CONFIG, KVSWITCH_CONFIG_NAME, register
from kvswitch.kinds.base import ClientKind, KeyPath, Subject, SwitchPlan, get_path

__all__ = ["OwnConfig", "profile_fields"]

_SPLIT_KEYS = ("prefill_base_url", "decode_base_url", "transfer_protocol", "max_transfer_concurrency")
_REQUEST_KEYS = ("temperature", "max_tokens", "stream", "timeout_seconds")


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


class OwnConfig(ClientKind):
    id = CONFIG
    product = "kvswitch"
    format: ClassVar[Literal["jsonc", "toml"]] = "toml"
    real = False
    client = False
    schema_file = "kvswitch-config.schema.json"
    schema_title = "kvswitch: kvswitch.toml (profiles and clients)"
    strict_keys = True
    keeps_both_modes = True

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name == KVSWITCH_CONFIG_NAME:
            return 3
        if not isinstance(data, dict):
            return 0
        if "clients" in data or "active_profile" in data:
            return 2
        profiles = data.get("profiles")
        tables = profiles.values() if isinstance(profiles, dict) else ()
        if any(isinstance(p, dict) and "base_url" in p for p in tables):
            return 2  # Codex has [profiles.NAME] tables too, never with a base_url
        return 0

    def subjects(self, data: Any) -> list[Subject]:
        profiles = data.get("profiles") if isinstance(data, dict) else None
        if not isinstance(profiles, dict):
            return []
        active = data.get("active_profile")
        return [Subject(self.id, profile_fields(name), profile=name, active=name == active) for name in profiles]

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        return ()  # its `key` fields are references, never keys

    def model(self) -> Any:
        from kvswitch.models import KvswitchConfig

        return KvswitchConfig

    def file_mode(self, cf: Any, defaults: Any) -> str | None:
        mode = get_path(cf.data, ("mode",))
        return mode if isinstance(mode, str) else None

    def plan_mode(self, cf: Any, mode: Any, defaults: Any) -> SwitchPlan:
        from kvswitch.edits import Set

        old = self.file_mode(cf, None)
        return SwitchPlan(self.id, old, mode, () if old == mode else (Set(("mode",), mode),))


register(OwnConfig())
