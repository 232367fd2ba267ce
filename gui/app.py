"""``kvswitch-tray`` / ``python -m kvswitch_gui``: the tray app's entry point.

One instance per kvswitch home: a ``QLockFile`` in kvswitch's state directory, and a
``QLocalServer`` through which a second start asks the first to come to the front before it
says so and exits 1. With a system tray the app lives in it (closing a window does not quit);
without one (offscreen Qt, a desktop with no tray) a small window holds the same actions. The
icon shows first, grey, as soon as the lock is held: the language, the options and the
controller (its menu, the library, the state) load after it.

A session can start the app before its panel: then the app waits for a tray (``--tray-wait``,
30 s by default) showing nothing, docks its icon as soon as one appears, and opens the window
only when the wait runs out — and moves to the tray even then if one turns up later
(:class:`Docking`). ``--install`` / ``--uninstall`` put the menu entry and icons in place for
the user (:mod:`kvswitch_gui.desktop`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QCoreApplication, QLockFile, QObject, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from kvswitch import paths
from kvswitch_gui.collector import collecting_on_gui_thread
from kvswitch_gui.desktop import APP_ID, HICOLOR, ICON_NAME

if TYPE_CHECKING:
    from PySide6.QtNetwork import QLocalServer

    from kvswitch_gui.tray import TrayController

__all__ = ["TRAY_WAIT_S", "Docking", "SingleInstance", "app_icon", "main"]

RAISE = b"raise\n"
TRAY_WAIT_S = 30.0
"""How long a start with no system tray waits for one before it opens the window."""
POLL_MS = 250  # while waiting: a tray that appears docks the icon within this
LATE_POLL_MS = 2000  # in the window: a tray that appears later takes the app over
NO_TRAY_PLATFORMS = frozenset({"offscreen", "minimal"})  # Qt platforms that never have a tray


class SingleInstance(QObject):
    """The lock that makes this the only ``kvswitch-tray`` of a kvswitch home, and the local
    socket a later start uses to bring this one to the front (``raise_requested``)."""

    raise_requested = Signal()

    def __init__(self, state_dir: Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        state = state_dir or paths.dirs().state
        self.lock_path = state / "tray.lock"
        self._state = state
        self._lock = QLockFile(str(self.lock_path))
        self._lock.setStaleLockTime(0)  # never by age; a lock whose process is gone is stale
        self._server: QLocalServer | None = None

    @property
    def server_name(self) -> str:
        """The local socket's name: this user's, this kvswitch home's (read once the icon shows)."""
        import hashlib

        digest = hashlib.sha256(str(self._state.absolute()).encode()).hexdigest()[:12]
        return f"kvswitch-tray-{os.getuid()}-{digest}"

    def acquire(self, listen: bool = True) -> bool:
        """Take the lock and (unless ``listen`` is False: :meth:`listen` later) listen; False
        when another instance holds it."""
        self.lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self._lock.tryLock(100):
            return False
        if listen:
            self.listen()
        return True

    def listen(self) -> None:
        """Answer later starts (:attr:`raise_requested`); the lock is held (:meth:`acquire`)."""
        from PySide6.QtNetwork import QLocalServer  # loaded once the icon shows: it costs a start

        QLocalServer.removeServer(self.server_name)  # a socket left by a crashed instance
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        server.newConnection.connect(self._on_connection)
        server.listen(self.server_name)
        self._server = server

    def holder(self) -> str:
        """Who holds the lock, for the message of a second start."""
        info = self._lock.getLockInfo()  # (pid, host, app); PySide drops the C++ bool
        pid = info[-3] if len(info) >= 3 else 0
        if isinstance(pid, int) and pid > 0:
            return QCoreApplication.translate("app", "pid {pid}").format(pid=pid)
        return QCoreApplication.translate("app", "another process")

    def ask_first_to_raise(self, timeout_ms: int = 1000) -> bool:
        """Ask the running instance to come to the front; False when it does not answer."""
        from PySide6.QtNetwork import QLocalSocket

        sock = QLocalSocket()
        sock.connectToServer(self.server_name)
        if not sock.waitForConnected(timeout_ms):
            return False
        sock.write(RAISE)  # the connection itself is the request; the first instance hangs up
        sock.waitForBytesWritten(timeout_ms)
        sock.abort()
        return True

    def _on_connection(self) -> None:
        """Any connection is a later start asking this one to come to the front."""
        assert self._server is not None
        while self._server.hasPendingConnections():
            sock = self._server.nextPendingConnection()
            sock.abort()
            sock.deleteLater()
            self.raise_requested.emit()

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._lock.unlock()


