"""Render diagnostics: text (``path:line:col: CODE severity: message``) and JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from kvswitch.diagnostics import Diagnostic

__all__ = [
    "applied_lines",
    "change_lines",
    "effect_line",
    "json_report",
    "running_warnings",
    "summary",
    "text_line",
]


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
    def kind(self) -> str: ...
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
        pinned = getattr(c, "pinned", False)
        if dry_run:
            out.append(c.diff if c.changed else f"# {c.path}: "
                       + ("pinned to the gateway, no change" if pinned else f"already {c.new_mode}, no change"))
            continue
        if not c.changed:
            out.append(f"{c.path}: " + ("pinned to the gateway, unchanged" if pinned
                                         else f"already {c.new_mode}, unchanged"))
            continue
        key = " · key written (file is 0600)" if getattr(c, "key_written", False) else ""
        backup = f" (backup {c.backup})" if c.backup else ""
        what = f"updated ({c.new_mode})" if c.old_mode == c.new_mode else f"{c.old_mode or 'no mode'} → {c.new_mode}"
        out.append(f"{c.path}: {what}{key}{backup}")
    return out


_WHEN = {
    "now": "now (its next request)",
    "next session": "next session",
    "next start": "next start",
}
"""When a written change reaches the client, by :attr:`ClientKind.takes_effect`."""


def effect_line(kind_id: str, name: str | None = None, nudge: object | None = None) -> str:
    """When a changed client uses the change, and what (if anything) the user does for it;
    ``nudge``: the outcome of its registered reload nudge (kvswitch.reload.NudgeResult)."""
    from kvswitch.kinds import get_kind

    kind = get_kind(kind_id)
    who = name or kind.product
    if nudge is not None and getattr(nudge, "kind", "none") != "none":
        return f"  {who}: {getattr(nudge, 'message', '')}"
    line = f"  {who}: takes effect {_WHEN[kind.takes_effect]}"
    return line if kind.takes_effect == "now" else f"{line}: {kind.apply_hint(name)}"


def applied_lines(changes: Sequence[Change], nudges: Sequence[object] = ()) -> list[str]:
    """A written change: one line per file and, under each changed one, when the client uses
    it (its nudge's outcome where it has one)."""
    by_path = {getattr(n, "client"): n for n in nudges}  # noqa: B009
    out: list[str] = []
    for c in changes:
        out += change_lines([c], dry_run=False)
        if c.changed:
            out.append(effect_line(c.kind, getattr(c, "name", None), by_path.get(c.path)))
    return out


def running_warnings(changes: Sequence[Change]) -> list[str]:
    """A warning per changed client that runs now and may write its old settings back over
    kvswitch's change (Cline keeps its own copy of its providers file)."""
    from kvswitch.kinds import get_kind

    out: list[str] = []
    seen: set[str] = set()
    for c in changes:
        kind = get_kind(c.kind)
        if not c.changed or not kind.rewrites_itself or kind.id in seen:
            continue
        seen.add(kind.id)
        if kind.running():
            who = kind.product
            out.append(f"{who} is running: it may write its old settings back; start a new {who} "
                       f"session (or quit {who}) to use {c.new_mode}")
    return out
