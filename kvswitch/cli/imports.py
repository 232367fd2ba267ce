"""``kvswitch import CLIENT | --from cc-switch``: profiles from what the user already has."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kvswitch.i18n import tr

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help=tr("make a profile from a client's current settings, or from CC Switch's providers"),
        description=tr(
            "Read a client's current provider (base URL, model, extra headers, and where its key is) "
            "and add it to kvswitch's config as a profile; or, with --from cc-switch, the providers of "
            "CC Switch's database, read-only. Nothing is written to the client's file or to CC Switch's "
            "database. A key is stored in the keyring only with --key, and never printed; a key the "
            'client reads from a variable becomes key = "env:NAME". Without a kvswitch config yet, '
            "one is written with the imported profile active. Exit 0 imported; 1 refused (nothing to "
            "import, a profile of that name exists, a database kvswitch cannot read); 2 usage or "
            "unreadable input."
        ),
    )
    p.add_argument(
        "client",
        nargs="?",
        metavar="CLIENT",
        help=tr(
            "a registered client's name, a client kind (claude-code, codex, cline, opencode, "
            "qwen-code: its usual file) or a file path"
        ),
    )
    p.add_argument("--from", dest="source", choices=("cc-switch",), help=tr("import CC Switch's providers"))
    p.add_argument(
        "--db", type=Path, metavar="PATH", help=tr("CC Switch's database (default ~/.cc-switch/cc-switch.db)")
    )
    p.add_argument("--app", metavar="APP", help=tr("CC Switch: only this app's providers (claude, codex, opencode)"))
    p.add_argument("--provider", metavar="NAME", help=tr("CC Switch: only the provider of this name or id"))
    p.add_argument(
        "--profile",
        metavar="NAME",
        help=tr("the new profile's name (default: the client's kind, or the provider's name)"),
    )
    p.add_argument("--model", metavar="MODEL", help=tr("the model, where the source names none"))
    p.add_argument("--key", action="store_true", help=tr("store the key the source holds in the keyring"))
    p.add_argument("--dry-run", action="store_true", help=tr("show what would be imported, write nothing"))
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the imported profiles in kvswitch's JSON envelope"),
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError
    from kvswitch.cli.profile import checked_name

    if (args.client is None) == (args.source is None):
        raise UsageError(tr("give a CLIENT or --from cc-switch (one of them)"))
    if args.source is None and (args.db or args.app or args.provider):
        raise UsageError(tr("--db, --app and --provider go with --from cc-switch"))
    if args.profile is not None:
        checked_name(args.profile)
    if args.model is not None:
        from kvswitch.cli.profile import checked_value

        args.model = checked_value("--model", ("model",), args.model)
    from kvswitch.config import existing_config
    from kvswitch.importing import from_cc_switch, from_client, save_imports

    skipped: list[Any] = []
    if args.source == "cc-switch":
        imports, skipped = from_cc_switch(
            args.db, app=args.app, provider=args.provider, name=args.profile, model=args.model
        )
    else:
        imports = [from_client(args.client, config=existing_config(), name=args.profile, model=args.model)]
    saved = save_imports(imports, store_keys=args.key, dry_run=args.dry_run) if imports else None
    final = list(saved.profiles) if saved is not None else []
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(
            dumps(
                "import",
                {
                    "dry_run": args.dry_run,
                    "profiles": [_as_json(i, saved.keys_stored if saved else ()) for i in final],
                    "skipped": [{"source": s.source, "reason": s.reason} for s in skipped],
                },
                ok=bool(final),
            )
        )
    else:
        _show_text(final, skipped, saved, args.dry_run)
    return 0 if final else 1


def _as_json(imp: Any, stored: tuple[str, ...]) -> dict[str, Any]:
    p = imp.profile
    return {
        "name": imp.name,
        "source": imp.source,
        "base_url": p.base_url,
        "url_convention": p.url_convention,
        "model": p.model,
        "headers": dict(p.headers),
        "mode_header": p.mode_header,
        "key": p.key,
        "key_stored": imp.name in stored,
        "notes": list(imp.notes),
    }


def _show_text(final: list[Any], skipped: list[Any], saved: Any, dry_run: bool) -> None:
    from kvswitch.validate import shell_word, show, show_name

    for imp in final:
        p = imp.profile
        key = (
            tr("the key, stored in the keyring")
            if saved and imp.name in saved.keys_stored
            else tr("key {key}").format(key=p.key)
        )
        # the profile's parts are shown escaped
        verb = (
            tr("would import profile {name} from {source}") if dry_run else tr("imported profile {name} from {source}")
        )
        print(verb.format(name=show_name(imp.name), source=imp.source))
        print(
            "  "
            + tr("{url} ({convention}) · model {model} · {key}").format(
                url=show(p.base_url), convention=p.url_convention, model=show(p.model), key=key
            )
        )
        if p.headers:
            print("  " + tr("headers: {headers}").format(headers=", ".join(show(h) for h in p.headers)))
        for note in imp.notes:
            print("  " + tr("note: {note}").format(note=note))
    for s in skipped:
        print(tr("skipped {source}: {reason}").format(source=s.source, reason=s.reason), file=sys.stderr)
    if not final:
        print(tr("kvswitch: nothing was imported"), file=sys.stderr)
        return
    if dry_run:
        return
    if saved.created:
        print(
            tr(
                "wrote {path} with profile {name} active; register your clients with: kvswitch client detect --register"
            ).format(path=saved.config, name=show_name(final[0].name))
        )
    elif saved.activated:
        print(
            tr("profile {name} is active; render it into the clients with: kvswitch profile use {word}").format(
                name=show_name(saved.activated), word=shell_word(saved.activated)
            )
        )
    else:
        print(tr("make it active with: kvswitch profile use {word}").format(word=shell_word(final[0].name)))
