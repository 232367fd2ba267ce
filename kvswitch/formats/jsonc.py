"""A strict JSONC parser and span-splicing editor (VS Code's dialect).

The dialect is what VS Code accepts in ``settings.json``: JSON plus ``//`` and ``/* */``
comments and trailing commas in objects and arrays. Whitespace is space, tab, LF and CR;
a BOM is allowed only at the very start. Anything else (single quotes, unquoted keys,
``NaN``, leading ``+``) is an error with its line and column.

Parsing keeps the character offset of every key, value and comma, so an edit replaces,
inserts or deletes exactly one span and leaves every other byte of the text alone
(comments, order, indentation, trailing-comma style, CRLF, BOM, unknown keys). Paths are
tuples of object keys (``str``) and array indices (``int``). Duplicate keys are allowed,
as in VS Code: the last one wins, and edits act on it (a delete removes every copy, so no
earlier one shows through).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.edits import Cut, Edit

__all__ = [
    "MAX_DEPTH",
    "ArrayNode",
    "Duplicate",
    "JsoncDocument",
    "JsoncSyntaxError",
    "Node",
    "ObjectNode",
    "Property",
    "dump_value",
    "line_col",
    "line_starts",
]

from kvswitch.formats.edited import EditedText
from kvswitch.formats.jsonc_tree import (
    MAX_DEPTH,
    ArrayNode,
    Duplicate,
    JsoncSyntaxError,
    Node,
    ObjectNode,
    Property,
    line_col,
    line_starts,
    parse_tree,
)

Path = tuple[str | int, ...]

_SURROGATE = re.compile("[\ud800-\udfff]")
_TRAILER = re.compile(r"[ \t]*(?:/\*[^\r\n]*?\*/[ \t]*)*(?://[^\r\n]*)?")
_INDENT = re.compile(r"(?:^|(?<=\r))([ \t]+)[\"{}\[\]0-9]", re.M)
# spaces and comments that go on from a point without crossing a line break outside a comment
# (a block comment may span lines); a line comment ends the run
_RUN = re.compile(r"(?:[ \t]+|/\*.*?\*/)*(?://[^\r\n]*)?", re.S)
_GAP = re.compile(r"(?:[ \t\r\n]+|//[^\r\n]*|/\*.*?\*/)*", re.S)


def _dump_str(text: str) -> str:
    """``text`` as a JSON string; a lone surrogate (which UTF-8 cannot hold) is escaped."""
    out = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def dump_value(value: Any, unit: str = "    ", indent: str = "", eol: str = "\n") -> str:
    """Serialise ``value`` as JSONC text; containers span lines at ``indent`` + ``unit``."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = indent + unit
        items = [f"{inner}{_dump_str(str(k))}: {dump_value(v, unit, inner, eol)}" for k, v in value.items()]
        return "{" + eol + ("," + eol).join(items) + eol + indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = indent + unit
        items = [inner + dump_value(v, unit, inner, eol) for v in value]
        return "[" + eol + ("," + eol).join(items) + eol + indent + "]"
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(tr("{value} has no JSON representation").format(value=repr(value)))
    if isinstance(value, str):
        return _dump_str(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    raise TypeError(tr("cannot write a {type} into JSONC").format(type=type(value).__name__))


class JsoncDocument:
    """Parsed JSONC text that can locate values and return edited copies of itself."""

    __slots__ = ("_eol", "_line_starts", "_tree", "_unit", "text")

    def __init__(self, text: str, *, unit: str | None = None, eol: str | None = None) -> None:
        """Parse ``text``; raises :class:`JsoncSyntaxError` with the offset of the fault.
        ``unit`` and ``eol`` override the detected indentation unit and line ending."""
        self.text = text
        self._tree: tuple[Node | None, list[Duplicate]] | None = parse_tree(text)
        self._line_starts: list[int] | None = None
        self._unit = unit
        self._eol = eol

    @classmethod
    def _unparsed(cls, text: str, unit: str | None, eol: str | None) -> JsoncDocument:
        """A document parsed only when something reads it (an edit's result, for instance:
        ``apply`` parses it once to verify it)."""
        doc = cls.__new__(cls)
        doc.text, doc._tree, doc._line_starts, doc._unit, doc._eol = text, None, None, unit, eol
        return doc

    @property
    def root(self) -> Node | None:
        """The root node (``None`` for an empty document)."""
        if self._tree is None:
            self._tree = parse_tree(self.text)
        return self._tree[0]

    @property
    def duplicates(self) -> list[Duplicate]:
        """Keys that appear more than once in one object (the last one wins)."""
        if self._tree is None:
            self._tree = parse_tree(self.text)
        return self._tree[1]

    # -- reading --------------------------------------------------------------
    @property
    def value(self) -> Any:
        """The plain Python value (``None`` for an empty document)."""
        return None if self.root is None else self.root.value

    def node(self, path: Sequence[str | int]) -> Node | None:
        """The node at ``path``, or ``None``."""
        node = self.root
        for part in path:
            if isinstance(node, ObjectNode) and isinstance(part, str):
                prop = node.get(part)
                node = prop.value if prop is not None else None
            elif isinstance(node, ArrayNode) and isinstance(part, int):
                node = node.items[part] if -len(node.items) <= part < len(node.items) else None
            else:
                return None
            if node is None:
                return None
        return node

    def prop(self, path: Sequence[str | int]) -> Property | None:
        """The property whose key is the last element of ``path``."""
        if not path or not isinstance(path[-1], str):
            return None
        parent = self.node(path[:-1])
        return parent.get(path[-1]) if isinstance(parent, ObjectNode) else None

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset (a leading BOM is not counted)."""
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return line_col(self.text, offset, self._line_starts)

    def locate(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int] | None:
        """Line and column of the value at ``path`` (or of its key), or of the nearest
        existing ancestor when ``path`` is missing; ``None`` for an empty document."""
        for depth in range(len(path), 0, -1):
            sub = path[:depth]
            if key or depth < len(path):
                prop = self.prop(sub)
                if prop is not None:
                    return self.line_col(prop.key_start)
            node = self.node(sub)
            if node is not None:
                return self.line_col(node.start)
        return None if self.root is None else self.line_col(self.root.start)

    def raw(self, node: Node) -> str:
        return self.text[node.start : node.end]

    def property_source(self, prop: Property) -> tuple[str, str]:
        """The exact source of ``prop`` for putting it back later: its text from the key up to
        its comma (or value end), and what follows the comma on its line (spaces and
        comments), both '' where absent."""
        raw = self.text[prop.key_start : prop.comma if prop.comma >= 0 else prop.value.end]
        return raw, self._trailer(prop.end).rstrip()

    def trailing_comment(self, prop: Property) -> str:
        """The comment(s) on the same line just after ``prop`` (and its comma), or ''."""
        return self._trailer(prop.end).strip()

    def _trailer(self, pos: int) -> str:
        """The spaces and comments from ``pos`` to the end of its line (block comments, then
        maybe a line comment), or '' when something else follows on the line."""
        end = _TRAILER.match(self.text, pos).end()  # type: ignore[union-attr]
        if end < len(self.text) and self.text[end] not in "\r\n":
            return ""
        return self.text[pos:end]

    # -- style ----------------------------------------------------------------
    @property
    def eol(self) -> str:
        """The file's line ending: CRLF if it has one, else LF, else a lone CR (old Mac
        files), else LF."""
        if self._eol is None:
            text = self.text
            self._eol = "\r\n" if "\r\n" in text else "\n" if "\n" in text or "\r" not in text else "\r"
        return self._eol

    @property
    def indent_unit(self) -> str:
        """The file's indentation unit: a tab, or the smallest indent in spaces (default 4)."""
        if self._unit is None:
            self._unit = self._detect_unit()
        return self._unit

    def _detect_unit(self) -> str:
        sizes: list[int] = []
        for m in _INDENT.finditer(self.text, 0, min(len(self.text), 20000)):
            ind = m.group(1)
            if ind.startswith("\t"):
                return "\t"
            if set(ind) == {" "}:
                sizes.append(len(ind))
            if len(sizes) >= 50:
                break
        return " " * min(sizes) if sizes else "    "

    def _line_start(self, offset: int) -> int:
        return max(self.text.rfind("\n", 0, offset), self.text.rfind("\r", 0, offset)) + 1

    def _line_indent(self, offset: int) -> str:
        """The whitespace prefix of the line that holds ``offset``."""
        start = self._line_start(offset)
        m = re.compile(r"[ \t]*").match(self.text, start)
        return m.group() if m else ""

    def _starts_line(self, offset: int) -> bool:
        return self.text[self._line_start(offset) : offset].strip(" \t\ufeff") == ""

    def _run_end(self, pos: int) -> int:
        """Where the spaces and comments from ``pos`` stop: at a line break, the end of the
        text, or the next token on the line (a block comment may span lines)."""
        return _RUN.match(self.text, pos).end()  # type: ignore[union-attr]

    def _after_trailer(self, pos: int) -> int:
        """Skip spaces and comments from ``pos``; return the offset of the line break if the
        line ends there, else -1 (something else follows on the same line)."""
        end = self._run_end(pos)
        if end >= len(self.text) or self.text[end] in "\r\n":
            return end
        return -1

    # -- editing --------------------------------------------------------------
    def _splice(self, start: int, end: int, new: str) -> JsoncDocument:
        return self._derive(self.text[:start] + new + self.text[end:])

    def _derive(self, text: str) -> JsoncDocument:
        """A document for ``text`` that keeps this one's style (unit, line ending)."""
        return JsoncDocument._unparsed(text, self.indent_unit, self.eol)

    def apply(self, edits: Sequence[Edit]) -> str:
        """The text after ``edits``, verified: the result is re-parsed and must read back as
        exactly the intended values, else ``ValueError`` names the first difference.

        Several edits under one existing object are made on that object's text alone and
        spliced back once, so a big file is parsed twice (here and in the check), not once
        per edit."""
        from kvswitch.edits import apply_to_data

        edits = list(edits)
        if not edits:
            return self.text
        try:
            out = self._edited(edits)
            checked = JsoncDocument(out, unit=self._unit, eol=self._eol)
            got = checked.value
        except JsoncSyntaxError as exc:  # an edit (a remembered raw entry) broke the text
            raise ValueError(tr("the edited text does not parse: {error}").format(error=exc.message)) from exc
        expected = apply_to_data(self.value, edits)
        where = None if _same_after(self, out, got, expected, edits) else _first_difference(got, expected)
        if where is not None:
            raise ValueError(
                tr("the edited text does not read back as the intended values (at {path})").format(path=_show(where))
            )
        return EditedText.of(out, checked)

    def cuts(self, edits: Sequence[Edit]) -> dict[tuple[str | int, ...], Cut]:
        """What each ``Delete`` among ``edits`` takes out, exactly (see :meth:`cut`), when they
        are applied in order as :meth:`apply` does; a delete of a missing key is left out."""
        found: dict[tuple[str | int, ...], Cut] = {}
        if edits:
            self._edited(list(edits), found)
        return found

    def _edited(self, edits: list[Edit], cuts: dict[tuple[str | int, ...], Cut] | None = None) -> str:
        """The text after ``edits``, unverified. Several edits under one existing object are
        made on that object's text alone and spliced back once."""
        prefix = _common_parent(edits)
        holder = self.node(prefix) if prefix and len(edits) > 1 else None
        if not isinstance(holder, ObjectNode):
            return self._apply_each(edits, cuts)
        pad = self._line_indent(holder.start)
        sub = JsoncDocument(pad + self.raw(holder), unit=self.indent_unit, eol=self.eol)
        local = [_shift(e, len(prefix)) for e in edits]
        sub_cuts: dict[tuple[str | int, ...], Cut] | None = None if cuts is None else {}
        new_sub = sub._apply_each(local, sub_cuts)[len(pad) :]
        if cuts is not None and sub_cuts is not None:
            cuts.update({(*prefix, *path): cut for path, cut in sub_cuts.items()})
        return self.text[: holder.start] + new_sub + self.text[holder.end :]

    def _apply_each(self, edits: Sequence[Edit], cuts: dict[tuple[str | int, ...], Cut] | None = None) -> str:
        from kvswitch.edits import Delete, Insert, edit_value

        doc: JsoncDocument = self
        for edit in edits:
            if isinstance(edit, Delete):
                if cuts is not None and edit.path and isinstance(edit.path[-1], str):
                    found = doc.cut(edit.path[:-1], edit.path[-1])
                    if found is not None:
                        cuts[tuple(edit.path)] = found[1]
                doc = doc.delete(edit.path)
            elif (
                isinstance(edit, Insert)
                and edit.path
                and isinstance(key := edit.path[-1], str)
                and doc.node(edit.path) is None
                and isinstance(doc.node(edit.path[:-1]), ObjectNode)
            ):
                pasted = doc.paste(edit.path[:-1], edit.cut) if edit.cut is not None else None
                doc = (
                    pasted
                    if pasted is not None
                    else doc.insert(
                        edit.path[:-1],
                        key,
                        value=edit.value,
                        raw_entry=edit.raw,
                        comment=edit.comment,
                        after=edit.after,
                    )
                )
            else:
                doc = doc.set(edit.path, edit_value(edit))
        return doc.text

    def replace_span(self, node: Node, new_text: str) -> JsoncDocument:
        """Replace the raw text of ``node``."""
        return self._splice(node.start, node.end, new_text)

    def set(self, path: Sequence[str | int], value: Any) -> JsoncDocument:
        """Set ``path`` to ``value``: replace the value span if it exists, else insert the
        missing property into the nearest existing object (creating nested objects)."""
        path = tuple(path)
        if self.root is None:
            return self._create_root(path, value)
        node = self.node(path)
        if node is not None:
            indent = self._line_indent(node.start)
            text = dump_value(value, self.indent_unit, indent, self.eol)
            return self.replace_span(node, text)
        # find the deepest existing ancestor and insert the rest as a nested value
        for depth in range(len(path) - 1, -1, -1):
            parent = self.node(path[:depth])
            if parent is None:
                continue
            nested: Any = value
            for part in reversed(path[depth + 1 :]):
                if not isinstance(part, str):
                    raise TypeError(
                        tr("cannot create array index {index} at {path}").format(index=repr(part), path=_show(path))
                    )
                nested = {part: nested}
            key = path[depth]
            if not isinstance(parent, ObjectNode) or not isinstance(key, str):
                message = tr("{parent} is not an object; cannot set {path}")
                raise TypeError(message.format(parent=_show(path[:depth]), path=_show(path)))
            return self.insert(path[:depth], key, value=nested)
        raise AssertionError("unreachable")  # pragma: no cover

    def _create_root(self, path: tuple[str | int, ...], value: Any) -> JsoncDocument:
        nested: Any = value
        for part in reversed(path):
            if not isinstance(part, str):
                raise TypeError(tr("cannot create array index {index}").format(index=repr(part)))
            nested = {part: nested}
        eol = self.eol
        body = dump_value(nested, self.indent_unit, "", eol)
        sep = "" if not self.text or self.text.endswith(("\n", "\r")) else eol
        return self._derive(self.text + sep + body + eol)

    def insert(
        self,
        parent_path: Sequence[str | int],
        key: str,
        *,
        value: Any = None,
        raw_value: str | None = None,
        raw_entry: str | None = None,
        comment: str = "",
        after: str | None = None,
    ) -> JsoncDocument:
        """Insert ``"key": value`` into the object at ``parent_path`` right after the
        property ``after`` (at the end when ``after`` is missing or ``None``).

        ``raw_value`` inserts already-serialised JSONC text verbatim; ``raw_entry`` the whole
        property as it once stood (key, spacing, value; see :meth:`property_source`);
        ``comment`` is placed on the same line after it. The file's indentation, line
        endings and trailing-comma style are kept.
        """
        parent = self.node(parent_path)
        if not isinstance(parent, ObjectNode):
            raise TypeError(tr("{path} is not an object").format(path=_show(tuple(parent_path))))
        if parent.get(key) is not None:
            raise KeyError(tr("{path} already exists").format(path=_show((*parent_path, key))))
        eol = self.eol
        unit = self.indent_unit
        props = parent.props
        if props:
            first = props[0]
            if self._starts_line(first.key_start):
                child_indent = self._line_indent(first.key_start)
            else:
                child_indent = self._line_indent(parent.start) + unit
        else:
            child_indent = self._line_indent(parent.start) + unit
        if raw_value is None:
            raw_value = dump_value(value, unit, child_indent, eol)
        entry = raw_entry if raw_entry is not None else f"{_dump_str(key)}: {raw_value}"
        tail = (comment if comment[:1] in (" ", "\t") else f" {comment}") if comment else ""

        if not props:
            return self._insert_into_empty(parent, entry, tail, child_indent, eol)

        idx = parent.index(after) if after is not None else -1
        anchor = props[idx] if idx >= 0 else props[-1]
        had_comma = anchor.comma >= 0
        line_end = self._after_trailer(anchor.end)
        if line_end >= 0:
            # the anchor ends its line: a new line after it (and after its comment)
            new_line = f"{eol}{child_indent}{_with_comma(entry) if had_comma else entry.rstrip()}{tail}"
            if had_comma:
                return self._splice(line_end, line_end, new_line)
            # the anchor was last and had no comma: it gets one right after its value
            text, v_end = self.text, anchor.value.end
            return self._derive(text[:v_end] + "," + text[v_end:line_end] + new_line + text[line_end:])
        # an inline object: stay on the same line (line comments become block comments)
        if "//" in tail:
            tail = " " + _one_line(tail.strip())
        entry = _close_line_comments(entry.rstrip())
        following = props.index(anchor) + 1
        if had_comma and following < len(props):
            # right before the next key, so what stood between the two stays with the anchor
            at = props[following].key_start
            return self._splice(at, at, f"{entry}{tail}, ")
        if had_comma:
            at = anchor.comma + 1
            return self._splice(at, at, f" {entry}{tail},")
        at = anchor.value.end
        return self._splice(at, at, f", {entry}{tail}")

    def _insert_into_empty(
        self, parent: ObjectNode, entry: str, tail: str, child_indent: str, eol: str
    ) -> JsoncDocument:
        open_at, close_at = parent.start, parent.end - 1
        inner = self.text[open_at + 1 : close_at]
        if "\n" in inner or "\r" in inner:
            # a multi-line empty object (maybe holding comments): a line after the '{' line
            at = self._after_trailer(open_at + 1)
            at = at if at >= 0 else open_at + 1
            return self._splice(at, at, f"{eol}{child_indent}{entry}{tail}")
        outer = self._line_indent(open_at)
        kept = f"{eol}{child_indent}{inner.strip()}" if inner.strip() else ""
        new = f"{{{kept}{eol}{child_indent}{entry}{tail}{eol}{outer}}}"
        return self._splice(open_at, close_at + 1, new)

    def delete(self, path: Sequence[str | int]) -> JsoncDocument:
        """Remove the property at ``path`` with its comma and same-line comment; when it sits
        on its own line(s) the whole line goes. Missing paths are a no-op. A key written more
        than once in its object loses every copy (else an earlier one would show through)."""
        path = tuple(path)
        if not path or not isinstance(key := path[-1], str):
            raise TypeError(tr("delete takes a path that ends in an object key"))
        doc = self
        while True:
            after = doc._delete_last(path[:-1], key)
            if after is doc:
                return doc
            doc = after

    def _delete_last(self, parent_path: tuple[str | int, ...], key: str) -> JsoncDocument:
        """Remove the last property named ``key`` in the object at ``parent_path``."""
        found = self.cut(parent_path, key)
        return self if found is None else found[0]

    def cut(self, parent_path: Sequence[str | int], key: str) -> tuple[JsoncDocument, Cut] | None:
        """Remove the last property named ``key`` from the object at ``parent_path`` and say
        exactly what was removed and where (``None`` when there is no such property).

        What goes is the property with its comments: the comment lines above it, comments
        inside it, and a comment after it that starts on its line. A property on a line of
        its own takes the line break before it; one that shares its line with the next
        property leaves that one where it stood; the last property, when it had no comma,
        takes the previous property's comma too, so no trailing comma is left behind.
        :meth:`paste` is the exact inverse."""
        from kvswitch.edits import Cut

        parent = self.node(parent_path)
        if not isinstance(parent, ObjectNode):
            return None
        idx = parent.index(key)
        if idx < 0:
            return None
        props = parent.props
        prop = props[idx]
        prev = props[idx - 1] if idx > 0 else None
        nxt = props[idx + 1] if idx + 1 < len(props) else None
        text = self.text
        start = self._run_end(prev.end if prev is not None else parent.start + 1)
        end = self._run_end(prop.end)
        own_line = text[start] in "\r\n" and (end >= len(text) or text[end] in "\r\n")
        edits: list[tuple[int, int]] = []
        comma_gap = -1
        if own_line:  # the line break before it, its comment lines, and the property's line(s)
            place, anchor = "after", prev.key if prev is not None else None
            edits.append((start, end))
            if nxt is None and prop.comma < 0 and prev is not None and prev.comma >= 0:
                edits.append((prev.comma, prev.comma + 1))  # no trailing comma left behind
                comma_gap = prev.comma - prev.value.end
        elif nxt is not None:  # it shares a line: the next property takes its place
            place, anchor, start = "before", nxt.key, prop.key_start
            edits.append((start, nxt.key_start))
        elif prev is not None:  # last, on the line of what precedes it
            place, anchor = "tail", prev.key
            start = prev.end if prop.comma >= 0 else prev.value.end
            edits.append((start, prop.end))
        elif text[start] in "\r\n":  # the only property, on the line of the '}'
            place, anchor, start = "close", None, prop.key_start
            edits.append((start, end))
        else:  # the only property, on the line of the '{'
            place, anchor = "after", None
            edits.append((start, end))
        removed = edits[0]
        for lo, hi in sorted(edits, reverse=True):
            text = text[:lo] + text[hi:]
        span = self.text[removed[0] : removed[1]]
        return self._derive(text), Cut(span, place, anchor, comma_gap, prop.comma >= 0)

    def paste(self, parent_path: Sequence[str | int], cut: Cut) -> JsoncDocument | None:
        """Put back what :meth:`cut` removed, byte for byte, into the object at
        ``parent_path``; ``None`` when that is not possible because its neighbours changed
        (the anchor is gone, or a property without its comma would no longer be last)."""
        parent = self.node(parent_path)
        if not isinstance(parent, ObjectNode):
            return None
        props = parent.props
        text = self.text
        if cut.place == "before":
            idx = parent.index(cut.anchor) if cut.anchor is not None else -1
            if idx < 0 or not cut.comma:
                return None
            at = props[idx].key_start
            return self._splice(at, at, cut.span)
        if cut.place == "close":
            return None if props else self._splice(parent.end - 1, parent.end - 1, cut.span)
        if cut.anchor is None:
            if props and not cut.comma:
                return None
            at = self._run_end(parent.start + 1)
            return self._splice(at, at, cut.span)
        idx = parent.index(cut.anchor)
        if idx < 0:
            return None
        prev = props[idx]
        is_last = idx == len(props) - 1
        if not cut.comma and not is_last:
            return None  # without its comma it can only be last
        if cut.place == "tail":
            if cut.comma:
                return None if prev.comma < 0 else self._splice(prev.end, prev.end, cut.span)
            return None if prev.comma >= 0 else self._splice(prev.value.end, prev.value.end, cut.span)
        if prev.comma >= 0:
            at = self._run_end(prev.end)
            return self._splice(at, at, cut.span)
        if cut.comma_gap < 0:
            return None
        comma = prev.value.end + cut.comma_gap  # the comma the cut took goes back first
        gap = text[prev.value.end : comma]
        if len(gap) != cut.comma_gap or _GAP.fullmatch(gap) is None:
            return None
        text = text[:comma] + "," + text[comma:]
        at = _RUN.match(text, comma + 1).end()  # type: ignore[union-attr]
        return self._derive(text[:at] + cut.span + text[at:])


