"""``kvswitch lint [--fix [--diff]] [--format text|json|github|sarif] [--kind K] PATH...`` (the
pre-commit hook)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.i18n import ntr, tr

if TYPE_CHECKING:
    from kvswitch.diagnostics import Diagnostic

__all__ = ["register"]

FORMATS = ("text", "json", "github", "sarif")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "lint",
        help=tr("check client files and kvswitch's config (exit 1 on errors)"),
        description=tr(
            "Check client files (Claude Code, Codex, Cline, OpenCode, Qwen Code, the Cline- and "
            "CC Switch-style files) and kvswitch.toml; each file's kind is told from its path and content. "
            "--format github prints GitHub Actions annotations, --format sarif a SARIF 2.1.0 log (for code "
            "scanning). Exit 0: no errors (warnings allowed); 1: errors found, or --fix changed a file "
            "(with --diff: would change one); 2: usage error or a path that cannot be read."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    p.add_argument("--fix", action="store_true", help=tr("apply the fixable findings (KVS101, KVS201, KVS210)"))
    p.add_argument(
        "--diff",
        action="store_true",
        help=tr("with --fix: print the unified diff of what --fix would change and write nothing"),
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help=tr("text (default), json (a list of findings), github (workflow commands) or sarif"),
    )
    from kvswitch.kinds import choices

    p.add_argument(
        "--kind",
        choices=choices(),
        metavar="KIND",
        help=tr("skip detection; one of: {kinds}").format(kinds=", ".join(choices())),
    )
    p.add_argument(
        "--hook",
        action="store_true",
        help=tr(
            "pre-commit mode: files of no known kind are skipped with a note; --fix never writes outside the repository"
        ),
    )
    p.set_defaults(func=run)


def _repo_root() -> Path | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


class _Outcome:
    """What the run found: findings (and whether each was fixed), diffs, and the exit code.
    (A plain class: a dataclass costs its creation on every start of the pre-commit hook.)"""

    __slots__ = ("checked", "diffs", "failed", "items", "worst", "would_fix")

    def __init__(self) -> None:
        self.items: list[tuple[Diagnostic, bool]] = []
        self.diffs: list[str] = []
        self.would_fix = 0
        self.worst = 0
        self.checked = 0
        self.failed = 0


def _preview(path: Path, kind: Any) -> tuple[list[Diagnostic], str, int]:
    """The findings of ``path``, the diff --fix would make (keys masked) and how many it fixes;
    nothing is written."""
    from kvswitch.io import read_bytes
    from kvswitch.linter import fixed_text, lint_text

    cf, result = lint_text(read_bytes(path), kind, path)
    fixable = [d for d in result.diagnostics if d.fix is not None]
    if cf is None or not fixable:
        return result.diagnostics, "", 0
    from kvswitch.switching import render_diff, secrets_in

    new = fixed_text(cf, fixable)
    return result.diagnostics, render_diff(path, cf.text, new, secrets_in(cf)), len(fixable)


def _check(args: argparse.Namespace, path: Path, repo: Path | None, out: _Outcome) -> list[Diagnostic]:
    from kvswitch.linter import fix, lint

    if args.diff:
        diags, diff, fixable = _preview(path, args.kind)
        out.items += [(d, False) for d in diags]
        if diff:
            out.diffs.append(diff)
            out.would_fix += fixable
        return diags
    if args.fix and not (args.hook and not _inside(path, repo)):
        res = fix(path, args.kind)
        out.items += [(d, True) for d in res.fixed]
        out.items += [(d, False) for d in res.remaining]
        out.worst = max(out.worst, 1 if res.changed else 0)
        return res.remaining
    if args.fix:
        print(tr("{path}: not fixed: it resolves outside the repository").format(path=path), file=sys.stderr)
    diags = lint(path, args.kind).diagnostics
    out.items += [(d, False) for d in diags]
    return diags


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError, exit_code
    from kvswitch.diagnostics import Severity
    from kvswitch.errors import KvswitchError, UnknownKindError

    if args.diff and not args.fix:
        raise UsageError(tr("--diff goes with --fix (kvswitch lint --fix --diff PATH…)"))
    if args.diff and args.format != "text":
        raise UsageError(tr("--diff prints a unified diff: leave out --format"))
    out = _Outcome()
    repo = _repo_root() if args.hook and args.fix and not args.diff else None
    for path in args.paths:
        try:
            diags = _check(args, path, repo, out)
        except UnknownKindError as exc:
            if args.hook:
                print(
                    tr("{path}: skipped: not a file kvswitch knows (pass --kind to check it)").format(path=path),
                    file=sys.stderr,
                )
                continue
            print(tr("kvswitch: {message}").format(message=exc), file=sys.stderr)
            out.worst, out.failed = max(out.worst, 2), out.failed + 1
            continue
        except KvswitchError as exc:
            print(tr("kvswitch: {message}").format(message=exc), file=sys.stderr)
            out.worst, out.failed = max(out.worst, exit_code(exc)), out.failed + 1
            continue
        out.checked += 1
        if any(d.severity is Severity.ERROR for d in diags):
            out.worst = max(out.worst, 1)
    if args.diff:
        return _show_diffs(out)
    _show(args, out)
    return out.worst


def _show_diffs(out: _Outcome) -> int:
    for diff in out.diffs:
        sys.stdout.write(diff if diff.endswith("\n") else diff + "\n")
    n, files = out.would_fix, len(out.diffs)
    if files:
        print(
            tr("would fix {findings} in {files} (run without --diff to write)").format(
                findings=ntr("{count} finding", "{count} findings", n).format(count=n),
                files=ntr("{count} file", "{count} files", files).format(count=files),
            ),
            file=sys.stderr,
        )
        return max(out.worst, 1)
    if out.checked:
        print(tr("nothing to fix"), file=sys.stderr)
    return out.worst


def _show(args: argparse.Namespace, out: _Outcome) -> None:
    from kvswitch.cli.reporters import github_report, json_report, sarif_report, summary, text_line

    remaining = [d for d, fixed in out.items if not fixed]
    if args.format == "json":
        print(json_report(out.items))
        return
    if args.format == "github":
        text = github_report(remaining)
        if text:
            print(text)
        return
    if args.format == "sarif":
        print(json.dumps(sarif_report(remaining), indent=2, ensure_ascii=False))
        return
    for d, fixed in out.items:
        print(text_line(d, fixed=fixed))
    if out.checked == 0 and out.failed:
        return  # nothing was checked: the errors above say why, "no problems in 0 files" would not
    if out.items or not args.hook:
        fixed_n = len(out.items) - len(remaining)
        text = summary(remaining, out.checked)
        if fixed_n:
            text = tr("{summary}; fixed {count}").format(summary=text, count=fixed_n)
        print(text, file=sys.stderr if args.hook and not out.items else sys.stdout)


def _inside(path: Path, repo: Path | None) -> bool:
    if repo is None:
        return False
    real = Path(os.path.realpath(path))
    return real == repo or repo in real.parents
