"""``kvswitch watch [--policy adopt|revert|report] [--once] [--debounce MS]``."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help="keep every client in step with kvswitch's config (fix, adopt or revert changes)",
        description="Watch kvswitch's config and every registered client. A broken file is reported "
        "and nothing is written; fixable findings the config allows are fixed; a changed mode or "
        "cache setting is adopted into the active profile and propagated (default), reverted, or only "
        "reported. Written clients are nudged to reload. Runs until interrupted; --once handles the "
        "files as they are now and exits (1 when something is invalid or drifted).",
    )
    p.add_argument("--policy", choices=("adopt", "revert", "report"), default="adopt")
    p.add_argument("--once", action="store_true", help="handle every file once and exit")
    p.add_argument("--debounce", type=int, default=150, metavar="MS", help="quiet time before a change is read (150)")
    p.set_defaults(func=run)


class _Terminated(Exception):
    """SIGTERM arrived before the watcher was running (while it started, or during --once)."""


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import recover_first
    from kvswitch.watch import Watcher, WatchEvent

    recover_first()
    problems: list[WatchEvent] = []
    lock = threading.Lock()

    def show(event: WatchEvent) -> None:
        if event.kind in ("invalid", "error", "drift"):
            problems.append(event)
        with lock:
            print(str(event), flush=True)

    stop = threading.Event()
    waiting = threading.Event()  # set while the main loop only waits for the stop

    def terminate(*_: object) -> None:
        stop.set()
        if not waiting.is_set():
            raise _Terminated  # interrupts whatever the main thread is doing, as Ctrl-C would

    # SIGTERM (systemctl stop) stops it cleanly at any moment, even while it starts
    previous = signal.signal(signal.SIGTERM, terminate)
    watcher = Watcher(show, policy=args.policy, debounce=args.debounce / 1000)
    try:
        watcher.start()
        try:
            if args.once:
                watcher.check_all()
                return 1 if problems else 0
            waiting.set()
            while not stop.wait(0.5):
                pass
            return 0
        finally:
            waiting.set()  # a second SIGTERM while stopping only asks again
            watcher.stop()
    except _Terminated:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
