"""``kvswitch-tray`` / ``python -m kvswitch_gui``: the tray app's entry point.

One instance per kvswitch home: a ``QLockFile`` in kvswitch's state directory, and a
``QLocalServer`` through which a second start asks the first to come to the front before it
says so and exits 1. With a system tray the app lives in it (closing a window does not quit);
without one (offscreen Qt, a desktop with no tray) a small window holds the same actions.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QLockFile, QObject, QTimer, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from kvswitch import paths
from kvswitch_gui.collector import collecting_on_gui_thread
from kvswitch_gui.tray import NO_DETECT_ENV, NO_WATCH_ENV, TrayController

__all__ = ["SingleInstance", "main"]

RAISE = b"raise\n"


class SingleInstance(QObject):
    """The lock that makes this the only ``kvswitch-tray`` of a kvswitch home, and the local
    socket a later start uses to bring this one to the front (``raise_requested``)."""

    raise_requested = Signal()

    def __init__(self, state_dir: Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        state = state_dir or paths.dirs().state
        self.lock_path = state / "tray.lock"
        digest = hashlib.sha256(str(state.absolute()).encode()).hexdigest()[:12]
        self.server_name = f"kvswitch-tray-{os.getuid()}-{digest}"
        self._lock = QLockFile(str(self.lock_path))
        self._lock.setStaleLockTime(0)  # never by age; a lock whose process is gone is stale
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        """Take the lock and listen; False when another instance holds it."""
        self.lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self._lock.tryLock(100):
            return False
        QLocalServer.removeServer(self.server_name)  # a socket left by a crashed instance
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        server.newConnection.connect(self._on_connection)
        server.listen(self.server_name)
        self._server = server
        return True

    def holder(self) -> str:
        """Who holds the lock, for the message of a second start."""
        info = self._lock.getLockInfo()  # (pid, host, app); PySide drops the C++ bool
        pid = info[-3] if len(info) >= 3 else 0
        return f"pid {pid}" if isinstance(pid, int) and pid > 0 else "another process"

    def ask_first_to_raise(self, timeout_ms: int = 1000) -> bool:
        """Ask the running instance to come to the front; False when it does not answer."""
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


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(
        prog="kvswitch-tray",
        description="kvswitch in the system tray: switch modes and profiles, watch the clients, run the probe.",
    )
    p.add_argument("--no-watch", action="store_true",
                   help=f"do not start the file watcher (also: {NO_WATCH_ENV}=1); it can be turned on from the menu")
    p.add_argument("--window", action="store_true", help="use the window even when a system tray is available")
    return p.parse_known_args(list(argv))


@contextlib.contextmanager
def _ctrl_c_quits(app: QApplication) -> Iterator[None]:
    """Ctrl-C in the terminal quits (Qt's loop would otherwise keep Python's handler from running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
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
    """Run the tray app; 0 after Quit, 1 when another instance already runs."""
    args, qt_args = _parse(sys.argv[1:] if argv is None else argv)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication([sys.argv[0], *qt_args])
    app.setApplicationName("kvswitch")
    app.setApplicationDisplayName("kvswitch")
    instance = SingleInstance()
    if not instance.acquire():
        raised = instance.ask_first_to_raise()
        sys.stderr.write(
            f"kvswitch-tray is already running for this kvswitch home ({instance.holder()})"
            + ("; brought it to the front\n" if raised else "\n")
        )
        return 1
    previous = app.quitOnLastWindowClosed()
    controller: TrayController | None = None
    with collecting_on_gui_thread():  # never on a worker thread: see kvswitch_gui.collector
        try:
            use_tray = not args.window and QSystemTrayIcon.isSystemTrayAvailable()
            controller = TrayController(use_tray=use_tray, watch=False if args.no_watch else None,
                                        first_run=os.environ.get(NO_DETECT_ENV) != "1")
            app.setQuitOnLastWindowClosed(not use_tray)
            instance.raise_requested.connect(controller.present)
            controller.quit_requested.connect(app.quit)
            controller.start()
            if not use_tray:
                controller.notify("No system tray", "This desktop shows no system tray, so kvswitch runs in this "
                                  "window; closing it quits.")
            with _ctrl_c_quits(app):
                return app.exec()
        finally:
            # Quit closes the windows, and closing the last one posts another Quit event; handled after
            # exec() returned it would stop every later event loop of this process (a caller's, a
            # test's) at once, so drop it, and close the window below without quitting again
            app.setQuitOnLastWindowClosed(False)
            if controller is not None:
                controller.shutdown()
                controller.deleteLater()
            QCoreApplication.removePostedEvents(app, QEvent.Type.Quit)
            instance.release()
            app.setQuitOnLastWindowClosed(previous)
