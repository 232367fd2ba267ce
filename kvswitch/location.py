"""Where something is in a file: :class:`Location`, shared by errors and diagnostics."""

from __future__ import annotations

from pathlib import Path

from kvswitch.records import record

__all__ = ["Location"]


@record(slots=True)
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
