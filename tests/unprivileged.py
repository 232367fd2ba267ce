"""Running kvswitch in a child process, as root or as an unprivileged user (uid 65534).

CI runs as root, where ``chmod`` stops nothing, so permission-denied cases drop privileges in
a child with ``setpriv`` (D-12). That child must be able to import kvswitch and its runtime
dependencies, and a checkout (with its virtual environment) may sit in a 0700 directory: so
:func:`public_package` copies the kvswitch package and the modules it imports into a
world-readable temp directory, and the child runs the real interpreter behind the venv
(``os.path.realpath(sys.executable)``) with ``PYTHONPATH`` set to that copy.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.conftest import require_tool

__all__ = ["NOBODY", "RUNTIME_DEPS", "chown_tree", "public_package", "run_child", "run_kvswitch"]

NOBODY = 65534
RUNTIME_DEPS = (
    "tomlkit",
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
    "platformdirs",
)
"""What ``kvswitch switch`` imports besides the standard library."""

_PUBLIC_COPY: list[Path] = []
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def public_package() -> Path:
    """A world-readable directory holding copies of kvswitch (with ``kvswitch.schemas``) and
    :data:`RUNTIME_DEPS` (made once per test session, removed at exit)."""
    if not _PUBLIC_COPY:
        top = Path(tempfile.mkdtemp(prefix="kvswitch-pkg-"))
        for name in ("kvswitch", *RUNTIME_DEPS):
            module = importlib.import_module(name)
            source = Path(module.__file__ or "")
            if source.name == "__init__.py":
                shutil.copytree(source.parent, top / name, ignore=_IGNORE)
            else:
                shutil.copy2(source, top / source.name)
        # kvswitch.schemas ships from the top-level schemas/ directory (see pyproject.toml)
        schemas = importlib.import_module("kvswitch.schemas")
        shutil.copytree(Path(schemas.__file__ or "").parent, top / "kvswitch" / "schemas", ignore=_IGNORE)
        for path in [top, *top.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
            else:
                path.chmod(0o755 if os.access(path, os.X_OK) else 0o644)
        _PUBLIC_COPY.append(top)
        atexit.register(shutil.rmtree, top, True)
    return _PUBLIC_COPY[0]


def chown_tree(top: Path, uid: int = NOBODY, gid: int = NOBODY) -> None:
    """Give ``top`` and everything below it to ``uid:gid`` (links themselves, not targets)."""
    for path in [top, *top.rglob("*")]:
        os.lchown(path, uid, gid)


def _setpriv() -> list[str]:
    return [require_tool("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def run_child(
    code: str, *args: str, as_nobody: bool = False, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` (dedented) with ``args`` in a child; ``home`` sets HOME and
    KVSWITCH_HOME (``home/kvswitch-home``); ``as_nobody`` drops to uid 65534."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if home is not None:
        env.update(HOME=str(home), KVSWITCH_HOME=str(home / "kvswitch-home"))
    cmd = [sys.executable, "-c", textwrap.dedent(code), *args]
    if as_nobody:
        env["PYTHONPATH"] = str(public_package())
        cmd = [*_setpriv(), os.path.realpath(sys.executable), "-c", textwrap.dedent(code), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd="/", check=False)


def run_kvswitch(
    argv: Sequence[str], env: Mapping[str, str], *, as_nobody: bool = True
) -> subprocess.CompletedProcess[str]:
    """``python -m kvswitch ARGV`` from the public copy, with ``env`` over the test's environment."""
    full = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(public_package()), **env)
    cmd = [os.path.realpath(sys.executable), "-m", "kvswitch", *argv]
    if as_nobody:
        cmd = [*_setpriv(), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=60, cwd="/", check=False)
