#!/usr/bin/env python3
"""Run a bench script against an earlier commit and against the working tree, alternating, in
one run, and print every figure side by side with the ratio (after ÷ before).

    .venv/bin/python bench/before_after.py REV bench/profile_switch.py [--rounds 3] [-- ARGS...]

The earlier commit is unpacked with ``git archive`` into a temp folder and put first on
``PYTHONPATH`` (for the script and the ``kvswitch`` processes it starts); the same, current,
bench script measures both. Every number followed by ``ms`` or ``%`` on a line is a figure;
a line's figures are matched by their order, and the medians over the rounds are shown.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FIGURE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(ms|%)")


def unpack(rev: str) -> Path:
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    top = Path(tempfile.mkdtemp(prefix="kvswitch-before-"))
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(top, filter="data")
    return top


def run(script: str, args: list[str], tree: Path | None) -> list[str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, script, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} failed ({'before' if tree else 'after'}):\n{done.stdout}{done.stderr}")
    return done.stdout.splitlines()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", help="the earlier commit")
    ap.add_argument("script", help="the bench script, e.g. bench/profile_switch.py")
    ap.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:]
    args = argv[argv.index("--") + 1 :] if "--" in argv else []  # the script's own options
    ns = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    before_tree = unpack(ns.rev)
    outputs: dict[str, list[list[str]]] = {"before": [], "after": []}
    for i in range(ns.rounds):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for side in order:
            outputs[side].append(run(ns.script, args, before_tree if side == "before" else None))
    print(
        f"{ns.script} {' '.join(args)}: {ns.rounds} rounds each, alternating; before = {ns.rev}, "
        "after = the working tree; medians over the rounds"
    )
    lines = outputs["after"][0]
    for n, line in enumerate(lines):
        figures_after = [
            [float(m.group(1)) for m in _FIGURE.finditer(out[n])] for out in outputs["after"] if n < len(out)
        ]
        figures_before = [
            [float(m.group(1)) for m in _FIGURE.finditer(out[n])] for out in outputs["before"] if n < len(out)
        ]
        if not figures_after or not figures_after[0]:
            print(f"  {line}")
            continue
        cells = []
        for k, m in enumerate(_FIGURE.finditer(line)):
            a = statistics.median(f[k] for f in figures_after if k < len(f))
            b_values = [f[k] for f in figures_before if k < len(f)]
            if not b_values:
                cells.append(f"{a:g} {m.group(2)} (no before)")
                continue
            b = statistics.median(b_values)
            ratio = f"{a / b:.2f}" if b else "—"
            cells.append(f"{b:g} → {a:g} {m.group(2)} (×{ratio})")
        label = _FIGURE.split(line)[0].strip()
        print(f"  {label:60s} {'; '.join(cells)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
