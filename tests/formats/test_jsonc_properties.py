"""Property tests for the JSONC reader and editor.

Random values are spelled as random JSONC (``jsonc_gen.render``) and must read back as
themselves, both here and in the ``json5`` package (a differential oracle: JSON5 accepts a
superset of JSONC). Random edits must read back as ``apply_to_data`` says and change only
the text around the edited property. Random and mutated text either parses or raises
``JsoncSyntaxError``, never anything else.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kvswitch import records
from kvswitch.edits import Delete, Edit, Insert, Set, apply_to_data
from kvswitch.formats.jsonc import (
    JsoncDocument,
    JsoncSyntaxError,
    ObjectNode,
    line_col,
    line_starts,
)

from .jsonc_gen import EDIT_KINDS, json5_value, objects, random_edit, render, same, values

PROPS = settings(
    max_examples=int(os.environ.get("KVSWITCH_HYPOTHESIS_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
seeds = st.integers(0, 2**32 - 1)
_BREAKS = ("\r\n", "\r", "\n")


# -- (a) and (b): rendered values read back -------------------------------------------------------


@PROPS
@given(value=values, seed=seeds)
def test_rendered_jsonc_reads_back_as_its_value(value: Any, seed: int) -> None:
    text = render(value, random.Random(seed))
    got = JsoncDocument(text).value
    assert same(got, value), text


@PROPS
@given(value=values, seed=seeds)
def test_json5_reads_the_same_value(value: Any, seed: int) -> None:
    text = render(value, random.Random(seed))
    assert same(json5_value(text), value, exact_numbers=False), text


# -- (c): edits ---------------------------------------------------------------------------------


def untouched_outside(old: str, new: str, lo: int, hi: int) -> bool:
    """``new`` keeps ``old[:lo]`` and ``old[hi:]`` byte for byte: the first and last changed
    offsets (from the common prefix and the common suffix) lie within ``[lo, hi)``. The two
    are measured separately, as an insertion that repeats its surroundings can be placed at
    more than one offset."""
    prefix = len(os.path.commonprefix([old, new]))  # noqa: RUF071 - character-wise on purpose
    suffix = len(os.path.commonprefix([old[::-1], new[::-1]]))  # noqa: RUF071
    return prefix >= lo and suffix >= len(old) - hi and lo + len(old) - hi <= len(new)


def whole_lines(text: str, lo: int, hi: int) -> tuple[int, int]:
    """``[lo, hi)`` widened to the start of its first line and past the break of its last."""
    starts = line_starts(text)
    first = starts[line_col(text, lo, starts)[0] - 1]
    line = line_col(text, hi, starts)[0]
    return first, starts[line] if line < len(starts) else len(text)


def allowed_window(doc: JsoncDocument, kind: str, edit: Edit) -> tuple[int, int]:
    """Where the editor may change ``doc.text`` for ``edit``: the edited property's span
    (with the separators to its neighbours), widened to whole lines; a value replaced in
    place allows its own span only."""
    text, path = doc.text, edit.path
    if kind == "set":
        node = doc.node(path)
        assert node is not None
        return node.start, node.end
    parent_path = path[:-2] if kind == "set-nested" else path[:-1]
    parent = doc.node(parent_path)
    assert isinstance(parent, ObjectNode)
    props = parent.props
    if kind == "delete":
        spans = []
        for i, prop in enumerate(props):
            if prop.key != path[-1]:
                continue
            # the comment lines above it go with it
            lo = props[i - 1].value.end if i else parent.start + 1
            hi = props[i + 1].key_start if i + 1 < len(props) else prop.end
            spans.append(whole_lines(text, lo, hi))
        return min(s for s, _ in spans), max(e for _, e in spans)
    if not props:
        return parent.start, parent.end
    after = edit.after if isinstance(edit, Insert) else None
    anchor = parent.get(after) if after is not None else None
    anchor = anchor or props[-1]
    return whole_lines(text, anchor.value.end, anchor.end)


def check_edit(text: str, kind: str, edit: Edit, value: Any) -> str:
    doc = JsoncDocument(text)
    out = doc.apply([edit])
    expected = apply_to_data(value, [edit])
    assert same(JsoncDocument(out).value, expected), (text, edit, out)
    assert same(json5_value(out), expected, exact_numbers=False), (text, edit, out)

    lo, hi = allowed_window(doc, kind, edit)
    assert untouched_outside(text, out, lo, hi), (text, edit, out, (lo, hi))
    # the file's line ending is the only one added, and a BOM stays first
    before, after = Counter(_breaks(text)), Counter(_breaks(out))
    for brk in _BREAKS:
        if brk != doc.eol:
            assert after[brk] <= before[brk], (text, edit, out)
    assert out.startswith("\ufeff") == text.startswith("\ufeff")
    return out


def _breaks(text: str) -> list[str]:
    return re.findall(r"\r\n|\r|\n", text)


@PROPS
@given(value=objects, seed=seeds, kind=st.sampled_from(EDIT_KINDS))
def test_an_edit_reads_back_and_changes_only_its_property(value: dict[str, Any], seed: int, kind: str) -> None:
    rng = random.Random(seed)
    text = render(value, rng)
    picked = random_edit(value, rng, kind)
    assume(picked is not None)
    assert picked is not None
    check_edit(text, kind, picked[1], value)


@PROPS
@given(value=objects, seed=seeds)
def test_a_property_taken_out_and_put_back_restores_the_value(value: dict[str, Any], seed: int) -> None:
    """What a switch does to a key that leaves and comes back: its source is remembered with
    ``property_source`` and re-inserted verbatim after the key it followed."""
    assume(value)
    rng = random.Random(seed)
    text = render(value, rng)
    doc = JsoncDocument(text)
    keys = list(value)
    key = rng.choice(keys)
    prop = doc.prop((key,))
    assert prop is not None
    raw, trailer = doc.property_source(prop)
    idx = keys.index(key)
    after = keys[idx - 1] if idx else None
    removed = doc.apply([Delete((key,))])
    back = JsoncDocument(removed).apply([Insert((key,), raw=raw, comment=trailer, after=after)])
    got = JsoncDocument(back).value
    assert same(got, value), (text, removed, back)
    if after is not None and not doc.duplicates:  # (with duplicates a key's place is its first)
        assert list(got) == keys, (text, back)


@PROPS
@given(value=objects, seed=seeds)
def test_a_cut_property_pasted_back_gives_the_same_bytes(value: dict[str, Any], seed: int) -> None:
    """``cut`` takes a property out with its comments; ``paste`` is its exact inverse."""
    assume(value)
    rng = random.Random(seed)
    text = render(value, rng)
    key = rng.choice(list(value))
    doc = JsoncDocument(text)
    assume(not doc.duplicates)  # (an anchor is named by its key; with duplicates that is ambiguous)
    found = doc.cut((), key)
    assert found is not None
    without, cut = found
    assert key not in JsoncDocument(without.text).value
    back = JsoncDocument(without.text).paste((), cut)
    assert back is not None, (text, without.text, cut)
    assert back.text == text, (text, without.text, cut)


@PROPS
@given(value=objects, seed=seeds)
def test_finding_one_key_agrees_with_building_every_property(value: dict[str, Any], seed: int) -> None:
    """A big object finds one key by searching the text; it must be the property (key,
    value span, comma) that building the whole object gives, or say it cannot tell."""
    from kvswitch.formats import jsonc_tree

    text = render(value, random.Random(seed))
    full = JsoncDocument(text).root
    assume(isinstance(full, ObjectNode) and not JsoncDocument(text).duplicates)
    assert isinstance(full, ObjectNode)
    keys = [*value, "missing", *(k + "x" for k in value)]
    old = jsonc_tree._FIND_MIN
    jsonc_tree._FIND_MIN = 0
    try:
        root = JsoncDocument(text).root
        assert isinstance(root, ObjectNode)
        found = {key: root.get(key) for key in keys}
    finally:
        jsonc_tree._FIND_MIN = old
    for key, prop in found.items():
        want = full.get(key)
        if want is None or prop is None:
            assert want is prop, (text, key)
            continue
        got_spans = (prop.key_start, prop.value.start, prop.value.end, prop.comma)
        assert got_spans == (want.key_start, want.value.start, want.value.end, want.comma), (text, key)


@PROPS
@given(value=objects, seed=seeds, n=st.integers(2, 5))
def test_several_edits_at_once_match_one_at_a_time(value: dict[str, Any], seed: int, n: int) -> None:
    """``apply`` splices edits under one object as a sub-document; the text must be the same
    as applying them one by one, and read back as intended."""
    rng = random.Random(seed)
    text = render(value, rng)
    edits: list[Edit] = []
    current: Any = value
    for _ in range(n):
        picked = random_edit(current, rng)
        if picked is None:
            continue
        edits.append(picked[1])
        current = apply_to_data(current, [picked[1]])
    assume(edits)
    doc = JsoncDocument(text)
    out = doc.apply(edits)
    assert same(JsoncDocument(out).value, current)
    one_by_one = text
    for edit in edits:  # in the file's style, not one re-detected from an intermediate text
        one_by_one = JsoncDocument(one_by_one, unit=doc.indent_unit, eol=doc.eol).apply([edit])
    assert out == one_by_one


@PROPS
@given(value=objects, seed=seeds)
def test_edits_under_one_object_use_the_sub_document(value: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    holder_value = {"x": value}
    text = render(holder_value, rng)
    edits: list[Edit] = []
    for _ in range(3):
        picked = random_edit(apply_to_data(holder_value, edits)["x"], rng)
        if picked is not None:
            edits.append(records.replace(picked[1], path=("x", *picked[1].path)))
    assume(len(edits) >= 2)
    out = JsoncDocument(text).apply(edits)
    assert same(JsoncDocument(out).value, apply_to_data(holder_value, edits))


# -- (d): anything either parses or is a JsoncSyntaxError ----------------------------------------

_ALPHABET = [*"{}[]\",:/*\\ \t\n\r0123456789-+.eEtrufalsn'x", "\ufeff", "\xa0", "\x00", "\u2028", "//", "/*", "*/"]


def check_text(text: str, seed: int = 0) -> None:
    try:
        doc = JsoncDocument(text)
    except JsoncSyntaxError as exc:
        assert exc.message and 0 <= exc.offset <= len(text), (text, exc)
        line, col = line_col(text, exc.offset)
        assert line >= 1 and col >= 1
        return
    value = doc.value
    if value is None:
        return
    # json5 accepts a superset: what we read, it reads the same (but to JSON5, U+2028 and
    # U+2029 end a line, and so a // comment, where VS Code reads on)
    if "\u2028" not in text and "\u2029" not in text:
        assert same(json5_value(text), value, exact_numbers=False), text
    if isinstance(value, dict):
        picked = random_edit(value, random.Random(seed))
        if picked is not None:
            out = doc.apply([picked[1]])
            assert same(JsoncDocument(out).value, apply_to_data(value, [picked[1]]))


@PROPS
@given(text=st.text(max_size=80))
def test_any_text_parses_or_raises_a_syntax_error(text: str) -> None:
    check_text(text)


@PROPS
@given(text=st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join))
def test_token_soup_parses_or_raises_a_syntax_error(text: str) -> None:
    check_text(text)


@PROPS
@given(
    value=values,
    seed=seeds,
    mutations=st.lists(
        st.tuples(st.sampled_from(["delete", "insert", "replace"]), st.floats(0, 1), st.sampled_from(_ALPHABET)),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_documents_parse_or_raise_a_syntax_error(
    value: Any, seed: int, mutations: list[tuple[str, float, str]]
) -> None:
    text = render(value, random.Random(seed))
    for op, where, piece in mutations:
        at = int(where * len(text))
        if op == "delete":
            text = text[:at] + text[at + 1 :]
        elif op == "insert":
            text = text[:at] + piece + text[at:]
        else:
            text = text[:at] + piece + text[at + 1 :]
    check_text(text, seed)


@pytest.mark.parametrize("kind", EDIT_KINDS)
def test_edit_kinds_each_happen(kind: str) -> None:
    """The generator makes every kind of edit (so the property test covers them all)."""
    rng = random.Random(1)
    value = {"a": {"b": 1, "c": [1, {"d": 2}]}, "e": {}}
    picked = random_edit(value, rng, kind)
    assert picked is not None and picked[0] == kind
    assert isinstance(picked[1], Set | Delete | Insert)
    check_edit(render(value, rng), kind, picked[1], value)
