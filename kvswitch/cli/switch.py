"""``kvswitch switch merged|split [PATH...] [--dry-run] [--format text|json]``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.cli.envelope import dumps, error_data, format_option, reports
from kvswitch.i18n import ntr, tr

if TYPE_CHECKING:
    from kvswitch.config import Config

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "switch",
        help=tr("put client files in merged or split mode (all files or none)"),
        description=tr(
            "Switch client files to MODE: the given PATHs, or every client registered in "
            "kvswitch's config (and the config's own mode). Each file is edited in place (comments, order "
            "and unknown keys kept), verified, backed up and written atomically; if one file cannot be "
            "written none is. A switch never writes what lint rejects: a file that would have an error "
            "after the switch, or whose erroneous value the switch would take out (to bring it back on "
            "the way back), is refused with the findings as lint prints them; warnings never block. "
            "Exit 0 ok; 1 refused or failed (nothing changed); 2 usage or unreadable input."
        ),
    )
    p.add_argument("mode", choices=("merged", "split"))
    p.add_argument("paths", nargs="*", metavar="PATH", type=Path, help=tr("default: every registered client"))
    p.add_argument("--dry-run", action="store_true", help=tr("print the unified diff, write nothing"))
    p.add_argument(
        "--client",
        action="append",
        metavar="NAME",
        dest="only",
        help=tr(
            "switch this registered client alone (its name, kind or file; repeatable): "
            "it keeps the mode as its own until every client is switched"
        ),
    )
    from kvswitch.kinds import choices

    p.add_argument(
        "--kind",
        choices=choices(),
        metavar="KIND",
        help=tr("skip detection (with PATHs); one of: {kinds}").format(kinds=", ".join(choices())),
    )
    format_option(p)
    p.set_defaults(func=run)


@reports("switch")
def run(args: argparse.Namespace) -> int:
    import sys

    from kvswitch.cli._handler import recover_first
    from kvswitch.cli.reporters import applied_lines, change_lines, running_warnings

    if (args.paths and args.only) or (args.kind and not args.paths):
        from kvswitch.cli._handler import UsageError

        raise UsageError(
            tr("give PATHs or --client, not both")
            if args.only and args.paths
            else tr("--kind goes with PATHs (a registered client's kind is in its entry)")
        )
    if not args.dry_run:
        recover_first()
    nudges: tuple[Any, ...] = ()
    if args.paths:
        changes: list[Any] = _switch_paths(args)
    else:
        from kvswitch.clients import switch_clients

        changes = switch_clients(args.mode, dry_run=args.dry_run, only=args.only)
    json_out = args.format == "json"
    if args.dry_run:
        if json_out:
            print(dumps("switch", _data(args, changes, (), [], None)))
            return 0
        for line in change_lines(changes, dry_run=True):
            print(line, end="" if line.endswith("\n") else "\n")
        return 0
    if not args.paths:
        from kvswitch.clients import nudge_changed

        nudges = nudge_changed(changes)  # D-8: tell each client to reload
    warnings = running_warnings(changes)
    if not json_out:
        for line in applied_lines(changes, nudges):
            print(line)
    for line in warnings:
        print(tr("kvswitch: warning: {warning}").format(warning=line), file=sys.stderr)
    n = sum(1 for c in changes if c.changed)
    if not json_out:
        print(
            ntr("switched {count} file to {mode}", "switched {count} files to {mode}", n).format(
                count=n, mode=args.mode
            )
        )
    told = _tell_gateway(args.mode) if not args.paths and not args.only else None
    failed = told is not None and told.error is not None
    if failed:
        print(f"kvswitch: {_not_told(args.mode, told.error if told is not None else None)}", file=sys.stderr)
    if json_out:
        print(dumps("switch", _data(args, changes, nudges, warnings, told), ok=not failed))
    elif told is not None and told.running and not failed:
        print(tr("gateway: now {mode} for pinned clients and new requests").format(mode=args.mode))
    elif told is not None and told.pinned and not failed:
        print(tr("the gateway is not running; pinned clients get {mode} when it starts").format(mode=args.mode))
    return 1 if failed else 0


def _not_told(mode: str, error: str | None) -> str:
    return tr(
        "the files were switched, but the running gateway was not told: {error}; "
        "its pinned clients stay in the old mode until kvswitch switch {mode} succeeds"
    ).format(error=error, mode=mode)


def _data(
    args: argparse.Namespace, changes: list[Any], nudges: tuple[Any, ...], warnings: list[str], told: _Told | None
) -> dict[str, Any]:
    """``data`` of ``switch --format json``: each file and what became of it (keys masked in
    the diffs of a dry run), the gateway's part, the warnings."""
    from kvswitch.kinds import get_kind

    by_path = {n.client: n for n in nudges}
    files = []
    for c in changes:
        nudge = by_path.get(c.path)
        files.append(
            {
                "path": str(c.path),
                "kind": c.kind,
                "client": getattr(c, "name", None),
                "old_mode": c.old_mode,
                "new_mode": c.new_mode,
                "changed": c.changed,
                "pinned": getattr(c, "pinned", False),
                "key_written": getattr(c, "key_written", False),
                "backup": str(c.backup) if c.backup else None,
                "diff": c.diff if args.dry_run and c.changed else None,
                "takes_effect": get_kind(c.kind).takes_effect if c.changed else None,
                "nudge": None
                if nudge is None
                else {"ok": nudge.ok, "message": nudge.message, "restart_needed": nudge.restart_needed},
            }
        )
    data: dict[str, Any] = {
        "mode": args.mode,
        "dry_run": bool(args.dry_run),
        "scope": "paths" if args.paths else "clients" if args.only else "all",
        "files": files,
        "switched": sum(1 for c in changes if c.changed),
        "warnings": warnings,
        "gateway": None
        if told is None
        else {"running": told.running, "told": told.running and told.error is None, "pinned_clients": told.pinned},
    }
    if told is not None and told.error is not None:
        from kvswitch.errors import KvswitchError

        data["error"] = error_data(KvswitchError(_not_told(args.mode, told.error if told is not None else None)))
    return data


