"""The tray app's start: its icon shows (grey, nothing read yet) before the controller, the
library and the local socket are loaded, and the controller takes that very icon over."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvswitch_gui.app import SingleInstance, _first_icon, main
from kvswitch_gui.icons import mode_icon
from kvswitch_gui.tray import TrayController
from tests.gui import test_tray

make = test_tray.make  # the tray tests' fixture: controllers made here are shut down after each test

ROOT = Path(__file__).resolve().parents[2]

_BEFORE_THE_ICON = """
import sys
import PySide6.QtCore as core
lazy = "Qt" not in core.__dict__  # PySide makes a module's types on first use
import kvswitch_gui.app
from PySide6.QtWidgets import QApplication
app = QApplication([sys.argv[0]])
from kvswitch_gui.icons import mode_icon
mode_icon(None)
heavy = ("kvswitch_gui.tray", "kvswitch_gui.jobs", "kvswitch.watch", "kvswitch_gui.translations", "kvswitch.io")
heavy += ("PySide6.QtNetwork",)
print(sorted(m for m in heavy if m in sys.modules))
print(lazy, "Qt" in core.__dict__)
"""


def test_what_the_first_icon_needs_is_all_that_loads_before_it() -> None:
    """The app module and the grey icon load neither the controller (its menu, the jobs, the
    watcher), the translations (they read the tray's setting through the library) nor Qt's
    network module, and the grey icon is drawn without the ``Qt`` namespace, whose enums take
    longer to make than the rest of the icon."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", _BEFORE_THE_ICON], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded, namespace = done.stdout.splitlines()[-2:]
    assert loaded == "[]"
    lazy, made = namespace.split()
    if lazy == "True":  # only a PySide that makes its types on first use can tell
        assert made == "False"


def test_the_controller_takes_over_the_first_icon(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    icon = _first_icon()
    assert icon.isVisible() and icon.icon().cacheKey() == mode_icon(None).cacheKey()  # grey: nothing read
    c = make(use_tray=True, tray_icon=icon)
    assert c.tray is icon and icon.parent() is c and icon.contextMenu() is c.menu
    qtbot.waitUntil(lambda: c.icon_key == ("merged", False), timeout=test_tray.WAIT)
    assert icon.icon().cacheKey() == mode_icon("merged", False).cacheKey()  # as the controller asks for it


def test_a_bad_option_still_ends_the_start_and_frees_the_lock(
    kv_sandbox: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The options are read once the lock is held (and the icon shown, where there is a tray):
    a bad one still exits 2 with argparse's message, and leaves the lock free."""
    with pytest.raises(SystemExit) as exit_:
        main(["--tray-wait", "soon"])
    assert exit_.value.code == 2
    assert "expected a number of seconds (0 or more), got 'soon'" in capsys.readouterr().err
    again = SingleInstance()
    assert again.acquire(listen=False)
    again.release()
