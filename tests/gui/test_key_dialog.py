"""The API key dialog: a password field, the key stored in the (in-memory) keyring through
the library, never shown back, placeholders refused, a missing keyring explained."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from keyring.backends import fail
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QWidget

from kvswitch.keys import NO_BACKEND_HELP, service_name
from kvswitch_gui.key_dialog import KeyDialog

WAIT = 8000
KEY = "sk-live-7f3kQ9zR2mX8vB1nL4aA"


def _texts(w: QWidget) -> list[str]:
    return [x.text() for x in w.findChildren(QLabel)] + [x.displayText() for x in w.findChildren(QLineEdit)]


@pytest.fixture
def dialog(qtbot: Any, kv_sandbox: dict[str, Path]) -> Iterator[KeyDialog]:
    d = KeyDialog()
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.info is not None, timeout=WAIT)
    yield d
    qtbot.waitUntil(lambda: not d.busy, timeout=WAIT)


def test_stores_the_key_and_shows_only_its_mask(
    qtbot: Any, dialog: KeyDialog, memory_keyring: dict[tuple[str, str], str]
) -> None:
    assert dialog.key_edit.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.current.text() == "none"
    dialog.apply_check.setChecked(False)
    qtbot.keyClicks(dialog.key_edit, KEY)
    assert dialog.save_button.isEnabled()
    assert all(KEY not in t for t in _texts(dialog))  # the field shows dots
    with qtbot.waitSignal(dialog.key_saved, timeout=WAIT) as saved:
        qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert saved.args == ["taotoken", "sk-…" + KEY[-4:], False]
    assert memory_keyring[(service_name(), "taotoken")] == KEY
    assert dialog.key_edit.text() == ""
    assert dialog.current.text() == "sk-…" + KEY[-4:]
    assert "Stored sk-…" in dialog.message.text()
    assert all(KEY not in t and KEY[3:-4] not in t for t in _texts(dialog))


def test_reopened_dialog_shows_the_stored_key_masked(
    qtbot: Any, kv_sandbox: dict[str, Path], memory_keyring: dict[tuple[str, str], str]
) -> None:
    memory_keyring[(service_name(), "taotoken")] = KEY
    d = KeyDialog("taotoken")
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: d.info is not None, timeout=WAIT)
    assert d.current.text() == "sk-…" + KEY[-4:]
    assert all(KEY not in t for t in _texts(d))


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("sk-你的Key", "placeholder"),
        ("<your-api-key>", "placeholder"),
        (" " + KEY, "whitespace"),
        ("sk-live 7f3kQ9zR2mX8vB1n", "whitespace"),
    ],
)
def test_unusable_keys_are_refused_with_the_library_message(
    qtbot: Any, dialog: KeyDialog, memory_keyring: dict[tuple[str, str], str], typed: str, says: str
) -> None:
    dialog.key_edit.setText(typed)
    assert not dialog.save_button.isEnabled()
    assert says in dialog.message.text()
    dialog.save()  # asked directly: still refused
    qtbot.wait(50)
    assert not dialog.busy and memory_keyring == {}


def test_no_keyring_backend_says_how_to_get_one(
    qtbot: Any, kv_sandbox: dict[str, Path], memory_keyring: dict[tuple[str, str], str]
) -> None:
    keyring.set_keyring(fail.Keyring())
    d = KeyDialog()
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: d.info is not None, timeout=WAIT)
    assert "no OS keyring is available" in d.message.text()
    d.key_edit.setText(KEY)
    with qtbot.waitSignal(d.failed, timeout=WAIT) as failed:
        d.save()
    assert failed.args == [NO_BACKEND_HELP]
    assert "Not stored: no OS keyring is available" in d.message.text()
    assert "gnome-keyring" in d.message.text()
    assert all(KEY not in t for t in _texts(d))


def test_env_reference_profile_is_not_stored_in_the_keyring(qtbot: Any, kv_sandbox: dict[str, Path]) -> None:
    config = kv_sandbox["config"]
    config.write_text(config.read_text().replace('key = "keyring"', 'key = "env:TAOTOKEN_KEY"'))
    d = KeyDialog()
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: d.info is not None, timeout=WAIT)
    assert not d.key_edit.isEnabled() and "env:TAOTOKEN_KEY" in d.message.text()
