"""One set of QActions for the tray menu and the fallback window (offscreen Qt): the menu holds
the very actions the window's buttons are bound to, so a check mark, a greyed item or a shown
item changes in both at once, and a click on either does the same thing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from kvswitch_gui.actions import Actions
from kvswitch_gui.main_window import MainWindow
from kvswitch_gui.tray import TrayController, plain_text
from tests.gui import test_tray
from tests.gui.test_tray import WAIT, _find, _open_menu

make = test_tray.make  # the tray tests' fixture: controllers made here are shut down after each test


@pytest.fixture
def bound(qtbot: Any) -> Iterator[tuple[Actions, MainWindow]]:
    actions = Actions()
    window = MainWindow()
    qtbot.addWidget(window)
    window.use_actions(actions)
    yield actions, window
    actions.deleteLater()


def _checked(w: MainWindow) -> tuple[bool, bool]:
    return w.merged_button.isChecked(), w.split_button.isChecked()


def test_mode_state_shows_on_the_buttons(bound: tuple[Actions, MainWindow]) -> None:
    actions, w = bound
    assert not w.merged_button.isEnabled() and _checked(w) == (False, False)  # nothing read yet
    actions.show_modes("split", enabled=True, all_clients=False)
    assert _checked(w) == (False, True) and w.merged_button.isEnabled() and w.split_button.isEnabled()
    actions.show_modes("merged", enabled=True, all_clients=True)
    assert _checked(w) == (True, False)
    assert plain_text(actions.modes["merged"].text()) == "Switch all to Merged"
    assert plain_text(w.merged_button.text()) == "Merged"  # the window keeps its own label (and mnemonic)
    actions.show_modes(None, enabled=False, all_clients=False)  # a switch runs, or none can
    assert _checked(w) == (False, False) and not w.merged_button.isEnabled() and not w.split_button.isEnabled()


def test_a_click_on_a_button_triggers_its_action(bound: tuple[Actions, MainWindow]) -> None:
    actions, w = bound
    seen: list[str] = []
    actions.modes["split"].triggered.connect(lambda: seen.append("split"))
    actions.probe.triggered.connect(lambda: seen.append("probe"))
    actions.quit.triggered.connect(lambda: seen.append("quit"))
    actions.show_modes("merged", enabled=True, all_clients=False)
    w.split_button.click()
    w.probe_button.click()
    w.quit_button.click()
    assert seen == ["split", "probe", "quit"]
    actions.show_modes("merged", enabled=False, all_clients=False)
    w.split_button.click()  # greyed: nothing happens
    assert seen == ["split", "probe", "quit"]


def test_checkable_settings_follow_both_ways(bound: tuple[Actions, MainWindow]) -> None:
    actions, w = bound
    actions.show_watch(True)
    assert w.watch_check.isChecked()
    toggles: list[bool] = []
    actions.watch.triggered.connect(lambda checked: toggles.append(checked))
    w.watch_check.click()
    assert toggles == [False] and not actions.watch.isChecked() and not w.watch_check.isChecked()
    assert w.autostart_check.isHidden()  # unknown until the state says
    actions.show_autostart(True, busy=True)
    assert not w.autostart_check.isHidden() and w.autostart_check.isChecked()
    assert not w.autostart_check.isEnabled()
    actions.show_autostart(None, busy=False)
    assert w.autostart_check.isHidden()


def test_profiles_gateway_and_language(bound: tuple[Actions, MainWindow]) -> None:
    actions, w = bound
    chosen: list[str] = []
    actions.profile_chosen.connect(chosen.append)
    actions.show_profiles(["lab", "a&b"], "a&b", enabled=True)
    combo = w.profile_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["lab", "a&b"]
    assert combo.currentIndex() == 1 and combo.isEnabled()
    assert actions.profiles["a&b"].text() == "a&&b"  # the name as it is, in a menu
    combo.activated.emit(0)
    assert chosen == ["lab"]
    actions.show_profiles(["lab", "a&b"], "lab", enabled=False)
    assert combo.currentIndex() == 0 and not combo.isEnabled()

    actions.show_gateway(True, can_start=True, can_stop=True)
    assert plain_text(w.gateway_button.text()) == "Stop gateway" and w.gateway_button.isEnabled()
    stops: list[bool] = []
    actions.gateway_stop.triggered.connect(lambda: stops.append(True))
    w.gateway_button.click()
    assert stops == [True]
    actions.show_gateway(False, can_start=False, can_stop=True)
    assert plain_text(w.gateway_button.text()) == "Start gateway" and not w.gateway_button.isEnabled()

    assert [a for a in w.language_menu.actions() if not a.isSeparator()] == [a for _, a in actions.language_items]
    actions.show_language("zh_CN", pending=True, running="en", system="en")
    assert actions.languages["zh_CN"].isChecked()
    assert actions.language_note.text() == "restart kvswitch-tray to apply"


# -- in the tray controller ----------------------------------------------------------------------


def _menu_action(menu: QMenu, *labels: str) -> QAction:
    return _find(menu, *labels)


def test_menu_and_window_share_the_actions(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    c = make()  # no tray here: the window, and the menu built beside it
    w = c.window
    menu = _open_menu(qtbot, c)
    merged, split = _menu_action(menu, "Mode", "Merged"), _menu_action(menu, "Mode", "Split")
    assert (merged, split) == (c.actions.modes["merged"], c.actions.modes["split"])
    assert _menu_action(menu, "Watch files") is c.actions.watch
    assert _menu_action(menu, "Run probe…") is c.actions.probe
    assert [a for a in w.language_menu.actions() if not a.isSeparator()] == [
        a for a in _find(menu, "Language").menu().actions() if not a.isSeparator()
    ]
    assert merged.isChecked() and w.merged_button.isChecked() and not w.split_button.isChecked()

    # a switch from the menu: both grey out at once, while it runs
    split.trigger()
    assert c.busy is not None
    assert not split.isEnabled() and not w.split_button.isEnabled() and not w.merged_button.isEnabled()
    assert not w.profile_combo.isEnabled()
    qtbot.waitUntil(lambda: c.idle and c.snapshot.mode == "split", timeout=WAIT)
    assert split.isChecked() and w.split_button.isChecked() and not w.merged_button.isChecked()
    assert split.isEnabled() and w.split_button.isEnabled()

    # and from the window: the menu's check mark moves with it
    w.merged_button.click()
    assert not merged.isEnabled() and not w.merged_button.isEnabled()
    qtbot.waitUntil(lambda: c.idle and c.snapshot.mode == "merged", timeout=WAIT)
    assert merged.isChecked() and w.merged_button.isChecked() and not split.isChecked()


def test_watch_toggle_shows_in_both(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    c = make()
    w = c.window
    watch = _menu_action(_open_menu(qtbot, c), "Watch files")
    assert not watch.isChecked() and not w.watch_check.isChecked()
    w.watch_check.click()  # the wish shows at once, in both
    assert watch.isChecked() and w.watch_check.isChecked()
    qtbot.waitUntil(lambda: c.watching and c.idle, timeout=WAIT)
    watch.trigger()
    assert not watch.isChecked() and not w.watch_check.isChecked()
    qtbot.waitUntil(lambda: not c.watching and c.idle, timeout=WAIT)
