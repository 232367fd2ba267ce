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
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvswitch.formats.jsonc import line_col, line_starts

if TYPE_CHECKING:
    from kvswitch.edits import Edit

__all__ = ["TomlDocument", "TomlSyntaxError", "locate_keys"]

Path = tuple[str | int, ...]

_TOMLLIB_POS = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$", re.S)
_TOMLLIB_EOF = re.compile(r"^(?P<msg>.*?) \(at end of document\)$", re.S)
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_WS = re.compile(r"[ \t]*")
_SCALAR_END = re.compile(r"[^\s,\]\}#]*")


class TomlSyntaxError(ValueError):
    """The text is not valid TOML 1.0; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class KeySpot:
    """Where a key and its value start (offsets into the text)."""

    key: int
    value: int


class _Scanner:
    """Records the start of every key and value in a valid TOML text."""

    def __init__(self, text: str) -> None:
        self.t = text
        self.n = len(text)
        self.spots: dict[Path, KeySpot] = {}
        self.aot: dict[tuple[str, ...], int] = {}

    def ws(self, i: int) -> int:
        return _WS.match(self.t, i).end()  # type: ignore[union-attr]

    def ws_nl(self, i: int) -> int:
        t = self.t
        while i < self.n:
            c = t[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#":
                while i < self.n and t[i] not in "\r\n":
                    i += 1
            else:
                break
        return i

    def key(self, i: int) -> tuple[list[str], int]:
        parts: list[str] = []
        t = self.t
        while True:
            i = self.ws(i)
            if t.startswith('"', i):
                m = _BASIC.match(t, i)
                assert m is not None
                parts.append(tomllib.loads(f"k = {m.group()}")["k"])
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
        for depth in range(1, len(path)):
            self.spots.setdefault(path[:depth], KeySpot(start, start))

    def scan(self) -> dict[Path, KeySpot]:
        t = self.t
        i = 1 if t.startswith("\ufeff") else 0
        table: Path = ()
        while True:
            i = self.ws_nl(i)
            if i >= self.n:
                return self.spots
            if t.startswith("[[", i):
                keys, j = self.key(i + 2)
                parent = self.resolve(keys[:-1]) + (keys[-1],)
                self.aot[parent] = self.aot.get(parent, -1) + 1
                table = (*parent, self.aot[parent])
                self.prefixes(table, i)
                self.spots[table] = KeySpot(i, i)
                i = j + 2
            elif t[i] == "[":
                keys, j = self.key(i + 1)
                table = self.resolve(keys)
                self.prefixes(table, i)
                self.spots[table] = KeySpot(i, i)
                i = j + 1
            else:
                i = self.keyval(i, table)

    def keyval(self, i: int, table: Path) -> int:
        keys, j = self.key(i)
        j = self.ws(j + 1)  # past '='
        path = (*table, *keys)
        for depth in range(len(table) + 1, len(path)):
            self.spots.setdefault(path[:depth], KeySpot(i, i))
        self.spots[path] = KeySpot(i, j)
        return self.value(j, path)

    def value(self, i: int, path: Path) -> int:
        t = self.t
        if t.startswith('"""', i):
            j = i + 3
            while True:
                c = t[j]
                if c == "\\":
                    j += 2  # an escape: skip the escaped character
                elif t.startswith('"""', j):
                    end = j
                    while t.startswith('"', end + 3):
                        end += 1  # up to two quotes may close the content: """a""""
                    return end + 3
                else:
                    j += 1
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
        if re.match(r"\d{4}-\d\d-\d\d \d", t[i : end + 2]):
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
        try:
            self.data: dict[str, Any] = tomllib.loads(_strip_bom(text))
        except tomllib.TOMLDecodeError as exc:
            raise _syntax_error(exc, text) from exc
        self._spots: dict[Path, KeySpot] | None = None
        self._line_starts: list[int] | None = None

    @property
    def value(self) -> dict[str, Any]:
        return self.data

    def line_col(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return line_col(self.text, offset, self._line_starts)

    def locate(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int] | None:
        """Line and column of the value at ``path`` (of the key with ``key=True``), or of the
        nearest existing ancestor; ``None`` when nothing on the path exists."""
        if self._spots is None:
            self._spots = locate_keys(self.text)
        for depth in range(len(path), 0, -1):
            spot = self._spots.get(tuple(path[:depth]))
            if spot is not None:
                use_key = key or depth < len(path)
                return self.line_col(spot.key if use_key else spot.value)
        return None

    @property
    def eol(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def apply(self, edits: Iterable[Edit]) -> str:
        """The text after ``edits`` (set/delete by key path), made with tomlkit and verified
        with tomllib; raises ``ValueError`` naming the first value that came out wrong."""
        import tomlkit
        from tomlkit.items import String, StringType

        from kvswitch.edits import Delete, Set, apply_to_data

        edits = list(edits)
        bom = "\ufeff" if self.text.startswith("\ufeff") else ""
        doc = tomlkit.parse(_strip_bom(self.text))
        for edit in edits:
            container: Any = doc
            for part in edit.path[:-1]:
                if part not in container:
                    if isinstance(edit, Delete):
                        break
                    container[part] = tomlkit.table()
                container = container[part]
            else:
                last = edit.path[-1]
                if isinstance(edit, Set):
                    old = container.get(last) if hasattr(container, "get") else None
                    new: Any = edit.value
                    if isinstance(new, dict):
                        table = tomlkit.table()
                        for k, v in new.items():
                            table[k] = v
                        table.add(tomlkit.nl())  # a blank line before whatever follows
                        new = table
                    elif (
                        isinstance(new, str)
                        and isinstance(old, String)
                        and old.type is StringType.SLL
                        and "'" not in new
                        and "\n" not in new
                    ):
                        new = tomlkit.string(new, literal=True)
                    container[last] = new
                elif last in container:
                    del container[last]
        out = tomlkit.dumps(doc)
        source = _strip_bom(self.text)
        if out.endswith("\n\n") and not source.endswith("\n\n"):
            out = out[:-1]  # the blank line we added for a new table ended up last
        if self.eol == "\r\n":
            out = re.sub(r"(?<!\r)\n", "\r\n", out)
        out = bom + out
        expected = apply_to_data(copy.deepcopy(self.data), edits)
        verify_toml(out, expected)
        return out


def verify_toml(text: str, expected: dict[str, Any]) -> None:
    """Re-read ``text`` with tomllib and compare with ``expected``; raise ``ValueError``."""
    try:
        got = tomllib.loads(_strip_bom(text))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"the edited text does not parse: {exc}") from exc
    if got != expected:
        raise ValueError(f"the edited text reads back differently at {_first_difference(got, expected)}")


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k, ...) != b.get(k, ...):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return path or "the top level"


def _syntax_error(exc: tomllib.TOMLDecodeError, text: str) -> TomlSyntaxError:
    msg = str(exc)
    m = _TOMLLIB_POS.match(msg)
    if m:
        line, col = int(m.group("line")), int(m.group("col"))
        if line == 1 and text.startswith("\ufeff"):
            col = max(1, col)
        return TomlSyntaxError(m.group("msg"), line, col)
    m = _TOMLLIB_EOF.match(msg)
    if m:
        stripped = _strip_bom(text)
        line = stripped.count("\n") + 1
        col = len(stripped) - (stripped.rfind("\n") + 1) + 1
        return TomlSyntaxError(f"{m.group('msg')} (at end of file)", line, col)
    return TomlSyntaxError(msg, None, None)
