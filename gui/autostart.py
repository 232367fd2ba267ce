"""Launch kvswitch-tray at login, for the current user, on each platform's own terms:

- Linux and other XDG desktops: ``$XDG_CONFIG_HOME/autostart/kvswitch-tray.desktop`` (the XDG
  Autostart spec), the menu entry plus ``X-GNOME-Autostart-enabled=true``;
- macOS: a LaunchAgent, ``~/Library/LaunchAgents/io.kvswitch.tray.plist`` with ``RunAtLoad``;
- Windows: ``kvswitch-tray.cmd`` in the Startup folder
  (``%APPDATA%\\Microsoft\\Windows\\Start Menu\\Programs\\Startup``), no ``.lnk`` needed.

The paths and contents are pure functions of the platform, the environment and the command
(:func:`login_item`); :func:`enable` writes through :func:`kvswitch.io.atomic_write`. The macOS
and Windows items are built to those systems' documented formats but untested on them.
"""

from __future__ import annotations

import os
import plistlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvswitch_gui.desktop_entry import APP_ID, desktop_entry, launcher_argv

__all__ = [
    "LAUNCH_AGENT_LABEL",
    "LoginItem",
    "disable",
    "enable",
    "is_enabled",
    "launch_agent",
    "launch_agent_path",
    "login_item",
    "remove",
    "startup_script",
    "startup_script_path",
    "xdg_autostart_entry",
    "xdg_autostart_path",
]

LAUNCH_AGENT_LABEL = "io.kvswitch.tray"


@dataclass(frozen=True)
class LoginItem:
    """Where the login item of a platform lives and the bytes it holds."""

    path: Path
    content: bytes


# -- Linux and other XDG desktops ---------------------------------------------------------------


def xdg_autostart_path(env: Mapping[str, str], home: Path) -> Path:
    """``$XDG_CONFIG_HOME/autostart/kvswitch-tray.desktop`` (``~/.config`` when the variable is
    unset or not absolute, as the spec says)."""
    value = env.get("XDG_CONFIG_HOME", "")
    config = Path(value) if value and Path(value).is_absolute() else home / ".config"
    return config / "autostart" / f"{APP_ID}.desktop"


def xdg_autostart_entry(argv: Sequence[str]) -> bytes:
    return desktop_entry(argv, autostart=True).encode()


def _xdg_enabled(content: bytes) -> bool:
    """An autostart entry the desktop honours: not ``Hidden=true`` nor ``X-GNOME-Autostart-enabled=false``."""
    keys = dict(line.split("=", 1) for line in content.decode(errors="replace").splitlines() if "=" in line)
    return keys.get("Hidden", "").strip() != "true" and keys.get("X-GNOME-Autostart-enabled", "").strip() != "false"


# -- macOS ------------------------------------------------------------------------------------


def launch_agent_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"


def launch_agent(argv: Sequence[str]) -> bytes:
    """The LaunchAgent: run ``argv`` once at login in the user's graphical session."""
    return plistlib.dumps(
        {
            "Label": LAUNCH_AGENT_LABEL,
            "ProgramArguments": list(argv),
            "RunAtLoad": True,
            "KeepAlive": False,
            "ProcessType": "Interactive",
            "LimitLoadToSessionType": "Aqua",
        }
    )


# -- Windows ----------------------------------------------------------------------------------


def startup_script_path(env: Mapping[str, str], home: Path) -> Path:
    """``%APPDATA%\\Microsoft\\Windows\\Start Menu\\Programs\\Startup\\kvswitch-tray.cmd``."""
    appdata = env.get("APPDATA") or str(home / "AppData" / "Roaming")
    return Path(appdata, "Microsoft", "Windows", "Start Menu", "Programs", "Startup", f"{APP_ID}.cmd")


def startup_script(argv: Sequence[str]) -> bytes:
    """A batch file that starts ``argv`` detached (``start ""``) and ends, with CRLF lines."""

    def quote(arg: str) -> str:
        if '"' in arg or "\n" in arg:
            raise ValueError(f"cannot put {arg!r} in a batch file")
        return '"' + arg.replace("%", "%%") + '"'

    lines = [
        "@echo off",
        "rem kvswitch-tray at login (remove this file, or untick it in the tray, to stop)",
        'start "" ' + " ".join(quote(a) for a in argv),
    ]
    return ("\r\n".join(lines) + "\r\n").encode()


# -- the current platform ---------------------------------------------------------------------


def login_item(
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    argv: Sequence[str] | None = None,
) -> LoginItem:
    """The login item for ``platform`` (``sys.platform``): its path and content."""
    platform = sys.platform if platform is None else platform
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    argv = launcher_argv() if argv is None else argv
    if platform == "darwin":
        return LoginItem(launch_agent_path(home), launch_agent(argv))
    if platform == "win32":
        return LoginItem(startup_script_path(env, home), startup_script(argv))
    return LoginItem(xdg_autostart_path(env, home), xdg_autostart_entry(argv))


def is_enabled() -> bool:
    """Whether kvswitch-tray starts at login (its item is there, and not switched off)."""
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_optional

    item = login_item(argv=())
    try:
        content = read_optional(item.path)
    except KvswitchError:  # not a regular file, unreadable: not one the desktop runs either
        return False
    if content is None:
        return False
    return _xdg_enabled(content) if item.path.suffix == ".desktop" else True


def enable() -> Path:
    """Start kvswitch-tray at login from now on; the item's path."""
    from kvswitch.io import atomic_write

    item = login_item()
    item.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(item.path, item.content, backup=False, mode=0o644)
    return item.path


def remove() -> Path | None:
    """Remove the login item; its path, or None when there was none."""
    from kvswitch.errors import Location, WriteError
    from kvswitch.i18n import tr

    path = login_item(argv=()).path
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteError(tr("cannot remove: {reason}").format(reason=exc.strerror or exc), Location(path)) from exc
    return path


def disable() -> None:
    """Stop starting kvswitch-tray at login (nothing to do when it does not)."""
    remove()
