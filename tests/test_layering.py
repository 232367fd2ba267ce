"""Layering rules, enforced: the library never imports Qt, never prints, never exits, and
only kvswitch/io.py writes files."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

LIBRARY = ROOT / "kvswitch"


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_import_kvswitch_never_imports_qt_or_the_gui() -> None:
    mods = _modules_after("import kvswitch, kvswitch.models, kvswitch.switching, kvswitch.linter, kvswitch.rules")
    assert not {m for m in mods if m.startswith(("PySide6", "shiboken6", "kvswitch_gui", "gui"))}


def test_the_hook_path_stays_lean() -> None:
    mods = _modules_after("from kvswitch.cli import build_parser; build_parser()")
    heavy = {"pydantic", "tomlkit", "keyring", "watchdog", "httpx", "json5", "platformdirs"}
    assert not heavy & {m.split(".")[0] for m in mods}


def _library_files() -> list[Path]:
    return [p for p in LIBRARY.rglob("*.py") if "cli" not in p.relative_to(LIBRARY).parts and p.name != "__main__.py"]


def test_the_library_never_prints_or_exits() -> None:
    for path in _library_files():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("print", "exit", "quit", "input"), f"{path}:{node.lineno}"
            if isinstance(node, ast.Attribute) and node.attr == "exit":
                assert not (isinstance(node.value, ast.Name) and node.value.id == "sys"), f"{path}:{node.lineno}"
            if isinstance(node, ast.Name):
                assert node.id != "SystemExit", f"{path}:{node.lineno}"


def test_only_io_writes_files() -> None:
    writers = {"write_text", "write_bytes"}
    for path in LIBRARY.rglob("*.py"):
        if path.name == "io.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in writers:
                raise AssertionError(f"{path}:{node.lineno} writes a file outside kvswitch/io.py")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
                modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
                assert not any(set(str(m)) & set("wax+") for m in modes), f"{path}:{node.lineno}"
