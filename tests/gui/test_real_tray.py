"""The tray app with a real tray host: Xvfb + trayer, ``python -m kvswitch_gui`` as a process
of its own on xcb, and a user's hands (xdotool). The icon embeds in trayer's panel, a right
click opens its menu, Mode ▸ Split switches both client files on disk, the icon's shape turns
to split, and the screen is saved as a PNG (``real-tray.png`` in the test's tmp dir).

Needs Xvfb, trayer, xdotool, ImageMagick's import and xwininfo (``tests/run.py`` installs them):
skipped locally when one is missing, a failure under CI=true.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import require_tool
from tests.helpers.observe import cline_mode, toml_mode, wait_until
from tests.helpers.xdisplay import (
    TOOLS,
    TrayApp,
    Window,
    XSession,
    png_size,
)

START_S = 60.0  # generous: CI machines are small and shared; the waits end as soon as things happen
STEP_S = 15.0

TRAY_AVAILABLE = (
    "from PySide6.QtWidgets import QApplication, QSystemTrayIcon\n"
    "app = QApplication([])\n"
    "print(QApplication.platformName(), QSystemTrayIcon.isSystemTrayAvailable())\n"
)


def _modes(files: dict[str, Path]) -> tuple[str | None, str | None]:
    return cline_mode(files["cline"]), toml_mode(files["ccswitch"])


def _switch_to_split(x: XSession, icon: Window, files: dict[str, Path], menus: set[int]) -> str:
    """Right-click the icon, Mode ▸ Split with the keyboard; '' when both files are split, else
    what went wrong (the caller retries once). The menus' windows are added to ``menus``."""
    x.click(*icon.centre, button=3)
    menu = wait_until(x.popups, STEP_S)
    if not menu:
        return "no menu window appeared after a right click on the icon"
    # the menu must sit next to the icon (trayer's panel is at the top right)
    top = menu[0]
    if not (top.width > 100 and top.height > 100 and top.y <= icon.y + icon.height + 40):
        return f"the popup is not the tray menu: {top}"
    # Down: the first enabled item (Mode — merged; the header is disabled); Right: its submenu,
    # first item (Merged) active; Down: Split; Return: trigger
    x.key("Down", "Right")
    opened = wait_until(lambda: len(x.popups()) >= 2 and x.popups(), STEP_S)
    if not opened:
        return "the Mode submenu did not open"
    menus.update(w.id for w in opened)
    x.key("Down", "Return")
    if wait_until(lambda: _modes(files) == ("split", "split"), STEP_S):
        return ""
    return f"after Mode ▸ Split the files are {_modes(files)}"


def test_real_tray_icon_menu_switch_and_screenshot(kv_sandbox: dict[str, Path], tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    assert _modes(kv_sandbox) == ("merged", "merged")
    with XSession(tmp_path / "x") as x:
        # a tray host is there, as Qt sees it
        seen = subprocess.run(
            [sys.executable, "-c", TRAY_AVAILABLE],
            env=x.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert seen.stdout.split() == ["xcb", "True"], seen.stdout + seen.stderr

        with TrayApp(x, log=tmp_path / "app.log") as app:
            icon = app.wait_icon(START_S)
            # embedded: a child of trayer's panel, with a real size, inside the panel
            assert x.panel is not None and x.panel.id in icon.path
            assert icon.width >= 16 and icon.height >= 16
            assert x.panel.x <= icon.x and icon.x + icon.width <= x.panel.x + x.panel.width
            # the state arrived: the icon is the merged shape (one blue block), not the outline
            icon = app.wait_mode("merged", START_S)
            # with a tray the app shows no window of its own (a balloon by the icon is not one)
            assert not [w for w in x.shown_windows("kvswitch") if w.width > 300]

            menus: set[int] = set()
            problem = _switch_to_split(x, icon, kv_sandbox, menus)
            if problem:  # once more, from a clean slate
                x.key("Escape", "Escape", "Escape")
                wait_until(lambda: not x.popups(), STEP_S)
                problem = _switch_to_split(x, icon, kv_sandbox, menus)
            assert not problem, f"{problem}\napp log:\n{app.log()}"
            assert _modes(kv_sandbox) == ("split", "split")
            # and kvswitch.toml follows (written after the clients: a moment later on a busy machine)
            config = kv_sandbox["config"]
            assert wait_until(lambda: 'mode = "split"' in config.read_text(), STEP_S), config.read_text()

            # the icon follows: the split shape (two teal halves)
            icon = app.wait_mode("split", STEP_S)
            # the menu closed, and the notice came up as a balloon by the icon (Qt draws it on X11
            # without a notification daemon): a new popup, not one of the menu's windows
            balloon = wait_until(lambda: [w for w in x.popups() if w.id not in menus], STEP_S)
            assert balloon, x.popups()
            assert balloon[0].y < x.size[1] // 2 and balloon[0].x + balloon[0].width > x.size[0] // 2  # by the icon

            shot = x.screenshot(tmp_path / "real-tray.png")
            assert png_size(shot) == x.size
            _, _, pixels = x.pixels(icon)
            assert len(set(zip(pixels[::3], pixels[1::3], pixels[2::3], strict=True))) > 2  # an icon, not a blank

            assert app.alive(), app.log()
        assert app.proc is not None and app.proc.returncode == 0, app.log()  # SIGINT quits cleanly
