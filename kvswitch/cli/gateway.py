"""``kvswitch gateway [run] [--port N] [--listen ADDR] [--profile P] [--detach]`` and
``kvswitch gateway status|stop|pin|unpin``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from kvswitch.i18n import ntr, tr

__all__ = ["register"]


def _serve_options(p: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options of ``run``; on the ``gateway`` parser itself too (``kvswitch gateway --port 0``).
    On ``run`` they default to nothing, so that they do not hide the ones given before it."""
    unset: Any = None if defaults else argparse.SUPPRESS
    p.add_argument(
        "--port",
        type=int,
        metavar="N",
        help=tr("TCP port (default: the config's gateway.port, 18090; 0 takes any free port)"),
        default=unset,
    )
    p.add_argument(
        "--listen",
        metavar="ADDR",
        help=tr(
            "address to listen on (default 127.0.0.1); any other "
            "than a loopback address lets other machines reach it, with the token as the only guard"
        ),
        default=unset,
    )
    p.add_argument(
        "--profile",
        metavar="NAME",
        help=tr(
            "the profile whose upstreams it serves (default: the "
            "active profile, followed when kvswitch profile use changes it)"
        ),
        default=unset,
    )
    p.add_argument(
        "--default-route",
        choices=("mode", "auto"),
        default=unset,
        help=tr(
            "requests that ask for no mode: the current mode, or auto, decided per request from "
            "the new prompt tokens and the load (default: the config's gateway.default_route, "
            "mode)"
        ),
    )
    p.add_argument(
        "--translate",
        choices=("auto", "always", "never"),
        default=unset,
        help=tr(
            "Messages and Responses requests over Chat Completions: where the upstream lacks them "
            "(auto), always, or never (default: the config's gateway.translate, auto)"
        ),
    )
    p.add_argument(
        "--detach",
        action="store_true",
        help=tr(
            "start it in the background, wait until it answers, "
            "print its URL and pid (its output goes to the gateway.log in kvswitch's log folder)"
        ),
        default=False if defaults else argparse.SUPPRESS,
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gateway",
        help=tr("one local endpoint for pinned clients; merged ↔ split flipped live"),
        description=tr(
            "kvswitch's local gateway: one address (http://127.0.0.1:18090) for the clients you pin to it "
            "(kvswitch gateway pin). It forwards each request to the active profile's merged or split URL — the "
            "/merged/… or /split/… path prefix, else the X-Cache-Mode header, else the gateway's current mode, "
            "which kvswitch switch changes at once for new requests (streams in flight finish where they began), "
            "so pinned clients need no file change and no restart. Every route but /health needs the local token."
            " Without an action it runs in the foreground (run)."
        ),
    )
    _serve_options(p, defaults=True)
    p.set_defaults(func=_run)
    g = p.add_subparsers(dest="gateway_command", metavar="ACTION")
    r = g.add_parser(
        "run",
        help=tr("serve in the foreground (the default action)"),
        description=tr(
            "Serve until Ctrl-C or SIGTERM (in-flight streams get up to 10 s to finish), or with "
            "--detach in the background. Exit 1 when a gateway already runs for this kvswitch home, the "
            "port is taken, or there is no token or profile to serve."
        ),
    )
    _serve_options(r, defaults=False)
    r.set_defaults(func=_run)
    s = g.add_parser(
        "status",
        help=tr("whether it runs: URL, pid, mode, upstreams, requests, pinned clients"),
        description=tr("Exit 0 when a gateway runs for this kvswitch home, 1 when none does."),
    )
    s.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the gateway's state in kvswitch's JSON envelope"),
    )
    s.set_defaults(func=_status)
    st = g.add_parser(
        "stop",
        help=tr("stop the running gateway (in-flight streams get up to 10 s to finish)"),
        description=tr(
            "Ask the running gateway to stop over its control socket and wait for its end. A gateway "
            "that does not answer gets SIGTERM — only when its pid still is the recorded kvswitch "
            "gateway process. Files left by one that was killed are removed. Exit 0 when no gateway "
            "runs afterwards."
        ),
    )
    st.set_defaults(func=_stop)
    tk = g.add_parser(
        "token",
        help=tr("the local token pinned clients send (masked unless --reveal)"),
        description=tr(
            "Print the gateway's local token, masked unless --reveal: for clients that read it from a "
            'variable, export KVSWITCH_GATEWAY_TOKEN="$(kvswitch gateway token --reveal)". It is not '
            "your provider's key, which the gateway keeps. Exit 1 when there is none yet (kvswitch "
            "gateway pin or kvswitch gateway run makes it)."
        ),
    )
    tk.add_argument("--reveal", action="store_true", help=tr("print the whole token"))
    tk.set_defaults(func=_token)
    for name, short, what in (
        (
            "pin",
            tr("write the gateway's URL and the local token into the clients' files (backed up)"),
            tr(
                "Write the gateway's URL and the local token into the clients' files (backed up): then kvswitch "
                "switch changes their mode without touching their files. Default: every registered client."
            ),
        ),
        (
            "unpin",
            tr("write the direct form back into the clients' files"),
            tr(
                "Write the direct form back into the clients' files: the mode's own URL. Default: every registered "
                "client."
            ),
        ),
    ):
        pp = g.add_parser(name, help=short, description=what)
        pp.add_argument("clients", nargs="*", metavar="CLIENT", help=tr("a registered client's name, kind or file"))
        pp.add_argument("--dry-run", action="store_true", help=tr("print the unified diff, write nothing"))
        pp.set_defaults(func=_pin if name == "pin" else _unpin)


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))