def _block_comment(body: str) -> str:
    """``body`` as a ``/* */`` comment (a ``*/`` inside it is broken up)."""
    return "/* " + body.strip().replace("*/", "* /") + " */"


_ENTRY_TRIVIA = re.compile(r"/\*.*?\*/|//([^\r\n]*)|[\r\n]+[ \t]*", re.S)


def _value_end(entry: str) -> int:
    """Where the value of ``entry`` (a property's source) ends, or -1 if it is not one."""
    try:
        parsed = JsoncDocument("{" + entry + "\n}").root
    except JsoncSyntaxError:
        return -1  # not ours to mend; the read-back check reports it
    if not isinstance(parsed, ObjectNode) or len(parsed.props) != 1:
        return -1
    return parsed.props[0].value.end - 1


def _with_comma(entry: str) -> str:
    """``entry`` and its comma: after it, or right after its value when it ends in a
    ``//`` comment (which would swallow the comma)."""
    cut = _value_end(entry) if "//" in entry else -1
    last_line = re.split(r"[\r\n]", entry[cut:])[-1] if cut >= 0 else ""
    if "//" not in last_line:
        return entry + ","
    return entry[:cut] + "," + entry[cut:]


def _close_line_comments(entry: str) -> str:
    """``entry`` (a property's source) safe to follow on the same line: ``//`` comments
    after its value become block comments, so what comes next is not commented out."""
    cut = _value_end(entry) if "//" in entry else -1
    if cut < 0 or "//" not in entry[cut:]:
        return entry
    return entry[:cut] + _one_line(entry[cut:]).rstrip()


