"""A new profile as the library takes it in (``kvswitch init``, ``kvswitch import``): its name
and its clients' names checked, every value through :func:`kvswitch.validate.profile_value`.

It sits above the models it normalises; :mod:`kvswitch.validate`, which the models use, stays
below them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvswitch.validate import check_name, profile_value

if TYPE_CHECKING:
    from kvswitch.models import ClientEntry, Profile

__all__ = ["check_profile_input"]

_PROFILE_TEXT = ("provider", "base_url", "model", "key")
_PROFILE_URLS = (
    ("merged", "url"),
    ("split", "url"),
    ("split", "prefill_base_url"),
    ("split", "decode_base_url"),
    ("split", "probe_url"),
)


def check_profile_input(name: str, profile: Profile, clients: Sequence[ClientEntry] = ()) -> Profile:
    """A new profile (and the clients registered with it) as the library takes it in, e.g. from
    ``kvswitch init``: the names checked, the values through :func:`profile_value` (so the
    profile comes back normalised: no trailing ``/``, chunk size on the 64 grid)."""
    check_name(name)
    for entry in clients:
        if entry.name is not None:
            check_name(entry.name, "client")
    top: dict[str, Any] = {}
    for field in _PROFILE_TEXT:
        value, _ = profile_value((field,), getattr(profile, field))
        if value != getattr(profile, field):
            top[field] = value
    changed: dict[str, dict[str, Any]] = {"merged": {}, "split": {}}
    for path in _PROFILE_URLS:
        current = getattr(getattr(profile, path[0]), path[1])
        if current is not None:
            value, _ = profile_value(path, current)
            if value != current:
                changed[path[0]][path[1]] = value
    chunk, _ = profile_value(("merged", "chunk_size"), profile.merged.chunk_size)
    if chunk != profile.merged.chunk_size:
        changed["merged"]["chunk_size"] = chunk
    for part, update in changed.items():
        if update:
            top[part] = getattr(profile, part).model_copy(update=update)
    return profile.model_copy(update=top) if top else profile
