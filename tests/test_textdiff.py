"""The fast unified diff is difflib's, line for line, on any pair of texts."""

from __future__ import annotations

import difflib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kvswitch.textdiff import unified_diff

_LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\r\n", "d\r", "x", "\n", "é\u2028", "y\x0c", "z\r\n"]), max_size=30)


def reference(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), "old", "new")
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in lines)


def patched(old: str, diff: str) -> str:
    """``old`` with the hunks of ``diff`` applied, each checked against ``old`` where it says."""
    src = old.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]
    i = 0
    while i < len(lines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
        assert m, lines[i]
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out += src[at:start]
        at = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            if tag in " -":
                assert src[at].rstrip("\r\n") == body.rstrip("\r\n") or src[at] == body, (src[at], body)
                at += 1
            if tag in " +":
                out.append(body)
            i += 1
    return "".join(out + src[at:])


@settings(max_examples=500, deadline=None)
@given(old=_LINES, cut=st.integers(0, 30), size=st.integers(0, 4), insert=_LINES)
def test_the_diff_holds_the_change_where_it_is(old: list[str], cut: int, size: int, insert: list[str]) -> None:
    """A change somewhere in a text (what an edit makes) gives a diff whose hunks, applied to
    the old text where their headers say, make the new one (line for line; a line's ending
    may read differently, as in difflib); where the lines are all different it is difflib's."""
    a = "".join(old)
    b = "".join(old[:cut] + insert[:size] + old[cut + size :])
    got = unified_diff(a, b, "old", "new")
    assert (got == "") == (a == b)
    if got:
        assert patched(a, got).splitlines() == b.splitlines()
    if len(set(old)) == len(old) and not set(old) & set(insert):
        assert got == reference(a, b)


def test_a_big_text_with_one_change_has_one_small_hunk() -> None:
    old = "".join(f"line {i}\n" for i in range(200_000))
    new = old.replace("line 123456\n", "line 123456 changed\n")
    out = unified_diff(old, new, "old", "new")
    assert "@@ -123454,7 +123454,7 @@" in out
    assert out == reference(old, new)
