"""Render diagnostics: text (``path:line:col: CODE severity: message``) and JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence

from kvswitch.diagnostics import Diagnostic

__all__ = ["json_report", "summary", "text_line"]


def text_line(d: Diagnostic, *, fixed: bool = False) -> str:
    tag = " [fixed]" if fixed else (" [fixable]" if d.fix is not None else "")
    return f"{d.location}: {d.code} {d.severity}: {d.message}{tag}"


def summary(diags: Sequence[Diagnostic], files: int) -> str:
    counts = Counter(str(d.severity) for d in diags)
    parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info") if counts[s]]
    fixable = sum(1 for d in diags if d.fix is not None)
    tail = f" ({fixable} fixable with --fix)" if fixable else ""
    noun = "file" if files == 1 else "files"
    return f"{', '.join(parts) or 'no problems'} in {files} {noun}{tail}"


def json_report(items: Iterable[tuple[Diagnostic, bool]]) -> str:
    """A JSON list of ``{path, line, column, code, severity, message, key, fixable, fixed}``."""
    return json.dumps([{**d.as_dict(), "fixed": fixed} for d, fixed in items], indent=2, ensure_ascii=False)
