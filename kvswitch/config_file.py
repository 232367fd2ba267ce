"""A config file in memory: its path, kind, exact bytes and parsed document (with positions).

It sits below the client kinds (a kind makes a new, empty one and edits it) and below
:mod:`kvswitch.document`, which parses one from bytes and tells its kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvswitch.errors import Location
from kvswitch.formats.jsonc import JsoncDocument
from kvswitch.formats.toml import TomlDocument
from kvswitch.literals import FileKind
from kvswitch.records import record

__all__ = ["ConfigFile", "Document"]

Document = JsoncDocument | TomlDocument


@record(slots=True)
class ConfigFile:
    """A parsed config file; ``raw`` are the exact bytes it was read from."""

    path: Path | None
    kind: FileKind
    raw: bytes
    doc: Document

    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def data(self) -> Any:
        """Plain values; an empty settings.json reads as ``{}``."""
        value = self.doc.value
        return {} if value is None else value

    def locate(self, key_path: tuple[str | int, ...], *, key: bool = False) -> Location:
        spot = self.doc.locate(key_path, key=key)
        if spot is None:
            return Location(self.path, 1, 1)
        return Location(self.path, spot[0], spot[1])
