"""The ``kvswitch`` command line: ``main(argv) -> exit code``.

Exit codes everywhere (D-12): 0 ok (warnings allowed); 1 findings, refused or failed;
2 usage error or input that cannot be read at all; 3 a bug in kvswitch; 130 interrupted.
Each command's module is imported only when that command runs, so ``kvswitch lint`` (the
pre-commit hook) starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

COMMANDS = {
    "init": "kvswitch.cli.init",
    "lint": "kvswitch.cli.lint",
    "switch": "kvswitch.cli.switch",
    "status": "kvswitch.cli.status",
    "restore": "kvswitch.cli.status",
    "profile": "kvswitch.cli.profile",
    "client": "kvswitch.cli.profile",
    "import": "kvswitch.cli.imports",
    "key": "kvswitch.cli.key",
    "watch": "kvswitch.cli.watch",
    "probe": "kvswitch.cli.probe",
    "schema": "kvswitch.cli.schema",
    "doctor": "kvswitch.cli.doctor",
    "advise": "kvswitch.cli.advise",
    "lab": "kvswitch.cli.lab",
    "gateway": "kvswitch.cli.gateway",
    "engine-flags": "kvswitch.cli.engine_flags",
}
"""Command → the module that registers it (some modules register two)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _UsageError(f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


class _Version(argparse.Action):
    def __call__(self, *args: object, **kwargs: object) -> None:
        from kvswitch import __version__

        print(f"kvswitch {__version__}")
        raise SystemExit(0)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's module is imported (a fast start for
    ``kvswitch lint`` in a hook), else every command registers itself (for ``--help``)."""
    parser = _Parser(
        prog="kvswitch",
        description="Flip LLM coding clients between merged and split KV-cache strategies, safely.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one kvswitch command; returns the exit code."""
    from kvswitch.cli._handler import handle

    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        first = next((a for a in args_list if not a.startswith("-")), None)
        parser = build_parser(first if first in COMMANDS and "-h" not in args_list[:1] else None)
        args, extra = parser.parse_known_args(args_list)
        # `switch split --dry-run a b`: argparse stops filling an optional positional list at
        # the first option, so leftover paths are taken here (options still must be known)
        if extra and getattr(args, "paths", None) is not None and not any(e.startswith("-") for e in extra):
            args.paths = [*args.paths, *(Path(e) for e in extra)]
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    return handle(lambda: int(args.func(args)))
