#!/usr/bin/env python3
"""kvswitch's main job, end to end, on this machine: ``python3 docs/quickstart.py``.

Needs only python3 and pip; idempotent (a second run reuses the environment and starts a
fresh sandbox). Every step prints the command it runs:

1. sets up ``.venv`` with kvswitch and its lab (a real llama.cpp server from a wheel);
2. in a sandbox (``.quickstart/``: its own HOME and KVSWITCH_HOME — nothing of yours is
   touched) starts the lab: a merged llama.cpp instance and a split pair (prefill and decode
   servers handing the KV cache over per request) behind a router on 127.0.0.1;
3. ``kvswitch init`` with the lab preset: two client files in the cache-strategy shapes (Cline settings.json,
   CC Switch config.toml) and a ``lab`` profile, which ``lab up`` completes with its endpoints
   and ``kvswitch profile use lab`` renders into both files;
4. ``kvswitch switch merged`` → ``kvswitch probe`` (merged) → ``kvswitch switch split`` →
   ``kvswitch probe`` (split), each probe under background decode load, where split's
   benefit can show; then both side by side with the split/merged ratio and its 95 % interval;
5. ``kvswitch lab down``.

``--short`` is the quick version CI runs (the tiny model, fewer runs).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bootstrap() -> Path:
    spec = importlib.util.spec_from_file_location("kvswitch_tests_run", ROOT / "tests" / "run.py")
    assert spec and spec.loader
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    run.ensure_debian()
    run.ensure_venv("lab")
    return Path(run.PY)


def _free_port(preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise SystemExit("quickstart: no free port on 127.0.0.1")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true", help="the quick version (tiny model, few runs): what CI runs")
    ap.add_argument("--dir", type=Path, default=ROOT / ".quickstart", help="the sandbox (default .quickstart/)")
    ap.add_argument("--port", type=int, default=18080, help="the lab router's port (another if busy)")
    args = ap.parse_args()

    py = _bootstrap()
    sandbox = args.dir.absolute()
    shutil.rmtree(sandbox, ignore_errors=True)
    home = sandbox / "home"
    home.mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KVSWITCH_", "XDG_"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "KVSWITCH_HOME": str(sandbox / "kvswitch-home"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",  # the lab needs no key; touch no keyring
    }
    preset, runs, prompt, background = ("tiny", "6", "512", "2") if args.short else ("medium", "12", "1024", "2")
    port = _free_port(args.port)
    reports = sandbox / "reports"
    reports.mkdir()

    def kv(*cmd: str, capture: Path | None = None) -> int:
        shown = " ".join(c.replace(str(sandbox), ".quickstart") for c in cmd)
        print(f"\n$ kvswitch {shown}" + (f" > {capture.name}" if capture else ""), flush=True)
        if capture is None:
            return subprocess.call([str(py), "-m", "kvswitch", *cmd], env=env)
        with capture.open("w") as out:
            return subprocess.call([str(py), "-m", "kvswitch", *cmd], env=env, stdout=out)

    probe = [
        "probe",
        "--profile",
        "lab",
        "--runs",
        runs,
        "--warmup",
        "2",
        "--prompt-tokens",
        prompt,
        "--max-tokens",
        "32",
        "--background",
        background,
        "--background-max-tokens",
        "256",
        "--format",
        "json",
    ]
    status = 1
    try:
        steps: list[tuple[list[str], Path | None]] = [
            (["init", "--preset", "lab", "--model", f"kvswitch-lab-{preset}", "--no-key"], None),
            (["lab", "up", "--port", str(port), "--preset", preset], None),
            (["profile", "use", "lab"], None),  # the lab's endpoints into both client files
            (["status"], None),
            (["switch", "merged"], None),
            ([*probe, "--mode", "merged"], reports / "merged.json"),
            (["switch", "split"], None),
            ([*probe, "--mode", "split"], reports / "split.json"),
        ]
        for cmd, capture in steps:
            code = kv(*cmd, capture=capture)
            if code != 0 and cmd[0] not in ("status",):
                print(f"quickstart: `kvswitch {cmd[0]}` failed (exit {code})", file=sys.stderr)
                return 1
        print("\nside by side (each probe under background decode load):", flush=True)
        status = kv("probe", "--combine", str(reports / "merged.json"), str(reports / "split.json"))
    finally:
        kv("lab", "down")
    print(f"\nquickstart: {'done' if status == 0 else 'failed'} (sandbox and reports in {sandbox})")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
