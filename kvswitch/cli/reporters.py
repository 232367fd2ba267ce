"""Render diagnostics: text (``path:line:col: CODE severity: message``) and JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

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


class Change(Protocol):
    """What both a path switch and a registered-client change report."""

    @property
    def path(self) -> Path: ...
    @property
    def changed(self) -> bool: ...
    @property
    def diff(self) -> str: ...
    @property
    def old_mode(self) -> str | None: ...
    @property
    def new_mode(self) -> str: ...
    @property
    def backup(self) -> Path | None: ...


def change_lines(changes: Sequence[Change], *, dry_run: bool) -> list[str]:
    """One line per file of a multi-file change (diffs for a dry run), plus restart notices."""
    out: list[str] = []
    for c in changes:
        if dry_run:
            out.append(c.diff if c.changed else f"# {c.path}: already {c.new_mode}, no change")
            continue
        if not c.changed:
            out.append(f"{c.path}: already {c.new_mode}, unchanged")
            continue
        key = " · key written (file is 0600)" if getattr(c, "key_written", False) else ""
        backup = f" (backup {c.backup})" if c.backup else ""
        what = f"updated ({c.new_mode})" if c.old_mode == c.new_mode else f"{c.old_mode or 'no mode'} → {c.new_mode}"
        out.append(f"{c.path}: {what}{key}{backup}")
    return out


def nudge_lines(results: Sequence[object]) -> list[str]:
    """One line per reload nudge (kvswitch.reload.NudgeResult)."""
    return [f"  {getattr(r, 'client')}: {getattr(r, 'message')}" for r in results]  # noqa: B009
