"""TomlDocument: tomllib-exact syntax errors, key/value positions, style-keeping edits that
are verified with tomllib before anyone writes them (D-4, D-5)."""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvswitch.edits import Delete, Set
from kvswitch.formats.toml import MAX_DEPTH, TomlDocument, TomlSyntaxError, verify_toml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TOML_FIXTURES = sorted((FIXTURES / "ccswitch").glob("*.toml")) + sorted((FIXTURES / "kvswitch").glob("*.toml"))
BOM = "\ufeff"


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def pos(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the ``nth`` occurrence of ``needle`` (a BOM is not a column)."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    if line == 1 and text.startswith(BOM):
        col -= 1
    return line, col


def lines_of(text: str) -> list[str]:
    """Lines as TOML counts them (only LF ends a line; NEL and friends are characters)."""
    return text.replace("\r\n", "\n").split("\n")


def changed_lines(before: str, after: str) -> list[str]:
    return [
        d
        for d in difflib.unified_diff(lines_of(before), lines_of(after), lineterm="", n=0)
        if d[:1] in "+-" and not d.startswith(("+++", "---"))
    ]


# -- syntax errors ----------------------------------------------------------------------

BAD = [
    "a = 1 b = 2\n",
    "[cache]\nmode = merged\n",
    "[cache]\nmode = 'merged'\n[cache]\n",
    'a = "unterminated\nb = 1\n',
    "a = [1, 2\nb = 1\n",
    "a = { x = 1,\n}\n",
    '[provider]\nname = "x"\n\n  [[ bad header\n',
    "x = 1\ny = 1979-13-45\n",
    "key with space = 1\n",
    "a = 1\na = 2\nb = 3\n",
    "ok = true\n\tbad = tru\n",
]


@pytest.mark.parametrize("text", BAD)
def test_syntax_error_position_matches_tomllib(text: str) -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as ref:
        tomllib.loads(text)
    m = re.search(r"\(at line (\d+), column (\d+)\)$", str(ref.value))
    assert m, str(ref.value)
    with pytest.raises(TomlSyntaxError) as exc:
        TomlDocument(text)
    assert (exc.value.line, exc.value.column) == (int(m.group(1)), int(m.group(2)))
    assert exc.value.message and "(at line" not in exc.value.message
    assert exc.value.line >= 1 and exc.value.column >= 1


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [("a = ", 1, 5), ('a = 1\nb = "x', 2, 7), ("a = 1\r\nb = [1,", 2, 8)],
)
def test_syntax_error_at_end_of_file_gets_a_position(text: str, line: int, col: int) -> None:
    with pytest.raises(TomlSyntaxError) as exc:
        TomlDocument(text)
    assert (exc.value.line, exc.value.column) == (line, col)
    assert "end of file" in exc.value.message


def test_syntax_error_in_bom_file_counts_columns_without_the_bom() -> None:
    text = BOM + "a = 1 b\n"
    with pytest.raises(TomlSyntaxError) as exc:
        TomlDocument(text)
    assert (exc.value.line, exc.value.column) == (1, 7)
    assert pos(text, "b") == (1, 7)


def test_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Invalid"):
        TomlDocument("= 1\n")


def test_nesting_too_deep_is_a_syntax_error_with_position() -> None:
    text = "x = 1\na = " + "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50) + "\n"
    with pytest.raises(TomlSyntaxError, match="nesting deeper") as exc:
        TomlDocument(text)
    assert exc.value.line == 2
    with pytest.raises(TomlSyntaxError, match="nesting deeper"):
        TomlDocument("a = " + "[" * 5000)  # tomllib itself would hit the recursion limit
    deepest_ok = "a = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"
    doc = TomlDocument(deepest_ok)
    assert doc.apply([Set(("b",), 1)]).endswith("b = 1\n")


# -- locate ----------------------------------------------------------------------------

