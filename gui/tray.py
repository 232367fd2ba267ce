"""The tray controller: icon, tooltip and menu from the library's state; every switch, restore
and key or profile save through the library in a worker thread; the watcher inside the app.

Menu (rebuilt from the last state when it opens; labels updated in place when fresh state
arrives while it is open)::

    taotoken · merged                      (header, disabled)
    ─────────
    Mode — merged          ▸  ● Merged / ○ Split   ("Switch all to …" once a client has its own mode)
    Profile — taotoken     ▸  ● taotoken / ○ local …   ("no profiles" + Make a profile from a client…)
    Clients — all in sync  ▸  Claude Code — split, in sync ▸  split, in sync · its own mode   (disabled)
                              Qwen Code — merged, in sync    changed outside kvswitch        (when it was)
                              ─────────                      ─────────
                              Detect clients…                ○ Merged / ● Split  (this client alone)
                                                             Follow all (merged)             (own mode only)
                                                             ─────────
                                                             Open file
                                                             Open folder
                                                             Restore a backup ▸ (newest first)
    Gateway — on, split    ▸  Gateway: on, split — http://127.0.0.1:18090   (disabled)
                              profile lab · pinned: Claude Code, qwen        (disabled)
                              route: default (split)                         (disabled, while on)
                              merged: TTFT p50 123 ms (last 37 requests)     (disabled, while on)
                              split: no requests yet                         (disabled, while on)
                              ─────────
                              Start gateway / Stop gateway
    ─────────
    Run probe…
    Settings…
    API key…
    ─────────
    ✓ Watch files
    Open log
    Language               ▸  ● System default / ○ English / ○ 简体中文   (applies at the next start)
    ✓ Launch at login                        (shown where kvswitch_gui.autostart is installed)
    ─────────
    Quit

Every label goes through Qt's translation (``self.tr``; the catalogue is
``resources/i18n/kvswitch_zh_CN.ts``), and every actionable item has a keyboard mnemonic: the
fixed ones in their text (``&Mode``, ``模式(&M)``), the ones made from data (profile names, client
titles, backups) given the first free letter of their text by :func:`assign_mnemonics`.

Without an active profile (Detect registered clients, none was made yet) the header reads
"kvswitch — no profile yet", the icon is hollow with the warning corner, and every switch is
greyed: a switch needs a profile. Profile ▸ Make a profile from a client… opens Detect, where
a client's settings become one.

A client pinned to the gateway (``kvswitch gateway pin``) has, instead of its own Merged /
Split, a greyed line saying the gateway chooses its mode: Mode ▸ tells a running gateway at
once, and a request may ask for its own. The gateway started here runs on its own (it outlives
the tray) until Gateway ▸ Stop gateway or ``kvswitch gateway stop``. While one runs, its submenu
says how it routes requests that ask for no mode and, per mode, the median TTFT of its latest
answers (read from its ``GET /samples`` with the local token, in the refresh's worker).

The fixed items are :class:`kvswitch_gui.actions.Actions`: without a system tray
:class:`kvswitch_gui.main_window.MainWindow`'s buttons are bound to these very QActions, so a
check mark or a greyed item shows in the menu and the window at once.
Every notice (success and failure alike, unlike CC Switch's silent tray) goes through
:meth:`TrayController.notify`.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QThreadPool, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QActionGroup, QCursor, QDesktopServices
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QTreeWidgetItem, QWidget

from kvswitch_gui import jobs
from kvswitch_gui.actions import LANGUAGE_NAMES, NO_DETECT_ENV, NO_WATCH_ENV, Actions, escape_mnemonic
from kvswitch_gui.bridge import WatchBridge
from kvswitch_gui.icons import mode_icon
from kvswitch_gui.translations import QT_TRANSLATE_NOOP
from kvswitch_gui.workers import Task, Tasks

if TYPE_CHECKING:
    from kvswitch.watch import Watcher, WatchEvent

__all__ = [
    "NO_DETECT_ENV",
    "NO_WATCH_ENV",
    "ClientItems",
    "Notice",
    "TrayController",
    "assign_mnemonics",
    "escape_mnemonic",
    "mnemonic_of",
    "plain_text",
]

_PATH_ROLE = Qt.ItemDataRole.UserRole
NOTICES_KEPT = 50
EVENT_COALESCE_MS = 300
"""Watcher events arriving this close together make one notice (adopted + propagated + nudged)."""

_EVENT_TITLES = {  # translated where shown: self.tr(title)
    "invalid": QT_TRANSLATE_NOOP("TrayController", "A client file is invalid"),
    "error": QT_TRANSLATE_NOOP("TrayController", "The watcher hit a problem"),
    "adopted": QT_TRANSLATE_NOOP("TrayController", "Took an outside edit"),
    "reverted": QT_TRANSLATE_NOOP("TrayController", "Put an outside edit back"),
    "fixed": QT_TRANSLATE_NOOP("TrayController", "Fixed a client file"),
    "propagated": QT_TRANSLATE_NOOP("TrayController", "Clients updated"),
    "drift": QT_TRANSLATE_NOOP("TrayController", "A client drifted"),
    "nudged": QT_TRANSLATE_NOOP("TrayController", "Restart to apply"),
}


def plain_text(text: str) -> str:
    """A label as the user reads it: the mnemonic marker gone (``&Mode`` → ``Mode``,
    ``模式(&M)`` → ``模式``), ``&&`` back to ``&``."""
    import re

    text = re.sub(r"\(&([^&])\)", "", text)  # Qt's CJK convention: 打开(&O)
    return re.sub(r"&(.)", r"\1", text)


def mnemonic_of(text: str) -> str | None:
    """The key of a label's mnemonic (lower case), or None when it has none."""
    i = 0
    while i < len(text) - 1:
        if text[i] == "&":
            if text[i + 1] != "&":
                return text[i + 1].lower()
            i += 1
        i += 1
    return None


def _with_mnemonic(text: str, taken: set[str]) -> str:
    """``text`` with a mnemonic on its first letter or digit not in ``taken`` (``&&`` kept as
    it is); ``text (&K)`` when none of its own is free; unchanged when no key is left."""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "&":  # an escaped "&&"
            i += 2
            continue
        if c.isascii() and c.isalnum() and c.lower() not in taken:
            taken.add(c.lower())
            return text[:i] + "&" + text[i:]
        i += 1
    free = next((k for k in "abcdefghijklmnopqrstuvwxyz0123456789" if k not in taken), None)
    if free is None:
        return text
    taken.add(free)
    return f"{text} (&{free.upper()})"


def assign_mnemonics(menu: QMenu) -> None:
    """Give every visible, enabled item of ``menu`` without a mnemonic one of its own: the
    keys of the fixed items (their translations carry them) are kept, the rest (names,
    titles, backups) get the first free letter of their text."""
    items = [a for a in menu.actions() if not a.isSeparator() and a.isVisible() and a.isEnabled()]
    taken = {key for a in items if (key := mnemonic_of(a.text())) is not None}
    for action in items:
        if mnemonic_of(action.text()) is None:
            action.setText(_with_mnemonic(action.text(), taken))


