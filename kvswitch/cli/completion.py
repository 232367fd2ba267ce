"""``kvswitch completion bash|zsh|fish``: shell completion, with profile and client names.

The scripts come from argcomplete: the shell runs ``kvswitch`` with ``_ARGCOMPLETE`` set, and
:func:`complete` (called by ``main`` before anything else) answers from the whole parser and
exits. Only then is the parser built with every command and argcomplete imported, so
``kvswitch lint`` in a hook starts as fast as without completion. Profile and client names
are read from kvswitch's config with ``tomllib`` (no validation, nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from kvswitch.i18n import tr

__all__ = ["SHELLS", "complete", "register", "script"]

SHELLS = ("bash", "zsh", "fish")

_NEW_NAMES = {("init",), ("import",)}
"""Commands whose ``--profile`` names a profile to make, not one that exists."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help=tr("print the shell completion script for bash, zsh or fish"),
        description=tr(
            "Print the script that makes SHELL complete kvswitch's commands, options, profile names "
            "and client names. Install it once: bash: kvswitch completion bash > "
            "~/.local/share/bash-completion/completions/kvswitch; zsh: kvswitch completion zsh > "
            "~/.zfunc/_kvswitch (with ~/.zfunc in fpath, before compinit); fish: kvswitch completion fish > "
            "~/.config/fish/completions/kvswitch.fish. Or load it for one session: "
            'eval "$(kvswitch completion bash)" (bash, zsh), kvswitch completion fish | source (fish). '
            "Exit 0; 2 on a usage error."
        ),
    )
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help=tr("bash, zsh or fish"))
    p.set_defaults(func=run)


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`SHELLS`)."""
    from argcomplete.shell_integration import shellcode

    return shellcode(["kvswitch"], shell=shell)


def run(args: argparse.Namespace) -> int:
    try:
        text = script(args.shell)
    except ImportError:
        print(
            tr("kvswitch: shell completion needs argcomplete, which is not installed: pip install argcomplete"),
            file=sys.stderr,
        )
        return 1
    sys.stdout.write(text)
    return 0


# -- answering the shell ------------------------------------------------------------------


def _config() -> dict[str, Any]:
    """kvswitch's config as plain TOML data; empty when there is none or it does not parse."""
    import tomllib

    from kvswitch.paths import dirs

    try:
        with dirs().config_file.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, ValueError):
        return {}


def _clients() -> list[dict[str, Any]]:
    return [c for c in _config().get("clients", []) if isinstance(c, dict)]


def profile_names(**_: object) -> list[str]:
    """The profiles in kvswitch's config."""
    profiles = _config().get("profiles", {})
    return sorted(profiles) if isinstance(profiles, dict) else []


def client_names(**_: object) -> list[str]:
    """The registered clients' names, and the kinds of those without a name."""
    names = [str(c.get("name") or c.get("kind") or "") for c in _clients()]
    return sorted({n for n in names if n})


def client_paths(**_: object) -> list[str]:
    """The registered clients' files, as the config spells them (``~`` expanded)."""
    home = os.environ.get("HOME", "")
    paths = [str(c.get("path", "")) for c in _clients()]
    return [home + p[1:] if p.startswith("~/") and home else p for p in paths if p]


def _completer(path: tuple[str, ...], action: argparse.Action) -> Callable[..., list[str]] | None:
    """What completes ``action`` of the command ``path`` (None: argcomplete's default)."""
    dest = action.dest
    if dest == "profile" and path not in _NEW_NAMES:
        return profile_names  # --profile NAME, and `key set|get|delete PROFILE`
    if path[:1] == ("profile",) and dest in ("name", "old") and path != ("profile", "add"):
        return profile_names
    if path == ("client", "remove") and dest == "path":
        return client_paths
    if (
        (path == ("switch",) and dest == "only")
        or (path[:1] == ("gateway",) and dest == "clients")
        or (path == ("import",) and dest == "client")
    ):
        return client_names
    return None


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, (*path, name))
        else:
            yield path, action


def attach_completers(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with profile, client-name and client-file completers on the actions that take them."""
    for path, action in _walk(parser):
        found = _completer(path, action)
        if found is not None:
            action.completer = found  # type: ignore[attr-defined]
    return parser


def complete(build_parser: Callable[[], argparse.ArgumentParser]) -> None:
    """Answer the shell's completion request (``_ARGCOMPLETE`` is set) with the parser
    ``build_parser()`` makes (every command), and exit; never returns."""
    try:
        import argcomplete

        argcomplete.autocomplete(attach_completers(build_parser()), always_complete_options=False)
    finally:  # argcomplete exits after answering; never run the command the shell is completing
        sys.stdout.flush()
        os._exit(1)
