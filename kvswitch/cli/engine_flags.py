"""``kvswitch engine-flags``: the vLLM or SGLang command lines that match the active profile."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from kvswitch.i18n import tr

__all__ = ["register", "render_text", "router_shown"]


def router_shown(router: str) -> str:
    """A router's name in the user's language (``sglang``, ``vllm``, ``proxy``)."""
    names = {"sglang": tr("SGLang's router"), "vllm": tr("vLLM's router"), "proxy": tr("vLLM's example proxy")}
    return names.get(router, router)


def _role(role: str) -> str:
    names = {
        "merged": tr("merged instance"),
        "prefill": tr("prefill instance"),
        "decode": tr("decode instance"),
        "worker": tr("worker (prefills and decodes)"),
        "router": tr("router"),
    }
    return names.get(role, role)


def _level(level: str) -> str:
    """How a caveat's level reads in text (JSON keeps ``level`` as it is)."""
    return {"refused": tr("refused"), "warning": tr("warning"), "note": tr("note")}.get(level, level)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "engine-flags",
        help=tr("the vLLM or SGLang server commands that match a profile, with caveats per flag"),
        description=tr(
            "Print the server-side commands that match a profile (default: the active one) in a mode (default: "
            "kvswitch's mode): merged is one instance with chunked prefill; split is a prefill instance, a decode "
            "instance and the router or proxy in front of them (--router: an existing PD router, SGLang's or "
            "vLLM's, in PD or regular mode). Every flag carries the caveats of kvswitch's engine reference "
            "(version windows, defaults, constraints). A profile value the engine does not have (kv_cache_dtype "
            "int8 in vLLM or SGLang, layer-wise transfer on SGLang with NIXL) is refused: the flag is left out, "
            "the caveat says what to use, and the exit code is 1. Exit 0 otherwise; 2 on a usage error."
        ),
    )
    p.add_argument("--engine", choices=("vllm", "sglang"), help=tr("the inference engine (required)"))
    p.add_argument("--mode", choices=("merged", "split"), help=tr("default: the mode kvswitch is in"))
    p.add_argument("--profile", metavar="NAME", help=tr("default: the active profile"))
    p.add_argument(
        "--transfer-backend",
        choices=("nixl", "mooncake"),
        help=tr("split: the KV transfer backend (default: vLLM nixl, SGLang mooncake)"),
    )
    p.add_argument(
        "--shared-gpu",
        action="store_true",
        help=tr("split: prefill and decode share one GPU (sets each one's memory fraction)"),
    )
    p.add_argument(
        "--router",
        choices=("sglang", "vllm"),
        help=tr(
            "split: an existing router in front (default: SGLang's router for SGLang, vLLM's example proxy for vLLM)"
        ),
    )
    p.add_argument(
        "--router-mode",
        choices=("pd", "regular"),
        default="pd",
        help=tr(
            "split: pd (a prefill and a decode instance; the default) or regular (two whole "
            "instances, balanced by the router)"
        ),
    )
    p.add_argument(
        "--router-policy",
        choices=("cache_aware", "round_robin", "power_of_two", "random"),
        default="cache_aware",
        help=tr("the router's load-balancing policy (default cache_aware)"),
    )
    p.add_argument(
        "--router-metrics-port",
        type=int,
        metavar="PORT",
        help=tr("the router's Prometheus port (default 29000, moved off a port already taken)"),
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the commands and caveats in kvswitch's JSON envelope"),
    )
    p.add_argument(
        "--reference", action="store_true", help=tr("print the generated part of docs/engines.md (markdown) and exit")
    )
    p.set_defaults(func=run)


def render_text(result: Any) -> str:
    """The commands and their numbered caveats, as the CLI prints them (headings in the user's
    language; command lines, flags and URLs as they are)."""
    from kvswitch.engine_flags import ENGINE_NAMES
    from kvswitch.validate import show_name

    engine = ENGINE_NAMES[result.engine]
    profile = tr(" · profile {name}").format(name=show_name(result.profile)) if result.profile else ""
    backend = f" · {result.transfer_backend}" if result.transfer_backend else ""
    router = f" · {router_shown(result.router)}, {result.router_mode}" if result.router else ""
    lines = [f"kvswitch engine-flags · {engine} · {result.mode}{backend}{router}{profile}", ""]
    if not result.ok:
        numbers = ", ".join(str(c.n) for c in result.refused)
        lines += [
            tr(
                "REFUSED: the profile asks for what {engine} does not have (caveat {numbers}); that flag is "
                "left out below."
            ).format(engine=engine, numbers=numbers),
            "",
        ]
    for cmd in result.commands:
        refs = result.numbers(cmd.codes())
        see = "  " + tr("(caveats {numbers})").format(numbers=", ".join(map(str, refs))) if refs else ""
        lines.append(f"# {_role(cmd.role)} → {cmd.url}{see}")
        lines.append(cmd.shell(multiline=True))
        lines.append("")
    lines.append(tr("caveats:"))
    for c in result.caveats:
        level = _level(c.level)
        flags = f" {' '.join(c.flags)}:" if c.flags else ""
        versions = tr(" (applies to: {versions})").format(versions=c.versions) if c.versions else ""
        text = f"{level}{flags} {c.text}{versions} [{c.source}]"
        lines.append(
            textwrap.fill(
                text,
                100,
                initial_indent=f"{c.n:>2}. ",
                subsequent_indent="    ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError

    if args.reference:
        from kvswitch.engine_flags import engines_reference

        sys.stdout.write(engines_reference())
        return 0
    if args.engine is None:
        raise UsageError(tr("engine-flags: --engine vllm|sglang is required"))

    from kvswitch.config import read_config
    from kvswitch.engine_flags import engine_flags

    config = read_config()
    name, profile = config.profile(args.profile)
    mode = args.mode or config.model.mode
    try:
        result = engine_flags(
            profile,
            args.engine,
            mode,
            profile_name=name,
            transfer_backend=args.transfer_backend,
            shared_gpu=args.shared_gpu,
            router=args.router,
            router_mode=args.router_mode,
            policy=args.router_policy,
            metrics_port=args.router_metrics_port,
        )
    except ValueError as exc:  # a combination that cannot work (a router's PD mode, another engine)
        raise UsageError(f"engine-flags: {exc}") from None
    if args.format == "json":
        from kvswitch.cli.envelope import dumps

        print(dumps("engine-flags", result.as_dict(), ok=result.ok))
    else:
        print(render_text(result))
    return 0 if result.ok else 1
