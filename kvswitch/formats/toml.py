"""TOML documents: read and locate with ``tomllib``, edit with ``tomlkit``, verify every edit.

``tomllib`` (the stdlib, TOML 1.0) is the reference reader: it decides whether a file is
valid and what it means. It gives no positions, so :func:`locate_keys` scans the (already
valid) text once and records where every key and value starts, for ``path:line:col``
diagnostics. Edits go through ``tomlkit``, which keeps comments and layout; because tomlkit
can silently lose data (an array whose last line ends in a comment), every edited text is
re-read with ``tomllib`` and compared with the intended values before anyone writes it.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from kvswitch.errors import KvswitchError
from kvswitch.formats.jsonc import line_col, line_starts
from kvswitch.i18n import language, tr
from kvswitch.records import record

if TYPE_CHECKING:
    from kvswitch.edits import Edit

__all__ = ["TomlDocument", "TomlSyntaxError", "locate_keys", "rename_table", "same_values", "verify_toml"]

Path = tuple[str | int, ...]

_TOMLLIB_POS = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$", re.S)
_TOMLLIB_EOF = re.compile(r"^(?P<msg>.*?) \(at end of document\)$", re.S)
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_WS = re.compile(r"[ \t]*")
_DATE_SPACE = re.compile(r"\d{4}-\d\d-\d\d \d")
_WS_NL = re.compile(r"(?:[ \t\r\n]+|#[^\r\n]*)*")
_ML_BASIC = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""', re.S)
_SCALAR_END = re.compile(r"[^\s,\]\}#]*")
MAX_DEPTH = 100
"""Deepest nesting of arrays and tables accepted; tomlkit (the editor) refuses deeper text."""
_BLANK_END = re.compile(r"\n[ \t]*\r?\n\Z")


class TomlSyntaxError(KvswitchError, ValueError):
    """The text is not valid TOML 1.0; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@record(slots=True)
class KeySpot:
    """Where a key and its value start, and where the value ends (offsets into the text;
    ``end`` is -1 for a table, which has no value of its own)."""

    key: int
    value: int
    end: int = -1


