"""``kvswitch watch [--policy adopt|revert|report] [--once [--format text|json]] [--debounce MS]``."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from kvswitch.cli.envelope import format_option, reports
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.watch import WatchEvent

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help=tr("keep every client in step with kvswitch's config (fix, adopt or revert changes)"),
        description=tr(
            "Watch kvswitch's config and every registered client. A broken file is reported "
            "and nothing is written; fixable findings the config allows are fixed; a changed mode or "
            "cache setting is adopted into the active profile and propagated (default), reverted, or only "
            "reported. Written clients are nudged to reload. Runs until interrupted; --once handles the "
            "files as they are now and exits (1 when something is invalid or drifted)."
        ),
    )
    p.add_argument(
        "--policy",
        choices=("adopt", "revert", "report"),
        default="adopt",
        help=tr("what to do with a change made outside kvswitch (default: adopt)"),
    )
    p.add_argument("--once", action="store_true", help=tr("handle every file once and exit"))
    p.add_argument(
        "--debounce", type=int, default=150, metavar="MS", help=tr("quiet time before a change is read (150)")
    )
    format_option(p)
    p.set_defaults(func=run)


class _Terminated(Exception):
    """SIGTERM arrived before the watcher was running (while it started, or during --once)."""


@reports("watch")
def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import recover_first
    from kvswitch.watch import Watcher

    json_out = args.format == "json"
    if json_out and not args.once:
        from kvswitch.cli._handler import UsageError

        raise UsageError(tr("--format json goes with --once (a running watcher prints one line per event)"))
    recover_first()
    problems: list[WatchEvent] = []
    seen: list[tuple[WatchEvent, float]] = []
    lock = threading.Lock()

    def show(event: WatchEvent) -> None:
        if event.kind in ("invalid", "error", "drift"):
            problems.append(event)
        with lock:
            if json_out:
                seen.append((event, time.time()))
            else:
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
    code = 0
    try:
        watcher.start()
        try:
            if args.once:
                watcher.check_all()
                code = 1 if problems else 0
            else:
                waiting.set()
                while not stop.wait(0.5):
                    pass
        finally:
            waiting.set()  # a second SIGTERM while stopping only asks again
            watcher.stop()
    except _Terminated:
        code = 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    if json_out:
        _print_report(args.policy, seen, code)
    return code


def _event_data(event: WatchEvent, when: float) -> dict[str, Any]:
    from kvswitch.cli.envelope import iso_time

    return {
        "time": iso_time(when),
        "kind": event.kind,
        "path": str(event.path) if event.path else None,
        "message": event.message,
        "diagnostics": [d.as_dict() for d in event.diagnostics],
        "nudges": [
            {"client": str(n.client), "ok": n.ok, "message": n.message, "restart_needed": n.restart_needed}
            for n in event.nudges
        ],
        "written": [str(w) for w in event.written],
    }


def _print_report(policy: str, seen: list[tuple[WatchEvent, float]], code: int) -> None:
    """``watch --once --format json``: per client (file), what the watcher found and did, in
    order; the watcher's own events (started, stopped, propagated to several) apart."""
    from kvswitch.cli.envelope import dumps

    clients: dict[str, list[dict[str, Any]]] = {}
    general: list[dict[str, Any]] = []
    for event, when in seen:
        item = _event_data(event, when)
        if item["path"] is None:
            general.append(item)
        else:
            clients.setdefault(item["path"], []).append(item)
    bad = {"invalid", "error", "drift"}
    data = {
        "policy": policy,
        "once": True,
        "clients": [
            {"path": path, "ok": not any(e["kind"] in bad for e in events), "events": events}
            for path, events in clients.items()
        ],
        "events": general,
        "problems": sum(1 for event, _ in seen if event.kind in bad),
    }
    print(dumps("watch", data, ok=code == 0))
