"""``kvswitch advise``: mode, chunk size, prefix cache and KV dtype for a workload, with reasons."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register", "render_text"]


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _positive_float(value: str) -> float:
    x = float(value)
    if not x > 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return x


def register(sub: Any) -> None:
    p = sub.add_parser(
        "advise",
        help="recommend merged or split, chunk size, prefix cache and KV dtype, with reasons",
        description="Recommend a mode (merged or split), chunk_size, prefix cache on/off and kv_cache_dtype from "
        "what you know about the workload; every reason cites its source (the article's S-19, S-30…S-32, the "
        "engines reference §7.3). With --from-probe, a measured TTFT ratio whose 95 % interval excludes 1 "
        "decides the mode. Exit 0, or 2 on a usage error or an unreadable probe result.",
    )
    w = p.add_argument_group("workload (leave out what you do not know)")
    w.add_argument("--prompt-tokens", type=_positive_int, metavar="N", help="typical prompt length in tokens")
    w.add_argument("--concurrency", type=_positive_int, metavar="N", help="requests in flight at once")
    w.add_argument("--gpus", type=_positive_int, metavar="N", help="GPUs (or nodes) available")
    w.add_argument("--ttft-slo", type=_positive_float, metavar="MS", help="a hard time-to-first-token target")
    w.add_argument("--prefix-reuse", choices=("high", "low"), help="how much prompts share a prefix")
    w.add_argument("--workload", choices=("chat", "coding", "agent", "batch"))
    p.add_argument("--from-probe", metavar="latest|FILE",
                   help="use a probe result: latest (from the history) or a file from kvswitch probe --format json")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def render_text(advice: Any) -> str:
    """The advice as the CLI prints it."""
    from kvswitch.advise import describe

    chunk = str(advice.chunk_size) if advice.chunk_size is not None else "– (ignored in split mode)"
    decided = ("the measurement" if advice.decided_by == "measurement"
               else "the rules" + (" (not decided by the measurement)" if advice.measurement else ""))
    lines = [
        f"kvswitch advise · {describe(advice.workload)}",
        "",
        f"mode            {advice.mode}",
        f"chunk_size      {chunk}",
        f"prefix cache    {'on' if advice.prefix_cache else 'off'}",
        f"kv_cache_dtype  {advice.kv_cache_dtype}",
        f"decided by      {decided}",
        "",
        "why:",
    ]
    lines += [f"{i:>2}. {r.text} [{r.source}]" for i, r in enumerate(advice.reasons, 1)]
    lines += ["", "next:"] + [f" - {s}" for s in advice.next_steps]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.advise import Workload, advise, evidence_from_report, load_probe

    workload = Workload(
        prompt_tokens=args.prompt_tokens, concurrency=args.concurrency, gpus=args.gpus, ttft_slo_ms=args.ttft_slo,
        prefix_reuse=args.prefix_reuse, workload=args.workload,
    )
    evidence = evidence_from_report(load_probe(args.from_probe)) if args.from_probe else None
    advice = advise(workload, evidence)
    if args.format == "json":
        print(json.dumps(advice.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(advice))
    return 0