class _TooDeep(KvswitchError):
    """Nesting deeper than the parser follows, at ``offset`` (caught in this module)."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"nesting too deep at offset {offset}")
        self.offset = offset


class _Scanner:
    """Records the start of every key and value in a valid TOML text."""

    def __init__(self, text: str) -> None:
        self.t = text
        self.n = len(text)
        self.spots: dict[Path, KeySpot] = {}
        self.aot: dict[Path, int] = {}
        self.headers: dict[Path, int] = {}
        """Where each table written with a ``[header]`` starts."""
        self.body_end: dict[Path, int] = {}
        """Where the last value under each ``[header]`` (``()``: before any header) ends."""
        self.defined_in: dict[Path, Path] = {}
        """For a table made by dotted keys (``a.b = 1``), the table whose lines made it."""
        self.closed: set[Path] = set()
        """The tables whose lines have all been seen (``()`` once a header comes)."""
        self.finished = False
        """Whether the scan reached the end of the text."""

    def ws(self, i: int) -> int:
        return _WS.match(self.t, i).end()  # type: ignore[union-attr]

    def seen_whole(self, table: Path) -> bool:
        """Whether every line of ``table`` (a ``[header]`` table, or one made by dotted keys,
        or the top level ``()``) has been scanned."""
        if table == ():
            return () in self.closed or self.finished
        return (table if table in self.headers else self.defined_in.get(table)) in self.closed

    def ws_nl(self, i: int) -> int:
        return _WS_NL.match(self.t, i).end()  # type: ignore[union-attr]

    def key(self, i: int) -> tuple[list[str], int]:
        parts: list[str] = []
        t = self.t
        while True:
            i = self.ws(i)
            if t.startswith('"', i):
                m = _BASIC.match(t, i)
                assert m is not None
                quoted = m.group()
                parts.append(tomllib.loads(f"k = {quoted}")["k"] if "\\" in quoted else quoted[1:-1])
            elif t.startswith("'", i):
                m = _LITERAL.match(t, i)
                assert m is not None
                parts.append(m.group()[1:-1])
            else:
                m = _BARE.match(t, i)
                assert m is not None
                parts.append(m.group())
            i = self.ws(m.end())
            if i < self.n and t[i] == ".":
                i += 1
                continue
            return parts, i

    def resolve(self, keys: list[str]) -> Path:
        """Insert array-of-tables indices into a header path (counters are kept per
        resolved parent, so ``[[a.b]]`` restarts at 0 under each ``[[a]]``)."""
        out: list[str | int] = []
        for k in keys:
            out.append(k)
            idx = self.aot.get(tuple(out))
            if idx is not None:
                out.append(idx)
        return tuple(out)

    def prefixes(self, path: Path, start: int) -> None:
        """Record the implicit tables of a dotted key or header (first mention wins)."""
        if len(path) > MAX_DEPTH:
            raise _TooDeep(start)
        for depth in range(1, len(path)):
            self.spots.setdefault(path[:depth], KeySpot(start, start))

    def scan(self, done: Callable[[], bool] | None = None) -> dict[Path, KeySpot]:
        """Scan the text; with ``done``, stop at a header once ``done()`` says so."""
        t = self.t
        i = 1 if t.startswith("\ufeff") else 0
        table: Path = ()
        while True:
            i = self.ws_nl(i)
            if i >= self.n:
                self.finished = True
                return self.spots
            if t[i] == "[":
                self.closed.add(table)
                if done is not None and done():
                    return self.spots
            if t.startswith("[[", i):
                keys, j = self.key(i + 2)
                parent = (*self.resolve(keys[:-1]), keys[-1])
                self.aot[parent] = self.aot.get(parent, -1) + 1
                table = (*parent, self.aot[parent])
                self.prefixes(table, i)
                self.spots[table] = KeySpot(i, i)
                self.headers[table] = i
                i = j + 2
            elif t[i] == "[":
                keys, j = self.key(i + 1)
                table = self.resolve(keys)
                self.prefixes(table, i)
                self.spots[table] = KeySpot(i, i)
                self.headers[table] = i
                i = j + 1
            else:
                i = self.keyval(i, table)
                self.body_end[table] = i

    def keyval(self, i: int, table: Path) -> int:
        keys, j = self.key(i)
        j = self.ws(j + 1)  # past '='
        path = (*table, *keys)
        if len(path) > MAX_DEPTH:
            raise _TooDeep(i)
        for depth in range(len(table) + 1, len(path)):
            self.spots.setdefault(path[:depth], KeySpot(i, i))
            self.defined_in.setdefault(path[:depth], table)
        end = self.value(j, path)
        self.spots[path] = KeySpot(i, j, end)
        return end

    def value(self, i: int, path: Path) -> int:
        t = self.t
        if len(path) > MAX_DEPTH:
            raise _TooDeep(i)
        if t.startswith('"""', i):
            m = _ML_BASIC.match(t, i)
            assert m is not None
            end = m.end() - 3
            while t.startswith('"', end + 3):
                end += 1  # up to two quotes may close the content: """a""""
            return end + 3
        if t.startswith("'''", i):
            end = t.index("'''", i + 3)
            while t.startswith("'", end + 3):
                end += 1
            return end + 3
        if t[i] == '"':
            m = _BASIC.match(t, i)
            assert m is not None
            return m.end()
        if t[i] == "'":
            m = _LITERAL.match(t, i)
            assert m is not None
            return m.end()
        if t[i] == "[":
            i = self.ws_nl(i + 1)
            idx = 0
            while t[i] != "]":
                self.spots[(*path, idx)] = KeySpot(i, i)
                i = self.ws_nl(self.value(i, (*path, idx)))
                idx += 1
                if t[i] == ",":
                    i = self.ws_nl(i + 1)
            return i + 1
        if t[i] == "{":
            i = self.ws(i + 1)
            while t[i] != "}":
                i = self.ws(self.keyval(i, path))
                if t[i] == ",":
                    i = self.ws(i + 1)
            return i + 1
        m = _SCALAR_END.match(t, i)
        assert m is not None
        end = m.end()
        # dates with a space between date and time: "1979-05-27 07:32:00"
        if end - i == 10 and _DATE_SPACE.match(t, i):
            m2 = _SCALAR_END.match(t, end + 1)
            assert m2 is not None
            end = m2.end()
        return end


def locate_keys(text: str) -> dict[Path, KeySpot]:
    """Offsets of every key and value in a *valid* TOML text, by key path."""
    return _Scanner(text).scan()


