"""The watcher's plain callbacks (any thread) turned into queued Qt signals."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

__all__ = ["WatchBridge"]


class WatchBridge(QObject):
    """Pass ``bridge.on_event`` to ``kvswitch.watch.Watcher``; connect to ``watch_event`` (not
    ``event``: that is QObject.event, the event handler)."""

    watch_event = Signal(object)  # a kvswitch.watch.WatchEvent, delivered on the GUI thread

    def on_event(self, event: Any) -> None:
        self.watch_event.emit(event)  # cross-thread emits are queued by Qt
