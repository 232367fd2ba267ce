"""Render diagnostics and changes: text (``path:line:col: CODE severity: message``), JSON, GitHub
Actions workflow commands and SARIF 2.1.0.

Codes, field names and SARIF's or GitHub's own words stay English; messages, severity words and
summaries follow the user's language.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import reduce
from pathlib import Path
from typing import Any, Protocol

from kvswitch.diagnostics import Diagnostic, Severity
from kvswitch.i18n import ntr, tr

__all__ = [
    "applied_lines",
    "change_lines",
    "effect_line",
    "github_report",
    "json_report",
    "running_warnings",
    "sarif_report",
    "summary",
    "text_line",
]

DOCS = "https://github.com/kvswitch/kvswitch/blob/main/docs/diagnostics.md"
"""Where every code is explained (an anchor per code: ``#kvs201``)."""


def text_line(d: Diagnostic, *, fixed: bool = False) -> str:
    """``path:line:col: CODE severity: message`` (plus ``[fixed]`` / ``[fixable]``)."""
    if d.severity is Severity.ERROR:
        line = tr("{location}: {code} error: {message}")
    elif d.severity is Severity.WARNING:
        line = tr("{location}: {code} warning: {message}")
    else:
        line = tr("{location}: {code} info: {message}")
    line = line.format(location=d.location, code=d.code, message=d.message)
    if fixed:
        return line + " " + tr("[fixed]")
    return line + " " + tr("[fixable]") if d.fix is not None else line


def _counted(severity: Severity, n: int) -> str:
    if severity is Severity.ERROR:
        return ntr("{count} error", "{count} errors", n).format(count=n)
    if severity is Severity.WARNING:
        return ntr("{count} warning", "{count} warnings", n).format(count=n)
    return ntr("{count} info", "{count} infos", n).format(count=n)


def summary(diags: Sequence[Diagnostic], files: int) -> str:
    """``1 error, 2 warnings in 1 file (2 fixable with --fix)``, or ``no problems in 3 files``."""
    parts = [
        _counted(s, n)
        for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)
        if (n := sum(1 for d in diags if d.severity is s))
    ]
    found = reduce(lambda a, b: tr("{first}, {then}").format(first=a, then=b), parts) if parts else tr("no problems")
    text = tr("{found} in {files}").format(
        found=found, files=ntr("{count} file", "{count} files", files).format(count=files)
    )
    fixable = sum(1 for d in diags if d.fix is not None)
    if fixable:
        text = tr("{summary} ({count} fixable with --fix)").format(summary=text, count=fixable)
    return text


def json_report(items: Iterable[tuple[Diagnostic, bool]]) -> str:
    """A JSON list of ``{path, line, column, code, severity, message, key, fixable, fixed}``."""
    return json.dumps([{**d.as_dict(), "fixed": fixed} for d, fixed in items], indent=2, ensure_ascii=False)


# -- GitHub Actions -------------------------------------------------------------------------

_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_report(diags: Iterable[Diagnostic]) -> str:
    """One workflow command per finding (``::error file=…,line=…,col=…,title=CODE::message``),
    escaped as GitHub Actions reads them; GitHub shows each as an annotation on the file."""
    lines = []
    for d in diags:
        props = []
        if d.path is not None:
            props.append(f"file={_github_property(str(d.path))}")
        if d.line is not None:
            props.append(f"line={d.line}")
        if d.column is not None:
            props.append(f"col={d.column}")
        props.append(f"title={_github_property(d.code)}")
        lines.append(f"::{_GITHUB_LEVEL[d.severity]} {','.join(props)}::{_github_data(d.message)}")
    return "\n".join(lines)


# -- SARIF ------------------------------------------------------------------------------------

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: Path) -> str:
    """A SARIF artifact URI: ``file://`` for an absolute path, a relative reference otherwise."""
    from urllib.parse import quote

    return path.as_uri() if path.is_absolute() else quote(path.as_posix())


def sarif_report(diags: Sequence[Diagnostic]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run of kvswitch, a rule per code that appears, a result per finding."""
    from kvswitch import __version__
    from kvswitch.diagnostics import CODES

    codes = sorted({d.code for d in diags})
    rules = []
    for code in codes:
        severity, meaning = CODES.get(code, (Severity.WARNING, ""))
        description = tr(meaning) if meaning else code  # the meaning in the user's language; the id stays
        rules.append(
            {
                "id": code,
                "shortDescription": {"text": description},
                "fullDescription": {"text": description},
                "helpUri": f"{DOCS}#{code.lower()}",
                "defaultConfiguration": {"level": _SARIF_LEVEL[severity]},
            }
        )
    results = []
    for d in diags:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": codes.index(d.code),
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
        }
        if d.path is not None:
            region = {"startLine": d.line or 1, **({"startColumn": d.column} if d.column else {})}
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(d.path)},
                        "region": region,
                    }
                }
            ]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kvswitch",
                        "version": __version__,
                        "informationUri": "https://github.com/kvswitch/kvswitch",
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


# -- changes ----------------------------------------------------------------------------------


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


def _unchanged(c: Change, *, dry_run: bool) -> str:
    pinned = getattr(c, "pinned", False)
    if dry_run:
        text = tr("# {path}: pinned to the gateway, no change") if pinned else tr("# {path}: already {mode}, no change")
    else:
        text = tr("{path}: pinned to the gateway, unchanged") if pinned else tr("{path}: already {mode}, unchanged")
    return text.format(path=c.path, mode=c.new_mode)


def change_lines(changes: Sequence[Change], *, dry_run: bool) -> list[str]:
    """One line per file of a multi-file change (diffs for a dry run), plus restart notices."""
    out: list[str] = []
    for c in changes:
        if not c.changed:
            out.append(_unchanged(c, dry_run=dry_run))
            continue
        if dry_run:
            out.append(c.diff)
            continue
        if c.old_mode == c.new_mode:
            what = tr("updated ({mode})").format(mode=c.new_mode)
        else:
            what = tr("{old} → {new}").format(old=c.old_mode or tr("no mode"), new=c.new_mode)
        line = tr("{path}: {what}").format(path=c.path, what=what)
        if getattr(c, "key_written", False):
            line += " · " + tr("key written (file is 0600)")
        if c.backup:
            line = tr("{change} (backup {path})").format(change=line, path=c.backup)
        out.append(line)
    return out


def _when(takes_effect: str) -> str:
    """When a written change reaches the client, by :attr:`ClientKind.takes_effect`."""
    if takes_effect == "now":
        return tr("now (its next request)")
    if takes_effect == "next session":
        return tr("next session")
    return tr("next start")


def effect_line(kind_id: str, name: str | None = None, nudge: object | None = None) -> str:
    """When a changed client uses the change, and what (if anything) the user does for it;
    ``nudge``: the outcome of its registered reload nudge (kvswitch.reload.NudgeResult)."""
    from kvswitch.kinds import get_kind

    kind = get_kind(kind_id)
    who = name or kind.product
    if nudge is not None and getattr(nudge, "kind", "none") != "none":
        return f"  {who}: {getattr(nudge, 'message', '')}"
    line = "  " + tr("{client}: takes effect {when}").format(client=who, when=_when(kind.takes_effect))
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
            out.append(
                tr(
                    "{client} is running: it may write its old settings back; start a new {client} "
                    "session (or quit {client}) to use {mode}"
                ).format(client=kind.product, mode=c.new_mode)
            )
    return out
