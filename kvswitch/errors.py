"""The one exception tree of kvswitch.

Every error the library raises on purpose is a :class:`KvswitchError`::

    KvswitchError                 root; carries an optional Location
    ├── ConfigError               a file's content is wrong
    │   ├── ConfigParseError      it does not parse (KVS001)
    │   ├── ConfigValidationError it parses but fails validation (has .diagnostics)
    │   ├── UnknownKindError      kvswitch cannot tell which kind of file it is
    │   └── ConfigVersionError    kvswitch's own config is from a newer kvswitch
    ├── EditError                 an edit cannot be applied (wrong shape, verify-after-write mismatch)
    ├── LockTimeoutError          another kvswitch holds the switch lock past the wait
    ├── CcSwitchError             CC Switch's database cannot be imported (refused; nothing read)
    │   ├── CcSwitchBusyError     CC Switch is writing it right now: try again
    │   └── CcSwitchReadError     it cannot be read at all (also a ReadError)
    ├── ImportRefusedError        an import found nothing to turn into a profile, or would replace one
    └── FileAccessError           the file system said no
        ├── ReadError             cannot read (missing, permission, not a file, not UTF-8)
        └── WriteError            cannot write (permission, disk full, read-only)
            └── ChangedOnDiskError  the file changed under us and the edit could not be re-applied

``str(exc)`` starts with ``path:line:col:`` when those are known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvswitch.diagnostics import Diagnostic

__all__ = [
    "CcSwitchBusyError",
    "CcSwitchError",
    "CcSwitchReadError",
    "ChangedOnDiskError",
    "ConfigError",
    "ConfigParseError",
    "ConfigValidationError",
    "ConfigVersionError",
    "EditError",
    "FileAccessError",
    "ImportRefusedError",
    "KvswitchError",
    "Location",
    "LockTimeoutError",
    "ReadError",
    "UnknownKindError",
    "WriteError",
]


@dataclass(frozen=True, slots=True)
class Location:
    """Where something is: a path and, when known, a 1-based line and column."""

    path: Path | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        # a path is shown as it is, but a character a terminal would act on (an escape, a line
        # break, U+202E) is written as its escape, so a hostile file name cannot recolour it
        path = str(self.path) if self.path is not None else "<string>"
        if not path.isprintable():
            path = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in path)
        parts = [path]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


class KvswitchError(Exception):
    """Root of every error kvswitch raises on purpose."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class ConfigError(KvswitchError):
    """The content of a config file is wrong."""


class ConfigParseError(ConfigError):
    """The file does not parse; ``location`` points at the fault."""


class ConfigValidationError(ConfigError):
    """The file parses but has error-severity findings."""

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        diagnostics: tuple[Diagnostic, ...] = (),
    ) -> None:
        super().__init__(message, location)
        self.diagnostics = diagnostics


class UnknownKindError(ConfigError):
    """kvswitch cannot tell which kind of file this is (use an explicit kind)."""


class ConfigVersionError(ConfigError):
    """kvswitch's own config was written by a newer kvswitch."""


class EditError(KvswitchError):
    """An edit cannot be applied, or its result did not re-parse to the intended values."""


class LockTimeoutError(KvswitchError):
    """Another kvswitch held the switch lock for longer than the wait; nothing was done."""


class FileAccessError(KvswitchError):
    """The file system refused an operation."""


class ReadError(FileAccessError):
    """A file cannot be read at all (missing, no permission, not a file, not UTF-8)."""


class WriteError(FileAccessError):
    """A file cannot be written; the file on disk is unchanged."""


class ChangedOnDiskError(WriteError):
    """The file changed on disk while kvswitch was editing it, and the edit could not be re-applied."""


class ImportRefusedError(KvswitchError):
    """An import found nothing to turn into a profile, or would replace one; nothing was written."""


class CcSwitchError(KvswitchError):
    """CC Switch's database cannot be imported: an unknown schema, a table without the columns
    kvswitch reads; nothing was imported."""


class CcSwitchBusyError(CcSwitchError):
    """CC Switch is writing its database right now; trying again in a moment should work."""


class CcSwitchReadError(CcSwitchError, ReadError):
    """CC Switch's database cannot be read at all (missing, not a file, not SQLite)."""
