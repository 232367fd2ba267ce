"""``kvswitch switch merged|split [PATH...] [--dry-run]``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "switch",
        help="put client files in merged or split mode (all files or none)",
        description="Switch client files to MODE: the given PATHs, or every client registered in "
        "kvswitch's config (and the config's own mode). Each file is edited in place (comments, order "
        "and unknown keys kept), verified, backed up and written atomically; if one file cannot be "
        "written none is. A switch never writes what lint rejects: a file that would have an error "
        "after the switch, or whose erroneous value the switch would take out (to bring it back on "
        "the way back), is refused with the findings as lint prints them; warnings never block. "
        "Exit 0 ok; 1 refused or failed (nothing changed); 2 usage or unreadable input.",
    )
    p.add_argument("mode", choices=("merged", "split"))
    p.add_argument("paths", nargs="*", metavar="PATH", type=Path, help="default: every registered client")
    p.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    from kvswitch.kinds import choices

    p.add_argument("--kind", choices=choices(), metavar="KIND",
                   help=f"skip detection (with PATHs); one of: {', '.join(choices())}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import recover_first
    from kvswitch.cli.reporters import change_lines

    if not args.dry_run:
        recover_first()
    if args.paths:
        from kvswitch.switching import switch

        changes: list[Any] = switch(args.mode, args.paths, dry_run=args.dry_run, kinds=[args.kind] * len(args.paths))
    else:
        from kvswitch.clients import switch_clients

        changes = switch_clients(args.mode, dry_run=args.dry_run)
    for line in change_lines(changes, dry_run=args.dry_run):
        print(line, end="" if line.endswith("\n") else "\n")
    if not args.dry_run and args.paths and any(c.changed for c in changes):
        print("  restart the clients that read these files to apply (most read them only at start-up, S-35)")
    if not args.dry_run and not args.paths:
        from kvswitch.cli.reporters import nudge_lines
        from kvswitch.clients import nudge_changed

        for line in nudge_lines(nudge_changed(changes)):  # D-8: tell each client to reload
            print(line)
    if not args.dry_run:
        n = sum(1 for c in changes if c.changed)
        print(f"switched {n} {'file' if n == 1 else 'files'} to {args.mode}")
    return 0
