"""``kvswitch doctor``: the article's five known errors (S-24…S-28) and S-29, checked live."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kvswitch.cli._target import add_target_options

__all__ = ["register", "render_text"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the setup against the article's known errors (401, split timeouts, chunk_size, GPU, TTFT swings)",
        description="Run kvswitch's checks: config lint, the key variables clients read "
        "(Codex, OpenCode), base URL reachable, URL convention, auth (S-24, S-29), "
        "model listed (S-08), split endpoints (S-25), chunk_size in split mode (S-26), nvidia-smi and the same GPU "
        "for prefill and decode (S-27), prefix cache and TTFT swings (S-28). A key goes only to the hosts the "
        "profile names (or to --base-url with --api-key-env) and is never printed. Exit 0 when no check fails "
        "(warnings allowed), 1 when one fails, 2 on a usage error.",
    )
    src = add_target_options(p, base_url_help="check this address instead of a profile's")
    src.add_argument("--mode", choices=("merged", "split"), help="check as if in this mode (default: kvswitch's mode)")
    gpu = p.add_argument_group("GPUs (S-27)")
    gpu.add_argument("--smi", default="nvidia-smi", help="the nvidia-smi to run (default: nvidia-smi)")
    gpu.add_argument("--prefill-prefix", metavar="CMD", help="run nvidia-smi on the prefill instance through this "
                     "command prefix, e.g. 'ssh prefill-host'")
    gpu.add_argument("--decode-prefix", metavar="CMD", help="the same for the decode instance")
    how = p.add_argument_group("how")
    how.add_argument("--timeout", type=float, default=4.0, help="seconds per request (4); a stalled split request "
                     "fails after this long")
    how.add_argument("--skip", action="append", default=[], metavar="CHECK",
                     help="skip a check (repeat): config, key-variables, chunk-size, reachable, "
                     "url-convention, auth, model, split, "
                     "nvidia-smi, same-gpu, prefix-cache")
    how.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Any:
    """DoctorSettings from the command line (usage errors raise UsageError)."""
    import os
    import shlex

    from kvswitch.cli._handler import UsageError
    from kvswitch.doctor import CHECKS, DoctorSettings

    unknown = [c for c in args.skip if c not in CHECKS]
    if unknown:
        raise UsageError(f"--skip takes one of {', '.join(CHECKS)}, not {', '.join(unknown)}")
    if args.base_url and not args.model:
        raise UsageError("--base-url needs --model")
    if (args.model or args.api_key_env) and not args.base_url:
        raise UsageError("--model and --api-key-env go with --base-url (a profile names its own)")
    if args.base_url and args.profile:
        raise UsageError("give --profile or --base-url, not both")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UsageError(f"${args.api_key_env} is not set")
    if not 0 < args.timeout <= 60:
        raise UsageError("--timeout must be between 0 and 60 seconds")
    try:
        prefill = shlex.split(args.prefill_prefix) if args.prefill_prefix else []
        decode = shlex.split(args.decode_prefix) if args.decode_prefix else []
    except ValueError as exc:
        raise UsageError(f"cannot split the prefix command: {exc}") from exc
    return DoctorSettings(
        profile=args.profile, base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
        mode=args.mode, smi=args.smi, prefill_prefix=prefill, decode_prefix=decode, timeout=args.timeout,
        skip=frozenset(args.skip),
    )


_TAG = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def render_text(report: Any) -> str:
    """The report as the CLI prints it: one block per check, then a summary line."""
    from collections import Counter

    lines = []
    t = report.target
    if t is not None:
        d = t.as_dict()
        key = d["key"] or "none"
        lines += [f"kvswitch doctor · {t.label} · mode {t.mode} · {d['base_url']} · model {t.model} · key {key}", ""]
    else:
        lines += ["kvswitch doctor", ""]
    width = max((len(c.name) for c in report.checks), default=8)
    for c in report.checks:
        src = f"  [{c.source}]" if c.source and c.status in ("warn", "fail") else ""
        lines.append(f"{_TAG[c.status]}  {c.name:<{width}}  {c.saw}{src}")
        if c.fix and c.status in ("warn", "fail"):
            lines.append(f"      {'':<{width}}  fix: {c.fix}")
    counts = Counter(c.status for c in report.checks)
    parts = [f"{counts[s]} {w}" for s, w in (("fail", "failed"), ("warn", "warning(s)"), ("pass", "passed"),
                                             ("skip", "skipped")) if counts[s]]
    lines += ["", ", ".join(parts) or "no checks ran"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.doctor import run_doctor

    report = run_doctor(settings_from_args(args))
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(report))
    return int(report.exit_code)
