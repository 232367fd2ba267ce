"""Waiting for the tray: a session that starts the app before its panel gets the icon docked
when the tray appears (nothing shown meanwhile); after the wait the window opens, and a tray
that appears even later takes the app over (window closed, icon docked).

The real tests run ``python -m kvswitch_gui`` on Xvfb with trayer started after the app
(``tests/helpers/xdisplay.py``); the logic itself runs in process with stand-in faces.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from kvswitch_gui.app import Docking
from tests.conftest import require_tool
from tests.helpers.observe import wait_until
from tests.helpers.xdisplay import TOOLS, TrayApp, XSession

START_S = 60.0  # generous: the waits end as soon as things happen
WIDE = 300  # the fallback window is wider than this; a balloon or a tray icon is not a window


# -- the logic, in process --------------------------------------------------------------------------


class FakeFace(QObject):
    quit_requested = Signal()

    def __init__(self, use_tray: bool, first: bool, log: list[str]) -> None:
        super().__init__()
        self.use_tray, self.first, self.log = use_tray, first, log
        self.notices: list[str] = []
        log.append(f"make {'tray' if use_tray else 'window'}{' first' if first else ''}")

    def start(self) -> None:
        self.log.append("start")

    def shutdown(self) -> None:
        self.log.append(f"shutdown {'tray' if self.use_tray else 'window'}")

    def present(self) -> None:
        self.log.append("present")

    def notify(self, title: str, text: str, error: bool = False) -> None:
        self.notices.append(title)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _docking(qapp: QApplication, tray: list[bool], clock: Clock, **kw: Any) -> tuple[Docking, list[str]]:
    log: list[str] = []
    docking = Docking(
        qapp,
        lambda use_tray, first: FakeFace(use_tray, first, log),
        available=lambda: tray[0],
        clock=clock,
        poll_ms=5,
        late_poll_ms=5,
        **kw,
    )
    return docking, log


def test_no_tray_yet_waits_showing_nothing_then_docks(
    qtbot: Any, qapp: QApplication, capsys: pytest.CaptureFixture[str]
) -> None:
    tray, clock = [False], Clock()
    docking, log = _docking(qapp, tray, clock, wait_s=30)
    before = qapp.quitOnLastWindowClosed()
    try:
        docking.start()
        assert docking.mode == "waiting" and log == []  # nothing made, nothing shown
        clock.now += 10  # within the wait
        qtbot.wait(30)
        assert docking.mode == "waiting" and log == []
        tray[0] = True
        qtbot.waitUntil(lambda: docking.mode == "tray", timeout=5000)
        assert log == ["make tray first", "start"]
        assert docking.face is not None and docking.face.notices == []  # docked quietly
        assert qapp.quitOnLastWindowClosed() is False  # a tray app outlives its windows
        assert "waiting up to 30 s" in capsys.readouterr().err
    finally:
        docking.shutdown()
        qapp.setQuitOnLastWindowClosed(before)
    assert log[-1] == "shutdown tray"


def test_after_the_wait_the_window_then_a_late_tray_takes_over(qtbot: Any, qapp: QApplication) -> None:
    tray, clock = [False], Clock()
    docking, log = _docking(qapp, tray, clock, wait_s=5)
    before = qapp.quitOnLastWindowClosed()
    seen: list[str] = []
    docking.changed.connect(seen.append)
    try:
        docking.start()
        clock.now += 5  # the wait ran out
        qtbot.waitUntil(lambda: docking.mode == "window", timeout=5000)
        window = docking.face
        assert isinstance(window, FakeFace) and window.notices == ["No system tray"]
        assert qapp.quitOnLastWindowClosed() is True  # the window is all there is
        tray[0] = True  # a panel started at last
        qtbot.waitUntil(lambda: docking.mode == "tray", timeout=5000)
        assert log == ["make window first", "start", "shutdown window", "make tray", "start"]
        assert isinstance(docking.face, FakeFace) and docking.face.notices == ["kvswitch moved to the system tray"]
        assert seen == ["waiting", "window", "tray"]
        assert qapp.quitOnLastWindowClosed() is False
    finally:
        docking.shutdown()
        qapp.setQuitOnLastWindowClosed(before)


def test_a_second_start_while_waiting_opens_the_window(qtbot: Any, qapp: QApplication) -> None:
    tray, clock = [False], Clock()
    docking, log = _docking(qapp, tray, clock, wait_s=30)
    before = qapp.quitOnLastWindowClosed()
    try:
        docking.start()
        docking.present()  # what a second kvswitch-tray asks for
        assert docking.mode == "window" and log == ["make window first", "start"]
        docking.present()
        assert log[-1] == "present"
    finally:
        docking.shutdown()
        qapp.setQuitOnLastWindowClosed(before)


@pytest.mark.parametrize("kw", [{"window": True}, {"can_dock": False}, {"wait_s": 0}], ids=str)
def test_no_wait_when_asked_or_when_no_tray_can_come(qtbot: Any, qapp: QApplication, kw: dict[str, Any]) -> None:
    tray, clock = [False], Clock()
    docking, log = _docking(qapp, tray, clock, **{"wait_s": 30, **kw})
    before = qapp.quitOnLastWindowClosed()
    try:
        docking.start()
        assert docking.mode == "window" and log == ["make window first", "start"]
        tray[0] = True
        qtbot.wait(50)
        # --window and a platform without trays stay in the window; --tray-wait 0 still moves
        assert docking.mode == ("tray" if kw == {"wait_s": 0} else "window")
    finally:
        docking.shutdown()
        qapp.setQuitOnLastWindowClosed(before)


def test_a_tray_already_there_docks_at_once(qapp: QApplication) -> None:
    docking, log = _docking(qapp, [True], Clock(), wait_s=30)
    before = qapp.quitOnLastWindowClosed()
    try:
        docking.start()
        assert docking.mode == "tray" and log == ["make tray first", "start"]
    finally:
        docking.shutdown()
        qapp.setQuitOnLastWindowClosed(before)


# -- the real thing: Xvfb, trayer started after the app ---------------------------------------------


def _wide_windows(x: XSession) -> list[Any]:
    return [w for w in x.shown_windows("kvswitch") if w.width > WIDE]


def _app_env() -> dict[str, str]:
    return {"KVSWITCH_TRAY_NO_DETECT": "1"}


def test_the_icon_docks_when_trayer_starts_after_the_app(kv_sandbox: dict[str, Path], tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    env = {**os.environ, **_app_env()}
    with (
        XSession(tmp_path / "x", tray=False) as x,
        TrayApp(x, "--no-watch", "--tray-wait", "120", env=env, log=tmp_path / "app.log") as app,
    ):
        # the app is up and waiting (it says so), showing nothing
        assert wait_until(lambda: "waiting up to 120 s" in app.log() or not app.alive(), START_S), app.log()
        assert app.alive(), app.log()
        time.sleep(2)  # the panel comes two seconds later
        assert _wide_windows(x) == [], app.log()
        x.start_tray()
        icon = app.wait_icon(START_S)
        assert x.panel is not None and x.panel.id in icon.path  # embedded in trayer's panel
        assert icon.width >= 16 and icon.height >= 16
        assert "the icon is in it" in app.log()
        assert _wide_windows(x) == []  # and no window on the way
        assert app.alive(), app.log()
    assert app.proc is not None and app.proc.returncode == 0, app.log()


def test_after_the_wait_the_window_gives_way_to_a_late_tray(kv_sandbox: dict[str, Path], tmp_path: Path) -> None:
    for tool in TOOLS:
        require_tool(tool)
    env = {**os.environ, **_app_env()}
    with (
        XSession(tmp_path / "x", tray=False) as x,
        TrayApp(x, "--no-watch", "--tray-wait", "1", env=env, log=tmp_path / "app.log") as app,
    ):
        window = wait_until(lambda: _wide_windows(x) or not app.alive(), START_S)
        assert window and app.alive(), f"no window after the wait ran out\n{app.log()}"
        x.start_tray()
        icon = app.wait_icon(START_S)
        assert x.panel is not None and x.panel.id in icon.path
        assert wait_until(lambda: _wide_windows(x) == [], START_S), "the window stayed open beside the tray"
        assert "moving from the window to the tray" in app.log()
        assert app.alive(), app.log()  # closing the window on the way did not quit the app
    assert app.proc is not None and app.proc.returncode == 0, app.log()
