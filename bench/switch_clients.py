#!/usr/bin/env python3
"""Switching seven registered clients (the article's two shapes and the five real clients:
Claude Code, Codex, Cline, OpenCode, Qwen Code) against today's two-client switch, side by
side in one run: in process (``kvswitch.clients.switch_clients``) and as a whole
``python -m kvswitch switch MODE`` process. Each round times both setups, one after the other,
alternating split and merged; the figures are medians.

    .venv/bin/python bench/switch_clients.py [--rounds 21]

Goal (issue 11): seven clients cost at most 3x two, in process and whole process.

Two sandboxes (``HOME``, ``XDG_CONFIG_HOME`` and ``KVSWITCH_HOME`` in a temp dir each, the
profile's key from a variable, the null keyring), each set up with ``kvswitch init``; the
real clients' files are seeded with settings of their own (other providers, headers,
permissions) so a switch edits a file the way it would on a user's machine.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

KEY_VAR = "BENCH_KEY"
SEEDS: dict[str, str] = {
    ".claude/settings.json": json.dumps(
        {
            "permissions": {"allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"], "deny": ["WebFetch"]},
            "env": {"ANTHROPIC_CUSTOM_HEADERS": "X-Team: infra", "DISABLE_TELEMETRY": "1"},
            "includeCoAuthoredBy": False,
        },
        indent=2,
    )
    + "\n",
    ".codex/config.toml": (
        "# my Codex settings\n"
        'model_reasoning_effort = "medium"\n'
        "check_for_update_on_startup = false\n\n"
        "[model_providers.openrouter]\n"
        'name = "OpenRouter"\nbase_url = "https://openrouter.example/api/v1"\n'
        'env_key = "OPENROUTER_API_KEY"\nwire_api = "responses"\n\n'
        "[profiles.fast]\n"
        'model = "o4-mini"\nmodel_provider = "openrouter"\n\n'
        "[analytics]\nenabled = false\n"
    ),
    ".cline/data/settings/providers.json": json.dumps(
        {
            "version": 1,
            "lastUsedProvider": "anthropic",
            "providers": {
                "anthropic": {
                    "settings": {"provider": "anthropic", "model": "claude-sonnet-4"},
                    "updatedAt": "2026-11-30T09:12:44.120Z",
                    "tokenSource": "manual",
                }
            },
        },
        indent=2,
    )
    + "\n",
    ".config/opencode/opencode.json": json.dumps(
        {
            "$schema": "https://opencode.ai/config.json",
            "theme": "system",
            "autoupdate": False,
            "provider": {
                "ollama": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Ollama",
                    "options": {"baseURL": "http://127.0.0.1:11434/v1"},
                    "models": {"qwen3:8b": {}},
                }
            },
        },
        indent=2,
    )
    + "\n",
    ".qwen/settings.json": json.dumps(
        {
            "general": {"vimMode": False},
            "privacy": {"usageStatisticsEnabled": False},
            "ui": {"theme": "GitHub"},
        },
        indent=2,
    )
    + "\n",
}


def sandbox_env(top: Path) -> dict[str, str]:
    """The environment of one sandbox: nothing of the user's is read or written."""
    home = top / "home"
    home.mkdir(parents=True)
    return {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "KVSWITCH_HOME": str(top / "kvswitch-home"),
        KEY_VAR: "sk-bench-0123456789abcdefghij",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }


