#!/usr/bin/env python3
"""Whole-process start-up of ``kvswitch switch MODE``, ``kvswitch status`` and ``kvswitch lint
FILE`` beside ``python -c pass``, measured in one run, interleaved run by run.

    .venv/bin/python bench/startup.py [--runs 20] [--before REV]

A sandbox (``HOME``, ``XDG_*`` and ``KVSWITCH_HOME`` in a temp folder, the null keyring) is set
up with ``kvswitch init`` (the Cline-style ``settings.json`` and the CC Switch-style
``config.toml`` registered); ``switch`` alternates ``split`` and ``merged``, so every run flips
both files and kvswitch.toml. The commands run with the working folder outside the checkout.
With ``--before REV`` the same commands also run from that commit (unpacked with ``git
archive``, first on ``PYTHONPATH``), interleaved with the current ones.

Goals: ``switch`` and ``status`` ≤ 4×, ``lint`` ≤ 3× ``python -c pass``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOALS = {"switch": 4.0, "status": 4.0, "lint": 3.0}


def _sandbox(top: Path) -> dict[str, str]:
    home = top / "home"
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in {"LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "PYTHONPATH"}}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caches, as an installed package has them
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_DATA_HOME=str(home / ".data"),
        KVSWITCH_HOME=str(top / "kvswitch-home"),
        KVSWITCH_LANG="en",
        BENCH_KEY="sk-bench-0123456789abcdefghij",
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
    )
    init = [sys.executable, "-m", "kvswitch", "init", "--preset", "lab", "--model", "tiny", "--key-env", "BENCH_KEY"]
    subprocess.run(init, env=env, cwd=top, capture_output=True, check=True)
    return env


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run."""
    cpu = _cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-600:]}")
    return elapsed, _cpu() - cpu


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--before", metavar="REV", help="also run the commands from this earlier commit")
    args = ap.parse_args()
    trees: dict[str, Path | None] = {"": None}
    if args.before:
        sys.path.insert(0, str(ROOT / "bench"))
        from before_after import unpack

        trees[" before"] = unpack(args.before)
    top = Path(tempfile.mkdtemp(prefix="kvswitch-startup-bench-"))
    try:
        # a sandbox per tree: each arm's switch flips its own two files on every run (one shared
        # sandbox would leave the second arm's switch with nothing to do)
        envs = {suffix: _sandbox(top / (suffix.strip() or "now")) for suffix in trees}
        env = envs[""]
        lint_file = top / "lint" / ".vscode" / "settings.json"
        lint_file.parent.mkdir(parents=True)
        lint_file.write_bytes((ROOT / "tests" / "fixtures" / "cline" / "article.json").read_bytes())
        py = sys.executable
        commands = {
            "switch": [py, "-m", "kvswitch", "switch", "MODE"],
            "status": [py, "-m", "kvswitch", "status"],
            "lint": [py, "-m", "kvswitch", "lint", str(lint_file)],
        }
        arms: dict[str, tuple[list[str], Path | None, dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], None, env)
        }
        for name, cmd in commands.items():
            for suffix, tree in trees.items():
                arms[name + suffix] = (cmd, tree, envs[suffix])
        times: dict[str, list[float]] = {name: [] for name in arms}
        cpu: dict[str, list[float]] = {name: [] for name in arms}
        modes = ("split", "merged")
        for i in range(args.runs + 1):  # the first round warms the caches and is dropped
            for name, (cmd, tree, arm_env) in arms.items():
                run_env = dict(arm_env)
                if tree is not None:
                    run_env["PYTHONPATH"] = str(tree)
                real = [modes[i % 2] if part == "MODE" else part for part in cmd]
                elapsed, used = _timed(real, run_env, top)
                if i:
                    times[name].append(elapsed)
                    cpu[name].append(used)
    finally:
        shutil.rmtree(top, ignore_errors=True)
        for tree in trees.values():
            if tree is not None:
                shutil.rmtree(tree, ignore_errors=True)
    bare = statistics.median(times["python -c pass"])
    print(f"whole-process start-up, {args.runs} runs interleaved (median, p90; ratio of medians)")
    for name, values in times.items():
        median = statistics.median(values)
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"  (goal ≤ {goal:g}×: {'ok' if median / bare <= goal else 'above'})"
        print(
            f"  {name:<16} {median:7.1f} ms  p90 {_p90(values):7.1f} ms  {median / bare:5.2f}× python -c pass{verdict}"
        )
    bare_cpu = statistics.median(cpu["python -c pass"])
    print("CPU time (user + system; what a busy machine inflates least), median")
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"  {name:<16} {median:7.1f} ms  {median / bare_cpu:5.2f}× python -c pass")
    if args.before:
        print(f"after ÷ before (before = {args.before}, the same runs): wall, CPU")
        for name in commands:
            ratio = statistics.median(times[name]) / statistics.median(times[f"{name} before"])
            ratio_cpu = statistics.median(cpu[name]) / statistics.median(cpu[f"{name} before"])
            print(f"  {name:<16} ×{ratio:.3f}  ×{ratio_cpu:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
