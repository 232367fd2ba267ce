"""``kvswitch status [--format text|json]`` and ``kvswitch restore PATH [--list | --id ID]``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kvswitch.cli._handler import recover_first

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        help="the active profile and mode, and where every client stands",
        description="Exit 0 when every client is in sync with the active profile and mode, 1 when "
        "one has drifted or cannot be read. Clients that read the key from an environment "
        "variable (Codex, OpenCode) get a line saying whether that variable is set here, with "
        "the export line (the key masked) when it is not.",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_status)
    r = sub.add_parser(
        "restore",
        help="put a backup of a file back (itself atomic and backed up)",
        description="Without options: restore the newest backup that differs from the file now.",
    )
    r.add_argument("path", type=Path)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--list", action="store_true", help="list the backups")
    g.add_argument("--id", help="restore this backup (an id from --list)")
    r.set_defaults(func=_restore)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "never"


def _status(args: argparse.Namespace) -> int:
    from kvswitch.clients import status

    recover_first()  # first, so the status shows where the files stand, not a half-done switch
    st = status()
    variables, problem = _key_variables()
    if args.format == "json":
        print(json.dumps({
            "config": str(st.config), "profile": st.profile, "mode": st.mode, "in_sync": st.in_sync,
            "clients": [
                {"path": str(c.path), "kind": c.kind, "name": c.name, "exists": c.exists, "mode": c.mode,
                 "in_sync": c.in_sync, "drift": c.drift, "key": c.key, "last_write": c.last_write,
                 "backups": c.backups, "problem": c.problem, "target": c.target,
                 "own_mode": c.own_mode, "changed_outside": c.changed_outside,
                 "route": c.route, "gateway_running": c.gateway_running}
                for c in st.clients
            ],
            "key_variables": [v.as_dict() for v in variables],
            **({"key_variables_problem": problem} if problem else {}),
        }, indent=2))
    else:
        from kvswitch.validate import show_name

        if st.profile is None:
            print(f"no active profile · mode {st.mode}  ({st.config})")
            print("  make one from a client's settings: kvswitch import CLIENT "
                  "(or choose one: kvswitch profile use NAME)")
        else:
            print(f"profile {show_name(st.profile)} · mode {st.mode}  ({st.config})")
        if not st.clients:
            print("no clients registered (kvswitch client add PATH)")
        for c in st.clients:
            state = "in sync" if c.in_sync else ("PROBLEM" if c.problem else "no profile to compare with"
                                                 if st.profile is None else "drifted: " + ", ".join(c.drift))
            own = f" (its own mode: {c.target})" if c.own_mode else ""
            if c.route == "gateway":
                mode = (f"via the gateway, mode {c.mode}" if c.gateway_running
                        else "via the gateway (not running: kvswitch gateway --detach starts it)")
                state = "pinned" if c.in_sync else state
                print(f"- {c.path} [{c.kind}] {mode} · {state}")
            else:
                print(f"- {c.path} [{c.kind}] mode {c.mode or '?'}{own} · {state}")
            if c.changed_outside:
                print("    changed outside kvswitch since its last write")
            print(f"    key {c.key or 'none'} · last kvswitch write {_when(c.last_write)} · {c.backups} backups")
            if c.problem:
                print(f"    {c.problem}")
        for v in variables:
            saw, fix = v.describe()
            print(f"key variable {v.name}: {'ok' if v.ok else v.state} · {saw}")
            if fix:
                print(f"    {fix}")
        if problem:
            print(f"key variable: cannot check: {problem}")
    return 0 if st.in_sync else 1


def _key_variables() -> tuple[list[Any], str | None]:
    """The variables registered clients read the active profile's key from (kvswitch.
    key_variables), or why they cannot be checked (the keyring refused)."""
    from kvswitch.config import read_config
    from kvswitch.errors import KvswitchError
    from kvswitch.key_variables import key_variables

    try:
        return key_variables(read_config()), None
    except KvswitchError as exc:
        return [], str(exc)


def _restore(args: argparse.Namespace) -> int:
    from kvswitch.backups import list_backups
    from kvswitch.clients import restore

    if args.list:
        backups = list_backups(args.path)
        if not backups:
            print(f"no backups of {args.path}")
            return 1
        for b in backups:
            print(f"{b.id}  {_when(b.created)}  {b.size:>8} bytes")
        return 0
    recover_first()  # an interrupted switch first: restore puts back a file it may name
    chosen, result = restore(args.path, args.id)
    print(f"restored {args.path} from backup {chosen.id}" + (f" (the version it replaced: {result.backup})" if result.backup else ""))
    return 0
