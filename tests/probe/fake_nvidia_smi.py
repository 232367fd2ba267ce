#!/usr/bin/env python3
"""A stand-in for ``nvidia-smi`` (D-10: no GPU here) that prints the documented CSV formats
(reference notes on engines, §5.5): comma + space separators, one line per GPU in index order,
a header with units unless ``noheader``, units unless ``nounits``, ``[N/A]`` fields, and in
loop mode (``-lms N`` / ``-l N``) one block of lines per sample, forever.

Environment:
  FAKE_SMI_MODE     one (default) | eight | na | mig | mig-rows | garbage | hang | fail
  FAKE_SMI_UUID     the UUID of GPU 0 (two instances reporting one card, S-27)
  FAKE_SMI_SEQ      memory.used of GPU 0 per sample, comma separated; the last value repeats
                    (a ramp); GPU i adds 1000 * i
  FAKE_SMI_COUNT    print this many samples, then go silent (but keep running, like the loop)
  FAKE_SMI_PIDFILE  append this process's pid to the file at start (counting processes)
  FAKE_SMI_APPS     --query-compute-apps output: rows (default) | na | none | fail
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

UUIDS = [
    "GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf",
    "GPU-4eac38f2-1a70-662a-f6f4-9b62d1778ef4",
    "GPU-f7c1496c-b7f5-b1d2-78ea-68826f778059",
    "GPU-0b1f6a3e-5c44-4d1e-9a2b-1c2d3e4f5a60",
    "GPU-1c2f7b4f-6d55-4e2f-8b3c-2d3e4f5a6b71",
    "GPU-2d3a8c5a-7e66-4f3a-9c4d-3e4f5a6b7c82",
    "GPU-3e4b9d6b-8f77-4a4b-8d5e-4f5a6b7c8d93",
    "GPU-4f5cae7c-9a88-4b5c-9e6f-5a6b7c8d9ea4",
]
UNITS = {"memory.used": "MiB", "memory.total": "MiB", "utilization.gpu": "%", "power.draw": "W"}


def install(directory: Path, *, record_args: Path | None = None) -> Path:
    """Write ``<directory>/nvidia-smi``: a shell wrapper that ``exec``s this script with the
    running interpreter (so the sampler's process is the stand-in itself); with
    ``record_args`` it first writes its arguments there."""
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "nvidia-smi"
    record = f"echo \"$@\" > '{record_args}'\n" if record_args else ""
    wrapper.write_text(f"#!/bin/sh\n{record}exec '{sys.executable}' '{Path(__file__).resolve()}' \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def arg(prefix: str) -> str | None:
    for a in sys.argv[1:]:
        if a.startswith(prefix):
            return a[len(prefix) :]
    return None


def loop_ms() -> int | None:
    argv = sys.argv[1:]
    for flag, scale in (("-lms", 1), ("-l", 1000)):
        if flag in argv:
            i = argv.index(flag)
            return int(argv[i + 1]) * scale
    return None


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def gpus(mode: str, sample: int) -> list[dict[str, str]]:
    seq = [float(v) for v in os.environ.get("FAKE_SMI_SEQ", "1000").split(",")]
    used0 = seq[min(sample, len(seq) - 1)]
    n = 8 if mode == "eight" else 1
    rows = []
    for i in range(n):
        uuid = UUIDS[i]
        if i == 0 and os.environ.get("FAKE_SMI_UUID"):
            uuid = os.environ["FAKE_SMI_UUID"]
        rows.append(
            {
                "index": str(i),
                "uuid": uuid,
                "name": "NVIDIA H100 80GB HBM3",
                "memory.used": f"{used0 + 1000 * i:g}",
                "memory.total": "81559",
                "utilization.gpu": "0",
                "power.draw": "70.12",
            }
        )
    if mode == "na":  # unified memory (GB10): the discrete VRAM fields are not populated
        rows[0].update({"name": "NVIDIA GB10", "memory.used": "[N/A]", "memory.total": "[N/A]"})
    if mode == "mig":  # the parent GPU's row: memory is the aggregate, utilization N/A
        rows[0].update({"utilization.gpu": "[N/A]"})
    if mode == "mig-rows":  # MIG instances listed by UUID (as a MIG-aware wrapper lists them)
        base = rows[0]
        rows = [
            base
            | {
                "index": "0",
                "uuid": "MIG-5c4c0e3a-2b0e-5d7c-9a1e-0f7e6d5c4b3a",
                "memory.used": "[N/A]",
                "memory.total": "[N/A]",
            },
            base
            | {
                "index": "0",
                "uuid": "MIG-GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf/1/0",
                "memory.used": "[Not Supported]",
                "memory.total": "20096",
            },
        ]
    return rows


def field(row: dict[str, str], name: str, nounits: bool) -> str:
    value = row.get(name, "[N/A]")
    if value.startswith("[") or nounits or name not in UNITS:
        return value
    return f"{value} {UNITS[name]}"


def header(names: list[str]) -> str:
    return ", ".join(f"{n} [{UNITS[n]}]" if n in UNITS else n for n in names)


def query_apps(fmt: str) -> int:
    kind = os.environ.get("FAKE_SMI_APPS", "rows")
    if kind == "fail":
        out("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
        return 9
    nounits = "nounits" in fmt
    unit = "" if nounits else " MiB"
    if "noheader" not in fmt:
        out("gpu_uuid, pid, used_gpu_memory [MiB]\n")
    if kind == "rows":
        out(f"{UUIDS[0]}, 1912379, 518{unit}\n{UUIDS[2]}, 3891903, 74698{unit}\n")
    elif kind == "na":  # Windows WDDM: per-process memory is not available
        out(f"{UUIDS[0]}, 1584, [N/A]\n")
    return 0


def main() -> int:
    if os.environ.get("FAKE_SMI_PIDFILE"):
        with open(os.environ["FAKE_SMI_PIDFILE"], "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    mode = os.environ.get("FAKE_SMI_MODE", "one")
    fmt = arg("--format=") or "csv"
    if arg("--query-compute-apps=") is not None:
        return query_apps(fmt)
    if mode == "fail":
        out("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
        return 9
    names = (arg("--query-gpu=") or "index,uuid,memory.used,memory.total").split(",")
    nounits = "nounits" in fmt
    every = loop_ms()
    count = int(os.environ.get("FAKE_SMI_COUNT", "0")) or None
    if mode == "hang":
        while True:
            time.sleep(3600)
    if "noheader" not in fmt:
        out(header(names) + "\n")
    sample = 0
    while True:
        block = [", ".join(field(row, n, nounits) for n in names) for row in gpus(mode, sample)]
        if mode == "garbage":
            block = [
                "Unable to determine the device handle for GPU0000:01:00.0: Unknown Error",
                block[0],
                "",
                "0, not-a-uuid, 1, 2",
                "1, GPU-too-few, 5",
                "x, GPU-abc, 1, 2",
            ]
        out("".join(line + "\n" for line in block))
        sample += 1
        if every is None:
            return 0
        if count is not None and sample >= count:
            while True:
                time.sleep(3600)
        time.sleep(every / 1000)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
