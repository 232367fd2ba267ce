"""``kvswitch switch merged|split [PATH...] [--dry-run]``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvswitch.config import Config

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "switch",
        help="put client files in merged or split mode (all files or none)",
        description="Switch client files to MODE: the given PATHs, or every client registered in "
        "kvswitch's config (and the config's own mode). Each file is edited in place (comments, order "
        "and unknown keys kept), verified, backed up and written atomically; if one file cannot be "
        "written none is. A switch never writes what lint rejects: a file that would have an error "
        "after the switch, or whose erroneous value the switch would take out (to bring it back on "
        "the way back), is refused with the findings as lint prints them; warnings never block. "
        "Exit 0 ok; 1 refused or failed (nothing changed); 2 usage or unreadable input.",
    )
    p.add_argument("mode", choices=("merged", "split"))
    p.add_argument("paths", nargs="*", metavar="PATH", type=Path, help="default: every registered client")
    p.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    p.add_argument("--client", action="append", metavar="NAME", dest="only",
                   help="switch this registered client alone (its name, kind or file; repeatable): "
                   "it keeps the mode as its own until every client is switched")
    from kvswitch.kinds import choices

    p.add_argument("--kind", choices=choices(), metavar="KIND",
                   help=f"skip detection (with PATHs); one of: {', '.join(choices())}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from kvswitch.cli._handler import recover_first
    from kvswitch.cli.reporters import applied_lines, change_lines, running_warnings

    if (args.paths and args.only) or (args.kind and not args.paths):
        from kvswitch.cli._handler import UsageError

        raise UsageError("give PATHs or --client, not both" if args.only and args.paths
                         else "--kind goes with PATHs (a registered client's kind is in its entry)")
    if not args.dry_run:
        recover_first()
    nudges: tuple[Any, ...] = ()
    if args.paths:
        changes: list[Any] = _switch_paths(args)
    else:
        from kvswitch.clients import switch_clients

        changes = switch_clients(args.mode, dry_run=args.dry_run, only=args.only)
    if args.dry_run:
        for line in change_lines(changes, dry_run=True):
            print(line, end="" if line.endswith("\n") else "\n")
        return 0
    if not args.paths:
        from kvswitch.clients import nudge_changed

        nudges = nudge_changed(changes)  # D-8: tell each client to reload
    for line in applied_lines(changes, nudges):
        print(line)
    for line in running_warnings(changes):
        print(f"kvswitch: warning: {line}", file=sys.stderr)
    n = sum(1 for c in changes if c.changed)
    print(f"switched {n} {'file' if n == 1 else 'files'} to {args.mode}")
    if not args.paths and not args.only:
        return _tell_gateway(args.mode)
    return 0


def _tell_gateway(mode: str) -> int:
    """After a switch of every client: a running gateway takes the mode for pinned clients and
    new requests at once; without one, say when pinned clients get it."""
    import sys

    from kvswitch.config import existing_config
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import tell_mode

    try:
        info = tell_mode(mode)
    except KvswitchError as exc:
        print(f"kvswitch: the files were switched, but the running gateway was not told: {exc}; "
              f"its pinned clients stay in the old mode until kvswitch switch {mode} succeeds",
              file=sys.stderr)
        return 1
    if info is not None:
        print(f"gateway: now {mode} for pinned clients and new requests")
        return 0
    config = existing_config()
    if config is not None and any(c.route == "gateway" for c in config.model.clients):
        print(f"the gateway is not running; pinned clients get {mode} when it starts")
    return 0


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
        problem = "there is no kvswitch config yet (kvswitch init sets one up)"
    else:
        _refuse_pinned(config, args.paths)
        try:
            defaults = _profile_urls(config)
        except KvswitchError as exc:
            problem = f"kvswitch's config gives none: {exc}"
    try:
        return switch(args.mode, args.paths, dry_run=args.dry_run,
                      kinds=[args.kind] * len(args.paths), defaults=defaults)
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
                "pinned to the gateway, which chooses the mode per request: kvswitch switch MODE "
                "(no PATH) switches the gateway for every pinned client; kvswitch gateway unpin "
                f"{entry.name or path} gives the file a mode's URL again. Nothing was changed.",
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
    return ModeDefaults(merged_url=d.merged_url, split_url=d.split_url, mode_header=d.mode_header,
                        url_convention=d.url_convention)
