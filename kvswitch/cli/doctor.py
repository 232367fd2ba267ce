"""``kvswitch doctor``: the known errors of a merged/split setup, checked live (S-24…S-29)."""

from __future__ import annotations

import argparse
from typing import Any

from kvswitch.cli._target import add_target_options
from kvswitch.i18n import language, ntr, tr

__all__ = ["register", "render_text"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help=tr("check the setup against the known errors (401, split timeouts, chunk_size, GPU, TTFT swings)"),
        description=tr(
            "Run kvswitch's checks: config lint, the key variables clients read (Codex, OpenCode), base URL "
            "reachable, URL convention, auth (401 from whitespace in the key or a trailing slash, the key's "
            "status and quota), model listed, split endpoints (split requests that time out), chunk_size in "
            "split mode, nvidia-smi and the same GPU for prefill and decode, prefix cache and TTFT swings. "
            "A key goes only to the hosts the profile names (or to --base-url with --api-key-env) and is never "
            "printed. Requests to other machines honour HTTPS_PROXY, HTTP_PROXY, NO_PROXY and SSL_CERT_FILE, "
            "like kvswitch probe. Exit 0 when no check fails (warnings allowed), 1 when one fails, 2 on a usage "
            "error. What each check looks for: docs/background.md#known-errors."
        ),
    )
    src = add_target_options(p, base_url_help=tr("check this address instead of a profile's"))
    src.add_argument(
        "--mode", choices=("merged", "split"), help=tr("check as if in this mode (default: kvswitch's mode)")
    )
    gpu = p.add_argument_group(tr("GPUs"))
    gpu.add_argument("--smi", default="nvidia-smi", help=tr("the nvidia-smi to run (default: nvidia-smi)"))
    gpu.add_argument(
        "--prefill-prefix",
        metavar="CMD",
        help=tr("run nvidia-smi on the prefill instance through this command prefix, e.g. 'ssh prefill-host'"),
    )
    gpu.add_argument("--decode-prefix", metavar="CMD", help=tr("the same for the decode instance"))
    how = p.add_argument_group(tr("how"))
    how.add_argument(
        "--timeout",
        type=float,
        default=4.0,
        help=tr("seconds per request (4); a stalled split request fails after this long"),
    )
    how.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="CHECK",
        help=tr("skip a check (repeat): {checks}").format(
            checks="config, key-variables, chunk-size, reachable, url-convention, auth, model, split, "
            "nvidia-smi, same-gpu, prefix-cache"
        ),
    )
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
        raise UsageError(
            tr("--skip takes one of {checks}, not {unknown}").format(
                checks=", ".join(CHECKS), unknown=", ".join(unknown)
            )
        )
    if args.base_url and not args.model:
        raise UsageError(tr("--base-url needs --model"))
    if (args.model or args.api_key_env) and not args.base_url:
        raise UsageError(tr("--model and --api-key-env go with --base-url (a profile names its own)"))
    if args.base_url and args.profile:
        raise UsageError(tr("give --profile or --base-url, not both"))
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise UsageError(tr("${name} is not set").format(name=args.api_key_env))
    if not 0 < args.timeout <= 60:
        raise UsageError(tr("--timeout must be between 0 and 60 seconds"))
    try:
        prefill = shlex.split(args.prefill_prefix) if args.prefill_prefix else []
        decode = shlex.split(args.decode_prefix) if args.decode_prefix else []
    except ValueError as exc:
        raise UsageError(tr("cannot split the prefix command: {reason}").format(reason=exc)) from exc
    return DoctorSettings(
        profile=args.profile,
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        mode=args.mode,
        smi=args.smi,
        prefill_prefix=prefill,
        decode_prefix=decode,
        timeout=args.timeout,
        skip=frozenset(args.skip),
    )


def _tags() -> dict[str, str]:
    """The status words, four columns wide in either language."""
    return {"pass": tr("PASS"), "warn": tr("WARN"), "fail": tr("FAIL"), "skip": tr("skip")}


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (a CJK character takes two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _after(label: str) -> str:
    """A label and the space after it (none after a full-width colon)."""
    return label if label.endswith("：") else label + " "


def render_text(report: Any) -> str:
    """The report as the CLI prints it: one block per check, then a summary line."""
    lines = []
    t = report.target
    if t is not None:
        d = t.as_dict()
        heading = (
            tr("kvswitch doctor · {target} · mode {mode} · {url} · model {model} · key {key}")
            if d["key"]
            else tr("kvswitch doctor · {target} · mode {mode} · {url} · model {model} · no key")
        )
        lines += [heading.format(target=t.label, mode=t.mode, url=d["base_url"], model=t.model, key=d["key"]), ""]
    else:
        lines += ["kvswitch doctor", ""]
    tags = _tags()
    width = max((len(c.name) for c in report.checks), default=8)
    fix_label, see_label = tr("fix:"), tr("more:")
    for c in report.checks:
        tag = tags[c.status]
        lines.append(f"{tag}{' ' * max(1, 6 - _width(tag))}{c.name:<{width}}  {c.saw}")
        if c.status in ("warn", "fail"):
            indent = " " * (6 + width + 2)
            if c.fix:
                lines.append(f"{indent}{_after(fix_label)}{c.fix}")
            if c.source:
                lines.append(f"{indent}{_after(see_label)}{c.source}")
    counts = report.counts()
    words = {
        "fail": ntr("{count} failed", "{count} failed", counts["fail"]),
        "warn": ntr("{count} warning", "{count} warnings", counts["warn"]),
        "pass": ntr("{count} passed", "{count} passed", counts["pass"]),
        "skip": ntr("{count} skipped", "{count} skipped", counts["skip"]),
    }
    parts = [words[s].format(count=counts[s]) for s in ("fail", "warn", "pass", "skip") if counts[s]]
    lines += ["", ("，" if language() == "zh_CN" else ", ").join(parts) or tr("no checks ran")]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.doctor import run_doctor

    report = run_doctor(settings_from_args(args))
    if args.format == "json":
        from kvswitch.cli import envelope

        print(envelope.dumps("doctor", report.as_dict(), ok=report.exit_code == 0))
    else:
        print(render_text(report))
    return int(report.exit_code)
