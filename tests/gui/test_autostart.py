"""Launch at login: the login item's path and content on each platform (pure functions), and
enabling, reading and disabling it for real here (Linux, XDG autostart) in the test's own
``XDG_CONFIG_HOME``."""

from __future__ import annotations

import os
import plistlib
import subprocess
from pathlib import Path

import pytest

from kvswitch_gui import autostart
from kvswitch_gui.desktop import desktop_entry
from tests.conftest import require_tool

HOME = Path("/home/ada")


def _keys(content: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in content.decode().splitlines() if "=" in line)


# -- Linux and other XDG desktops ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"XDG_CONFIG_HOME": "/cfg"}, "/cfg/autostart/kvswitch-tray.desktop"),
        ({}, "/home/ada/.config/autostart/kvswitch-tray.desktop"),
        ({"XDG_CONFIG_HOME": ""}, "/home/ada/.config/autostart/kvswitch-tray.desktop"),
        ({"XDG_CONFIG_HOME": "relative/cfg"}, "/home/ada/.config/autostart/kvswitch-tray.desktop"),  # the spec: ignored
    ],
)
def test_the_xdg_autostart_path(env: dict[str, str], expected: str) -> None:
    assert autostart.xdg_autostart_path(env, HOME) == Path(expected)


def test_the_xdg_autostart_entry_is_the_menu_entry_switched_on_at_login(tmp_path: Path) -> None:
    content = autostart.xdg_autostart_entry(["/opt/kv/bin/kvswitch-tray"])
    keys = _keys(content)
    assert keys["X-GNOME-Autostart-enabled"] == "true"
    assert keys["Exec"] == "/opt/kv/bin/kvswitch-tray" and keys["Type"] == "Application"
    assert keys["Icon"] == "kvswitch" and "Hidden" not in keys
    # the menu entry's lines, all of them, plus the login item's own
    assert set(desktop_entry(["/opt/kv/bin/kvswitch-tray"]).splitlines()) < set(content.decode().splitlines())
    path = tmp_path / "kvswitch-tray.desktop"
    path.write_bytes(content)
    done = subprocess.run(
        [require_tool("desktop-file-validate"), str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "error" not in done.stdout, done.stdout


# -- macOS --------------------------------------------------------------------------------------


def test_the_launch_agent() -> None:
    assert autostart.launch_agent_path(HOME) == HOME / "Library/LaunchAgents/io.kvswitch.tray.plist"
    plist = plistlib.loads(autostart.launch_agent(["/Applications/kv/bin/kvswitch-tray", "--tray-wait", "60"]))
    assert plist["Label"] == "io.kvswitch.tray"
    assert plist["ProgramArguments"] == ["/Applications/kv/bin/kvswitch-tray", "--tray-wait", "60"]
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] is False
    assert plist["LimitLoadToSessionType"] == "Aqua"  # the user's graphical session, not ssh


# -- Windows ------------------------------------------------------------------------------------


def test_the_startup_folder_script() -> None:
    path = autostart.startup_script_path({"APPDATA": "C:\\Users\\ada\\AppData\\Roaming"}, HOME)
    assert str(path).startswith("C:\\Users\\ada\\AppData\\Roaming")
    assert path.parts[-6:] == ("Microsoft", "Windows", "Start Menu", "Programs", "Startup", "kvswitch-tray.cmd")
    assert autostart.startup_script_path({}, HOME) == HOME / (
        "AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup/kvswitch-tray.cmd"
    )
    script = autostart.startup_script(["C:\\Program Files\\kv\\Scripts\\kvswitch-tray.exe", "--tray-wait", "100%"])
    assert script.endswith(b"\r\n") and b"\n" not in script.replace(b"\r\n", b"")  # CRLF lines only
    lines = script.decode().split("\r\n")
    assert lines[0] == "@echo off"
    assert lines[2] == 'start "" "C:\\Program Files\\kv\\Scripts\\kvswitch-tray.exe" "--tray-wait" "100%%"'
    with pytest.raises(ValueError):
        autostart.startup_script(['C:\\bad"name.exe'])


# -- the current platform -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "name"),
    [
        ("linux", "kvswitch-tray.desktop"),
        ("freebsd14", "kvswitch-tray.desktop"),
        ("darwin", "io.kvswitch.tray.plist"),
        ("win32", "kvswitch-tray.cmd"),
    ],
)
def test_each_platform_gets_its_own_login_item(platform: str, name: str) -> None:
    item = autostart.login_item(platform, {"XDG_CONFIG_HOME": "/cfg", "APPDATA": "/appdata"}, HOME, ["kvswitch-tray"])
    assert item.path.name == name
    assert b"kvswitch-tray" in item.content


def test_enable_is_enabled_disable_for_real(sandbox: Path) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "autostart" / "kvswitch-tray.desktop"
    assert not autostart.is_enabled()
    assert autostart.enable() == path
    assert autostart.is_enabled()
    keys = _keys(path.read_bytes())
    assert keys["X-GNOME-Autostart-enabled"] == "true" and keys["Exec"]
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert autostart.enable() == path  # again: the same file, no error
    assert sorted(p.name for p in path.parent.iterdir()) == ["kvswitch-tray.desktop"]  # no temp files left
    assert not (Path(os.environ["KVSWITCH_HOME"]) / "backups").exists()

    # switched off by the desktop's own settings (GNOME Tweaks, KDE): not enabled, though there
    path.write_bytes(path.read_bytes().replace(b"X-GNOME-Autostart-enabled=true", b"X-GNOME-Autostart-enabled=false"))
    assert not autostart.is_enabled()
    path.write_bytes(path.read_bytes() + b"Hidden=true\n")
    assert not autostart.is_enabled()
    autostart.enable()  # turned on again from the tray: kvswitch's own entry back
    assert autostart.is_enabled()

    autostart.disable()
    assert not path.exists() and not autostart.is_enabled()
    autostart.disable()  # nothing there: nothing to do
    assert autostart.remove() is None


def test_a_login_item_that_is_not_a_file_is_not_enabled(sandbox: Path) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "autostart" / "kvswitch-tray.desktop"
    path.mkdir(parents=True)
    assert not autostart.is_enabled()