@contextlib.contextmanager
def inside(env: dict[str, str]):  # type: ignore[no-untyped-def]
    """``os.environ`` is ``env`` for the block (kvswitch reads its paths from it on each call)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cli(*argv: str) -> None:
    import kvswitch.cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = kvswitch.cli.main(list(argv))
    if rc != 0:
        raise SystemExit(f"kvswitch {' '.join(argv)} exited {rc}:\n{out.getvalue()}")


def set_up(env: dict[str, str], *, real: bool) -> int:
    """``kvswitch init`` (the article's two shapes), the per-mode URLs, and with ``real`` the
    five real clients registered; every file rendered once. Returns the number of clients."""
    with inside(env):
        from kvswitch.clients import apply_profile
        from kvswitch.config import read_config

        cli("init", "--preset", "lab", "--model", "tiny", "--key-env", KEY_VAR)
        path = read_config().path
        text = path.read_text(encoding="utf-8")  # the mode URLs, as a user adds them by hand
        text = text.replace("chunk_size = 512\n", 'chunk_size = 512\nurl = "http://127.0.0.1:18081/v1"\n', 1)
        text = text.replace(
            'transfer_protocol = "layer-wise"\n',
            'url = "http://127.0.0.1:18082/v1"\ntransfer_protocol = "layer-wise"\n',
            1,
        )
        path.write_text(text, encoding="utf-8")
        if real:
            home = Path(env["HOME"])
            for rel, seed in SEEDS.items():
                file = home / rel
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(seed, encoding="utf-8")
                cli("client", "add", str(file))
        apply_profile()
        return len(read_config().model.clients)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=21, help="rounds in process (whole process: half, at least 5)")
    rounds = ap.parse_args().rounds
    top = Path(tempfile.mkdtemp(prefix="kvswitch-bench-clients-"))
    try:
        return run(top, rounds)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run(top: Path, rounds: int) -> int:
    envs = {"two": sandbox_env(top / "two"), "seven": sandbox_env(top / "seven")}
    counts = {"two": set_up(envs["two"], real=False), "seven": set_up(envs["seven"], real=True)}
    assert counts == {"two": 2, "seven": 7}, counts

    from kvswitch.clients import switch_clients

    def flip(name: str, i: int) -> float:
        with inside(envs[name]):
            gc.collect()
            t0 = time.perf_counter()
            changes = switch_clients("split" if i % 2 == 0 else "merged")
            took = time.perf_counter() - t0
        assert sum(c.changed for c in changes) >= counts[name], (name, changes)  # every client written
        return took

    def whole(name: str, i: int) -> float:
        argv = [sys.executable, "-m", "kvswitch", "switch", "split" if i % 2 == 0 else "merged"]
        t0 = time.perf_counter()
        subprocess.run(argv, env=envs[name], capture_output=True, check=True)
        return time.perf_counter() - t0

    def side_by_side(fn: Callable[[str, int], float], n: int) -> dict[str, float]:
        samples: dict[str, list[float]] = {"two": [], "seven": []}
        for i in range(n):
            for name in ("two", "seven") if i % 2 == 0 else ("seven", "two"):
                samples[name].append(fn(name, i))
        return {name: median_ms(s) for name, s in samples.items()}

    for name in envs:  # both sandboxes back to merged, and the bytecode caches warm
        with inside(envs[name]):
            switch_clients("merged")
        subprocess.run(
            [sys.executable, "-m", "kvswitch", "switch", "merged"], env=envs[name], capture_output=True, check=True
        )
    inproc = side_by_side(flip, rounds)
    n_whole = max(5, rounds // 2)
    proc = side_by_side(whole, n_whole)

    print("kvswitch switch MODE: seven registered clients against two, side by side in one run")
    print("two:   the article's Cline-style settings.json and CC Switch-style config.toml")
    print("seven: those two + Claude Code, Codex, Cline providers.json, OpenCode, Qwen Code")
    print("(every switch also writes kvswitch.toml's mode; all files or none)\n")
    print(f"| {'':<46} | {'two':>9} | {'seven':>9} | {'seven/two':>9} | goal |")
    print(f"|{'-' * 48}|{'-' * 11}|{'-' * 11}|{'-' * 11}|------|")
    for label, res in (
        (f"in process: switch_clients (median of {rounds})", inproc),
        (f"whole process: python -m kvswitch switch ({n_whole})", proc),
    ):
        ratio = res["seven"] / res["two"]
        print(f"| {label:<46} | {res['two']:7.1f}ms | {res['seven']:7.1f}ms | {ratio:8.2f}x | ≤ 3x |")
    per_file = (inproc["seven"] - inproc["two"]) / 5
    print(f"\nin process, each real client adds {per_file:.1f} ms")
    ok = all(r["seven"] <= 3 * r["two"] for r in (inproc, proc))
    print("goal met" if ok else "GOAL MISSED: seven clients cost more than 3x two")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