SAMPLE = """\
# top comment with key = value and [table] and [[aot]]
title = "x"   # a = b [c]
"quoted key" = 1
'literal key' = 2
dotted.key.path = 3
site."google.com" = true
inline = { a = 1, b = { c = [10, 20] } }
arr = [
  1,   # one = [2]
  "two", # ] = [
  [3, 4],
]
ml = \"\"\"
key = "not a key"
[not.a.table]
\"\"\"
lit = '''
other = 1
[[neither]]
'''
after_ml = 42
esc = "quote \\" = [x]"  # string with an escaped quote

[provider]   # [comment] = 1
name     = "n"
base_url = 'http://x'

  [cache.split]
  prefill_base_url = "http://p"

[[clients]]
path = "a"

[[clients]]
path = "b"
nudge = { kind = "signal", pidfile = "/run/x.pid" }

[clients.extra]
q = 17
"""


@pytest.fixture(scope="module")
def sample() -> TomlDocument:
    return TomlDocument(SAMPLE)


@pytest.mark.parametrize(
    ("path", "needle", "nth"),
    [
        (("title",), '"x"', 0),
        (("quoted key",), "1\n'literal", 0),
        (("literal key",), "2\ndotted", 0),
        (("dotted", "key", "path"), "3\nsite", 0),
        (("site", "google.com"), "true", 0),
        (("inline",), "{ a", 0),
        (("inline", "a"), "1, b", 0),
        (("inline", "b"), "{ c", 0),
        (("inline", "b", "c"), "[10", 0),
        (("inline", "b", "c", 1), "20", 0),
        (("arr",), "[\n  1", 0),
        (("arr", 0), "1,   #", 0),
        (("arr", 1), '"two"', 0),
        (("arr", 2), "[3, 4]", 0),
        (("arr", 2, 1), "4]", 0),
        (("ml",), '"""\nkey', 0),
        (("lit",), "'''\nother", 0),
        (("after_ml",), "42", 0),
        (("esc",), '"quote \\"', 0),
        (("provider", "name"), '"n"', 0),
        (("provider", "base_url"), "'http://x'", 0),
        (("cache", "split", "prefill_base_url"), '"http://p"', 0),
        (("clients", 0, "path"), '"a"', 0),
        (("clients", 1, "path"), '"b"', 0),
        (("clients", 1, "nudge"), "{ kind", 0),
        (("clients", 1, "nudge", "kind"), '"signal"', 0),
        (("clients", 1, "nudge", "pidfile"), '"/run', 0),
        (("clients", 1, "extra", "q"), "17", 0),
    ],
)
def test_locate_value(sample: TomlDocument, path: tuple[Any, ...], needle: str, nth: int) -> None:
    assert sample.locate(path) == pos(SAMPLE, needle, nth)


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (("title",), "title ="),
        (("quoted key",), '"quoted key"'),
        (("literal key",), "'literal key'"),
        (("dotted", "key", "path"), "dotted."),
        (("site", "google.com"), "site."),
        (("inline", "b", "c"), "c = [10"),
        (("after_ml",), "after_ml"),
        (("provider",), "[provider]"),
        (("provider", "base_url"), "base_url ="),
        (("cache", "split"), "[cache.split]"),
        (("cache", "split", "prefill_base_url"), "prefill_base_url"),
        (("clients", 1), '[[clients]]\npath = "b"'),
        (("clients", 1, "nudge", "kind"), "kind ="),
        (("clients", 1, "extra"), "[clients.extra]"),
    ],
)
def test_locate_key(sample: TomlDocument, path: tuple[Any, ...], needle: str) -> None:
    assert sample.locate(path, key=True) == pos(SAMPLE, needle)


