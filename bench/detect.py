#!/usr/bin/env python3
"""``kvswitch client detect`` with the five real clients installed (tests/clients/, made by
``python3 tests/run.py``): versions read from the npm packages (what detect does) side by side
with asking each program ``--version`` (what a naive detect would do), in one run.

    .venv/bin/python bench/detect.py [--rounds 5]

Goal (issue 12): detect answers at a terminal's pace (well under a second) with every client
installed, and never runs a program whose package states its version.
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

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "tests" / "clients" / "node_modules" / ".bin"
PROGRAMS = ("claude", "codex", "cline", "opencode", "qwen")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    missing = [p for p in PROGRAMS if not (BIN / p).exists()]
    if missing:
        print(f"the real clients are not installed ({', '.join(missing)}): run python3 tests/run.py first")
        return 2
    sandbox = Path(tempfile.mkdtemp(prefix="kvswitch-bench-"))
    bindir = sandbox / "bin"
    bindir.mkdir()
    for p in PROGRAMS:
        (bindir / p).symlink_to(BIN / p)
    os.environ.update(
        HOME=str(sandbox / "home"), KVSWITCH_HOME=str(sandbox / "kvswitch-home"), PATH=f"{bindir}:/usr/bin:/bin"
    )
    from kvswitch.installed import detect_clients

    def read_versions() -> list[str | None]:
        return [f.version for f in detect_clients()]

    def ask_versions() -> list[str | None]:
        out = []
        for p in PROGRAMS:
            done = subprocess.run(
                [str(bindir / p), "--version"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL, check=False
            )
            out.append(done.stdout.decode(errors="replace").strip())
        return out

    read, asked = [], []
    for _ in range(args.rounds):
        for fn, into in ((read_versions, read), (ask_versions, asked)):
            start = time.perf_counter()
            fn()
            into.append((time.perf_counter() - start) * 1000)
    whole = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "kvswitch", "client", "detect", "--format", "json"], capture_output=True, check=True
        )
        whole.append((time.perf_counter() - start) * 1000)
    r, a = statistics.median(read), statistics.median(asked)
    print(f"versions of 5 clients, read from their packages (detect): {r:8.1f} ms median of {args.rounds}")
    print(f"versions of 5 clients, asked with --version:               {a:8.1f} ms median of {args.rounds}")
    print(f"ratio read/asked: {r / a:.4f} (asking takes {a / r:.0f}x as long)")
    print(f"whole process `kvswitch client detect --format json`:    {statistics.median(whole):8.1f} ms median")
    print(f"versions found: {read_versions()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
