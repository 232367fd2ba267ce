"""``kvswitch gateway [run] [--port N] [--listen ADDR] [--profile P] [--detach]`` and
``kvswitch gateway status|stop|pin|unpin``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

__all__ = ["register"]

DESCRIPTION = (
    "kvswitch's local gateway: one address (http://127.0.0.1:18090) for the clients you pin to it "
    "(kvswitch gateway pin). It forwards each request to the active profile's merged or split URL — "
    "the /merged/… or /split/… path prefix, else the X-Cache-Mode header, else the gateway's current "
    "mode, which kvswitch switch changes at once for new requests (streams in flight finish where they "
    "began), so pinned clients need no file change and no restart. Every route but /health needs the "
    "local token. Without an action it runs in the foreground (run)."
)


def _serve_options(p: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options of ``run``; on the ``gateway`` parser itself too (``kvswitch gateway --port 0``).
    On ``run`` they default to nothing, so that they do not hide the ones given before it."""
    unset: Any = None if defaults else argparse.SUPPRESS
    p.add_argument("--port", type=int, metavar="N", help="TCP port (default: the config's gateway.port, 18090; "
                   "0 takes any free port)", default=unset)
    p.add_argument("--listen", metavar="ADDR", help="address to listen on (default 127.0.0.1); any other "
                   "than a loopback address lets other machines reach it, with the token as the only guard",
                   default=unset)
    p.add_argument("--profile", metavar="NAME", help="the profile whose upstreams it serves (default: the "
                   "active profile, followed when kvswitch profile use changes it)", default=unset)
    p.add_argument("--default-route", choices=("mode", "auto"), default=unset,
                   help="requests that ask for no mode: the current mode, or auto, decided per request from "
                        "the new prompt tokens and the load (default: the config's gateway.default_route, mode)")
    p.add_argument("--translate", choices=("auto", "always", "never"), default=unset,
                   help="Messages and Responses requests over Chat Completions: where the upstream lacks them "
                        "(auto), always, or never (default: the config's gateway.translate, auto)")
    p.add_argument("--detach", action="store_true", help="start it in the background, wait until it answers, "
                   "print its URL and pid (its output goes to the gateway.log in kvswitch's log folder)",
                   default=False if defaults else argparse.SUPPRESS)


def register(sub: Any) -> None:
    p = sub.add_parser("gateway", help="one local endpoint for pinned clients; merged ↔ split flipped live",
                       description=DESCRIPTION)
    _serve_options(p, defaults=True)
    p.set_defaults(func=_run)
    g = p.add_subparsers(dest="gateway_command", metavar="ACTION")
    r = g.add_parser(
        "run", help="serve in the foreground (the default action)",
        description="Serve until Ctrl-C or SIGTERM (in-flight streams get up to 10 s to finish), or with "
        "--detach in the background. Exit 1 when a gateway already runs for this kvswitch home, the port is "
        "taken, or there is no token or profile to serve.",
    )
    _serve_options(r, defaults=False)
    r.set_defaults(func=_run)
    s = g.add_parser(
        "status", help="whether it runs: URL, pid, mode, upstreams, requests, pinned clients",
        description="Exit 0 when a gateway runs for this kvswitch home, 1 when none does.",
    )
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.set_defaults(func=_status)
    st = g.add_parser(
        "stop", help="stop the running gateway (in-flight streams get up to 10 s to finish)",
        description="Ask the running gateway to stop over its control socket and wait for its end. A "
        "gateway that does not answer gets SIGTERM — only when its pid still is the recorded kvswitch "
        "gateway process. Files left by one that was killed are removed. Exit 0 when no gateway runs "
        "afterwards.",
    )
    st.set_defaults(func=_stop)
    tk = g.add_parser(
        "token", help="the local token pinned clients send (masked unless --reveal)",
        description="Print the gateway's local token, masked unless --reveal: for clients that read it "
        "from a variable, export KVSWITCH_GATEWAY_TOKEN=\"$(kvswitch gateway token --reveal)\". It is not "
        "your provider's key, which the gateway keeps. Exit 1 when there is none yet (kvswitch gateway pin "
        "or kvswitch gateway run makes it).",
    )
    tk.add_argument("--reveal", action="store_true", help="print the whole token")
    tk.set_defaults(func=_token)
    for name, verb, what in (
        ("pin", "pin", "write the gateway's URL and the local token into the clients' files (backed up): "
         "then kvswitch switch changes their mode without touching their files"),
        ("unpin", "unpin", "write the direct form back into the clients' files: the mode's own URL"),
    ):
        pp = g.add_parser(name, help=what.split(":")[0],
                          description=f"{what[0].upper()}{what[1:]}. Default: every registered client.")
        pp.add_argument("clients", nargs="*", metavar="CLIENT", help="a registered client's name, kind or file")
        pp.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
        pp.set_defaults(func=_pin if verb == "pin" else _unpin)


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))