def test_text_inside_strings_and_comments_is_not_a_key(sample: TomlDocument) -> None:
    assert sample.data["ml"] == 'key = "not a key"\n[not.a.table]\n'
    for ghost in (("key",), ("other",), ("not",), ("neither",), ("one",), ("c",)):
        assert sample.locate(ghost) is None


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (("provider", "model"), "[provider]"),  # missing key → its table
        (("clients", 1, "nudge", "signal"), "nudge ="),  # missing key of an inline table
        (("clients", 1, "nudge", "kind", "deeper"), "kind ="),  # below a scalar
        (("arr", 9), "arr ="),  # missing array index
        (("clients", 7, "path"), "[[clients]]"),  # missing array-of-tables element
        (("cache",), "[cache.split]"),  # implicit table: where it is first mentioned
        (("dotted", "key"), "dotted."),  # implicit table of a dotted key
        (("cache", "mode"), "[cache.split]"),
    ],
)
def test_missing_path_falls_back_to_nearest_ancestor(sample: TomlDocument, path: tuple[Any, ...], needle: str) -> None:
    assert sample.locate(path) == pos(SAMPLE, needle)


def test_locate_nothing_on_the_path() -> None:
    assert TomlDocument(SAMPLE).locate(("nope", "x")) is None
    assert TomlDocument("").locate(("a",)) is None


def test_nested_array_of_tables_indices_restart_per_parent() -> None:
    text = "[[x]]\n[[x.y]]\nz = 1\n[[x]]\n[[x.y]]\nz = 2\n[[x.y]]\nz = 3\n"
    doc = TomlDocument(text)
    assert doc.data["x"][1]["y"][1]["z"] == 3
    assert doc.locate(("x", 0, "y", 0, "z")) == (3, 5)
    assert doc.locate(("x", 1, "y", 0, "z")) == (6, 5)
    assert doc.locate(("x", 1, "y", 1, "z")) == (8, 5)
    assert doc.locate(("x", 1, "y", 2, "z")) == (5, 1)  # no such element: the array's first header


@pytest.mark.parametrize(
    "value",
    [
        '"""a\\""""',  # escaped quote right before the closing quotes
        '"""a\\\\"""',  # escaped backslash, then the close
        '"""a\\\\\\""""',  # three backslashes: \\ then \"
        '"""x""""',  # one quote of content before the close
        '"""x"""""',  # two quotes of content
        "'''x''''",
        '"""\nkey = 1\n"""',
        "'''\nkey = 1\n'''",
        '"""line \\\n   continued"""',
    ],
)
def test_key_after_a_multiline_string_is_located(value: str) -> None:
    text = f"s = {value}\nkey = 2\n"
    doc = TomlDocument(text)
    assert doc.data["key"] == 2
    line = text.count("\n") - 1 + 1
    assert doc.locate(("key",)) == (line, 7)
    assert doc.locate(("key",), key=True) == (line, 1)


def test_bom_file_positions() -> None:
    text = BOM + 'a = 1\n[t]\nb = "x"\n'
    doc = TomlDocument(text)
    assert doc.data == {"a": 1, "t": {"b": "x"}}
    assert doc.locate(("a",)) == (1, 5)
    assert doc.locate(("a",), key=True) == (1, 1)
    assert doc.locate(("t", "b")) == (3, 5)


def test_crlf_file_positions() -> None:
    text = '[cache]\r\nmode = "split"  # c\r\nchunk_size = 512\r\n'
    doc = TomlDocument(text)
    assert doc.locate(("cache", "chunk_size")) == (3, 14)
    assert doc.locate(("cache", "mode"), key=True) == (2, 1)


def test_datetime_with_space_then_key() -> None:
    text = "d = 1979-05-27 07:32:00Z\ne = 1\n"
    assert TomlDocument(text).locate(("e",)) == (2, 5)


# -- apply -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", TOML_FIXTURES, ids=lambda p: p.name)
def test_round_trip_without_edits_is_byte_identical(path: Path) -> None:
    text = read(path)
    assert TomlDocument(text).apply([]) == text