class Face(Protocol):
    """What :class:`Docking` shows: a :class:`TrayController` in tray or window mode."""

    quit_requested: Any  # a Qt signal

    def start(self) -> None: ...
    def shutdown(self) -> None: ...
    def present(self) -> None: ...
    def notify(self, title: str, text: str, error: bool = False) -> None: ...
    def deleteLater(self) -> None: ...


class Docking(QObject):
    """Where the app shows itself: the tray when there is one; none yet, wait for one (polled,
    up to ``wait_s``) showing nothing; then the window, which gives way to the tray if one
    appears later. ``make(use_tray, first)`` builds the face (``first``: the app's first).
    ``mode`` is ``"waiting"``, ``"tray"`` or ``"window"``; ``changed`` tells each new one."""

    changed = Signal(str)
    quit_requested = Signal()

    def __init__(
        self,
        app: QGuiApplication,
        make: Callable[[bool, bool], Face],
        *,
        wait_s: float = TRAY_WAIT_S,
        window: bool = False,
        can_dock: bool = True,
        available: Callable[[], bool] = QSystemTrayIcon.isSystemTrayAvailable,
        poll_ms: int = POLL_MS,
        late_poll_ms: int = LATE_POLL_MS,
        clock: Callable[[], float] = time.monotonic,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.app = app
        self.face: Face | None = None
        self.mode = ""
        self._make = make
        self._wait_s = wait_s
        self._window_only = window or not can_dock
        self._available = available
        self._poll_ms = poll_ms
        self._late_poll_ms = late_poll_ms
        self._clock = clock
        self._deadline = 0.0
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._poll)

    def start(self) -> None:
        if self._window_only:
            self._show(tray=False)
        elif self._available():
            self._show(tray=True)
        elif self._wait_s > 0:
            self._deadline = self._clock() + self._wait_s
            self._set_mode("waiting")
            _say(
                QCoreApplication.translate(
                    "app", "no system tray yet; waiting up to {seconds} s for one (--tray-wait)"
                ).format(seconds=f"{self._wait_s:g}")
            )
            self._timer.start(self._poll_ms)
        else:
            self._show(tray=False)

    def present(self) -> None:
        """Bring the app to the front; while waiting for a tray, that means the window now."""
        if self.mode == "waiting":
            self._show(tray=False)
        elif self.face is not None:
            self.face.present()

    def shutdown(self) -> None:
        self._timer.stop()
        face, self.face = self.face, None
        if face is not None:
            face.shutdown()
            face.deleteLater()

    def _poll(self) -> None:
        if self._available():
            self._show(tray=True)
        elif self.mode == "waiting" and self._clock() >= self._deadline:
            self._show(tray=False)

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self.changed.emit(mode)

    def _show(self, *, tray: bool) -> None:
        self._timer.stop()
        translate = QCoreApplication.translate
        if self.mode == "waiting":
            _say(
                translate("app", "a system tray appeared; the icon is in it")
                if tray
                else translate(
                    "app",
                    "no system tray appeared; opening the window (kvswitch moves to the tray if one appears later)",
                )
            )
        elif self.mode == "window" and tray:
            _say(translate("app", "a system tray appeared; moving from the window to the tray"))
        old, self.face = self.face, None
        # closing the window must not quit the app on the way to the tray
        self.app.setQuitOnLastWindowClosed(False)
        if old is not None:
            old.shutdown()
            old.deleteLater()
        face = self._make(tray, old is None)
        self.face = face
        face.quit_requested.connect(self.quit_requested)
        face.start()
        self.app.setQuitOnLastWindowClosed(not tray)
        self._set_mode("tray" if tray else "window")
        if not tray:
            face.notify(
                translate("app", "No system tray"),
                translate(
                    "app",
                    "This desktop shows no system tray, so kvswitch runs in this window; "
                    "closing it quits. If a system tray appears later, kvswitch moves there.",
                ),
            )
            if not self._window_only:
                self._timer.start(self._late_poll_ms)
        elif old is not None:
            face.notify(
                translate("app", "kvswitch moved to the system tray"),
                translate("app", "A system tray appeared, so kvswitch closed its window; its icon is in the tray now."),
            )


