"""``kvswitch lab up|down|status``: real llama.cpp servers in both modes on this machine.

A learning and testing lab, not a production backend: a tiny generated model, a merged
server (chunked prefill, continuous batching), a prefill/decode pair that hands the KV cache
over through slot files, and a router on one URL (``X-Cache-Mode`` header or ``/merged/v1``,
``/split/v1``). Needs the ``lab`` extra: ``pip install 'kvswitch[lab]'``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from kvswitch.i18n import ntr, tr

__all__ = ["register", "started_at"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "lab",
        help=tr("a local llama.cpp lab in both modes (learning and testing, not production)"),
        description=tr(
            "A learning and testing lab, not a production backend. `up` generates a tiny model and starts "
            "llama.cpp's own server (from the xllamacpp wheel) three times — merged (chunked prefill + continuous"
            " batching, n_batch = the chunk size), prefill and decode (the KV cache is handed from one to the "
            "other per request through slot save/restore) — and a router on 127.0.0.1:PORT that routes by the "
            "X-Cache-Mode header or the /merged/v1 and /split/v1 prefixes and counts "
            "kvswitch_lab:kv_handoffs_total in its /metrics. It registers a `lab` profile (made active only when "
            "no profile is), so `kvswitch probe --profile lab` measures both modes. Needs the lab extra: pip "
            "install 'kvswitch[lab]'."
        ),
    )
    lab = p.add_subparsers(dest="lab_command", metavar="ACTION")
    lab.required = True
    u = lab.add_parser(
        "up",
        help=tr("start the lab (a no-op when it is up)"),
        description=tr(
            "Start the merged, prefill and decode servers and the router, wait until all are healthy, "
            "and register the `lab` profile. Exit 0 when the lab is up (or already was), 1 when it could "
            "not start."
        ),
    )
    u.add_argument("--port", type=int, default=None, metavar="PORT", help=tr("the router's port on 127.0.0.1 (18080)"))
    u.add_argument(
        "--preset",
        choices=("tiny", "medium"),
        default="tiny",
        help=tr("model size: tiny (4.3 M parameters, fast) or medium (29 M, a more realistic prefill/decode ratio)"),
    )
    u.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help=tr(
            "the merged server's prefill chunk, n_batch = n_ubatch (default: the lab profile's "
            "merged.chunk_size, else 512)"
        ),
    )
    u.add_argument("--threads", type=int, default=1, metavar="N", help=tr("compute threads per server (1)"))
    u.add_argument(
        "--answer-chars",
        type=int,
        default=None,
        metavar="N",
        help=tr(
            "end every answer after at most N characters (up to 2000) with finish_reason stop, as "
            "a model that has finished does: the tiny model never stops on its own, and coding "
            "clients such as Claude Code and Codex fail a turn whose answer a token limit cut off. "
            "Default: answers run to the request's max_tokens or a full slot, which a probe needs"
        ),
    )
    u.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: what was started, in kvswitch's JSON envelope"),
    )
    u.set_defaults(func=_up)
    d = lab.add_parser(
        "down",
        help=tr("stop the lab's processes, delete its slot files"),
        description=tr(
            "Stop exactly the processes the lab's pidfiles name (a pid is trusted only when /proc shows "
            "the recorded start time and a kvswitch.lab command line; a stale pidfile is reported, never "
            "obeyed), delete the slot files and the pidfiles. Exit 0 when nothing of the lab runs "
            "afterwards."
        ),
    )
    d.set_defaults(func=_down)
    s = lab.add_parser(
        "status",
        help=tr("which lab processes run, their health and URLs"),
        description=tr("Exit 0 when all four processes run and answer /health, 1 otherwise."),
    )
    s.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the processes and URLs in kvswitch's JSON envelope"),
    )
    s.set_defaults(func=_status)


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))


def started_at(ticks: int | None) -> float | None:
    """A process's start (clock ticks since boot, as ``/proc/PID/stat`` gives it) as Unix
    seconds, or None where it cannot be known."""
    if ticks is None:
        return None
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def _status_data(st: Any) -> dict[str, Any]:
    """The lab's status as JSON data: each process with its start time (ISO 8601 UTC)."""
    from kvswitch.cli.envelope import iso_time

    data: dict[str, Any] = st.as_dict()
    for proc, shown in zip(st.processes, data["processes"], strict=True):
        running = proc.state == "running"
        shown["started_at"] = iso_time(started_at(proc.start_time)) if running else None
    return data