@pytest.mark.parametrize("path", TOML_FIXTURES, ids=lambda p: p.name)
def test_round_trip_with_bom_is_byte_identical(path: Path) -> None:
    text = BOM + read(path)
    assert TomlDocument(text).apply([]) == text


def test_set_scalar_changes_exactly_one_line_and_keeps_its_comment() -> None:
    text = read(FIXTURES / "ccswitch" / "rich.toml")
    out = TomlDocument(text).apply([Set(("cache", "chunk_size"), 512)])
    assert changed_lines(text, out) == ["-chunk_size     = 1_024", "+chunk_size     = 512"]

    out = TomlDocument(text).apply([Set(("provider", "name"), "vllm")])
    diff = changed_lines(text, out)
    assert len(diff) == 2
    old_line, new_line = diff[0][1:], diff[1][1:]
    assert new_line.startswith('name     = "vllm"')
    assert new_line.endswith("# aligned on purpose")
    # only the value's characters change: the comment moves with it (a realignment could not
    # be undone exactly by the way back)
    assert new_line == old_line.replace('"local-vllm"', '"vllm"')


def test_set_scalar_with_trailing_comment_in_simple_file() -> None:
    text = read(FIXTURES / "ccswitch" / "article.toml")
    out = TomlDocument(text).apply([Set(("cache", "mode"), "split")])
    assert changed_lines(text, out) == [
        '-mode = "merged"            # "merged" | "split"',
        '+mode = "split"            # "merged" | "split"',
    ]


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ('a = "x" # c\n', "much longer", 'a = "much longer" # c\n'),
        ("a = 1  # c\n", 1000, "a = 1000  # c\n"),
        ("a = 1          # c\n", 1000, "a = 1000          # c\n"),
        ("a = 1000       # c\n", 1, "a = 1       # c\n"),
        ("a = 1\t# c\n", 1000, "a = 1000\t# c\n"),
        ("a = 1\n", 1000, "a = 1000\n"),
    ],
)
def test_the_gap_before_a_comment_is_kept_when_a_value_changes_width(text: str, value: Any, expected: str) -> None:
    """Only the value changes, so setting the old value back gives the same bytes."""
    out = TomlDocument(text).apply([Set(("a",), value)])
    assert out == expected
    assert TomlDocument(out).apply([Set(("a",), TomlDocument(text).data["a"])]) == text


def test_literal_string_style_is_kept() -> None:
    text = read(FIXTURES / "ccswitch" / "rich.toml")
    out = TomlDocument(text).apply([Set(("provider", "base_url"), "http://127.0.0.1:9000/v1")])
    assert changed_lines(text, out) == [
        "-base_url = 'http://127.0.0.1:8000/v1'   # literal string",
        "+base_url = 'http://127.0.0.1:9000/v1'   # literal string",
    ]
    split = read(FIXTURES / "ccswitch" / "split.toml")
    assert "mode = 'merged'\n" in TomlDocument(split).apply([Set(("cache", "mode"), "merged")])


def test_literal_string_falls_back_to_basic_when_it_cannot_hold_the_value() -> None:
    doc = TomlDocument("s = 'x'\n")
    assert tomllib.loads(doc.apply([Set(("s",), "it's")])) == {"s": "it's"}
    assert tomllib.loads(doc.apply([Set(("s",), "a\nb")])) == {"s": "a\nb"}


def _split_table() -> dict[str, Any]:
    return {
        "prefill_base_url": "http://10.0.0.11:8100",
        "decode_base_url": "http://10.0.0.12:8200",
        "transfer_protocol": "layer-wise",
        "max_transfer_concurrency": 4,
    }


