#!/usr/bin/env python3
"""Whole-process start-up of ``kvswitch lint FILE`` (the pre-commit hook) and ``kvswitch switch
MODE`` beside ``python -c pass``, in English and in Chinese, measured in one run, interleaved.

    .venv/bin/python bench/i18n_startup.py [--runs 15] [--before REV]

With ``--before REV`` the same commands also run from that commit (unpacked with ``git archive``,
first on ``PYTHONPATH``), every arm interleaved run by run, so both sides see the same load.

Goal: the message catalogue makes neither command more than 5 % slower (English, the source
text, loads no catalogue; Chinese reads one .mo file on its first message).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "cline" / "article.json"


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    # cwd outside the checkout: `python -m kvswitch` must find the kvswitch PYTHONPATH names
    # (bench/before_after.py's earlier commit), not the one in the current folder
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--before", metavar="REV", help="also run the commands from this earlier commit")
    args = ap.parse_args()
    before_tree = None
    if args.before:
        sys.path.insert(0, str(ROOT / "bench"))
        from before_after import unpack

        before_tree = unpack(args.before)
    with tempfile.TemporaryDirectory(prefix="kvswitch-i18n-bench-") as tmp:
        home = Path(tmp)
        settings = home / "project" / ".vscode" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_bytes(FIXTURE.read_bytes())
        base = {k: v for k, v in os.environ.items() if k not in {"LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}}
        base.update(
            HOME=str(home),
            KVSWITCH_HOME=str(home / "kvswitch-home"),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_STATE_HOME=str(home / ".state"),
            XDG_DATA_HOME=str(home / ".data"),
        )
        py = sys.executable
        commands: dict[str, tuple[list[str], str | None]] = {
            "python -c pass": ([py, "-c", "pass"], None),
            "lint (en)": ([py, "-m", "kvswitch", "lint", str(settings)], "en"),
            "lint (zh-CN)": ([py, "-m", "kvswitch", "lint", str(settings)], "zh-CN"),
            "switch (en)": ([py, "-m", "kvswitch", "switch", "MODE", str(settings)], "en"),
            "switch (zh-CN)": ([py, "-m", "kvswitch", "switch", "MODE", str(settings)], "zh-CN"),
        }
        arms: dict[str, tuple[list[str], str | None, Path | None]] = {}
        for name, (cmd, lang) in commands.items():
            arms[name] = (cmd, lang, None)
            if before_tree is not None and lang is not None:
                arms[f"{name} before"] = (cmd, lang, before_tree)
        times: dict[str, list[float]] = {name: [] for name in arms}
        modes = ["split", "merged"]
        for i in range(args.runs + 1):  # the first round warms the page cache and is dropped
            for name, (cmd, lang, tree) in arms.items():
                env = dict(base)
                if lang:
                    env["KVSWITCH_LANG"] = lang
                if tree is not None:
                    env["PYTHONPATH"] = str(tree)
                real = [modes[i % 2] if part == "MODE" else part for part in cmd]
                elapsed = _timed(real, env, home)
                if i:
                    times[name].append(elapsed)
    bare = statistics.median(times["python -c pass"])
    print(f"whole-process start-up, median of {args.runs} runs (interleaved)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<23} {median:8.1f} ms   {median / bare:5.2f}× python -c pass")
    if before_tree is not None:
        print(f"after ÷ before (before = {args.before}, the same runs)")
        for name in commands:
            if f"{name} before" in times:
                ratio = statistics.median(times[name]) / statistics.median(times[f"{name} before"])
                print(f"  {name:<23} ×{ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
