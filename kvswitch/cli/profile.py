"""``kvswitch profile list|show|use|add|edit|remove|rename`` and ``kvswitch client add|remove|list``
(``profile list``, ``profile show`` and ``client list`` take ``--format text|json``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvswitch.cli.envelope import format_option, reports
from kvswitch.i18n import N_, tr

__all__ = ["register"]


def _boolean(value: str) -> bool:
    return {"true": True, "false": False}[value.lower()]


_FIELDS: dict[str, tuple[tuple[str, ...], Callable[[str], Any]]] = {
    # option: (key path inside a profile, type)
    "provider": (("provider",), str),
    "base_url": (("base_url",), str),
    "url_convention": (("url_convention",), str),
    "model": (("model",), str),
    "key": (("key",), str),
    "merged_url": (("merged", "url"), str),
    "chunk_size": (("merged", "chunk_size"), int),
    "split_url": (("split", "url"), str),
    "prefill_base_url": (("split", "prefill_base_url"), str),
    "decode_base_url": (("split", "decode_base_url"), str),
    "transfer_protocol": (("split", "transfer_protocol"), str),
    "max_transfer_concurrency": (("split", "max_transfer_concurrency"), int),
    "kv_cache_dtype": (("cache", "kv_cache_dtype"), str),
    "prefix_cache": (("cache", "prefix_cache"), _boolean),
    "temperature": (("request", "temperature"), float),
    "max_tokens": (("request", "max_tokens"), int),
    "stream": (("request", "stream"), _boolean),
    "timeout_seconds": (("request", "timeout_seconds"), float),
}
_ALIASES = {"probe_url": "split_url"}
"""Older option names still accepted (hidden from --help): old name → field."""
_FIELD_HELP = {
    "merged_url": N_("the merged instance: clients use it in merged mode (default: --base-url)"),
    "split_url": N_("the router in front of the split pair: clients use it in split mode (default: --base-url)"),
}


def _field_options(p: argparse.ArgumentParser) -> None:
    for name in _FIELDS:
        shown = _FIELD_HELP.get(name)
        p.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"f_{name}",
            metavar="VALUE",
            help=tr(shown) if shown is not None else None,
        )
    # the older name of --split-url, still accepted
    p.add_argument("--probe-url", dest="f_probe_url", metavar="VALUE", help=argparse.SUPPRESS)
    header = p.add_mutually_exclusive_group()
    header.add_argument(
        "--mode-header",
        dest="f_mode_header",
        action="store_const",
        const=True,
        help=tr("clients that take extra headers send X-Cache-Mode: merged|split (the default)"),
    )
    header.add_argument(
        "--no-mode-header",
        dest="f_mode_header",
        action="store_const",
        const=False,
        help=tr("clients send no X-Cache-Mode header: the mode is only its URL"),
    )


def _header_options(p: argparse.ArgumentParser, *, removable: bool = True) -> None:
    p.add_argument(
        "--header",
        dest="headers",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help=tr("an extra header the real clients send (repeatable); never a key: credential headers are refused"),
    )
    if removable:
        p.add_argument(
            "--no-header",
            dest="no_headers",
            action="append",
            metavar="NAME",
            default=[],
            help=tr("stop sending this extra header (repeatable)"),
        )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help=tr("list, show, choose and edit profiles"),
        description=tr("Profiles: a backend (base URL, model, key reference) and both modes' settings."),
    )
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = ps.add_parser("list", help=tr("the profiles; * marks the active one"))
    format_option(listing)
    listing.set_defaults(func=_list)
    show = ps.add_parser("show", help=tr("one profile (default: the active one)"))
    show.add_argument("name", nargs="?")
    format_option(show)
    show.set_defaults(func=_show)
    use = ps.add_parser("use", help=tr("make NAME active and render it into every client (all or none)"))
    use.add_argument("name")
    use.add_argument("--dry-run", action="store_true", help=tr("print the unified diff, write nothing"))
    use.set_defaults(func=_use)
    add = ps.add_parser("add", help=tr("add a profile (from a preset, or --base-url)"))
    add.add_argument("name")
    add.add_argument("--preset", help=tr("one of: kvswitch presets (see kvswitch init --help)"))
    _field_options(add)
    _header_options(add, removable=False)
    add.set_defaults(func=_add)
    edit = ps.add_parser("edit", help=tr("change fields of a profile (re-render with: kvswitch profile use)"))
    edit.add_argument("name")
    _field_options(edit)
    _header_options(edit)
    edit.set_defaults(func=_edit)
    rm = ps.add_parser("remove", help=tr("remove a profile (not the active one) and its stored key"))
    rm.add_argument("name")
    rm.set_defaults(func=_remove)
    mv = ps.add_parser("rename", help=tr("rename a profile (its stored key moves with it)"))
    mv.add_argument("old")
    mv.add_argument("new")
    mv.set_defaults(func=_rename)
    _register_client(sub)


def _register_client(sub: Any) -> None:
    c = sub.add_parser("client", help=tr("register and unregister client files"))
    cs = c.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = cs.add_parser("list", help=tr("the registered clients"))
    format_option(listing)
    listing.set_defaults(func=_client_list)
    cadd = cs.add_parser("add", help=tr("register a client file (it is not modified)"))
    cadd.add_argument("path", type=Path)
    from kvswitch.kinds import choices

    kinds = choices(clients_only=True)
    cadd.add_argument(
        "--kind",
        choices=kinds,
        metavar="KIND",
        help=tr("default: detected from the path and content; one of: {kinds}").format(kinds=", ".join(kinds)),
    )
    cadd.add_argument("--name", help=tr("how messages call it (e.g. 'vscode'): letters, digits, '.', '_', '-'"))
    keys = cadd.add_mutually_exclusive_group()
    keys.add_argument(
        "--write-key",
        action="store_true",
        help=tr(
            "write the profile's key into this file (the default only for the article-cline and article-ccswitch kinds)"
        ),
    )
    keys.add_argument("--no-key", action="store_true", help=tr("never write the key into this file"))
    cadd.add_argument(
        "--allow-key-in-repo",
        action="store_true",
        help=tr("write the key even though the file is inside a git work tree"),
    )
    cadd.add_argument(
        "--nudge",
        choices=("none", "touch", "signal", "command"),
        default="none",
        help=tr("how the client is told to reload after a write (default: none)"),
    )
    cadd.add_argument("--pidfile", help=tr("signal nudge: the client's pid file"))
    cadd.add_argument("--signal", default="HUP", help=tr("signal nudge: the signal name (default HUP)"))
    cadd.add_argument(
        "--command", dest="nudge_argv", nargs=argparse.REMAINDER, help=tr("command nudge: argv (run without a shell)")
    )
    cadd.set_defaults(func=_client_add)
    from kvswitch.cli.detect import add_parser as add_detect

    add_detect(cs)
    crm = cs.add_parser("remove", help=tr("unregister a client file (it is not modified)"))
    crm.add_argument("path", type=Path)
    crm.set_defaults(func=_client_remove)


def _collect(args: argparse.Namespace) -> dict[tuple[str, ...], Any]:
    """The field options given, converted, validated and normalised (kvswitch.validate): a
    value lint would fix is taken fixed with a note, one lint calls an error is a usage error."""
    from kvswitch.cli._handler import UsageError
    from kvswitch.validate import show

    out: dict[tuple[str, ...], Any] = {}
    if getattr(args, "f_mode_header", None) is not None:
        out[("mode_header",)] = args.f_mode_header
    for old, new in _ALIASES.items():
        if getattr(args, f"f_{old}", None) is not None and getattr(args, f"f_{new}") is not None:
            raise UsageError(
                tr("give {option} or {old_option}, not both").format(
                    option=f"--{new.replace('_', '-')}", old_option=f"--{old.replace('_', '-')}"
                )
            )
    fields = [*_FIELDS.items(), *((old, _FIELDS[new]) for old, new in _ALIASES.items())]
    for name, (path, conv) in fields:
        raw = getattr(args, f"f_{name}", None)
        if raw is None:
            continue
        option = f"--{name.replace('_', '-')}"
        try:
            value = conv(raw)
        except (ValueError, KeyError):
            raise UsageError(
                tr("{option}: not a valid value: {value}").format(option=option, value=show(raw))
            ) from None
        out[path] = checked_value(option, path, value)
    return out


def checked_value(option: str, path: tuple[str, ...], value: Any) -> Any:
    """One profile value through the shared validation; its note (if any) goes to stderr."""
    from kvswitch.cli._handler import UsageError
    from kvswitch.validate import InvalidValueError, profile_value

    try:
        value, note = profile_value(path, value)
    except InvalidValueError as exc:
        raise UsageError(f"{option}: {exc.code} {exc.message}") from None
    if note is not None:
        print(tr("kvswitch: note: {code} {message}").format(code=note.code, message=note.message), file=sys.stderr)
    return value


def checked_name(name: str, what: str = "profile") -> str:
    """A new profile or client name, or a usage error saying what is wrong with it."""
    from kvswitch.cli._handler import UsageError
    from kvswitch.validate import InvalidValueError, check_name

    try:
        return check_name(name, what)
    except InvalidValueError as exc:
        raise UsageError(exc.message) from None


def validated_profile(data: dict[str, Any]) -> Any:
    """A Profile from command-line values; a missing or wrong one is a usage error naming it."""
    from pydantic import ValidationError

    from kvswitch.cli._handler import UsageError
    from kvswitch.models import Profile

    for key in ("provider", "base_url", "model", "key"):
        if isinstance(data.get(key), str):
            data[key] = checked_value(f"--{key.replace('_', '-')}", (key,), data[key])
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            field = ".".join(str(p) for p in err["loc"])
            option = "--" + str(err["loc"][-1]).replace("_", "-")
            what = tr("required") if err["type"] == "missing" else err["msg"]
            problems.append(f"{option} ({field}): {what}")
        raise UsageError("; ".join(problems)) from None


@reports("profile list")
def _list(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.validate import show, show_name, text_problem, url_problem

    config = read_config()
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(
            dumps(
                "profile list",
                {
                    "active": config.model.active_profile,
                    "profiles": [
                        {
                            "name": name,
                            "active": name == config.model.active_profile,
                            "provider": prof.provider,
                            "base_url": prof.base_url,
                            "model": prof.model,
                            "key": prof.key,
                            "merged_url": prof.mode_url("merged"),
                            "split_url": prof.mode_url("split"),
                        }
                        for name, prof in config.model.profiles.items()
                    ],
                },
            )
        )
        return 0
    for name, prof in config.model.profiles.items():
        mark = "*" if name == config.model.active_profile else " "
        url = prof.base_url if url_problem(prof.base_url) is None else show(prof.base_url)
        model = prof.model if text_problem(prof.model) is None else show(prof.model)
        urls = "".join(
            f"  {mode}={u if url_problem(u) is None else show(u)}"
            for mode, u in ((m, prof.mode_url(m)) for m in ("merged", "split"))
            if u != prof.base_url
        )
        print(f"{mark} {show_name(name):16} {url}  model={model}  key={prof.key}{urls}")
    return 0


@reports("profile show")
def _show(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.validate import show_name

    config = read_config()
    name, prof = config.profile(args.name)
    data = prof.model_dump(mode="json")
    if data["split"].get("probe_url") is None:
        data["split"].pop("probe_url", None)  # config version 1's name of split.url
    active = name == config.model.active_profile
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(dumps("profile show", {"name": name, "active": active, **data}))
        return 0
    title = tr("profile {profile} (active)") if active else tr("profile {profile}")
    print(title.format(profile=show_name(name)))
    for key, value in data.items():
        if isinstance(value, dict):
            for k, v in value.items():
                print(f"  {key}.{k} = {json.dumps(v)}")
        else:
            print(f"  {key} = {json.dumps(value)}")
    return 0


def _use(args: argparse.Namespace) -> int:
    from kvswitch.cli.reporters import applied_lines, change_lines, running_warnings
    from kvswitch.clients import apply_profile

    changes = apply_profile(args.name, dry_run=args.dry_run)
    if args.dry_run:
        for line in change_lines(changes, dry_run=True):
            print(line, end="" if line.endswith("\n") else "\n")
        return 0
    from kvswitch.clients import nudge_changed
    from kvswitch.validate import show_name

    for line in applied_lines(changes, nudge_changed(changes)):  # D-8: each client told to reload
        print(line)
    for line in running_warnings(changes):
        print(tr("kvswitch: warning: {warning}").format(warning=line), file=sys.stderr)
    print(tr("profile {profile} is active").format(profile=show_name(args.name)))
    return _reload_gateway()


def _reload_gateway() -> int:
    """After ``profile use``: a running gateway reads its upstreams and keys again."""
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import reload

    try:
        info = reload()
    except KvswitchError as exc:
        print(
            tr("kvswitch: the clients were updated, but the running gateway did not reload: {error}").format(error=exc),
            file=sys.stderr,
        )
        return 1
    if info is not None:
        print(tr("gateway: now serving profile {profile} for new requests").format(profile=info.profile))
    return 0


def _add(args: argparse.Namespace) -> int:
    from kvswitch.config import edit_config, profile_table, read_config
    from kvswitch.edits import Set
    from kvswitch.setup import presets

    checked_name(args.name)
    config = read_config()
    if args.name in config.model.profiles:
        print(
            tr("kvswitch: profile {profile} exists; change it with kvswitch profile edit").format(
                profile=repr(args.name)
            ),
            file=sys.stderr,
        )
        return 1
    data: dict[str, Any] = {}
    if args.preset:
        preset = presets().get(args.preset)
        if preset is None:
            print(
                tr("kvswitch: no preset {preset} (presets: {presets})").format(
                    preset=repr(args.preset), presets=", ".join(presets())
                ),
                file=sys.stderr,
            )
            return 2
        data.update(provider=preset.name, base_url=preset.base_url, url_convention=preset.url_convention)
    for path, value in _collect(args).items():
        target = data
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    headers, _ = _headers(args, args.name, {})
    if headers:
        data["headers"] = headers
    profile = validated_profile(data)
    edit_config([Set(("profiles", args.name), profile_table(profile))], config)
    print(
        tr("added profile {profile} ({url}); make it active with: kvswitch profile use {profile}").format(
            profile=args.name, url=profile.base_url
        )
    )
    return 0


def _edit(args: argparse.Namespace) -> int:
    from kvswitch.config import edit_config, read_config
    from kvswitch.edits import Set

    config = read_config()
    name, prof = config.profile(args.name)
    changes = _collect(args)
    header_edits, dropped = _header_edits(args, name, prof.headers)
    if not changes and not header_edits:
        print(tr("kvswitch: nothing to change (give --FIELD VALUE or --header NAME=VALUE options)"), file=sys.stderr)
        return 2
    edit_config([*(Set(("profiles", name, *path), value) for path, value in changes.items()), *header_edits], config)
    if dropped:
        print(
            tr(
                "kvswitch: note: the clients' files keep {headers} until you remove "
                "it there (kvswitch writes a profile's headers, it never removes a client's)"
            ).format(headers=", ".join(dropped)),
            file=sys.stderr,
        )
    from kvswitch.validate import shell_word, show_name

    active = name == config.model.active_profile
    if active:
        print(
            tr("profile {profile} updated (render it into the clients with: {command})").format(
                profile=show_name(name), command=f"kvswitch profile use {shell_word(name)}"
            )
        )
    else:
        print(tr("profile {profile} updated").format(profile=show_name(name)))
    return 0


def _headers(args: argparse.Namespace, name: str, have: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """``have`` with ``--header``/``--no-header`` applied (names matched without case), and
    the names removed. A bad header is a usage error that never shows its value."""
    from kvswitch.cli._handler import UsageError
    from kvswitch.validate import header_problem, show

    headers = dict(have)

    def spelled(header: str) -> str | None:
        return next((k for k in headers if k.lower() == header.lower()), None)

    for raw in getattr(args, "headers", None) or []:
        header, eq, value = raw.partition("=")
        header, value = header.strip(), value.strip()
        if not eq or not header:
            raise UsageError(
                tr("--header: give NAME=VALUE (got no =)") if not eq else tr("--header: give NAME=VALUE (got no name)")
            )
        problem = header_problem(header, value)
        if problem is not None:
            raise UsageError(f"--header: {problem}")
        headers[spelled(header) or header] = value
    dropped = []
    for header in getattr(args, "no_headers", None) or []:
        old = spelled(header)
        if old is None:
            raise UsageError(
                tr("--no-header: profile {profile} sends no header {header}").format(
                    profile=show(name), header=show(header)
                )
            )
        del headers[old]
        dropped.append(old)
    return headers, dropped


def _header_edits(args: argparse.Namespace, name: str, have: dict[str, str]) -> tuple[list[Any], list[str]]:
    """The config edits of ``--header``/``--no-header``, and the names removed."""
    from kvswitch.edits import Delete, Set

    headers, dropped = _headers(args, name, have)
    if headers == have:
        return [], dropped
    table = ("profiles", name, "headers")
    if not headers:
        return [Delete(table)], dropped
    if not have:
        return [Set(table, headers)], dropped
    edits: list[Any] = [Delete((*table, k)) for k in have if k not in headers]
    edits += [Set((*table, k), v) for k, v in headers.items() if have.get(k) != v]
    return edits, dropped


def _remove(args: argparse.Namespace) -> int:
    from kvswitch.config import edit_config, read_config
    from kvswitch.edits import Delete
    from kvswitch.validate import show_name

    config = read_config()
    name, prof = config.profile(args.name)
    if name == config.model.active_profile:
        print(
            tr("kvswitch: {profile} is the active profile; choose another first (kvswitch profile use)").format(
                profile=show_name(name)
            ),
            file=sys.stderr,
        )
        return 1
    edit_config([Delete(("profiles", name))], config)
    if prof.key == "keyring":
        from kvswitch.errors import KvswitchError
        from kvswitch.keys import delete_key

        try:
            delete_key(name)
        except KvswitchError as exc:
            print(
                tr("kvswitch: profile removed, but its key could not be deleted: {error}").format(error=exc),
                file=sys.stderr,
            )
    print(tr("removed profile {profile}").format(profile=show_name(name)))
    return 0


def _rename(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.validate import show_name

    checked_name(args.new)
    config = read_config()
    _, prof = config.profile(args.old)
    if args.new in config.model.profiles:
        print(tr("kvswitch: profile {profile} exists").format(profile=repr(args.new)), file=sys.stderr)
        return 1
    key = None
    if prof.key == "keyring":
        from kvswitch.keys import get_key

        key = get_key(args.old)
    from kvswitch.config import rename_profile

    rename_profile(config, args.old, args.new)
    if key is not None:
        from kvswitch.keys import delete_key, set_key

        set_key(args.new, key)
        delete_key(args.old)
    print(tr("renamed profile {old} → {new}").format(old=show_name(args.old), new=args.new))
    return 0


@reports("client list")
def _client_list(args: argparse.Namespace) -> int:
    from kvswitch.clients import wants_key
    from kvswitch.config import client_path, read_config

    config = read_config()
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(
            dumps(
                "client list",
                {
                    "clients": [
                        {
                            "path": str(client_path(e)),
                            "kind": e.kind,
                            "name": e.name,
                            "nudge": e.nudge.kind,
                            "write_key": wants_key(e),
                            "allow_key_in_repo": e.allow_key_in_repo,
                            "mode": e.mode,
                            "route": e.route,
                            "exists": client_path(e).exists(),
                        }
                        for e in config.model.clients
                    ]
                },
            )
        )
        return 0
    for entry in config.model.clients:
        flags = [entry.kind, f"nudge={entry.nudge.kind}"]
        if not wants_key(entry):
            flags.append("no-key")
        if entry.allow_key_in_repo:
            flags.append("key-in-repo-allowed")
        if entry.mode is not None:
            flags.append(tr("own mode {mode}").format(mode=entry.mode))
        print(f"{client_path(entry)}  ({', '.join(flags)})")
    return 0


def _client_add(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.errors import UnknownKindError
    from kvswitch.io import read_bytes
    from kvswitch.kinds import detect_kind, get_kind
    from kvswitch.models import ClientEntry

    if args.name is not None:
        checked_name(args.name, "client")
    config = read_config()
    path = args.path.expanduser().absolute()
    exists = path.exists() or path.is_symlink()  # a real client's file may not exist yet
    text = read_bytes(path).decode("utf-8", "replace") if exists else None
    try:
        kind = get_kind(args.kind or detect_kind(path, text))
    except UnknownKindError:
        if not exists:
            read_bytes(path)  # no such file, and its path says nothing: the first is the news
        raise
    if not exists and not kind.real:
        read_bytes(path)  # the article's shapes are created by kvswitch init only
    if not kind.client:
        print(
            tr("kvswitch: {path}: not a client file (it is {product}'s own config)").format(
                path=path, product=kind.product
            ),
            file=sys.stderr,
        )
        return 2
    nudge: dict[str, Any] = {"kind": args.nudge}
    if args.pidfile:
        nudge["pidfile"] = args.pidfile
    if args.nudge == "signal":
        nudge["signal"] = args.signal
    if args.nudge_argv:
        nudge["argv"] = args.nudge_argv
    entry = ClientEntry.model_validate(
        {
            "path": str(path),
            "kind": kind.id,
            **({"name": args.name} if args.name is not None else {}),
            **({"write_key": False} if args.no_key else {"write_key": True} if args.write_key else {}),
            "allow_key_in_repo": args.allow_key_in_repo,
            "nudge": nudge,
        }
    )
    from kvswitch.clients import add_client

    add_client(entry, config)  # refuses a file registered already, under any spelling
    print(tr("registered {path} ({product})").format(path=path, product=kind.product))
    if not exists:
        print(tr("  the file does not exist yet: kvswitch profile use writes it"))
    return 0


def _client_remove(args: argparse.Namespace) -> int:
    from kvswitch.clients import registered
    from kvswitch.config import client_path, edit_config, read_config
    from kvswitch.edits import Delete

    config = read_config()
    path = args.path.expanduser().absolute()
    target = next((e for e in config.model.clients if client_path(e).absolute() == path), None)
    if target is None:
        target = registered(config, path)  # by real path, unless one is registered as spelled here
    for i, entry in enumerate(config.model.clients):
        if entry is target:
            edit_config([Delete(("clients", i))], config)
            print(tr("unregistered {path} (the file is unchanged)").format(path=path))
            return 0
    print(tr("kvswitch: {path} is not a registered client").format(path=path), file=sys.stderr)
    return 1