def test_new_cache_split_table_has_blank_lines_around_it() -> None:
    text = read(FIXTURES / "ccswitch" / "no-split.toml")
    out = TomlDocument(text).apply([Set(("cache", "mode"), "split"), Set(("cache", "split"), _split_table())])
    assert tomllib.loads(out)["cache"]["split"] == _split_table()
    lines = out.splitlines()
    at = lines.index("[cache.split]")
    assert lines[at - 1] == "" and lines[at - 2] == "prefix_cache = true"
    req = lines.index("[request]")
    assert lines[req - 1] == "" and lines[req - 2] == "max_transfer_concurrency = 4"
    assert "\n\n\n" not in out
    # nothing else moved
    assert [d for d in changed_lines(text, out) if d.startswith("-")] == ['-mode = "merged"  # flip me']


def test_new_table_created_by_a_deep_set_has_blank_lines_around_it() -> None:
    text = '[cache]\nmode = "merged"\n\n[request]\nstream = true\n'
    out = TomlDocument(text).apply([Set(("cache", "split", "prefill_base_url"), "http://p")])
    assert out == (
        '[cache]\nmode = "merged"\n\n[cache.split]\nprefill_base_url = "http://p"\n\n[request]\nstream = true\n'
    )


def test_new_table_at_end_of_file_without_final_newline() -> None:
    out = TomlDocument('[cache]\nmode = "merged"').apply([Set(("cache", "split"), {"a": 1})])
    assert out == '[cache]\nmode = "merged"\n\n[cache.split]\na = 1\n'


def test_new_table_in_empty_file_starts_at_the_top() -> None:
    out = TomlDocument("").apply([Set(("cache", "mode"), "split")])
    assert out == '[cache]\nmode = "split"\n'


def test_crlf_file_stays_crlf_everywhere() -> None:
    text = read(FIXTURES / "ccswitch" / "crlf.toml")
    assert "\r\n" in text and not re.search(r"(?<!\r)\n", text)
    out = TomlDocument(text).apply(
        [
            Set(("cache", "mode"), "split"),
            Set(("cache", "split"), _split_table()),
            Set(("request", "timeout_seconds"), 60),
            Delete(("cache", "chunk_size")),
        ]
    )
    assert not re.search(r"(?<!\r)\n", out), repr(out)
    assert "\r\n\r\n[cache.split]\r\n" in out
    assert "\r\n\r\n\r\n" not in out
    assert tomllib.loads(out)["cache"] == {"mode": "split", "split": _split_table()}


def test_mixed_line_endings_leave_untouched_lines_alone() -> None:
    text = "a = 1\r\nb = 2\n[c]\nd = 3\n"
    out = TomlDocument(text).apply([Set(("c", "d"), 4)])
    assert out == "a = 1\r\nb = 2\n[c]\nd = 4\n"


def test_bom_is_kept() -> None:
    text = BOM + read(FIXTURES / "ccswitch" / "article.toml")
    out = TomlDocument(text).apply([Set(("cache", "chunk_size"), 768)])
    assert out.startswith(BOM) and not out.startswith(BOM * 2)
    assert out.count(BOM) == 1
    assert tomllib.loads(out[1:])["cache"]["chunk_size"] == 768
    assert changed_lines(text, out) == ["-chunk_size = 512", "+chunk_size = 768"]


def test_delete_key_and_table() -> None:
    text = read(FIXTURES / "ccswitch" / "article.toml")
    out = TomlDocument(text).apply([Delete(("cache", "chunk_size"))])
    assert changed_lines(text, out) == ["-chunk_size = 512"]
    out = TomlDocument(text).apply([Delete(("cache", "split"))])
    assert "[cache.split]" not in out and "prefill_base_url" not in out
    assert tomllib.loads(out)["request"]["max_tokens"] == 2048


def test_delete_of_missing_path_is_a_no_op() -> None:
    text = read(FIXTURES / "ccswitch" / "article.toml")
    doc = TomlDocument(text)
    assert doc.apply([Delete(("nope",)), Delete(("nope", "x")), Delete(("cache", "nope"))]) == text
    assert doc.apply([Delete(("cache", "mode", "deeper"))]) == text


