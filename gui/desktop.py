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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kvswitch_gui.desktop_entry import APP_ID, DESKTOP_FILE, ICON_NAME, desktop_entry, exec_line, launcher_argv

__all__ = [
    "APP_ID",
    "DESKTOP_FILE",
    "HICOLOR",
    "ICON_NAME",
    "Change",
    "Report",
    "data_home",
    "desktop_command",
    "desktop_entry",
    "exec_line",
    "icon_files",
    "install",
    "launcher_argv",
    "uninstall",
]

HICOLOR = Path(__file__).resolve().parent / "resources" / "icons" / "hicolor"
"""The icons this package ships, laid out as in the hicolor theme."""

Action = Literal["installed", "updated", "unchanged", "removed"]


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


def desktop_command(remove: bool = False) -> int:
    """``kvswitch-tray --install`` / ``--uninstall``: do it and say what was done; 0, or 1 on an error."""
    import sys

    from kvswitch.errors import KvswitchError
    from kvswitch.i18n import tr

    try:
        report = uninstall() if remove else install()
    except KvswitchError as exc:
        sys.stderr.write(tr("kvswitch-tray: {error}").format(error=exc) + "\n")
        return 1
    out: list[str] = []
    for change in report.changes:
        text = {
            "installed": tr("installed {path}"),
            "updated": tr("updated {path}"),
            "unchanged": tr("up to date: {path}"),
            "removed": tr("removed {path}"),
        }[change.action]
        out.append(text.format(path=change.path))
    out += [tr("ran {command}").format(command=command) for command in report.ran]
    if remove:
        out.append(
            tr("kvswitch-tray's menu entry, icons and login item are removed.")
            if report.changed
            else tr("Nothing to remove: kvswitch-tray is not installed for this user.")
        )
    else:
        out.append(tr("kvswitch-tray is in the applications menu now; remove it with `kvswitch-tray --uninstall`."))
    sys.stdout.write("\n".join(out) + "\n")
    return 0
