"""One exception tree: every exception class of kvswitch and the tray derives from
``KvswitchError``, and every public one stands in the tree drawn in ``kvswitch/errors.py``'s
docstring, under its own base, with the module that defines it.

The sources are read with ``ast`` (nothing is imported but the foreign bases a class names), so
the check also runs on a package written to a temporary folder."""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

ROOT_CLASS = ("kvswitch.errors", "KvswitchError")
OUTSIDE = {
    # SIGTERM interrupting the main thread as Ctrl-C would: an ``except KvswitchError`` on its
    # way (the watcher reports per-file errors so) must not swallow it
    ("kvswitch.cli.watch", "_Terminated"): "a stop request, not an error",
}
PENDING: set[tuple[str, str]] = set()
_BRANCH = re.compile(r"^(?P<lead>(?:[│ ] {3})*)(?:├── |└── )(?P<name>\w+)(?:\s+\((?P<module>[\w.]+)\))?")

Ref = tuple[str, str]  # (module, class name)


@dataclass
class Module:
    name: str
    path: Path
    classes: dict[str, tuple[int, list[ast.expr]]] = field(default_factory=dict)
    names: dict[str, Ref] = field(default_factory=dict)  # from X import Y as Z: Z -> (X, Y)
    modules: dict[str, str] = field(default_factory=dict)  # import X.Y as Z: Z -> X.Y


