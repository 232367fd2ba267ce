"""Diagnostics as data: every finding of ``lint`` is a :class:`Diagnostic`; reporters
(the CLI, the tray) render them. Codes are stable; ``CODES`` holds their one-line meaning
and ``docs/diagnostics.md`` their examples and fixes.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from kvswitch.i18n import N_
from kvswitch.location import Location
from kvswitch.records import field, record

__all__ = ["CODES", "Diagnostic", "Fix", "Severity"]


class Severity(enum.IntEnum):
    """How bad a finding is; only errors make ``lint`` exit 1."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()


@record(slots=True)
class Fix:
    """A fix ``lint --fix`` can apply: set the value at ``key_path`` in the file."""

    key_path: tuple[str | int, ...]
    value: Any
    description: str


@record(slots=True)
class Diagnostic:
    """One finding, with where it is (1-based line and column) and, maybe, its fix.

    ``message`` (and a fix's ``description``) are in the user's language, made when the
    finding is; ``code``, ``severity`` and ``key_path`` are data and never translated."""

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
    "KVS001": (Severity.ERROR, N_("file does not parse")),
    "KVS002": (Severity.ERROR, N_("wrong type or invalid value")),
    "KVS003": (Severity.WARNING, N_("unknown key")),
    "KVS004": (Severity.WARNING, N_("duplicate key (the last one wins)")),
    "KVS005": (Severity.ERROR, N_("kvswitch config written by a newer kvswitch")),
    "KVS006": (Severity.WARNING, N_("profile or client name kvswitch does not allow")),
    "KVS101": (Severity.WARNING, N_("chunk_size is not a multiple of 64")),
    "KVS102": (Severity.WARNING, N_("chunk_size below 256 slows TTFT")),
    "KVS103": (Severity.INFO, N_("setting of the other mode is ignored")),
    "KVS104": (Severity.WARNING, N_("kv_cache_dtype no engine knows")),
    "KVS105": (Severity.INFO, N_("kv_cache_dtype int8 is not a plain option in vLLM/SGLang")),
    "KVS110": (Severity.ERROR, N_("split endpoint missing or not an http(s) URL")),
    "KVS111": (Severity.WARNING, N_("prefill and decode endpoints are the same address")),
    "KVS112": (Severity.WARNING, N_("max_transfer_concurrency outside 1..8")),
    "KVS201": (Severity.WARNING, N_("base URL ends with '/'")),
    "KVS202": (Severity.ERROR, N_("base URL has a query or fragment, or is not http(s)")),
    "KVS203": (Severity.WARNING, N_("plain http to a non-loopback host while a key is set")),
    "KVS210": (Severity.ERROR, N_("API key has surrounding whitespace or a line break")),
    "KVS211": (Severity.ERROR, N_("API key is a placeholder")),
    "KVS212": (Severity.ERROR, N_("plaintext API key in a file tracked by git")),
    "KVS213": (Severity.ERROR, N_("kvswitch config holds a plaintext key instead of a reference")),
    "KVS220": (Severity.WARNING, N_("model name missing or a placeholder")),
}
"""Every code, its usual severity and its one-line meaning, in English (marked for the catalogue: a
reader shows it translated with ``tr(meaning)``, as SARIF's rule texts do; the messages of the
findings themselves are made in the user's language)."""
