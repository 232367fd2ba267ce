"""Helpers for tests of the registered-client commands: run the CLI in process and capture
its output, set up kvswitch with ``init`` in the test's sandbox, and find leftovers.

Every test already has its own HOME, XDG dirs and KVSWITCH_HOME (``tests/conftest.py``), so
the article's default client paths are ``$HOME/.cline/settings.json`` and
``$XDG_CONFIG_HOME/cc-switch/config.toml``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvswitch.cli import main

__all__ = [
    "KEY_A",
    "KEY_B",
    "Result",
    "backups_under",
    "ccswitch_file",
    "cli",
    "cline_file",
    "config_data",
    "config_file",
    "init",
    "kvswitch_home",
    "temps_under",
]

KEY_A = "sk-live-7f3kQ9zR2mX8vB1nL4aA"
KEY_B = "sk-live-Jw5pT0cY6hG2dS9eK3bB"


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def cli(*argv: str, stdin: str | None = None) -> Result:
    """``kvswitch ARGV`` in this process; its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(argv))
    finally:
        sys.stdin = saved
    return Result(rc, out.getvalue(), err.getvalue())


def cline_file() -> Path:
    return Path(os.environ["HOME"]) / ".cline" / "settings.json"


def ccswitch_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "cc-switch" / "config.toml"


def kvswitch_home() -> Path:
    return Path(os.environ["KVSWITCH_HOME"])


def config_file() -> Path:
    return kvswitch_home() / "config" / "kvswitch.toml"


def config_data() -> dict[str, Any]:
    return tomllib.loads(config_file().read_text(encoding="utf-8"))


def init(
    *extra: str, profile: str = "A", key: str | None = None, preset: str = "taotoken", model: str = "gpt-4o-mini"
) -> Result:
    """``kvswitch init`` with the article's two clients at their default paths."""
    argv = ["init", "--profile", profile, "--preset", preset, "--model", model, *extra]
    argv.append("--key-stdin" if key is not None else "--no-key")
    result = cli(*argv, stdin=None if key is None else key + "\n")
    assert result.rc == 0, result
    return result


def temps_under(top: Path) -> list[Path]:
    """kvswitch temp files anywhere below ``top``."""
    return sorted(p for p in top.rglob("*") if ".kvswitch-" in p.name and p.name.endswith(".tmp"))


def backups_under(top: Path) -> list[Path]:
    """Backup files anywhere below ``top``."""
    return sorted(top.rglob("*.bak"))
