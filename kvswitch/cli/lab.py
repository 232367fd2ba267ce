"""``kvswitch lab up|down|status``: real llama.cpp servers in both modes on this machine.

A learning and testing lab, not a production backend: a tiny generated model, a merged
server (chunked prefill, continuous batching), a prefill/decode pair that hands the KV cache
over through slot files, and a router on one URL (``X-Cache-Mode`` header or ``/merged/v1``,
``/split/v1``). Needs the ``lab`` extra: ``pip install 'kvswitch[lab]'``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register"]

DESCRIPTION = (
    "A learning and testing lab, not a production backend. `up` generates a tiny model and starts llama.cpp's "
    "own server (from the xllamacpp wheel) three times — merged (chunked prefill + continuous batching, n_batch "
    "= the chunk size), prefill and decode (the KV cache is handed from one to the other per request through "
    "slot save/restore) — and a router on 127.0.0.1:PORT that routes by the X-Cache-Mode header or the "
    "/merged/v1 and /split/v1 prefixes and counts kvswitch_lab:kv_handoffs_total in its /metrics. It registers "
    "a `lab` profile (made active only when no profile is), so `kvswitch probe --profile lab` measures both "
    "modes. Needs the lab extra: pip install 'kvswitch[lab]'."
)


def register(sub: Any) -> None:
    p = sub.add_parser("lab", help="a local llama.cpp lab in both modes (learning and testing, not production)",
                       description=DESCRIPTION)
    lab = p.add_subparsers(dest="lab_command", metavar="ACTION")
    lab.required = True
    u = lab.add_parser(
        "up", help="start the lab (a no-op when it is up)",
        description="Start the merged, prefill and decode servers and the router, wait until all are healthy, "
        "and register the `lab` profile. Exit 0 when the lab is up (or already was), 1 when it could not start.",
    )
    u.add_argument("--port", type=int, default=None, metavar="PORT", help="the router's port on 127.0.0.1 (18080)")
    u.add_argument("--preset", choices=("tiny", "medium"), default="tiny",
                   help="model size: tiny (4.3 M parameters, fast) or medium (29 M, a more realistic "
                   "prefill/decode ratio)")
    u.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help="the merged server's prefill chunk, n_batch = n_ubatch (default: the lab profile's "
                   "merged.chunk_size, else 512)")
    u.add_argument("--threads", type=int, default=1, metavar="N", help="compute threads per server (1)")
    u.add_argument("--answer-chars", type=int, default=None, metavar="N",
                   help="end every answer after at most N characters (up to 2000) with finish_reason stop, as a "
                   "model that has finished does: the tiny model never stops on its own, and coding clients "
                   "such as Claude Code and Codex fail a turn whose answer a token limit cut off. Default: "
                   "answers run to the request's max_tokens or a full slot, which a probe needs")
    u.add_argument("--format", choices=("text", "json"), default="text")
    u.set_defaults(func=_up)
    d = lab.add_parser(
        "down", help="stop the lab's processes, delete its slot files",
        description="Stop exactly the processes the lab's pidfiles name (a pid is trusted only when /proc shows "
        "the recorded start time and a kvswitch.lab command line; a stale pidfile is reported, never obeyed), "
        "delete the slot files and the pidfiles. Exit 0 when nothing of the lab runs afterwards.",
    )
    d.set_defaults(func=_down)
    s = lab.add_parser(
        "status", help="which lab processes run, their health and URLs",
        description="Exit 0 when all four processes run and answer /health, 1 otherwise.",
    )
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.set_defaults(func=_status)


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))


def _up(args: argparse.Namespace) -> int:
    import sys

    from kvswitch.lab.manage import DEFAULT_PORT, up

    result = up(port=args.port or DEFAULT_PORT, preset=args.preset, chunk_size=args.chunk_size,
                threads=args.threads, answer_chars=args.answer_chars)
    st = result.status
    if args.format == "json":
        print(json.dumps({
            "already_up": result.already_up, "model": str(result.model) if result.model else None,
            "model_generated": result.model_generated, "profile": result.profile,
            "profile_active": result.profile_active, "activated": result.activated,
            "profile_error": result.profile_error, "notes": result.notes,
            "cleared": [p.as_dict() for p in result.cleared], "status": st.as_dict(),
        }, indent=2))
    else:
        for p in result.cleared:
            print(f"removed the {p.role} pidfile: {p.reason}")
        if result.already_up:
            print(f"the lab is already up (router pid {_pid(st, 'router')}); nothing started")
        else:
            if result.model_generated:
                print(f"generated the model {result.model}")
            print("the kvswitch lab is up (a learning and testing lab, not a production backend)")
        _print_status(st)
        if result.profile:
            if result.activated:
                state = "and made active (no profile was)"
            elif result.profile_active:
                state = "(the active profile)"
            else:
                state = "(not active; kvswitch profile use lab)"
            print(f"profile lab {result.profile} {state}")
        for note in result.notes:
            print(f"note: {note}")
    if result.profile_error:
        print(f"kvswitch: the lab runs, but the lab profile could not be registered: {result.profile_error}",
              file=sys.stderr)
        return 1
    return 0


def _down(args: argparse.Namespace) -> int:
    from kvswitch.lab.manage import describe, down

    result = down()
    if not (result.was_up or result.stale or result.gone or result.failed):
        print("the lab is not running")
        return 0
    if result.stopped:
        print(f"stopped {describe(result.stopped)}")
    if result.killed:
        print(f"killed (no exit after SIGTERM) {describe(result.killed)}")
    for p in result.gone:
        print(f"{p.role}: {p.reason or 'already gone'}; pidfile removed")
    for p in result.stale:
        print(f"{p.role}: stale pidfile, not obeyed: {p.reason}; pidfile removed")
    for p in result.failed:
        print(f"{p.role} (pid {p.pid}): could not be stopped: {p.reason or 'still running'}")
    if result.slot_files_removed:
        print(f"deleted {result.slot_files_removed} slot file(s)")
    return 1 if result.failed else 0


def _status(args: argparse.Namespace) -> int:
    from kvswitch.lab.manage import status

    st = status()
    if args.format == "json":
        print(json.dumps(st.as_dict(), indent=2))
    elif st.empty:
        print("the lab is not running (kvswitch lab up)")
    else:
        _print_status(st)
    return 0 if st.healthy else 1


def _pid(st: Any, role: str) -> Any:
    return next((p.pid for p in st.processes if p.role == role), "?")


def _print_status(st: Any) -> None:
    if st.preset:
        answers = f" · answers end after {st.answer_chars} characters" if st.answer_chars else ""
        print(f"model {st.preset} · merged chunk size {st.chunk_size}{answers} · {st.directory}")
    for p in st.processes:
        health = {True: "healthy", False: "NOT healthy", None: ""}[p.healthy]
        where = p.url or ""
        cpus = f" · cpus {','.join(map(str, p.cpus))}" if p.cpus else ""
        state = p.state if p.state == "running" else f"{p.state.upper()}: {p.reason}"
        print(f"  {p.role:<8} pid {p.pid!s:<8} {state:<8} {health:<12} {where}{cpus}")
    urls = st.urls()
    if "base_url" in urls:
        print(f"router   {urls['base_url']}  (X-Cache-Mode: merged|split)")
        print(f"merged   {urls['merged']}")
        print(f"split    {urls['split']}")
        print(f"metrics  {urls['metrics']} · hand-offs {urls['handoffs']}")
