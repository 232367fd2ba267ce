"""The gateway from the real tray: Xvfb + trayer, ``python -m kvswitch_gui`` as a process of its
own, Claude Code pinned to the gateway and Qwen Code direct (``test_tray_gateway``'s setup: two
deterministic SSE servers as the profile's upstreams). With the keyboard (xdotool) after a right
click on the icon: Gateway ▸ Start gateway → a gateway process answers /health; Mode ▸ Split →
the gateway's own status says split, Claude Code's file keeps every byte; Gateway ▸ Stop gateway
→ the process is gone. The screen with the Gateway submenu open is saved
(``real-tray-gateway.png`` in the test's tmp dir).

Needs what tests/gui/test_real_tray.py needs (skipped locally when a tool is missing, a failure
under CI=true).
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvswitch.gateway import control
from tests.conftest import require_tool
from tests.gui import test_tray_gateway
from tests.helpers.observe import wait_until
from tests.helpers.xdisplay import TOOLS, TrayApp, Window, XSession, png_size

START_S = 60.0
STEP_S = 15.0
upstreams = test_tray_gateway.upstreams
pinned_setup = test_tray_gateway.pinned_setup


def _running() -> Any:
    with contextlib.suppress(Exception):
        return control.running()
    return None


def _popups(x: XSession) -> list[Window]:
    """The popup windows; asked again when one vanished while xwininfo walked the tree (a
    balloon closing: "Bad Window")."""
    for _ in range(5):
        with contextlib.suppress(RuntimeError):
            return x.popups()
        time.sleep(0.05)
    return x.popups()


def _walk(x: XSession, icon: Window, keys: list[list[str]], done: Callable[[], Any], what: str) -> str:
    """Right-click the icon, press each group of ``keys`` once a (sub)menu more is open; '' when
    ``done()`` holds afterwards, else what went wrong (the caller retries once)."""
    wait_until(lambda: not _popups(x), 20.0)  # the last notice's balloon gone (it takes clicks meanwhile)
    before = {w.id for w in _popups(x)}

    def menus() -> list[Window]:
        return [w for w in _popups(x) if w.id not in before]

    x.click(*icon.centre, button=3)
    if not wait_until(menus, STEP_S):
        return "no menu window appeared after a right click on the icon"
    for n, group in enumerate(keys):
        x.key(*group)
        if n < len(keys) - 1 and not wait_until(lambda n=n: len(menus()) >= n + 2, STEP_S):
            return f"{what}: submenu {n + 1} did not open"
    if wait_until(done, START_S):
        return ""
    return f"{what}: not done (gateway: {_running()})"


def _do(x: XSession, icon: Window, keys: list[list[str]], done: Callable[[], Any], what: str, app: TrayApp) -> None:
    problem = _walk(x, icon, keys, done, what)
    if problem:  # once more, from a clean slate
        x.key("Escape", "Escape", "Escape")
        wait_until(lambda: not _popups(x), STEP_S)
        if done():
            return
        problem = _walk(x, icon, keys, done, what)
    assert not problem, f"{problem}\napp log:\n{app.log()}"


def test_real_tray_starts_switches_and_stops_the_gateway(pinned_setup: dict[str, Any], tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    url = f"http://127.0.0.1:{pinned_setup['port']}"
    claude_before = pinned_setup["claude"].read_bytes()
    with XSession(tmp_path / "x") as x, TrayApp(x, log=tmp_path / "app.log") as app:
        icon = app.wait_icon(START_S)
        # merged (with the warning corner: the pinned client needs a gateway and none runs)
        icon = app.wait_mode("merged", START_S)
        # Down ×4: Mode, Profile, Clients, Gateway; Right: its submenu, the first enabled item
        # (Start gateway: the state lines are greyed) active; Return
        _do(x, icon, [["Down", "Down", "Down", "Down", "Right"], ["Return"]], _running, "Gateway ▸ Start", app)
        info = _running()
        assert info is not None and info.url == url and info.mode == "merged"
        with urllib.request.urlopen(f"{url}/health", timeout=10) as r:
            assert r.status == 200

        # Mode ▸ Split: the running gateway takes it at once
        _do(
            x,
            icon,
            [["Down", "Right"], ["Down", "Return"]],
            lambda: getattr(_running(), "mode", None) == "split",
            "Mode ▸ Split",
            app,
        )
        assert pinned_setup["claude"].read_bytes() == claude_before  # pinned: not one byte

        # Gateway open, for the picture; then Stop gateway (its only enabled item now)
        wait_until(lambda: not _popups(x), 20.0)
        before = {w.id for w in _popups(x)}
        x.click(*icon.centre, button=3)
        assert wait_until(lambda: [w for w in _popups(x) if w.id not in before], STEP_S)
        x.key("Down", "Down", "Down", "Down", "Right")
        assert wait_until(lambda: len([w for w in _popups(x) if w.id not in before]) >= 2, STEP_S), _popups(x)
        shot = x.screenshot(tmp_path / "real-tray-gateway.png")
        assert png_size(shot) == x.size
        x.key("Return")
        if not wait_until(lambda: _running() is None, START_S):
            x.key("Escape", "Escape", "Escape")
            _do(
                x,
                icon,
                [["Down", "Down", "Down", "Down", "Right"], ["Return"]],
                lambda: _running() is None,
                "Gateway ▸ Stop",
                app,
            )
        assert wait_until(lambda: test_tray_gateway._gone(info.pid), STEP_S), f"pid {info.pid} still runs"
        assert not control.state_file().exists()
        assert app.alive(), app.log()
    assert app.proc is not None and app.proc.returncode == 0, app.log()
