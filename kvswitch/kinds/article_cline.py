"""The article's Cline-style VS Code ``settings.json`` (``cline.*`` keys, S-09…S-13).

No released Cline reads these keys (real Cline keeps its provider in
``~/.cline/data/settings/providers.json``: :mod:`kvswitch.kinds.cline`); the shape stays as
the article describes it. Only the ``cline.*`` keys are kvswitch's; every other key belongs
to the user or to other extensions. After a switch ``cline.cacheStrategy`` has the
article's form for the mode: ``chunkSize`` leaves in split mode, ``prefillEndpoint``/
``decodeEndpoint``/``kvTransferProtocol`` leave in merged mode; what leaves is remembered
and comes back, with its comment, on the return trip. ``enablePrefixCache`` and
``kvCacheDtype`` stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from kvswitch.literals import CLINE_MERGED_ONLY as MERGED_ONLY
from kvswitch.literals import CLINE_SPLIT_ONLY as SPLIT_ONLY
from kvswitch.records import replace

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit
    from kvswitch.state import Remembered

__all__ = ["FIELDS", "ArticleCline"]

_CS = "cline.cacheStrategy"
_RO = "cline.requestOptions"
FIELDS: dict[str, KeyPath] = {
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
_SPLIT_FIELDS = ("split.prefill_base_url", "split.decode_base_url", "split.transfer_protocol")
_CLINE_KEY = re.compile(r"^cline\.[A-Za-z]")
_VSCODE_USER = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def _recall(path: Path | None, key_path: KeyPath) -> Remembered | None:
    if path is None:
        return None
    from kvswitch.state import recall

    return recall(path, key_path)


def _exact_first(edits: list[Edit], orders: dict[KeyPath, int]) -> list[Edit]:
    """Keys that come back exactly (by their cut) go first, in the reverse of the order in which
    they left, so each finds the neighbours it left; then the rest, in order."""
    from kvswitch.edits import Insert

    exact = [e for e in edits if isinstance(e, Insert) and e.cut is not None]
    exact.sort(key=lambda e: -orders.get(e.path, 0))
    rest = [e for e in edits if not (isinstance(e, Insert) and e.cut is not None)]
    inserts_at = next((i for i, e in enumerate(rest) if isinstance(e, Insert)), len(rest))
    return [*rest[:inserts_at], *exact, *rest[inserts_at:]]


class ArticleCline(ArticleKind):
    id = "article-cline"
    aliases = ("cline",)
    product = "Cline (settings.json)"
    schema_file = "cline-settings.schema.json"
    schema_title = "kvswitch: cline.* keys of a Cline-style VS Code settings.json"
    docs_anchor = "the-articles-cline-style-settingsjson"
    _mode_path = (_CS, "mode")
    init_flag = "cline"

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        return (home / ".cline" / "settings.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if isinstance(data, dict) and any(_CLINE_KEY.match(str(k)) for k in data):
            return 2
        if path is not None and path.name in ("settings.json", "settings.jsonc"):
            parent = path.parent
            if parent.name == "User" and parent.parent.name in _VSCODE_USER:
                return 2  # VS Code's own user settings file
            return 1
        return 0

    def fields(self, data: Any) -> dict[str, KeyPath]:
        return FIELDS

    def owned(self, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if str(k).startswith("cline.")}
        return data

    def has_ours(self, data: Any) -> bool:
        return isinstance(data, dict) and any(str(k).startswith("cline.") for k in data)

    def owns_duplicate(self, key_path: KeyPath) -> bool:
        return bool(key_path) and str(key_path[0]).startswith("cline.")

    def split_endpoints_expected(self, data: Any) -> bool:
        return True

    def lint(self, cf: ConfigFile, subject: Subject, mode: Any) -> Iterator[Finding]:
        if mode != "merged":
            return
        for field in _SPLIT_FIELDS:
            path = FIELDS[field]
            if get_path(cf.data, path) is not MISSING:
                yield ("KVS103", tr("{key} is ignored in merged mode").format(key=path[-1]), path, True)

    def model(self) -> Any:
        from kvswitch.models import ClineSettings

        return ClineSettings

    def schema_extra(self, schema: dict[str, Any]) -> None:
        schema["additionalProperties"] = True  # settings.json holds every other extension's keys

    def json5_note(self) -> str:
        return tr("VS Code's settings.json takes JSONC only")

    def renders(self, field: str) -> bool:
        return field != "provider.name"

    def form_fields(self, data: Any, mode: str) -> dict[str, KeyPath]:
        """The block has the article's form for the mode: the split form keeps
        ``kvCacheDtype`` only when the file had it (D-12)."""
        skip = set(_SPLIT_FIELDS)
        if mode == "split":
            skip = {"cache.chunk_size"}
            if get_path(data, FIELDS["cache.kv_cache_dtype"]) is MISSING:
                skip.add("cache.kv_cache_dtype")
        return {k: v for k, v in FIELDS.items() if k not in skip}

    def drift(self, cf: ConfigFile, r: RenderInput) -> list[str]:
        out = super().drift(cf, r)
        block = cf.data.get(_CS) if isinstance(cf.data, dict) else None
        other = SPLIT_ONLY if r.mode == "merged" else MERGED_ONLY
        if isinstance(block, dict) and any(k in block for k in other):
            out.append("cache.form")  # keys of the other mode are still there
        return out

    def plan_mode(self, cf: ConfigFile, mode: Any, defaults: ModeDefaults | None) -> SwitchPlan:
        from kvswitch.edits import Delete, Insert, Set
        from kvswitch.errors import EditError
        from kvswitch.formats.jsonc import JsoncDocument
        from kvswitch.state import Remembered

        d = defaults or ModeDefaults()
        data = cf.data
        if not isinstance(data, dict):
            raise EditError(tr("settings.json does not hold an object"), cf.locate(()))
        block = data.get(_CS, MISSING)
        if block is MISSING:
            return self._new_block(cf, mode, d)
        if not isinstance(block, dict):
            raise EditError(tr("{key} is not an object").format(key=_CS), cf.locate((_CS,)))
        old = block.get("mode") if isinstance(block.get("mode"), str) else None
        # the block takes the mode's whole form: a file whose mode was flipped by hand (the other
        # form's keys still there) is completed; a file already in the form gets no edit at all
        leaving = MERGED_ONLY if mode == "split" else SPLIT_ONLY
        coming = SPLIT_ONLY if mode == "split" else MERGED_ONLY
        doc = cf.doc
        assert isinstance(doc, JsoncDocument)
        keys = list(block)
        edits: list[Edit] = [] if old == mode else [Set((_CS, "mode"), mode)]
        remember: dict[KeyPath, Remembered] = {}
        for key in leaving:
            if key not in block:
                continue
            prop = doc.prop((_CS, key))
            if prop is not None:
                idx = keys.index(key)
                after = keys[idx - 1] if idx > 0 else None
                raw, trailer = doc.property_source(prop)
                remember[(_CS, key)] = Remembered(raw, trailer, after)
            edits.append(Delete((_CS, key)))
        # exactly what each key takes with it (its comments too), so the way back is byte for byte
        for order, (path, cut) in enumerate(doc.cuts(edits).items() if remember else ()):
            if path in remember:
                remember[path] = replace(remember[path], cut=cut, order=order)
        present = {k for k in keys if k not in leaving}
        restored = []
        ends: tuple[str, str] | None = None
        previous = "mode"
        orders: dict[KeyPath, int] = {}
        for key in coming:
            if key in block:
                previous = key
                continue
            memo = _recall(cf.path, (_CS, key))
            if memo is not None:
                after = memo.after if memo.after in present else previous
                edits.append(Insert((_CS, key), raw=memo.raw, comment=memo.comment, after=after, cut=memo.cut))
                orders[(_CS, key)] = memo.order
                restored.append((_CS, key))
            else:
                value: Any
                if key == "chunkSize":
                    value = d.chunk_size
                elif key == "kvTransferProtocol":
                    value = d.protocol
                else:
                    ends = ends or endpoints(cf, d, FIELDS["provider.base_url"])
                    value = ends[0] if key == "prefillEndpoint" else ends[1]
                edits.append(Insert((_CS, key), value=value, after=previous))
            present.add(key)
            previous = key
        return SwitchPlan(self.id, old, mode, tuple(_exact_first(edits, orders)), remember, tuple(restored))

    def _new_block(self, cf: ConfigFile, mode: Any, d: ModeDefaults) -> SwitchPlan:
        from kvswitch.edits import Insert

        block: dict[str, Any] = {"mode": mode}
        if mode == "merged":
            block.update(chunkSize=d.chunk_size, kvCacheDtype="auto", enablePrefixCache=True)
        else:
            prefill, decode = endpoints(cf, d, FIELDS["provider.base_url"])
            block.update(
                prefillEndpoint=prefill, decodeEndpoint=decode, kvTransferProtocol=d.protocol, enablePrefixCache=True
            )
        ours = [k for k in cf.data if str(k).startswith("cline.")]
        return SwitchPlan(self.id, None, mode, (Insert((_CS,), value=block, after=ours[-1] if ours else None),))

    def skeleton(self, r: RenderInput) -> str:
        """A Cline ``settings.json`` in the article's form (S-10…S-12)."""
        profile, d, j = r.profile, r.defaults, json_value
        lines = [
            "{",
            "    // Cline (OpenAI-compatible provider). kvswitch owns the cline.* keys; add your own freely.",
            '    "cline.apiProvider": "openai-compatible",',
            f'    "cline.openAiBaseUrl": {j(profile.base_url)},',
        ]
        if r.key is not None:
            lines.append(f'    "cline.openAiApiKey": {j(r.key)},')
        lines += [
            f'    "cline.openAiModelId": {j(profile.model)},',
            '    "cline.requestOptions": {',
            f'        "temperature": {j(profile.request.temperature)},',
            f'        "maxTokens": {j(profile.request.max_tokens)},',
            f'        "stream": {j(profile.request.stream)}',
            "    },",
            '    "cline.cacheStrategy": {',
        ]
        if r.mode == "merged":
            body = [
                ("mode", "merged"),
                ("chunkSize", d.chunk_size),
                ("kvCacheDtype", profile.cache.kv_cache_dtype),
                ("enablePrefixCache", profile.cache.prefix_cache),
            ]
        else:
            body = [
                ("mode", "split"),
                ("prefillEndpoint", d.prefill),
                ("decodeEndpoint", d.decode),
                ("kvTransferProtocol", d.protocol),
                ("enablePrefixCache", profile.cache.prefix_cache),
            ]
        lines += [f"        {j(k)}: {j(v)}{',' if i < len(body) - 1 else ''}" for i, (k, v) in enumerate(body)]
        lines += ["    }", "}"]
        return "\n".join(lines) + "\n"


register(ArticleCline())
