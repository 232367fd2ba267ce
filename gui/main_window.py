"""The window kvswitch-tray shows when the desktop has no system tray (or under offscreen Qt):
the tray menu's actions as buttons, the clients with their state, and a status line for
notices. Layout, and the buttons bound to the tray's own actions (:meth:`MainWindow.use_actions`:
one :class:`kvswitch_gui.actions.Actions` for the menu and the window, so a check mark or a
greyed item shows in both at once); :class:`kvswitch_gui.tray.TrayController` fills the rest.
Every button and check box has a keyboard mnemonic of its own in the window (Alt+the
underlined letter), which is why a button keeps its own text rather than its action's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QToolButton,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from PySide6.QtGui import QAction

    from kvswitch_gui.actions import Actions

__all__ = ["MainWindow"]


class _Follow(QObject):
    """A button (its child: gone with it) that shows its action's enabled, checked and, with
    ``visible``, shown state, and triggers the action when clicked."""

    def __init__(self, button: QAbstractButton, action: QAction, *, visible: bool = False) -> None:
        super().__init__(button)
        self.button, self.action, self.visible = button, action, visible
        button.clicked.connect(self.trigger)
        action.changed.connect(self.follow)
        self.follow()

    def trigger(self) -> None:
        self.action.trigger()

    def follow(self) -> None:
        button, action = self.button, self.action
        button.setEnabled(action.isEnabled())
        if self.visible:
            button.setVisible(action.isVisible())
        if action.isCheckable() and button.isChecked() != action.isChecked():
            group = button.group()
            if group is not None and group.exclusive():  # which cannot uncheck its checked button
                group.setExclusive(False)
                button.setChecked(action.isChecked())
                group.setExclusive(True)
            else:
                button.setChecked(action.isChecked())


class _FollowGateway(QObject):
    """The gateway button: Start while the gateway is off, Stop while it runs (whichever of the
    two actions is shown), enabled as that action is."""

    def __init__(self, button: QPushButton, start: QAction, stop: QAction) -> None:
        super().__init__(button)
        self.button, self.start, self.stop = button, start, stop
        button.clicked.connect(self.trigger)
        start.changed.connect(self.follow)
        stop.changed.connect(self.follow)
        self.follow()

    def trigger(self) -> None:
        (self.stop if self.stop.isVisible() else self.start).trigger()

    def follow(self) -> None:
        running = self.stop.isVisible()
        self.button.setText(
            QCoreApplication.translate("TrayController", "Stop &gateway")
            if running
            else QCoreApplication.translate("TrayController", "Start &gateway")
        )
        self.button.setEnabled((self.stop if running else self.start).isEnabled())


class _FollowProfiles(QObject):
    """The profile combo: the profiles' names, the checked one current, enabled while they are;
    choosing one triggers its action."""

    def __init__(self, combo: QComboBox, actions: Actions) -> None:
        super().__init__(combo)
        self.combo, self.actions = combo, actions
        combo.activated.connect(self.trigger)
        actions.profiles_changed.connect(self.refill)
        self.refill()

    def trigger(self, index: int) -> None:
        action = self.actions.profiles.get(self.combo.itemText(index))
        if action is not None:
            action.trigger()

    def refill(self) -> None:
        combo = self.combo
        combo.blockSignals(True)
        combo.clear()
        combo.addItems(list(self.actions.profiles))
        combo.blockSignals(False)
        for action in self.actions.profiles.values():
            action.changed.connect(self.follow)
        self.follow()

    def follow(self) -> None:
        profiles = list(self.actions.profiles.values())
        self.combo.setEnabled(any(a.isEnabled() for a in profiles))
        checked = next((i for i, a in enumerate(profiles) if a.isChecked()), None)
        if checked is not None and checked != self.combo.currentIndex():
            self.combo.blockSignals(True)
            self.combo.setCurrentIndex(checked)
            self.combo.blockSignals(False)


class MainWindow(QWidget):
    """Mode buttons, profile combo, clients list, the other actions, and a status line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("kvswitch")
        self.setMinimumWidth(520)

        self.header = QLabel(self.tr("loading…"))
        font = self.header.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.header.setFont(font)

        self.merged_button = QPushButton(self.tr("&Merged"))
        self.split_button = QPushButton(self.tr("S&plit"))
        self.mode_group = QButtonGroup(self)
        self.mode_group.setExclusive(True)
        for b in (self.merged_button, self.split_button):
            b.setCheckable(True)
            self.mode_group.addButton(b)
        self.merged_button.setToolTip(self.tr("chunked prefill and continuous batching on one instance"))
        self.split_button.setToolTip(self.tr("prefill/decode disaggregation"))
        self.profile_combo = QComboBox()
        self.profile_combo.setMinimumContentsLength(12)

        switches = QGridLayout()
        switches.addWidget(QLabel(self.tr("Mode")), 0, 0)
        modes = QHBoxLayout()
        modes.addWidget(self.merged_button)
        modes.addWidget(self.split_button)
        modes.addStretch(1)
        switches.addLayout(modes, 0, 1)
        profile_label = QLabel(self.tr("Pro&file"))
        profile_label.setBuddy(self.profile_combo)
        switches.addWidget(profile_label, 1, 0)
        switches.addWidget(self.profile_combo, 1, 1)

        self.clients = QTreeWidget()
        self.clients.setHeaderLabels([self.tr("Client"), self.tr("State")])
        self.clients.setRootIsDecorated(False)
        self.clients.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.clients.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.clients.header().setStretchLastSection(True)
        self.open_file_button = QPushButton(self.tr("&Open file"))
        self.open_folder_button = QPushButton(self.tr("Open fol&der"))
        self.restore_button = QToolButton()
        self.restore_button.setText(self.tr("&Restore a backup"))
        self.restore_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.restore_menu = QMenu(self.restore_button)
        self.restore_button.setMenu(self.restore_menu)
        self.client_mode_button = QToolButton()
        self.client_mode_button.setText(self.tr("&This client alone"))
        self.client_mode_button.setToolTip(
            self.tr("switch the selected client alone, or put it back in every client's mode")
        )
        self.client_mode_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.client_mode_menu = QMenu(self.client_mode_button)
        self.client_mode_button.setMenu(self.client_mode_menu)
        self.detect_button = QPushButton(self.tr("D&etect clients…"))
        client_buttons = QHBoxLayout()
        for w in (self.client_mode_button, self.open_file_button, self.open_folder_button, self.restore_button):
            client_buttons.addWidget(w)
        client_buttons.addStretch(1)
        client_buttons.addWidget(self.detect_button)
        clients_box = QGroupBox(self.tr("Clients"))
        clients_layout = QVBoxLayout(clients_box)
        clients_layout.addWidget(self.clients)
        clients_layout.addLayout(client_buttons)

        self.gateway_label = QLabel(self.tr("Gateway: off"))
        self.gateway_label.setWordWrap(True)
        self.gateway_button = QPushButton(self.tr("Start &gateway"))
        self.gateway_button.setToolTip(
            self.tr(
                "kvswitch's local gateway for the clients pinned to it: start it "
                "in the background (it keeps running when kvswitch-tray quits) or "
                "stop it"
            )
        )
        gateway = QHBoxLayout()
        gateway.addWidget(self.gateway_label, 1)
        gateway.addWidget(self.gateway_button)

        self.probe_button = QPushButton(self.tr("Run pro&be…"))
        self.settings_button = QPushButton(self.tr("&Settings…"))
        self.key_button = QPushButton(self.tr("API &key…"))
        self.log_button = QPushButton(self.tr("Open &log"))
        self.watch_check = QCheckBox(self.tr("&Watch files"))
        self.watch_check.setToolTip(self.tr("keep the clients in step when a file is edited by hand"))
        self.autostart_check = QCheckBox(self.tr("La&unch at login"))
        self.autostart_check.setToolTip(self.tr("start kvswitch-tray when you log in to this desktop"))
        self.autostart_check.setVisible(False)  # shown once the state says whether it is on
        self.language_button = QToolButton()
        self.language_button.setText(self.tr("La&nguage"))
        self.language_button.setToolTip(self.tr("the language of kvswitch-tray (applies at the next start)"))
        self.language_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.language_menu = QMenu(self.language_button)
        self.language_button.setMenu(self.language_menu)
        self.quit_button = QPushButton(self.tr("&Quit"))
        tools = QHBoxLayout()
        for w in (self.probe_button, self.settings_button, self.key_button, self.log_button):
            tools.addWidget(w)
        tools.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.watch_check)
        bottom.addWidget(self.autostart_check)
        bottom.addWidget(self.language_button)
        bottom.addStretch(1)
        bottom.addWidget(self.quit_button)

        self.status_title = QLabel()
        self.status_title.setObjectName("statusTitle")
        self.status = QLabel("")
        self.status.setObjectName("status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addLayout(switches)
        layout.addWidget(clients_box, 1)
        layout.addLayout(gateway)
        layout.addLayout(tools)
        layout.addLayout(bottom)
        layout.addWidget(self.status_title)
        layout.addWidget(self.status)

    def use_actions(self, actions: Actions) -> None:
        """Bind the buttons to the tray's actions: a click triggers the action, and the action's
        enabled and checked state (and Launch at login's visibility) show on its button; the
        Language button opens the very same Language ▸ items."""
        for button, action in (
            (self.merged_button, actions.modes["merged"]),
            (self.split_button, actions.modes["split"]),
            (self.detect_button, actions.detect),
            (self.probe_button, actions.probe),
            (self.settings_button, actions.settings),
            (self.key_button, actions.key),
            (self.log_button, actions.log),
            (self.watch_check, actions.watch),
            (self.quit_button, actions.quit),
        ):
            _Follow(button, action)
        _Follow(self.autostart_check, actions.autostart, visible=True)
        _FollowGateway(self.gateway_button, actions.gateway_start, actions.gateway_stop)
        _FollowProfiles(self.profile_combo, actions)
        actions.fill_language_menu(self.language_menu)

    def show_notice(self, title: str, text: str, error: bool = False) -> None:
        """Show a notice in the status line (red for a failure)."""
        colour = "#b91c1c" if error else "#065f46"
        self.status_title.setText(title)
        self.status_title.setStyleSheet(f"font-weight: bold; color: {colour};")
        self.status.setText(text)
