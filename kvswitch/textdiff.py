"""A unified diff of two versions of a text that costs what the change does, not what the file's
size does: the common start and end are found by comparing blocks, and only the lines around
the change go through :mod:`difflib` (whose line index would cost seconds on a big file)."""

from __future__ import annotations

import difflib
import re

__all__ = ["common_prefix", "common_suffix", "unified_diff"]

CONTEXT = 3
_BLOCK = 1 << 16
# what str.splitlines() takes for a line break
_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@", re.M)


def common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start."""
    n = min(len(a), len(b))
    lo = 0
    while lo + _BLOCK <= n and a[lo : lo + _BLOCK] == b[lo : lo + _BLOCK]:
        lo += _BLOCK
    hi = min(n, lo + _BLOCK)
    while lo < hi:  # the first difference lies in [lo, hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """How many characters (at most ``limit``) ``a`` and ``b`` share at their end."""
    n = min(len(a), len(b), limit)
    lo = 0
    while lo + _BLOCK <= n and a[len(a) - lo - _BLOCK : len(a) - lo] == b[len(b) - lo - _BLOCK : len(b) - lo]:
        lo += _BLOCK
    hi = min(n, lo + _BLOCK)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _breaks(text: str, end: int) -> int:
    """How many line breaks ``text[:end]`` holds, as ``splitlines`` counts them."""
    return sum(text.count(c, 0, end) for c in _BREAKS) - text.count("\r\n", 0, end)


def _line_start(text: str, pos: int) -> int:
    """The start of the line that holds ``pos`` (a CRLF counts as one break)."""
    if 0 < pos < len(text) and text[pos] == "\n" and text[pos - 1] == "\r":
        pos -= 1  # pos is the LF of a CRLF: the line is the one the CR ends
    lo = max(0, pos - _BLOCK)
    found = max(text.rfind(c, lo, pos) for c in _BREAKS)
    if found < 0 and lo > 0:
        found = max(text.rfind(c, 0, pos) for c in _BREAKS)
    return found + 1


def _back(text: str, pos: int, lines: int) -> int:
    """The start of the line ``lines`` lines above the one that holds ``pos``."""
    start = _line_start(text, pos)
    for _ in range(lines):
        if start == 0:
            break
        start = _line_start(text, start - 1)
    return start


def unified_diff(old: str, new: str, from_name: str, to_name: str) -> str:
    """``difflib.unified_diff`` of the two texts' lines (kept ends), joined; the same text."""
    if old == new:
        return ""
    prefix = common_prefix(old, new)
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    start = _back(old, prefix, CONTEXT)
    old_end, new_end = len(old) - suffix, len(new) - suffix
    # the end of the context after the change: CONTEXT more line ends (or the end of the text)
    for _ in range(CONTEXT + 1):
        nxt = min((i for i in (old.find(c, old_end) for c in _BREAKS) if i >= 0), default=-1)
        if nxt < 0:
            old_end, new_end = len(old), len(new)
            break
        step = nxt + (2 if old.startswith("\r\n", nxt) else 1) - old_end
        old_end, new_end = old_end + step, new_end + step
    skipped = _breaks(old, start)
    lines = difflib.unified_diff(
        old[start:old_end].splitlines(keepends=True),
        new[start:new_end].splitlines(keepends=True),
        from_name,
        to_name,
        n=CONTEXT,
    )
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in lines)
    if not skipped:
        return text

    def shift(m: re.Match[str]) -> str:
        return f"@@ -{int(m.group(1)) + skipped}{m.group(2)} +{int(m.group(3)) + skipped}{m.group(4)} @@"

    return _HUNK.sub(shift, text)
