"""Store a profile's API key in the OS keyring.

The key is typed into a password field and handed to ``kvswitch.keys.set_key`` in a worker;
it is never shown back, only its mask (``sk-…abcd``). Keys the library refuses (whitespace,
line breaks, placeholders such as the article's ``sk-你的…Key``) are refused with its message
while typing; a missing keyring backend shows the library's how-to-get-one message.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from kvswitch.errors import KvswitchError
from kvswitch.keys import check_key
from kvswitch_gui import jobs
from kvswitch_gui.workers import Tasks

__all__ = ["KeyDialog"]


class KeyDialog(QDialog):
    """``key_saved(profile, masked key, apply)`` after the keyring took the key."""

    key_saved = Signal(str, str, bool)
    loaded = Signal()
    failed = Signal(str)

    def __init__(self, profile: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("kvswitch — API key"))
        self.setMinimumWidth(460)
        self.profile: str | None = profile
        self.info: jobs.KeyInfo | None = None
        self._tasks = Tasks()
        self._saving = False

        self.title = QLabel(self.tr("reading the profile…"))
        self.title.setWordWrap(True)
        self.current = QLabel("")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText(self.tr("paste the API key"))
        self.key_edit.setEnabled(False)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.apply_check = QCheckBox(self.tr("&Write it into the clients now (files outside git repositories only)"))
        self.apply_check.setChecked(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setText(self.tr("&Save"))
        self.buttons.button(QDialogButtonBox.StandardButton.Close).setText(self.tr("&Close"))
        self.save_button.setEnabled(False)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow(QLabel(self.tr("Stored key")), self.current)  # a label: nothing to focus
        form.addRow(self.tr("&New key"), self.key_edit)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.apply_check)
        layout.addWidget(self.buttons)

        self.key_edit.textChanged.connect(self._on_text)
        self._tasks.run(jobs.key_info, profile, on_done=self._on_loaded, on_error=self._on_load_failed)

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def _on_loaded(self, info: jobs.KeyInfo) -> None:
        import html

        from kvswitch.validate import show_name

        self.info, self.profile = info, info.profile
        heading = self.tr("API key of profile {name}").format(name=html.escape(show_name(info.profile)))
        self.title.setText(
            f"<b>{heading}</b><br>"
            + self.tr("Kept in the OS keyring; written only into the client files that need it.")
        )
        self.current.setText(info.masked or self.tr("none"))
        if info.reference != "keyring":
            self._say(
                self.tr(
                    "Profile {name} reads its key from {reference}, not the keyring; set that variable "
                    "instead, or point the profile at the keyring: kvswitch profile edit {name} --key "
                    "keyring"
                ).format(name=info.profile, reference=info.reference),
                error=True,
            )
            self.key_edit.setEnabled(False)
        else:
            if info.problem:
                self._say(info.problem, error=True)
            self.key_edit.setEnabled(True)
            self.key_edit.setFocus()
        self.loaded.emit()

    def _on_load_failed(self, exc: BaseException) -> None:
        self.title.setText(self.tr("Cannot read the profile"))
        self._say(str(exc), error=True)
        self.failed.emit(str(exc))

    def _problem(self, key: str) -> str | None:
        try:
            check_key(key)
        except KvswitchError as exc:
            return exc.message
        return None

    def _on_text(self, text: str) -> None:
        problem = self._problem(text) if text else None
        if problem:
            self._say(problem, error=True)
        elif not (self.info is not None and self.info.problem):
            self._say("")
        self.save_button.setEnabled(bool(text) and problem is None and not self._saving)

    def save(self) -> None:
        """Store the typed key (refused with the library's message when it is unusable)."""
        key = self.key_edit.text()
        if self.profile is None or self._saving or not self.key_edit.isEnabled():
            return
        problem = self._problem(key)
        if problem:
            self._say(problem, error=True)
            return
        self._saving = True
        self.save_button.setEnabled(False)
        self._say(self.tr("Storing…"))
        self._tasks.run(jobs.store_key, self.profile, key, on_done=self._on_saved, on_error=self._on_save_failed)

    def _on_saved(self, masked: str) -> None:
        self._saving = False
        self.key_edit.clear()
        self.current.setText(masked)
        assert self.profile is not None
        apply = self.apply_check.isChecked()
        self._say(
            (
                self.tr("Stored {masked} in the OS keyring. Writing it into the clients…")
                if apply
                else self.tr("Stored {masked} in the OS keyring.")
            ).format(masked=masked)
        )
        self.key_saved.emit(self.profile, masked, apply)

    def _on_save_failed(self, exc: BaseException) -> None:
        self._saving = False
        self.save_button.setEnabled(bool(self.key_edit.text()))
        message = exc.message if isinstance(exc, KvswitchError) else f"{type(exc).__name__}"
        self._say(self.tr("Not stored: {problem}").format(problem=message), error=True)
        self.failed.emit(message)

    def _say(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {'#b91c1c' if error else '#374151'};")
