"""``kvswitch advise``: mode, chunk size, prefix cache and KV dtype for a workload, with reasons."""

from __future__ import annotations

import argparse
from typing import Any

from kvswitch.i18n import tr

__all__ = ["register", "render_text"]


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(tr("must be at least 1"))
    return n


def _positive_float(value: str) -> float:
    x = float(value)
    if not x > 0:
        raise argparse.ArgumentTypeError(tr("must be above 0"))
    return x


def register(sub: Any) -> None:
    p = sub.add_parser(
        "advise",
        help=tr("recommend merged or split, chunk size, prefix cache and KV dtype, with reasons"),
        description=tr(
            "Recommend a mode (merged or split), chunk_size, prefix cache on/off and kv_cache_dtype from what you "
            "know about the workload; every reason says where to read more (docs/background.md). With "
            "--from-probe, a measured TTFT ratio whose 95 % interval excludes 1 decides the mode. Exit 0, or 2 on "
            "a usage error or an unreadable probe result."
        ),
    )
    w = p.add_argument_group(tr("workload (leave out what you do not know)"))
    w.add_argument("--prompt-tokens", type=_positive_int, metavar="N", help=tr("typical prompt length in tokens"))
    w.add_argument("--concurrency", type=_positive_int, metavar="N", help=tr("requests in flight at once"))
    w.add_argument("--gpus", type=_positive_int, metavar="N", help=tr("GPUs (or nodes) available"))
    w.add_argument("--ttft-slo", type=_positive_float, metavar="MS", help=tr("a hard time-to-first-token target"))
    w.add_argument("--prefix-reuse", choices=("high", "low"), help=tr("how much prompts share a prefix"))
    w.add_argument("--workload", choices=("chat", "coding", "agent", "batch"), help=tr("the kind of work"))
    p.add_argument(
        "--from-probe",
        metavar="latest|FILE",
        help=tr("use a probe result: latest (from the history) or a file from kvswitch probe --format json"),
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def _label(text: str, width: int) -> str:
    """``text`` padded to ``width`` terminal columns (a CJK character takes two)."""
    import unicodedata

    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(1, width - used)


def render_text(advice: Any) -> str:
    """The advice as the CLI prints it."""
    from kvswitch.advise import describe

    chunk = str(advice.chunk_size) if advice.chunk_size is not None else tr("– (ignored in split mode)")
    if advice.decided_by == "measurement":
        decided = tr("the measurement")
    elif advice.measurement:
        decided = tr("the rules (not decided by the measurement)")
    else:
        decided = tr("the rules")
    rows = [
        (tr("mode"), advice.mode),
        ("chunk_size", chunk),
        (tr("prefix cache"), tr("on") if advice.prefix_cache else tr("off")),
        ("kv_cache_dtype", advice.kv_cache_dtype),
        (tr("decided by"), decided),
    ]
    lines = [f"kvswitch advise · {describe(advice.workload)}", ""]
    lines += [_label(name, 16) + value for name, value in rows]
    lines += ["", tr("why:")]
    lines += [f"{i:>2}. {r.text} [{r.source}]" for i, r in enumerate(advice.reasons, 1)]
    lines += ["", tr("next:")] + [f" - {s}" for s in advice.next_steps]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.advise import Workload, advise, evidence_from_report, load_probe
    from kvswitch.cli import envelope

    workload = Workload(
        prompt_tokens=args.prompt_tokens,
        concurrency=args.concurrency,
        gpus=args.gpus,
        ttft_slo_ms=args.ttft_slo,
        prefix_reuse=args.prefix_reuse,
        workload=args.workload,
    )
    evidence = evidence_from_report(load_probe(args.from_probe)) if args.from_probe else None
    advice = advise(workload, evidence)
    if args.format == "json":
        print(envelope.dumps("advise", advice.as_dict()))
    else:
        print(render_text(advice))
    return 0
