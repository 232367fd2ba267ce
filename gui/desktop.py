"""kvswitch-tray on the Linux desktop: its menu entry (``kvswitch-tray.desktop``) and its icons
in the hicolor theme, installed for the current user and removed again (no Qt needed).

``install()`` writes the entry to ``$XDG_DATA_HOME/applications/`` and the icons shipped in
``resources/icons/hicolor/`` to ``$XDG_DATA_HOME/icons/hicolor/``, through kvswitch's one writer
(:func:`kvswitch.io.atomic_write`, no backups: the files are kvswitch's own), then refreshes the
desktop's caches where that folder already keeps one. ``uninstall()`` removes exactly those
files (and the login item, :mod:`kvswitch_gui.autostart`). Both are idempotent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "APP_ID",
    "DESKTOP_FILE",
    "HICOLOR",
    "ICON_NAME",
    "Change",
    "Report",
    "data_home",
    "desktop_entry",
    "exec_line",
    "icon_files",
    "install",
    "launcher_argv",
    "uninstall",
]

APP_ID = "kvswitch-tray"
"""The command, the desktop file's name (``QGuiApplication.desktopFileName``) and the autostart entry's."""
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_NAME = "kvswitch"
HICOLOR = Path(__file__).resolve().parent / "resources" / "icons" / "hicolor"
"""The icons this package ships, laid out as in the hicolor theme."""

Action = Literal["installed", "updated", "unchanged", "removed"]

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


def data_home(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME`` (an absolute path, as the spec asks), else ``~/.local/share``."""
    value = (os.environ if env is None else env).get("XDG_DATA_HOME", "")
    return Path(value) if value and Path(value).is_absolute() else Path.home() / ".local" / "share"


def icon_files() -> list[Path]:
    """The shipped icons, relative to the hicolor folder (``16x16/apps/kvswitch.png``, …)."""
    return sorted(p.relative_to(HICOLOR) for p in HICOLOR.rglob("*") if p.suffix in {".png", ".svg"})


@dataclass(frozen=True)
class Change:
    path: Path
    action: Action


@dataclass
class Report:
    """What :func:`install` or :func:`uninstall` did: each file, and the cache tools run."""

    changes: list[Change] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)


def _targets(data: Path) -> list[tuple[Path, Path | None]]:
    """(where it goes, the shipped file it copies or None for the generated entry)."""
    icons = data / "icons" / "hicolor"
    return [(data / "applications" / DESKTOP_FILE, None), *((icons / rel, HICOLOR / rel) for rel in icon_files())]


def install(data: Path | None = None, argv: Sequence[str] | None = None) -> Report:
    """Write the menu entry and the icons for the current user; ``argv``: the command the entry
    runs (default :func:`launcher_argv`)."""
    from kvswitch.io import atomic_write, read_bytes

    data = data or data_home()
    entry = desktop_entry(launcher_argv() if argv is None else argv).encode()
    report = Report()
    for target, source in _targets(data):
        content = entry if source is None else read_bytes(source)
        existed = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        written = atomic_write(target, content, backup=False, mode=0o644)
        report.changes.append(
            Change(target, "unchanged" if not written.changed else "updated" if existed else "installed")
        )
    report.ran = refresh_caches(data)
    return report


def uninstall(data: Path | None = None) -> Report:
    """Remove what :func:`install` wrote (and the login item); folders it left empty go too,
    up to the theme's and the menu's own folders."""
    from kvswitch.errors import Location, WriteError
    from kvswitch.i18n import tr
    from kvswitch_gui import autostart

    data = data or data_home()
    report = Report()
    keep = {data / "applications", data / "icons" / "hicolor"}
    for target, _source in _targets(data):
        if not (target.is_file() or target.is_symlink()):
            continue
        try:
            target.unlink()
        except OSError as exc:
            raise WriteError(
                tr("cannot remove: {reason}").format(reason=exc.strerror or exc), Location(target)
            ) from exc
        report.changes.append(Change(target, "removed"))
        folder = target.parent
        while folder not in keep and data in folder.parents:
            try:
                folder.rmdir()  # only an empty one
            except OSError:
                break
            folder = folder.parent
    login = autostart.remove()
    if login is not None:
        report.changes.append(Change(login, "removed"))
    if report.changed:
        report.ran = refresh_caches(data)
    return report


def refresh_caches(data: Path) -> list[str]:
    """Run ``update-desktop-database`` and ``gtk-update-icon-cache`` where installed, on folders
    that already keep their cache (a menu folder with ``mimeinfo.cache``, a theme with an
    ``index.theme``): elsewhere the desktop reads the files themselves, and a cache made here
    would be a file uninstall leaves behind. A tool that fails is passed over. The commands run."""
    ran: list[str] = []
    apps, theme = data / "applications", data / "icons" / "hicolor"
    for tool, args, needed in (
        ("update-desktop-database", ["-q", str(apps)], apps / "mimeinfo.cache"),
        ("gtk-update-icon-cache", ["-q", "-f", str(theme)], theme / "index.theme"),
    ):
        exe = shutil.which(tool)
        if exe is None or not needed.exists():
            continue
        try:
            done = subprocess.run([exe, *args], capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            ran.append(" ".join([tool, *args]))
    return ran
