"""Detect clients…: the clients installed on this machine, and registering the chosen ones.

The list is ``kvswitch client detect``'s (read in a worker): each client kvswitch knows, its
settings file (there, or "not there yet"), its program on PATH and version, and whether it is
registered. A found client not registered yet has a check box (checked); **Register selected**
registers the checked ones in a worker (``kvswitch client detect --register`` for those alone)
and reads the list again. Nothing is written to the clients' files.

A found client whose file names an endpoint of its own can become a profile: select its row,
then **Make a profile from CLIENT** (``kvswitch import KIND``, in a worker; the key the file
holds goes into the keyring only with **Store the key it holds in the keyring** checked).
A refusal is shown in the message line, with nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvswitch_gui import jobs
from kvswitch_gui.translations import QT_TRANSLATE_NOOP
from kvswitch_gui.workers import Tasks

if TYPE_CHECKING:
    from kvswitch.installed import Installed

__all__ = ["DetectDialog"]

COLUMNS = (
    QT_TRANSLATE_NOOP("DetectDialog", "Client"),
    QT_TRANSLATE_NOOP("DetectDialog", "Settings file"),
    QT_TRANSLATE_NOOP("DetectDialog", "Program"),
    "kvswitch",
)
"""The list's columns (English; shown translated)."""
MAKE_ANY = QT_TRANSLATE_NOOP("DetectDialog", "&Make a profile from a client")
"""The make button's text while no client is chosen (English; shown translated)."""


def _tr(text: str) -> str:
    return QCoreApplication.translate("DetectDialog", text)


def _file_text(c: Installed) -> str:
    if c.file_exists:
        return str(c.file)
    return QCoreApplication.translate("DetectDialog", "{path} (not there yet)").format(path=c.file)


def _program_text(c: Installed) -> str:
    if c.program is None:
        return QCoreApplication.translate("DetectDialog", "not on PATH")
    return f"{c.program.name} {c.version or QCoreApplication.translate('DetectDialog', '(version unknown)')}"


def _state_text(c: Installed) -> str:
    if c.registered:
        return (
            QCoreApplication.translate("DetectDialog", "registered as {name}").format(name=c.name)
            if c.name
            else QCoreApplication.translate("DetectDialog", "registered")
        )
    return (
        QCoreApplication.translate("DetectDialog", "register")
        if c.found
        else QCoreApplication.translate("DetectDialog", "not found")
    )


