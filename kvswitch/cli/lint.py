"""``kvswitch lint [--fix] [--format text|json] [--kind K] PATH...`` (the pre-commit hook)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "lint",
        help="check client files and kvswitch's config (exit 1 on errors)",
        description="Check client files (Claude Code, Codex, Cline, OpenCode, Qwen Code, the Cline- and "
        "CC Switch-style files) and kvswitch.toml; each file's kind is told from its path and content. "
        "Exit 0: no errors (warnings allowed); 1: errors found, or --fix changed a file; "
        "2: usage error or a path that cannot be read.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    p.add_argument("--fix", action="store_true", help="apply the fixable findings (KVS101, KVS201, KVS210)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    from kvswitch.kinds import choices

    p.add_argument("--kind", choices=choices(), metavar="KIND", help=f"skip detection; one of: {', '.join(choices())}")
    p.add_argument(
        "--hook",
        action="store_true",
        help="pre-commit mode: files of no known kind are skipped with a note; --fix never writes "
        "outside the repository",
    )
    p.set_defaults(func=run)


def _repo_root() -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import exit_code
    from kvswitch.cli.reporters import json_report, summary, text_line
    from kvswitch.diagnostics import Diagnostic, Severity
    from kvswitch.errors import KvswitchError, UnknownKindError
    from kvswitch.linter import fix, lint

    items: list[tuple[Diagnostic, bool]] = []
    worst = 0
    changed_any = False
    repo = _repo_root() if args.hook and args.fix else None
    checked = failed = 0
    for path in args.paths:
        try:
            if args.fix and not (args.hook and not _inside(path, repo)):
                res = fix(path, args.kind)
                items += [(d, True) for d in res.fixed]
                items += [(d, False) for d in res.remaining]
                changed_any |= res.changed
                diags = res.remaining
            else:
                if args.fix:
                    print(f"{path}: not fixed: it resolves outside the repository", file=sys.stderr)
                diags = lint(path, args.kind).diagnostics
                items += [(d, False) for d in diags]
        except UnknownKindError as exc:
            if args.hook:
                print(f"{path}: skipped: not a file kvswitch knows (pass --kind to check it)", file=sys.stderr)
                continue
            print(f"kvswitch: {exc}", file=sys.stderr)
            worst, failed = max(worst, 2), failed + 1
            continue
        except KvswitchError as exc:
            print(f"kvswitch: {exc}", file=sys.stderr)
            worst, failed = max(worst, exit_code(exc)), failed + 1
            continue
        checked += 1
        if any(d.severity is Severity.ERROR for d in diags):
            worst = max(worst, 1)
    if changed_any:
        worst = max(worst, 1)
    if args.format == "json":
        print(json_report(items))
    else:
        for d, fixed in items:
            print(text_line(d, fixed=fixed))
        remaining = [d for d, fixed in items if not fixed]
        if checked == 0 and failed:
            pass  # nothing was checked: the errors above say why, "no problems in 0 files" would not
        elif items or not args.hook:
            fixed_n = sum(1 for _, f in items if f)
            note = f"; fixed {fixed_n}" if fixed_n else ""
            print(summary(remaining, checked) + note, file=sys.stderr if args.hook and not items else sys.stdout)
    return worst


def _inside(path: Path, repo: Path | None) -> bool:
    if repo is None:
        return False
    real = Path(os.path.realpath(path))
    return real == repo or repo in real.parents
