"""No missing glyphs (tofu boxes) in Chinese: every character of every text the tray menu and the
settings dialog show is drawn with the font that shows it, and compared with the drawing of a
character no font has (U+10FFFD): the same pixels mean a box. Needs a CJK font (Debian:
fonts-wqy-zenhei, which ``tests/run.py`` installs)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from kvswitch_gui.tray import TrayController, plain_text
from tests.gui import test_tray
from tests.gui.chinese import CJK, chinese, menus, visible_texts
from tests.gui.test_tray import WAIT, _open_menu

make = test_tray.make
__all__ = ["chinese", "make"]

NO_GLYPH = chr(0x10FFFD)  # a private-use code point no font draws


def _drawn(font: QFont, char: str) -> bytes:
    image = QImage(48, 48, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    try:
        p.setFont(font)
        p.setPen(QColor("black"))
        p.drawText(QRect(0, 0, 48, 48), Qt.AlignmentFlag.AlignCenter, char)
    finally:
        p.end()
    return bytes(image.constBits())


def _boxes(texts: Iterable[tuple[str, QFont]]) -> list[str]:
    """The characters of ``texts`` each font draws as it draws a missing glyph."""
    missing: list[str] = []
    by_font: dict[str, bytes] = {}
    for text, font in texts:
        box = by_font.setdefault(font.key(), _drawn(font, NO_GLYPH))
        for char in set(plain_text(text)):
            if char.isspace() or char in missing:
                continue
            if _drawn(font, char) == box:
                missing.append(char)
    return missing


def test_the_check_sees_a_missing_glyph() -> None:
    """The comparison can fail: a private-use character draws as the box; a letter does not."""
    font = QFont()
    assert _boxes([("\ue000", font)]) == ["\ue000"]
    assert _boxes([("A", font)]) == []


def test_the_chinese_tray_menu_has_no_missing_glyphs(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], chinese: str
) -> None:
    c = make()
    menu = _open_menu(qtbot, c)
    texts = [
        (a.text(), sub.font()) for sub in menus(menu) for a in sub.actions() if a.isVisible() and not a.isSeparator()
    ]
    assert sum(1 for text, _ in texts if CJK.search(text)) > 20  # it is the Chinese menu
    assert _boxes(texts) == []
    assert _boxes([(c.tooltip(), menu.font())]) == []


def test_the_chinese_settings_dialog_has_no_missing_glyphs(
    qtbot: Any, kv_sandbox: dict[str, Path], chinese: str
) -> None:
    from kvswitch_gui.settings_dialog import SettingsDialog

    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.check is not None and not dialog.busy, timeout=WAIT)
    texts = [(text, w.font()) for text, w in visible_texts(dialog) if text]
    assert sum(1 for text, _ in texts if CJK.search(text)) > 10
    assert _boxes(texts) == []
