"""A profile rendered into a client file: which values each client key should hold.

The common field names of :mod:`kvswitch.kinds` are the bridge: a profile gives a value per
common field (``cache.chunk_size``, ``split.prefill_base_url``…), the kind's field map says
where that lives in the file (Cline: S-10…S-12; CC Switch: S-16).

Two ways to bring a file to a profile and mode (D-12):
- a *mode flip* (``kvswitch switch MODE``) moves keys between the two forms and brings back
  remembered values; the profile only fills what was never there;
- a *profile render* (``kvswitch profile use``) makes every owned value the profile's.
A key field is written only when the caller passes the key and it differs from the file's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvswitch.document import ConfigFile
from kvswitch.edits import Edit, Set, apply_to_data
from kvswitch.kinds import CCSWITCH_FIELDS, CLINE_FIELDS, MISSING, get_path
from kvswitch.literals import CacheMode
from kvswitch.switching import ModeDefaults, SwitchPlan, plan_switch

if TYPE_CHECKING:
    from kvswitch.models import Profile

__all__ = ["desired_values", "drift", "mode_defaults", "render_edits"]

_KEY_FIELD = "provider.api_key"


def mode_defaults(profile: Profile) -> ModeDefaults:
    """What a mode flip writes where a file has no value of its own."""
    return ModeDefaults(
        chunk_size=profile.merged.chunk_size,
        prefill=profile.split.prefill_base_url or profile.base_url,
        decode=profile.split.decode_base_url or profile.base_url,
        protocol=profile.split.transfer_protocol,
        max_transfer_concurrency=profile.split.max_transfer_concurrency,
    )


def desired_values(profile: Profile, mode: CacheMode) -> dict[str, Any]:
    """The value of every common field the profile decides, for ``mode`` (no key)."""
    d = mode_defaults(profile)
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


def _fields(cf: ConfigFile, data: Any, mode: CacheMode) -> dict[str, tuple[str | int, ...]]:
    """The fields this file should carry in ``mode``: Cline's block has the article's form
    for the mode (the split form keeps ``kvCacheDtype`` only when the file had it, D-12);
    CC Switch keeps ``[cache.split]`` once it exists (D-3)."""
    if cf.kind == "cline":
        skip = {"split.prefill_base_url", "split.decode_base_url", "split.transfer_protocol"}
        if mode == "split":
            skip = {"cache.chunk_size"}
            if get_path(data, CLINE_FIELDS["cache.kv_cache_dtype"]) is MISSING:
                skip.add("cache.kv_cache_dtype")
        return {k: v for k, v in CLINE_FIELDS.items() if k not in skip}
    fields = dict(CCSWITCH_FIELDS)
    if mode == "merged" and get_path(data, ("cache", "split")) is MISSING:
        fields = {k: v for k, v in fields.items() if not k.startswith("split.")}
    return fields


def render_edits(
    cf: ConfigFile, profile: Profile, mode: CacheMode, *, key: str | None = None, profile_wins: bool = True
) -> tuple[list[Edit], SwitchPlan]:
    """The edits that bring ``cf`` to ``profile`` in ``mode``.

    ``profile_wins=False`` is a mode flip: only the mode's form changes (remembered values
    come back). ``key`` is written only when given and different from the file's. Returns
    the edits and the mode plan (what it takes out is remembered by the caller)."""
    plan = plan_switch(cf, mode, mode_defaults(profile))
    edits: list[Edit] = list(plan.edits)
    data = apply_to_data(cf.data, edits) if edits else cf.data
    if profile_wins:
        want = desired_values(profile, mode)
        for field, path in _fields(cf, data, mode).items():
            if field not in want or (field == "provider.name" and cf.kind == "cline"):
                continue
            if get_path(data, path) != want[field]:
                edits.append(Set(path, want[field]))
    if key is not None:
        path = (CLINE_FIELDS if cf.kind == "cline" else CCSWITCH_FIELDS)[_KEY_FIELD]
        if get_path(data, path) != key:
            edits.append(Set(path, key))
    return edits, plan


def drift(cf: ConfigFile, profile: Profile, mode: CacheMode) -> list[str]:
    """The common fields where ``cf`` differs from what the profile and mode would write."""
    want = desired_values(profile, mode)
    data = cf.data
    out = []
    for field, path in _fields(cf, data, mode).items():
        if field not in want or (field == "provider.name" and cf.kind == "cline"):
            continue
        if get_path(data, path) != want[field]:
            out.append(field)
    if cf.kind == "cline":
        block = data.get("cline.cacheStrategy") if isinstance(data, dict) else None
        other = ("prefillEndpoint", "decodeEndpoint", "kvTransferProtocol") if mode == "merged" else ("chunkSize",)
        if isinstance(block, dict) and any(k in block for k in other):
            out.append("cache.form")  # keys of the other mode are still there
    return out