def _one_line(trivia: str) -> str:
    """Spaces and comments on one line: ``//`` comments become block comments, line breaks
    spaces (so that what follows on the line is not commented out)."""

    def mend(m: re.Match[str]) -> str:
        if m.group().startswith("/*"):
            return m.group()
        return " " if m.group(1) is None else _block_comment(m.group(1))

    return _ENTRY_TRIVIA.sub(mend, trivia)


def _same_after(doc: JsoncDocument, out: str, got: Any, expected: Any, edits: Sequence[Edit]) -> bool:
    """Whether the edited text ``out`` of ``doc`` read back as intended: equal values (the C
    comparison), and equal types too (``True`` is not ``1``). Types are compared in full only
    in the top-level values the text changed within; every other byte is as it was, so it
    cannot read back as another type."""
    if got != expected:
        return False
    if not isinstance(got, dict) or not isinstance(expected, dict) or any(not e.path for e in edits):
        return _exactly_equal(got, expected)
    from kvswitch.textdiff import common_prefix, common_suffix

    text = doc.text
    lo = common_prefix(text, out)
    hi = len(text) - common_suffix(text, out, min(len(text), len(out)) - lo)
    tops = {e.path[0] for e in edits}
    spans = []
    for top in tops:
        prop = doc.prop((top,)) if isinstance(top, str) else None
        if prop is not None:
            spans.append((prop.key_start, prop.value.end))
    if not any(start <= lo and hi <= end for start, end in spans):
        return _exactly_equal(got, expected)  # the change is not inside one edited value
    return all(_exactly_equal(got.get(top), expected.get(top)) for top in tops)


