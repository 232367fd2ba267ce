"""The article's CC Switch-style ``config.toml`` (``[provider]``, ``[cache]``,
``[cache.split]``, ``[request]``, S-15…S-17).

Real CC Switch keeps its state in SQLite and writes the live files of the clients it manages;
this shape stays as the article describes it. A switch sets ``[cache].mode``; going to split,
a missing ``[cache.split]`` is created (from the profile, else both endpoints =
``[provider].base_url``, ``layer-wise``, 4). Nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from kvswitch.i18n import tr
from kvswitch.kinds import register
from kvswitch.kinds.article import ArticleKind, endpoints, json_value
from kvswitch.kinds.base import (
    MISSING,
    Finding,
    KeyPath,
    ModeDefaults,
    RenderInput,
    Subject,
    SwitchPlan,
    get_path,
)

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["FIELDS", "ArticleCCSwitch"]

_CACHE_KEYS = ("chunk_size", "kv_cache_dtype", "prefix_cache")
_SPLIT_KEYS = ("prefill_base_url", "decode_base_url", "transfer_protocol", "max_transfer_concurrency")
_REQUEST_KEYS = ("temperature", "max_tokens", "stream", "timeout_seconds")
FIELDS: dict[str, KeyPath] = {
    **{f"provider.{k}": ("provider", k) for k in ("name", "base_url", "api_key", "model")},
    **{f"cache.{k}": ("cache", k) for k in ("mode", *_CACHE_KEYS)},
    **{f"split.{k}": ("cache", "split", k) for k in _SPLIT_KEYS},
    **{f"request.{k}": ("request", k) for k in _REQUEST_KEYS},
}


class ArticleCCSwitch(ArticleKind):
    id = "article-ccswitch"
    aliases = ("ccswitch",)
    product = "CC Switch (config.toml)"
    format: ClassVar[Literal["jsonc", "toml"]] = "toml"
    schema_file = "ccswitch-config.schema.json"
    schema_title = "kvswitch: CC Switch config.toml"
    docs_anchor = "the-articles-cc-switch-style-configtoml"
    _mode_path = ("cache", "mode")
    init_flag = "ccswitch"

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        return (xdg / "cc-switch" / "config.toml",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name == "config.toml" and path.parent.name in ("cc-switch", ".cc-switch"):
            return 3
        if isinstance(data, dict) and ("provider" in data or "cache" in data):
            return 1
        return 0

    def fields(self, data: Any) -> dict[str, KeyPath]:
        return FIELDS

    def split_endpoints_expected(self, data: Any) -> bool:
        return get_path(data, ("cache", "split")) is not MISSING

    def lint(self, cf: ConfigFile, subject: Subject, mode: Any) -> Iterator[Finding]:
        if mode == "split" and get_path(cf.data, ("cache", "split")) is MISSING:
            yield (
                "KVS110",
                tr("split mode without a [cache.split] table (prefill_base_url, decode_base_url)"),
                ("cache", "mode"),
                False,
            )

    def model(self) -> Any:
        from kvswitch.models import CCSwitchConfig

        return CCSwitchConfig

    def form_fields(self, data: Any, mode: str) -> dict[str, KeyPath]:
        """``[cache.split]`` stays once it exists (D-3)."""
        if mode == "merged" and get_path(data, ("cache", "split")) is MISSING:
            return {k: v for k, v in FIELDS.items() if not k.startswith("split.")}
        return FIELDS

    def plan_mode(self, cf: ConfigFile, mode: Any, defaults: ModeDefaults | None) -> SwitchPlan:
        from kvswitch.edits import Set
        from kvswitch.errors import EditError

        d = defaults or ModeDefaults()
        cache = get_path(cf.data, ("cache",))
        if cache is not MISSING and not isinstance(cache, dict):
            raise EditError(tr("[cache] is not a table"), cf.locate(("cache",)))
        old = self.file_mode(cf, d)
        if old == mode:
            return SwitchPlan(self.id, old, mode)
        edits: list[Edit] = [Set(("cache", "mode"), mode)]
        if mode == "split" and get_path(cf.data, ("cache", "split")) is MISSING:
            prefill, decode = endpoints(cf, d, FIELDS["provider.base_url"])
            edits.append(
                Set(
                    ("cache", "split"),
                    {
                        "prefill_base_url": prefill,
                        "decode_base_url": decode,
                        "transfer_protocol": d.protocol,
                        "max_transfer_concurrency": d.max_transfer_concurrency,
                    },
                )
            )
        return SwitchPlan(self.id, old, mode, tuple(edits))

    def skeleton(self, r: RenderInput) -> str:
        """A CC Switch ``config.toml`` in the article's form (S-16, S-17)."""
        profile, d, j, mode = r.profile, r.defaults, json_value, r.mode
        req = profile.request
        lines = [
            "# CC Switch provider config (written by kvswitch init; comments and other tables are yours)",
            "[provider]",
            f"name = {j(profile.provider)}",
            f"base_url = {j(profile.base_url)}",
        ]
        if r.key is not None:
            lines.append(f"api_key = {j(r.key)}")
        lines += [
            f"model = {j(profile.model)}",
            "",
            "[cache]",
            f'mode = {j(mode)}{" " * (8 if mode == "merged" else 9)}# "merged" | "split"',
            f"chunk_size = {d.chunk_size}",
            f"kv_cache_dtype = {j(profile.cache.kv_cache_dtype)}",
            f"prefix_cache = {j(profile.cache.prefix_cache)}",
            "",
            "[cache.split]",
            f"prefill_base_url = {j(d.prefill)}",
            f"decode_base_url = {j(d.decode)}",
            f"transfer_protocol = {j(d.protocol)}",
            f"max_transfer_concurrency = {d.max_transfer_concurrency}",
            "",
            "[request]",
            f"temperature = {j(req.temperature)}",
            f"max_tokens = {req.max_tokens}",
            f"stream = {j(req.stream)}",
            f"timeout_seconds = {j(req.timeout_seconds)}",
        ]
        return "\n".join(lines) + "\n"


register(ArticleCCSwitch())