# -- run ------------------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    from kvswitch.addresses import is_loopback_host

    if args.port is not None and not 0 <= args.port <= 65535:
        from kvswitch.cli._handler import UsageError

        raise UsageError(f"--port {args.port} is not a TCP port (0 to 65535)")
    if args.listen is not None and not is_loopback_host(args.listen):
        print(f"kvswitch: warning: listening on {args.listen}: other machines can reach the gateway; "
              "the local token is then the only guard", file=sys.stderr)
    if args.detach:
        return _detach(args)
    from kvswitch.config import read_config
    from kvswitch.gateway.process import serve
    from kvswitch.gateway.settings import settings_from_config

    profile, port, listen = args.profile, args.port, args.listen
    route, translate = getattr(args, "default_route", None), getattr(args, "translate", None)

    def settings() -> Any:
        return settings_from_config(read_config(), profile=profile, port=port, listen=listen,
                                    default_route=route, translate=translate)

    def ready(info: Any) -> None:
        print(f"kvswitch gateway on {info.url} (profile {info.profile}, mode {info.mode}); Ctrl-C stops it",
              flush=True)

    serve(settings, on_ready=ready)
    print("kvswitch gateway stopped", flush=True)
    return 0


def _detach(args: argparse.Namespace) -> int:
    from kvswitch.gateway.process import detach, log_path

    argv: list[str] = []
    for option in ("port", "listen", "profile", "default_route", "translate"):
        value = getattr(args, option, None)
        if value is not None:
            argv += [f"--{option.replace('_', '-')}", str(value)]
    info = detach(argv)
    print(f"kvswitch gateway on {info.url} (pid {info.pid}, profile {info.profile}, mode {info.mode}); "
          f"log {log_path()}; kvswitch gateway stop stops it")
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
        body: dict[str, Any] = {"running": info is not None, "pinned": pinned}
        if info is not None:
            body.update(info.as_dict())
        print(json.dumps(body, indent=2))
        return 0 if info is not None else 1
    if info is None:
        print("the gateway is not running (kvswitch gateway --detach starts it)")
        if pinned:
            print(f"pinned clients, which need it: {', '.join(pinned)}")
        return 1
    age = f" · up {_age(time.time() - info.started)}" if info.started else ""
    print(f"kvswitch gateway on {info.url} (pid {info.pid}){age}")
    print(f"  mode      {info.mode} (requests without a /merged or /split prefix or an X-Cache-Mode header)")
    print(f"  profile   {info.profile or '(upstreams given outright)'}")
    for mode, url in info.upstreams.items():
        print(f"  {mode:<9} {url}")
    counts = ", ".join(f"{m} {n}" for m, n in sorted(info.requests.items())) or "none yet"
    print(f"  in flight {info.in_flight} · requests: {counts}")
    print(f"  pinned    {', '.join(pinned) if pinned else 'none (kvswitch gateway pin)'}")
    return 0


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _stop(args: argparse.Namespace) -> int:
    from kvswitch.gateway.control import stop

    info = stop()
    if info is None:
        print("the gateway is not running")
    else:
        print(f"stopped the gateway at {info.url} (pid {info.pid})")
    return 0


def _token(args: argparse.Namespace) -> int:
    from kvswitch.config import read_config
    from kvswitch.gateway.token import load_token
    from kvswitch.redact import mask

    token = load_token(read_config())
    if token is None:
        print("kvswitch: the gateway has no token yet (kvswitch gateway pin or kvswitch gateway run "
              "makes it)", file=sys.stderr)
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
            print(f"kvswitch: warning: {line}", file=sys.stderr)
        n = sum(1 for c in changes if c.changed)
        print(f"{'pinned' if pinned else 'unpinned'} {n} {'client' if n == 1 else 'clients'}")
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
    who = [e.name or get_kind(e.kind).product for e in config.model.clients
           if (e.route == "gateway" or dry_run) and client_path(e) in paths and reads_token_variable(config, e)]
    if not who:
        return []
    name = token_variable(config)
    token = load_token(config)
    if config.model.gateway.token != "keyring":
        state = "set here" if os.environ.get(name) else f"not set here: export {name}=…"
        return [f"{', '.join(who)} read{'s' if len(who) == 1 else ''} the gateway's token from ${name} ({state})"]
    line = (f'export {name}="$(kvswitch gateway token --reveal)"   # {mask(token)}' if token
            else f"export {name}=… (kvswitch gateway pin makes the token)")
    return [f"{', '.join(who)} read{'s' if len(who) == 1 else ''} the gateway's token from ${name}; "
            f"set it where you start {'it' if len(who) == 1 else 'them'}:", f"  {line}"]


def _hint_start() -> None:
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import running

    try:
        info = running()
    except KvswitchError:
        return
    if info is None:
        print("the gateway is not running: start it with kvswitch gateway --detach")
    else:
        print(f"the gateway at {info.url} serves them (mode {info.mode})")