# -- run ------------------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    from kvswitch.addresses import is_loopback_host

    if args.port is not None and not 0 <= args.port <= 65535:
        from kvswitch.cli._handler import UsageError

        raise UsageError(tr("--port {port} is not a TCP port (0 to 65535)").format(port=args.port))
    if args.listen is not None and not is_loopback_host(args.listen):
        print(
            tr(
                "kvswitch: warning: listening on {address}: other machines can reach the gateway; the local "
                "token is then the only guard"
            ).format(address=args.listen),
            file=sys.stderr,
        )
    if args.detach:
        return _detach(args)
    from kvswitch.config import read_config
    from kvswitch.gateway.process import serve
    from kvswitch.gateway.settings import settings_from_config

    profile, port, listen = args.profile, args.port, args.listen
    route, translate = getattr(args, "default_route", None), getattr(args, "translate", None)

    def settings() -> Any:
        return settings_from_config(
            read_config(), profile=profile, port=port, listen=listen, default_route=route, translate=translate
        )

    def ready(info: Any) -> None:
        print(
            tr("kvswitch gateway on {url} (profile {profile}, mode {mode}); Ctrl-C stops it").format(
                url=info.url, profile=info.profile, mode=info.mode
            ),
            flush=True,
        )

    serve(settings, on_ready=ready)
    print(tr("kvswitch gateway stopped"), flush=True)
    return 0


def _detach(args: argparse.Namespace) -> int:
    from kvswitch.gateway.process import detach, log_path

    argv: list[str] = []
    for option in ("port", "listen", "profile", "default_route", "translate"):
        value = getattr(args, option, None)
        if value is not None:
            argv += [f"--{option.replace('_', '-')}", str(value)]
    info = detach(argv)
    print(
        tr(
            "kvswitch gateway on {url} (pid {pid}, profile {profile}, mode {mode}); log {log}; kvswitch gateway "
            "stop stops it"
        ).format(url=info.url, pid=info.pid, profile=info.profile, mode=info.mode, log=log_path())
    )
    return 0


# -- status and stop ---------------------------------------------------------------------------------------
def _pinned() -> list[str]:
    """How messages call the clients pinned to the gateway (none without a config)."""
    from kvswitch.config import existing_config

    config = existing_config()
    if config is None:
        return []
    return [c.name or c.path for c in config.model.clients if c.route == "gateway"]


