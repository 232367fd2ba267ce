"""What the tray's language tests share: the app in Chinese for one test (Qt's translators and
the library's language, both put back to English after it), and walks over what a user reads
and acts on (a menu's items, a window's buttons and labels)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QMenu, QWidget

from kvswitch_gui.translations import install_translator

CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture
def chinese(qapp: QApplication) -> Iterator[str]:
    """The app in Simplified Chinese for this test (English again after it)."""
    try:
        yield install_translator(qapp, "zh_CN")
    finally:
        install_translator(qapp, "en")


def actionable(menu: QMenu) -> list[QAction]:
    """The items of ``menu`` a user can choose now: visible, enabled, not separators."""
    return [a for a in menu.actions() if a.isVisible() and a.isEnabled() and not a.isSeparator()]


def menus(menu: QMenu) -> Iterator[QMenu]:
    """``menu`` and every submenu below it."""
    yield menu
    for action in menu.actions():
        sub = action.menu()
        if sub is not None:
            yield from menus(sub)


def controls(window: QWidget) -> list[tuple[str, QWidget]]:
    """The texts in ``window`` a mnemonic acts on: its buttons (push, check, radio, tool) and the
    labels that have a buddy, visible ones only, each with its widget."""
    found: list[tuple[str, QWidget]] = []
    for w in window.findChildren(QWidget):
        if not w.isVisibleTo(window):
            continue
        acts = isinstance(w, QAbstractButton) or (isinstance(w, QLabel) and w.buddy() is not None)
        if acts and w.text():
            found.append((w.text(), w))
    return found


def visible_texts(window: QWidget) -> Iterator[tuple[str, QWidget]]:
    """Every text shown in ``window`` (labels, buttons, group titles, window title), with the
    widget whose font draws it."""
    from PySide6.QtWidgets import QGroupBox

    yield window.windowTitle(), window
    for w in window.findChildren(QWidget):
        if not w.isVisibleTo(window):
            continue
        if isinstance(w, QLabel | QAbstractButton):
            yield w.text(), w
        elif isinstance(w, QGroupBox):
            yield w.title(), w


def wait_idle(qtbot: Any, widget: Any, timeout: int = 8000) -> None:
    qtbot.waitUntil(lambda: not widget.busy, timeout=timeout)
