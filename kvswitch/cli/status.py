"""``kvswitch status [--format text|json]`` and ``kvswitch restore PATH [--list | --id ID]``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kvswitch.cli._handler import recover_first
from kvswitch.cli.envelope import error_data, format_option, reports
from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        help=tr("the active profile and mode, and where every client stands"),
        description=tr(
            "Exit 0 when every client is in sync with the active profile and mode, 1 when "
            "one has drifted or cannot be read. Clients that read the key from an environment "
            "variable (Codex, OpenCode) get a line saying whether that variable is set here, with "
            "the export line (the key masked) when it is not."
        ),
    )
    format_option(p)
    p.set_defaults(func=_status)
    r = sub.add_parser(
        "restore",
        help=tr("put a backup of a file back (itself atomic and backed up)"),
        description=tr("Without options: restore the newest backup that differs from the file now."),
    )
    r.add_argument("path", type=Path)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--list", action="store_true", help=tr("list the backups"))
    g.add_argument("--id", help=tr("restore this backup (an id from --list)"))
    format_option(r)
    r.set_defaults(func=_restore)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else tr("never")


@reports("status")
def _status(args: argparse.Namespace) -> int:
    from kvswitch.status import status

    recover_first()  # first, so the status shows where the files stand, not a half-done switch
    st = status()
    variables, problem = _key_variables()
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(dumps("status", _status_data(st, variables, problem), ok=st.in_sync))
    else:
        _status_text(st, variables, problem)
    return 0 if st.in_sync else 1


def _status_data(st: Any, variables: list[Any], problem: str | None) -> dict[str, Any]:
    from kvswitch.cli.envelope import iso_time

    return {
        "config": str(st.config),
        "profile": st.profile,
        "mode": st.mode,
        "in_sync": st.in_sync,
        "clients": [
            {
                "path": str(c.path),
                "kind": c.kind,
                "name": c.name,
                "exists": c.exists,
                "mode": c.mode,
                "in_sync": c.in_sync,
                "drift": c.drift,
                "key": c.key,
                "last_write": iso_time(c.last_write),
                "backups": c.backups,
                "problem": c.problem,
                "target": c.target,
                "own_mode": c.own_mode,
                "changed_outside": c.changed_outside,
                "route": c.route,
                "gateway_running": c.gateway_running,
            }
            for c in st.clients
        ],
        "key_variables": [v.as_dict() for v in variables],
        **({"key_variables_problem": problem} if problem else {}),
    }


def _status_text(st: Any, variables: list[Any], problem: str | None) -> None:
    from kvswitch.validate import show_name

    if st.profile is None:
        print(tr("no active profile · mode {mode}  ({config})").format(mode=st.mode, config=st.config))
        print(
            tr("  make one from a client's settings: kvswitch import CLIENT (or choose one: kvswitch profile use NAME)")
        )
    else:
        print(
            tr("profile {profile} · mode {mode}  ({config})").format(
                profile=show_name(st.profile), mode=st.mode, config=st.config
            )
        )
    if not st.clients:
        print(tr("no clients registered (kvswitch client add PATH)"))
    for c in st.clients:
        _client_text(st, c)
    for v in variables:
        saw, fix = v.describe()
        line = tr("key variable {name}: ok · {saw}") if v.ok else tr("key variable {name}: {state} · {saw}")
        print(line.format(name=v.name, state=v.state, saw=saw))
        if fix:
            print(f"    {fix}")
    if problem:
        print(tr("key variable: cannot check: {problem}").format(problem=problem))


def _client_text(st: Any, c: Any) -> None:
    if c.in_sync:
        state = tr("in sync")
    elif c.problem:
        state = tr("PROBLEM")
    elif st.profile is None:
        state = tr("no profile to compare with")
    else:
        state = tr("drifted: {fields}").format(fields=", ".join(c.drift))
    if c.route == "gateway":
        mode = (
            tr("via the gateway, mode {mode}").format(mode=c.mode)
            if c.gateway_running
            else tr("via the gateway (not running: kvswitch gateway --detach starts it)")
        )
        state = tr("pinned") if c.in_sync else state
        print(f"- {c.path} [{c.kind}] {mode} · {state}")
    else:
        own = tr(" (its own mode: {mode})").format(mode=c.target) if c.own_mode else ""
        print(
            tr("- {path} [{kind}] mode {mode}{own} · {state}").format(
                path=c.path, kind=c.kind, mode=c.mode or "?", own=own, state=state
            )
        )
    if c.changed_outside:
        print(tr("    changed outside kvswitch since its last write"))
    line = (
        tr("    key {key} · last kvswitch write {when} · {count} backups")
        if c.key
        else tr("    key none · last kvswitch write {when} · {count} backups")
    )
    print(line.format(key=c.key, when=_when(c.last_write), count=c.backups))
    if c.problem:
        print(f"    {c.problem}")


def _key_variables() -> tuple[list[Any], str | None]:
    """The variables registered clients read the active profile's key from (kvswitch.
    key_variables), or why they cannot be checked (the keyring refused)."""
    from kvswitch.config import read_config
    from kvswitch.key_variables import key_variables

    try:
        return key_variables(read_config()), None
    except KvswitchError as exc:
        return [], str(exc)


def _restore_command(args: argparse.Namespace) -> str:
    return "restore --list" if args.list else "restore"


@reports(_restore_command)
def _restore(args: argparse.Namespace) -> int:
    from kvswitch.backups import list_backups
    from kvswitch.cli.envelope import dumps, iso_time
    from kvswitch.clients import restore

    json_out = args.format == "json"
    if args.list:
        backups = list_backups(args.path)
        if json_out:
            data: dict[str, Any] = {
                "path": str(args.path),
                "backups": [
                    {"id": b.id, "created": iso_time(b.created), "size": b.size, "backup": str(b.path)} for b in backups
                ],
            }
            if not backups:
                from kvswitch.errors import Location

                data["error"] = error_data(
                    KvswitchError(tr("no backups of {path}").format(path=args.path), Location(args.path))
                )
            print(dumps("restore --list", data, ok=bool(backups)))
            return 0 if backups else 1
        if not backups:
            print(tr("no backups of {path}").format(path=args.path))
            return 1
        for b in backups:
            print(tr("{id}  {when}  {size:>8} bytes").format(id=b.id, when=_when(b.created), size=b.size))
        return 0
    recover_first()  # an interrupted switch first: restore puts back a file it may name
    chosen, result = restore(args.path, args.id)
    if json_out:
        print(
            dumps(
                "restore",
                {
                    "path": str(args.path),
                    "restored": {"id": chosen.id, "created": iso_time(chosen.created), "size": chosen.size},
                    "replaced_backup": str(result.backup) if result.backup else None,
                },
            )
        )
        return 0
    if result.backup:
        print(
            tr("restored {path} from backup {id} (the version it replaced: {backup})").format(
                path=args.path, id=chosen.id, backup=result.backup
            )
        )
    else:
        print(tr("restored {path} from backup {id}").format(path=args.path, id=chosen.id))
    return 0
