"""``kvswitch import CLIENT | --from cc-switch``: profiles from what the user already has."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import", help="make a profile from a client's current settings, or from CC Switch's providers",
        description="Read a client's current provider (base URL, model, extra headers, and where "
        "its key is) and add it to kvswitch's config as a profile; or, with --from cc-switch, "
        "the providers of CC Switch's database, read-only. Nothing is written to the client's "
        "file or to CC Switch's database. A key is stored in the keyring only with --key, and "
        "never printed; a key the client reads from a variable becomes key = \"env:NAME\". "
        "Without a kvswitch config yet, one is written with the imported profile active. "
        "Exit 0 imported; 1 refused (nothing to import, a profile of that name exists, a "
        "database kvswitch cannot read); 2 usage or unreadable input.",
    )
    p.add_argument("client", nargs="?", metavar="CLIENT",
                   help="a registered client's name, a client kind (claude-code, codex, cline, opencode, "
                   "qwen-code: its usual file) or a file path")
    p.add_argument("--from", dest="source", choices=("cc-switch",), help="import CC Switch's providers")
    p.add_argument("--db", type=Path, metavar="PATH", help="CC Switch's database (default ~/.cc-switch/cc-switch.db)")
    p.add_argument("--app", metavar="APP", help="CC Switch: only this app's providers (claude, codex, opencode)")
    p.add_argument("--provider", metavar="NAME", help="CC Switch: only the provider of this name or id")
    p.add_argument("--profile", metavar="NAME", help="the new profile's name (default: the client's kind, "
                   "or the provider's name)")
    p.add_argument("--model", metavar="MODEL", help="the model, where the source names none")
    p.add_argument("--key", action="store_true", help="store the key the source holds in the keyring")
    p.add_argument("--dry-run", action="store_true", help="show what would be imported, write nothing")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError
    from kvswitch.cli.profile import checked_name

    if (args.client is None) == (args.source is None):
        raise UsageError("give a CLIENT or --from cc-switch (one of them)")
    if args.source is None and (args.db or args.app or args.provider):
        raise UsageError("--db, --app and --provider go with --from cc-switch")
    if args.profile is not None:
        checked_name(args.profile)
    if args.model is not None:
        from kvswitch.cli.profile import checked_value

        args.model = checked_value("--model", ("model",), args.model)
    from kvswitch.config import existing_config
    from kvswitch.importing import from_cc_switch, from_client, save_imports

    skipped: list[Any] = []
    if args.source == "cc-switch":
        imports, skipped = from_cc_switch(args.db, app=args.app, provider=args.provider,
                                          name=args.profile, model=args.model)
    else:
        imports = [from_client(args.client, config=existing_config(), name=args.profile, model=args.model)]
    saved = save_imports(imports, store_keys=args.key, dry_run=args.dry_run) if imports else None
    final = list(saved.profiles) if saved is not None else []
    if args.format == "json":
        print(json.dumps({
            "dry_run": args.dry_run,
            "profiles": [_as_json(i, saved.keys_stored if saved else ()) for i in final],
            "skipped": [{"source": s.source, "reason": s.reason} for s in skipped],
        }, indent=2))
    else:
        _show_text(final, skipped, saved, args.dry_run)
    return 0 if final else 1


def _as_json(imp: Any, stored: tuple[str, ...]) -> dict[str, Any]:
    p = imp.profile
    return {"name": imp.name, "source": imp.source, "base_url": p.base_url,
            "url_convention": p.url_convention, "model": p.model, "headers": dict(p.headers),
            "mode_header": p.mode_header, "key": p.key, "key_stored": imp.name in stored,
            "notes": list(imp.notes)}


def _show_text(final: list[Any], skipped: list[Any], saved: Any, dry_run: bool) -> None:
    from kvswitch.validate import shell_word, show, show_name

    verb = "would import" if dry_run else "imported"
    for imp in final:
        p = imp.profile
        key = ("the key, stored in the keyring" if saved and imp.name in saved.keys_stored
               else f"key {p.key}")
        print(f"{verb} profile {show_name(imp.name)} from {imp.source}")  # its parts shown escaped
        print(f"  {show(p.base_url)} ({p.url_convention}) · model {show(p.model)} · {key}")
        if p.headers:
            print("  headers: " + ", ".join(show(h) for h in p.headers))
        for note in imp.notes:
            print(f"  note: {note}")
    for s in skipped:
        print(f"skipped {s.source}: {s.reason}", file=sys.stderr)
    if not final:
        print("kvswitch: nothing was imported", file=sys.stderr)
        return
    if dry_run:
        return
    if saved.created:
        print(f"wrote {saved.config} with profile {show_name(final[0].name)} active; "
              "register your clients with: kvswitch client detect --register")
    elif saved.activated:
        print(f"profile {show_name(saved.activated)} is active; "
              f"render it into the clients with: kvswitch profile use {shell_word(saved.activated)}")
    else:
        print(f"make it active with: kvswitch profile use {shell_word(final[0].name)}")
