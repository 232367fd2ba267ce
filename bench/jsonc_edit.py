#!/usr/bin/env python3
"""JSONC edit speed on a 1 KB and a 1 MB settings.json, with the verify-after-write re-parse
reported apart (D-12), plus TOML for comparison.

    .venv/bin/python bench/jsonc_edit.py

Goals (issue 2): one edit ≤ 150 ms on 1 MB, ≤ 1 ms on 1 KB.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from _settings import user_settings  # bench/ is on the path when a benchmark runs

from kvswitch.document import parse_config
from kvswitch.edits import Set
from kvswitch.formats.jsonc import JsoncDocument
from kvswitch.formats.toml import TomlDocument
from kvswitch.switching import plan_switch

ROOT = Path(__file__).resolve().parent.parent
PATH = ("cline.cacheStrategy", "mode")


def big_settings(target_bytes: int, seed: int = 7) -> str:
    """A settings.json of about ``target_bytes``: nested objects, comments, trailing commas."""
    parts = user_settings(target_bytes, seed)
    parts.append('    "cline.openAiBaseUrl": "https://taotoken.net/api",\n')
    parts.append(
        '    "cline.cacheStrategy": {\n        "mode": "merged", // merged | split\n'
        '        "chunkSize": 512,\n        "kvCacheDtype": "auto",\n        "enablePrefixCache": true\n    },\n}\n'
    )
    return "".join(parts)


def best(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        gc.collect()  # each sample starts clean: no garbage from the previous one
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def measure(label: str, text: str, runs: int) -> None:
    doc = JsoncDocument(text)
    load = best(lambda: JsoncDocument(text), runs)
    # the edit alone: find the property (nodes are built on demand) and splice its value
    edit = best(lambda: JsoncDocument(text).set(PATH, "split").text, runs) - load
    out = doc.set(PATH, "split").text
    verify = best(lambda: JsoncDocument(out).value, runs)
    cf = parse_config(text, "cline")
    plan = plan_switch(cf, "split")
    switch = best(lambda: parse_config(text, "cline").doc.apply(list(plan.edits)), runs)
    # lint without --kind: the kind is told from the path and content, then the file is parsed
    detect = best(lambda: parse_config(text, None, Path("settings.json")), runs)
    print(
        f"{label:>6} ({len(text.encode()):>9,} B): load {load * 1e3:7.2f} ms | edit {edit * 1e3:7.2f} ms | "
        f"load+edit {(load + edit) * 1e3:7.2f} ms | verify re-parse {verify * 1e3:7.2f} ms | "
        f"whole switch, verified (load, 5 edits, verify) {switch * 1e3:7.2f} ms | "
        f"kind detected + parsed {detect * 1e3:7.2f} ms"
    )


def main() -> int:
    small = (ROOT / "tests" / "fixtures" / "cline" / "vscode-user.json").read_text()
    measure("1 KB", small, 200)
    big = big_settings(1_000_000)
    measure("1 MB", big, 5)
    toml_text = (ROOT / "tests" / "fixtures" / "ccswitch" / "rich.toml").read_text()
    tdoc = TomlDocument(toml_text)
    t_parse = best(lambda: TomlDocument(toml_text), 50)
    t_edit = best(lambda: tdoc.apply([Set(("cache", "mode"), "split")]), 50)
    print(
        f"  TOML ({len(toml_text):>9,} B): tomllib parse {t_parse * 1e3:.2f} ms | tomlkit edit + tomllib verify "
        f"{t_edit * 1e3:.2f} ms"
    )
    print("goals: load+edit ≤ 150 ms on 1 MB and ≤ 1 ms on 1 KB; verify reported apart (D-12)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
