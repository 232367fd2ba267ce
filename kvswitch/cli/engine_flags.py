"""``kvswitch engine-flags``: the vLLM or SGLang command lines that match the active profile."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

__all__ = ["register", "render_text"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "engine-flags",
        help="the vLLM or SGLang server commands that match a profile, with caveats per flag",
        description="Print the server-side commands that match a profile (default: the active one) in a "
        "mode (default: kvswitch's mode): merged is one instance with chunked prefill; split is a "
        "prefill instance, a decode instance and the router or proxy in front of them. Every flag "
        "carries the caveats of kvswitch's engine reference (version windows, defaults, constraints). "
        "A profile value the engine does not have (kv_cache_dtype int8 in vLLM or SGLang, layer-wise "
        "transfer on SGLang with NIXL) is refused: the flag is left out, the caveat says what to use, "
        "and the exit code is 1. Exit 0 otherwise; 2 on a usage error.",
    )
    p.add_argument("--engine", choices=("vllm", "sglang"), help="the inference engine (required)")
    p.add_argument("--mode", choices=("merged", "split"), help="default: the mode kvswitch is in")
    p.add_argument("--profile", metavar="NAME", help="default: the active profile")
    p.add_argument("--transfer-backend", choices=("nixl", "mooncake"),
                   help="split: the KV transfer backend (default: vLLM nixl, SGLang mooncake)")
    p.add_argument("--shared-gpu", action="store_true",
                   help="split: prefill and decode share one GPU (sets each one's memory fraction)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--reference", action="store_true",
                   help="print the generated part of docs/engines.md (markdown) and exit")
    p.set_defaults(func=run)


def render_text(result: Any) -> str:
    """The commands and their numbered caveats, as the CLI prints them."""
    from kvswitch.engine_flags import ENGINE_NAMES

    names = {"merged": "merged instance", "prefill": "prefill instance", "decode": "decode instance",
             "router": "router"}
    from kvswitch.validate import show_name

    profile = f" · profile {show_name(result.profile)}" if result.profile else ""
    backend = f" · {result.transfer_backend}" if result.transfer_backend else ""
    lines = [f"kvswitch engine-flags · {ENGINE_NAMES[result.engine]} · {result.mode}{backend}{profile}", ""]
    if not result.ok:
        numbers = ", ".join(str(c.n) for c in result.refused)
        lines += [f"REFUSED: the profile asks for what {ENGINE_NAMES[result.engine]} does not have "
                  f"(caveat {numbers}); that flag is left out below.", ""]
    for cmd in result.commands:
        refs = result.numbers(cmd.codes())
        see = f"  (caveats {', '.join(map(str, refs))})" if refs else ""
        lines.append(f"# {names[cmd.role]} → {cmd.url}{see}")
        lines.append(cmd.shell(multiline=True))
        lines.append("")
    lines.append("caveats:")
    for c in result.caveats:
        flags = f" {' '.join(c.flags)}:" if c.flags else ""
        versions = f" (applies to: {c.versions})" if c.versions else ""
        text = f"{c.level}{flags} {c.text}{versions} [{c.source}]"
        lines.append(textwrap.fill(text, 100, initial_indent=f"{c.n:>2}. ", subsequent_indent="    ",
                                   break_on_hyphens=False, break_long_words=False))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError

    if args.reference:
        from kvswitch.engine_flags import engines_reference

        sys.stdout.write(engines_reference())
        return 0
    if args.engine is None:
        raise UsageError("engine-flags: --engine vllm|sglang is required")

    from kvswitch.config import read_config
    from kvswitch.engine_flags import engine_flags

    config = read_config()
    name, profile = config.profile(args.profile)
    mode = args.mode or config.model.mode
    result = engine_flags(profile, args.engine, mode, profile_name=name,
                          transfer_backend=args.transfer_backend, shared_gpu=args.shared_gpu)
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(result))
    return 0 if result.ok else 1
