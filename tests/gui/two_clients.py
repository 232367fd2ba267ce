"""A kvswitch sandbox with two real clients' files registered (Claude Code unnamed, Qwen Code
named ``qwen``) and a profile whose modes have URLs of their own, for the tray's per-client
menus (offscreen tests, the real-tray test, docs/screenshots.py).

The clients' files start as the clients write them on their own (Claude Code's first run:
``{"env": {"DISABLE_AUTOUPDATER": "1"}}``; Qwen Code's settings with its privacy switch), then
``kvswitch profile use lab`` renders the profile into both, in a process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "MERGED_URL",
    "SPLIT_URL",
    "claude_mode",
    "file_mode",
    "make_two_clients",
    "npm_program",
    "qwen_mode",
    "run_kvswitch",
    "seed_files",
]

MERGED_URL = "http://127.0.0.1:8081"
SPLIT_URL = "http://127.0.0.1:8082"
_MODES = {MERGED_URL: "merged", SPLIT_URL: "split"}
ROOT = Path(__file__).resolve().parents[2]


def seed_files(home: Path) -> dict[str, Path]:
    """Claude Code's and Qwen Code's user files under ``home``, as the clients leave them."""
    claude = home / ".claude" / "settings.json"
    qwen = home / ".qwen" / "settings.json"
    for path, data in (
        (claude, {"env": {"DISABLE_AUTOUPDATER": "1"}}),
        (qwen, {"privacy": {"usageStatisticsEnabled": False}}),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return {"claude": claude, "qwen": qwen}


def make_two_clients(env: Mapping[str, str]) -> dict[str, Path]:
    """In the sandbox ``env`` names (HOME, KVSWITCH_HOME): both files, a kvswitch.toml that
    registers them with profile ``lab`` (merged → :data:`MERGED_URL`, split →
    :data:`SPLIT_URL`), and the profile applied. The files and the config by name."""
    home, kv_home = Path(env["HOME"]), Path(env["KVSWITCH_HOME"])
    files = seed_files(home)
    config = kv_home / "config" / "kvswitch.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        'version = 2\nmode = "merged"\nactive_profile = "lab"\n\n'
        '[profiles.lab]\nbase_url = "http://127.0.0.1:8080"\nmodel = "tiny"\nkey = "env:KVS_GUI_LAB_KEY"\n\n'
        f'[profiles.lab.merged]\nurl = "{MERGED_URL}"\n\n[profiles.lab.split]\nurl = "{SPLIT_URL}"\n\n'
        f'[[clients]]\npath = {json.dumps(str(files["claude"]))}\nkind = "claude-code"\n\n'
        f'[[clients]]\npath = {json.dumps(str(files["qwen"]))}\nkind = "qwen-code"\nname = "qwen"\n',
        encoding="utf-8",
    )
    run_kvswitch(env, "profile", "use", "lab")
    return {**files, "config": config}


def run_kvswitch(env: Mapping[str, str], *argv: str) -> None:
    """``kvswitch ARGV`` in a process of its own with ``env``; ``RuntimeError`` with its output
    when it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch", *argv],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kvswitch {' '.join(argv)} failed: {done.stdout}{done.stderr}")


def npm_program(root: Path, name: str, package: str, version: str) -> Path:
    """A program as npm installs one globally: ``root/bin/NAME`` a link to the entry script of
    ``root/lib/node_modules/PACKAGE`` (whose package.json has ``version``). The bin folder."""
    pkg = root / "lib" / "node_modules" / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "package.json").write_text(
        json.dumps({"name": package, "version": version, "bin": {name: "cli-entry.js"}}), encoding="utf-8"
    )
    entry = pkg / "cli-entry.js"
    entry.write_text("#!/usr/bin/env node\n", encoding="utf-8")
    entry.chmod(0o755)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    link = root / "bin" / name
    if not link.is_symlink():
        os.symlink(entry, link)
    return root / "bin"


def _json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def claude_mode(path: Path) -> str | None:
    """The mode Claude Code's file is in, by its base URL (``None``: neither mode's)."""
    env = _json(path).get("env")
    return _MODES.get(env.get("ANTHROPIC_BASE_URL")) if isinstance(env, dict) else None  # type: ignore[arg-type]


def qwen_mode(path: Path) -> str | None:
    """The mode Qwen Code's file is in, by its base URL."""
    auth = _json(path).get("security", {})
    auth = auth.get("auth", {}) if isinstance(auth, dict) else {}
    return _MODES.get(auth.get("baseUrl")) if isinstance(auth, dict) else None  # type: ignore[arg-type]


def file_mode(files: Mapping[str, Path]) -> tuple[str | None, str | None]:
    """(Claude Code's mode, Qwen Code's mode), read from their files."""
    return claude_mode(files["claude"]), qwen_mode(files["qwen"])
