"""Edits by key path, the same for every format, and their effect on plain values.

An edit says *what* changes (``Set``, ``Delete``, ``Insert``); each format's document turns
it into a minimal text change. :func:`apply_to_data` computes the values the edited text
must read back as, which is how every write is verified before it reaches the disk.
"""

from __future__ import annotations

from typing import Any

from kvswitch.i18n import tr
from kvswitch.records import record

__all__ = ["MISSING", "Cut", "Delete", "Edit", "Insert", "KeyPath", "Set", "apply_to_data", "edit_value", "get_path"]

KeyPath = tuple[str | int, ...]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""What :func:`get_path` returns for a path the data does not have."""


def get_path(data: Any, path: KeyPath) -> Any:
    """The value at ``path`` or :data:`MISSING`."""
    for part in path:
        if isinstance(data, dict):
            if part not in data:
                return MISSING
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and -len(data) <= part < len(data):
            data = data[part]
        else:
            return MISSING
    return data


@record(slots=True)
class Set:
    """Set the value at ``path``, creating missing objects/tables on the way."""

    path: KeyPath
    value: Any


@record(slots=True)
class Delete:
    """Remove the key at ``path`` (no-op when it is missing)."""

    path: KeyPath


@record(slots=True)
class Cut:
    """Exactly the text a JSONC delete took out of an object, and where it stood, so that
    putting it back gives the same bytes.

    ``span`` is the removed text: the property with its comments (the comment lines above it,
    comments around its key, colon, value and comma, a comment after it that starts on its
    line) and the line break before it. ``place`` is ``"after"`` (``anchor`` is the key it
    followed, ``None`` for the object's start), ``"before"`` (``anchor`` is the key that
    followed it on its line) or ``"tail"`` (it was last, on the line of ``anchor``, and the span
    starts at that property's value end, or after its comma when it had one) or ``"close"`` (it
    was the only property, and the span ends at the object's ``}``). ``comma_gap`` is how far after its value the
    previous property's comma stood when the delete took that comma too (the property was
    last), else -1; ``comma`` tells whether the span holds the property's own comma."""

    span: str
    place: str = "after"
    anchor: str | None = None
    comma_gap: int = -1
    comma: bool = True


@record(slots=True)
class Insert:
    """Insert the key at ``path`` after the sibling ``after`` (JSONC): ``cut`` puts back what a
    delete took out, byte for byte, when its neighbours are still there; else ``raw`` is a
    property's remembered source (``"key": value`` as it once stood) put back verbatim with its
    same-line ``comment``; else ``value`` is written."""

    path: KeyPath
    value: Any = None
    raw: str | None = None
    comment: str = ""
    after: str | None = None
    cut: Cut | None = None


Edit = Set | Delete | Insert


def edit_value(edit: Edit) -> Any:
    """The value an edit puts in place (``None`` for a delete)."""
    if not isinstance(edit, Insert):
        return getattr(edit, "value", None)
    if edit.cut is not None and edit.path:
        span = edit.cut.span
        # a span cut from the end of its object starts with the comma of the key before it
        head = '{"": 0' if edit.cut.place == "tail" and not edit.cut.comma else "{"
        return _object(head + span + "\n}")[edit.path[-1]]
    if edit.raw is None:
        return edit.value
    (value,) = _object("{" + edit.raw + "\n}").values()
    return value


def _object(text: str) -> Any:
    """The value of ``text``, a JSONC object (the parser alone: edits sit below the documents)."""
    from kvswitch.formats.jsonc_tree import parse_tree

    root, _duplicates = parse_tree(text)
    return None if root is None else root.value


def apply_to_data(data: Any, edits: list[Edit] | tuple[Edit, ...]) -> Any:
    """Return ``data`` with ``edits`` applied, copying only the containers on edited paths."""
    for edit in edits:
        data = _update(data, edit.path, edit_value(edit), isinstance(edit, Delete))
    return data


def _update(data: Any, path: KeyPath, value: Any, delete: bool) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, list) and isinstance(head, int):
        if not rest and head == len(data) and not delete:
            return [*data, value]  # a new element at the end
        if not -len(data) <= head < len(data):
            if delete:
                return data
            raise ValueError(tr("index {index} is out of range").format(index=head))
        new_list = list(data)
        if not rest and delete:
            del new_list[head]
            return new_list
        new_list[head] = _update(new_list[head], rest, value, delete)
        return new_list
    if data is None:
        data = {}  # an empty document becomes an object
    if not isinstance(data, dict):
        if delete:
            return data  # nothing to delete below a scalar
        raise ValueError(tr("cannot set {key} inside a {type}").format(key=repr(head), type=type(data).__name__))
    new = dict(data)
    if not rest:
        if delete:
            new.pop(head, None)
        else:
            new[head] = value
        return new
    if delete and head not in new:
        return new
    new[head] = _update(new.get(head, {}), rest, value, delete)
    return new
