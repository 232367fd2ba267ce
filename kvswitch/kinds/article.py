"""What the article's two shapes share: the mode and the cache settings live in the file.

A *mode flip* moves keys between the two forms and brings back remembered values; the
profile only fills what was never there. A *profile render* makes every owned value the
profile's. A key field is written only when the caller passes the key and it differs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from kvswitch.i18n import tr
from kvswitch.kinds.base import ClientKind, KeyPath, ModeDefaults, RenderInput, SwitchPlan, get_path

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["ArticleKind", "desired_values", "endpoints", "json_value"]


def desired_values(profile: Any, mode: str, d: ModeDefaults) -> dict[str, Any]:
    """The value of every common field the profile decides, for ``mode`` (no key)."""
    return {
        "provider.name": profile.provider,
        "provider.base_url": profile.base_url,
        "provider.model": profile.model,
        "cache.mode": mode,
        "cache.chunk_size": d.chunk_size,
        "cache.kv_cache_dtype": profile.cache.kv_cache_dtype,
        "cache.prefix_cache": profile.cache.prefix_cache,
        "split.prefill_base_url": d.prefill,
        "split.decode_base_url": d.decode,
        "split.transfer_protocol": d.protocol,
        "split.max_transfer_concurrency": d.max_transfer_concurrency,
        "request.temperature": profile.request.temperature,
        "request.max_tokens": profile.request.max_tokens,
        "request.stream": profile.request.stream,
        "request.timeout_seconds": profile.request.timeout_seconds,
    }


def endpoints(cf: ConfigFile, d: ModeDefaults, base_path: KeyPath) -> tuple[str, str]:
    """The split endpoints to write: the profile's, else the file's base URL for both."""
    from kvswitch.errors import EditError

    value = get_path(cf.data, base_path)
    base = value.rstrip("/") if isinstance(value, str) and value.strip() else None
    prefill, decode = d.prefill or base, d.decode or base
    if prefill is None or decode is None:
        message = tr(
            "split mode needs prefill and decode endpoints, and there is no profile, no remembered "
            "value and no {key} to take them from"
        )
        raise EditError(message.format(key=".".join(map(str, base_path))), cf.locate(base_path))
    return prefill, decode


def json_value(value: Any) -> str:
    """``value`` as JSON (and TOML) writes it; 120.0 reads better as 120."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return json.dumps(value, ensure_ascii=False)


class ArticleKind(ClientKind):
    """Base of the article's shapes."""

    real = False
    write_key_default = True
    takes_effect: ClassVar[Any] = "next start"
    indent: ClassVar[str] = "    "
    _mode_path: ClassVar[KeyPath]

    def file_mode(self, cf: ConfigFile, defaults: ModeDefaults | None) -> str | None:
        mode = get_path(cf.data, self._mode_path)
        return mode if isinstance(mode, str) else None

    def form_fields(self, data: Any, mode: str) -> dict[str, KeyPath]:
        """The fields this file carries in ``mode``."""
        return self.fields(data)

    def renders(self, field: str) -> bool:
        """Whether a profile render writes ``field`` (its key aside)."""
        return True

    def render(self, cf: ConfigFile, r: RenderInput) -> tuple[list[Edit], SwitchPlan]:
        from kvswitch.edits import Set, apply_to_data

        plan = self.plan_mode(cf, r.mode, r.defaults)
        edits: list[Edit] = list(plan.edits)
        data = apply_to_data(cf.data, edits) if edits else cf.data
        if r.profile_wins:
            want = desired_values(r.profile, r.mode, r.defaults)
            for field, path in self.form_fields(data, r.mode).items():
                if field in want and self.renders(field) and get_path(data, path) != want[field]:
                    edits.append(Set(path, want[field]))
        if r.key is not None:
            path = self.fields(data)["provider.api_key"]
            if get_path(data, path) != r.key:
                edits.append(Set(path, r.key))
        return edits, plan

    def drift(self, cf: ConfigFile, r: RenderInput) -> list[str]:
        want = desired_values(r.profile, r.mode, r.defaults)
        data = cf.data
        return [
            field
            for field, path in self.form_fields(data, r.mode).items()
            if field in want and self.renders(field) and get_path(data, path) != want[field]
        ]
