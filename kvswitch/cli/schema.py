"""``kvswitch schema [--kind K] [--write DIR | --check DIR]``: the JSON Schemas."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kvswitch.i18n import tr

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help=tr("print or write the JSON Schemas (for VS Code json.schemas, Taplo)"),
        description=tr(
            "Print one kind's JSON Schema, write all of them into a directory, or check that a "
            "directory holds the current ones (exit 1 when stale)."
        ),
    )
    from kvswitch.kinds import choices

    first = choices(clients_only=True)[0]
    p.add_argument(
        "--kind",
        choices=choices(),
        metavar="KIND",
        default=first,
        help=tr("one of: {kinds} (default: {first})").format(kinds=", ".join(choices()), first=first),
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, metavar="DIR", help=tr("write every schema into DIR"))
    group.add_argument(
        "--check", type=Path, metavar="DIR", help=tr("check that DIR holds the current schemas (exit 1 when stale)")
    )
    group.add_argument("--reference", action="store_true", help=tr("print the kvswitch.toml reference (markdown)"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.schema_export import config_reference, schema_files, schema_text, write_schemas

    if args.reference:
        sys.stdout.write(config_reference())
        return 0

    if args.write is not None:
        for path in write_schemas(args.write):
            print(tr("wrote {path}").format(path=path))
        return 0
    if args.check is not None:
        stale = []
        for kind, name in schema_files().items():
            path = args.check / name
            try:
                current = path.read_text(encoding="utf-8")
            except OSError:
                current = None
            if current != schema_text(kind):
                stale.append(path)
        for path in stale:
            print(
                tr("{path}: stale or missing; run: kvswitch schema --write {folder}").format(
                    path=path, folder=args.check
                ),
                file=sys.stderr,
            )
        return 1 if stale else 0
    sys.stdout.write(schema_text(args.kind))
    return 0
