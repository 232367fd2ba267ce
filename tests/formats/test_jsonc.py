"""Unit tests for the JSONC reader and span editor (kvswitch.formats.jsonc)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvswitch.edits import Delete, Insert, Set, apply_to_data
from kvswitch.formats import jsonc
from kvswitch.formats.jsonc import (
    MAX_DEPTH,
    ArrayNode,
    JsoncDocument,
    JsoncSyntaxError,
    ObjectNode,
    dump_value,
    line_col,
)
from tests.conftest import FIXTURES

from .jsonc_gen import same


def parse(text: str) -> Any:
    return JsoncDocument(text).value


def error(text: str) -> tuple[str, tuple[int, int]]:
    """The message and 1-based line:col of the syntax error in ``text``."""
    with pytest.raises(JsoncSyntaxError) as info:
        JsoncDocument(text)
    exc = info.value
    assert str(exc) == exc.message
    return exc.message, line_col(text, exc.offset)


def outside(old: str, new: str, start: int, end: int) -> None:
    """``new`` is ``old`` with only ``old[start:end]`` replaced."""
    tail = len(old) - end
    assert new[:start] == old[:start]
    assert new[len(new) - tail :] == old[end:]


# -- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("null", None),
        ("true", True),
        ("false", False),
        ("0", 0),
        ("-0", 0),
        ("42", 42),
        ("-17", -17),
        ("1.5", 1.5),
        ("-0.25", -0.25),
        ("1e3", 1000.0),
        ("1E+3", 1000.0),
        ("25e-1", 2.5),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("1.7976931348623157e308", 1.7976931348623157e308),
        ('"text"', "text"),
        ('""', ""),
        ("[]", []),
        ("{}", {}),
        ("[1, [2, [3, []]]]", [1, [2, [3, []]]]),
        ('{"a": {"b": {"c": [true, null, {"d": "e"}]}}}', {"a": {"b": {"c": [True, None, {"d": "e"}]}}}),
    ],
)
def test_values_of_every_json_type(text: str, value: Any) -> None:
    assert same(parse(text), value)


def test_integers_stay_integers_and_floats_floats() -> None:
    got = parse("[1, 1.0, 1e0, -0, 10000000000000000000001]")
    assert [type(v) for v in got] == [int, float, float, int, int]
    assert got[4] == 10**22 + 1


@pytest.mark.parametrize(
    ("escaped", "value"),
    [
        (r"\"", '"'),
        (r"\\", "\\"),
        (r"\/", "/"),
        (r"\b\f\n\r\t", "\b\f\n\r\t"),
        (r"\u0041\u00e9\u00E9", "Aéé"),
        (r"\u0000", "\x00"),
        (r"\ud83d\ude00", "😀"),  # a surrogate pair is one character
        (r"\uD834\uDD1E", "𝄞"),
        (r"a\u005cb", "a\\b"),
        (r"\ud800", "\ud800"),  # a lone surrogate, as VS Code reads it
    ],
)
def test_string_escapes(escaped: str, value: str) -> None:
    assert parse(f'"{escaped}"') == value
    assert parse(f'{{"{escaped}": 1}}') == {value: 1}


def test_unicode_text_is_read_as_written() -> None:
    text = '{"日本語": "Grüße, 中文 🙂", "ctl": "\x7f", "sep": "\u2028\u2029", "bom": "\ufeff"}'
    assert parse(text) == {"日本語": "Grüße, 中文 🙂", "ctl": "\x7f", "sep": "\u2028\u2029", "bom": "\ufeff"}


@pytest.mark.parametrize(
    "text",
    ["", " ", "\n\r\n\t ", "// nothing\n", "/* nothing */", "// a\n/* b */ // c", "\ufeff", "\ufeff// c\n"],
)
def test_an_empty_or_comment_only_document_is_none(text: str) -> None:
    doc = JsoncDocument(text)
    assert doc.root is None
    assert doc.value is None
    assert doc.node(()) is None
    assert doc.locate(("a",)) is None


def test_comments_and_trailing_commas_everywhere() -> None:
    text = (
        "/* head */ { // after brace\n"
        '  "a" /* k */ : /* v */ [1, /* between */ 2, ], // after a\n'
        '  "b": {"c": "//not a comment", "d": "/* nor this */",},\n'
        "  /* before } */\n"
        "} // trailer"
    )
    assert parse(text) == {"a": [1, 2], "b": {"c": "//not a comment", "d": "/* nor this */"}}


def test_comment_edge_cases() -> None:
    assert parse("[1/**/,/***/2/* * / */,3//]\n]") == [1, 2, 3]
    assert parse("/* /* not nested */ 1") == 1
    assert parse("1 // no final line break") == 1


def test_line_endings_lf_crlf_and_lone_cr() -> None:
    for eol in ("\n", "\r\n", "\r"):
        text = "{" + eol + '  "a": 1, // c' + eol + '  "b": 2' + eol + "}"
        assert parse(text) == {"a": 1, "b": 2}


def test_bom_at_the_start_is_allowed() -> None:
    assert parse('\ufeff{"a": 1}') == {"a": 1}
    assert parse("\ufeff  // c\n[1]") == [1]


def test_vscode_fixtures_parse(fixtures: Any) -> None:
    for path in sorted((fixtures / "cline").glob("*.json")):
        text = path.read_bytes().decode("utf-8")
        doc = JsoncDocument(text)
        assert isinstance(doc.value, dict), path
    user = JsoncDocument((FIXTURES / "cline" / "vscode-user.json").read_text(encoding="utf-8"))
    assert user.value["editor.rulers"] == [80, 120]
    assert user.value["notes.greeting"].endswith('"quoted" and a /* not a comment */ // nor this')


# -- syntax errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        # missing commas
        ('{\n  "a": 1\n  "b": 2\n}', "expected ',' or '}'", (3, 3)),
        ("[1 2]", "expected ',' or ']'", (1, 4)),
        ("[true false]", "expected ',' or ']'", (1, 7)),
        # strings
        ('{"a": "abc', "unterminated string", (1, 7)),
        ('{\n  "a": "ab\n  cd"}', "unterminated string (strings cannot span lines)", (2, 8)),
        ('["ab\rcd"]', "strings cannot span lines", (1, 2)),
        ('{"a": "x\x01y"}', "control character U+0001 in string", (1, 9)),
        ('["a\tb"]', "control character U+0009 in string", (1, 4)),
        ('["\x00"]', "control character U+0000", (1, 3)),
        ('{"a": "\\x41"}', "invalid escape character 'x' in string", (1, 8)),
        ('["\\\'"]', 'invalid escape character "\'" in string', (1, 3)),
        ('["\\u12G4"]', "invalid unicode escape in string", (1, 3)),
        ('["\\u12"]', "invalid unicode escape in string", (1, 3)),
        ('"abc\\', "unterminated string", (1, 1)),
        # comments
        ('{\n  /* open\n  "a": 1\n}', "unterminated comment", (2, 3)),
        ("[1] /*", "unterminated comment", (1, 5)),
        ("[1 / 2]", 'unexpected character "/"', (1, 4)),
        ("[1] /", 'unexpected character "/"', (1, 5)),
        # quotes and bare words
        ("{\"a\": 'x'}", "double quotes", (1, 7)),
        ("{'a': 1}", "double quotes", (1, 2)),
        ("{a: 1}", "property name (double-quoted string) expected; found 'a'", (1, 2)),
        ("{\n  name: 1}", "found 'name'", (2, 3)),
        ('{"a": yes}', "value expected; found 'yes'", (1, 7)),
        ('{"a": True}', "value expected; found 'True'", (1, 7)),
        ("[nulls]", "value expected; found 'nulls'", (1, 2)),
        ("[undefined]", "found 'undefined'", (1, 2)),
        # numbers
        ('{"a": 01}', "invalid number (no leading zeros)", (1, 7)),
        ("[-007]", "invalid number (no leading zeros)", (1, 2)),
        ("[1.]", "invalid number", (1, 2)),
        ("[1.e5]", "invalid number", (1, 2)),
        ("[1e]", "invalid number", (1, 2)),
        ("[1e+]", "invalid number", (1, 2)),
        ("[-]", "invalid number", (1, 2)),
        ("[0x1F]", "invalid number", (1, 2)),
        ("[1.5.2]", "invalid number", (1, 2)),
        ("[12abc]", "invalid number", (1, 2)),
        ("[.5]", "value expected; found '.5'", (1, 2)),
        ("[+1]", "value expected; found '+1'", (1, 2)),
        ("[NaN]", "value expected; found 'NaN'", (1, 2)),
        ("[Infinity]", "value expected; found 'Infinity'", (1, 2)),
        ("[-Infinity]", "invalid number", (1, 2)),
        ("[1e400]", "number out of range", (1, 2)),
        ("[-1e400]", "number out of range", (1, 2)),
        ("[" + "9" * 5000 + "]", "number out of range", (1, 2)),  # beyond int()'s digit limit
        # structure
        ('{"a": 1} x', "end of file expected; found 'x'", (1, 10)),
        ("{}}", "end of file expected; found '}'", (1, 3)),
        ("[] []", "end of file expected; found '['", (1, 4)),
        ("1 2", "end of file expected; found '2'", (1, 3)),
        ('{"a": 1},', "end of file expected; found ','", (1, 9)),
        ('{"a" 1}', "expected ':'; found '1'", (1, 6)),
        ('{"a": 1', "unexpected end of file: expected '}'", (1, 8)),
        ('{"a":', "unexpected end of file: value expected", (1, 6)),
        ('{"a"', "unexpected end of file: expected ':'", (1, 5)),
        ("[1,", "unexpected end of file: expected ']'", (1, 4)),
        ("[1,,2]", "value expected; found ','", (1, 4)),
        ("[,]", "value expected; found ','", (1, 2)),
        ("{,}", "property name (double-quoted string) expected; found ','", (1, 2)),
        ('{"a": 1,,}', "property name (double-quoted string) expected; found ','", (1, 9)),
        ('{"a": 1 :}', "expected ',' or '}'; found ':'", (1, 9)),
        ("]", "value expected; found ']'", (1, 1)),
        ('{"a": ]}', "value expected; found ']'", (1, 7)),
        ("[1}", "expected ',' or ']'; found '}'", (1, 3)),
        # whitespace VS Code does not take
        ('{\u00a0"a": 1}', "property name (double-quoted string) expected; found '\\xa0'", (1, 2)),
        ("[1,\u00a02]", "value expected; found '\\xa02'", (1, 4)),
        ("[1,\x0b2]", "value expected", (1, 4)),
        ("[1,\x0c2]", "value expected", (1, 4)),
        ("[1,\u20282]", "value expected", (1, 4)),
        ("[1,\u30002]", "value expected", (1, 4)),
        # a BOM anywhere but the start
        ('{"a": 1}\ufeff', "end of file expected; found '\\ufeff'", (1, 9)),
        (' \ufeff{"a": 1}', "value expected; found '\\ufeff'", (1, 2)),
        ('{\ufeff"a": 1}', "property name (double-quoted string) expected", (1, 2)),
        ('\ufeff\ufeff{"a": 1}', "value expected; found '\\ufeff'", (1, 1)),
    ],
)
def test_syntax_errors_have_a_message_and_exact_position(text: str, message: str, where: tuple[int, int]) -> None:
    got_message, got_where = error(text)
    assert message in got_message
    assert got_where == where


def test_single_quotes_say_to_use_double_quotes() -> None:
    message, _ = error("{'a': 1}")
    assert "double quotes" in message
    message, _ = error("{\"a\": 'b'}")
    assert "double quotes" in message


def test_error_positions_after_a_bom_do_not_count_it() -> None:
    # offset 6 is the "1", the 6th character a reader sees on the line (the BOM is invisible)
    assert error('\ufeff{"a" 1}') == ("expected ':'; found '1'", (1, 6))
    # later lines are not affected
    assert error('\ufeff{\n  "a" 1}')[1] == (2, 7)


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_error_positions_with_each_line_ending(eol: str) -> None:
    text = eol.join(["{", '  "a": 1, // note', "  /* x */", '  "b": yes', "}"])
    assert error(text) == ("value expected; found 'yes'", (4, 8))


def test_line_col_helpers_agree() -> None:
    text = "a\r\nbc\rd\ne"
    doc = JsoncDocument("[]")
    assert [line_col(text, i) for i in range(len(text) + 1)] == [
        (1, 1),
        (1, 2),
        (1, 3),  # "a", "\r", "\n"
        (2, 1),
        (2, 2),
        (2, 3),  # "b", "c", "\r"
        (3, 1),
        (3, 2),  # "d", "\n"
        (4, 1),
        (4, 2),  # "e", end
    ]
    assert jsonc.line_starts(text) == [0, 3, 6, 8]
    assert doc.line_col(1) == (1, 2)
    bom = JsoncDocument("\ufeff[\n1]")
    assert bom.line_col(0) == (1, 1)
    assert bom.line_col(1) == (1, 1)
    assert bom.line_col(2) == (1, 2)
    assert bom.line_col(3) == (2, 1)


def test_nesting_up_to_max_depth_parses() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = parse(text)
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []
    obj = '{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH
    assert JsoncDocument(obj).node(("a",) * MAX_DEPTH).value == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), MAX_DEPTH),
        ('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), 5 * MAX_DEPTH),
        ("[" * 100_000, MAX_DEPTH),
        ('{"k": [' * 50_000, 7 * (MAX_DEPTH // 2)),
    ],
)
def test_nesting_beyond_max_depth_is_a_syntax_error_not_a_recursion_error(text: str, offset: int) -> None:
    with pytest.raises(JsoncSyntaxError) as info:
        JsoncDocument(text)
    assert f"nesting deeper than {MAX_DEPTH} levels" in info.value.message
    assert info.value.offset == offset


def test_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="expected"):
        JsoncDocument("{")


# -- nodes, locate, duplicates, comments ----------------------------------------------------------


DOC = """{
    // the model
    "model": "gpt", // same-line
    "nested": {
        "list": [10, {"deep": true}],
        "empty": {}
    },
    "last": null
}
"""


def test_nodes_and_spans() -> None:
    doc = JsoncDocument(DOC)
    root = doc.root
    assert isinstance(root, ObjectNode)
    assert [p.key for p in root.props] == ["model", "nested", "last"]
    model = doc.node(("model",))
    assert model is not None and doc.raw(model) == '"gpt"'
    lst = doc.node(("nested", "list"))
    assert isinstance(lst, ArrayNode) and doc.raw(lst) == '[10, {"deep": true}]'
    assert lst.commas[0] > 0 and lst.commas[1] == -1
    assert doc.node(("nested", "list", 1, "deep")).value is True  # type: ignore[union-attr]
    assert doc.node(("nested", "list", -1, "deep")).value is True  # type: ignore[union-attr]
    assert doc.node(("nested", "list", 2)) is None
    assert doc.node(("nested", "list", "x")) is None
    assert doc.node(("model", "x")) is None
    assert doc.node(("missing",)) is None
    prop = doc.prop(("nested", "empty"))
    assert prop is not None and doc.text[prop.key_start : prop.key_start + 7] == '"empty"'
    assert prop.comma == -1 and prop.end == prop.value.end
    assert doc.prop(("nested", "list", 0)) is None
    assert doc.prop(()) is None


def test_locate_present_paths() -> None:
    doc = JsoncDocument(DOC)
    assert doc.locate(("model",)) == (3, 14)
    assert doc.locate(("model",), key=True) == (3, 5)
    assert doc.locate(("nested", "list", 1, "deep")) == (5, 31)
    assert doc.locate(("nested", "list", 1)) == (5, 22)
    assert doc.locate(()) == (1, 1)


def test_locate_missing_paths_points_at_the_nearest_existing_ancestor() -> None:
    doc = JsoncDocument(DOC)
    assert doc.locate(("nested", "missing")) == (4, 5)  # the "nested" key
    assert doc.locate(("nested", "empty", "x", "y")) == (6, 9)  # the "empty" key
    assert doc.locate(("nested", "list", 7)) == (5, 9)  # the "list" key
    assert doc.locate(("nothing", "here")) == (1, 1)  # the root
    assert JsoncDocument("\ufeff[1]").locate((5,)) == (1, 1)


def test_duplicate_keys_last_wins_and_are_listed() -> None:
    text = '{\n  "a": 1,\n  "b": {"x": 1, "x": 2},\n  "a": 3\n}'
    doc = JsoncDocument(text)
    assert doc.value == {"a": 3, "b": {"x": 2}}
    dups = [(d.path, doc.line_col(d.key_start)) for d in doc.duplicates]
    assert dups == [(("b", "x"), (3, 17)), (("a",), (4, 3))]
    assert doc.locate(("a",)) == (4, 8)
    assert doc.prop(("a",)).value.value == 3  # type: ignore[union-attr]
    assert JsoncDocument('{"a": 1}').duplicates == []


def test_set_acts_on_the_last_duplicate() -> None:
    text = '{\n  "a": 1,\n  "a": 2\n}'
    out = JsoncDocument(text).apply([Set(("a",), 5)])
    assert out == '{\n  "a": 1,\n  "a": 5\n}'


def test_delete_removes_every_copy_of_a_duplicate_key() -> None:
    text = '{\n  "a": 1,\n  "b": 2,\n  "a": 3\n}'
    out = JsoncDocument(text).apply([Delete(("a",))])
    assert out == '{\n  "b": 2\n}'
    inline = JsoncDocument('{"a": 1, "a": 2, "b": 3}').apply([Delete(("a",))])
    assert inline == '{"b": 3}'


def test_insert_of_a_duplicated_key_is_refused() -> None:
    doc = JsoncDocument('{"a": 1, "a": 2}')
    with pytest.raises(KeyError):
        doc.insert((), "a", value=3)


def test_duplicates_fixture() -> None:
    doc = JsoncDocument((FIXTURES / "cline" / "duplicates.json").read_text(encoding="utf-8"))
    assert [d.path for d in doc.duplicates] == [("cline.cacheStrategy",)]
    assert doc.value["cline.cacheStrategy"] == {"mode": "merged", "chunkSize": 512}
    out = doc.apply([Set(("cline.cacheStrategy", "mode"), "split")])
    assert '{"mode": "split", "prefillEndpoint"' in out  # the earlier copy is untouched
    assert '"mode": "split",\n        "chunkSize": 512' in out


@pytest.mark.parametrize(
    ("line", "comment"),
    [
        ('"a": 1, // note', "// note"),
        ('"a": 1 // note', "// note"),
        ('"a": 1, /* note */', "/* note */"),
        ('"a": 1,   /* note */  ', "/* note */"),
        ('"a": 1,', ""),
        ('"a": 1, "b": 2', ""),
        ('"a": 1, /* c */ "b": 2', ""),
        ('"a": 1, /* c */ // d', "/* c */ // d"),
        ('"a": 1 /* c */ , // d', "// d"),
    ],
)
def test_trailing_comment(line: str, comment: str) -> None:
    doc = JsoncDocument("{\n  " + line + "\n}")
    prop = doc.prop(("a",))
    assert prop is not None
    assert doc.trailing_comment(prop) == comment


def test_trailing_comment_is_only_on_the_same_line() -> None:
    doc = JsoncDocument('{\n  "a": 1,\n  // about b\n  "b": 2\n}')
    assert doc.trailing_comment(doc.prop(("a",))) == ""  # type: ignore[arg-type]


def test_property_source() -> None:
    doc = JsoncDocument('{\n  "a" : 1 /* i */ , // j\n  "b": [1,\n    2], /* k */ // l\n  "c": 3, "d": 4\n}')
    source = {key: doc.property_source(doc.prop((key,))) for key in "abcd"}  # type: ignore[arg-type]
    assert source == {
        "a": ('"a" : 1 /* i */ ', " // j"),
        "b": ('"b": [1,\n    2]', " /* k */ // l"),
        "c": ('"c": 3', ""),  # another property follows on the line
        "d": ('"d": 4', ""),
    }


def test_a_property_with_two_trailing_comments_round_trips() -> None:
    text = '{\n  "a": 1,\n  "b": 2, /* k */ // l\n  "c": 3\n}'
    doc = JsoncDocument(text)
    raw, trailer = doc.property_source(doc.prop(("b",)))  # type: ignore[arg-type]
    gone = doc.apply([Delete(("b",))])
    assert gone == '{\n  "a": 1,\n  "c": 3\n}'
    assert JsoncDocument(gone).apply([Insert(("b",), raw=raw, comment=trailer, after="a")]) == text


# -- style detection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ('{\n\t"a": {\n\t\t"b": 1\n\t}\n}', "\t"),
        ('{\n  "a": {\n    "b": 1\n  }\n}', "  "),
        ('{\n    "a": 1\n}', "    "),
        ('{"a": 1}', "    "),  # nothing to go by: 4 spaces
        ('{\r  "a": {\r    "b": 1\r  }\r}', "  "),  # lone CR line endings
        # a JSDoc-style comment's " * " lines are not indentation
        ('/**\n * settings\n */\n{\n    "a": {\n        "b": 1\n    }\n}', "    "),
        ('{\n    /*\n     * x\n     */\n    "a": 1\n}', "    "),
    ],
)
def test_indent_unit_is_detected(text: str, unit: str) -> None:
    assert JsoncDocument(text).indent_unit == unit


@pytest.mark.parametrize(
    ("text", "eol"),
    [("{}", "\n"), ("{\n}", "\n"), ("{\r\n}", "\r\n"), ("{\r}", "\r"), ("{\n\r\n}", "\r\n")],
)
def test_line_ending_is_detected(text: str, eol: str) -> None:
    assert JsoncDocument(text).eol == eol


def test_style_overrides() -> None:
    doc = JsoncDocument('{\n  "a": 1\n}', unit="\t", eol="\r\n")
    assert doc.set(("b",), {"c": 1}).text == '{\n  "a": 1,\r\n  "b": {\r\n  \t"c": 1\r\n  }\n}'


# -- dump_value ------------------------------------------------------------------------------------


def test_dump_value() -> None:
    assert dump_value({"a": [1, {"b": None}], "c": {}, "d": []}, "  ") == (
        '{\n  "a": [\n    1,\n    {\n      "b": null\n    }\n  ],\n  "c": {},\n  "d": []\n}'
    )
    assert dump_value("é🙂\n") == '"é🙂\\n"'
    assert dump_value(1.5) == "1.5"
    assert dump_value(True) == "true"
    assert dump_value((1, 2), "", "", "") == "[1,2]"


def test_dump_value_escapes_lone_surrogates() -> None:
    text = dump_value({"\udc00": "a\ud800b"})
    text.encode("utf-8")  # writable as UTF-8
    assert json.loads(text) == {"\udc00": "a\ud800b"}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_dump_value_refuses_nan_and_infinity(bad: float) -> None:
    with pytest.raises(ValueError, match="no JSON representation"):
        dump_value(bad)


def test_dump_value_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="set"):
        dump_value({1, 2})


# -- set ----------------------------------------------------------------------------------------


def test_set_replaces_only_the_value_span() -> None:
    text = '{\n    "a": 1, // one\n    /* keep */ "b":   "old"  , // two\n    "c": [1,2]\n}\n'
    doc = JsoncDocument(text)
    node = doc.node(("b",))
    assert node is not None
    out = doc.set(("b",), "new").text
    outside(text, out, node.start, node.end)
    assert out[node.start : node.start + 5] == '"new"'
    assert JsoncDocument(out).value == {"a": 1, "b": "new", "c": [1, 2]}


def test_set_an_array_item_and_a_nested_value() -> None:
    text = '{"c": [1, 2, 3], "d": {"e": false}}'
    doc = JsoncDocument(text)
    assert doc.set(("c", 1), 20).text == '{"c": [1, 20, 3], "d": {"e": false}}'
    assert doc.set(("d", "e"), True).text == '{"c": [1, 2, 3], "d": {"e": true}}'


def test_set_a_container_uses_the_line_indentation() -> None:
    text = '{\n  "a": {\n    "b": 1\n  }\n}'
    out = JsoncDocument(text).set(("a", "b"), {"x": [1]}).text
    assert out == '{\n  "a": {\n    "b": {\n      "x": [\n        1\n      ]\n    }\n  }\n}'


def test_set_on_a_missing_path_inserts_and_creates_objects() -> None:
    text = '{\n    "a": 1\n}\n'
    doc = JsoncDocument(text)
    assert doc.set(("b",), 2).text == '{\n    "a": 1,\n    "b": 2\n}\n'
    assert doc.set(("x", "y", "z"), 5).text == (
        '{\n    "a": 1,\n    "x": {\n        "y": {\n            "z": 5\n        }\n    }\n}\n'
    )


def test_set_creates_under_the_deepest_existing_object() -> None:
    text = '{\n  "a": {\n    "b": 1\n  }\n}'
    out = JsoncDocument(text).set(("a", "c", "d"), "v").text
    assert out == '{\n  "a": {\n    "b": 1,\n    "c": {\n      "d": "v"\n    }\n  }\n}'


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": 1}', ("a", "b")),  # through a number
        ('{"a": [1]}', ("a", 5)),  # a missing array index
        ('{"a": [1]}', ("a", "k")),  # a key in an array
        ("[1]", ("a",)),
        ('{"a": {}}', ("a", "b", 0)),  # an index to create
    ],
)
def test_set_that_cannot_be_done_is_a_type_error(text: str, path: tuple[str | int, ...]) -> None:
    with pytest.raises(TypeError):
        JsoncDocument(text).set(path, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", '{\n    "a": {\n        "b": 1\n    }\n}\n'),
        ("// settings\n", '// settings\n{\n    "a": {\n        "b": 1\n    }\n}\n'),
        ("/* settings */", '/* settings */\n{\n    "a": {\n        "b": 1\n    }\n}\n'),
        ("\ufeff", '\ufeff\n{\n    "a": {\n        "b": 1\n    }\n}\n'),
        ("// c\r\n", '// c\r\n{\r\n    "a": {\r\n        "b": 1\r\n    }\r\n}\r\n'),
    ],
)
def test_set_on_an_empty_document_creates_the_root(text: str, expected: str) -> None:
    out = JsoncDocument(text).apply([Set(("a", "b"), 1)])
    assert out == expected


def test_set_the_root() -> None:
    assert JsoncDocument("").apply([Set((), {"a": 1})]) == '{\n    "a": 1\n}\n'
    assert JsoncDocument("// c\n[1]\n").apply([Set((), [2])]) == "// c\n[\n    2\n]\n"


def test_set_a_string_with_a_lone_surrogate_writes_an_escape() -> None:
    out = JsoncDocument('{"a": 1}').apply([Set(("a",), "x\ud800")])
    assert out == '{"a": "x\\ud800"}'
    out.encode("utf-8")


# -- insert ---------------------------------------------------------------------------------------


MULTI = '{\n    "a": 1,\n    "b": 2,\n    "c": 3\n}\n'


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ("a", '{\n    "a": 1,\n    "n": 0,\n    "b": 2,\n    "c": 3\n}\n'),
        ("b", '{\n    "a": 1,\n    "b": 2,\n    "n": 0,\n    "c": 3\n}\n'),
        ("c", '{\n    "a": 1,\n    "b": 2,\n    "c": 3,\n    "n": 0\n}\n'),
        (None, '{\n    "a": 1,\n    "b": 2,\n    "c": 3,\n    "n": 0\n}\n'),
        ("missing", '{\n    "a": 1,\n    "b": 2,\n    "c": 3,\n    "n": 0\n}\n'),
    ],
)
def test_insert_after_a_key(after: str | None, expected: str) -> None:
    assert JsoncDocument(MULTI).insert((), "n", value=0, after=after).text == expected
    assert JsoncDocument(MULTI).apply([Insert(("n",), value=0, after=after)]) == expected


def test_insert_keeps_a_trailing_comma_style() -> None:
    text = '{\n  "a": 1,\n  "b": 2,\n}'
    assert JsoncDocument(text).insert((), "n", value=0).text == '{\n  "a": 1,\n  "b": 2,\n  "n": 0,\n}'
    assert JsoncDocument(text).insert((), "n", value=0, after="a").text == '{\n  "a": 1,\n  "n": 0,\n  "b": 2,\n}'


def test_insert_after_a_commented_property_goes_after_the_comment() -> None:
    text = '{\n  "a": 1, // about a\n  "b": 2 // about b\n}'
    doc = JsoncDocument(text)
    assert doc.insert((), "n", value=0, after="a").text == '{\n  "a": 1, // about a\n  "n": 0,\n  "b": 2 // about b\n}'
    assert doc.insert((), "n", value=0).text == '{\n  "a": 1, // about a\n  "b": 2, // about b\n  "n": 0\n}'


def test_insert_with_a_comment() -> None:
    doc = JsoncDocument('{\n  "a": 1\n}')
    assert doc.insert((), "n", value=0, comment="// why").text == '{\n  "a": 1,\n  "n": 0 // why\n}'
    assert doc.insert((), "n", value=0, comment="   /* why */").text == '{\n  "a": 1,\n  "n": 0   /* why */\n}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", '{\n    "n": 0\n}'),
        ("{ }", '{\n    "n": 0\n}'),
        ("{ /* c */ }", '{\n    /* c */\n    "n": 0\n}'),
        ("{\n    // nothing yet\n}", '{\n    "n": 0\n    // nothing yet\n}'),
        ("{ // nothing yet\n}", '{ // nothing yet\n    "n": 0\n}'),
        ("{\n\n}", '{\n    "n": 0\n\n}'),
    ],
)
def test_insert_into_an_empty_object(text: str, expected: str) -> None:
    out = JsoncDocument(text).insert((), "n", value=0).text
    assert out == expected
    assert JsoncDocument(out).value == {"n": 0}


def test_insert_into_a_nested_empty_object_indents_from_its_line() -> None:
    text = '{\n  "a": {},\n  "b": {\n    // later\n  }\n}'
    doc = JsoncDocument(text)
    assert (
        doc.insert(("a",), "n", value=[1]).text
        == '{\n  "a": {\n    "n": [\n      1\n    ]\n  },\n  "b": {\n    // later\n  }\n}'
    )
    assert doc.insert(("b",), "n", value=1).text == '{\n  "a": {},\n  "b": {\n    "n": 1\n    // later\n  }\n}'


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        ('{"a": 1, "b": 2}', None, '{"a": 1, "b": 2, "n": 0}'),
        ('{"a": 1, "b": 2}', "a", '{"a": 1, "n": 0, "b": 2}'),
        ('{"a": 1, "b": 2,}', None, '{"a": 1, "b": 2, "n": 0,}'),
        ('{"a": 1 /* c */}', None, '{"a": 1, "n": 0 /* c */}'),
    ],
)
def test_insert_into_an_inline_object_stays_inline(text: str, after: str | None, expected: str) -> None:
    assert JsoncDocument(text).insert((), "n", value=0, after=after).text == expected


def test_insert_inline_turns_a_line_comment_into_a_block_comment() -> None:
    doc = JsoncDocument('{"a": 1, "b": 2}')
    assert doc.insert((), "n", value=0, after="a", comment="// why").text == '{"a": 1, "n": 0 /* why */, "b": 2}'
    # a "*/" in the comment cannot end the block comment early
    out = doc.insert((), "n", value=0, after="a", comment="// a */ b").text
    assert JsoncDocument(out).value == {"a": 1, "n": 0, "b": 2}


def test_insert_inline_with_block_and_line_comments_after_it() -> None:
    # what property_source remembers of `"n": 0, /* a */ // b` goes back on one line safely
    doc = JsoncDocument('{"a": 1, "b": 2}')
    out = doc.insert((), "n", raw_entry='"n": 0', comment=" /* a */ // b", after="a").text
    assert out == '{"a": 1, "n": 0 /* a */ /* b */, "b": 2}'


def test_insert_a_raw_entry_verbatim() -> None:
    doc = JsoncDocument('{\n  "mode": "merged",\n  "x": true\n}')
    out = doc.apply([Insert(("chunkSize",), raw='"chunkSize" : 640 /* i */ ', comment=" // j", after="mode")])
    assert out == '{\n  "mode": "merged",\n  "chunkSize" : 640 /* i */ , // j\n  "x": true\n}'


def test_insert_a_raw_entry_ending_in_a_line_comment_inline() -> None:
    doc = JsoncDocument('{"a": 1, "b": 2}')
    out = doc.apply([Insert(("n",), raw='"n": 0 // gone\n  ', after="a")])
    assert JsoncDocument(out).value == {"a": 1, "n": 0, "b": 2}
    assert out == '{"a": 1, "n": 0 /* gone */, "b": 2}'


def test_insert_refuses_an_existing_key_and_a_non_object() -> None:
    doc = JsoncDocument('{"a": 1, "l": []}')
    with pytest.raises(KeyError):
        doc.insert((), "a", value=2)
    with pytest.raises(TypeError):
        doc.insert(("l",), "x", value=2)
    with pytest.raises(TypeError):
        doc.apply([Insert(("l", 0), value=2)])
    with pytest.raises(TypeError):
        JsoncDocument("").insert((), "x", value=1)


def test_insert_where_the_key_exists_sets_it() -> None:
    out = JsoncDocument('{"a": 1}').apply([Insert(("a",), value=2)])
    assert out == '{"a": 2}'


# -- delete ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", '{\n    "b": 2,\n    "c": 3\n}\n'),
        ("b", '{\n    "a": 1,\n    "c": 3\n}\n'),
        ("c", '{\n    "a": 1,\n    "b": 2\n}\n'),  # no trailing comma left behind
        ("zzz", MULTI),  # missing: a no-op
    ],
)
def test_delete_from_a_multi_line_object(key: str, expected: str) -> None:
    assert JsoncDocument(MULTI).delete((key,)).text == expected


TRAILING = '{\n    "a": 1,\n    "b": 2,\n    "c": 3,\n}\n'


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a", '{\n    "b": 2,\n    "c": 3,\n}\n'),
        ("b", '{\n    "a": 1,\n    "c": 3,\n}\n'),
        ("c", '{\n    "a": 1,\n    "b": 2,\n}\n'),  # the file's trailing comma stays
    ],
)
def test_delete_keeps_a_trailing_comma_style(key: str, expected: str) -> None:
    assert JsoncDocument(TRAILING).delete((key,)).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n    "a": 1\n}', "{\n}"),
        ('{\n    "a": 1,\n}', "{\n}"),
        ('{\n    "a": 1 // gone\n}', "{\n}"),
        ('{"a": 1}', "{}"),
        ('{ "a": 1, }', "{ }"),
    ],
)
def test_delete_the_only_property(text: str, expected: str) -> None:
    out = JsoncDocument(text).delete(("a",)).text
    assert out == expected
    assert JsoncDocument(out).value == {}


def test_same_line_comments_and_comment_lines_above_go_with_the_deleted_property() -> None:
    text = (
        "{\n"
        "    // about a (the line above it: goes with it)\n"
        '    "a": 1, // a\'s note\n'
        '    "b": 2, /* b1 */ /* b2 */ // b3\n'
        '    "c": 3 // c\'s note\n'
        "}\n"
    )
    doc = JsoncDocument(text)
    assert doc.delete(("a",)).text == text.replace(
        '    // about a (the line above it: goes with it)\n    "a": 1, // a\'s note\n', ""
    )
    assert doc.delete(("b",)).text == text.replace('    "b": 2, /* b1 */ /* b2 */ // b3\n', "")
    assert doc.delete(("c",)).text == (
        '{\n    // about a (the line above it: goes with it)\n    "a": 1, // a\'s note\n'
        '    "b": 2 /* b1 */ /* b2 */ // b3\n}\n'
    )


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('{"a": 1, "b": 2, "c": 3}', "a", '{"b": 2, "c": 3}'),
        ('{"a": 1, "b": 2, "c": 3}', "b", '{"a": 1, "c": 3}'),
        ('{"a": 1, "b": 2, "c": 3}', "c", '{"a": 1, "b": 2}'),
        ('{"a": 1, "b": 2, "c": 3,}', "c", '{"a": 1, "b": 2,}'),
        ('{"a": 1, /* x */ "b": 2}', "a", '{"b": 2}'),
        ('{"a": 1 /* x */, "b": 2}', "b", '{"a": 1}'),
        ('{ "a": 1,\n  "b": 2 }', "a", '{ "b": 2 }'),
        ('{\n  "a": 1, "b": 2\n}', "a", '{\n  "b": 2\n}'),
        ('{\n  "a": 1, "b": 2\n}', "b", '{\n  "a": 1\n}'),
        ('{\n  "a": 1\n  , "b": 2\n}', "b", '{\n  "a": 1\n}'),
    ],
)
def test_delete_in_inline_objects(text: str, key: str, expected: str) -> None:
    assert JsoncDocument(text).delete((key,)).text == expected


def test_delete_a_multi_line_property() -> None:
    text = '{\n  "a": 1,\n  "b": {\n    "x": [\n      1\n    ]\n  },\n  "c": 3\n}'
    assert JsoncDocument(text).delete(("b",)).text == '{\n  "a": 1,\n  "c": 3\n}'


def test_delete_refuses_paths_that_do_not_end_in_a_key() -> None:
    doc = JsoncDocument('{"a": [1]}')
    with pytest.raises(TypeError):
        doc.delete(("a", 0))
    with pytest.raises(TypeError):
        doc.delete(())
    assert doc.delete(("a", 0, "x")).text == doc.text  # under an array: nothing to delete
    assert doc.delete(("x", "y")).text == doc.text


# -- style is kept --------------------------------------------------------------------------------


def test_tabs_are_detected_and_used() -> None:
    doc = JsoncDocument((FIXTURES / "cline" / "tabs.json").read_text(encoding="utf-8"))
    assert doc.indent_unit == "\t"
    out = doc.apply([Set(("cline.cacheStrategy", "extra"), {"k": 1}), Set(("top",), 1)])
    assert '\t\t"extra": {\n\t\t\t"k": 1\n\t\t}\n\t}' in out
    assert out.endswith('\t},\n\t"top": 1\n}\n')
    assert "  " not in out.replace("\t", "")


def test_two_space_indentation_is_detected_and_used() -> None:
    text = '{\n  "a": {\n    "b": 1\n  }\n}\n'
    out = JsoncDocument(text).apply([Set(("a", "c"), {"d": [1]})])
    assert out == '{\n  "a": {\n    "b": 1,\n    "c": {\n      "d": [\n        1\n      ]\n    }\n  }\n}\n'


def test_crlf_is_kept_for_inserted_lines() -> None:
    text = (FIXTURES / "cline" / "crlf.json").read_bytes().decode("utf-8")
    doc = JsoncDocument(text)
    assert doc.eol == "\r\n"
    out = doc.apply(
        [
            Set(("cline.cacheStrategy", "mode"), "split"),
            Delete(("cline.cacheStrategy", "chunkSize")),
            Insert(("cline.cacheStrategy", "prefill"), value={"url": "http://p"}, after="mode"),
            Set(("new", "nested"), [1, 2]),
        ]
    )
    assert "\n" not in out.replace("\r\n", "")
    assert "\r" not in out.replace("\r\n", "")
    assert JsoncDocument(out).value["cline.cacheStrategy"]["prefill"] == {"url": "http://p"}


def test_lone_cr_is_kept_for_inserted_lines() -> None:
    out = JsoncDocument('{\r  "a": 1\r}\r').apply([Set(("b",), {"c": 1})])
    assert out == '{\r  "a": 1,\r  "b": {\r    "c": 1\r  }\r}\r'


def test_bom_is_kept() -> None:
    text = (FIXTURES / "cline" / "bom.json").read_bytes().decode("utf-8")
    assert text.startswith("\ufeff")
    doc = JsoncDocument(text)
    out = doc.apply([Delete(("cline.openAiBaseUrl",)), Set(("z",), 1)])
    assert out.startswith('\ufeff{\n  "cline.openAiModelId"')
    assert out.count("\ufeff") == 1
    assert JsoncDocument(out).value["z"] == 1


def test_edits_leave_every_other_byte_alone() -> None:
    text = (FIXTURES / "cline" / "vscode-user.json").read_text(encoding="utf-8")
    doc = JsoncDocument(text)
    node = doc.node(("cline.cacheStrategy", "chunkSize"))
    assert node is not None
    out = doc.apply([Set(("cline.cacheStrategy", "chunkSize"), 1024)])
    outside(text, out, node.start, node.end)
    assert out[node.start : node.start + 4] == "1024"


# -- apply ----------------------------------------------------------------------------------------


def test_apply_without_edits_returns_the_text() -> None:
    assert JsoncDocument(MULTI).apply([]) == MULTI


def test_apply_several_edits_under_one_object() -> None:
    """Edits that share a parent object are made on that object's text alone (a sub-document)
    and spliced back: the result is what one-at-a-time editing gives."""
    text = (FIXTURES / "cline" / "article.json").read_text(encoding="utf-8")
    doc = JsoncDocument(text)
    cs = "cline.cacheStrategy"
    edits = [
        Set((cs, "mode"), "split"),
        Delete((cs, "chunkSize")),
        Insert((cs, "prefillEndpoint"), value="http://p", after="mode"),
        Insert((cs, "decodeEndpoint"), value="http://d", after="prefillEndpoint"),
        Set((cs, "extra", "deep"), True),
    ]
    out = doc.apply(edits)
    one_by_one = text
    for edit in edits:
        one_by_one = JsoncDocument(one_by_one).apply([edit])
    assert out == one_by_one
    assert JsoncDocument(out).value == apply_to_data(doc.value, edits)
    block = doc.node((cs,))
    assert block is not None
    outside(text, out, block.start, block.end)  # nothing outside the object changed
    assert (
        '    "cline.cacheStrategy": {\n'
        '        "mode": "split",\n'
        '        "prefillEndpoint": "http://p",\n'
        '        "decodeEndpoint": "http://d",\n'
        '        "kvCacheDtype": "auto",\n'
        '        "enablePrefixCache": true,\n'
        '        "extra": {\n'
        '            "deep": true\n'
        "        }\n"
        "    }\n"
        "}\n"
    ) in out


def test_apply_sub_document_in_an_inline_object_inside_an_array() -> None:
    text = '{\n  "list": [\n    {"a": 1, "b": 2}, {"c": 3}\n  ]\n}'
    out = JsoncDocument(text).apply([Set(("list", 0, "a"), 10), Delete(("list", 0, "b")), Set(("list", 0, "n"), 0)])
    assert out == '{\n  "list": [\n    {"a": 10, "n": 0}, {"c": 3}\n  ]\n}'


def test_apply_edits_at_different_places() -> None:
    doc = JsoncDocument(DOC)
    edits = [
        Set(("model",), "claude"),
        Delete(("nested", "empty")),
        Set(("nested", "list", 1, "deep"), False),
        Insert(("first",), value=1, after="model"),
        Delete(("last",)),
    ]
    out = doc.apply(edits)
    assert out == (
        "{\n"
        "    // the model\n"
        '    "model": "claude", // same-line\n'
        '    "first": 1,\n'
        '    "nested": {\n'
        '        "list": [10, {"deep": false}]\n'
        "    }\n"
        "}\n"
    )


def test_apply_raises_when_the_result_does_not_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = JsoncDocument('{"a": 1}')
    monkeypatch.setattr(JsoncDocument, "_apply_each", lambda self, edits, cuts=None: '{"a": 2}')
    with pytest.raises(ValueError, match=r"does not read back as the intended values \(at a\)"):
        doc.apply([Set(("a",), 3)])


@pytest.mark.parametrize(
    ("written", "where"),
    [
        ('{"a": 3, "b": {"c": 2}}', "b → c"),  # a wrong value
        ('{"a": 1, "b": {"c": 1}}', "a"),  # the edit not made
        ('{"a": 3, "b": {"c": true}}', "b → c"),  # true is not 1
        ('{"a": 3, "b": {}}', "b → c"),  # a missing key
        ('{"a": 3, "b": {"c": 1, "d": 0}}', "b → d"),  # an extra key
        ('{"a": 3, "b": {"c": 1}, "l": [1]}', "l"),
    ],
)
def test_apply_names_where_the_result_differs(monkeypatch: pytest.MonkeyPatch, written: str, where: str) -> None:
    doc = JsoncDocument('{"a": 1, "b": {"c": 1}}')
    monkeypatch.setattr(JsoncDocument, "_apply_each", lambda self, edits, cuts=None: written)
    with pytest.raises(ValueError, match=f"at {where}"):
        doc.apply([Set(("a",), 3)])


def test_apply_accepts_an_int_read_back_as_a_float(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = JsoncDocument('{"a": 1}')
    monkeypatch.setattr(JsoncDocument, "_apply_each", lambda self, edits, cuts=None: '{"a": 3.0}')
    assert doc.apply([Set(("a",), 3)]) == '{"a": 3.0}'


def test_apply_raises_when_the_result_does_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = JsoncDocument('{"a": 1}')
    monkeypatch.setattr(JsoncDocument, "_apply_each", lambda self, edits, cuts=None: '{"a": 3')
    with pytest.raises(ValueError, match="does not parse") as info:
        doc.apply([Set(("a",), 3)])
    assert not isinstance(info.value, JsoncSyntaxError)


def test_apply_raises_when_the_sub_document_result_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = JsoncDocument('{"o": {"a": 1, "b": 2}}')
    real = JsoncDocument._apply_each

    def wrong(self: JsoncDocument, edits: Any, cuts: Any = None) -> str:
        return real(self, edits).replace("10", "11")

    monkeypatch.setattr(JsoncDocument, "_apply_each", wrong)
    with pytest.raises(ValueError, match="does not read back"):
        doc.apply([Set(("o", "a"), 10), Set(("o", "b"), 20)])


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        # the anchor has a comma: the entry's comma goes before its comment
        ('{\n  "a": 1,\n  "b": 2\n}', "a", '{\n  "a": 1,\n  "n": 0, // x\n  "b": 2\n}'),
        # the anchor is last: it takes the comma, the entry needs none
        ('{\n  "a": 1\n}', "a", '{\n  "a": 1,\n  "n": 0 // x\n}'),
        # inline: the comment becomes a block comment
        ('{"a": 1, "b": 2}', "a", '{"a": 1, "n": 0 /* x */, "b": 2}'),
        ('{"a": 1}', "a", '{"a": 1, "n": 0 /* x */}'),
        ("{}", None, '{\n    "n": 0 // x\n}'),
    ],
)
def test_insert_a_raw_entry_that_ends_in_a_line_comment(text: str, after: str | None, expected: str) -> None:
    out = JsoncDocument(text).insert((), "n", raw_entry='"n": 0 // x', after=after).text
    assert out == expected
    assert JsoncDocument(out).value == {**JsoncDocument(text).value, "n": 0}


def test_apply_refuses_a_raw_entry_that_breaks_the_file() -> None:
    doc = JsoncDocument('{\n  "a": 1\n}')
    with pytest.raises(ValueError, match="does not parse"):
        doc.apply([Insert(("n",), raw='"n": [0', after="a")])


def test_apply_does_not_change_the_document() -> None:
    doc = JsoncDocument(MULTI)
    doc.apply([Delete(("a",)), Set(("b",), 5)])
    assert doc.text == MULTI
    assert doc.value == {"a": 1, "b": 2, "c": 3}


def test_apply_to_every_cline_fixture_round_trips_a_property() -> None:
    """Take each property of each fixture's cacheStrategy out and put its source back."""
    for path in sorted((FIXTURES / "cline").glob("*.json")):
        text = path.read_bytes().decode("utf-8")
        doc = JsoncDocument(text)
        block = doc.value.get("cline.cacheStrategy")
        if not isinstance(block, dict):
            continue
        keys = list(block)
        for i, key in enumerate(keys):
            prop = doc.prop(("cline.cacheStrategy", key))
            assert prop is not None
            raw, trailer = doc.property_source(prop)
            gone = doc.apply([Delete(("cline.cacheStrategy", key))])
            after = keys[i - 1] if i else None
            back = JsoncDocument(gone).apply(
                [Insert(("cline.cacheStrategy", key), raw=raw, comment=trailer, after=after)]
            )
            assert JsoncDocument(back).value == doc.value, (path, key)
            if 0 < i < len(keys) - 1:  # (the last one's neighbour lost its comma on the way)
                assert back == text, (path, key)