@dataclass(frozen=True)
class ClientItems:
    """One client's submenu and the items whose text, check mark or visibility follow its state."""

    menu: QMenu
    state: QAction
    outside: QAction
    modes: dict[str, QAction]
    follow: QAction
    via: QAction
    """Pinned clients only: the gateway chooses the mode (in place of Merged / Split)."""


@dataclass(frozen=True)
class GatewayItems:
    """The Gateway submenu's items."""

    menu: QMenu
    state: QAction
    detail: QAction
    route: QAction
    live: tuple[QAction, QAction]
    """One line per mode (merged, split): the latest answers' TTFT median, or why there is none."""
    start: QAction
    stop: QAction


@dataclass(frozen=True)
class Notice:
    """One notice as the user saw it."""

    title: str
    text: str
    error: bool
    time: float


class TrayController(QObject):
    """The tray (or fallback window) over the kvswitch library."""

    refreshed = Signal(object)  # the new jobs.Snapshot
    noticed = Signal(object)  # a Notice
    quit_requested = Signal()

    def __init__(
        self,
        *,
        use_tray: bool | None = None,
        watch: bool | None = None,
        first_run: bool = False,
        tray_icon: QSystemTrayIcon | None = None,
        parent: QObject | None = None,
    ) -> None:
        """``first_run``: on start, offer "Detect clients…" when no client is registered and
        some are found (once per kvswitch home; the app asks for it, tests only when they want it).
        ``tray_icon``: the icon the app already shows (grey: nothing read yet), taken over."""
        super().__init__(parent)
        self.first_run = first_run
        self.use_tray = QSystemTrayIcon.isSystemTrayAvailable() if use_tray is None else use_tray
        self.watch_wanted = os.environ.get(NO_WATCH_ENV) != "1" if watch is None else watch
        self.snapshot = jobs.Snapshot()
        self.loaded = False  # a snapshot has arrived
        self.notices: deque[Notice] = deque(maxlen=NOTICES_KEPT)
        self.watch_events: deque[WatchEvent] = deque(maxlen=NOTICES_KEPT)
        self.busy: str | None = None
        self.last_failure: str | None = None
        self.last_probe: str | None = None
        self.icon_key: tuple[str | None, bool] = (None, False)

        self._tasks = Tasks(lambda: not self._closing)
        self._closing = False
        self._closing_flag = threading.Event()  # the same, for worker threads
        self._refreshing = False
        self._refresh_again = False
        self._watcher: Watcher | None = None
        self._watch_busy = False
        self._bridge = WatchBridge(self)
        self._bridge.watch_event.connect(self._on_watch_event)
        self._pending_events: list[WatchEvent] = []
        self._event_timer = QTimer(self)
        self._event_timer.setSingleShot(True)
        self._event_timer.setInterval(EVENT_COALESCE_MS)
        self._event_timer.timeout.connect(self._flush_events)
        self._settings: QWidget | None = None
        self._key: QWidget | None = None
        self._detect: Any = None
        self._probe: Any = None

        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._on_about_to_show)
        self._submenus: list[QMenu] = []
        self._built: tuple[Any, ...] | None = None
        self.header_action: QAction | None = None
        self.mode_menu: QMenu | None = None
        self.actions = Actions(self)
        """The fixed items, the same QActions in the tray menu and the window."""
        self.mode_actions: dict[str, QAction] = self.actions.modes
        self.profile_menu: QMenu | None = None
        self.clients_menu: QMenu | None = None
        self.client_menus: dict[Path, QMenu] = {}
        self.client_items: dict[Path, ClientItems] = {}
        self.gateway_items: GatewayItems | None = None
        self.gateway_doing: str | None = None
        """``starting`` / ``stopping`` while the gateway is being started or stopped."""
        self._autostart_busy = False
        self.language_wanted: str | None = None
        """The language chosen in this session, once chosen (it applies at the next start)."""
        self._language_chosen = False

        self._connect_actions()
        self.tray = tray_icon if tray_icon is not None else QSystemTrayIcon(self)
        self.tray.setParent(self)
        if self.use_tray:
            self.tray.setContextMenu(self.menu)
        self.tray.activated.connect(self._on_tray_activated)
        self.window: Any = None
        if not self.use_tray:
            from kvswitch_gui.main_window import MainWindow

            self.window = MainWindow()
            self._wire_window()
        self._build_menu()
        self._show_state()

    def _connect_actions(self) -> None:
        """What each shared action does (the menu and the window trigger the same ones)."""
        a = self.actions
        for mode, action in a.modes.items():
            action.triggered.connect(lambda _=False, m=mode: self.switch_mode(m))
        a.profile_chosen.connect(self.switch_profile)
        a.make_profile.triggered.connect(self.open_detect)
        a.detect.triggered.connect(self.open_detect)
        a.gateway_start.triggered.connect(self.start_gateway)
        a.gateway_stop.triggered.connect(self.stop_gateway)
        a.probe.triggered.connect(self.open_probe)
        a.settings.triggered.connect(self.open_settings)
        a.key.triggered.connect(self.open_key)
        a.watch.triggered.connect(self.set_watch)
        a.log.triggered.connect(self.open_log)
        a.language_chosen.connect(self.set_language)
        a.autostart.triggered.connect(self.set_autostart)
        a.quit.triggered.connect(self.quit)

    @property
    def profile_actions(self) -> dict[str, QAction]:
        """Profile ▸'s items by profile name."""
        return self.actions.profiles

    @property
    def language_items(self) -> list[tuple[str | None, QAction]]:
        """Language ▸'s items, by the setting each saves (``"note"``: when it applies)."""
        return self.actions.language_items

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Show the tray icon (or the window), read the state, start watching if wanted."""
        if self.use_tray:
            self.tray.show()
        else:
            self.window.show()
        self.refresh()
        if self.watch_wanted:
            self.set_watch(True)
        if self.first_run:
            self._run(
                jobs.first_run_offer,
                on_done=self._on_first_run_offer,
                on_error=lambda exc: self.notify(self.tr("Cannot look for clients"), str(exc), error=True),
            )

    def shutdown(self) -> None:
        """Stop the watcher, let running work finish, close every window."""
        self._closing = True
        self._event_timer.stop()
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            watcher.stop()
        # let running work finish; a watcher that a worker was still starting stops itself
        # (jobs.start_watcher sees the closing flag) or when its queued result arrives
        self._closing_flag.set()
        QThreadPool.globalInstance().waitForDone(15000)
        for w in (self._settings, self._key, self._detect, self._probe, self.window):
            if w is not None:
                w.close()
                w.deleteLater()
        self.tray.hide()
        self.menu.deleteLater()  # parentless (a tray menu); the tray only points at it

    def present(self) -> None:
        """Bring kvswitch to the front (a second ``kvswitch-tray`` asked for it)."""
        if self.window is not None:
            self.window.showNormal()
            self.window.raise_()
            self.window.activateWindow()
        else:
            self.notify(self.tr("kvswitch is already running"), self.tr("Its icon is in the system tray."))

    def quit(self) -> None:
        self.quit_requested.emit()

    # -- work in threads ---------------------------------------------------------------
    def _run(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None],
        always: bool = False,
    ) -> Task:
        return self._tasks.run(fn, *args, on_done=on_done, on_error=on_error, always=always)

    @property
    def idle(self) -> bool:
        """No work of this controller is running (tests wait for it)."""
        return not self._tasks and not self._refreshing and not self._pending_events

    # -- state ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the state again (in a worker); the icon, tooltip, menu and window follow."""
        if self._closing:
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self._run(jobs.snapshot, on_done=self._on_snapshot, on_error=self._on_snapshot_failed)

    def _on_snapshot(self, snap: jobs.Snapshot) -> None:
        self._refreshing = False
        self.snapshot = snap
        self.loaded = True
        if snap.structure == self._built:
            self._update_menu()
        else:
            self._build_menu()
        self._show_state()
        self.refreshed.emit(snap)
        if self._refresh_again:
            self._refresh_again = False
            self.refresh()

    def _on_snapshot_failed(self, exc: BaseException) -> None:
        self._on_snapshot(jobs.Snapshot(error=self.tr("cannot read kvswitch's state: {problem}").format(problem=exc)))

    def _show_state(self) -> None:
        snap = self.snapshot
        warning = snap.warning or self.last_failure is not None
        mode = snap.mode if snap.error is None and not snap.no_profile else None  # not set up yet
        self.icon_key = (mode, warning)
        icon = mode_icon(mode, warning)
        self.tray.setIcon(icon)
        self.tray.setToolTip(self.tooltip())
        if self.window is not None:
            self.window.setWindowIcon(icon)
            self._update_window()

    def tooltip(self) -> str:
        snap = self.snapshot
        if not self.loaded:
            lines = [self.tr("kvswitch — reading the clients…")]
        elif snap.error is not None:
            lines = ["kvswitch", snap.error]
        elif snap.no_profile:
            lines = [
                self.tr("kvswitch — no profile yet"),
                self._clients_summary(),
                self.tr("make one from a client's settings: Profile ▸ Make a profile from a client…"),
            ]
        else:
            lines = [f"kvswitch — {snap.profile} · {snap.mode}", self._clients_summary()]
        probe = self.last_probe or snap.last_probe
        lines.append(probe or self.tr("no probe run yet"))
        if self.last_failure:
            lines.append(self.tr("last switch failed: {problem}").format(problem=self.last_failure))
        gw = snap.gateway
        if gw is not None and (gw.running or gw.pinned):
            lines.append(
                gw.state
                if gw.running
                else self.tr("{state}: pinned clients reach nothing until it starts").format(state=gw.state)
            )
        lines.append(self.tr("watching files") if self._watcher is not None else self.tr("not watching files"))
        return "\n".join(lines)

    def _clients_summary(self) -> str:
        clients = self.snapshot.clients
        n = len(clients)
        if not clients:
            return self.tr("no clients registered")
        if self.snapshot.no_profile:
            return (
                self.tr("1 client registered, waiting for a profile")
                if n == 1
                else self.tr("{count} clients registered, waiting for a profile").format(count=n)
            )
        bad = [c for c in clients if not c.ok]
        if not bad:
            return self.tr("1 client in sync") if n == 1 else self.tr("{count} clients in sync").format(count=n)
        return "; ".join(f"{c.label}: {c.state}" for c in bad)

    # -- the menu -------------------------------------------------------------------------
    def _on_about_to_show(self) -> None:
        self._build_menu()
        self.refresh()

    def _header_text(self) -> str:
        snap = self.snapshot
        if not self.loaded:
            return self.tr("kvswitch — reading…")
        if snap.error is not None:
            return self.tr("kvswitch — not ready")
        if snap.no_profile:
            return self.tr("kvswitch — no profile yet")
        return f"{snap.profile} · {snap.mode}"

    def _build_menu(self) -> None:
        snap = self.snapshot
        menu = self.menu
        menu.clear()
        for sub in self._submenus:
            sub.deleteLater()
        self._submenus = []
        self.client_menus = {}
        self.client_items = {}

        self.header_action = menu.addAction(escape_mnemonic(self._header_text()))
        self.header_action.setEnabled(False)
        if snap.error is not None:
            problem = menu.addAction(escape_mnemonic(snap.error if len(snap.error) < 120 else snap.error[:119] + "…"))
            problem.setEnabled(False)
        menu.addSeparator()

        a = self.actions
        self.mode_menu = self._submenu(menu, "")
        self.mode_menu.addActions(list(a.modes.values()))
        self.profile_menu = self._submenu(menu, "")
        self._show_profiles()
        self.profile_menu.addActions(list(a.profiles.values()))
        if not snap.profiles:
            self.profile_menu.addAction(self.tr("no profiles")).setEnabled(False)
            self.profile_menu.addSeparator()
            self.profile_menu.addAction(a.make_profile)

        self.clients_menu = self._submenu(menu, "")
        for client in snap.clients:
            sub = self._submenu(self.clients_menu, escape_mnemonic(client.title))
            self.client_menus[client.path] = sub
            self.client_items[client.path] = self._client_items(sub, client)
            sub.addAction(self.tr("&Open file")).triggered.connect(lambda _=False, p=client.path: self.open_file(p))
            sub.addAction(self.tr("Open fol&der")).triggered.connect(lambda _=False, p=client.path: self.open_folder(p))
            backups = self._submenu(sub, self.tr("&Restore a backup"))
            for b in client.backups:
                label = f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(b.created))} · {_size(b.size)}"
                action = backups.addAction(escape_mnemonic(label))
                action.setToolTip(b.id)
                action.setData(b.id)
                action.triggered.connect(lambda _=False, p=client.path, i=b.id: self.restore_backup(p, i))
            if not client.backups:
                backups.addAction(self.tr("no backups yet")).setEnabled(False)
        if not snap.clients:
            self.clients_menu.addAction(self.tr("no clients registered")).setEnabled(False)
        self.clients_menu.addSeparator()
        self.clients_menu.addAction(a.detect)
        self.gateway_items = self._gateway_items(self._submenu(menu, self.tr("&Gateway")))

        menu.addSeparator()
        menu.addActions([a.probe, a.settings, a.key])
        menu.addSeparator()
        menu.addActions([a.watch, a.log])
        a.fill_language_menu(self._submenu(menu, self.tr("&Language")))
        menu.addAction(a.autostart)
        menu.addSeparator()
        menu.addAction(a.quit)
        self._built = snap.structure
        self._update_menu()

    def _mode_label(self, mode: str) -> str:
        """A client's own mode item: ``&Merged`` / ``&Split``."""
        return self.tr("&Merged") if mode == "merged" else self.tr("&Split")

    def _show_profiles(self) -> None:
        """Profile ▸'s items (the window's list too): the active one checked, greyed while a
        switch runs or none can."""
        snap = self.snapshot
        ready = self.loaded and snap.error is None and not snap.no_profile
        self.actions.show_profiles(snap.profiles, snap.profile, enabled=self.busy is None and ready)

    def _client_items(self, sub: QMenu, client: jobs.ClientView) -> ClientItems:
        """The top of a client's submenu: its state, its own Merged / Split, Follow all."""
        state = sub.addAction("")
        state.setEnabled(False)
        outside = sub.addAction(self.tr("changed outside kvswitch"))
        outside.setEnabled(False)
        outside.setToolTip(
            self.tr("the file differs from what kvswitch last wrote there: edited by hand or by its client")
        )
        sub.addSeparator()
        group = QActionGroup(sub)
        group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)  # a file may be in no mode
        modes: dict[str, QAction] = {}
        for mode in ("merged", "split"):
            action = sub.addAction(self._mode_label(mode))
            action.setCheckable(True)
            action.setToolTip(
                self.tr("switch this client alone to {mode}; the others stay as they are").format(mode=mode)
            )
            group.addAction(action)
            action.triggered.connect(lambda _=False, p=client.path, m=mode: self.switch_client(p, m))
            modes[mode] = action
        follow = sub.addAction(self.tr("&Follow all"))
        follow.setToolTip(self.tr("put it back in every client's mode; later switches of all clients include it again"))
        follow.triggered.connect(lambda _=False, p=client.path: self.follow_all(p))
        via = sub.addAction(self.tr("via gateway: it chooses the mode (Mode ▸ switches all, or per request)"))
        via.setEnabled(False)
        via.setToolTip(
            self.tr(
                "pinned to kvswitch's gateway: a switch of all clients tells the gateway, and a "
                "request picks its own mode with a /merged or /split path prefix or an "
                "X-Cache-Mode header (kvswitch gateway unpin gives it a mode of its own)"
            )
        )
        sub.addSeparator()
        return ClientItems(sub, state, outside, modes, follow, via)

    def _gateway_items(self, sub: QMenu) -> GatewayItems:
        """The Gateway submenu: its state, what it serves, Start / Stop."""
        state = sub.addAction(self.tr("Gateway: off"))
        state.setEnabled(False)
        detail = sub.addAction("")
        detail.setEnabled(False)
        route = sub.addAction("")
        route.setEnabled(False)
        live = (sub.addAction(""), sub.addAction(""))
        for action in live:
            action.setEnabled(False)
        sub.addSeparator()
        start, stop = self.actions.gateway_start, self.actions.gateway_stop
        sub.addActions([start, stop])
        return GatewayItems(sub, state, detail, route, live, start, stop)

    def _client_state(self, client: jobs.ClientView) -> str:
        """The disabled first line of a client's submenu."""
        return self.tr("{state} · its own mode").format(state=client.state) if client.own_mode else client.state

    def _client_view(self, path: Path | None) -> jobs.ClientView | None:
        """The client at ``path`` in the current snapshot (``None``: not there, or no path)."""
        return next((c for c in self.snapshot.clients if c.path == path), None)

    def _client_label(self, path: Path | None) -> str:
        client = self._client_view(path)
        if client is not None:
            return client.label
        return path.name if path is not None else self.tr("the client")

    def _submenu(self, parent: QMenu, title: str) -> QMenu:
        sub = QMenu(title, parent)
        parent.addMenu(sub)
        self._submenus.append(sub)
        return sub

    def _update_menu(self) -> None:
        """Labels, check marks and enabled states from the current state, in place (an open
        menu stays open)."""
        snap = self.snapshot
        ready = self.loaded and snap.error is None and not snap.no_profile  # a switch needs a profile
        if self.header_action is not None:
            self.header_action.setText(escape_mnemonic(self._header_text()))
        own = ready and any(c.own_mode for c in snap.clients)
        if self.mode_menu is not None:
            self.mode_menu.setTitle(self.tr("&Mode — {mode}").format(mode=snap.mode) if ready else self.tr("&Mode"))
        # "Switch all to …" once a client has its own mode: the switch takes theirs too
        self.actions.show_modes(snap.mode if ready else None, enabled=self.busy is None and ready, all_clients=own)
        self.actions.show_profile_needed(not snap.no_profile)  # Settings… and API key… edit it
        self._show_profiles()
        if self.profile_menu is not None:
            title = (
                self.tr("&Profile — none yet")
                if snap.no_profile
                else self.tr("&Profile — {name}").format(name=escape_mnemonic(snap.profile or ""))
                if ready
                else self.tr("&Profile")
            )
            self.profile_menu.setTitle(title)
        if self.clients_menu is not None:
            bad = sum(1 for c in snap.clients if not c.ok)
            summary = (
                self.tr("all in sync")
                if not bad
                else self.tr("1 needs attention")
                if bad == 1
                else self.tr("{count} need attention").format(count=bad)
            )
            if snap.no_profile:
                summary = self.tr("no profile yet")
            self.clients_menu.setTitle(
                self.tr("&Clients — {summary}").format(summary=summary) if snap.clients else self.tr("&Clients")
            )
            for client in snap.clients:
                items = self.client_items.get(client.path)
                if items is None:
                    continue
                items.menu.setTitle(escape_mnemonic(client.title))
                items.state.setText(escape_mnemonic(self._client_state(client)))
                items.state.setToolTip(
                    self.tr("make a profile first: Profile ▸ Make a profile from a client…")
                    if client.no_profile
                    else ""
                )
                items.outside.setVisible(client.changed_outside)
                for mode, action in items.modes.items():
                    action.setChecked(client.exists and client.problem is None and client.mode == mode)
                    action.setEnabled(self.busy is None and ready)
                    action.setVisible(not client.pinned)
                items.follow.setText(
                    self.tr("&Follow all ({mode})").format(mode=snap.mode) if ready else self.tr("&Follow all")
                )
                items.follow.setVisible(client.own_mode and not client.pinned)
                items.follow.setEnabled(self.busy is None and ready)
                items.via.setVisible(client.pinned)
        self._update_gateway_items(ready)
        self.actions.show_watch(self.watch_wanted)
        self._update_settings_items()
        for sub in (self.menu, *self._submenus):
            assign_mnemonics(sub)

    def _update_settings_items(self) -> None:
        """Language ▸'s check mark and note, and Launch at login's (hidden where the autostart
        module is not installed)."""
        snap = self.snapshot
        wanted = self.language_wanted if self._language_chosen else snap.language
        from kvswitch_gui.translations import installed_language

        running = installed_language()
        pending = self._language_chosen and (wanted or snap.system_language) != running
        self.actions.show_language(wanted, pending=pending, running=running, system=snap.system_language)
        self.actions.show_autostart(snap.autostart, busy=self._autostart_busy)

    def _update_gateway_items(self, ready: bool) -> None:
        items = self.gateway_items
        if items is None:
            return
        gw = self.snapshot.gateway
        running = gw is not None and gw.running
        pinned = gw.pinned if gw is not None else ()
        doing = self.gateway_doing
        if doing is not None:
            starting = doing == "starting"
            items.menu.setTitle(self.tr("&Gateway — starting…") if starting else self.tr("&Gateway — stopping…"))
            items.state.setText(self.tr("Gateway: starting…") if starting else self.tr("Gateway: stopping…"))
        elif running:
            assert gw is not None
            items.menu.setTitle(self.tr("&Gateway — on, {mode}").format(mode=gw.mode))
            items.state.setText(escape_mnemonic(gw.state))
        else:
            n = len(pinned)
            items.menu.setTitle(
                self.tr("&Gateway — off")
                if not n
                else self.tr("&Gateway — off (1 pinned client needs it)")
                if n == 1
                else self.tr("&Gateway — off ({count} pinned clients need it)").format(count=n)
            )
            items.state.setText(escape_mnemonic(gw.state) if gw is not None else self.tr("Gateway: off"))
        who = (
            self.tr("pinned: {clients}").format(clients=", ".join(pinned))
            if pinned
            else self.tr("no client pinned (kvswitch gateway pin)")
        )
        if running:
            assert gw is not None
            serving = (
                self.tr("profile {name}").format(name=gw.profile) if gw.profile else self.tr("upstreams given outright")
            )
            line = f"{serving} · {who}"
            if gw.in_flight:
                line += " · " + self.tr("{count} in flight").format(count=gw.in_flight)
            items.detail.setText(escape_mnemonic(line))
        else:
            items.detail.setText(escape_mnemonic(who))
        self._update_live_items(items, gw if running and doing is None else None)
        items.state.setToolTip((gw.url or "") if gw is not None else "")
        self.actions.show_gateway(running, can_start=self.busy is None and ready, can_stop=self.busy is None)

    def _update_live_items(self, items: GatewayItems, gw: jobs.GatewayView | None) -> None:
        """The route and per-mode lines: shown while a gateway runs (``gw``), hidden otherwise."""
        items.route.setVisible(gw is not None)
        lines: tuple[str, ...] = ()
        if gw is not None:
            items.route.setText(escape_mnemonic(gw.route_line))
            items.route.setToolTip(
                self.tr(
                    "requests that ask for no mode (no /merged, /split or /auto path, no X-Cache-Mode header) "
                    "go where auto decides: by their new prompt tokens and the load"
                )
                if gw.route is not None
                else self.tr(
                    "requests that ask for no mode (no /merged, /split or /auto path, no X-Cache-Mode "
                    "header) go to the gateway's mode"
                )
            )
            lines = gw.live_lines
        for n, action in enumerate(items.live):
            text = lines[n] if n < len(lines) else ""
            action.setVisible(bool(text))
            action.setText(escape_mnemonic(text if len(text) <= 100 else text[:99] + "…"))
            if gw is not None and gw.live is not None:
                how = gw.live[("merged", "split")[n]].detail
                tip = self.tr("the gateway's TTFT (request in → first token out) over its latest answers")
                action.setToolTip(f"{tip}; {how}" if how else tip)
            else:
                action.setToolTip(text)  # why there are no figures, in full

    def _on_tray_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:  # left click opens the menu too
            self.menu.popup(QCursor.pos())

    # -- the fallback window ---------------------------------------------------------------
    def _wire_window(self) -> None:
        w = self.window
        w.use_actions(self.actions)  # Mode, Profile, Detect, Gateway, Probe… Quit: the menu's own actions
        w.clients.currentItemChanged.connect(lambda *_: self._update_client_buttons())
        w.open_file_button.clicked.connect(lambda: self._with_selected(self.open_file))
        w.open_folder_button.clicked.connect(lambda: self._with_selected(self.open_folder))
        w.restore_menu.aboutToShow.connect(self._fill_window_restore_menu)
        w.client_mode_menu.aboutToShow.connect(self._fill_window_client_mode_menu)

    def selected_client(self) -> Path | None:
        if self.window is None:
            return None
        item = self.window.clients.currentItem()
        return Path(item.data(0, _PATH_ROLE)) if item is not None else None

    def _with_selected(self, fn: Callable[[Path], None]) -> None:
        path = self.selected_client()
        if path is not None:
            fn(path)

    def _update_client_buttons(self) -> None:
        w = self.window
        chosen = self.selected_client() is not None
        for b in (w.open_file_button, w.open_folder_button, w.restore_button):
            b.setEnabled(chosen)
        w.client_mode_button.setEnabled(chosen and self.busy is None and not self.snapshot.no_profile)

    def _fill_window_restore_menu(self) -> None:
        menu = self.window.restore_menu
        menu.clear()
        client = self._client_view(self.selected_client())
        if client is None or not client.backups:
            menu.addAction(self.tr("no backups yet")).setEnabled(False)
            return
        for b in client.backups:
            label = f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(b.created))} · {_size(b.size)}"
            menu.addAction(escape_mnemonic(label)).triggered.connect(
                lambda _=False, p=client.path, i=b.id: self.restore_backup(p, i)
            )
        assign_mnemonics(menu)

    def _fill_window_client_mode_menu(self) -> None:
        """The selected client's Merged / Split (this client alone) and Follow all."""
        menu = self.window.client_mode_menu
        menu.clear()
        client = self._client_view(self.selected_client())
        if client is None:
            menu.addAction(self.tr("choose a client")).setEnabled(False)
            return
        for mode in ("merged", "split"):
            action = menu.addAction(
                self.tr("&Merged (this client alone)") if mode == "merged" else self.tr("&Split (this client alone)")
            )
            action.setCheckable(True)
            action.setChecked(client.exists and client.problem is None and client.mode == mode)
            action.setEnabled(not client.no_profile)  # a switch needs a profile
            action.triggered.connect(lambda _=False, p=client.path, m=mode: self.switch_client(p, m))
        if client.own_mode:
            menu.addAction(self.tr("&Follow all ({mode})").format(mode=self.snapshot.mode)).triggered.connect(
                lambda _=False, p=client.path: self.follow_all(p)
            )

    def _update_window(self) -> None:
        w = self.window
        snap = self.snapshot
        w.header.setText(self._header_text() if snap.error is None else f"kvswitch — {snap.error}")
        w.setToolTip(self.tooltip())
        selected = self.selected_client()
        w.clients.clear()
        for client in snap.clients:
            state = self._client_state(client)
            if client.changed_outside:
                state = self.tr("{state} · changed outside").format(state=state)
            item = QTreeWidgetItem([client.label, state])
            item.setData(0, _PATH_ROLE, str(client.path))
            item.setToolTip(0, str(client.path))
            item.setToolTip(1, state)
            w.clients.addTopLevelItem(item)
            if client.path == selected:
                w.clients.setCurrentItem(item)
        self._update_client_buttons()
        if self.gateway_items is not None:  # the window says what the Gateway submenu says
            items = self.gateway_items
            lines = [items.state, items.detail, items.route, *items.live]
            w.gateway_label.setText("\n".join(plain_text(a.text()) for a in lines if a.isVisible()))

    # -- notices ---------------------------------------------------------------------------
    def notify(self, title: str, text: str, error: bool = False) -> None:
        """Tell the user: a tray balloon when there is a tray, else the window's status line.
        The last notices are kept in ``notices``."""
        notice = Notice(title, text, error, time.time())
        self.notices.append(notice)
        if self.use_tray:
            icon = QSystemTrayIcon.MessageIcon.Critical if error else QSystemTrayIcon.MessageIcon.Information
            self.tray.showMessage(title, text, icon, 15000 if error else 6000)
        if self.window is not None:
            self.window.show_notice(title, text, error)
        self.noticed.emit(notice)

    # -- switching -------------------------------------------------------------------------
    def switch_mode(self, mode: str) -> None:
        """Flip every client to ``mode`` through the library (all or nothing), in a worker."""
        self._switch("mode", mode, jobs.switch_mode)

    def switch_profile(self, name: str) -> None:
        """Make ``name`` active and render it into every client (all or nothing), in a worker."""
        self._switch("profile", name, jobs.use_profile)

    def switch_client(self, path: Path, mode: str) -> None:
        """Flip the client at ``path`` alone to ``mode`` (it keeps it as its own), in a worker."""
        self._switch("client", mode, jobs.switch_client, path)

    def follow_all(self, path: Path) -> None:
        """Put the client at ``path`` back in every client's mode, in a worker."""
        self._switch("follow", self.snapshot.mode or "", jobs.follow_all, path)

    def _switch(self, what: str, target: str, fn: Callable[..., Any], path: Path | None = None) -> None:
        who = self._client_label(path) if path is not None else ""
        doing = {
            "mode": self.tr("the switch to {mode}"),
            "profile": self.tr("the change to profile {name}"),
            "client": self.tr("the switch of {client} to {mode}"),
            "follow": self.tr("putting {client} back in step"),
        }[what].format(mode=target, name=target, client=who)
        if self.busy is not None:
            self.notify(
                self.tr("Please wait"),
                self.tr("{work} is still running; try again in a moment.").format(work=self.busy),
                error=True,
            )
            self._update_menu()
            return
        self.busy = doing
        self._update_menu()
        if self.window is not None:
            self._update_window()
        args: tuple[Any, ...] = () if what == "follow" else (target,)
        if path is not None:
            args += (path,)
        self._run(
            fn, *args, on_done=self._on_switched, on_error=lambda exc: self._on_switch_failed(what, target, exc, who)
        )

    def _on_switched(self, outcome: jobs.SwitchOutcome) -> None:
        self.busy = None
        self.last_failure = None
        changed = outcome.changed
        who = self._client_label(outcome.client)
        target = outcome.target
        if outcome.what == "mode":
            title = (self.tr("Switched to {mode}") if changed else self.tr("Already {mode}")).format(mode=target)
        elif outcome.what == "client":
            title = (self.tr("{client} switched to {mode}") if changed else self.tr("{client} already {mode}")).format(
                client=who, mode=target
            )
        elif outcome.what == "follow":
            title = self.tr("{client} follows all again ({mode})").format(client=who, mode=target)
        else:
            title = self.tr("Profile {name} applied").format(name=target)
        lines = []
        if changed:
            for c in changed:
                how = (
                    f"{c.old_mode or self.tr('no mode')} → {c.new_mode}"
                    if c.old_mode != c.new_mode
                    else self.tr("updated")
                )
                if c.key_written:
                    how = self.tr("{change} (key written, file made 0600)").format(change=how)
                lines.append(f"{self._client_label(c.path)}: {how}")
        elif outcome.what in ("client", "follow") and outcome.changes:
            lines.append(self.tr("its file is already {mode}; nothing written to it").format(mode=target))
        elif outcome.changes:
            lines.append(self.tr("every client already matches ({mode}); nothing written").format(mode=target))
        else:
            lines.append(self.tr("no clients are registered (Clients ▸ Detect clients…)"))
        if outcome.what == "client":
            lines.append(
                self.tr("the other clients stay as they are; a switch of all clients includes {client} again").format(
                    client=who
                )
            )
        lines += [n.message for n in outcome.restart]
        if outcome.gateway is not None:
            lines.append(
                self.tr("gateway: now {mode} for pinned clients and new requests").format(mode=outcome.gateway.mode)
                if outcome.what == "mode"
                else self.tr("gateway: now serving profile {name} for new requests").format(
                    name=outcome.gateway.profile
                )
            )
        elif outcome.gateway_problem:
            lines.append(
                self.tr(
                    "the running gateway did not take it: {problem}; its pinned clients stay as they "
                    "were until the switch is made again"
                ).format(problem=outcome.gateway_problem)
            )
        if outcome.recovered:
            lines.append(outcome.recovered)
        self.notify(title, "\n".join(lines), error=outcome.gateway_problem is not None)
        self.refresh()

    def _on_switch_failed(self, what: str, target: str, exc: BaseException, who: str = "") -> None:
        self.busy = None
        self.last_failure = str(exc)
        title = {
            "mode": self.tr("Switch to {mode} failed"),
            "profile": self.tr("Profile {name} not applied"),
            "client": self.tr("Switch of {client} to {mode} failed"),
            "follow": self.tr("{client} not put back in step"),
        }[what].format(mode=target, name=target, client=who)
        self.notify(title, f"{exc}\n{self.tr('Nothing was changed.')}", error=True)
        self._show_state()
        self.refresh()

    # -- the gateway ---------------------------------------------------------------------------
    def start_gateway(self) -> None:
        """Start kvswitch's gateway in the background (``kvswitch gateway --detach``), in a worker."""
        self._gateway("starting", jobs.start_gateway, self._on_gateway_started)

    def stop_gateway(self) -> None:
        """Stop the running gateway (``kvswitch gateway stop``), in a worker."""
        self._gateway("stopping", jobs.stop_gateway, self._on_gateway_stopped)

    def _gateway(self, doing: str, fn: Callable[[], Any], on_done: Callable[[Any], None]) -> None:
        if self.busy is not None:
            self.notify(
                self.tr("Please wait"),
                self.tr("{work} is still running; try again in a moment.").format(work=self.busy),
                error=True,
            )
            self._update_menu()
            return
        # a switch meanwhile could miss a gateway not answering yet
        self.busy = self.tr("starting the gateway") if doing == "starting" else self.tr("stopping the gateway")
        self.gateway_doing = doing
        self._update_menu()
        if self.window is not None:
            self._update_window()
        self._run(fn, on_done=on_done, on_error=lambda exc: self._on_gateway_failed(doing, exc))

    def _gateway_done(self) -> None:
        self.busy = None
        self.gateway_doing = None
        self._update_menu()
        if self.window is not None:
            self._update_window()
        self.refresh()

    def _on_gateway_started(self, view: jobs.GatewayView) -> None:
        self._gateway_done()
        pinned = self.snapshot.gateway.pinned if self.snapshot.gateway is not None else ()
        lines = [
            self.tr("{url} · mode {mode} · profile {name} (pid {pid})").format(
                url=view.url, mode=view.mode, name=view.profile, pid=view.pid
            ),
            self.tr("pinned clients: {clients}").format(clients=", ".join(pinned))
            if pinned
            else self.tr("no client is pinned to it yet (kvswitch gateway pin)"),
            self.tr("it keeps running when the tray quits; Gateway ▸ Stop gateway stops it"),
        ]
        self.notify(self.tr("Gateway started"), "\n".join(lines))

    def _on_gateway_stopped(self, was_running: bool) -> None:
        self._gateway_done()
        if was_running:
            pinned = self.snapshot.gateway.pinned if self.snapshot.gateway is not None else ()
            if not pinned:
                text = self.tr("No client is pinned to it.")
            elif len(pinned) == 1:
                text = self.tr("{client} reaches nothing until it is started again (Gateway ▸ Start gateway).")
            else:
                text = self.tr("{client} reach nothing until it is started again (Gateway ▸ Start gateway).")
            self.notify(self.tr("Gateway stopped"), text.format(client=", ".join(pinned)))
        else:
            self.notify(self.tr("The gateway was not running"), self.tr("nothing to stop."))

    def _on_gateway_failed(self, doing: str, exc: BaseException) -> None:
        self._gateway_done()
        title = self.tr("Gateway not started") if doing == "starting" else self.tr("Gateway not stopped")
        self.notify(title, str(exc), error=True)

    # -- per-client actions ----------------------------------------------------------------
    def open_file(self, path: Path) -> None:
        self._open(path, self.tr("Cannot open the file"))

    def open_folder(self, path: Path) -> None:
        self._open(path.parent, self.tr("Cannot open the folder"))

    def open_log(self) -> None:
        snap = self.snapshot
        if snap.log_path is None or not snap.log_exists:
            self.notify(
                self.tr("No log yet"),
                self.tr("The watcher writes its log ({path}) once it runs.").format(path=snap.log_path)
                if snap.log_path is not None
                else self.tr("The watcher writes its log once it runs."),
            )
            return
        self._open(snap.log_path, self.tr("Cannot open the log"))

    def _open(self, path: Path, failed: str) -> None:
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.notify(failed, self.tr("No application opened {path}.").format(path=path), error=True)

    def restore_backup(self, path: Path, backup_id: str) -> None:
        """Put a backup back. No confirmation: the version it replaces is backed up first,
        so a restore can itself be undone from the same menu."""
        self._run(
            jobs.restore_backup,
            path,
            backup_id,
            on_done=self._on_restored,
            on_error=lambda exc: self._on_restore_failed(path, exc),
        )

    def _on_restored(self, outcome: jobs.RestoreOutcome) -> None:
        if outcome.backup_of_current:
            text = self.tr("backup {id} is back in place; the version it replaced is backup {kept}.").format(
                id=outcome.backup_id, kept=outcome.backup_of_current.stem
            )
        else:
            text = self.tr("backup {id} is back in place.").format(id=outcome.backup_id)
        self.notify(self.tr("Restored {file}").format(file=outcome.path.name), text)
        self.refresh()

    def _on_restore_failed(self, path: Path, exc: BaseException) -> None:
        self.notify(self.tr("Cannot restore {file}").format(file=path.name), str(exc), error=True)
        self.refresh()

    # -- the watcher -----------------------------------------------------------------------
    @property
    def watching(self) -> bool:
        return self._watcher is not None

    def set_watch(self, on: bool) -> None:
        """Start or stop the watcher (in a worker); the toggle shows the wish at once."""
        self.watch_wanted = bool(on)
        if self._closing:
            return
        if not self._watch_busy:
            if self.watch_wanted and self._watcher is None:
                self._watch_busy = True
                self._run(
                    jobs.start_watcher,
                    self._bridge.on_event,
                    self._closing_flag,
                    on_done=self._on_watch_started,
                    on_error=self._on_watch_failed,
                    always=True,
                )
            elif not self.watch_wanted and self._watcher is not None:
                watcher, self._watcher = self._watcher, None
                self._watch_busy = True
                self._run(
                    jobs.stop_watcher,
                    watcher,
                    on_done=self._on_watch_stopped,
                    on_error=self._on_watch_stopped,
                    always=True,
                )
        self._show_watch()

    def _show_watch(self) -> None:
        self.actions.show_watch(self.watch_wanted)
        self.tray.setToolTip(self.tooltip())

    def _on_watch_started(self, watcher: Watcher | None) -> None:
        self._watch_busy = False
        if watcher is None:  # stopped again at once: the app is closing
            return
        self._watcher = watcher
        if self._closing:
            self._watcher = None
            watcher.stop()
            return
        if not self.watch_wanted:
            self.set_watch(False)
            return
        self._show_watch()
        self.refresh()

    def _on_watch_failed(self, exc: BaseException) -> None:
        self._watch_busy = False
        self.watch_wanted = False
        if self._closing:
            return
        self._show_watch()
        from kvswitch.watch import WatcherBusyError

        if isinstance(exc, WatcherBusyError):
            self.notify(
                self.tr("Not watching files"),
                self.tr("{problem}. Stop that one (kvswitch watch) to watch from the tray.").format(
                    problem=exc.message
                ),
                error=True,
            )
        else:
            self.notify(self.tr("Cannot watch files"), str(exc), error=True)

    def _on_watch_stopped(self, _: Any = None) -> None:
        self._watch_busy = False
        if self._closing:
            return
        if self.watch_wanted:
            self.set_watch(True)
        self._show_watch()

    def _on_watch_event(self, event: WatchEvent) -> None:
        self.watch_events.append(event)
        self._pending_events.append(event)
        self._event_timer.start()

    def _flush_events(self) -> None:
        events, self._pending_events = self._pending_events, []
        lines: list[str] = []
        kinds: list[str] = []
        for e in events:
            if e.kind in ("started", "stopped"):
                continue
            if e.kind == "nudged":
                if not any(n.restart_needed or not n.ok for n in e.nudges):
                    continue
                line = e.message
            else:
                line = f"{e.path.name}: {e.message}" if e.path is not None else e.message
            kinds.append(e.kind)
            if line not in lines:
                lines.append(line)
        if kinds:
            order = list(_EVENT_TITLES)
            first = min(kinds, key=lambda k: order.index(k) if k in order else len(order))
            error = any(k in ("invalid", "error") for k in kinds)
            title = _EVENT_TITLES.get(first)
            self.notify(self.tr(title) if title else self.tr("Watcher"), "\n".join(lines), error)
        self.refresh()

    # -- windows ---------------------------------------------------------------------------
    def open_probe(self) -> None:
        """The probe window (written separately; imported when first asked for)."""
        if self._probe is None:
            try:
                from kvswitch_gui.probe_window import ProbeWindow
            except ImportError as exc:
                self.notify(
                    self.tr("The probe is not available"),
                    self.tr(
                        "kvswitch_gui.probe_window cannot be loaded ({problem}); run kvswitch probe in "
                        "a terminal instead."
                    ).format(problem=exc),
                    error=True,
                )
                return
            self._probe = ProbeWindow(parent=None)
            self._probe.report_ready.connect(self._on_probe_report)
        self._raise(self._probe)

    def _on_probe_report(self, report: dict[str, Any]) -> None:
        summary = jobs.probe_summary(report)
        if summary is not None:
            self.last_probe = summary
        self.notify(self.tr("Probe finished"), summary or self.tr("the report has no timings"))
        self._show_state()
        self.refresh()

    def open_detect(self) -> None:
        """The clients installed here; register the chosen ones."""
        self._show_detect(None)

    def _show_detect(self, found: jobs.Detected | None) -> None:
        """The Detect window raised: one at a time (an open one is raised as it is); a new one
        shows ``found`` (the list already read), else reads it."""
        from kvswitch_gui.detect_dialog import DetectDialog

        if self._detect is None or not self._detect.isVisible():
            dialog = DetectDialog(found)
            dialog.registered.connect(self._on_clients_registered)
            dialog.profile_made.connect(self._on_profile_made)
            self._detect = dialog
        self._raise(self._detect)

    def _on_first_run_offer(self, found: jobs.Detected | None) -> None:
        if found is None or self._closing:
            return
        n = len(found.candidates)
        self._show_detect(found)  # not a new one when one was opened from the menu meanwhile
        self.notify(
            self.tr("Clients found"),
            self.tr(
                "1 client installed here is not kept in step yet: choose which in the window "
                "(later: Clients ▸ Detect clients…)."
            )
            if n == 1
            else self.tr(
                "{count} clients installed here are not kept in step yet: choose which in the window "
                "(later: Clients ▸ Detect clients…)."
            ).format(count=n),
        )

    def _on_clients_registered(self, names: list[str]) -> None:
        self.notify(
            self.tr("Clients registered"),
            self.tr(
                "{clients}: kvswitch keeps them in step from now on (their files are written at the "
                "next switch). To make a profile from one's settings, select it in the Detect window, "
                "then Make a profile."
            ).format(clients=", ".join(names)),
        )
        self.refresh()

    def _on_profile_made(self, made: jobs.ProfileMade) -> None:
        """A profile made from a client's settings (Detect): say what it holds, never the key."""
        lines = [self.tr("{model} at {url}").format(model=made.model, url=made.base_url)]
        if made.activated:
            lines.append(self.tr("{name} is the active profile now.").format(name=made.name))
        if made.key_stored:
            lines.append(self.tr("The key in its file is stored in the OS keyring."))
        elif made.key_left:
            lines.append(
                self.tr("The key in its file was not stored: the profile sends none until you store one (API key…).")
            )
        lines += list(made.notes)
        lines.append(self.tr("Render it into your clients with Profile ▸ {name}.").format(name=made.name))
        self.notify(
            self.tr("Profile {name} made from {client}").format(name=made.name, client=made.product), "\n".join(lines)
        )
        self.refresh()

    def open_settings(self) -> None:
        """Edit the active profile (live diagnostics; save, then apply to the clients)."""
        from kvswitch_gui.settings_dialog import SettingsDialog

        if self._settings is None or not self._settings.isVisible():
            dialog = SettingsDialog(self.snapshot.profile if self.snapshot.error is None else None)
            dialog.saved.connect(self._on_profile_saved)
            self._settings = dialog
        self._raise(self._settings)

    def _on_profile_saved(self, name: str, apply: bool) -> None:
        if apply:
            self.notify(
                self.tr("Profile saved"),
                self.tr("{name} saved in kvswitch.toml; applying it to the clients…").format(name=name),
            )
            self.switch_profile(name)
        else:
            self.notify(
                self.tr("Profile saved"),
                self.tr(
                    "{name} saved in kvswitch.toml; the clients follow when "
                    "you apply it (Profile menu) or the watcher propagates "
                    "it."
                ).format(name=name),
            )
            self.refresh()

    def open_key(self) -> None:
        """Store the active profile's API key in the OS keyring."""
        from kvswitch_gui.key_dialog import KeyDialog

        if self._key is None or not self._key.isVisible():
            dialog = KeyDialog(self.snapshot.profile if self.snapshot.error is None else None)
            dialog.key_saved.connect(self._on_key_saved)
            self._key = dialog
        self._raise(self._key)

    def _on_key_saved(self, name: str, masked: str, apply: bool) -> None:
        self.notify(
            self.tr("API key stored"),
            (
                self.tr("the key of {name} ({masked}) is in the OS keyring; writing it into the clients…")
                if apply
                else self.tr("the key of {name} ({masked}) is in the OS keyring.")
            ).format(name=name, masked=masked),
        )
        if apply:
            self.switch_profile(name)

    # -- the tray's own settings -----------------------------------------------------------
    def set_language(self, lang: str | None) -> None:
        """Save the tray's language (None: the system's), in a worker; it applies at the next start."""
        self.language_wanted, self._language_chosen = lang, True
        self._update_settings_items()
        self._run(
            jobs.save_language,
            lang,
            on_done=lambda _: self._on_language_saved(lang),
            on_error=lambda exc: self._on_setting_failed(self.tr("Language not saved"), exc),
        )

    def _on_language_saved(self, lang: str | None) -> None:
        from kvswitch_gui.translations import installed_language

        shown = LANGUAGE_NAMES[lang] if lang is not None else self.tr("the system's language")
        if (lang or self.snapshot.system_language) == installed_language():
            text = self.tr("kvswitch-tray uses {language}.").format(language=shown)
        else:
            text = self.tr("kvswitch-tray uses {language} from its next start: quit it and start it again.").format(
                language=shown
            )
        self.notify(self.tr("Language saved"), text)
        self.refresh()

    def set_autostart(self, on: bool) -> None:
        """Start kvswitch-tray at login, or not (``kvswitch_gui.autostart``), in a worker."""
        self._autostart_busy = True
        self._update_settings_items()
        if self.window is not None:
            self._update_window()
        self._run(
            jobs.set_autostart,
            bool(on),
            on_done=lambda where: self._on_autostart_set(bool(on), where),
            on_error=lambda exc: self._on_setting_failed(self.tr("Launch at login not changed"), exc),
        )

    def _on_autostart_set(self, on: bool, where: Path | None) -> None:
        self._autostart_busy = False
        self.snapshot = replace(self.snapshot, autostart=on)
        self._update_settings_items()
        if self.window is not None:
            self._update_window()
        if on:
            self.notify(
                self.tr("Launch at login on"),
                self.tr("kvswitch-tray starts when you log in ({path}).").format(path=where),
            )
        else:
            self.notify(self.tr("Launch at login off"), self.tr("kvswitch-tray no longer starts when you log in."))
        self.refresh()

    def _on_setting_failed(self, title: str, exc: BaseException) -> None:
        self._autostart_busy = False
        self._language_chosen = False
        self.notify(title, str(exc), error=True)
        self.refresh()

    @staticmethod
    def _raise(w: Any) -> None:
        w.show()
        w.raise_()
        w.activateWindow()


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} kB"
