"""The StatusNotifierItem path (KDE Plasma; GNOME with the AppIndicator extension): with
``org.kde.StatusNotifierWatcher`` on the session bus Qt publishes the tray icon as an item over
D-Bus instead of docking it by XEmbed. Here: a private session bus, Xvfb, the real watcher
(``status-notifier-watcher``) and a real SNI host (``gtk-sni-tray-standalone``), then
``python -m kvswitch_gui``; the watcher lists its item, the item's properties read over D-Bus
are kvswitch's (title, status, an icon pixmap in the merged blue), and the host's window shows
the icon.

Debian: dbus-daemon, haskell-status-notifier-item-utils, haskell-gtk-sni-tray-utils, xvfb,
imagemagick, x11-utils. Skipped locally when one is missing, a failure under CI=true.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, require_tool
from tests.helpers.observe import wait_until
from tests.helpers.xdisplay import MODE_COLOURS, Window, XSession, stop_process

START_S = 60.0

WATCHER = "org.kde.StatusNotifierWatcher"
ITEM_INTERFACE = "org.kde.StatusNotifierItem"
HOST_NAME = "gtk-sni-tray-standalone"

# a session bus of the test's own: nothing is started on demand (no service activation), so no
# helper (an accessibility bus, say) outlives the test
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir={tmpdir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@contextlib.contextmanager
def _session_bus(workdir: Path) -> Iterator[str]:
    """A private ``dbus-daemon``; its address. Stopped by its pid at the end."""
    config = workdir / "bus.conf"
    config.write_text(BUS_CONFIG.format(tmpdir=tempfile.gettempdir()))
    proc = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        address = proc.stdout.readline().decode().strip() if ready else ""
        assert address, "dbus-daemon did not print its address"
        yield address
    finally:
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()


class Bus:
    """Blocking D-Bus calls on the test's bus (jeepney: keyring's own D-Bus library on Linux)."""

    def __init__(self, address: str) -> None:
        from jeepney.io.blocking import open_dbus_connection

        self.conn = open_dbus_connection(bus=address)

    def close(self) -> None:
        self.conn.close()

    def call(self, msg: Any) -> Any:
        reply = self.conn.send_and_get_reply(msg, timeout=10)
        if reply.header.message_type.name == "error":
            raise RuntimeError(f"D-Bus error: {reply.header.fields} {reply.body}")
        return reply.body

    def has_owner(self, name: str) -> bool:
        from jeepney import DBusAddress, new_method_call

        dbus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
        return bool(self.call(new_method_call(dbus, "NameHasOwner", "s", (name,)))[0])

    def prop(self, bus_name: str, path: str, interface: str, name: str) -> Any:
        from jeepney import DBusAddress, Properties

        ((_signature, value),) = self.call(Properties(DBusAddress(path, bus_name, interface)).get(name))
        return value

    def props(self, bus_name: str, path: str, interface: str) -> dict[str, Any]:
        from jeepney import DBusAddress, Properties

        (found,) = self.call(Properties(DBusAddress(path, bus_name, interface)).get_all())
        return {key: value for key, (_signature, value) in found.items()}


def _item_address(item: str) -> tuple[str, str]:
    """A registered item as (bus name, object path): ``service``, ``service/path`` or ``/path``."""
    if "/" not in item:
        return item, "/StatusNotifierItem"
    service, _, path = item.partition("/")
    return service, "/" + path


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def _colours(x: XSession, window: Window) -> set[tuple[int, int, int]]:
    _w, _h, raw = x.pixels(window)
    return set(zip(raw[::3], raw[1::3], raw[2::3], strict=True))


def _near(colour: tuple[int, int, int], target: tuple[int, int, int], tolerance: int = 40) -> bool:
    return sum(abs(a - b) for a, b in zip(colour, target, strict=True)) < tolerance


def test_the_tray_icon_is_a_status_notifier_item(kv_sandbox: dict[str, Path], tmp_path: Path) -> None:
    for tool in ("dbus-daemon", "status-notifier-watcher", HOST_NAME, "Xvfb", "import", "xwininfo"):
        require_tool(tool)
    pytest.importorskip("jeepney")
    procs: list[subprocess.Popen[bytes]] = []
    with _session_bus(tmp_path) as address, XSession(tmp_path / "x", tray=False) as x:
        bus = Bus(address)
        # GTK's accessibility bridge would ask the bus for a service nobody may start here
        env = x.env(
            os.environ,
            DBUS_SESSION_BUS_ADDRESS=address,
            NO_AT_BRIDGE="1",
            GTK_A11Y="none",
            GDK_BACKEND="x11",
            KVSWITCH_TRAY_NO_DETECT="1",
            PYTHONFAULTHANDLER="1",
        )
        try:
            procs.append(_start(["status-notifier-watcher"], env, tmp_path / "watcher.log"))
            assert wait_until(lambda: bus.has_owner(WATCHER), START_S), (tmp_path / "watcher.log").read_text()
            procs.append(_start([HOST_NAME], env, tmp_path / "host.log"))
            assert wait_until(
                lambda: bus.prop(WATCHER, "/StatusNotifierWatcher", WATCHER, "IsStatusNotifierHostRegistered"), START_S
            ), (tmp_path / "host.log").read_text(errors="replace")
            host = wait_until(
                lambda: next((w for w in x.tree() if w.name == HOST_NAME and not w.path and w.width > 100), None),
                START_S,
            )
            assert host is not None, f"the SNI host shows no panel: {x.tree()}"
            before = _colours(x, host)
            merged = MODE_COLOURS["merged"]
            assert not any(_near(c, merged) for c in before)  # an empty panel: no kvswitch blue yet

            app = _start([sys.executable, "-m", "kvswitch_gui", "--no-watch"], env, tmp_path / "app.log")
            procs.append(app)

            def app_log() -> str:
                return (tmp_path / "app.log").read_text(errors="replace")

            # (a) the watcher lists the app's item
            items = wait_until(
                lambda: (
                    app.poll() is None
                    and list(bus.prop(WATCHER, "/StatusNotifierWatcher", WATCHER, "RegisteredStatusNotifierItems"))
                ),
                START_S,
            )
            assert items and len(items) == 1, f"no item registered: {items}\n{app_log()}"
            service, path = _item_address(items[0])

            # (b) its properties, over D-Bus, are kvswitch's: the icon drawn in merged blue once the
            # state arrived (first the hollow "unknown" outline)
            def merged_pixmap() -> dict[str, Any] | None:
                props = bus.props(service, path, ITEM_INTERFACE)
                for width, height, data in props.get("IconPixmap", []):
                    argb = bytes(data)  # network byte order ARGB, per the spec
                    pixels = {(argb[i + 1], argb[i + 2], argb[i + 3]) for i in range(0, len(argb), 4) if argb[i] == 255}
                    if width >= 16 and len(argb) == width * height * 4 and any(_near(p, merged) for p in pixels):
                        return props
                return None

            props = wait_until(merged_pixmap, START_S, interval=0.2)
            assert props, f"no merged-blue icon pixmap: {bus.props(service, path, ITEM_INTERFACE)}\n{app_log()}"
            assert props["Title"] == "kvswitch"
            assert props["Status"] == "Active"
            assert props["Category"] == "ApplicationStatus"
            tooltip = props.get("ToolTip")
            assert tooltip and "merged" in str(tooltip), tooltip  # the tray's own tooltip: profile · mode

            # (c) the host's panel shows it: kvswitch's blue among its pixels now
            assert wait_until(lambda: any(_near(c, merged) for c in _colours(x, host)), START_S), (
                f"the SNI host's panel shows no kvswitch icon\n{app_log()}"
            )
            shot = x.screenshot(tmp_path / "sni-tray.png", crop=(host.x, host.y, host.width, host.height))
            assert shot.stat().st_size > 0
            assert app.poll() is None, app_log()
        finally:
            for proc in reversed(procs):  # the app first, with the Ctrl-C it quits cleanly on
                stop_process(proc, signal.SIGINT if proc.args[0] == sys.executable else signal.SIGTERM)
            bus.close()
    assert procs[-1].returncode == 0, (tmp_path / "app.log").read_text(errors="replace")
