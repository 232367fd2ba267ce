"""docs/cli.md's generated part is what the parser says today, and it covers every command."""

from __future__ import annotations

import subprocess
import sys

from kvswitch.cli import COMMANDS, build_parser
from kvswitch.cli.reference import cli_reference
from tests.conftest import ROOT

MARKER = "<!-- generated: python -m kvswitch.cli.reference; do not edit below -->\n"


def test_cli_reference_is_fresh() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert MARKER in text
    assert text.split(MARKER, 1)[1] == cli_reference(), (
        "docs/cli.md is stale: regenerate its tail with python -m kvswitch.cli.reference (see the page)"
    )


def test_every_command_and_sub_command_is_documented() -> None:
    ref = cli_reference()
    for command in COMMANDS:
        assert f"### `kvswitch {command}`" in ref, command
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    for name, child in sub.choices.items():
        for action in child._actions:
            if action.choices and isinstance(action.choices, dict):  # sub-commands
                for leaf in action.choices:
                    assert f"#### `kvswitch {name} {leaf}`" in ref, (name, leaf)
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in ref, (name, option)


def test_the_module_prints_the_reference() -> None:
    out = subprocess.run([sys.executable, "-m", "kvswitch.cli.reference"], capture_output=True, text=True, check=True)
    assert out.stdout == cli_reference()


def test_help_percent_is_expanded_like_argparse() -> None:
    import argparse

    from kvswitch.cli.reference import _expand_help

    parser = argparse.ArgumentParser(prog="p")
    action = parser.add_argument("--x", default=3, choices=[1, 3], help="x (%(default)s of %(choices)s, 5 %%)")
    assert _expand_help(action, "p") == "x (3 of 1, 3, 5 %)"
