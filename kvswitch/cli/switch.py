"""``kvswitch switch merged|split PATH... [--dry-run]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "switch",
        help="put client files in merged or split mode (all files or none)",
        description="Switch the given client files to MODE. Every file is edited in place (comments, "
        "order and unknown keys kept), verified, backed up and written atomically; if one file "
        "cannot be written none is. Exit 0 ok; 1 refused or failed (nothing changed); 2 usage.",
    )
    p.add_argument("mode", choices=("merged", "split"))
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    p.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    p.add_argument("--kind", choices=("cline", "ccswitch", "kvswitch"), help="skip detection")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.switching import switch
    from kvswitch.transaction import recover

    if not args.dry_run:
        note = recover()
        if note:
            print(f"kvswitch: {note}", file=sys.stderr)
    results = switch(args.mode, args.paths, dry_run=args.dry_run, kinds=[args.kind] * len(args.paths))
    if args.dry_run:
        for r in results:
            if r.changed:
                sys.stdout.write(r.diff)
            else:
                print(f"# {r.path}: already {r.new_mode}, no change")
        return 0
    changed = [r for r in results if r.changed]
    for r in results:
        if r.changed:
            was = r.old_mode or "no mode"
            backup = f" (backup {r.backup})" if r.backup else ""
            print(f"{r.path}: {was} → {r.new_mode}{backup}")
        else:
            print(f"{r.path}: already {r.new_mode}, unchanged")
    noun = "file" if len(changed) == 1 else "files"
    print(f"switched {len(changed)} {noun} to {args.mode}")
    return 0
