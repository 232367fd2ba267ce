"""The fast path (blank comments, C decoder, nodes on demand) and the strict parser build the
same tree, accept the same documents and reject the same ones."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kvswitch.formats.jsonc_tree import (
    MAX_DEPTH,
    ArrayNode,
    JsoncSyntaxError,
    Node,
    ObjectNode,
    _fast,
    _NotFast,
    _parse,
    parse_tree,
)

from .jsonc_gen import render, values

seeds = st.integers(0, 2**32 - 1)
_ALPHABET = list("{}[]:,\"'/*\\ \t\r\nabtruefalsnl0123456789.-+eE#\ufeff\u00a0")


def shape(node: Node | None) -> Any:
    """Every offset and value of a tree, walking lazily built nodes too."""
    if node is None:
        return None
    if isinstance(node, ObjectNode):
        return ("obj", node.start, node.end, [(p.key, p.key_start, p.comma, shape(p.value)) for p in node.props])
    if isinstance(node, ArrayNode):
        return ("arr", node.start, node.end, list(node.commas), [shape(i) for i in node.items])
    return ("val", node.start, node.end, repr(node.value))


def verdict(fn: Any, text: str) -> Any:
    try:
        return ("ok", shape(fn(text)))
    except (_NotFast, JsoncSyntaxError):
        return ("rejected",)


@settings(max_examples=300, deadline=None)
@given(value=values, seed=seeds)
def test_both_paths_build_the_same_tree(value: Any, seed: int) -> None:
    text = render(value, random.Random(seed))
    strict_root, dups = _parse(text)
    if dups:
        return  # duplicates are the strict parser's job by design
    assert shape(_fast(text)) == shape(strict_root)


@settings(max_examples=500, deadline=None)
@given(
    value=values,
    seed=seeds,
    mutations=st.lists(st.tuples(st.floats(0, 1), st.sampled_from(_ALPHABET), st.booleans()), min_size=1, max_size=3),
)
def test_fast_accepts_nothing_the_strict_parser_rejects(value: Any, seed: int, mutations: list[Any]) -> None:
    text = render(value, random.Random(seed))
    for where, piece, insert in mutations:
        at = int(where * len(text))
        text = text[:at] + piece + text[at + (0 if insert else 1) :]
    fast = verdict(_fast, text)
    if fast[0] == "ok":
        strict = verdict(lambda t: _parse(t)[0], text)
        assert strict == fast, text


def test_the_strict_parser_decides_what_the_fast_path_declines() -> None:
    for text in ['{"a": 1, "a": 2}', "[NaN]", "[1e400]", "{,}", "[,]", '{"a":,}', "[1,,]", "/* open"]:
        try:
            _fast(text)
        except _NotFast:
            pass
        else:
            raise AssertionError(f"fast path accepted {text!r}")
    root, dups = parse_tree('{"a": 1, "a": 2}')
    assert root is not None and [d.path for d in dups] == [("a",)]


def test_depth_limit_is_the_same_on_both_paths() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert parse_tree(ok)[0] is not None
    try:
        parse_tree(too_deep)
    except JsoncSyntaxError as exc:
        assert "nesting" in exc.message
    else:
        raise AssertionError("too deep was accepted")


def test_trailing_commas_and_comments_keep_their_offsets() -> None:
    text = '{\n  "a": [1, 2, /* x */ ], // c\n  "b": {"c": 1,},\n}\n'
    assert shape(_fast(text)) == shape(_parse(text)[0])
