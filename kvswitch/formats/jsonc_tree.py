"""JSONC parsing: the node tree with offsets, a strict parser for exact errors, and a fast
path for valid files (VS Code's dialect; see :mod:`kvswitch.formats.jsonc`).

The fast path blanks comments and trailing commas (same length, so every offset stays put),
lets the stdlib's C JSON decoder read the values, and builds nodes with offsets only for the
objects an edit or a lookup walks into, one level at a time. Anything it does not accept
(an error, a duplicate key, nesting past ``MAX_DEPTH``, a number out of range) goes to the
strict parser, which builds the whole tree and names the fault's offset. Both accept
exactly the same documents.
"""

from __future__ import annotations

import gc
import json
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import accumulate
from typing import Any

from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr
from kvswitch.records import record

__all__ = [
    "MAX_DEPTH",
    "ArrayNode",
    "Duplicate",
    "JsoncSyntaxError",
    "Node",
    "ObjectNode",
    "Property",
    "line_col",
    "line_starts",
    "parse_tree",
]

Path = tuple[str | int, ...]

MAX_DEPTH = 200

_WS = re.compile(r"[ \t\r\n]*")
_TRIVIA = re.compile(r"(?:[ \t\r\n]+|//[^\r\n]*|/\*.*?\*/)*", re.S)
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[0-9A-Za-z_.+\-]")
_WORD = re.compile(r"[^ \t\r\n{}\[\]\":,/]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# the fast path scans once: runs of plain text, strings and commas that cannot be trailing
# (group 1) | a comment (2) | a comma that may be trailing (3) | any other character (4)
_ANY_STRING = r'"[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"'
_SCAN = re.compile(
    r'((?:[^"/,]+|' + _ANY_STRING + r"|,(?![ \t\r\n]*(?:[}\]]|/[/*])))+)"
    r"|(//[^\r\n]*|/\*.*?\*/)|(,)|(.)",
    re.S,
)
_SKIP_TRIVIA = re.compile(r"(?:[ \t\r\n]+|//[^\r\n]*|/\*.*?\*/)*", re.S)
_NOT_LINE_BREAK = re.compile(r"[^\r\n]")
_STRINGS = re.compile(_ANY_STRING)
_NOT_BRACKETS = re.compile(r"[^{}\[\]]+")
_VALUE_END = frozenset('"]}0123456789eElL')
_FIND_MIN = 4096
"""Objects at least this long (in characters) find one key without building all of theirs."""


class JsoncSyntaxError(KvswitchError, ValueError):
    """The text is not valid JSONC; ``offset`` is where the fault is."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class Node:
    """A value with its span ``[start, end)`` in the text."""

    __slots__ = ("end", "start", "value")

    def __init__(self, start: int, end: int, value: Any) -> None:
        self.start = start
        self.end = end
        self.value = value


class Property:
    """``"key": value`` inside an object; ``comma`` is the offset of the comma after it, or -1."""

    __slots__ = ("comma", "key", "key_start", "value")

    def __init__(self, key: str, key_start: int, value: Node) -> None:
        self.key = key
        self.key_start = key_start
        self.value = value
        self.comma = -1

    @property
    def end(self) -> int:
        """Offset just past the property, its comma included."""
        return self.comma + 1 if self.comma >= 0 else self.value.end


class ObjectNode(Node):
    """An object; ``props`` in source order, duplicates included (built on first use when
    the fast path parsed the document)."""

    __slots__ = ("_find", "_found", "_load", "_props")

    def __init__(
        self,
        start: int,
        load: Callable[[ObjectNode], list[Property]] | None = None,
        find: Callable[[ObjectNode, str], Property | bool | None] | None = None,
    ) -> None:
        super().__init__(start, start, None)
        self._load = load
        self._find = find
        self._found: dict[str, Property | None] = {}
        self._props: list[Property] | None = None if load is not None else []

    @property
    def props(self) -> list[Property]:
        if self._props is None:
            assert self._load is not None
            self._props = self._load(self)
        return self._props

    def get(self, key: str) -> Property | None:
        """The last property named ``key`` (VS Code's rule for duplicates). In a big object
        one key is found without building the others (see ``_Shallow.find``)."""
        if self._props is None and self._find is not None:
            if key in self._found:
                return self._found[key]
            found = self._find(self, key)
            if found is not False:
                prop = found if isinstance(found, Property) else None
                self._found[key] = prop
                return prop
        for prop in reversed(self.props):
            if prop.key == key:
                return prop
        return None

    def index(self, key: str) -> int:
        props = self.props
        for i in range(len(props) - 1, -1, -1):
            if props[i].key == key:
                return i
        return -1


class ArrayNode(Node):
    """An array; ``commas[i]`` is the offset of the comma after ``items[i]``, or -1."""

    __slots__ = ("_commas", "_items", "_load")

    def __init__(self, start: int, load: Callable[[ArrayNode], tuple[list[Node], list[int]]] | None = None) -> None:
        super().__init__(start, start, None)
        self._load = load
        self._items: list[Node] | None = None if load is not None else []
        self._commas: list[int] = []

    def _built(self) -> list[Node]:
        if self._items is None:
            assert self._load is not None
            self._items, self._commas = self._load(self)
        return self._items

    @property
    def items(self) -> list[Node]:
        return self._built()

    @property
    def commas(self) -> list[int]:
        self._built()
        return self._commas


@record(slots=True)
class Duplicate:
    """A key that appears more than once in one object."""

    path: Path
    key_start: int


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.duplicates: list[Duplicate] = []

    # -- trivia -------------------------------------------------------------
    def skip(self, pos: int) -> int:
        pos = _TRIVIA.match(self.text, pos).end()  # type: ignore[union-attr]
        if pos < self.n and self.text[pos] == "/":
            if self.text.startswith("/*", pos):
                raise JsoncSyntaxError(tr("unterminated comment"), pos)
            raise JsoncSyntaxError(tr('unexpected character "/"'), pos)
        return pos

    def fail_at(self, pos: int, expected: str) -> JsoncSyntaxError:
        """The error at ``pos``: ``expected`` (in the user's language) and what was found."""
        if pos >= self.n:
            return JsoncSyntaxError(tr("unexpected end of file: {expected}").format(expected=expected), pos)
        ch = self.text[pos]
        if ch == "'":
            message = tr('{expected}; found "\'" (strings and keys take double quotes)')
            return JsoncSyntaxError(message.format(expected=expected), pos)
        word = _WORD.match(self.text, pos)
        if word is not None and ch not in '{["-0123456789':
            text = word.group()
            # a short word is shown (True, None, undefined); a long one may be a key pasted
            # without quotes, and messages never show keys
            if len(text) > 12:
                message = tr("{expected}; found an unquoted value of {count} characters")
                return JsoncSyntaxError(message.format(expected=expected, count=len(text)), pos)
            return JsoncSyntaxError(tr("{expected}; found {found}").format(expected=expected, found=repr(text)), pos)
        return JsoncSyntaxError(tr("{expected}; found {found}").format(expected=expected, found=repr(ch)), pos)

    # -- values ---------------------------------------------------------------
    def value(self, pos: int, path: Path) -> Node:
        if pos >= self.n:
            raise JsoncSyntaxError(tr("unexpected end of file: {expected}").format(expected=tr("value expected")), pos)
        ch = self.text[pos]
        if ch == "{":
            return self.obj(pos, path)
        if ch == "[":
            return self.arr(pos, path)
        if ch == '"':
            start = pos
            val, pos = self.string(pos)
            return Node(start, pos, val)
        if ch == "-" or "0" <= ch <= "9":
            m = _NUMBER.match(self.text, pos)
            if m is None:
                raise JsoncSyntaxError(tr("invalid number"), pos)
            raw = m.group()
            end = m.end()
            if end < self.n and _NUMBER_TAIL.match(self.text[end]):
                digits = raw.lstrip("-")
                if digits == "0" and self.text[end].isdigit():
                    raise JsoncSyntaxError(tr("invalid number (no leading zeros)"), pos)
                raise JsoncSyntaxError(tr("invalid number"), pos)
            num: int | float
            if any(c in raw for c in ".eE"):
                num = float(raw)
                if math.isinf(num):
                    raise JsoncSyntaxError(tr("number out of range"), pos)
            elif len(raw) > 4000:  # beyond any double, and beyond int()'s digit limit
                raise JsoncSyntaxError(tr("number out of range"), pos)
            else:
                num = int(raw)
            return Node(pos, end, num)
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, pos):
                end = pos + len(word)
                w = _WORD.match(self.text, pos)
                if w is not None and w.end() == end:
                    return Node(pos, end, literal)
        raise self.fail_at(pos, tr("value expected"))

    def string(self, pos: int) -> tuple[str, int]:
        m = _STRING.match(self.text, pos)
        if m is None:
            raise self.string_error(pos)
        raw = m.group()
        if "\\" in raw:
            try:
                return json.loads(raw), m.end()
            except ValueError as exc:  # lone surrogate escapes and the like
                raise JsoncSyntaxError(tr("invalid string: {error}").format(error=exc), pos) from None
        return raw[1:-1], m.end()

    def string_error(self, start: int) -> JsoncSyntaxError:
        pos = start + 1
        text = self.text
        while pos < self.n:
            ch = text[pos]
            if ch == '"':
                break
            if ch in "\r\n":
                return JsoncSyntaxError(tr("unterminated string (strings cannot span lines)"), start)
            if ch == "\\":
                nxt = text[pos + 1 : pos + 2]
                if nxt == "u":
                    if not re.fullmatch(r"[0-9a-fA-F]{4}", text[pos + 2 : pos + 6]):
                        return JsoncSyntaxError(tr("invalid unicode escape in string"), pos)
                    pos += 6
                    continue
                if nxt == "":
                    break
                if nxt not in '"\\/bfnrt':
                    return JsoncSyntaxError(tr("invalid escape character {char} in string").format(char=repr(nxt)), pos)
                pos += 2
                continue
            if ord(ch) < 0x20:
                message = tr("control character {char} in string (write it as an escape)")
                return JsoncSyntaxError(message.format(char=f"U+{ord(ch):04X}"), pos)
            pos += 1
        return JsoncSyntaxError(tr("unterminated string"), start)

    def obj(self, pos: int, path: Path) -> ObjectNode:
        if len(path) >= MAX_DEPTH:
            raise JsoncSyntaxError(tr("nesting deeper than {depth} levels").format(depth=MAX_DEPTH), pos)
        node = ObjectNode(pos)
        text = self.text
        pos = self.skip(pos + 1)
        seen: set[str] = set()
        props = node.props
        while True:
            if pos >= self.n:
                raise JsoncSyntaxError(
                    tr("unexpected end of file: {expected}").format(expected=tr("expected '}'")), pos
                )
            ch = text[pos]
            if ch == "}":
                node.end = pos + 1
                node.value = {p.key: p.value.value for p in props}
                return node
            if props and props[-1].comma < 0:
                raise self.fail_at(pos, tr("expected ',' or '}'"))
            if ch != '"':
                raise self.fail_at(pos, tr("property name (double-quoted string) expected"))
            key_start = pos
            key, pos = self.string(pos)
            pos = self.skip(pos)
            if pos >= self.n or text[pos] != ":":
                raise self.fail_at(pos, tr("expected ':'"))
            pos = self.skip(pos + 1)
            child = self.value(pos, (*path, key))
            prop = Property(key, key_start, child)
            if key in seen:
                self.duplicates.append(Duplicate((*path, key), key_start))
            seen.add(key)
            props.append(prop)
            pos = self.skip(child.end)
            if pos < self.n and text[pos] == ",":
                prop.comma = pos
                pos = self.skip(pos + 1)

    def arr(self, pos: int, path: Path) -> ArrayNode:
        if len(path) >= MAX_DEPTH:
            raise JsoncSyntaxError(tr("nesting deeper than {depth} levels").format(depth=MAX_DEPTH), pos)
        node = ArrayNode(pos)
        text = self.text
        pos = self.skip(pos + 1)
        items, commas = node.items, node.commas
        while True:
            if pos >= self.n:
                raise JsoncSyntaxError(
                    tr("unexpected end of file: {expected}").format(expected=tr("expected ']'")), pos
                )
            if text[pos] == "]":
                node.end = pos + 1
                node.value = [item.value for item in items]
                return node
            if items and commas[-1] < 0:
                raise self.fail_at(pos, tr("expected ',' or ']'"))
            child = self.value(pos, (*path, len(items)))
            items.append(child)
            commas.append(-1)
            pos = self.skip(child.end)
            if pos < self.n and text[pos] == ",":
                commas[-1] = pos
                pos = self.skip(pos + 1)


def _parse(text: str) -> tuple[Node | None, list[Duplicate]]:
    parser = _Parser(text)
    pos = 1 if text.startswith("\ufeff") else 0
    pos = parser.skip(pos)
    if pos >= len(text):
        return None, []
    root = parser.value(pos, ())
    pos = parser.skip(root.end)
    if pos < len(text):
        raise parser.fail_at(pos, tr("end of file expected"))
    return root, parser.duplicates


def line_starts(text: str) -> list[int]:
    """Offsets where lines start (after LF, CRLF or a lone CR)."""
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def line_col(text: str, offset: int, starts: list[int] | None = None) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``; a leading BOM is not counted."""
    starts = line_starts(text) if starts is None else starts
    line = bisect_right(starts, offset)
    col = offset - starts[line - 1] + 1
    if line == 1 and text.startswith("\ufeff") and offset > 0:
        col -= 1
    return line, col


class _NotFast(KvswitchError):
    """The fast path declines; the strict parser decides."""


def _reject_constant(name: str) -> Any:
    raise _NotFast(name)


def _finite_float(raw: str) -> float:
    value = float(raw)
    if math.isinf(value):
        raise _NotFast(raw)
    return value


def _bounded_int(raw: str) -> int:
    if len(raw) > 4000:
        raise _NotFast(raw)
    return int(raw)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _NotFast("duplicate key")
    return obj


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
_STRICT_LOADS = json.JSONDecoder(
    object_pairs_hook=_no_duplicates,
    parse_constant=_reject_constant,
    parse_float=_finite_float,
    parse_int=_bounded_int,
)


class _Shallow:
    """Builds the nodes of one object or array at a time from the blanked text."""

    __slots__ = ("clean", "commas")

    def __init__(self, clean: str, commas: list[int]) -> None:
        self.clean = clean
        self.commas = commas

    def node(self, start: int, end: int, value: Any) -> Node:
        ch = self.clean[start]
        if ch == "{":
            obj = ObjectNode(start, self.object_props, self.find)
            obj.end, obj.value = end, value
            return obj
        if ch == "[":
            arr = ArrayNode(start, self.array_items)
            arr.end, arr.value = end, value
            return arr
        return Node(start, end, value)

    def comma_after(self, end: int, nxt: int) -> int:
        """The offset of the comma between a value's end and the next token, or -1."""
        if self.clean[nxt] == ",":
            return nxt
        i = bisect_left(self.commas, end)
        return self.commas[i] if i < len(self.commas) and self.commas[i] < nxt else -1

    def find(self, obj: ObjectNode, key: str) -> Property | bool | None:
        """The property ``key`` of ``obj``, found by searching the text for the key as written
        (from the end: the fast path has no duplicate keys), without building the others;
        ``None`` when ``obj`` has no such key, ``False`` when it cannot tell (the key is
        written with escapes, or the object is small enough to build whole)."""
        if not isinstance(obj.value, dict) or key not in obj.value:
            return None if isinstance(obj.value, dict) else False
        if obj.end - obj.start < _FIND_MIN:
            return False
        needle = json.dumps(key, ensure_ascii=False)
        if "\\" in needle:
            return False
        clean, ws = self.clean, _WS
        lo, hi = obj.start + 1, obj.end - 1
        at = clean.rfind(needle, lo, hi)
        while at >= 0:
            j = at - 1
            while j >= lo and clean[j] in " \t\r\n":
                j -= 1
            colon = ws.match(clean, at + len(needle)).end()  # type: ignore[union-attr]
            if (j < lo or clean[j] == ",") and clean[colon] == ":" and self._level(lo, at, hi):
                start = ws.match(clean, colon + 1).end()  # type: ignore[union-attr]
                value, end = _DECODER.raw_decode(clean, start)
                prop = Property(key, at, self.node(start, end, value))
                prop.comma = self.comma_after(end, ws.match(clean, end).end())  # type: ignore[union-attr]
                return prop
            at = clean.rfind(needle, lo, at)
        return False

    def _level(self, lo: int, at: int, hi: int) -> bool:
        """Whether offset ``at`` (outside any string) is directly inside the object whose
        content is ``[lo, hi)``: the brackets outside strings balance on either side of it."""
        part = self.clean[lo:at] if at - lo <= hi - at else self.clean[at:hi]
        bare = _STRINGS.sub("", part)
        return bare.count("{") + bare.count("[") == bare.count("}") + bare.count("]")

    def object_props(self, obj: ObjectNode) -> list[Property]:
        with _no_gc():
            return self._object_props(obj)

    def _object_props(self, obj: ObjectNode) -> list[Property]:
        clean, ws, decode = self.clean, _WS, _DECODER.raw_decode
        props: list[Property] = []
        pos = ws.match(clean, obj.start + 1).end()  # type: ignore[union-attr]
        while clean[pos] != "}":
            if clean[pos] == ",":  # the comma after the previous property
                pos = ws.match(clean, pos + 1).end()  # type: ignore[union-attr]
                continue
            m = _STRING.match(clean, pos)
            assert m is not None
            raw = m.group()
            key = json.loads(raw) if "\\" in raw else raw[1:-1]
            key_start = pos
            pos = ws.match(clean, m.end()).end() + 1  # type: ignore[union-attr]
            pos = ws.match(clean, pos).end()  # type: ignore[union-attr]
            value, end = decode(clean, pos)
            prop = Property(key, key_start, self.node(pos, end, value))
            pos = ws.match(clean, end).end()  # type: ignore[union-attr]
            prop.comma = self.comma_after(end, pos)
            props.append(prop)
        return props

    def array_items(self, arr: ArrayNode) -> tuple[list[Node], list[int]]:
        clean, ws, decode = self.clean, _WS, _DECODER.raw_decode
        items: list[Node] = []
        commas: list[int] = []
        pos = ws.match(clean, arr.start + 1).end()  # type: ignore[union-attr]
        while clean[pos] != "]":
            if clean[pos] == ",":
                pos = ws.match(clean, pos + 1).end()  # type: ignore[union-attr]
                continue
            value, end = decode(clean, pos)
            items.append(self.node(pos, end, value))
            pos = ws.match(clean, end).end()  # type: ignore[union-attr]
            commas.append(self.comma_after(end, pos))
        return items, commas


def _blank_trivia(text: str) -> tuple[str, list[int]]:
    """``text`` with comments and trailing commas turned into spaces (line breaks kept, so
    every offset stays), and the offsets of the trailing commas."""
    out: list[str] = []
    commas: list[int] = []
    last = ""  # the last significant character kept
    emit = out.append
    n = len(text)
    for m in _SCAN.finditer(text):
        chunk, comment, comma, other = m.groups()
        if chunk is not None:
            emit(chunk)
            kept = chunk.rstrip(" \t\r\n")
            if kept:
                last = kept[-1]
        elif comment is not None:
            emit(_NOT_LINE_BREAK.sub(" ", comment) if "\n" in comment or "\r" in comment else " " * len(comment))
        elif comma is not None:
            nxt = _SKIP_TRIVIA.match(text, m.end()).end()  # type: ignore[union-attr]
            if nxt < n and text[nxt] in "}]" and last in _VALUE_END:
                emit(" ")
                commas.append(m.start())
            else:  # `[,]`, `{"a":,}`: not a trailing comma; the decoder refuses those
                emit(",")
                last = ","
        else:
            emit(other)
            if not other.isspace():
                last = other
    return "".join(out), commas


def _depth(clean: str) -> int:
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", clean))
    if len(brackets) <= MAX_DEPTH:
        return len(brackets)
    return max(accumulate(1 if c in "{[" else -1 for c in brackets), default=0)


def _fast(text: str) -> Node | None:
    """The root node of a valid document (children built on demand), or raise _NotFast."""
    clean = text
    if clean.startswith("\ufeff"):
        clean = " " + clean[1:]
    clean, commas = _blank_trivia(clean)
    start = _WS.match(clean).end()  # type: ignore[union-attr]
    if start == len(clean):
        return None  # empty, or only comments
    if _depth(clean) > MAX_DEPTH:
        raise _NotFast("too deep")
    try:
        value, end = _STRICT_LOADS.raw_decode(clean, start)
    except (ValueError, RecursionError) as exc:
        raise _NotFast(str(exc)) from None
    if _WS.match(clean, end).end() != len(clean):  # type: ignore[union-attr]
        raise _NotFast("trailing text")
    return _Shallow(clean, commas).node(start, end, value)


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many objects are made at once: its scans of
    a big document's values would otherwise cost more than the parse (nothing here makes cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def parse_tree(text: str) -> tuple[Node | None, list[Duplicate]]:
    """The root node (``None`` for an empty document) and the duplicate keys; raises
    :class:`JsoncSyntaxError` with the offset of the first fault."""
    with _no_gc():
        try:
            return _fast(text), []
        except _NotFast:
            return _parse(text)
