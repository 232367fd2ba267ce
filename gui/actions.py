"""The tray's fixed actions, one set for the tray menu and the fallback window.

:class:`Actions` owns a ``QAction`` for each thing the user can do from either place — Mode ▸
Merged / Split, the profiles, Detect clients…, Make a profile from a client…, Start / Stop
gateway, Run probe…, Settings…, API key…, Watch files, Open log, Language ▸, Launch at login,
Quit — with its text, mnemonic, tooltip, check mark and enabled state. The tray menu adds these
very actions (:class:`kvswitch_gui.tray.TrayController`), the window binds its buttons to them
(:meth:`kvswitch_gui.main_window.MainWindow.use_actions`): a state set here shows in both at
once. The ``show_*`` methods are the one place that state is set.

The texts keep the tray's translation context (``TrayController``), where the catalogue has
them. What the actions do is connected by their owner (the controller); the profiles' and the
languages' choices arrive as :attr:`Actions.profile_chosen` and :attr:`Actions.language_chosen`.

Two environment variables set how two of the actions start: :data:`NO_WATCH_ENV` (Watch files
off) and :data:`NO_DETECT_ENV` (the first start does not open Detect clients…). The app reads
them before its icon shows, so they live here, in a module that imports nothing of the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QAction, QActionGroup

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu

__all__ = ["LANGUAGE_NAMES", "MODES", "NO_DETECT_ENV", "NO_WATCH_ENV", "Actions", "escape_mnemonic"]

MODES = ("merged", "split")
LANGUAGE_NAMES = {"en": "English", "zh_CN": "简体中文"}
"""Each language by its own name (never translated)."""
NO_WATCH_ENV = "KVSWITCH_TRAY_NO_WATCH"
"""``1``: Watch files starts off (the app's ``--no-watch``)."""
NO_DETECT_ENV = "KVSWITCH_TRAY_NO_DETECT"
"""``1``: the app's first start does not offer "Detect clients…"."""


def escape_mnemonic(text: str) -> str:
    """``text`` (data: a name, a path, a message) shown as it is in a menu or button: ``&`` doubled."""
    return text.replace("&", "&&")


def _checkable(action: QAction, group: QActionGroup | None = None) -> QAction:
    action.setCheckable(True)
    if group is not None:
        group.addAction(action)
    return action


class Actions(QObject):
    """The QActions the tray menu and the fallback window share (see the module's docstring)."""

    profile_chosen = Signal(str)
    """A profile's item was triggered: its name."""
    language_chosen = Signal(object)
    """A Language ▸ choice was triggered: ``"en"``, ``"zh_CN"``, or None (the system's)."""
    profiles_changed = Signal()
    """:attr:`profiles` holds other names (its actions are new)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        translate = QCoreApplication.translate
        self.mode_group = QActionGroup(self)
        self.mode_group.setExclusive(True)
        self.modes: dict[str, QAction] = {}
        for mode in MODES:
            action = _checkable(QAction(self), self.mode_group)
            action.setToolTip(
                translate("TrayController", "chunked prefill and continuous batching on one instance")
                if mode == "merged"
                else translate("TrayController", "prefill/decode disaggregation")
            )
            self.modes[mode] = action
        self._all_clients: bool | None = None
        self.show_modes(None, enabled=False, all_clients=False)

        self.profile_group = QActionGroup(self)
        self.profile_group.setExclusive(True)
        self.profiles: dict[str, QAction] = {}
        self.make_profile = QAction(translate("TrayController", "&Make a profile from a client…"), self)
        self.make_profile.setToolTip(
            translate(
                "TrayController",
                "a profile from the settings a client's file holds now "
                "(its endpoint and model; its key only if you ask)",
            )
        )
        self.detect = QAction(translate("TrayController", "&Detect clients…"), self)
        self.detect.setToolTip(
            translate("TrayController", "find the clients installed here and choose which kvswitch keeps in step")
        )
        self.gateway_start = QAction(translate("TrayController", "&Start gateway"), self)
        self.gateway_start.setToolTip(
            translate(
                "TrayController",
                "kvswitch's local gateway for the active profile, in the background "
                "(kvswitch gateway --detach): it keeps running when the tray quits",
            )
        )
        self.gateway_stop = QAction(translate("TrayController", "S&top gateway"), self)
        self.gateway_stop.setToolTip(
            translate("TrayController", "stop it (kvswitch gateway stop); streams in flight get up to 10 s to finish")
        )
        self.gateway_stop.setVisible(False)

        self.probe = QAction(translate("TrayController", "&Run probe…"), self)
        self.settings = QAction(translate("TrayController", "&Settings…"), self)
        self.key = QAction(translate("TrayController", "&API key…"), self)
        self.watch = _checkable(QAction(translate("TrayController", "&Watch files"), self))
        self.watch.setToolTip(translate("TrayController", "keep the clients in step when a file is edited by hand"))
        self.log = QAction(translate("TrayController", "&Open log"), self)

        self.language_group = QActionGroup(self)
        self.language_group.setExclusive(True)
        labels: dict[str | None, str] = {
            None: translate("TrayController", "&System default"),
            "en": "&English",
            "zh_CN": "简体中文(&C)",
        }
        self.languages: dict[str | None, QAction] = {}
        for lang, label in labels.items():
            action = _checkable(QAction(label, self), self.language_group)
            action.triggered.connect(lambda _=False, v=lang: self.language_chosen.emit(v))
            self.languages[lang] = action
        self.language_note = QAction(translate("TrayController", "applies at the next start"), self)
        self.language_note.setEnabled(False)

        self.autostart = _checkable(QAction(translate("TrayController", "La&unch at login"), self))
        self.autostart.setToolTip(translate("TrayController", "start kvswitch-tray when you log in to this desktop"))
        self.autostart.setVisible(False)  # shown once the state says whether it is on
        self.quit = QAction(translate("TrayController", "&Quit"), self)

    # -- the one place each state is set ------------------------------------------------
    def show_modes(self, mode: str | None, *, enabled: bool, all_clients: bool) -> None:
        """Mode ▸'s check mark (``mode``; None: none) and enabled state; ``all_clients``: some
        client has its own mode, so the items read "Switch all to …"."""
        if all_clients != self._all_clients:
            self._all_clients = all_clients
            translate = QCoreApplication.translate
            for name, action in self.modes.items():
                if all_clients:
                    text = (
                        translate("TrayController", "Switch all to &Merged")
                        if name == "merged"
                        else translate("TrayController", "Switch all to &Split")
                    )
                else:
                    text = (
                        translate("TrayController", "&Merged")
                        if name == "merged"
                        else translate("TrayController", "&Split")
                    )
                action.setText(text)
        for name, action in self.modes.items():
            action.setChecked(name == mode)
            action.setEnabled(enabled)

    def show_profiles(self, names: Sequence[str], active: str | None, *, enabled: bool) -> None:
        """The profiles' items (new ones when the names changed: :attr:`profiles_changed`), the
        active one checked."""
        if list(names) != list(self.profiles):
            for action in self.profiles.values():
                self.profile_group.removeAction(action)
                action.deleteLater()
            self.profiles = {}
            for name in names:
                action = _checkable(QAction(escape_mnemonic(name), self), self.profile_group)
                action.triggered.connect(lambda _=False, n=name: self.profile_chosen.emit(n))
                self.profiles[name] = action
            self.profiles_changed.emit()
        for name, action in self.profiles.items():
            action.setChecked(name == active)
            action.setEnabled(enabled)

    def show_profile_needed(self, has_profile: bool) -> None:
        """Settings… and API key… edit the active profile: enabled only when there is one."""
        self.settings.setEnabled(has_profile)
        self.key.setEnabled(has_profile)

    def show_gateway(self, running: bool, *, can_start: bool, can_stop: bool) -> None:
        """Start gateway while it is off, Stop gateway while it runs, each enabled or not."""
        self.gateway_start.setVisible(not running)
        self.gateway_stop.setVisible(running)
        self.gateway_start.setEnabled(can_start)
        self.gateway_stop.setEnabled(can_stop)

    def show_watch(self, on: bool) -> None:
        self.watch.setChecked(on)

    def show_autostart(self, on: bool | None, *, busy: bool) -> None:
        """Launch at login: hidden where it cannot be set (``on`` None), greyed while it changes."""
        self.autostart.setVisible(on is not None)
        self.autostart.setChecked(bool(on))
        self.autostart.setEnabled(not busy)

    def show_language(self, wanted: str | None, *, pending: bool, running: str, system: str) -> None:
        """Language ▸: the saved choice checked (``wanted``; None: the system's), the note saying
        whether a restart is needed (``pending``), ``running`` and ``system`` by their names."""
        translate = QCoreApplication.translate
        for lang, action in self.languages.items():
            action.setChecked(lang == wanted)
        self.languages[None].setToolTip(
            translate("TrayController", "the desktop's language ({language}), or KVSWITCH_LANG when it is set").format(
                language=LANGUAGE_NAMES.get(system, system)
            )
        )
        self.language_note.setText(
            translate("TrayController", "restart kvswitch-tray to apply")
            if pending
            else translate("TrayController", "applies at the next start")
        )
        self.language_note.setToolTip(
            translate("TrayController", "in use now: {language}").format(language=LANGUAGE_NAMES.get(running, running))
        )

    # -- where they appear -----------------------------------------------------------------
    def fill_language_menu(self, menu: QMenu) -> None:
        """Language ▸ (the tray's, or the window's button's): the choices, then the note."""
        menu.addActions(list(self.languages.values()))
        menu.addSeparator()
        menu.addAction(self.language_note)

    @property
    def language_items(self) -> list[tuple[str | None, QAction]]:
        """Language ▸'s items in order, by the setting each saves (``"note"``: the line saying
        when it applies)."""
        return [*self.languages.items(), ("note", self.language_note)]
