"""The incremental SSE parser (kvswitch.probe.sse) against the WHATWG rules (reference §6)."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kvswitch.probe.sse import SSEEvent, SSEParser

BOM = b"\xef\xbb\xbf"


def parse(*chunks: bytes) -> tuple[list[SSEEvent], int]:
    """Feed ``chunks`` one by one, then close: (events, comments)."""
    p = SSEParser()
    out: list[SSEEvent] = []
    for c in chunks:
        out.extend(p.feed(c))
    out.extend(p.close())
    return out, p.comments


def datas(*chunks: bytes) -> list[str]:
    return [e.data for e in parse(*chunks)[0]]


def reference(raw: bytes) -> tuple[list[SSEEvent], int]:
    """A plain reading of the WHATWG event-stream algorithm over the whole stream at once."""
    text = raw.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    *lines, tail = re.split(r"\r\n|\r|\n", text)  # the part after the last line break never completes
    events: list[SSEEvent] = []
    data: list[str] = []
    event = ""
    comments = 0
    for line in lines:
        if line == "":
            if data:
                events.append(SSEEvent("\n".join(data), event or "message"))
            data, event = [], ""
        elif line.startswith(":"):
            comments += 1
        else:
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if tail.startswith(":"):
        comments += 1  # the parser counts a comment cut off by EOF too (harmless)
    return events, comments


# -- line endings -------------------------------------------------------------------------


def test_lf_crlf_and_lone_cr_line_ends() -> None:
    for eol in (b"\n", b"\r\n", b"\r"):
        raw = b"data: one" + eol + eol + b"data: two" + eol + eol
        assert datas(raw) == ["one", "two"], eol


def test_mixed_line_ends_in_one_stream() -> None:
    assert datas(b"data: a\r\ndata: b\rdata: c\n\r\n") == ["a\nb\nc"]


def test_cr_at_the_end_of_one_chunk_and_lf_at_the_start_of_the_next() -> None:
    # one CRLF, not two line ends: reading it as CR + LF would end the event after "a"
    assert datas(b"data: a\r", b"\ndata: b\r\n\r\n") == ["a\nb"]
    # and the blank line of a CRLF event split the same way
    assert datas(b"data: a\r\n\r", b"\ndata: b\r\n\r\n") == ["a", "b"]


def test_a_cr_ending_a_chunk_is_a_line_end_when_no_lf_follows() -> None:
    assert datas(b"data: a\r", b"\r") == ["a"]  # at EOF the last CR ends the blank line
    assert datas(b"data: a\r", b"\rdata: b\r\r", b"x") == ["a", "b"]
    assert datas(b"data: a\r\r", b"\ndata: b\r\n\r\n") == ["a", "b"]  # that LF pairs with the CR before it


def test_a_lone_cr_blank_line_at_the_end_of_a_read_dispatches_at_once() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\r\r") == [SSEEvent("a")]
    assert p.feed(b"\ndata: b\r\n\r\n") == [SSEEvent("b")]


def test_events_come_out_as_soon_as_their_blank_line_arrives() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a"') == []
    assert p.feed(b": 1}\n") == []
    assert p.feed(b"\n") == [SSEEvent('{"a": 1}')]


# -- framing ------------------------------------------------------------------------------


def test_several_events_in_one_chunk() -> None:
    raw = b"data: 1\n\ndata: 2\n\n: ping\n\ndata: 3\n\ndata: [DONE]\n\n"
    assert datas(raw) == ["1", "2", "3", "[DONE]"]


def test_an_event_split_at_every_byte() -> None:
    raw = b'data: {"x": "\xc3\xa9"}\r\n\r\n: ka\r\n\r\ndata: [DONE]\r\n\r\n'
    chunks = [raw[i : i + 1] for i in range(len(raw))]
    assert parse(*chunks) == parse(raw) == ([SSEEvent('{"x": "é"}'), SSEEvent("[DONE]")], 1)


def test_comments_are_counted_and_skipped() -> None:
    events, comments = parse(b": keep-alive\n\n:\n: ping\ndata: x\n: inside\n\n")
    assert [e.data for e in events] == ["x"]
    assert comments == 4


def test_multi_line_data_joins_with_lf() -> None:
    assert datas(b"data: a\ndata: b\ndata:\ndata: c\n\n") == ["a\nb\n\nc"]


def test_data_without_a_space_and_only_one_space_removed() -> None:
    assert datas(b"data:x\n\ndata:  two spaces\n\ndata\n\n") == ["x", " two spaces", ""]


def test_event_field_and_its_reset_after_dispatch() -> None:
    events, _ = parse(b"event: error\ndata: boom\n\ndata: next\n\n")
    assert events == [SSEEvent("boom", "error"), SSEEvent("next", "message")]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert parse(b"event: ping\n\nid: 7\nretry: 10\n\ndata: x\n\n")[0] == [SSEEvent("x")]


def test_unknown_fields_are_ignored() -> None:
    assert datas(b"foo: bar\ndata : not data\nDATA: no\nid: 1\ndata: yes\n\n") == ["yes"]


# -- BOM ----------------------------------------------------------------------------------


def test_bom_at_the_start_is_skipped() -> None:
    assert datas(BOM + b"data: x\n\n") == ["x"]


def test_bom_split_across_chunks() -> None:
    assert datas(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == ["x"]
    assert datas(b"\xef\xbb", b"\xbf", b"data: x\n\n") == ["x"]
    assert datas(b"", b"\xef", b"\xbb\xbfdata: x\n\n") == ["x"]


def test_only_one_bom_is_skipped() -> None:
    # a second BOM is part of the first field's name ("\ufeffdata"), which is not "data"
    assert datas(BOM + BOM + b"data: x\n\ndata: y\n\n") == ["y"]
    assert datas(BOM, BOM + b"data: x\n\ndata: y\n\n") == ["y"]


def test_a_bom_like_start_that_is_not_a_bom() -> None:
    events = datas(b"\xef\xbb", b"data: x\n\ndata: y\n\n")
    assert events == ["y"]  # the first line is "\ufffd" + "data: x": an unknown field


# -- end of stream, bad bytes ----------------------------------------------------------------


def test_an_incomplete_event_at_eof_is_dropped() -> None:
    assert datas(b"data: a\n\ndata: b\n") == ["a"]
    assert datas(b"data: a\n\ndata: b") == ["a"]
    p = SSEParser()
    assert p.feed(b"data: half") == []
    assert p.close() == []


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert datas(b"data: \xff\xfe ok\n\n") == ["\ufffd\ufffd ok"]
    assert datas(b"data: \xe2\x82\n\ndata: fine\n\n") == ["\ufffd", "fine"]


def test_a_character_split_across_chunks_is_kept_whole() -> None:
    raw = "data: 你好\n\n".encode()
    assert datas(raw[:7], raw[7:]) == ["你好"]
    assert datas(raw[:8], raw[8:]) == ["你好"]


def test_feed_of_nothing_is_harmless() -> None:
    p = SSEParser()
    assert p.feed(b"") == []
    assert p.feed(b"data: a\n") == []
    assert p.feed(b"") == []
    assert p.feed(b"\n") == [SSEEvent("a")]


# -- properties ---------------------------------------------------------------------------

_eol = st.sampled_from(["\n", "\r\n", "\r"])
_value = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
_line = st.one_of(
    st.builds(lambda v: "data: " + v, _value),
    st.builds(lambda v: "data:" + v, _value),
    st.builds(lambda v: ":" + v, _value),
    st.builds(lambda v: "event: " + v, _value),
    st.builds(lambda v: "id: " + v, _value),
    st.just("retry: 100"),
    st.just(""),
    st.just(""),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_line, _eol), max_size=30))
    raw = "".join(line + eol for line, eol in lines).encode("utf-8")
    if draw(st.booleans()):
        raw = BOM + raw
    return raw


@st.composite
def splits(draw: st.DrawFn, raw: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_split_gives_the_events_of_the_whole_stream(data: st.DataObject) -> None:
    raw = data.draw(streams())
    chunks = data.draw(splits(raw))
    assert parse(*chunks) == parse(raw) == reference(raw)


_pieces = st.sampled_from(
    [
        b"data",
        b"data:",
        b": ",
        b":",
        b" ",
        b"x",
        b"\r",
        b"\n",
        b"\r\n",
        BOM,
        b"\xef",
        b"\xff",
        b"\xc3",
        b"\xa9",
        b"event:",
        b"e",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_bytes_any_split_no_crash_and_same_events(data: st.DataObject) -> None:
    raw = b"".join(data.draw(st.lists(_pieces, max_size=40)))
    chunks = data.draw(splits(raw))
    assert parse(*chunks) == parse(raw) == reference(raw)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_events_come_out_at_the_read_that_completes_them(data: st.DataObject) -> None:
    """Nothing is held back: after each read, the events so far are those of the bytes so far
    (reads that end inside a CRLF are the one exception, see the lone-CR test above)."""
    raw = data.draw(streams())
    chunks = data.draw(splits(raw))
    p = SSEParser()
    so_far: list[SSEEvent] = []
    seen = b""
    for chunk in chunks:
        so_far.extend(p.feed(chunk))
        seen += chunk
        if not seen.endswith(b"\r"):
            assert so_far == reference(seen)[0]
