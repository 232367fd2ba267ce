"""``kvswitch key set|get|delete PROFILE``: keys in the OS keyring, never echoed (``get --format
json``: where the key is and its masked form, never the key)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from kvswitch.cli._handler import UsageError
from kvswitch.cli.envelope import error_data, format_option, reports
from kvswitch.i18n import tr
from kvswitch.validate import show_name

__all__ = ["read_secret", "register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "key",
        help=tr("store, show (masked) or delete a profile's API key in the OS keyring"),
        description=tr(
            "Keys live in the OS keyring (service 'kvswitch'), one per profile. 'set' reads "
            "the key without echo, or from stdin when it is not a terminal; 'get' prints it masked "
            "unless --reveal. Nothing is ever stored in plain text."
        ),
    )
    ks = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = ks.add_parser("set", help=tr("store the key (prompted without echo, or read from stdin)"))
    s.add_argument("profile")
    s.add_argument("--stdin", action="store_true", help=tr("read the key from stdin even on a terminal"))
    s.add_argument("--apply", action="store_true", help=tr("then render it into the clients (kvswitch profile use)"))
    s.set_defaults(func=_set)
    g = ks.add_parser("get", help=tr("show the key, masked (sk-…abcd)"))
    g.add_argument("profile")
    g.add_argument(
        "--reveal", action="store_true", help=tr("print the whole key (the only command that does; text only)")
    )
    format_option(g)
    g.set_defaults(func=_get)
    d = ks.add_parser("delete", help=tr("remove the key from the keyring"))
    d.add_argument("profile")
    d.set_defaults(func=_delete)


def read_secret(prompt: str, *, force_stdin: bool = False) -> str:
    """A secret from the terminal without echo, or the first line of stdin."""
    if force_stdin or not sys.stdin.isatty():
        line = sys.stdin.readline()
        return line[:-1] if line.endswith("\n") else line
    return getpass.getpass(prompt)


def _profile(name: str) -> Any:
    from kvswitch.config import read_config

    return read_config().profile(name)[1]


def _set(args: argparse.Namespace) -> int:
    from kvswitch.keys import set_key

    profile = _profile(args.profile)
    name = show_name(args.profile)
    if profile.key not in ("keyring", "none"):  # none (no key yet): the keyring becomes its source
        print(
            tr(
                "kvswitch: profile {profile} reads its key from {reference}, not the keyring; "
                "to use the keyring: kvswitch profile edit {profile} --key keyring"
            ).format(profile=name, reference=profile.key),
            file=sys.stderr,
        )
        return 1
    key = read_secret(tr("API key for {profile} (not echoed): ").format(profile=name), force_stdin=args.stdin)
    set_key(args.profile, key)
    from kvswitch.redact import mask

    print(tr("stored the key for {profile} ({masked}) in the OS keyring").format(profile=name, masked=mask(key)))
    if profile.key == "none":
        from kvswitch.config import edit_config
        from kvswitch.edits import Set

        edit_config([Set(("profiles", args.profile, "key"), "keyring")])
        print(tr("profile {profile} now reads its key from the keyring").format(profile=name))
    if args.apply:
        from kvswitch.cli.reporters import change_lines
        from kvswitch.clients import apply_profile

        for line in change_lines(apply_profile(args.profile), dry_run=False):
            print(line)
    return 0


@reports("key get")
def _get(args: argparse.Namespace) -> int:
    from kvswitch.keys import resolve_key
    from kvswitch.redact import mask

    json_out = args.format == "json"
    if json_out and args.reveal:
        raise UsageError(tr("--reveal prints the key as text only: the JSON report never holds a key"))
    profile = _profile(args.profile)
    name = show_name(args.profile)
    problem = None
    key = None
    if profile.key == "none":
        problem = tr(
            'profile {profile} sends no key (key = "none"); give it one with: '
            "kvswitch key set {profile}, or kvswitch profile edit {profile} --key env:NAME"
        ).format(profile=name)
    else:
        key = resolve_key(args.profile, profile.key)
        if key is None:
            problem = tr("no key for {profile} ({reference})").format(profile=name, reference=profile.key)
    if json_out:
        variable = profile.key[4:] if profile.key.startswith("env:") else None
        data: dict[str, Any] = {
            "profile": args.profile,
            "reference": profile.key,
            "present": key is not None,
            "masked": mask(key) if key is not None else None,
            "stored_in": "keyring" if profile.key == "keyring" else "environment" if variable else None,
            "variable": variable,
        }
        if problem is not None:
            from kvswitch.errors import KvswitchError

            data["error"] = error_data(KvswitchError(problem))
        from kvswitch.cli.envelope import dumps

        print(dumps("key get", data, ok=problem is None))
        if problem is not None:
            print(f"kvswitch: {problem}", file=sys.stderr)
        return 1 if problem is not None else 0
    if key is None:
        print(f"kvswitch: {problem}", file=sys.stderr)
        return 1
    print(key if args.reveal else mask(key))
    return 0


def _delete(args: argparse.Namespace) -> int:
    from kvswitch.keys import delete_key

    _profile(args.profile)
    name = show_name(args.profile)
    if delete_key(args.profile):
        print(tr("deleted the key of {profile} from the OS keyring").format(profile=name))
        return 0
    print(tr("kvswitch: no key stored for {profile}").format(profile=name), file=sys.stderr)
    return 1
