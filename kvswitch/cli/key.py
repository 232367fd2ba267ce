"""``kvswitch key set|get|delete PROFILE``: keys in the OS keyring, never echoed."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from kvswitch.validate import show_name

__all__ = ["read_secret", "register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "key",
        help="store, show (masked) or delete a profile's API key in the OS keyring",
        description="Keys live in the OS keyring (service 'kvswitch'), one per profile. 'set' reads "
        "the key without echo, or from stdin when it is not a terminal; 'get' prints it masked "
        "unless --reveal. Nothing is ever stored in plain text.",
    )
    ks = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = ks.add_parser("set", help="store the key (prompted without echo, or read from stdin)")
    s.add_argument("profile")
    s.add_argument("--stdin", action="store_true", help="read the key from stdin even on a terminal")
    s.add_argument("--apply", action="store_true", help="then render it into the clients (kvswitch profile use)")
    s.set_defaults(func=_set)
    g = ks.add_parser("get", help="show the key, masked (sk-…abcd)")
    g.add_argument("profile")
    g.add_argument("--reveal", action="store_true", help="print the whole key (the only command that does)")
    g.set_defaults(func=_get)
    d = ks.add_parser("delete", help="remove the key from the keyring")
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
    if profile.key not in ("keyring", "none"):  # none (no key yet): the keyring becomes its source
        print(f"kvswitch: profile {show_name(args.profile)} reads its key from {profile.key}, not the keyring; "
              f"to use the keyring: kvswitch profile edit {show_name(args.profile)} --key keyring", file=sys.stderr)
        return 1
    key = read_secret(f"API key for {show_name(args.profile)} (not echoed): ", force_stdin=args.stdin)
    set_key(args.profile, key)
    from kvswitch.redact import mask

    print(f"stored the key for {show_name(args.profile)} ({mask(key)}) in the OS keyring")
    if profile.key == "none":
        from kvswitch.config import edit_config
        from kvswitch.edits import Set

        edit_config([Set(("profiles", args.profile, "key"), "keyring")])
        print(f"profile {show_name(args.profile)} now reads its key from the keyring")
    if args.apply:
        from kvswitch.cli.reporters import change_lines
        from kvswitch.clients import apply_profile

        for line in change_lines(apply_profile(args.profile), dry_run=False):
            print(line)
    return 0


def _get(args: argparse.Namespace) -> int:
    from kvswitch.keys import resolve_key
    from kvswitch.redact import mask

    profile = _profile(args.profile)
    if profile.key == "none":
        name = show_name(args.profile)
        print(f'kvswitch: profile {name} sends no key (key = "none"); give it one with: '
              f"kvswitch key set {name}, or kvswitch profile edit {name} --key env:NAME",
              file=sys.stderr)
        return 1
    key = resolve_key(args.profile, profile.key)
    if key is None:
        print(f"kvswitch: no key for {show_name(args.profile)} ({profile.key})", file=sys.stderr)
        return 1
    print(key if args.reveal else mask(key))
    return 0


def _delete(args: argparse.Namespace) -> int:
    from kvswitch.keys import delete_key

    _profile(args.profile)
    if delete_key(args.profile):
        print(f"deleted the key of {show_name(args.profile)} from the OS keyring")
        return 0
    print(f"kvswitch: no key stored for {show_name(args.profile)}", file=sys.stderr)
    return 1