def _exactly_equal(a: Any, b: Any) -> bool:
    """Equal values of equal types (``True`` is not ``1``, ``1.0`` is not ``1``): compared as
    canonical JSON, which the C encoder makes fast on big documents."""
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _first_difference(got: Any, want: Any, path: Path = ()) -> Path | None:
    """The first path where ``got`` and ``want`` differ, or ``None``; ``true`` is not ``1``."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            if key not in got or key not in want:
                return (*path, key)
            found = _first_difference(got[key], want[key], (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            found = _first_difference(g, w, (*path, i))
            if found is not None:
                return found
        return None if len(got) == len(want) else (*path, min(len(got), len(want)))
    numbers = (int, float)  # 1 and 1.0 are the same number; true is not 1
    if type(got) is not type(want) and not (type(got) in numbers and type(want) in numbers):
        return path
    return None if got == want else path


def _common_parent(edits: Sequence[Edit]) -> tuple[str | int, ...]:
    """The longest path that is a strict prefix of every edit's path."""
    paths = [e.path for e in edits]
    common: list[str | int] = []
    for parts in zip(*paths, strict=False):
        if all(p == parts[0] for p in parts):
            common.append(parts[0])
        else:
            break
    shortest = min(len(p) for p in paths)
    return tuple(common[: shortest - 1])


def _shift(edit: Edit, n: int) -> Edit:
    from kvswitch.records import replace

    return replace(edit, path=edit.path[n:])


def _show(path: tuple[str | int, ...]) -> str:
    return " → ".join(str(p) for p in path) if path else tr("the document root")
