"""Running the kvswitch CLI in process from a test."""

from __future__ import annotations

import io
import sys

import pytest

from kvswitch.cli import main

__all__ = ["Run"]


class Run:
    """``kvswitch ARGS`` in process, with ``stdin`` fed to it; keeps what it printed."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.capsys, self.monkeypatch = capsys, monkeypatch
        self.out = self.err = ""

    def __call__(self, *args: str, stdin: str = "") -> int:
        self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        got = self.capsys.readouterr()
        self.out, self.err = got.out, got.err
        return code