def read_package(name: str, directory: Path) -> dict[str, Module]:
    """Every module of the package in ``directory``, named as if ``directory`` were ``name``."""
    out: dict[str, Module] = {}
    for path in sorted(directory.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [name, *path.relative_to(directory).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        mod = Module(".".join(parts), path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                mod.classes.setdefault(node.name, (node.lineno, list(node.bases)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = parts if is_package else parts[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    mod.names[alias.asname or alias.name] = (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        mod.modules[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        mod.modules[head] = head
        out[mod.name] = mod
    return out


class Tree:
    """The exception classes of some packages, their bases resolved across modules."""

    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules

    def resolve(self, module: str, expr: ast.expr) -> Ref | None:
        """The class a base expression names, as (module, name), or ``None`` if unknown."""
        if isinstance(expr, ast.Subscript):
            return self.resolve(module, expr.value)
        mod = self.modules[module]
        if isinstance(expr, ast.Name):
            if expr.id in mod.classes:
                return (module, expr.id)
            if expr.id in mod.names:
                return self._follow(*mod.names[expr.id])
            if hasattr(builtins, expr.id):
                return ("builtins", expr.id)
            return None
        if isinstance(expr, ast.Attribute):
            dotted = ast.unparse(expr.value)
            head, _, rest = dotted.partition(".")
            target = mod.modules.get(head) or (".".join(mod.names[head]) if head in mod.names else head)
            return self._follow(f"{target}.{rest}" if rest else target, expr.attr)
        return None

    def _follow(self, module: str, name: str, depth: int = 0) -> Ref:
        """Where ``name`` imported from ``module`` is defined (through re-exports)."""
        mod = self.modules.get(module)
        if mod is None or name in mod.classes or depth > 10:
            return (module, name)
        if name in mod.names:
            return self._follow(*mod.names[name], depth + 1)
        sub = f"{module}.{name}"
        return (sub, "") if sub in self.modules else (module, name)

    def bases(self, ref: Ref) -> list[Ref | None]:
        module, name = ref
        return [self.resolve(module, b) for b in self.modules[module].classes[name][1]]

    def is_internal(self, ref: Ref) -> bool:
        return ref[0] in self.modules and ref[1] in self.modules[ref[0]].classes

    def is_exception(self, ref: Ref | None, seen: frozenset[Ref] = frozenset()) -> bool:
        if ref is None or ref in seen:
            return False
        if self.is_internal(ref):
            return any(self.is_exception(b, seen | {ref}) for b in self.bases(ref))
        try:
            obj = getattr(importlib.import_module(ref[0]), ref[1])
        except (ImportError, AttributeError, ValueError):
            return False
        return isinstance(obj, type) and issubclass(obj, BaseException)

    def under_root(self, ref: Ref | None, seen: frozenset[Ref] = frozenset()) -> bool:
        if ref is None or ref in seen:
            return False
        if ref == ROOT_CLASS:
            return True
        return self.is_internal(ref) and any(self.under_root(b, seen | {ref}) for b in self.bases(ref))

    def exceptions(self) -> list[Ref]:
        refs = [(m.name, c) for m in self.modules.values() for c in m.classes]
        return sorted(r for r in refs if self.is_exception(r))


def drawn_tree(doc: str) -> dict[str, tuple[str | None, str | None]]:
    """The tree in a docstring: each class name → (its parent's name, the module named beside it)."""
    out: dict[str, tuple[str | None, str | None]] = {}
    stack: list[str] = []
    for line in doc.splitlines():
        text = line.strip("\n")[4:] if line.startswith("    ") else line
        if text.startswith("KvswitchError"):
            stack = ["KvswitchError"]
            out["KvswitchError"] = (None, None)
            continue
        m = _BRANCH.match(text)
        if m is None or not stack:
            continue
        depth = len(m.group("lead")) // 4 + 1
        del stack[depth:]
        out[m.group("name")] = (stack[depth - 1], m.group("module"))
        stack.append(m.group("name"))
    return out


def problems(tree: Tree, doc: str) -> list[str]:
    """Every exception class outside the root, and every public one the drawn tree lacks or
    puts under the wrong base or module; private ones must be named in the docstring."""
    drawn = drawn_tree(doc)
    found: list[str] = []
    for ref in tree.exceptions():
        module, name = ref
        where = f"{module}.{name}"
        if ref in OUTSIDE or ref in PENDING:
            if tree.under_root(ref):
                found.append(f"{where} is under KvswitchError now: take it off OUTSIDE/PENDING")
            continue
        if not tree.under_root(ref):
            found.append(f"{where} does not derive from KvswitchError")
            continue
        if ref == ROOT_CLASS:
            continue
        if name.startswith("_"):
            if f"``{name}``" not in doc:
                found.append(f"{where}: a private signal missing from errors.py's docstring")
            continue
        if name not in drawn:
            found.append(f"{where} is missing from the tree in errors.py's docstring")
            continue
        parent, named_module = drawn[name]
        base_names = [b[1] for b in tree.bases(ref) if b is not None]
        if parent not in base_names:
            found.append(f"{where} is drawn under {parent}, but its bases are {base_names}")
        own = None if module == "kvswitch.errors" else module.removeprefix("kvswitch.")
        if named_module != own:
            found.append(f"{where} is drawn as defined in {named_module or 'errors'}")
    names = {r[1] for r in tree.exceptions()}
    found += [f"{name} is drawn in the tree but defined nowhere" for name in drawn if name not in names]
    return found


def _project() -> dict[str, Module]:
    modules = read_package("kvswitch", ROOT / "kvswitch")
    if importlib.util.find_spec("PySide6") is not None:  # the tray's bases are Qt classes
        modules |= read_package("kvswitch_gui", ROOT / "gui")
    return modules


def _doc() -> str:
    doc = ast.get_docstring(ast.parse((ROOT / "kvswitch" / "errors.py").read_text()))
    assert doc is not None
    return doc


def test_every_exception_class_is_in_the_one_tree() -> None:
    tree = Tree(_project())
    assert len(tree.exceptions()) > 40  # the walk found them all, not none
    assert problems(tree, _doc()) == []


def test_the_drawn_tree_matches_the_classes_at_runtime() -> None:
    from kvswitch import errors

    drawn = drawn_tree(_doc())
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and obj is not errors.KvswitchError:
            parent, module = drawn[name]
            assert module is None and parent in [b.__name__ for b in obj.__bases__], name


def test_a_usage_error_is_a_kvswitch_error_with_exit_2() -> None:
    from kvswitch.cli._handler import UsageError as handler_usage_error
    from kvswitch.cli._handler import exit_code
    from kvswitch.errors import KvswitchError, UsageError

    assert handler_usage_error is UsageError and issubclass(UsageError, KvswitchError)
    assert exit_code(UsageError("--x goes with --y")) == 2


def test_errors_that_were_value_errors_still_are() -> None:
    from kvswitch.errors import KvswitchError
    from kvswitch.formats.jsonc_tree import JsoncSyntaxError
    from kvswitch.formats.toml import TomlSyntaxError
    from kvswitch.probe.sse import SSEError

    for cls in (JsoncSyntaxError, TomlSyntaxError, SSEError):
        assert issubclass(cls, KvswitchError) and issubclass(cls, ValueError), cls
    err = JsoncSyntaxError("unexpected end of file", 7)
    assert (str(err), err.offset, err.args) == ("unexpected end of file", 7, ("unexpected end of file",))
    toml = TomlSyntaxError("bad", 2, 3)
    assert (str(toml), toml.message, toml.line, toml.column) == ("bad", "bad", 2, 3)


def _write(directory: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        (directory / rel).write_text(text)
    return directory


@pytest.fixture
def fake(tmp_path: Path) -> Tree:
    """A package beside the real kvswitch.errors, with one class of each kind."""
    pkg = _write(
        tmp_path / "fakepkg",
        {
            "__init__.py": "",
            "good.py": "from kvswitch.errors import ConfigError\n\nclass Drawn(ConfigError):\n    pass\n",
            "bad.py": "class Stray(ValueError):\n    pass\n\nclass _Quiet(Exception):\n    pass\n",
            "hidden.py": "from kvswitch.errors import KvswitchError\n\nclass Undrawn(KvswitchError):\n    pass\n",
            "plain.py": "class NotAnError(dict):\n    pass\n",
        },
    )
    real = read_package("kvswitch", ROOT / "kvswitch")
    return Tree({"kvswitch.errors": real["kvswitch.errors"], **read_package("fakepkg", pkg)})


def test_a_class_outside_the_tree_is_caught(fake: Tree) -> None:
    doc = _doc().replace(
        "    │   └── ConfigVersionError", "    │   ├── Drawn (fakepkg.good)\n    │   └── ConfigVersionError"
    )
    found = problems(fake, doc)
    assert "fakepkg.bad.Stray does not derive from KvswitchError" in found
    assert "fakepkg.bad._Quiet does not derive from KvswitchError" in found
    assert "fakepkg.hidden.Undrawn is missing from the tree in errors.py's docstring" in found
    assert not [p for p in found if "Drawn " in p or "NotAnError" in p], found


def test_a_class_drawn_under_the_wrong_base_or_module_is_caught(fake: Tree) -> None:
    doc = _doc().replace("    ├── EditError ", "    ├── Drawn (fakepkg.elsewhere)\n    ├── EditError ")
    found = problems(fake, doc)
    assert "fakepkg.good.Drawn is drawn under KvswitchError, but its bases are ['ConfigError']" in found
    assert "fakepkg.good.Drawn is drawn as defined in fakepkg.elsewhere" in found
