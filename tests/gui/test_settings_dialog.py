"""The profile settings dialog: live diagnostics from the library, an atomic save that keeps
comments, and no save while a value has an error."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from kvswitch.backups import list_backups
from kvswitch_gui.settings_dialog import SettingsDialog

WAIT = 8000


@pytest.fixture
def dialog(qtbot: Any, kv_sandbox: dict[str, Path]) -> Iterator[SettingsDialog]:
    d = SettingsDialog()
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.check is not None and not d.busy, timeout=WAIT)
    yield d
    qtbot.waitUntil(lambda: not d.busy, timeout=WAIT)


def _settle(qtbot: Any, d: SettingsDialog) -> None:
    qtbot.waitUntil(lambda: not d.busy, timeout=WAIT)


def test_it_shows_the_active_profile(dialog: SettingsDialog) -> None:
    assert dialog.profile == "taotoken"
    assert "Profile taotoken" in dialog.title.text() and "merged mode" in dialog.title.text()
    assert dialog.chunk_size.value() == 512 and dialog.concurrency.value() == 4
    assert dialog.prefill.text() == "" and dialog.protocol.currentText() == "layer-wise"
    assert dialog.values()["request.timeout_seconds"] == 120
    assert not dialog.save_button.isEnabled()  # nothing changed yet
    assert dialog.check is not None and not dialog.check.changed


def test_typing_700_says_it_becomes_704(qtbot: Any, dialog: SettingsDialog) -> None:
    # (700, not 500: 500 becomes 512, which the profile holds already, so there is nothing to save)
    editor = dialog.chunk_size.lineEdit()
    editor.selectAll()
    qtbot.keyClicks(editor, "700")
    qtbot.waitUntil(lambda: "becomes 704" in dialog.messages["cache.chunk_size"].text(), timeout=WAIT)
    assert dialog.messages["cache.chunk_size"].isVisibleTo(dialog)
    assert "KVS101" in dialog.message_text("cache.chunk_size")
    _settle(qtbot, dialog)
    assert dialog.save_button.isEnabled()  # a warning does not block the save


def test_save_is_atomic_and_keeps_comments(qtbot: Any, dialog: SettingsDialog, kv_sandbox: dict[str, Path]) -> None:
    config = kv_sandbox["config"]
    config.write_text(config.read_text().replace("chunk_size = 512", "chunk_size = 512  # my comment"))
    dialog2 = SettingsDialog()  # reads the file with the comment
    qtbot.addWidget(dialog2)
    qtbot.waitUntil(lambda: dialog2.check is not None and not dialog2.busy, timeout=WAIT)
    inode = os.stat(config).st_ino
    dialog2.chunk_size.setValue(1024)
    dialog2.prefill.setText("http://127.0.0.1:8100")
    dialog2.apply_check.setChecked(False)
    qtbot.waitUntil(lambda: dialog2.can_save, timeout=WAIT)
    with qtbot.waitSignal(dialog2.saved, timeout=WAIT) as saved:
        qtbot.mouseClick(dialog2.save_button, Qt.MouseButton.LeftButton)
    assert saved.args == ["taotoken", False]
    text = config.read_text()
    assert "chunk_size = 1024  # my comment" in text  # the comment stays, its gap as written
    assert "# split mode: prefill/decode endpoints" in text
    data = tomllib.loads(text)["profiles"]["taotoken"]
    assert data["split"]["prefill_base_url"] == "http://127.0.0.1:8100"
    assert os.stat(config).st_ino != inode  # replaced by rename, not rewritten in place
    assert list_backups(config)  # the previous bytes were kept
    assert "Saved in kvswitch.toml" in dialog2.status.text()
    _settle(qtbot, dialog2)
    assert not dialog2.save_button.isEnabled()  # saved: nothing left to save
    assert '"chunkSize": 512' in kv_sandbox["cline"].read_text()  # not applied (unchecked)


def test_invalid_values_cannot_be_saved(qtbot: Any, dialog: SettingsDialog, kv_sandbox: dict[str, Path]) -> None:
    before = kv_sandbox["config"].read_bytes()
    dialog.concurrency.setValue(0)
    qtbot.waitUntil(lambda: "KVS112" in dialog.messages["split.max_transfer_concurrency"].text(), timeout=WAIT)
    _settle(qtbot, dialog)
    assert not dialog.save_button.isEnabled()
    assert "fix it to save" in dialog.status.text()
    dialog.save()  # even when asked directly
    assert "Not saved: KVS112" in dialog.status.text()
    dialog.concurrency.setValue(4)
    dialog.decode.setText("ftp://decode")  # a warning while the clients are in merged mode
    _settle(qtbot, dialog)
    assert "not an http(s) URL" in dialog.message_text("split.decode_base_url")
    _settle(qtbot, dialog)
    assert kv_sandbox["config"].read_bytes() == before


def test_unreadable_config_is_reported(qtbot: Any) -> None:
    d = SettingsDialog()
    qtbot.addWidget(d)
    with qtbot.waitSignal(d.failed, timeout=WAIT) as failed:
        pass
    assert "kvswitch init" in failed.args[0]
    assert not d.form.isEnabled() and "kvswitch init" in d.status.text()


def test_opening_the_form_changes_nothing(qtbot: Any, kv_sandbox: dict[str, Path]) -> None:
    config = kv_sandbox["config"]
    text = config.read_text().replace("temperature = 0.2", "temperature = 0.125")
    config.write_text(
        text.replace("timeout_seconds = 120", "timeout_seconds = 90.5").replace(
            "max_transfer_concurrency = 4", "max_transfer_concurrency = 96"
        )
    )
    d = SettingsDialog()
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: d.check is not None and not d.busy, timeout=WAIT)
    assert d.check is not None and not d.check.changed, d.check.edits
    assert "above 8" in d.message_text("split.max_transfer_concurrency")
