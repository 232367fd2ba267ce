"""Launch at login from the real tray: Xvfb + trayer, ``python -m kvswitch_gui`` as a process of
its own, and a user's hands. A right click on the icon, the item found with the keyboard (Up from
the bottom: Quit, then Launch at login) and clicked with the mouse: the XDG autostart entry
appears under ``$XDG_CONFIG_HOME/autostart/`` (the test's sandbox); the menu again, and the
item's mnemonic (U): the entry is gone.

Needs what tests/gui/test_real_tray.py needs (skipped locally when a tool is missing, a failure
under CI=true).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.helpers.observe import wait_until
from tests.helpers.xdisplay import TOOLS, TrayApp, Window, XSession

START_S = 60.0
STEP_S = 15.0


def _entry() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "autostart" / "kvswitch-tray.desktop"


def _open_menu(x: XSession, icon: Window) -> Window | None:
    """Right-click the icon; the menu's window, the pointer moved off it (no item under it)."""
    x.click(*icon.centre, button=3)
    menu = wait_until(x.popups, STEP_S)
    if not menu:
        return None
    x.run("xdotool", "mousemove", "--sync", "5", str(x.size[1] - 5))
    return menu[0]


def _highlighted_row(x: XSession, menu: Window, before: bytes) -> tuple[int, int] | None:
    """The centre of the row that changed since ``before`` (the item the keyboard made active)."""
    _, _, after = x.pixels(menu)
    if len(after) != len(before):
        return None
    row = menu.width * 3
    changed = [y for y in range(menu.height) if after[y * row : (y + 1) * row] != before[y * row : (y + 1) * row]]
    if not changed or changed[-1] - changed[0] > 60:  # one item's height, not a redrawn menu
        return None
    return menu.x + menu.width // 2, menu.y + (changed[0] + changed[-1]) // 2


def _click_launch_at_login(x: XSession, icon: Window) -> str:
    """Open the menu, make Launch at login active with Up, Up and click it; '' when the entry
    appears, else what went wrong (the caller retries once)."""
    menu = _open_menu(x, icon)
    if menu is None:
        return "no menu window appeared after a right click on the icon"
    time.sleep(0.5)  # drawn
    _, _, before = x.pixels(menu)
    x.key("Up", "Up")  # from no active item: Quit, then Launch at login
    time.sleep(0.3)  # the highlight drawn
    where = _highlighted_row(x, menu, before)
    if where is None:
        return "no single highlighted row after Up, Up"
    x.click(*where)
    if wait_until(_entry().exists, STEP_S):
        return ""
    return f"no autostart entry after clicking the item at {where}"


def test_launch_at_login_toggles_from_the_real_tray_menu(kv_sandbox: dict[str, Path], tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    pytest.importorskip("kvswitch_gui.autostart")
    entry = _entry()
    assert not entry.exists()
    with XSession(tmp_path / "x") as x, TrayApp(x, log=tmp_path / "app.log") as app:
        icon = app.wait_icon(START_S)
        icon = app.wait_mode("merged", START_S)

        problem = _click_launch_at_login(x, icon)
        if problem:  # once more, from a clean slate
            x.key("Escape", "Escape")
            wait_until(lambda: not x.popups(), STEP_S)
            problem = _click_launch_at_login(x, icon)
        assert not problem, f"{problem}\napp log:\n{app.log()}"
        text = entry.read_text()
        assert "[Desktop Entry]" in text and "X-GNOME-Autostart-enabled=true" in text and "Exec=" in text
        wait_until(lambda: not x.popups(), STEP_S)  # the menu closed after the click

        # off again, by the item's mnemonic: the menu shows it checked now (refreshed on opening)
        assert _open_menu(x, icon) is not None, "no menu the second time"
        time.sleep(0.5)
        x.key("u")
        assert wait_until(lambda: not entry.exists(), STEP_S), f"the entry is still there\napp log:\n{app.log()}"
        assert app.alive(), app.log()
    assert app.proc is not None and app.proc.returncode == 0, app.log()