def test_edit_inside_array_of_tables_keeps_the_other_keys() -> None:
    text = read(FIXTURES / "kvswitch" / "kvswitch.toml")
    doc = TomlDocument(text)
    out = doc.apply([Set(("clients", 1, "nudge", "kind"), "touch"), Set(("clients", 0, "kind"), "cline")])
    data = tomllib.loads(out)
    assert data["clients"][1] == {
        "path": "~/.config/cc-switch/config.toml",
        "kind": "ccswitch",
        "nudge": {"kind": "touch", "pidfile": "/run/user/1000/ccswitch.pid"},
    }
    assert changed_lines(text, out) == [
        '-nudge = { kind = "signal", pidfile = "/run/user/1000/ccswitch.pid" }',
        '+nudge = { kind = "touch", pidfile = "/run/user/1000/ccswitch.pid" }',
    ]


def test_edit_array_element() -> None:
    out = TomlDocument("arr = [1, 2, 3]  # c\n").apply([Set(("arr", 0), 9)])
    assert out == "arr = [9, 2, 3]  # c\n"


@pytest.mark.parametrize(
    "edit",
    [
        Set(("clients", 5, "kind"), "x"),
        Set(("clients", "x"), 1),
        Set(("clients", 0, "path"), None),
        Set(("title",), None),
    ],
    ids=["index-out-of-range", "str-index", "none-in-aot", "none"],
)
def test_impossible_edits_raise_value_error(edit: Set) -> None:
    text = read(FIXTURES / "kvswitch" / "kvswitch.toml").replace("version = 1", "version = 1\ntitle = 't'")
    with pytest.raises(ValueError):
        TomlDocument(text).apply([edit])


def test_set_dict_into_inline_table_stays_inline() -> None:
    text = "inl = { x = 1 }\ny = 2\n"
    out = TomlDocument(text).apply([Set(("inl",), {"a": {"b": 1}}), Set(("z", "q", "r"), 1)])
    assert tomllib.loads(out) == {"inl": {"a": {"b": 1}}, "y": 2, "z": {"q": {"r": 1}}}
    assert out.startswith("inl = {")


# -- verify after write ----------------------------------------------------------------

BUGGY = 'tags = [ "a", "b",   # trailing comment\n]\n'


def test_tomlkit_loses_data_appending_to_an_array_with_a_trailing_comment() -> None:
    """The bug D-4 guards against: tomlkit writes the new element into the comment."""
    doc = tomlkit.parse(BUGGY)
    doc["tags"].append("c")
    written = tomlkit.dumps(doc)
    assert doc["tags"] == ["a", "b", "c"]  # tomlkit believes it worked …
    assert tomllib.loads(written)["tags"] != ["a", "b", "c"]  # … the text says otherwise
    with pytest.raises(ValueError, match="tags"):
        verify_toml(written, {"tags": ["a", "b", "c"]})


def test_verify_accepts_the_intended_text_and_rejects_invalid_text() -> None:
    verify_toml('tags = ["a", "b", "c"]\n', {"tags": ["a", "b", "c"]})
    verify_toml(BOM + "a = 1\n", {"a": 1})
    with pytest.raises(ValueError, match="does not parse"):
        verify_toml("a = = 1\n", {"a": 1})
    with pytest.raises(ValueError, match=r"cache\.mode"):
        verify_toml('[cache]\nmode = "merged"\n', {"cache": {"mode": "split"}})
    with pytest.raises(ValueError, match=r"tags\[2\]"):
        verify_toml('tags = ["a", "b", "x"]\n', {"tags": ["a", "b", "c"]})


