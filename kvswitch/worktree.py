"""Whether a path is inside a git work tree: a key is not written into such a file (D-7)
unless the client's entry allows it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["in_git_work_tree"]


def in_git_work_tree(path: Path) -> bool:
    """Whether ``path`` (or the nearest existing parent) is inside a git work tree."""
    directory = path if path.is_dir() else path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    import subprocess

    # git's own variables (GIT_DIR, GIT_WORK_TREE…) would answer for another repository
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"
