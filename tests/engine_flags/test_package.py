"""``kvswitch.engine_flags`` as a package: the same public names as the single module it was,
importing it loads nothing until a name is used, ``--reference`` never loads the builders, and
its modules import one way only (data, model, builders, front door)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import kvswitch.engine_flags as ef
from tests.conftest import ROOT

PUBLIC = [
    "CAVEATS",
    "DTYPES",
    "ENGINES",
    "MAPPING",
    "OTHER_ENGINES",
    "POLICIES",
    "ROUTERS",
    "ROUTER_MODES",
    "ROUTER_SPECS",
    "Backend",
    "Caveat",
    "CaveatSpec",
    "Command",
    "Engine",
    "EngineFlags",
    "EnvVar",
    "Flag",
    "Policy",
    "Router",
    "RouterMode",
    "RouterSpec",
    "engine_flags",
    "engines_reference",
]

# bottom to top: a module imports only modules before it (the package itself is last)
ORDER = [
    "caveats",
    "model",
    "dtypes",
    "where",
    "build",
    "placement",
    "vllm",
    "sglang",
    "routers",
    "commands",
    "reference",
    "",
]


def _loaded_after(code: str) -> list[str]:
    """The ``kvswitch.engine_flags`` modules (and json, shlex) loaded by ``code`` in a fresh process."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return [m for m in out.stdout.split() if m.startswith("kvswitch.engine_flags") or m in ("json", "shlex")]


def test_the_public_names_are_the_single_modules_and_all_resolve() -> None:
    assert ef.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(ef, name) is not None, name
    from kvswitch.engine_flags import ENGINE_NAMES  # the CLI's headings

    assert ENGINE_NAMES == {"vllm": "vLLM", "sglang": "SGLang"}
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = ef.nothing  # type: ignore[attr-defined]


def test_importing_the_package_loads_nothing_until_a_name_is_used() -> None:
    assert _loaded_after("import kvswitch.engine_flags") == ["kvswitch.engine_flags"]


def test_the_reference_never_loads_the_builders() -> None:
    loaded = _loaded_after("from kvswitch.engine_flags import engines_reference; engines_reference()")
    assert loaded == [
        "kvswitch.engine_flags",
        "kvswitch.engine_flags.caveats",
        "kvswitch.engine_flags.dtypes",
        "kvswitch.engine_flags.model",
        "kvswitch.engine_flags.reference",
    ]


_GRAPH = """
import json, grimp
graph = grimp.build_graph("kvswitch", cache_dir=None)
mods = [m for m in graph.modules if m == "kvswitch.engine_flags" or m.startswith("kvswitch.engine_flags.")]
print(json.dumps({m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d in mods) for m in mods}))
"""


def test_the_modules_import_downward_only() -> None:
    out = subprocess.run([sys.executable, "-c", _GRAPH], capture_output=True, text=True, check=True, cwd=ROOT)
    graph: dict[str, list[str]] = json.loads(out.stdout)
    rank = {("kvswitch.engine_flags." + name).rstrip("."): i for i, name in enumerate(ORDER)}
    assert sorted(graph) == sorted(rank), "a module was added or removed: place it in ORDER"
    upward = [(m, d) for m, deps in graph.items() for d in deps if rank[d] >= rank[m]]
    assert upward == []
    assert "kvswitch.engine_flags.caveats" in graph["kvswitch.engine_flags.model"]  # the graph has edges
