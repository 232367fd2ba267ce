"""``kvswitch switch``, ``status`` and ``lint`` on a valid setup never import pydantic (the
config is checked against its generated schema, :mod:`kvswitch.config_check`), and a switch
with no gateway about imports none of the gateway's control code; an invalid config still
gets pydantic's reference message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_RUN = """
import sys
from kvswitch.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write(str(code) + "\\n" + "\\n".join(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    top = tmp_path_factory.mktemp("lean")
    home = top / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVSWITCH_", "XDG_", "LC_", "LANG"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".state"),
        KVSWITCH_HOME=str(top / "kvswitch-home"),
        KVSWITCH_LANG="en",
        LEAN_KEY="sk-lean-0123456789abcdefghij",
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
    )
    init = ["init", "--preset", "lab", "--model", "tiny", "--key-env", "LEAN_KEY"]
    subprocess.run([sys.executable, "-m", "kvswitch", *init], env=env, cwd=top, check=True, capture_output=True)
    return top, env


def _modules(sandbox: tuple[Path, dict[str, str]], *argv: str) -> tuple[int, set[str]]:
    top, env = sandbox
    out = top / "modules.txt"
    subprocess.run([sys.executable, "-c", _RUN, str(out), *argv], env=env, cwd=top, check=True, capture_output=True)
    code, *names = out.read_text().splitlines()
    return int(code), set(names)


@pytest.mark.parametrize(
    "argv",
    [
        ("switch", "split"),
        ("switch", "merged"),
        ("switch", "split", "--dry-run"),
        ("status",),
        ("status", "--format", "json"),
    ],
)
def test_switch_and_status_never_import_pydantic(sandbox: tuple[Path, dict[str, str]], argv: tuple[str, ...]) -> None:
    code, mods = _modules(sandbox, *argv)
    assert code == 0
    assert "kvswitch.config" in mods  # the config was read
    assert not {m for m in mods if m.split(".")[0] == "pydantic" or m.startswith("kvswitch.models")}
    if argv[0] == "switch":
        assert "kvswitch.gateway.control" not in mods  # no gateway ever ran in this sandbox


def test_lint_never_imports_pydantic(sandbox: tuple[Path, dict[str, str]]) -> None:
    code, mods = _modules(sandbox, "lint", str(ROOT / "tests" / "fixtures" / "cline" / "article.json"))
    assert code in (0, 1)
    assert "kvswitch.linter" in mods and "pydantic" not in mods


def test_an_invalid_config_gets_the_models_message(sandbox: tuple[Path, dict[str, str]]) -> None:
    top, env = sandbox
    config = top / "kvswitch-home" / "config" / "kvswitch.toml"
    text = config.read_text(encoding="utf-8")
    try:
        config.write_text(text + '\n[gateway]\ntoken = "plaintext"\n', encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "kvswitch", "status"], env=env, cwd=top, capture_output=True, text=True
        )
    finally:
        config.write_text(text, encoding="utf-8")
    assert done.returncode == 1, done.stderr
    assert "gateway.token: String should match pattern" in done.stderr