def _up(args: argparse.Namespace) -> int:
    import sys

    from kvswitch.lab.manage import DEFAULT_PORT, up

    result = up(
        port=args.port or DEFAULT_PORT,
        preset=args.preset,
        chunk_size=args.chunk_size,
        threads=args.threads,
        answer_chars=args.answer_chars,
    )
    st = result.status
    code = 1 if result.profile_error else 0
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(
            dumps(
                "lab up",
                {
                    "already_up": result.already_up,
                    "model": str(result.model) if result.model else None,
                    "model_generated": result.model_generated,
                    "profile": result.profile,
                    "profile_active": result.profile_active,
                    "activated": result.activated,
                    "profile_error": result.profile_error,
                    "notes": result.notes,
                    "cleared": [p.as_dict() for p in result.cleared],
                    "status": _status_data(st),
                },
                ok=code == 0,
            )
        )
    else:
        for p in result.cleared:
            print(tr("removed the {role} pidfile: {reason}").format(role=p.role, reason=p.reason))
        if result.already_up:
            print(tr("the lab is already up (router pid {pid}); nothing started").format(pid=_pid(st, "router")))
        else:
            if result.model_generated:
                print(tr("generated the model {path}").format(path=result.model))
            print(tr("the kvswitch lab is up (a learning and testing lab, not a production backend)"))
        _print_status(st)
        if result.profile:
            if result.activated:
                state = tr("and made active (no profile was)")
            elif result.profile_active:
                state = tr("(the active profile)")
            else:
                state = tr("(not active; kvswitch profile use lab)")
            print(tr("profile lab {change} {state}").format(change=_profile_change(result.profile), state=state))
        for note in result.notes:
            print(tr("note: {note}").format(note=note))
    if result.profile_error:
        print(
            tr("kvswitch: the lab runs, but the lab profile could not be registered: {reason}").format(
                reason=result.profile_error
            ),
            file=sys.stderr,
        )
    return code


def _profile_change(change: str) -> str:
    return {"added": tr("added"), "updated": tr("updated"), "unchanged": tr("unchanged")}.get(change, change)


def _state(state: str) -> str:
    """How a process's state reads in text (JSON keeps ``state`` as it is)."""
    return {"running": tr("running"), "gone": tr("GONE"), "stale": tr("STALE")}.get(state, state)


def _down(args: argparse.Namespace) -> int:
    from kvswitch.lab.manage import describe, down

    result = down()
    if not (result.was_up or result.stale or result.gone or result.failed):
        print(tr("the lab is not running"))
        return 0
    if result.stopped:
        print(tr("stopped {processes}").format(processes=describe(result.stopped)))
    if result.killed:
        print(tr("killed (no exit after SIGTERM) {processes}").format(processes=describe(result.killed)))
    for p in result.gone:
        print(tr("{role}: {reason}; pidfile removed").format(role=p.role, reason=p.reason or tr("already gone")))
    for p in result.stale:
        print(tr("{role}: stale pidfile, not obeyed: {reason}; pidfile removed").format(role=p.role, reason=p.reason))
    for p in result.failed:
        print(
            tr("{role} (pid {pid}): could not be stopped: {reason}").format(
                role=p.role, pid=p.pid, reason=p.reason or tr("still running")
            )
        )
    if result.slot_files_removed:
        print(
            ntr("deleted {count} slot file", "deleted {count} slot files", result.slot_files_removed).format(
                count=result.slot_files_removed
            )
        )
    return 1 if result.failed else 0


def _status(args: argparse.Namespace) -> int:
    from kvswitch.lab.manage import status

    st = status()
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(dumps("lab status", _status_data(st), ok=st.healthy))
    elif st.empty:
        print(tr("the lab is not running (kvswitch lab up)"))
    else:
        _print_status(st)
    return 0 if st.healthy else 1


def _pid(st: Any, role: str) -> Any:
    return next((p.pid for p in st.processes if p.role == role), "?")


def _print_status(st: Any) -> None:
    from kvswitch.cli.probe import pad

    if st.preset:
        answers = tr(" · answers end after {count} characters").format(count=st.answer_chars) if st.answer_chars else ""
        print(
            tr("model {preset} · merged chunk size {chunk}{answers} · {folder}").format(
                preset=st.preset, chunk=st.chunk_size, answers=answers, folder=st.directory
            )
        )
    for p in st.processes:
        health = {True: tr("healthy"), False: tr("NOT healthy"), None: ""}[p.healthy]
        where = p.url or ""
        cpus = tr(" · cpus {cpus}").format(cpus=",".join(map(str, p.cpus))) if p.cpus else ""
        state = (
            _state(p.state)
            if p.state == "running"
            else tr("{state}: {reason}").format(state=_state(p.state), reason=p.reason)
        )
        line = f"  {p.role:<8} pid {p.pid!s:<8} {pad(state, 8, left=True)} {pad(health, 12, left=True)} {where}"
        print(line.rstrip() + cpus)
    urls = st.urls()
    if "base_url" in urls:
        router = pad(tr("router"), 8, left=True)
        print(f"{router} {urls['base_url']}  (X-Cache-Mode: merged|split)")
        print(f"merged   {urls['merged']}")
        print(f"split    {urls['split']}")
        print(tr("metrics  {url} · hand-offs {handoffs}").format(url=urls["metrics"], handoffs=urls["handoffs"]))