def _strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


class TomlDocument:
    """A valid TOML text, its values, and the positions of its keys."""

    __slots__ = ("_line_starts", "_spots", "data", "text")

    def __init__(self, text: str) -> None:
        """Parse with ``tomllib``; raises :class:`TomlSyntaxError` with line and column."""
        self.text = text
        self._spots: dict[Path, KeySpot] | None = None
        self._line_starts: list[int] | None = None
        try:
            self.data: dict[str, Any] = tomllib.loads(_strip_bom(text))
        except tomllib.TOMLDecodeError as exc:
            raise _syntax_error(exc, text) from exc
        except RecursionError:
            self._too_deep()
        if _depth(self.data) > MAX_DEPTH:
            self._too_deep()

    @classmethod
    def _known(cls, text: str, data: dict[str, Any]) -> TomlDocument:
        """A document for ``text`` whose values were just read (by a verification)."""
        doc = cls.__new__(cls)
        doc.text, doc.data, doc._spots, doc._line_starts = text, data, None, None
        return doc

    def _too_deep(self) -> None:
        """Raise the syntax error for a text nested deeper than ``MAX_DEPTH`` levels."""
        line: int | None = None
        column: int | None = None
        try:
            locate_keys(self.text)
        except _TooDeep as deep:
            line, column = self.line_col(deep.offset)
        except (AssertionError, IndexError, ValueError, RecursionError):
            pass  # the text is not valid TOML either; no position to give
        raise TomlSyntaxError(tr("nesting deeper than {depth} levels").format(depth=MAX_DEPTH), line, column)

    @property
    def value(self) -> dict[str, Any]:
        return self.data

    def line_col(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None and len(self.text) > 1 << 20:  # a big file: count, no index
            text = self.text
            line = text.count("\n", 0, offset) + 1
            col = offset - (text.rfind("\n", 0, offset) + 1) + 1
            return line, col - (1 if line == 1 and text.startswith("\ufeff") and offset > 0 else 0)
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return line_col(self.text, offset, self._line_starts)

    def locate(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int] | None:
        """Line and column of the value at ``path`` (of the key with ``key=True``), or of the
        nearest existing ancestor; ``None`` when nothing on the path exists."""
        path = tuple(path)
        spots = self._spots
        if spots is None:
            # scan only as far as it takes to see the path's table whole (a big file's
            # finding near its top costs little); everything is kept once a scan reaches the end
            scanner = _Scanner(self.text)
            spots = scanner.scan(
                lambda: (
                    path in scanner.spots
                    or (len(path) > 1 and scanner.seen_whole(path[:-1]) and path[:-1] in scanner.spots)
                )
            )
            if not scanner.finished and path not in spots:
                # not where its table was: it may still be a later header ([cache.split],
                # [[cache.split]] after other tables), so look through the whole text
                scanner = _Scanner(self.text)
                spots = scanner.scan()
            if scanner.finished:
                self._spots = spots
        for depth in range(len(path), 0, -1):
            spot = spots.get(path[:depth])
            if spot is not None:
                use_key = key or depth < len(path)
                return self.line_col(spot.key if use_key else spot.value)
        return None

    @property
    def eol(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def apply(self, edits: Iterable[Edit]) -> str:
        """The text after ``edits`` (set/delete by key path), verified with tomllib; raises
        ``ValueError`` naming the first value that came out wrong.

        A scalar set where it stands, or a new key or table of scalars under a ``[header]``
        table, is spliced into the text (linear in the file's size); anything else is made
        with tomlkit. Untouched lines keep their bytes; a replaced scalar keeps its quoting style (literal
        strings stay literal) and its same-line comment in the same column where it fits; a
        new table gets a blank line before and after it; a CRLF file stays CRLF."""
        from kvswitch.edits import MISSING, Delete, Insert, Set, apply_to_data, get_path

        edits = list(edits)
        for edit in edits:
            if isinstance(edit, Insert):
                raise ValueError(
                    tr("{path}: TOML documents take Set and Delete edits only").format(path=_show(edit.path))
                )
            if not edit.path:
                raise ValueError(tr("an edit needs a key path"))
        expected: Any = self.data
        for edit in edits:
            if isinstance(edit, Delete) and get_path(expected, edit.path) is MISSING:
                continue  # deleting what is not there changes nothing
            expected = apply_to_data(expected, [edit])
        spliced = _SpanEditor(self).apply(edits)
        if spliced is not None:
            return verified(spliced, expected)
        # new top-level keys go with the other top-level keys (tomlkit would put them after a
        # comment that heads the first table): spliced first, the rest made with tomlkit
        top = [
            e
            for e in edits
            if isinstance(e, Set)
            and len(e.path) == 1
            and get_path(self.data, e.path) is MISSING
            and not isinstance(e.value, dict | list)
        ]
        rest = [e for e in edits if e not in top]
        if top and rest and not any(e.path[:1] == t.path for e in rest for t in top):
            first = _SpanEditor(self).apply(top)
            if first is not None:
                return verified(
                    TomlDocument(verified(first, apply_to_data(self.data, tuple(top)))).apply(rest), expected
                )
        import tomlkit  # only here: the splices above cover a switch's edits
        from tomlkit.exceptions import TOMLKitError

        bom = "\ufeff" if self.text.startswith("\ufeff") else ""
        source = _strip_bom(self.text)
        try:
            doc = tomlkit.parse(source)
        except (TOMLKitError, RecursionError) as exc:
            raise ValueError(tr("the TOML editor cannot edit this text: {error}").format(error=exc)) from exc
        created: list[Any] = []
        try:
            for edit in edits:
                _apply_one(doc, edit, isinstance(edit, Delete), created)
            for table in created:
                _end_with_blank_line(table)
            out = tomlkit.dumps(doc)
        except (TOMLKitError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(
                tr("{path}: cannot apply: {error}").format(path=_show(edits[0].path if edits else ()), error=exc)
            ) from exc
        out = _space_new_tables(out)
        while _BLANK_END.search(out) and not _BLANK_END.search(source):
            out = out[: out.rindex("\n")]  # the blank lines we added after new tables ended up last
            out = out.removesuffix("\r")
        if _crlf_only(source):
            out = _LONE_LF.sub("\r\n", out)  # a pure CRLF file stays CRLF everywhere
        return verified(bom + out, expected)


class _SpanEditor:
    """Edits a valid TOML text by splicing spans: a scalar replaced where it stands (its
    quoting style kept), a new key or a new table of scalars added
    after the last line of its ``[header]`` table. Anything else is left to tomlkit."""

    def __init__(self, doc: TomlDocument) -> None:
        self.doc = doc
        self.text = doc.text
        self.eol = "\r\n" if _crlf_only(self.text) else "\n"
        # what goes before an addition at the end of a text whose last line has no line break
        self.lead = "" if not self.text or self.text.endswith(("\n", "\r")) else self.eol

    def apply(self, edits: Sequence[Edit]) -> str | None:
        """The edited text (unverified), or ``None`` when these edits are not span edits."""
        from kvswitch.edits import MISSING, Set, get_path

        if not edits or not all(isinstance(e, Set) and all(isinstance(p, str) for p in e.path) for e in edits):
            return None
        paths = [e.path for e in edits]
        if len(set(paths)) != len(paths) or any(a != b and a[: len(b)] == b for a in paths for b in paths):
            return None  # one edit inside another: tomlkit's business
        data = self.doc.data
        values: set[Path] = set()
        tables: set[Path] = set()
        for edit in edits:
            value, old = getattr(edit, "value", None), get_path(data, edit.path)
            if old is MISSING:
                parent = get_path(data, edit.path[:-1])
                if not isinstance(parent, dict) or not _plain(value, nested=True):
                    return None
                tables.add(edit.path[:-1])
            elif _scalar(old) and _plain(value, nested=False):
                values.add(edit.path)
            else:
                return None
        scanner = _Scanner(self.text)

        def done() -> bool:  # every value found, every table that gets a key seen whole
            return values <= scanner.spots.keys() and all(scanner.seen_whole(t) for t in tables)

        try:
            scanner.scan(done)
        except (_TooDeep, AssertionError, IndexError, ValueError, RecursionError):
            return None
        splices: list[tuple[int, int, str]] = []
        top: list[tuple[Path, Any]] = []
        for edit in edits:
            value = getattr(edit, "value", None)
            if edit.path in values:
                spot = scanner.spots.get(edit.path)
                if spot is None or spot.end < 0:
                    return None
                splices.append(self._replace(spot, value))
            else:
                parent = edit.path[:-1]
                if parent == () and not isinstance(value, dict):
                    top.append((edit.path, value))
                    continue
                if parent in scanner.headers:
                    at = self._line_after(scanner.body_end.get(parent, scanner.headers[parent]))
                    splices.append((at, at, self._addition(edit.path, value)))
                    continue
                home = scanner.defined_in.get(parent)
                if home is None:
                    return None  # an inline table: tomlkit's business
                # a table made by dotted keys (cache.mode = …) gets dotted keys too
                last = max((spot.end for p, spot in scanner.spots.items() if p[: len(parent)] == parent), default=-1)
                if last < 0:
                    return None
                at = self._line_after(last)
                splices.append((at, at, self._dotted(edit.path[len(home) :], value)))
        if top:
            splices.append(self._top_level(scanner, top))
        splices.sort()
        if any(a[1] > b[0] for a, b in pairwise(splices)):
            return None
        text = self.text
        for start, end, new in reversed(splices):
            text = text[:start] + new + text[end:]
        return text

    def _replace(self, spot: KeySpot, value: Any) -> tuple[int, int, str]:
        """The value at ``spot`` replaced, in the same quoting style where it fits. Only the
        value's characters change: a comment after it moves with it, so that a flip and the
        way back give the same bytes (no rule that realigns comments can be undone exactly)."""
        old = self.text[spot.value : spot.end]
        literal = old.startswith("'") and not old.startswith("'" * 3)
        return spot.value, spot.end, (_literal(value) if literal else None) or _toml_value(value)

    def _top_level(self, scanner: _Scanner, keys: list[tuple[Path, Any]]) -> tuple[int, int, str]:
        """New top-level keys: after the last top-level key, else first in the file (TOML puts
        them before every table; a comment above the first table stays with that table)."""
        if () in scanner.body_end:
            at = self._line_after(scanner.body_end[()])
            return at, at, "".join(self._addition(path, value) for path, value in keys)
        at = 1 if self.text.startswith("\ufeff") else 0
        lines = "".join(f"{_toml_key(str(path[-1]))} = {_toml_value(value)}{self.eol}" for path, value in keys)
        return at, at, lines + (self.eol if self.text[at:].strip() else "")

    def _line_after(self, pos: int) -> int:
        """The start of the line after the one that holds ``pos`` (or the end of the text)."""
        m = _REST_OF_LINE.match(self.text, pos)
        assert m is not None
        return m.end()

    def _dotted(self, rel: Path, value: Any) -> str:
        """Lines of dotted keys (``cache.split.x = …``) for ``value`` at ``rel``."""
        eol, lead = self.eol, self.lead
        items = value.items() if isinstance(value, dict) else [(None, value)]
        lines = [
            ".".join(_toml_key(p) for p in (*rel, *([k] if k is not None else []))) + f" = {_toml_value(v)}"
            for k, v in items
        ]
        return lead + "".join(line + eol for line in lines)

    def _addition(self, path: Path, value: Any) -> str:
        """Text for a new key (a line), or a new table (a blank line, its header, its keys)."""
        eol, lead = self.eol, self.lead
        if not isinstance(value, dict):
            return f"{lead}{_toml_key(str(path[-1]))} = {_toml_value(value)}{eol}"
        header = ".".join(_toml_key(str(p)) for p in path)
        lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()]
        return lead + eol.join(["", f"[{header}]", *lines, ""])


_REST_OF_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_LONE_LF = re.compile(r"(?<!\r)\n")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _crlf_only(text: str) -> bool:
    """Whether ``text`` breaks its lines with CRLF, and only with CRLF."""
    return "\r\n" in text and not _LONE_LF.search(text)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float)  # (a bool is an int)


def _plain(value: Any, *, nested: bool) -> bool:
    """A value the span editor writes: a scalar, or (``nested``) a table of scalars."""
    if isinstance(value, dict):
        return nested and all(isinstance(k, str) and _plain(v, nested=False) for k, v in value.items())
    return _scalar(value) and not (isinstance(value, str) and _SURROGATE.search(value))


def _toml_key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _toml_value(key)


def _literal(value: Any) -> str | None:
    """``value`` as a TOML literal string ('...'), when it can be one."""
    if isinstance(value, str) and "'" not in value and not _CONTROL.search(value):
        return f"'{value}'"
    return None


def _toml_value(value: Any) -> str:
    """A scalar as TOML text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    text = json.dumps(value, ensure_ascii=False)  # TOML's basic strings take JSON's escapes
    return text.replace("\x7f", "\\u007f")


_NEW_TABLE = "\x00"
"""Marks where a table kvswitch created starts (NUL never occurs in valid TOML)."""


def _apply_one(doc: Any, edit: Edit, delete: bool, created: list[Any]) -> None:
    """Apply one Set/Delete to the tomlkit document (a Delete of a missing path is a no-op)."""
    import tomlkit
    from tomlkit.items import AoT, Array, InlineTable

    def is_array(c: Any) -> bool:
        return isinstance(c, AoT | Array | list)

    container: Any = doc
    for depth, part in enumerate((*edit.path[:-1], edit.path[-1])):
        last = depth == len(edit.path) - 1
        if is_array(container):
            appending = last and not delete and part == len(container)
            if not isinstance(part, int) or not (-len(container) <= part < len(container) or appending):
                if delete:
                    return
                message = tr("{path}: no element {index} in the array")
                raise ValueError(message.format(path=_show(edit.path), index=repr(part)))
        elif not isinstance(container, MutableMapping) or isinstance(part, int):
            if delete:
                return
            if isinstance(part, int):
                raise ValueError(tr("{path} is not an array").format(path=_show(edit.path[:depth])))
            raise ValueError(tr("{path} is not a table").format(path=_show(edit.path[:depth])))
        elif part not in container and not last:
            if delete:
                return
            if isinstance(container, InlineTable):
                container[part] = tomlkit.inline_table()
            else:
                container[part] = _new_table()
                created.append(container[part])
        if not last:
            container = container[part]
    key = edit.path[-1]
    if delete:
        if is_array(container) or key in container:
            del container[key]
        return
    value = getattr(edit, "value", None)
    if value is None:
        raise ValueError(tr("{path}: TOML has no null value").format(path=_show(edit.path)))
    if is_array(container) and key == len(container):  # a new element at the end
        if isinstance(container, AoT) and isinstance(value, dict):
            table = _new_item(value, None, False, created)
            container.append(table)
        else:
            container.append(_new_item(value, None, True, created))
        return
    old = container[key] if is_array(container) else container.get(key)
    inline = isinstance(container, InlineTable) or is_array(container) or isinstance(old, InlineTable)
    container[key] = _new_item(value, old, inline, created)
    if not is_array(container):
        _keep_comment_column(container, key, old)


def _end_with_blank_line(table: Any) -> None:
    """A blank line after the keys of a table kvswitch created (before whatever follows)."""
    import tomlkit
    from tomlkit.items import Table, Whitespace

    body = table.value.body
    own = [item for _, item in body if not isinstance(item, Table | Whitespace)]
    if own and not isinstance(body[-1][1], Whitespace | Table):
        table.add(tomlkit.nl())


def _new_table() -> Any:
    import tomlkit

    table = tomlkit.table()
    table.trivia.indent = _NEW_TABLE
    return table


def _new_item(value: Any, old: Any, inline: bool, created: list[Any]) -> Any:
    """``value`` as a TOML item; each table it makes (not an inline one) is added to
    ``created``: its blank line comes after every edit, so later keys go above it."""
    import tomlkit
    from tomlkit.items import String, StringType

    if isinstance(value, dict):
        if inline:
            table: Any = tomlkit.inline_table()
            for k, v in value.items():
                table[k] = _new_item(v, None, True, created)
            return table
        table = _new_table()
        for k, v in value.items():
            table[k] = _new_item(v, None, False, created)
        created.append(table)
        return table
    if (
        isinstance(value, str)
        and isinstance(old, String)
        and old.type is StringType.SLL
        and "'" not in value
        and not any(c in value for c in "\n\r\x7f")
        and all(c >= " " or c == "\t" for c in value)
    ):
        return tomlkit.string(value, literal=True)
    return value


def _keep_comment_column(container: Any, key: Any, old: Any) -> None:
    """Keep a same-line comment where it was when the value's width changed."""
    from tomlkit.items import Item

    if not isinstance(old, Item) or not old.trivia.comment:
        return
    try:
        new = container.item(key) if hasattr(container, "item") else container[key]
    except (KeyError, TypeError):
        return
    if not isinstance(new, Item) or new.trivia.comment != old.trivia.comment:
        return
    old_text, new_text = old.as_string(), new.as_string()
    if "\n" in old_text or "\n" in new_text:
        return
    ws = old.trivia.comment_ws
    if "\t" in ws:
        return  # tabs: the column depends on the tab width; keep the user's whitespace
    width = len(old_text) + len(ws) - len(new_text)
    # the same column when it fits, else the old gap (one or two spaces) after the value
    new.trivia.comment_ws = " " * width if width >= 1 else " " * max(1, min(len(ws), 2))


def _space_new_tables(out: str) -> str:
    """Put a blank line before each table kvswitch created (none at the start of the text)."""
    parts = out.split(_NEW_TABLE)
    text = parts[0]
    for part in parts[1:]:
        if text and not text.endswith("\n"):
            text += "\n"
        if text.strip() and not _BLANK_END.search(text):
            text += "\n"
        text += part
    return text


def _show(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path) or tr("(top level)")


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iteratively: no recursion limit to hit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


_HEADER = re.compile(r"^([ \t]*\[\[?[ \t]*)([^\]\r\n]*?)([ \t]*\]\]?)", re.M)


def rename_key(doc: TomlDocument, path: tuple[str, ...], new: str) -> str:
    """The text with the key at ``path`` (written bare, ``probe_url = …``) renamed to ``new``
    where it stands, so its value and same-line comment stay; verified with tomllib. Raises
    ``ValueError`` when the key is not written that way (dotted, quoted, inline)."""
    text = doc.text
    spot = _Scanner(text).scan().get(path)
    if spot is None or spot.end < 0 or not _BARE.fullmatch(new):
        raise ValueError(tr("{path}: no key to rename").format(path=_show(path)))
    m = re.compile(r"([A-Za-z0-9_-]+)([ \t]*=)").match(text, spot.key)
    if m is None or m.group(1) != path[-1] or m.end() > spot.value:
        raise ValueError(tr("{path} is not written as a bare key").format(path=_show(path)))
    result = text[: m.start(1)] + new + text[m.end(1) :]
    expected = copy.deepcopy(doc.data)
    parent = expected
    for part in path[:-1]:
        parent = parent[part]
    if new in parent:
        raise ValueError(tr("{path} exists already").format(path=_show((*path[:-1], new))))
    parent[new] = parent.pop(path[-1])
    verify_toml(result, expected)
    return result


def rename_table(doc: TomlDocument, path: tuple[str, ...], new: str) -> str:
    """The text with table ``path`` (and its sub-tables) renamed to ``new`` by rewriting only
    their header lines, so comments and layout inside them stay; verified with tomllib.
    Raises ``ValueError`` when the table is not written with headers (e.g. inline)."""
    text = doc.text
    scanner = _Scanner(text)
    out, last, hits = [], 0, 0
    for m in _HEADER.finditer(text):
        try:
            parts, _ = scanner.key(m.start(2))
        except (AssertionError, tomllib.TOMLDecodeError):
            continue
        if tuple(parts[: len(path)]) != path:
            continue
        parts[len(path) - 1] = new
        shown = ".".join(p if _BARE.fullmatch(p) else json.dumps(p, ensure_ascii=False) for p in parts)
        out += [text[last : m.start(2)], shown]
        last = m.end(2)
        hits += 1
    if not hits:
        raise ValueError(tr("{path} has no table header to rename").format(path=_show(path)))
    result = "".join(out) + text[last:]
    expected = copy.deepcopy(doc.data)
    parent = expected
    for part in path[:-1]:
        parent = parent[part]
    parent[new] = parent.pop(path[-1])
    verify_toml(result, expected)
    return result


def verify_toml(text: str, expected: dict[str, Any]) -> None:
    """Re-read ``text`` with tomllib and compare with ``expected``; raise ``ValueError``."""
    verified(text, expected)


def verified(text: str, expected: dict[str, Any]) -> str:
    """``text`` checked as :func:`verify_toml` does, returned with the document the check read,
    so whoever reads the same text next does not parse it again."""
    from kvswitch.formats.edited import EditedText

    try:
        got = tomllib.loads(_strip_bom(text))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(tr("the edited text does not parse: {error}").format(error=exc)) from exc
    if got != expected and not same_values(got, expected):
        message = tr("the edited text reads back differently at {path}")
        raise ValueError(message.format(path=_first_difference(got, expected)))
    return EditedText.of(str(text), TomlDocument._known(str(text), got))


def same_values(a: Any, b: Any) -> bool:
    """``a == b`` for TOML values, except that ``nan`` equals ``nan`` (a file with a ``nan``
    anywhere reads back as itself) and types must match (``1`` is not ``1.0``, ``true`` not
    ``1``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_values(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return bool(b != b)
    return bool(a == b)


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b or not same_values(a[k], b[k]):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if not same_values(x, y):
                return _first_difference(x, y, f"{path}[{i}]")
    return path or tr("the top level")


def _syntax_error(exc: tomllib.TOMLDecodeError, text: str) -> TomlSyntaxError:
    msg = str(exc)
    m = _TOMLLIB_POS.match(msg)
    if m:
        line, col = int(m.group("line")), int(m.group("col"))
        if line == 1 and text.startswith("\ufeff"):
            col = max(1, col)
        return TomlSyntaxError(_tomllib_words(m.group("msg")), line, col)
    m = _TOMLLIB_EOF.match(msg)
    if m:
        stripped = _strip_bom(text)
        line = stripped.count("\n") + 1
        col = len(stripped) - (stripped.rfind("\n") + 1) + 1
        words = _tomllib_words(m.group("msg"))
        return TomlSyntaxError(tr("{error} (at end of file)").format(error=words), line, col)
    return TomlSyntaxError(_tomllib_words(msg), None, None)


_TOMLLIB_NAMED = re.compile(
    r"^(?:(?P<expected>Expected) (?P<what>'.*')|Cannot declare (?P<declare>.+) twice"
    r"|Cannot mutate immutable namespace (?P<mutate>.+)|Cannot redefine namespace (?P<redefine>.+)"
    r"|Duplicate inline table key (?P<duplicate>.+)|Found invalid character (?P<invalid>.+)"
    r"|Illegal character (?P<illegal>.+))$",
    re.S,
)


def _tomllib_words(msg: str) -> str:
    """A ``tomllib`` error message in the user's language (tomllib's own English words when
    the message is not one kvswitch knows: a newer Python may word them differently)."""
    if language() == "en":
        return msg
    fixed = {
        "Cannot overwrite a value": tr("Cannot overwrite a value"),
        "Escaped character is not a Unicode scalar value": tr("Escaped character is not a Unicode scalar value"),
        "Expected '=' after a key in a key/value pair": tr("Expected '=' after a key in a key/value pair"),
        "Expected ']' at the end of a table declaration": tr("Expected ']' at the end of a table declaration"),
        "Expected ']]' at the end of an array declaration": tr("Expected ']]' at the end of an array declaration"),
        "Invalid date or datetime": tr("Invalid date or datetime"),
        "Invalid hex value": tr("Invalid hex value"),
        "Invalid initial character for a key part": tr("Invalid initial character for a key part"),
        "Invalid statement": tr("Invalid statement"),
        "Invalid value": tr("Invalid value"),
        "Unclosed array": tr("Unclosed array"),
        "Unclosed inline table": tr("Unclosed inline table"),
        "Unescaped '\\' in a string": tr("Unescaped '\\' in a string"),
        "Unterminated string": tr("Unterminated string"),
    }
    if msg in fixed:
        return fixed[msg]
    m = _TOMLLIB_NAMED.match(msg)
    if m is None:
        return msg
    if m.group("expected"):
        return tr("Expected {what}").format(what=m.group("what"))
    if m.group("declare"):
        return tr("Cannot declare {key} twice").format(key=m.group("declare"))
    if m.group("mutate"):
        return tr("Cannot mutate immutable namespace {key}").format(key=m.group("mutate"))
    if m.group("redefine"):
        return tr("Cannot redefine namespace {key}").format(key=m.group("redefine"))
    if m.group("duplicate"):
        return tr("Duplicate inline table key {key}").format(key=m.group("duplicate"))
    if m.group("invalid"):
        return tr("Found invalid character {char}").format(char=m.group("invalid"))
    return tr("Illegal character {char}").format(char=m.group("illegal"))
