"""Masking keys wherever text leaves kvswitch (diffs, reports, logs): ``sk-…abcd``."""

from __future__ import annotations

import json
from collections.abc import Iterable

__all__ = ["mask", "redact"]


def mask(key: str) -> str:
    """A key shown safely: its first three and last four characters, when it is long enough."""
    key = key.strip()
    if len(key) < 12:
        return "…"
    return f"{key[:3]}…{key[-4:]}"


def redact(text: str, keys: Iterable[str]) -> str:
    """``text`` with every key (and its JSON-escaped form) replaced by its mask."""
    for key in sorted({k for k in keys if k and k.strip()}, key=len, reverse=True):
        forms = {key, json.dumps(key, ensure_ascii=False)[1:-1], json.dumps(key)[1:-1]}
        for form in sorted(forms, key=len, reverse=True):
            if len(form) >= 4:
                text = text.replace(form, mask(key))
    return text
