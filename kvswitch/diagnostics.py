"""Diagnostics as data: every finding of ``lint`` is a :class:`Diagnostic`; reporters
(the CLI, the tray) render them. Codes are stable; ``CODES`` holds their one-line meaning
and ``docs/diagnostics.md`` their examples and fixes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvswitch.errors import Location

__all__ = ["CODES", "Diagnostic", "Fix", "Severity"]


class Severity(enum.IntEnum):
    """How bad a finding is; only errors make ``lint`` exit 1."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Fix:
    """A fix ``lint --fix`` can apply: set the value at ``key_path`` in the file."""

    key_path: tuple[str | int, ...]
    value: Any
    description: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding, with where it is (1-based line and column) and, maybe, its fix."""

    code: str
    severity: Severity
    message: str
    path: Path | None = None
    line: int | None = None
    column: int | None = None
    key_path: tuple[str | int, ...] = ()
    fix: Fix | None = field(default=None, compare=False)

    @property
    def location(self) -> Location:
        return Location(self.path, self.line, self.column)

    def as_dict(self) -> dict[str, Any]:
        """The stable JSON shape: path, line, column, code, severity, message (+ fixable)."""
        return {
            "path": str(self.path) if self.path is not None else None,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
            "key": ".".join(str(p) for p in self.key_path) or None,
            "fixable": self.fix is not None,
        }

    def __str__(self) -> str:
        return f"{self.location}: {self.code} {self.severity}: {self.message}"


CODES: dict[str, tuple[Severity, str]] = {
    "KVS001": (Severity.ERROR, "file does not parse"),
    "KVS002": (Severity.ERROR, "wrong type or invalid value"),
    "KVS003": (Severity.WARNING, "unknown key"),
    "KVS004": (Severity.WARNING, "duplicate key (the last one wins)"),
    "KVS005": (Severity.ERROR, "kvswitch config written by a newer kvswitch"),
    "KVS006": (Severity.WARNING, "profile or client name kvswitch does not allow"),
    "KVS101": (Severity.WARNING, "chunk_size is not a multiple of 64"),
    "KVS102": (Severity.WARNING, "chunk_size below 256 slows TTFT"),
    "KVS103": (Severity.INFO, "setting of the other mode is ignored"),
    "KVS104": (Severity.WARNING, "kv_cache_dtype no engine knows"),
    "KVS105": (Severity.INFO, "kv_cache_dtype int8 is not a plain option in vLLM/SGLang"),
    "KVS110": (Severity.ERROR, "split endpoint missing or not an http(s) URL"),
    "KVS111": (Severity.WARNING, "prefill and decode endpoints are the same address"),
    "KVS112": (Severity.WARNING, "max_transfer_concurrency outside 1..8"),
    "KVS201": (Severity.WARNING, "base URL ends with '/'"),
    "KVS202": (Severity.ERROR, "base URL has a query or fragment, or is not http(s)"),
    "KVS203": (Severity.WARNING, "plain http to a non-loopback host while a key is set"),
    "KVS210": (Severity.ERROR, "API key has surrounding whitespace or a line break"),
    "KVS211": (Severity.ERROR, "API key is a placeholder"),
    "KVS212": (Severity.ERROR, "plaintext API key in a file tracked by git"),
    "KVS213": (Severity.ERROR, "kvswitch config holds a plaintext key instead of a reference"),
    "KVS220": (Severity.WARNING, "model name missing or a placeholder"),
}
"""Every code, its usual severity and its one-line meaning."""
