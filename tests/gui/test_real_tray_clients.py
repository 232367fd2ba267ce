"""One client switched alone from the real tray: Xvfb + trayer, ``python -m kvswitch_gui`` as a
process of its own, Claude Code's and Qwen Code's files registered (``two_clients``). A right
click on the icon, then Clients ▸ Claude Code ▸ Split with the keyboard (xdotool): Claude Code's
file turns split, Qwen Code's keeps every byte, kvswitch.toml keeps merged for all and split as
Claude Code's own. The screen is saved (``real-tray-clients.png`` in the test's tmp dir).

Needs what tests/gui/test_real_tray.py needs (skipped locally when a tool is missing, a failure
under CI=true).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import require_tool
from tests.gui.two_clients import file_mode, make_two_clients
from tests.helpers.observe import wait_until
from tests.helpers.xdisplay import TOOLS, TrayApp, Window, XSession, png_size

START_S = 60.0
STEP_S = 15.0


def _switch_claude_alone(x: XSession, icon: Window, files: dict[str, Path], menus: set[int]) -> str:
    """Right-click the icon, Clients ▸ Claude Code ▸ Split by keyboard; '' when Claude Code's
    file is split, else what went wrong (the caller retries once)."""
    x.click(*icon.centre, button=3)
    if not wait_until(x.popups, STEP_S):
        return "no menu window appeared after a right click on the icon"
    # Down: Mode (the header is disabled), Down: Profile, Down: Clients; Right: its submenu with
    # the first client (Claude Code ▸) active; Right: that client's submenu, its first enabled
    # item (Merged; the state line is disabled) active
    x.key("Down", "Down", "Down", "Right")
    if not wait_until(lambda: len(x.popups()) >= 2, STEP_S):
        return "the Clients submenu did not open"
    x.key("Right")
    opened = wait_until(lambda: len(x.popups()) >= 3 and x.popups(), STEP_S)
    if not opened:
        return "Claude Code's submenu did not open"
    menus.update(w.id for w in opened)
    x.key("Down", "Return")  # Split
    if wait_until(lambda: file_mode(files)[0] == "split", STEP_S):
        return ""
    return f"after Clients ▸ Claude Code ▸ Split the files are {file_mode(files)}"


def test_real_tray_switches_one_client_from_its_submenu(sandbox: Path, tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    files = make_two_clients(os.environ)
    assert file_mode(files) == ("merged", "merged")
    qwen_before = files["qwen"].read_bytes()
    with XSession(tmp_path / "x") as x, TrayApp(x, log=tmp_path / "app.log") as app:
        icon = app.wait_icon(START_S)
        icon = app.wait_mode("merged", START_S)
        menus: set[int] = set()
        problem = _switch_claude_alone(x, icon, files, menus)
        if problem:  # once more, from a clean slate
            x.key("Escape", "Escape", "Escape", "Escape")
            wait_until(lambda: not x.popups(), STEP_S)
            problem = _switch_claude_alone(x, icon, files, menus)
        assert not problem, f"{problem}\napp log:\n{app.log()}"
        assert file_mode(files) == ("split", "merged")
        assert "X-Cache-Mode: split" in files["claude"].read_text()
        config = files["config"]
        # kvswitch.toml: every client's mode stays merged; Claude Code's own is split
        assert wait_until(lambda: config.read_text().count('mode = "split"') == 1, STEP_S), config.read_text()
        assert config.read_text().startswith('version = 2\nmode = "merged"')
        assert files["qwen"].read_bytes() == qwen_before  # the other client: not one byte
        # the notice came up as a balloon by the icon: a popup that is none of the menus
        assert wait_until(lambda: [w for w in x.popups() if w.id not in menus], STEP_S), x.popups()
        shot = x.screenshot(tmp_path / "real-tray-clients.png")
        assert png_size(shot) == x.size
        assert x.icon_mode(icon) == "merged"  # the icon shows every client's mode, no warning
        assert app.alive(), app.log()
    assert app.proc is not None and app.proc.returncode == 0, app.log()
