"""Edits by key path, the same for every format, and their effect on plain values.

An edit says *what* changes (``Set``, ``Delete``, ``Insert``); each format's document turns
it into a minimal text change. :func:`apply_to_data` computes the values the edited text
must read back as, which is how every write is verified before it reaches the disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Delete", "Edit", "Insert", "Set", "apply_to_data", "edit_value"]

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Set:
    """Set the value at ``path``, creating missing objects/tables on the way."""

    path: KeyPath
    value: Any


@dataclass(frozen=True, slots=True)
class Delete:
    """Remove the key at ``path`` (no-op when it is missing)."""

    path: KeyPath


@dataclass(frozen=True, slots=True)
class Insert:
    """Insert the key at ``path`` after the sibling ``after`` (JSONC): ``raw`` is a property's
    remembered source (``"key": value`` as it once stood) put back verbatim with its same-line
    ``comment``; else ``value`` is written."""

    path: KeyPath
    value: Any = None
    raw: str | None = None
    comment: str = ""
    after: str | None = None


Edit = Set | Delete | Insert


def edit_value(edit: Edit) -> Any:
    """The value an edit puts in place (``None`` for a delete)."""
    if not isinstance(edit, Insert):
        return getattr(edit, "value", None)
    if edit.raw is None:
        return edit.value
    from kvswitch.formats.jsonc import JsoncDocument

    (value,) = JsoncDocument("{" + edit.raw + "\n}").value.values()
    return value


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
            raise ValueError(f"index {head} is out of range")
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
        raise ValueError(f"cannot set {head!r} inside a {type(data).__name__}")
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
