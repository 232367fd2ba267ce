"""The target options that ``kvswitch probe`` and ``kvswitch doctor`` share: the active profile,
another profile, or a bare address with its model and key variable."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_target_options", "env_name_option", "text_option", "url_option"]


def add_target_options(p: argparse.ArgumentParser, base_url_help: str,
                       model_help: str = "model id (with --base-url)") -> Any:
    """Add ``--profile``, ``--base-url``, ``--model`` and ``--api-key-env`` in a group of their
    own; the group is returned for a command's further target options."""
    src = p.add_argument_group("target (default: the active profile)")
    src.add_argument("--profile", help="a profile other than the active one (not with --base-url)")
    src.add_argument("--base-url", type=url_option, help=base_url_help)
    src.add_argument("--model", type=text_option, help=model_help)
    src.add_argument("--api-key-env", metavar="NAME", type=env_name_option,
                     help="with --base-url: the environment variable holding the key")
    return src


def url_option(value: str) -> str:
    """An address option: a bare http(s) URL, checked as everywhere else (kvswitch.validate); a
    trailing '/' is kept, so that doctor can show what it does to clients."""
    from kvswitch.validate import InvalidValueError, check_url

    try:
        return check_url(value, "address")
    except InvalidValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc.code} {exc.message}") from None


def text_option(value: str) -> str:
    """A plain text option (a model id): no control or invisible characters, not too long."""
    from kvswitch.validate import show, text_problem

    problem = text_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{show(value)} is not usable: {problem}")
    return value


def env_name_option(value: str) -> str:
    """The name of an environment variable: letters, digits and '_', not starting with a digit."""
    from kvswitch.validate import is_key_reference, show

    if not is_key_reference(f"env:{value}"):  # the one pattern of a name, as in a profile's env:NAME
        raise argparse.ArgumentTypeError(f"{show(value)} is not an environment variable name "
                                         "(letters, digits and '_', not starting with a digit)")
    return value
