"""kvswitch-tray's desktop entry as text: its name, the ``.desktop`` file that starts it (for the
menu and for the login item), and how a desktop session runs this install. Pure functions, no
Qt and no writing: :mod:`kvswitch_gui.desktop` installs the entry, :mod:`kvswitch_gui.autostart`
the login item."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["APP_ID", "DESKTOP_FILE", "ICON_NAME", "desktop_entry", "exec_line", "launcher_argv"]

APP_ID = "kvswitch-tray"
"""The command, the desktop file's name (``QGuiApplication.desktopFileName``) and the autostart entry's."""
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_NAME = "kvswitch"

# the entry's texts: English, and Simplified Chinese beside them (the file carries both)
_TEXTS: dict[str, tuple[str, str]] = {
    "Name": ("kvswitch", "kvswitch"),
    "GenericName": ("KV cache mode switcher", "KV 缓存模式切换器"),
    "Comment": (
        "Switch LLM coding clients between merged and split KV cache modes from the system tray",
        "在系统托盘中将 LLM 编程客户端在合并模式（merged）与分离模式（split）之间切换",
    ),
    "Keywords": (
        "LLM;KV cache;prefill;decode;disaggregation;Claude Code;Codex;Cline;tray;",
        "LLM;KV 缓存;预填充;解码;分离;合并;切换;托盘;",
    ),
}
# characters that make an Exec argument need quotes (the Desktop Entry spec's reserved set)
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def exec_line(argv: Sequence[str]) -> str:
    """``argv`` as a desktop entry's ``Exec`` value: each argument quoted where the spec asks,
    ``%`` doubled, and the backslashes of the string escape on top."""
    parts: list[str] = []
    for arg in argv:
        if not arg or "\n" in arg or "\r" in arg:
            raise ValueError(f"cannot put {arg!r} on an Exec line")
        text = arg.replace("%", "%%")
        if any(c in _RESERVED for c in text):
            text = '"' + "".join("\\" + c if c in '"`$\\' else c for c in text) + '"'
        parts.append(text)
    return " ".join(parts).replace("\\", "\\\\")


def desktop_entry(argv: Sequence[str] = (APP_ID,), *, autostart: bool = False) -> str:
    """The ``.desktop`` file that starts ``argv`` (``autostart``: the login item's, which the
    desktop starts at login until it is removed)."""
    lines = ["[Desktop Entry]", "Type=Application", "Version=1.4"]
    for key, (en, zh) in _TEXTS.items():
        lines += [f"{key}={en}", f"{key}[zh_CN]={zh}"]
    lines += [
        f"Exec={exec_line(argv)}",
        f"Icon={ICON_NAME}",
        "Terminal=false",
        "StartupNotify=false",
        "Categories=Development;Utility;",
        "X-GNOME-UsesNotifications=true",
    ]
    if autostart:
        # KDE: after the panel, so the tray is there to dock into (the app waits for one anyway)
        lines += ["X-GNOME-Autostart-enabled=true", "X-KDE-autostart-after=panel"]
    return "\n".join(lines) + "\n"


def launcher_argv() -> list[str]:
    """How a desktop session runs this install's ``kvswitch-tray``: by name when the command on
    ``PATH`` is this one outside a virtual environment, else by its absolute path (a session's
    ``PATH`` does not have a virtual environment's ``bin``), else ``python -m kvswitch_gui``."""
    scripts = Path(sys.executable).parent
    beside = next((p for p in (scripts / APP_ID, scripts / f"{APP_ID}.exe") if p.is_file()), None)
    found = shutil.which(APP_ID)
    in_venv = sys.prefix != sys.base_prefix
    if found and (beside is None or (not in_venv and Path(found).resolve() == beside.resolve())):
        return [APP_ID]
    if beside is not None:
        return [str(beside.absolute())]
    return [sys.executable, "-m", "kvswitch_gui"]
