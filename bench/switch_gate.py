#!/usr/bin/env python3
"""What the lint gate of a switch costs: every switch lints each file before and after (a switch
never writes what lint rejects). Side by side in one run, interleaved: the switch of two
registered clients, and of one large settings.json by path, with the gate on and off.

    .venv/bin/python bench/switch_gate.py [--runs 31] [--big-keys 20000]

Goal: the in-process switch of two clients stays within its 20 ms (bench/profile_switch.py);
the gate's share is reported as the on/off ratio of medians.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _median(fn: Callable[[int], object], runs: int, gate: Callable[[bool], None]) -> tuple[float, float]:
    """Medians with the gate on and off; ``fn(n)`` is called with a count that goes up by one
    every call, so that each call is a real switch (to the other mode), never a no-op."""
    on: list[float] = []
    off: list[float] = []
    n = 0
    for i in range(runs):
        for enabled, samples in ((True, on), (False, off)) if i % 2 == 0 else ((False, off), (True, on)):
            gate(enabled)
            gc.collect()
            t0 = time.perf_counter()
            fn(n)
            samples.append(time.perf_counter() - t0)
            n += 1
    gate(True)
    return statistics.median(on), statistics.median(off)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--big-keys", type=int, default=20000, help="user keys in the large settings.json")
    args = ap.parse_args()
    sandbox = Path(tempfile.mkdtemp(prefix="kvswitch-bench-"))
    os.environ.update(
        {
            "HOME": str(sandbox / "home"),
            "XDG_CONFIG_HOME": str(sandbox / "home" / ".config"),
            "KVSWITCH_HOME": str(sandbox / "kvswitch-home"),
            "BENCH_KEY": "sk-bench-0123456789abcdefghij",
        }
    )
    import kvswitch
    import kvswitch.cli
    import kvswitch.clients
    import kvswitch.switching
    from kvswitch.clients import switch_clients

    real = kvswitch.switching.refuse_on_errors

    def gate(enabled: bool) -> None:
        chosen = real if enabled else (lambda *a, **k: None)
        kvswitch.switching.refuse_on_errors = chosen  # type: ignore[assignment]
        kvswitch.clients.refuse_on_errors = chosen  # type: ignore[assignment]

    assert kvswitch.cli.main(["init", "--preset", "taotoken", "--model", "gpt-4o-mini", "--key-env", "BENCH_KEY"]) == 0
    two_on, two_off = _median(lambda i: switch_clients("split" if i % 2 == 0 else "merged"), args.runs, gate)
    # the plan alone (a dry run: read, plan, verify, gate; no fsync), where the gate's CPU shows
    switch_clients("merged")
    plan_on, plan_off = _median(lambda i: switch_clients("split", dry_run=True), args.runs, gate)

    big = sandbox / "big" / ".vscode" / "settings.json"
    big.parent.mkdir(parents=True)
    user = {f"editor.setting{i}": {"value": i, "note": "x" * 20} for i in range(args.big_keys)}
    user["cline.openAiBaseUrl"] = "http://127.0.0.1:8000/v1"
    user["cline.openAiModelId"] = "m"
    user["cline.cacheStrategy"] = {"mode": "merged", "chunkSize": 512}
    big.write_text(json.dumps(user, indent=4))
    size = big.stat().st_size
    big_on, big_off = _median(
        lambda i: kvswitch.switch("split" if i % 2 == 0 else "merged", [big]),
        max(5, args.runs // 3),
        gate,
    )

    print(f"median of interleaved runs, gate on vs off ({args.runs} runs for two clients)")
    print(
        f"  two registered clients   on {two_on * 1e3:7.2f} ms   off {two_off * 1e3:7.2f} ms   "
        f"ratio {two_on / two_off:.2f}"
    )
    print(
        f"  the same, planned only   on {plan_on * 1e3:7.2f} ms   off {plan_off * 1e3:7.2f} ms   "
        f"ratio {plan_on / plan_off:.2f}"
    )
    print(
        f"  one {size / 1e6:.1f} MB settings.json on {big_on * 1e3:7.1f} ms   "
        f"off {big_off * 1e3:7.1f} ms   ratio {big_on / big_off:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
