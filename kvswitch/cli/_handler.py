"""One error handler for every command: kvswitch errors become a message and an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from kvswitch.errors import KvswitchError, ReadError, UnknownKindError, UsageError
from kvswitch.i18n import N_, tr

__all__ = ["UsageError", "exit_code", "handle", "recover_first"]

BUG_HINT = N_(
    "This is a bug in kvswitch. Please report it with the command you ran and the lines above (they hold no keys)."
)


def exit_code(exc: KvswitchError) -> int:
    """2 for a usage error and for input that cannot be read or told apart; 1 for everything
    else kvswitch refuses."""
    return 2 if isinstance(exc, UsageError | ReadError | UnknownKindError) else 1


def handle(run: Callable[[], int], parser: argparse.ArgumentParser | None = None) -> int:
    """``run()``'s exit code; errors become a message on stderr and their exit code. A
    :class:`UsageError` shows ``parser``'s usage (the sub-command's) first, as argparse does."""
    try:
        return run()
    except UsageError as exc:  # before KvswitchError, its root
        if parser is not None:
            parser.print_usage(sys.stderr)
        print(
            tr("{prog}: error: {message}").format(prog=parser.prog if parser else "kvswitch", message=exc),
            file=sys.stderr,
        )
        return 2
    except KvswitchError as exc:
        print(tr("kvswitch: {message}").format(message=exc), file=sys.stderr)
        return exit_code(exc)
    except KeyboardInterrupt:
        print(tr("kvswitch: interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception:  # noqa: BLE001 - the last line of defence: report and exit 3
        import traceback

        traceback.print_exc()
        print(tr("kvswitch: internal error. {hint}").format(hint=tr(BUG_HINT)), file=sys.stderr)
        return 3


def recover_first() -> None:
    """Finish or roll back a switch a crash interrupted, saying so on stderr: every command
    that reads or writes the clients does this first."""
    from kvswitch.transaction import recover

    note = recover()
    if note:
        print(tr("kvswitch: {message}").format(message=note), file=sys.stderr)