class _Told:
    """What became of telling the gateway the mode: running (answered), whether any client is
    pinned to it, the error when it could not be told. (A plain class: a dataclass costs its
    creation on every start of the command.)"""

    __slots__ = ("error", "pinned", "running")

    def __init__(self, *, running: bool, pinned: bool, error: str | None = None) -> None:
        self.running = running
        self.pinned = pinned
        self.error = error


def _tell_gateway(mode: str) -> _Told:
    """After a switch of every client: a running gateway takes the mode for pinned clients and
    new requests at once; without one, pinned clients get it when it starts."""
    from kvswitch import paths
    from kvswitch.config import existing_config
    from kvswitch.errors import KvswitchError

    config = existing_config()
    pinned = config is not None and any(c.route == "gateway" for c in config.model.clients)
    if not (paths.dirs().state / "gateway").is_dir():  # control.runtime_dir(): no gateway ever ran here
        return _Told(running=False, pinned=pinned)
    from kvswitch.gateway.control import tell_mode

    try:
        info = tell_mode(mode)
    except KvswitchError as exc:
        return _Told(running=True, pinned=pinned, error=str(exc))
    return _Told(running=info is not None, pinned=pinned)


def _switch_paths(args: argparse.Namespace) -> list[Any]:
    """Switch the files named on the command line. A real client's file takes each mode's URL
    from the active profile (the article's shapes keep their own values); without a config,
    the switch of a real client's file is refused by its kind, naming what it needs."""
    from kvswitch.config import existing_config
    from kvswitch.errors import EditError, KvswitchError
    from kvswitch.switching import switch

    defaults, problem = None, None
    config = existing_config()
    if config is None:
        problem = tr("there is no kvswitch config yet (kvswitch init sets one up)")
    else:
        _refuse_pinned(config, args.paths)
        try:
            defaults = _profile_urls(config)
        except KvswitchError as exc:
            problem = tr("kvswitch's config gives none: {error}").format(error=exc)
    try:
        return switch(
            args.mode, args.paths, dry_run=args.dry_run, kinds=[args.kind] * len(args.paths), defaults=defaults
        )
    except EditError as exc:
        where = exc.location.path if exc.location is not None else None
        if problem is None or where is None or not _real_client(where, args.kind):
            raise
        raise EditError(f"{exc.message} ({problem})", exc.location) from exc


def _refuse_pinned(config: Config, paths: list[Path]) -> None:
    """A file pinned to the gateway keeps the gateway's address: switching it by its path
    would write a mode's URL over it."""
    from kvswitch.clients import registered
    from kvswitch.errors import ConfigError, Location

    for path in paths:
        entry = registered(config, path)
        if entry is not None and entry.route == "gateway":
            raise ConfigError(
                tr(
                    "pinned to the gateway, which chooses the mode per request: kvswitch switch MODE "
                    "(no PATH) switches the gateway for every pinned client; kvswitch gateway unpin "
                    "{client} gives the file a mode's URL again. Nothing was changed."
                ).format(client=entry.name or path),
                Location(path),
            )


def _real_client(path: Path, kind: str | None) -> bool:
    """Whether ``path`` is a real client's file (whose modes are the profile's URLs)."""
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_bytes
    from kvswitch.kinds import detect_kind, get_kind

    try:
        return get_kind(kind or detect_kind(path, read_bytes(path).decode("utf-8", "replace"))).real
    except KvswitchError:
        return False


def _profile_urls(config: Config) -> Any:
    """Each mode's URL from the active profile of kvswitch's config."""
    from kvswitch.kinds.base import ModeDefaults, mode_defaults

    _, profile = config.profile()
    d = mode_defaults(profile)
    return ModeDefaults(
        merged_url=d.merged_url, split_url=d.split_url, mode_header=d.mode_header, url_convention=d.url_convention
    )
