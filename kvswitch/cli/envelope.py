"""The one JSON shape every reporting command prints with ``--format json``.

::

    {
      "kvswitch": "0.1.0",          the version that wrote it
      "format": 1,                  this envelope's version (bumped only on a breaking change)
      "command": "switch",          the command, with its subcommand: "profile list"
      "ok": true,                   false where the command exits nonzero
      "generated_at": "2026-12-03T14:05:09Z",   ISO 8601, UTC
      "data": {...}                 the command's own report (see schemas/kvswitch-output.schema.json)
    }

``lint --format json`` keeps its plain list of diagnostics (pre-commit users parse it), and is
the one exception. Times inside ``data`` are ISO 8601 strings too (:func:`iso_time`). Field
names are never translated; messages inside ``data`` are in the user's language.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvswitch.cli._handler import UsageError
from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr
from kvswitch.times import iso_utc as iso_time

__all__ = ["FORMAT_VERSION", "dumps", "envelope", "error_data", "format_option", "iso_time", "reports"]

FORMAT_VERSION = 1


def _default(value: object) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def envelope(command: str, data: Any, *, ok: bool = True) -> dict[str, Any]:
    """The envelope around ``data`` (a dict or list of plain JSON values)."""
    from kvswitch import __version__

    return {
        "kvswitch": __version__,
        "format": FORMAT_VERSION,
        "command": command,
        "ok": ok,
        "generated_at": iso_time(float(int(time.time()))),
        "data": data,
    }


def dumps(command: str, data: Any, *, ok: bool = True) -> str:
    """The envelope as indented JSON text (UTF-8 as is: Chinese messages stay readable)."""
    return json.dumps(envelope(command, data, ok=ok), indent=2, ensure_ascii=False, default=_default)


Run = Callable[[argparse.Namespace], int]


def format_option(p: argparse.ArgumentParser) -> None:
    """``--format text|json`` (json: one envelope on stdout, ``kvswitch.cli.envelope``)."""
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text for people (the default), or json: one JSON report on stdout"),
    )


def error_data(exc: BaseException) -> dict[str, Any]:
    """``data.error`` of a failed command: the message (without its place), what kind of error,
    lint's code where the error carries one, the place where known, and the exit code."""
    from kvswitch.cli._handler import exit_code

    if not isinstance(exc, KvswitchError):
        return {
            "message": str(exc),
            "type": type(exc).__name__,
            "code": None,
            "path": None,
            "line": None,
            "column": None,
            "exit_code": 2,
        }
    where = exc.location
    codes = [d.code for d in getattr(exc, "diagnostics", ())]
    code = getattr(exc, "code", None) or (codes[0] if codes else None)
    return {
        "message": exc.message,
        "type": type(exc).__name__,
        "code": code,
        **({"codes": codes} if codes else {}),
        "path": str(where.path) if where is not None and where.path is not None else None,
        "line": where.line if where is not None else None,
        "column": where.column if where is not None else None,
        "exit_code": exit_code(exc),
    }


def reports(command: str | Callable[[argparse.Namespace], str]) -> Callable[[Run], Run]:
    """Decorate a command's ``run``: with ``--format json``, a kvswitch error or a usage error
    first prints one envelope (``ok`` false, ``data.error``) on stdout, then goes on to the
    handler as before (its message on stderr, its exit code)."""

    def wrap(run: Run) -> Run:
        @functools.wraps(run)
        def wrapped(args: argparse.Namespace) -> int:
            if getattr(args, "format", "text") != "json":
                return run(args)
            try:
                return run(args)
            except (KvswitchError, UsageError) as exc:
                name = command(args) if callable(command) else command
                print(dumps(name, {"error": error_data(exc)}, ok=False))
                raise

        return wrapped

    return wrap
