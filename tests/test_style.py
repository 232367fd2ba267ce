"""The code stays clean: ruff's lint (long lines included) and its formatter over the whole
tree, mypy --strict over the library and over the GUI package (``gui/`` is installed as
``kvswitch_gui``; mypy finds it through a link of that name, since it cannot follow an editable
install's package-dir mapping)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (the test extra has it)")
        pytest.skip(f"{name} is not installed")
    return found


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env={**os.environ, **env}
    )


def test_ruff_is_clean() -> None:
    done = _run([_tool("ruff"), "check", "--no-cache", "."])
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_applied() -> None:
    done = _run([_tool("ruff"), "format", "--check", "--no-cache", "."])
    assert done.returncode == 0, "run `ruff format .`:\n" + done.stdout + done.stderr


def test_mypy_strict_library(tmp_path: Path) -> None:
    done = _run([_tool("mypy"), "--cache-dir", str(tmp_path / "cache")])  # [tool.mypy]: strict, kvswitch
    assert done.returncode == 0 and "Success" in done.stdout, done.stdout + done.stderr


def test_mypy_strict_gui(tmp_path: Path) -> None:
    pytest.importorskip("PySide6")
    (tmp_path / "kvswitch_gui").symlink_to(ROOT / "gui", target_is_directory=True)
    done = _run(
        [_tool("mypy"), "--strict", "--cache-dir", str(tmp_path / "cache"), "-p", "kvswitch_gui"],
        MYPYPATH=str(tmp_path),
    )
    assert done.returncode == 0 and "Success" in done.stdout, done.stdout + done.stderr