class DetectDialog(QDialog):
    """``registered(names)`` after clients were registered; ``profile_made(jobs.ProfileMade)``
    after a profile was made from a client's settings. ``found``: a list already read (the
    first-run offer); otherwise the dialog reads it."""

    registered = Signal(list)
    profile_made = Signal(object)
    loaded = Signal()
    failed = Signal(str)

    def __init__(self, found: jobs.Detected | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("kvswitch — Detect clients"))
        self.setMinimumWidth(760)
        self.detected: jobs.Detected | None = None
        self.rows: dict[str, QTreeWidgetItem] = {}  # by kind id
        self.just_registered: list[str] = []
        self._tasks = Tasks()

        self.intro = QLabel(
            self.tr(
                "Clients installed here (their settings file where the client keeps it, their "
                "program on PATH). Registered clients follow every switch; their files are "
                "written at the next switch, never now."
            )
        )
        self.intro.setWordWrap(True)
        self.table = QTreeWidget()
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels([_tr(c) for c in COLUMNS])
        self.table.setRootIsDecorated(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.header().setStretchLastSection(False)
        self.table.itemChanged.connect(lambda *_: self._update_buttons())
        self.message = QLabel(self.tr("looking for clients…"))
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.button(QDialogButtonBox.StandardButton.Close).setText(self.tr("&Close"))
        self.register_button = QPushButton(self.tr("&Register selected"))
        self.refresh_button = QPushButton(self.tr("&Look again"))
        self.buttons.addButton(self.register_button, QDialogButtonBox.ButtonRole.ApplyRole)
        self.buttons.addButton(self.refresh_button, QDialogButtonBox.ButtonRole.ResetRole)
        self.register_button.clicked.connect(self.register_selected)
        self.make_button = QPushButton(_tr(MAKE_ANY))
        self.make_button.clicked.connect(self.make_profile)
        self.store_key_check = QCheckBox(self.tr("&Store the key it holds in the keyring"))
        self.store_key_check.setToolTip(
            self.tr("off: the profile sends no key until you store one (API key…); the key is never shown")
        )
        self.refresh_button.clicked.connect(self.refresh)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        make_row = QHBoxLayout()
        make_row.addWidget(self.make_button)
        make_row.addWidget(self.store_key_check)
        make_row.addStretch(1)
        layout.addLayout(make_row)
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
        self.message.setText(self.tr("looking for clients…"))
        self._tasks.run(jobs.detect, on_done=self._on_detected, on_error=self._on_failed)
        self._update_buttons()

    def _on_detected(self, found: jobs.Detected) -> None:
        chosen = self.chosen()
        self.detected = found
        self.table.blockSignals(True)
        self.table.clear()
        self.rows = {}
        for c in found.clients:
            item = QTreeWidgetItem([c.product, _file_text(c), _program_text(c), _state_text(c)])
            tip = [str(c.file)]
            if c.endpoint:
                tip.append(
                    self.tr("uses {endpoint} · model {model}").format(endpoint=c.endpoint, model=c.model)
                    if c.model
                    else self.tr("uses {endpoint}").format(endpoint=c.endpoint)
                )
            if c.problem:
                tip.append(self.tr("cannot read it: {problem}").format(problem=c.problem))
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
        if chosen is not None and chosen.kind in self.rows:
            self.rows[chosen.kind].setSelected(True)  # the row chosen before looking again
        self.table.blockSignals(False)
        present = len(found.found)
        if not present:
            self.message.setText(
                self.tr(
                    "No clients found (looked for: {clients}). Install one, or register a file "
                    "with kvswitch client add."
                ).format(clients=", ".join(c.product for c in found.clients))
            )
        elif found.candidates:
            self.message.setText(self.tr("Check the ones kvswitch should keep in step, then Register selected."))
        else:
            self.message.setText(self.tr("Every client found is registered."))
        if any(self._importable(c) for c in found.clients):
            self.message.setText(
                self.message.text()
                + " "
                + self.tr("To make a profile from a client's settings, select it, then Make a profile.")
            )
        if self.just_registered:
            self.message.setText(
                self.tr("Registered {clients}.").format(clients=", ".join(self.just_registered))
                + " "
                + self.message.text()
            )
            self.just_registered = []
        self._update_buttons()
        self.loaded.emit()

    def _on_failed(self, exc: BaseException) -> None:
        self.message.setText(self.tr("Cannot look for clients: {problem}").format(problem=exc))
        self._update_buttons()
        self.failed.emit(str(exc))

    def selected(self) -> list[Installed]:
        """The found, unregistered clients whose box is checked."""
        if self.detected is None:
            return []
        return [
            c
            for c in self.detected.candidates
            if c.kind in self.rows and self.rows[c.kind].checkState(0) == Qt.CheckState.Checked
        ]

    @staticmethod
    def _importable(c: Installed) -> bool:
        """Its file names an endpoint of its own: a profile can be made from it."""
        return c.file_exists and c.endpoint is not None

    def chosen(self) -> Installed | None:
        """The client of the selected row (``None``: no row selected)."""
        if self.detected is None:
            return None
        picked = {id(item) for item in self.table.selectedItems()}
        return next((c for c in self.detected.clients if c.kind in self.rows and id(self.rows[c.kind]) in picked), None)

    def _update_buttons(self) -> None:
        self.register_button.setEnabled(not self.busy and bool(self.selected()))
        self.refresh_button.setEnabled(not self.busy)
        chosen = self.chosen()
        if chosen is not None and self._importable(chosen):
            self.make_button.setText(
                self.tr("&Make a profile from {client}").format(client=chosen.product.replace("&", "&&"))
            )
            self.make_button.setToolTip(
                (
                    self.tr(
                        "a profile from what {path} holds now: its endpoint {endpoint}, model {model}; the file "
                        "itself is not changed"
                    )
                    if chosen.model
                    else self.tr(
                        "a profile from what {path} holds now: its endpoint {endpoint}; the file itself is not changed"
                    )
                ).format(path=chosen.file, endpoint=chosen.endpoint, model=chosen.model)
            )
        else:
            self.make_button.setText(_tr(MAKE_ANY))
            self.make_button.setToolTip(self.tr("select a client whose settings file names an endpoint of its own"))
        self.make_button.setEnabled(not self.busy and chosen is not None and self._importable(chosen))
        self.store_key_check.setEnabled(not self.busy)

    def register_selected(self) -> None:
        """Register the checked clients (in a worker), then look again."""
        chosen = self.selected()
        if not chosen or self.busy:
            return
        self.message.setText(self.tr("registering {clients}…").format(clients=", ".join(c.product for c in chosen)))
        self._tasks.run(jobs.register, chosen, on_done=self._on_registered, on_error=self._on_register_failed)
        self._update_buttons()

    def _on_registered(self, names: list[str]) -> None:
        self.just_registered = list(names)
        if names:
            self.registered.emit(names)
        self.refresh()

    def make_profile(self) -> None:
        """A profile from the selected client's settings (in a worker); nothing is written
        when the library refuses."""
        chosen = self.chosen()
        if chosen is None or not self._importable(chosen) or self.busy:
            return
        self.message.setText(self.tr("making a profile from {client}'s settings…").format(client=chosen.product))
        self._tasks.run(
            jobs.import_client,
            chosen.kind,
            self.store_key_check.isChecked(),
            on_done=self._on_profile_made,
            on_error=lambda exc: self._on_make_failed(chosen.product, exc),
        )
        self._update_buttons()

    def _on_profile_made(self, made: jobs.ProfileMade) -> None:
        text = self.tr("Made profile {name} from {client}'s settings ({model} at {url}).").format(
            name=made.name, client=made.product, model=made.model, url=made.base_url
        )
        if made.activated:
            text += " " + self.tr("It is the active profile now.")
        text += " " + self.tr("Render it into your clients with Profile ▸ {name}.").format(name=made.name)
        self.message.setText(text)
        self._update_buttons()
        self.profile_made.emit(made)

    def _on_make_failed(self, product: str, exc: BaseException) -> None:
        self.message.setText(self.tr("No profile made from {client}: {problem}").format(client=product, problem=exc))
        self._update_buttons()
        self.failed.emit(str(exc))

    def _on_register_failed(self, exc: BaseException) -> None:
        self.message.setText(self.tr("Nothing registered: {problem}").format(problem=exc))
        self._update_buttons()
        self.failed.emit(str(exc))
