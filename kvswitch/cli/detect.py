"""``kvswitch client detect [--register] [--format json]``: the clients installed here."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvswitch.i18n import tr

__all__ = ["add_parser"]


def add_parser(clients: Any) -> None:
    """Add ``detect`` to the ``client`` command's subcommands."""
    p = clients.add_parser(
        "detect",
        help=tr("find the clients installed here (files and programs) and register them"),
        description=tr(
            "Look for each client kvswitch knows: its settings file where the client keeps it "
            "(CODEX_HOME and CLAUDE_CONFIG_DIR followed), its program on PATH and the program's "
            "version. Says which are registered. --register registers every client found that is not "
            "(a missing file is written by the first profile use or switch); on a terminal you are "
            "asked which. Nothing is written to the clients' files. Exit 0; 2 usage."
        ),
    )
    p.add_argument("--register", action="store_true", help=tr("register every client found and not registered yet"))
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the clients found in kvswitch's JSON envelope"),
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvswitch.config import existing_config
    from kvswitch.installed import detect_clients, register_found

    config = existing_config()
    found = detect_clients(config)
    registered: list[str] = []
    if args.register:
        registered = register_found(found)
    elif args.format == "text" and sys.stdin.isatty() and sys.stdout.isatty():
        candidates = [f for f in found if f.found and not f.registered]
        if candidates:
            _show_text(found, [], asked=True)
            registered = register_found(_ask(candidates, found))
            print(
                tr("registered {clients}; make a profile of one with: kvswitch import NAME").format(
                    clients=", ".join(registered)
                )
                if registered
                else tr("nothing registered")
            )
            return 0
    if registered:
        found = detect_clients(existing_config())
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(dumps("client detect", _as_json(found, registered)))
    else:
        _show_text(found, registered, asked=False)
    return 0


def _as_json(found: list[Any], registered: list[str]) -> dict[str, Any]:
    from kvswitch.cc_switch import default_database

    db = default_database()
    return {
        "clients": [
            {
                "kind": f.kind,
                "product": f.product,
                "found": f.found,
                "file": str(f.file),
                "file_exists": f.file_exists,
                "program": str(f.program) if f.program else None,
                "version": f.version,
                "endpoint": f.endpoint,
                "model": f.model,
                "registered": f.registered,
                "name": f.name,
                **({"problem": f.problem} if f.problem else {}),
            }
            for f in found
        ],
        "cc_switch": {"database": str(db), "exists": db.is_file()},
        "registered_now": registered,
    }


def _show_text(found: list[Any], registered: list[str], *, asked: bool) -> None:
    from kvswitch.validate import show

    present = [f for f in found if f.found]
    if not present:
        print(tr("no clients found (looked for: {clients})").format(clients=", ".join(f.product for f in found)))
    for i, f in enumerate(present, 1):
        file = f"{f.file}" + ("" if f.file_exists else tr(" (not there yet)"))
        version = f.version or tr("(version unknown)")
        program = f"{f.program.name} {version}" if f.program else tr("program not on PATH")
        state = (
            tr("registered as {name}").format(name=f.name)
            if f.registered and f.name
            else tr("registered")
            if f.registered
            else tr("not registered")
        )
        print(f"{i}. {f.product}: {file}")
        print(f"   {program} · {state}")
        if f.endpoint:
            model = tr(" · model {model}").format(model=show(f.model)) if f.model else ""
            print("   " + tr("uses {endpoint}").format(endpoint=show(f.endpoint)) + model)
        if f.problem:
            print("   " + tr("cannot read it: {reason}").format(reason=f.problem))
    if registered:
        print(
            tr("registered {clients}; make a profile of one with: kvswitch import NAME").format(
                clients=", ".join(registered)
            )
        )
    elif not asked and any(not f.registered for f in present):
        print(tr("register them with: kvswitch client detect --register"))
    _mention_cc_switch()


def _mention_cc_switch() -> None:
    from kvswitch.cc_switch import default_database

    if default_database().is_file():
        print(
            tr(
                "CC Switch's database is here ({path}): kvswitch import --from cc-switch makes profiles of its "
                "providers"
            ).format(path=default_database())
        )


def _ask(candidates: list[Any], found: list[Any]) -> list[Any]:
    """Ask on the terminal which of ``candidates`` (numbered as listed) to register."""
    numbered = [f for f in found if f.found]
    print(tr("register which? numbers (e.g. 1 3), a for all, Enter for none: "), end="", flush=True)
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, KeyboardInterrupt):
        return []
    if answer in ("a", "all"):
        return candidates
    picked = []
    for word in answer.replace(",", " ").split():
        if word.isdigit() and 1 <= int(word) <= len(numbered) and numbered[int(word) - 1] in candidates:
            picked.append(numbered[int(word) - 1])
        else:
            print(
                tr("kvswitch: {word} is not one of the numbers above; nothing registered").format(word=repr(word)),
                file=sys.stderr,
            )
            return []
    return picked
