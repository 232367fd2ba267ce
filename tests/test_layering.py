"""Layering rules, enforced: the import contracts in ``.importlinter`` (the library never imports
the CLI, Qt or the tray; the tray never imports the CLI; no cycles between the modules of one
package), no import cycle between any two modules of kvswitch, and what import-linter cannot
see: the library never prints, never exits, and only kvswitch/io.py writes files."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LIBRARY = ROOT / "kvswitch"
CONTRACTS = ROOT / ".importlinter"

_GRAPH = """
import json, sys
import grimp
graph = grimp.build_graph(sys.argv[1], cache_dir=None)
edges = {}
for importer in sorted(graph.modules):
    edges[importer] = sorted(graph.find_modules_directly_imported_by(importer))
print(json.dumps(edges))
"""


def _lint_imports(root: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with ``root``'s contracts, run in ``root`` (a fresh process, no cache)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, str(root / ".importlinter"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _module_graph(package: str, where: Path | None = None) -> dict[str, list[str]]:
    """Every module of ``package`` and what it imports (grimp: function-level and
    ``TYPE_CHECKING`` imports count too), read in a fresh process from ``where``."""
    env = dict(os.environ)
    if where is not None:
        env["PYTHONPATH"] = str(where)
    out = subprocess.run(
        [sys.executable, "-c", _GRAPH, package],
        cwd=where or ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    graph: dict[str, list[str]] = json.loads(out.stdout)
    return graph


def cycles(graph: dict[str, list[str]], ignored: set[tuple[str, str]] | None = None) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion),
    leaving out the ``ignored`` imports."""
    skip = ignored or set()
    adj = {m: [d for d in deps if d in graph and (m, d) not in skip] for m, deps in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(adj):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(adj[node])):
                nxt = adj[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _copy_tree(dest: Path) -> Path:
    """The Python sources of kvswitch and the tray (as ``kvswitch_gui``) and the contracts, in ``dest``."""
    for src, name in ((LIBRARY, "kvswitch"), (ROOT / "gui", "kvswitch_gui")):
        for path in src.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            target = dest / name / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    shutil.copyfile(CONTRACTS, dest / ".importlinter")
    return dest


# -- the contracts -------------------------------------------------------------------------------


def test_the_import_contracts_are_kept() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout and " kept, 0 broken." in done.stdout


def test_a_library_import_of_the_cli_or_a_cycle_in_a_package_breaks_the_contracts(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    with (tree / "kvswitch" / "backups.py").open("a") as fh:
        fh.write("\nimport kvswitch.cli.lint  # the library reaching up\n")
    with (tree / "kvswitch_gui" / "tray.py").open("a") as fh:
        fh.write("\nimport kvswitch.cli.status  # the tray reaching into the CLI\n")
    with (tree / "kvswitch" / "formats" / "edited.py").open("a") as fh:
        fh.write("\nimport kvswitch.formats.jsonc  # jsonc imports edited: a cycle\n")
    done = _lint_imports(tree, pythonpath=tree)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "the library never imports the CLI, Qt or the tray BROKEN" in out
    assert "kvswitch.backups -> kvswitch.cli.lint" in out
    assert "the tray never imports the CLI BROKEN" in out
    assert "kvswitch_gui.tray -> kvswitch.cli.status" in out
    assert "No cycles are allowed in kvswitch.formats." in out
    assert ".edited -> .jsonc" in out or ".jsonc -> .edited" in out  # the import that closes the cycle


def test_the_library_never_imports_qt_directly(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    with (tree / "kvswitch" / "render.py").open("a") as fh:
        fh.write("\nfrom PySide6 import QtCore  # Qt in the library\n")
    done = _lint_imports(tree, pythonpath=tree)
    assert done.returncode != 0
    assert "kvswitch.render -> PySide6" in done.stdout, done.stdout + done.stderr


# -- no cycles between any two modules ----------------------------------------------------------


def test_no_module_of_kvswitch_imports_itself_back() -> None:
    found = cycles(_module_graph("kvswitch"))
    assert not found, f"import cycles: {found}"


def test_no_module_of_the_tray_imports_itself_back(tmp_path: Path) -> None:
    pytest.importorskip("PySide6")
    # gui/ is installed as kvswitch_gui (an editable mapping grimp cannot follow): a link of that name
    (tmp_path / "kvswitch_gui").symlink_to(ROOT / "gui", target_is_directory=True)
    graph = _module_graph("kvswitch_gui", tmp_path)
    assert len(graph) > 10  # the package was found
    found = cycles(graph)
    assert not found, f"import cycles: {found}"


def test_a_cycle_is_found_even_through_a_function_level_import(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    with (tree / "kvswitch" / "location.py").open("a") as fh:
        fh.write("\n\ndef _late() -> None:\n    from kvswitch.errors import KvswitchError  # noqa: F401\n")
    found = cycles(_module_graph("kvswitch", tree))
    assert any({"kvswitch.errors", "kvswitch.location"} <= set(component) for component in found), found


def test_the_cycle_finder_finds_long_cycles_and_only_them() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"]}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles(graph, {("c", "a")}) == []


# -- what import-linter cannot see ---------------------------------------------------------------


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


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
