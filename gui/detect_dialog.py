"""Detect clients…: the clients installed on this machine, and registering the chosen ones.

The list is ``kvswitch client detect``'s (read in a worker): each client kvswitch knows, its
settings file (there, or "not there yet"), its program on PATH and version, and whether it is
registered. A found client not registered yet has a check box (checked); **Register selected**
registers the checked ones in a worker (``kvswitch client detect --register`` for those alone)
and reads the list again. Nothing is written to the clients' files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvswitch_gui import jobs
from kvswitch_gui.workers import Tasks

if TYPE_CHECKING:
    from kvswitch.installed import Installed

__all__ = ["DetectDialog"]

COLUMNS = ("Client", "Settings file", "Program", "kvswitch")


def _file_text(c: Installed) -> str:
    return str(c.file) if c.file_exists else f"{c.file} (not there yet)"


def _program_text(c: Installed) -> str:
    if c.program is None:
        return "not on PATH"
    return f"{c.program.name} {c.version or '(version unknown)'}"


def _state_text(c: Installed) -> str:
    if c.registered:
        return f"registered as {c.name}" if c.name else "registered"
    return "register" if c.found else "not found"


class DetectDialog(QDialog):
    """``registered(names)`` after clients were registered. ``found``: a list already read
    (the first-run offer); otherwise the dialog reads it."""

    registered = Signal(list)
    loaded = Signal()
    failed = Signal(str)

    def __init__(self, found: jobs.Detected | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("kvswitch — Detect clients")
        self.setMinimumWidth(760)
        self.detected: jobs.Detected | None = None
        self.rows: dict[str, QTreeWidgetItem] = {}  # by kind id
        self.just_registered: list[str] = []
        self._tasks = Tasks()

        self.intro = QLabel("Clients installed here (their settings file where the client keeps it, their "
                            "program on PATH). Registered clients follow every switch; their files are "
                            "written at the next switch, never now.")
        self.intro.setWordWrap(True)
        self.table = QTreeWidget()
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels(list(COLUMNS))
        self.table.setRootIsDecorated(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.header().setStretchLastSection(False)
        self.table.itemChanged.connect(lambda *_: self._update_buttons())
        self.message = QLabel("looking for clients…")
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.register_button = QPushButton("Register selected")
        self.refresh_button = QPushButton("Look again")
        self.buttons.addButton(self.register_button, QDialogButtonBox.ButtonRole.ApplyRole)
        self.buttons.addButton(self.refresh_button, QDialogButtonBox.ButtonRole.ResetRole)
        self.register_button.clicked.connect(self.register_selected)
        self.refresh_button.clicked.connect(self.refresh)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.resize(820, 320)

        if found is not None:
            self._on_detected(found)
        else:
            self.refresh()

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def refresh(self) -> None:
        """Look for the clients again (in a worker)."""
        self.message.setText("looking for clients…")
        self._tasks.run(jobs.detect, on_done=self._on_detected, on_error=self._on_failed)
        self._update_buttons()

    def _on_detected(self, found: jobs.Detected) -> None:
        self.detected = found
        self.table.blockSignals(True)
        self.table.clear()
        self.rows = {}
        for c in found.clients:
            item = QTreeWidgetItem([c.product, _file_text(c), _program_text(c), _state_text(c)])
            tip = [str(c.file)]
            if c.endpoint:
                tip.append(f"uses {c.endpoint}" + (f" · model {c.model}" if c.model else ""))
            if c.problem:
                tip.append(f"cannot read it: {c.problem}")
            item.setToolTip(1, "\n".join(tip))
            if c.program is not None:
                item.setToolTip(2, str(c.program))
            if c.found and not c.registered:
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(0, Qt.CheckState.Checked)
            elif not c.found:
                item.setDisabled(True)
            self.table.addTopLevelItem(item)
            self.rows[c.kind] = item
        for i in (0, 2, 3):
            self.table.resizeColumnToContents(i)
        self.table.blockSignals(False)
        present = len(found.found)
        if not present:
            self.message.setText("No clients found (looked for: " + ", ".join(c.product for c in found.clients)
                                 + "). Install one, or register a file with kvswitch client add.")
        elif found.candidates:
            self.message.setText("Check the ones kvswitch should keep in step, then Register selected.")
        else:
            self.message.setText("Every client found is registered.")
        if self.just_registered:
            self.message.setText(f"Registered {', '.join(self.just_registered)}. {self.message.text()}")
            self.just_registered = []
        self._update_buttons()
        self.loaded.emit()

    def _on_failed(self, exc: BaseException) -> None:
        self.message.setText(f"Cannot look for clients: {exc}")
        self._update_buttons()
        self.failed.emit(str(exc))

    def selected(self) -> list[Installed]:
        """The found, unregistered clients whose box is checked."""
        if self.detected is None:
            return []
        return [c for c in self.detected.candidates
                if c.kind in self.rows and self.rows[c.kind].checkState(0) == Qt.CheckState.Checked]

    def _update_buttons(self) -> None:
        self.register_button.setEnabled(not self.busy and bool(self.selected()))
        self.refresh_button.setEnabled(not self.busy)

    def register_selected(self) -> None:
        """Register the checked clients (in a worker), then look again."""
        chosen = self.selected()
        if not chosen or self.busy:
            return
        self.message.setText("registering " + ", ".join(c.product for c in chosen) + "…")
        self._tasks.run(jobs.register, chosen, on_done=self._on_registered, on_error=self._on_register_failed)
        self._update_buttons()

    def _on_registered(self, names: list[str]) -> None:
        self.just_registered = list(names)
        if names:
            self.registered.emit(names)
        self.refresh()

    def _on_register_failed(self, exc: BaseException) -> None:
        self.message.setText(f"Nothing registered: {exc}")
        self._update_buttons()
        self.failed.emit(str(exc))