def _say(text: str) -> None:
    """A line for the terminal or the session's log: what the app does about the tray."""
    with contextlib.suppress(OSError, ValueError):  # no stderr (a desktop launch may close it)
        sys.stderr.write(f"{APP_ID}: {text}\n")
        sys.stderr.flush()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            QCoreApplication.translate("app", "expected a number of seconds (0 or more), got {value}").format(
                value=repr(text)
            )
        )
    return value


def _parser() -> argparse.ArgumentParser:
    from kvswitch_gui.actions import NO_WATCH_ENV  # read once the icon shows, as the rest

    translate = QCoreApplication.translate
    p = argparse.ArgumentParser(
        prog=APP_ID,
        allow_abbrev=False,
        description=translate(
            "app", "kvswitch in the system tray: switch modes and profiles, watch the clients, run the probe."
        ),
    )
    p.add_argument(
        "--no-watch",
        action="store_true",
        help=translate(
            "app", "do not start the file watcher (also: {variable}=1); it can be turned on from the menu"
        ).format(variable=NO_WATCH_ENV),
    )
    p.add_argument(
        "--window", action="store_true", help=translate("app", "use the window even when a system tray is available")
    )
    p.add_argument(
        "--tray-wait",
        type=_seconds,
        default=TRAY_WAIT_S,
        metavar="SECONDS",
        help=translate(
            "app",
            "with no system tray yet (a session that starts before its panel), wait "
            "this long for one before opening the window (default: {default}); "
            "0: do not wait",
        ).format(default=f"{TRAY_WAIT_S:g}"),
    )
    once = p.add_mutually_exclusive_group()
    once.add_argument(
        "--install",
        action="store_true",
        help=translate(
            "app", "add kvswitch-tray to your applications menu (its desktop entry and icons, for this user) and exit"
        ),
    )
    once.add_argument(
        "--uninstall",
        action="store_true",
        help=translate("app", "remove what --install added, and the launch-at-login item, and exit"),
    )
    return p


def app_icon() -> QIcon:
    """kvswitch's own icon: the desktop theme's ``kvswitch`` (an installed one), else the shipped files."""
    shipped = QIcon()
    for path in sorted(HICOLOR.glob("*/apps/kvswitch.*")):
        shipped.addFile(str(path))
    return QIcon.fromTheme(ICON_NAME, shipped)


def _set_up(app: QCoreApplication) -> None:
    """Names, the desktop file and the user's language (:func:`_name`, :func:`_language`)."""
    _name(app)
    _language(app)


def _name(app: QCoreApplication) -> None:
    """The app's names and desktop file (the tray icon's window is named by them). The windows'
    icon comes once the tray icon shows (:func:`app_icon`)."""
    app.setApplicationName("kvswitch")
    if isinstance(app, QGuiApplication):
        app.setApplicationDisplayName("kvswitch")
        app.setDesktopFileName(APP_ID)


def _language(app: QCoreApplication) -> None:
    """The user's language: the tray's setting, else the library's choice
    (:func:`kvswitch_gui.translations.install_translator`)."""
    from kvswitch_gui.translations import install_translator

    install_translator(app)


def _docks_at_once(args: Sequence[str]) -> bool:
    """The app goes to the tray straight away (as :class:`Docking` decides it, ``--window``
    read ahead of the options): there is one, on a platform that docks."""
    return (
        "--window" not in args
        and QGuiApplication.platformName() not in NO_TRAY_PLATFORMS
        and QSystemTrayIcon.isSystemTrayAvailable()
    )


def _first_icon() -> QSystemTrayIcon:
    """The tray icon, shown at once in the grey "nothing read yet" shape; the controller (its
    menu, the library, the state) loads after it and takes it over."""
    from kvswitch_gui.icons import mode_icon

    icon = QSystemTrayIcon(mode_icon(None))
    icon.show()  # the dock request leaves at once: the tray host embeds it while the rest loads
    return icon


