"""``kvswitch init``: kvswitch's config plus the article's client skeletons where missing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    from kvswitch.setup import presets

    names = ", ".join(presets())
    p = sub.add_parser(
        "init",
        help="set up kvswitch: a profile, the client files, the key in the OS keyring",
        description="Write kvswitch's config (or add to it), create the client files that are "
        "missing from the article's skeletons (a Cline-style ~/.cline/settings.json, a CC Switch-style "
        "~/.config/cc-switch/config.toml) and register the ones that exist without touching them. "
        f"Presets: {names}.",
    )
    p.add_argument("--profile", help="profile name (default: the preset's name, else 'default')")
    p.add_argument("--preset", help=f"fill base URL and URL convention from a preset: {names}")
    p.add_argument("--base-url", help="the bare OpenAI-compatible address (no trailing slash)")
    p.add_argument("--url-convention", choices=("append-v1", "includes-v1"))
    p.add_argument("--model", help="model id, as the provider lists it")
    p.add_argument("--mode", choices=("merged", "split"), default="merged")
    for kind in _init_kinds():
        where = kind.default_paths(Path("~"), Path("~/.config"), {})[0]
        p.add_argument(f"--{kind.init_flag}", type=Path, help=f"{kind.product} (default: {where})")
        p.add_argument(f"--no-{kind.init_flag}", action="store_true", help=f"do not set up {kind.product}")
    k = p.add_mutually_exclusive_group()
    k.add_argument("--key-stdin", action="store_true", help="read the API key from stdin (stored in the keyring)")
    k.add_argument("--key-env", metavar="NAME", help="the profile reads its key from this environment variable")
    k.add_argument("--no-key", action="store_true", help="set no key now (later: kvswitch key set PROFILE)")
    p.set_defaults(func=run)


def _init_kinds() -> list[Any]:
    from kvswitch.kinds import all_kinds

    return [k for k in all_kinds(clients_only=True) if k.init_flag]


def _ask(label: str) -> str | None:
    if not sys.stdin.isatty():
        return None
    return input(f"{label}: ").strip() or None


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError
    from kvswitch.cli.key import read_secret
    from kvswitch.cli.profile import checked_name, validated_profile
    from kvswitch.models import ClientEntry
    from kvswitch.paths import default_client_paths
    from kvswitch.setup import init, presets

    data: dict[str, Any] = {}
    if args.preset:
        preset = presets().get(args.preset)
        if preset is None:
            raise UsageError(f"no preset {args.preset!r} (presets: {', '.join(presets())})")
        data.update(provider=preset.name, base_url=preset.base_url, url_convention=preset.url_convention)
    if args.base_url:
        data["base_url"] = args.base_url
        data.setdefault("provider", "custom")
    if args.url_convention:
        data["url_convention"] = args.url_convention
    if "base_url" not in data:
        data["base_url"] = _ask("base URL (or use --preset)") or ""
        if not data["base_url"]:
            raise UsageError(f"give --preset ({', '.join(presets())}) or --base-url URL")
    model = args.model or _ask("model id")
    if not model:
        raise UsageError("give --model (the model id, as your provider lists it)")
    data["model"] = model
    if args.key_env:
        data["key"] = f"env:{args.key_env}"
    profile = validated_profile(data)
    name = args.profile if args.profile is not None else (args.preset or "default")
    checked_name(name)  # a usage error before anything is asked or stored
    defaults = default_client_paths()
    clients = []
    for kind in _init_kinds():
        if not getattr(args, f"no_{kind.init_flag}"):
            path = getattr(args, str(kind.init_flag)) or defaults[kind.id]
            clients.append(ClientEntry(path=str(path), kind=kind.id))
    key = None
    if args.key_stdin:
        key = read_secret("", force_stdin=True)
    elif not args.no_key and not args.key_env and sys.stdin.isatty():
        key = read_secret(f"API key for {name} (not echoed; empty: none now): ") or None
    result = init(name, profile, clients, key=key, mode=args.mode)
    print(f"{'wrote' if result.config_written else 'kept'} {result.config}")
    for path in result.created:
        extra = " (with the key; 0600)" if path in result.key_written else ""
        print(f"created {path}{extra}")
    for path in result.registered:
        print(f"registered {path} (existing file, not modified; bring it in line with: kvswitch profile use {name})")
    if result.key_stored:
        print(f"stored the key for {name} in the OS keyring")
    elif result.no_keyring is not None:
        print(f'profile {name} sends no key (key = "none"): there is no usable OS keyring here. '
              "To add a key later, put it in an environment variable and run: "
              f"kvswitch profile edit {name} --key env:NAME (or set up a keyring, then: "
              f"kvswitch key set {name})")
    elif result.key_reference == "keyring":
        print(f"no key stored yet: kvswitch key set {name}")
    return 0