def test_apply_refuses_when_the_written_text_reads_back_differently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = TomlDocument(BUGGY + "other = 1\n")
    good = doc.apply([Set(("tags",), ["a", "b", "c"])])
    assert tomllib.loads(good) == {"tags": ["a", "b", "c"], "other": 1}

    def lossy(document: Any) -> str:  # what tomlkit produces for an in-place append
        return 'tags = [ "a", "b",   # trailing comment "c",\n]\nother = 1\n'

    monkeypatch.setattr(tomlkit, "dumps", lossy)
    with pytest.raises(ValueError, match="reads back differently at tags"):
        doc.apply([Set(("tags",), ["a", "b", "c"])])


# -- property: random flat tables, random edits ----------------------------------------

_BARE = st.from_regex(r"[a-z][a-z0-9_-]{0,7}", fullmatch=True)
_KEY = st.one_of(_BARE, st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6))
_SCALAR = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.lists(st.integers(-5, 5), max_size=3),
)
_COMMENT = st.text(st.sampled_from("abc =[]#'\" {}.,"), max_size=10)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else tomlkit.string(key).as_string()


def _toml_value(value: Any, literal: bool) -> str:
    if isinstance(value, str) and literal and re.fullmatch(r"[^'\x00-\x1f\x7f]*", value):
        return f"'{value}'"
    return tomlkit.item(value).as_string()


@st.composite
def flat_documents(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tables = draw(st.dictionaries(_BARE, st.dictionaries(_KEY, _SCALAR, max_size=5), min_size=1, max_size=3))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append("# " + draw(_COMMENT))
    for name, table in tables.items():
        lines.append(f"[{name}]" + (" # " + draw(_COMMENT) if draw(st.booleans()) else ""))
        width = max((len(_toml_key(k)) for k in table), default=0)
        for key, value in table.items():
            rendered_key = _toml_key(key)
            pad = " " * (width - len(rendered_key)) if draw(st.booleans()) else ""
            line = f"{rendered_key}{pad} = {_toml_value(value, draw(st.booleans()))}"
            if draw(st.booleans()):
                line += " " * draw(st.integers(1, 6)) + "# " + draw(_COMMENT)
            lines.append(line)
            if draw(st.integers(0, 4)) == 0:
                lines.append("   # " + draw(_COMMENT))
        if draw(st.booleans()):
            lines.append("")
    return eol.join(lines) + eol, tables


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), document=flat_documents())
def test_random_set_edits_read_back_exactly(data: st.DataObject, document: tuple[str, dict[str, Any]]) -> None:
    text, tables = document
    doc = TomlDocument(text)
    assert doc.data == tables  # the generator and tomllib agree
    assert doc.apply([]) == text
    existing = [(t, k) for t, table in tables.items() for k in table]
    targets = st.one_of(
        *([st.sampled_from(existing)] if existing else []),
        st.tuples(st.sampled_from(sorted(tables)), _KEY),
        st.tuples(_BARE, _KEY),
    )
    edits = data.draw(st.lists(st.tuples(targets, _SCALAR), min_size=1, max_size=4))
    expected = {t: dict(v) for t, v in tables.items()}
    for (table, key), value in edits:
        if not isinstance(expected.get(table), dict):
            expected[table] = {}
        expected[table][key] = value
    out = doc.apply([Set((t, k), v) for (t, k), v in edits])
    assert tomllib.loads(out.removeprefix(BOM)) == expected
    if "\r\n" in text:
        assert not re.search(r"(?<!\r)\n", out)
    # the lines of keys nobody edited are all still there, in order
    edited = {(t, k) for (t, k), _ in edits}
    kept = [
        line
        for line in lines_of(text)
        if line and not any(line.startswith(_toml_key(k)) for t, k in edited if t in tables)
    ]
    out_lines = iter(lines_of(out))
    assert all(any(line == o for o in out_lines) for line in kept)
    # every edited key can be found again in the new text
    new_doc = TomlDocument(out)
    for (table, key), _ in edits:
        spot = new_doc.locate((table, key), key=True)
        assert spot is not None
        line = lines_of(out)[spot[0] - 1]
        assert line[spot[1] - 1 :].startswith(_toml_key(key))
