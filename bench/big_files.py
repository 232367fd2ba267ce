#!/usr/bin/env python3
"""Switching big client files: time and peak memory of ``kvswitch.switch`` against a plain
parse of the same file (``json.loads`` of the comment-free equivalent for settings.json,
``tomllib.loads`` for config.toml), side by side in one run.

    .venv/bin/python bench/big_files.py [--sizes 1,4,16] [--runs 3]

Each measurement runs in a fresh process; memory is the peak of what the operation allocates
(``tracemalloc``, measured in a run of its own, as tracing slows the code). A switch reads its file (capped at
``kvswitch.io.MAX_FILE_BYTES``), parses it with positions, plans, splices, verifies by
re-parsing, lints the result and writes it with a backup.

Goals (issue 10, point 12): at the size cap, memory ≤ 10× the file size and time ≤ 3× the
plain parse.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _settings import user_settings  # bench/ is on the path when a benchmark runs

MIB = 1024 * 1024


def big_settings(target: int, seed: int = 7) -> tuple[str, str]:
    """A Cline settings.json of about ``target`` bytes (user settings with comments and
    trailing commas, then the Cline block), and the same text as plain JSON: comments and
    trailing commas blanked with spaces, so the two have the same size and layout."""
    parts = user_settings(target, seed)
    parts.append('    "cline.openAiBaseUrl": "http://127.0.0.1:8000/v1",\n')
    parts.append(
        '    "cline.cacheStrategy": {\n        "mode": "merged", // merged | split\n'
        '        /* tuned */ "chunkSize": 512, // for the 7B model\n'
        '        "kvCacheDtype": "auto",\n        "enablePrefixCache": true\n    },\n}\n'
    )
    text = "".join(parts)
    blank = lambda m: m.group() if m.group().startswith('"') else " " * len(m.group())  # noqa: E731
    plain = re.sub(r'"[^"]*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', blank, text)
    json.loads(plain)  # the oracle's input is valid JSON
    return text, plain


def big_toml(target: int, seed: int = 7) -> str:
    """A CC Switch config.toml of about ``target`` bytes: the article's tables, then many
    project tables, MCP servers and arrays, with comments."""
    rnd = random.Random(seed)
    parts = [
        "# generated for the benchmark\n[provider]\n"
        'name = "local"\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\n\n'
        '[cache]\nmode = "merged"  # merged | split\nchunk_size = 512\nkv_cache_dtype = "auto"\n'
        'prefix_cache = true\n\n[cache.split]\nprefill_base_url = "http://127.0.0.1:8001/v1"\n'
        'decode_base_url = "http://127.0.0.1:8002/v1"\ntransfer_protocol = "layer-wise"\n'
        "max_transfer_concurrency = 4\n\n"
    ]
    size = len(parts[0])
    i = 0
    while size < target:
        kind = rnd.random()
        if kind < 0.6:
            chunk = (
                f'[projects."/home/me/repo{i}"]\ntrust_level = "trusted"  # note {i}\n'
                f"weight = {rnd.random():.6f}\nopened = 1979-05-27T07:32:00Z\n\n"
            )
        elif kind < 0.9:
            chunk = (
                f'[[mcp.servers]]\nname = "server-{i}"\n'
                f'command = ["npx", "-y", "@scope/server-{i}"]  # launcher\n'
                f"env = {{ TOKEN_FILE = '/run/secrets/t{i}', RETRIES = {i % 7} }}\n\n"
            )
        else:
            chunk = f"[history.h{i}]\nitems = [\n  1,  # one\n  2,\n  3,\n]\nnote = '''\nline {i}\n'''\n\n"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    return "".join(parts)


_CHILD = r"""
import gc, json, sys, time, tracemalloc
from pathlib import Path
what, path, traced = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "mem"
if what == "json":
    import json as mod
    run = lambda: mod.loads(path.read_text(encoding="utf-8"))
elif what == "tomllib":
    import tomllib as mod
    run = lambda: mod.loads(path.read_text(encoding="utf-8"))
else:
    import kvswitch, kvswitch.switching, kvswitch.document, kvswitch.rules, kvswitch.transaction
    import kvswitch.formats.toml, tomllib, tomlkit
    def run():
        [res] = kvswitch.switch(what, [path])
        assert res.changed, res
gc.collect()
if traced:
    tracemalloc.start()
t0 = time.perf_counter()
run()
took = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1] if traced else 0
print(json.dumps({"s": took, "peak": peak}))
"""


def child(what: str, path: Path, env: dict[str, str], mode: str) -> float:
    """Seconds (``mode`` "time") or peak traced bytes ("mem") of one operation, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, what, str(path), mode], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"{what} on {path.name} failed:\n{out.stderr}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return float(got["s"]) if mode == "time" else float(got["peak"])


def measure(
    label: str, name: str, text: str, oracle: str, plain: str, runs: int, env: dict[str, str], tmp: Path
) -> None:
    folder = tmp / label
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    plain_path = folder / "plain"
    plain_path.write_text(plain, encoding="utf-8")
    base_t, base_m, sw_t, sw_m = [], [], [], []
    for _ in range(runs):
        base_t.append(child(oracle, plain_path, env, "time"))
        target.write_text(text, encoding="utf-8")  # each run switches the merged file to split
        sw_t.append(child("split", target, env, "time"))
    base_m.append(child(oracle, plain_path, env, "mem"))
    target.write_text(text, encoding="utf-8")
    sw_m.append(child("split", target, env, "mem"))
    size = len(text.encode())
    bt, st = statistics.median(base_t), statistics.median(sw_t)
    bm, sm = statistics.median(base_m), statistics.median(sw_m)
    print(
        f"{label:>9} {name:<13} {size / MIB:6.1f} MiB | {oracle:<7} {bt * 1e3:8.0f} ms {bm / MIB:7.0f} MiB"
        f" | switch {st * 1e3:8.0f} ms {sm / MIB:7.0f} MiB | time ×{st / bt:5.2f}"
        f" | memory ×{sm / size:5.1f} of the file (parse alone ×{bm / size:4.1f})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,16", help="file sizes in MiB, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["json", "toml"], default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kvswitch-bench-big-"))
    env = {**os.environ, "HOME": str(tmp / "home"), "KVSWITCH_HOME": str(tmp / "kvswitch-home")}
    from kvswitch.io import MAX_FILE_BYTES

    print(f"size cap (kvswitch.io.MAX_FILE_BYTES): {MAX_FILE_BYTES / MIB:.0f} MiB; medians of {args.runs} runs")
    for mib in (float(s) for s in args.sizes.split(",")):
        target = min(int(mib * MIB), MAX_FILE_BYTES) - 512
        label = f"{mib:g} MiB"
        if args.only in (None, "json"):
            text, plain = big_settings(target)
            measure(label, "settings.json", text, "json", plain, args.runs, env, tmp / "json")
        if args.only in (None, "toml"):
            text = big_toml(target)
            measure(label, "config.toml", text, "tomllib", text, args.runs, env, tmp / "toml")
    print("goals at the cap: time ≤ 3× the plain parse, memory ≤ 10× the file size")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
