#!/usr/bin/env python3
"""Whole-process time of ``kvswitch lint`` on one small file, beside check-jsonschema (with
kvswitch's own schema) and pre-commit-hooks' check-toml / check-json, measured in one run.

    .venv/bin/python bench/lint_speed.py [--runs 15]

Goal (issue 2): kvswitch lint ≤ 0.6 × check-jsonschema on the same file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


# bytecode caches as an installed package has them (a source checkout gets them on first run)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int) -> tuple[float, int]:
    subprocess.run(cmd, capture_output=True, env=ENV)  # warm the page and bytecode caches
    samples = []
    code = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        code = subprocess.run(cmd, capture_output=True, env=ENV).returncode
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    runs = ap.parse_args().runs
    work = Path(tempfile.mkdtemp(prefix="kvswitch-bench-"))
    toml = work / "cc-switch" / "config.toml"
    toml.parent.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "ccswitch" / "article.toml", toml)
    cline = work / ".vscode" / "settings.json"
    cline.parent.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "cline" / "article.json", cline)
    schemas = ROOT / "schemas"
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"], None),
        ("kvswitch lint config.toml", [str(BIN / "kvswitch"), "lint", str(toml)], "lint-toml"),
        (
            "check-jsonschema config.toml",
            [str(BIN / "check-jsonschema"), "--schemafile", str(schemas / "ccswitch-config.schema.json"), str(toml)],
            "cjs-toml",
        ),
        ("check-toml config.toml", [str(BIN / "check-toml"), str(toml)], None),
        ("kvswitch lint settings.json", [str(BIN / "kvswitch"), "lint", str(cline)], "lint-json"),
        (
            "check-jsonschema --force-filetype json5 settings.json",
            [
                str(BIN / "check-jsonschema"),
                "--force-filetype",
                "json5",
                "--schemafile",
                str(schemas / "cline-settings.schema.json"),
                str(cline),
            ],
            "cjs-json",
        ),
    ]
    results: dict[str, float] = {}
    print(f"whole-process wall time, median of {runs} runs (one small file each)")
    print(f"{'command':58} {'median':>9} {'exit':>4}")
    for label, cmd, key in rows:
        if not Path(cmd[0]).exists():
            print(f"{label:58} {'missing':>9}")
            continue
        med, code = timed(cmd, runs)
        if key:
            results[key] = med
        print(f"{label:58} {med * 1000:7.1f}ms {code:>4}")
    print()
    for a, b, what in (("lint-toml", "cjs-toml", "config.toml"), ("lint-json", "cjs-json", "settings.json")):
        if a in results and b in results:
            ratio = results[a] / results[b]
            verdict = "ok" if ratio <= 0.6 else "ABOVE GOAL"
            print(f"ratio kvswitch lint / check-jsonschema on {what}: {ratio:.2f} (goal ≤ 0.60: {verdict})")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
