"""Keyboard mnemonics, in English and in Chinese (Qt's ``打开(&O)`` convention): every item a
user can choose in the tray menu and its submenus, and every button and buddied label of each
window, has one, and none repeats within one menu or one window."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QMenu, QWidget

from kvswitch_gui.translations import install_translator
from kvswitch_gui.tray import (
    TrayController,
    assign_mnemonics,
    escape_mnemonic,
    mnemonic_of,
    plain_text,
)
from tests.gui import test_tray
from tests.gui.chinese import actionable, controls, menus
from tests.gui.test_tray import WAIT, _open_menu
from tests.gui.two_clients import make_two_clients

make = test_tray.make
__all__ = ["make"]


@pytest.fixture(params=["en", "zh_CN"])
def language(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    try:
        yield install_translator(qapp, request.param)
    finally:
        install_translator(qapp, "en")


def _menu_problems(menu: QMenu) -> list[str]:
    problems = []
    for sub in menus(menu):
        keys: dict[str, str] = {}
        for action in actionable(sub):
            text = action.text()
            key = mnemonic_of(text)
            if key is None:
                problems.append(f"no mnemonic: {text!r} (in {plain_text(sub.title()) or 'the tray menu'!r})")
            elif key in keys:
                problems.append(f"{text!r} repeats {keys[key]!r}'s key {key!r}")
            else:
                keys[key] = text
    return problems


def _window_problems(window: QWidget) -> list[str]:
    problems = []
    keys: dict[str, str] = {}
    for text, _ in controls(window):
        key = mnemonic_of(text)
        if key is None:
            problems.append(f"no mnemonic: {text!r}")
        elif key in keys:
            problems.append(f"{text!r} repeats {keys[key]!r}'s key {key!r}")
        else:
            keys[key] = text
    return problems


def test_every_tray_menu_item_has_its_own_mnemonic(
    qtbot: Any, make: Callable[..., TrayController], sandbox: Path, language: str
) -> None:
    import os

    make_two_clients(dict(os.environ))  # two real clients: per-client submenus, with backups after a switch
    c = make()
    c.switch_mode("split")
    qtbot.waitUntil(lambda: c.busy is None and c.idle, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert sum(len(actionable(m)) for m in menus(menu)) > 25  # the whole menu was walked
    assert _menu_problems(menu) == []


def test_the_fallback_windows_buttons_have_their_own_mnemonics(
    make: Callable[..., TrayController], kv_sandbox: dict[str, Path], language: str
) -> None:
    c = make(use_tray=False)
    assert len(controls(c.window)) >= 12
    assert _window_problems(c.window) == []
    assert _menu_problems(c.window.language_menu) == []


@pytest.mark.parametrize("which", ["settings", "key", "detect", "probe"])
def test_every_dialogs_controls_have_their_own_mnemonics(
    qtbot: Any, kv_sandbox: dict[str, Path], language: str, which: str
) -> None:
    from kvswitch_gui.detect_dialog import DetectDialog
    from kvswitch_gui.key_dialog import KeyDialog
    from kvswitch_gui.probe_window import ProbeWindow
    from kvswitch_gui.settings_dialog import SettingsDialog

    window = {"settings": SettingsDialog, "key": KeyDialog, "detect": DetectDialog, "probe": ProbeWindow}[which]()
    qtbot.addWidget(window)
    window.show()
    if which != "probe":
        qtbot.waitUntil(lambda: not window.busy, timeout=WAIT)
    assert len(controls(window)) >= 4
    assert _window_problems(window) == []


def test_mnemonics_for_names_take_the_first_free_letter_and_keep_ampersands() -> None:
    menu = QMenu()
    try:
        fixed = menu.addAction("&Detect clients…")
        cline = menu.addAction(escape_mnemonic("Cline"))
        claude = menu.addAction(escape_mnemonic("Claude & co"))
        digits = menu.addAction("2026-01-02 10:00:00")
        chinese = menu.addAction("客户端")
        off = menu.addAction("disabled")
        off.setEnabled(False)
        assign_mnemonics(menu)
        assert fixed.text() == "&Detect clients…"  # a fixed item keeps its own key
        assert cline.text() == "&Cline" and claude.text() == "C&laude && co"
        assert plain_text(claude.text()) == "Claude & co"
        assert digits.text() == "&2026-01-02 10:00:00"
        assert chinese.text() == "客户端 (&A)"  # no letter of its own: Qt's (&X) form
        assert off.text() == "disabled"  # nothing to choose: left alone
        assert mnemonic_of("Save && quit") is None and mnemonic_of("打开(&O)") == "o"
        assert plain_text("打开(&O)…") == "打开…"
    finally:
        menu.deleteLater()
