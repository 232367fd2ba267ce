"""The real pre-commit runs our hook (``pre-commit try-repo``) on a throw-away repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, require_tool

pytestmark = [pytest.mark.slow, pytest.mark.peer]


def test_manifest_declares_the_lint_hook() -> None:
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "kvswitch-lint"
    assert hook["entry"].startswith("kvswitch lint")

    files = re.compile(hook["files"])
    for yes in (
        ".vscode/settings.json",
        "a/.cline/settings.json",
        ".config/cc-switch/config.toml",
        "kvswitch.toml",
        ".claude/settings.json",
        "app/.claude/settings.local.json",
        ".qwen/settings.json",
        "opencode.json",
        "opencode.jsonc",
        ".codex/config.toml",
    ):
        assert files.search(yes), yes
    for no in (
        "package.json",
        "settings.json.bak",
        "pyproject.toml",
        "src/config.toml",
        ".claude/agents.json",
        "myopencode.json",
    ):
        assert not files.search(no), no


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or require_tool("pre-commit")
    return [exe]


def test_try_repo_passes_a_good_file_and_fails_a_bad_one(tmp_path: Path) -> None:
    require_tool("git")
    repo = tmp_path / "project"
    (repo / ".vscode").mkdir(parents=True)
    (repo / "cc-switch").mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", repo / ".vscode" / "settings.json")
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", repo / "cc-switch" / "config.toml")
    (repo / "README.md").write_text("not checked\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache")}
    cmd = [*_pre_commit(), "try-repo", str(ROOT), "kvswitch-lint", "--all-files", "--color", "never"]
    good = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "kvswitch lint" in good.stdout and "Passed" in good.stdout

    settings = repo / ".vscode" / "settings.json"
    settings.write_text(
        settings.read_text()
        .replace('"mode": "merged"', '"mode": "both"')
        .replace(
            '"cline.openAiModelId"', '"cline.openAiApiKey": "sk-live-0123456789abcdefghij",\n    "cline.openAiModelId"'
        )
    )
    _git(repo, "add", ".")
    bad = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    out = bad.stdout
    assert "Failed" in out
    assert ".vscode/settings.json:14:17: KVS002 error" in out
    assert "KVS212 error: plaintext API key in a file tracked by git" in out
    assert "sk-live-0123456789abcdefghij" not in out


def _snippet(page: Path) -> dict[str, object]:
    """The `.pre-commit-config.yaml` snippet a page shows (its first yaml block with `repos:`)."""

    blocks = re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    [config] = [yaml.safe_load(b) for b in blocks if "kvswitch-lint" in b and "repos:" in b]
    return config


@pytest.mark.parametrize("page", ["README.md", "docs/pre-commit.md"])
def test_the_snippet_names_this_version_as_its_rev(page: str) -> None:
    from kvswitch import __version__

    [repo] = _snippet(ROOT / page)["repos"]  # type: ignore[index]
    assert repo["rev"] == f"v{__version__}"  # a release is tagged v<version>: bump both together
    assert repo["hooks"] == [{"id": "kvswitch-lint"}]
    assert repo["repo"].startswith("https://")


def test_the_readme_snippet_works_as_written_against_a_tagged_clone(tmp_path: Path) -> None:
    """Clone this checkout, tag it with the snippet's rev, change only the snippet's `repo:` to
    the clone (tests stay offline), and run the real pre-commit with it on a project."""
    require_tool("git")
    config = _snippet(ROOT / "README.md")
    [repo_entry] = config["repos"]  # type: ignore[index]
    clone = tmp_path / "kvswitch-clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    _git(clone, "tag", repo_entry["rev"])
    repo_entry["repo"] = str(clone)
    project = tmp_path / "project"
    (project / ".vscode").mkdir(parents=True)
    shutil.copy(FIXTURES / "cline" / "article.json", project / ".vscode" / "settings.json")
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache")}
    cmd = [*_pre_commit(), "run", "--all-files", "--color", "never"]
    good = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env=env, timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "kvswitch lint" in good.stdout and "Passed" in good.stdout
    settings = project / ".vscode" / "settings.json"
    settings.write_text(settings.read_text().replace('"mode": "merged"', '"mode": "both"'))
    bad = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 1 and "KVS002 error" in bad.stdout, bad.stdout + bad.stderr


# -- the repository's own hooks (.pre-commit-config.yaml) -------------------------------------


def _own_config() -> dict[str, object]:
    loaded: dict[str, object] = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return loaded


def _own_run(cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit run --all-files`` in ``cwd`` with this environment's tools first on PATH; mypy
    skipped (tests/test_style.py runs the same ``mypy`` over the same configuration)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
        "SKIP": "mypy",
    }
    cmd = [*_pre_commit(), "run", "--all-files", "--color", "never"]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=600, check=False)


def test_own_config_is_local_and_dogfoods_the_lint_hook() -> None:
    repos = _own_config()["repos"]
    assert isinstance(repos, list) and [r["repo"] for r in repos] == ["local"]  # offline: nothing to fetch
    hooks = {h["id"]: h for h in repos[0]["hooks"]}
    assert set(hooks) == {"kvswitch-lint", "ruff", "ruff-format", "mypy"}
    assert {h["language"] for h in hooks.values()} == {"system"}
    [offered] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hooks["kvswitch-lint"]["entry"] == offered["entry"]  # the hook other repositories get


def test_own_hooks_pass_on_this_checkout(tmp_path: Path) -> None:
    require_tool("git")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an sdist): pre-commit lists files through git")
    done = _own_run(ROOT, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("kvswitch lint", "ruff check", "ruff format"):
        assert re.search(rf"^{re.escape(name)}\.+Passed$", done.stdout, re.M), done.stdout


def test_own_hooks_fail_on_a_bad_example_and_unformatted_code(tmp_path: Path) -> None:
    require_tool("git")
    repo = tmp_path / "repo"
    (repo / "tests" / "fixtures" / "cline").mkdir(parents=True)
    shutil.copy(ROOT / ".pre-commit-config.yaml", repo)
    shutil.copy(ROOT / "pyproject.toml", repo)  # ruff's settings
    example = (FIXTURES / "cline" / "article.json").read_text().replace('"mode": "merged"', '"mode": "both"')
    (repo / "tests" / "fixtures" / "cline" / "example.json").write_text(example)
    (repo / "module.py").write_text("x=1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    done = _own_run(repo, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^kvswitch lint\.+Failed$", done.stdout, re.M) and "KVS002 error" in done.stdout
    assert re.search(r"^ruff format\.+Failed$", done.stdout, re.M), done.stdout
    assert (repo / "module.py").read_text() == "x=1\n"  # checked, not rewritten
