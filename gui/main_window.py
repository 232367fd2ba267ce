"""The window kvswitch-tray shows when the desktop has no system tray (or under offscreen Qt):
the tray menu's actions as buttons, the clients with their state, and a status line for
notices. Layout only; :class:`kvswitch_gui.tray.TrayController` fills and wires it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
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

__all__ = ["MainWindow"]


class MainWindow(QWidget):
    """Mode buttons, profile combo, clients list, the other actions, and a status line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("kvswitch")
        self.setMinimumWidth(520)

        self.header = QLabel("loading…")
        font = self.header.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.header.setFont(font)

        self.merged_button = QPushButton("Merged")
        self.split_button = QPushButton("Split")
        self.mode_group = QButtonGroup(self)
        self.mode_group.setExclusive(True)
        for b in (self.merged_button, self.split_button):
            b.setCheckable(True)
            self.mode_group.addButton(b)
        self.merged_button.setToolTip("chunked prefill on one instance")
        self.split_button.setToolTip("prefill/decode disaggregation")
        self.profile_combo = QComboBox()
        self.profile_combo.setMinimumContentsLength(12)

        switches = QGridLayout()
        switches.addWidget(QLabel("Mode"), 0, 0)
        modes = QHBoxLayout()
        modes.addWidget(self.merged_button)
        modes.addWidget(self.split_button)
        modes.addStretch(1)
        switches.addLayout(modes, 0, 1)
        switches.addWidget(QLabel("Profile"), 1, 0)
        switches.addWidget(self.profile_combo, 1, 1)

        self.clients = QTreeWidget()
        self.clients.setHeaderLabels(["Client", "State"])
        self.clients.setRootIsDecorated(False)
        self.clients.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.clients.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.clients.header().setStretchLastSection(True)
        self.open_file_button = QPushButton("Open file")
        self.open_folder_button = QPushButton("Open folder")
        self.restore_button = QToolButton()
        self.restore_button.setText("Restore a backup")
        self.restore_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.restore_menu = QMenu(self.restore_button)
        self.restore_button.setMenu(self.restore_menu)
        self.client_mode_button = QToolButton()
        self.client_mode_button.setText("This client alone")
        self.client_mode_button.setToolTip("switch the selected client alone, or put it back in every client's mode")
        self.client_mode_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.client_mode_menu = QMenu(self.client_mode_button)
        self.client_mode_button.setMenu(self.client_mode_menu)
        self.detect_button = QPushButton("Detect clients…")
        client_buttons = QHBoxLayout()
        for w in (self.client_mode_button, self.open_file_button, self.open_folder_button, self.restore_button):
            client_buttons.addWidget(w)
        client_buttons.addStretch(1)
        client_buttons.addWidget(self.detect_button)
        clients_box = QGroupBox("Clients")
        clients_layout = QVBoxLayout(clients_box)
        clients_layout.addWidget(self.clients)
        clients_layout.addLayout(client_buttons)

        self.gateway_label = QLabel("Gateway: off")
        self.gateway_label.setWordWrap(True)
        self.gateway_button = QPushButton("Start gateway")
        self.gateway_button.setToolTip("kvswitch's local gateway for the clients pinned to it: start it "
                                       "in the background (it keeps running when kvswitch-tray quits) or stop it")
        gateway = QHBoxLayout()
        gateway.addWidget(self.gateway_label, 1)
        gateway.addWidget(self.gateway_button)

        self.probe_button = QPushButton("Run probe…")
        self.settings_button = QPushButton("Settings…")
        self.key_button = QPushButton("API key…")
        self.log_button = QPushButton("Open log")
        self.watch_check = QCheckBox("Watch files")
        self.watch_check.setToolTip("keep the clients in step when a file is edited by hand")
        self.quit_button = QPushButton("Quit")
        tools = QHBoxLayout()
        for w in (self.probe_button, self.settings_button, self.key_button, self.log_button):
            tools.addWidget(w)
        tools.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.watch_check)
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

    def show_notice(self, title: str, text: str, error: bool = False) -> None:
        """Show a notice in the status line (red for a failure)."""
        colour = "#b91c1c" if error else "#065f46"
        self.status_title.setText(title)
        self.status_title.setStyleSheet(f"font-weight: bold; color: {colour};")
        self.status.setText(text)
