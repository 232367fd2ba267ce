"""New tables added at the end of a TOML file leave no blank lines behind them."""

from __future__ import annotations

import pytest

from kvswitch.edits import Set
from kvswitch.formats.toml import TomlDocument


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_several_new_tables_at_the_end_leave_one_newline(newline: str) -> None:
    text = f'version = 2{newline}{newline}[[clients]]{newline}path = "a"{newline}'
    out = TomlDocument(text).apply([Set(("profiles", "p"), {"a": 1, "merged": {"x": 1}, "headers": {"X": "y"}})])
    assert out.endswith(f'X = "y"{newline}') and not out.endswith(newline * 2)


def test_a_file_that_ended_with_a_blank_line_keeps_it() -> None:
    out = TomlDocument("version = 2\n\n").apply([Set(("profiles", "p"), {"a": 1, "merged": {"x": 1}})])
    assert out.endswith("\n\n")
