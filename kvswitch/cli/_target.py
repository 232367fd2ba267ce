"""The target options that ``kvswitch probe`` and ``kvswitch doctor`` share: the active profile,
another profile, or a bare address with its model and key variable."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_target_options"]


def add_target_options(p: argparse.ArgumentParser, base_url_help: str,
                       model_help: str = "model id (with --base-url)") -> Any:
    """Add ``--profile``, ``--base-url``, ``--model`` and ``--api-key-env`` in a group of their
    own; the group is returned for a command's further target options."""
    src = p.add_argument_group("target (default: the active profile)")
    src.add_argument("--profile", help="a profile other than the active one (not with --base-url)")
    src.add_argument("--base-url", help=base_url_help)
    src.add_argument("--model", help=model_help)
    src.add_argument("--api-key-env", metavar="NAME", help="with --base-url: the environment variable holding the key")
    return src
