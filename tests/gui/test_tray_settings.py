"""The tray's own settings, offscreen: Launch at login from the tray menu and from the fallback
window's check box writes and removes the XDG autostart entry (in the test's sandbox), the check
mark follows the file, and each change ends with a notice."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvswitch_gui.tray import TrayController
from tests.gui import test_tray
from tests.gui.test_tray import WAIT, _find, _open_menu, _wait_notice

make = test_tray.make
__all__ = ["make"]


@pytest.fixture
def entry() -> Path:
    pytest.importorskip("kvswitch_gui.autostart")
    return Path(os.environ["XDG_CONFIG_HOME"]) / "autostart" / "kvswitch-tray.desktop"


def test_launch_at_login_from_the_menu(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], entry: Path
) -> None:
    c = make()
    menu = _open_menu(qtbot, c)
    item = _find(menu, "Launch at login")
    assert item.isVisible() and item.isCheckable() and not item.isChecked() and not entry.exists()
    item.trigger()  # checks it
    notice = _wait_notice(qtbot, c, "Launch at login on")
    assert str(entry) in notice.text and entry.exists() and "X-GNOME-Autostart-enabled=true" in entry.read_text()
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    item = _find(menu, "Launch at login")
    assert item.isChecked()  # read back from the file
    item.trigger()  # unchecks it
    _wait_notice(qtbot, c, "Launch at login off")
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert not entry.exists() and not _find(_open_menu(qtbot, c), "Launch at login").isChecked()


def test_launch_at_login_from_the_window(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], entry: Path
) -> None:
    c = make(use_tray=False)
    box = c.window.autostart_check
    assert box.isVisibleTo(c.window) and not box.isChecked()
    box.click()
    _wait_notice(qtbot, c, "Launch at login on")
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert entry.exists() and box.isChecked()
    box.click()
    _wait_notice(qtbot, c, "Launch at login off")
    qtbot.waitUntil(lambda: c.idle and not entry.exists(), timeout=WAIT)
    assert not box.isChecked()


def test_a_failure_says_why_and_the_mark_follows_the_file(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], entry: Path
) -> None:
    entry.parent.parent.mkdir(parents=True, exist_ok=True)
    entry.parent.write_text("not a folder")  # the autostart folder cannot be made
    c = make()
    _find(_open_menu(qtbot, c), "Launch at login").trigger()
    notice = _wait_notice(qtbot, c, "Launch at login not changed")
    assert notice.error
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert not _find(_open_menu(qtbot, c), "Launch at login").isChecked()
