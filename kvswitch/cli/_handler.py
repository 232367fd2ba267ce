"""One error handler for every command: kvswitch errors become a message and an exit code."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from kvswitch.errors import KvswitchError, ReadError, UnknownKindError

__all__ = ["UsageError", "exit_code", "handle", "recover_first"]

BUG_HINT = (
    "This is a bug in kvswitch. Please report it with the command you ran and the lines above "
    "(they hold no keys)."
)


class UsageError(Exception):
    """A command was given arguments it cannot use (exit 2)."""


def exit_code(exc: KvswitchError) -> int:
    """2 for input that cannot be read or told apart; 1 for everything else kvswitch refuses."""
    return 2 if isinstance(exc, ReadError | UnknownKindError) else 1


def handle(run: Callable[[], int]) -> int:
    try:
        return run()
    except KvswitchError as exc:
        print(f"kvswitch: {exc}", file=sys.stderr)
        return exit_code(exc)
    except UsageError as exc:
        print(f"kvswitch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kvswitch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception:  # noqa: BLE001 - the last line of defence: report and exit 3
        traceback.print_exc()
        print(f"kvswitch: internal error. {BUG_HINT}", file=sys.stderr)
        return 3


def recover_first() -> None:
    """Finish or roll back a switch a crash interrupted, saying so on stderr: every command
    that reads or writes the clients does this first."""
    from kvswitch.transaction import recover

    note = recover()
    if note:
        print(f"kvswitch: {note}", file=sys.stderr)