def _early(argv: Sequence[str]) -> bool:
    """Help, --install and --uninstall: answered without a display."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return any(a in ("-h", "--help", "--install", "--uninstall") for a in args)


@contextlib.contextmanager
def _ctrl_c_quits(app: QApplication) -> Iterator[None]:
    """Ctrl-C in the terminal quits (Qt's loop would otherwise keep Python's handler from running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal

    previous = signal.signal(signal.SIGINT, lambda *_: app.quit())
    timer = QTimer()
    timer.timeout.connect(lambda: None)  # wakes Python up so the handler runs
    timer.start(300)
    try:
        yield
    finally:
        timer.stop()
        signal.signal(signal.SIGINT, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tray app; 0 after Quit, 1 when another instance already runs. ``--install`` /
    ``--uninstall``: 0 when done, 1 on an error; ``--help``: exits 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if _early(argv):
        core = QCoreApplication.instance() or QCoreApplication([sys.argv[0]])
        _set_up(core)
        early = _parser().parse_args(argv)
        from kvswitch_gui.desktop import desktop_command

        return desktop_command(remove=early.uninstall)
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        app, rest = existing, argv
    else:
        app = QApplication([sys.argv[0], *argv])  # Qt takes its own options (-platform, -style…)
        rest = app.arguments()[1:]
    _name(app)
    instance = SingleInstance()
    if not instance.acquire(listen=False):  # listens once the icon shows
        _language(app)
        _parser().parse_args(rest)  # a bad option is said first
        raised = instance.ask_first_to_raise()
        text = (
            QCoreApplication.translate(
                "app", "kvswitch-tray is already running for this kvswitch home ({holder}); brought it to the front"
            )
            if raised
            else QCoreApplication.translate("app", "kvswitch-tray is already running for this kvswitch home ({holder})")
        )
        sys.stderr.write(text.format(holder=instance.holder()) + "\n")
        return 1
    # the grey icon is what a start is waited for: it shows before the language and the options
    # are read, and long before the controller (its menu, the library, the state) is loaded
    spare = [_first_icon()] if _docks_at_once(rest) else []
    try:
        _language(app)
        args = _parser().parse_args(rest)
    except BaseException:
        for icon in spare:
            icon.hide()
        instance.release()
        raise
    from kvswitch_gui.actions import NO_DETECT_ENV

    previous = app.quitOnLastWindowClosed()
    watch = False if args.no_watch else None
    first_run = os.environ.get(NO_DETECT_ENV) != "1"

    def make(use_tray: bool, first: bool) -> TrayController:
        icon = (spare.pop() if spare else _first_icon()) if use_tray else None
        from kvswitch_gui.tray import TrayController

        return TrayController(use_tray=use_tray, watch=watch, first_run=first_run and first, tray_icon=icon)

    docking: Docking | None = None
    with collecting_on_gui_thread():  # never on a worker thread: see kvswitch_gui.collector
        try:
            docking = Docking(
                app,
                make,
                wait_s=args.tray_wait,
                window=args.window,
                can_dock=QGuiApplication.platformName() not in NO_TRAY_PLATFORMS,
            )
            instance.raise_requested.connect(docking.present)
            docking.quit_requested.connect(app.quit)
            docking.start()  # the controller takes the grey icon over and fills it
            for icon in spare:  # not taken: no tray after all
                icon.hide()
                icon.deleteLater()
            spare.clear()
            instance.listen()
            app.setWindowIcon(app_icon())
            with _ctrl_c_quits(app):
                return app.exec()
        finally:
            # Quit closes the windows, and closing the last one posts another Quit event; handled after
            # exec() returned it would stop every later event loop of this process (a caller's, a
            # test's) at once, so drop it, and close the window below without quitting again
            app.setQuitOnLastWindowClosed(False)
            if docking is not None:
                docking.shutdown()
                docking.deleteLater()
            from PySide6.QtCore import QEvent  # its enum costs a start: loaded at the end

            QCoreApplication.removePostedEvents(app, QEvent.Type.Quit)
            instance.release()
            app.setQuitOnLastWindowClosed(previous)