def _status(args: argparse.Namespace) -> int:
    from kvswitch.gateway.control import running

    info = running()
    pinned = _pinned()
    if args.format == "json":
        from kvswitch.cli.envelope import dumps, iso_time

        body: dict[str, Any] = {"running": info is not None, "pinned": pinned}
        if info is not None:
            body.update(info.as_dict())
            body["started"] = iso_time(info.started)
        print(dumps("gateway status", body, ok=info is not None))
        return 0 if info is not None else 1
    if info is None:
        print(tr("the gateway is not running (kvswitch gateway --detach starts it)"))
        if pinned:
            print(tr("pinned clients, which need it: {clients}").format(clients=", ".join(pinned)))
        return 1
    age = tr(" · up {age}").format(age=_age(time.time() - info.started)) if info.started else ""
    print(tr("kvswitch gateway on {url} (pid {pid}){age}").format(url=info.url, pid=info.pid, age=age))
    rows = [
        (
            tr("mode"),
            tr("{mode} (requests without a /merged or /split prefix or an X-Cache-Mode header)").format(mode=info.mode),
        ),
        (tr("profile"), info.profile or tr("(upstreams given outright)")),
        *((mode, url) for mode, url in info.upstreams.items()),
    ]
    counts = ", ".join(f"{m} {n}" for m, n in sorted(info.requests.items())) or tr("none yet")
    rows.append((tr("in flight"), tr("{count} · requests: {counts}").format(count=info.in_flight, counts=counts)))
    rows.append((tr("pinned"), ", ".join(pinned) if pinned else tr("none (kvswitch gateway pin)")))
    from kvswitch.cli.probe import pad

    for label, value in rows:
        print(f"  {pad(label, 9, left=True)} {value}")
    return 0


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return tr("{seconds} s").format(seconds=seconds)
    if seconds < 7200:
        return tr("{minutes} min").format(minutes=seconds // 60)
    return tr("{hours} h {minutes} min").format(hours=seconds // 3600, minutes=seconds % 3600 // 60)


def _stop(args: argparse.Namespace) -> int:
    from kvswitch.gateway.control import stop

    info = stop()
    if info is None:
        print(tr("the gateway is not running"))
    else:
        print(tr("stopped the gateway at {url} (pid {pid})").format(url=info.url, pid=info.pid))
    return 0


def _token(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.gateway.token import load_token
    from kvswitch.redact import mask

    token = load_token(read_config())
    if token is None:
        print(
            tr("kvswitch: the gateway has no token yet (kvswitch gateway pin or kvswitch gateway run makes it)"),
            file=sys.stderr,
        )
        return 1
    print(token if args.reveal else mask(token))
    return 0


# -- pin and unpin ------------------------------------------------------------------------------------------
def _pin(args: argparse.Namespace) -> int:
    from kvswitch.gateway.pinning import pin

    return _report(args, pin(args.clients or None, dry_run=args.dry_run), pinned=True)


def _unpin(args: argparse.Namespace) -> int:
    from kvswitch.gateway.pinning import unpin

    return _report(args, unpin(args.clients or None, dry_run=args.dry_run), pinned=False)


def _report(args: argparse.Namespace, changes: list[Any], *, pinned: bool) -> int:
    from kvswitch.cli.reporters import applied_lines, change_lines, running_warnings

    if args.dry_run:
        for line in change_lines(changes, dry_run=True):
            print(line, end="" if line.endswith("\n") else "\n")
    else:
        from kvswitch.clients import nudge_changed

        for line in applied_lines(changes, nudge_changed(changes)):
            print(line)
        for line in running_warnings(changes):
            print(tr("kvswitch: warning: {message}").format(message=line), file=sys.stderr)
        n = sum(1 for c in changes if c.changed)
        print(
            ntr("pinned {count} client", "pinned {count} clients", n).format(count=n)
            if pinned
            else ntr("unpinned {count} client", "unpinned {count} clients", n).format(count=n)
        )
    if pinned:
        for line in _token_exports(changes, dry_run=args.dry_run):
            print(line)
        if not args.dry_run:
            _hint_start()
    return 0


def _token_exports(changes: list[Any], *, dry_run: bool) -> list[str]:
    """For pinned clients that read the token from a variable (Codex, OpenCode): the variable,
    and the line that sets it with the token masked."""
    from kvswitch.config import client_path, read_config
    from kvswitch.gateway.pinning import reads_token_variable
    from kvswitch.gateway.token import load_token, token_variable
    from kvswitch.kinds import get_kind
    from kvswitch.redact import mask

    config = read_config()
    paths = {c.path for c in changes}
    who = [
        e.name or get_kind(e.kind).product
        for e in config.model.clients
        if (e.route == "gateway" or dry_run) and client_path(e) in paths and reads_token_variable(config, e)
    ]
    if not who:
        return []
    name = token_variable(config)
    token = load_token(config)
    clients = ", ".join(who)
    if config.model.gateway.token != "keyring":
        state = tr("set here") if os.environ.get(name) else tr("not set here: export {name}=…").format(name=name)
        return [
            ntr(
                "{clients} reads the gateway's token from ${name} ({state})",
                "{clients} read the gateway's token from ${name} ({state})",
                len(who),
            ).format(clients=clients, name=name, state=state)
        ]
    line = (
        f'export {name}="$(kvswitch gateway token --reveal)"   # {mask(token)}'
        if token
        else tr("export {name}=… (kvswitch gateway pin makes the token)").format(name=name)
    )
    return [
        ntr(
            "{clients} reads the gateway's token from ${name}; set it where you start it:",
            "{clients} read the gateway's token from ${name}; set it where you start them:",
            len(who),
        ).format(clients=clients, name=name),
        f"  {line}",
    ]


def _hint_start() -> None:
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import running

    try:
        info = running()
    except KvswitchError:
        return
    if info is None:
        print(tr("the gateway is not running: start it with kvswitch gateway --detach"))
    else:
        print(tr("the gateway at {url} serves them (mode {mode})").format(url=info.url, mode=info.mode))
