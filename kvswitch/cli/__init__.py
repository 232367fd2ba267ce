# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this marker)
"""The ``kvswitch`` command line: ``main(argv) -> exit code``.

Exit codes everywhere (D-12): 0 ok (warnings allowed); 1 findings, refused or failed;
2 usage error or input that cannot be read at all; 3 a bug in kvswitch; 130 interrupted.
Each command's module is imported only when that command runs, so ``kvswitch lint`` (the
pre-commit hook) starts fast. Shell completion (``kvswitch completion SHELL``) builds the whole
parser only when the shell asks for completions (argcomplete sets ``_ARGCOMPLETE``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    "completion": "kvswitch.cli.completion",
}
"""Command → the module that registers it (some modules register two)."""


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it (``COLUMNS``, else the
    terminal, else 80), without importing shutil, which brings bz2 and lzma along."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, its width found without shutil (argparse makes a formatter on
    every ``add_argument``, so its import would cost every start)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        from kvswitch.errors import UsageError
        from kvswitch.i18n import tr

        self.print_usage(sys.stderr)
        raise UsageError(tr("{prog}: error: {message}").format(prog=self.prog, message=message))


class _Version(argparse.Action):
    def __call__(self, *args: object, **kwargs: object) -> None:
        from kvswitch import __version__

        print(f"kvswitch {__version__}")
        raise SystemExit(0)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's module is imported (a fast start for
    ``kvswitch lint`` in a hook), else every command registers itself (for ``--help``)."""
    from kvswitch.i18n import tr

    parser = _Parser(
        prog="kvswitch",
        description=tr("Flip LLM coding clients between merged and split KV-cache strategies, safely."),
    )
    parser.add_argument("--version", action=_Version, nargs=0, help=tr("show the version and exit"))
    parser.add_argument(
        "--lang",
        metavar="LANG",
        choices=["en", "zh-CN"],
        help=tr("the language of messages and help: en or zh-CN (default: from KVSWITCH_LANG or the locale)"),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(module).register(sub)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Every sub-command's parser sets ``args._parser`` to itself (the innermost one wins), so a
    usage error its handler raises shows that sub-command's usage."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                child.set_defaults(_parser=child)
                _remember_parsers(child)


def _choose_language(args: list[str]) -> list[str]:
    """Apply ``--lang X`` / ``--lang=X`` wherever it stands (help is built in that language, so
    it is read before the parser exists); returns the arguments without it."""
    from kvswitch.i18n import set_language

    rest: list[str] = []
    wanted: str | None = None
    it = iter(args)
    for arg in it:
        if arg == "--":
            rest += [arg, *it]
            break
        if arg == "--lang":
            wanted = next(it, "")
        elif arg.startswith("--lang="):
            wanted = arg.partition("=")[2]
        else:
            rest.append(arg)
    if wanted is not None:
        try:
            set_language(wanted)
        except ValueError:
            from kvswitch.errors import UsageError
            from kvswitch.i18n import tr

            raise UsageError(
                tr("kvswitch: error: --lang: {value} is not a language kvswitch speaks (en, zh-CN)").format(
                    value=repr(wanted)
                )
            ) from None
    # argparse's own words (usage, options, errors) in the same language; in English too, so
    # argparse does not look for a gettext catalogue of its own on every word (and load locale)
    from kvswitch.i18n import ntr, tr

    argparse._ = tr  # type: ignore[attr-defined]
    argparse.ngettext = ntr  # type: ignore[attr-defined]
    return rest


def main(argv: Sequence[str] | None = None) -> int:
    """Run one kvswitch command; returns the exit code."""
    from kvswitch.cli._handler import handle
    from kvswitch.errors import UsageError

    if os.environ.get("_ARGCOMPLETE"):  # the shell asks for completions: answer and exit
        from kvswitch.cli.completion import complete

        complete(build_parser)
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args_list = _choose_language(args_list)
        first = next((a for a in args_list if not a.startswith("-")), None)
        parser = build_parser(first if first in COMMANDS and "-h" not in args_list[:1] else None)
        args, extra = parser.parse_known_args(args_list)
        # `switch split --dry-run a b`: argparse stops filling an optional positional list at
        # the first option, so leftover paths are taken here (options still must be known)
        if extra and getattr(args, "paths", None) is not None and not any(e.startswith("-") for e in extra):
            args.paths = [*args.paths, *(Path(e) for e in extra)]
        elif extra:
            getattr(args, "_parser", parser).error(argparse._("unrecognized arguments: %s") % " ".join(extra))  # type: ignore[attr-defined]
    except UsageError as exc:  # the whole line is in the message
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    if args.command is None:  # bare `kvswitch`: the usage, on stderr, as a usage error
        parser.print_usage(sys.stderr)
        return 2
    return handle(lambda: int(args.func(args)), getattr(args, "_parser", None))
