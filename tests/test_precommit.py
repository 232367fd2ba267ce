"""The real pre-commit runs our hook (``pre-commit try-repo``) on a throw-away repository."""

from __future__ import annotations

import os
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
    import re

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
    import re

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
