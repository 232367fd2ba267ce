"""The git rule (no key in a file inside a git work tree) asks git about the file's own folder:
git's variables in the environment cannot make it answer for another repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kvswitch.worktree import in_git_work_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def test_a_file_in_a_work_tree_is_seen(repo: Path) -> None:
    assert in_git_work_tree(repo / ".claude" / "settings.json")


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES"])
def test_git_variables_cannot_hide_the_work_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    value = str(tmp_path) if variable == "GIT_CEILING_DIRECTORIES" else str(elsewhere)
    monkeypatch.setenv(variable, value)
    assert in_git_work_tree(repo / "settings.json")


def test_git_dir_cannot_make_a_plain_folder_a_work_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(plain))
    assert not in_git_work_tree(plain / "settings.json")
