"""The target options that ``kvswitch probe`` and ``kvswitch doctor`` share: the active profile,
another profile, or a bare address with its model and key variable."""

from __future__ import annotations

import argparse
from typing import Any

from kvswitch.i18n import N_, tr

__all__ = ["add_target_options", "env_name_option", "text_option", "url_option"]


MODEL_HELP = N_("model id (with --base-url)")


def add_target_options(p: argparse.ArgumentParser, base_url_help: str, model_help: str | None = None) -> Any:
    """Add ``--profile``, ``--base-url``, ``--model`` and ``--api-key-env`` in a group of their
    own; the group is returned for a command's further target options."""
    src = p.add_argument_group(tr("target (default: the active profile)"))
    src.add_argument("--profile", help=tr("a profile other than the active one (not with --base-url)"))
    src.add_argument("--base-url", type=url_option, help=base_url_help)
    src.add_argument("--model", type=text_option, help=model_help or tr(MODEL_HELP))
    src.add_argument(
        "--api-key-env",
        metavar="NAME",
        type=env_name_option,
        help=tr("with --base-url: the environment variable holding the key"),
    )
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
        raise argparse.ArgumentTypeError(
            tr("{value} is not usable: {problem}").format(value=show(value), problem=problem)
        )
    return value


def env_name_option(value: str) -> str:
    """The name of an environment variable: letters, digits and '_', not starting with a digit."""
    from kvswitch.validate import is_key_reference, show

    if not is_key_reference(f"env:{value}"):  # the one pattern of a name, as in a profile's env:NAME
        raise argparse.ArgumentTypeError(
            tr(
                "{value} is not an environment variable name (letters, digits and '_', not starting with a digit)"
            ).format(value=show(value))
        )
    return value
