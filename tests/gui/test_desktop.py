"""kvswitch-tray on the desktop: its menu entry (valid by ``desktop-file-validate``), its icons
(every hicolor size, made from the SVG, legible on dark and light panels; symbolic ones in one
colour), and ``--install`` / ``--uninstall`` in the test's own XDG folders: idempotent, and
uninstall takes away exactly what install put there."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PySide6.QtGui import QImage

from kvswitch_gui import autostart, desktop
from tests.conftest import require_tool

MAKE_ICONS = desktop.HICOLOR.parent / "make_icons.py"
DARK, LIGHT = (0x2B, 0x2B, 0x2B), (0xF0, 0xF0, 0xF0)
SYMBOLIC = ("kvswitch-symbolic", "kvswitch-merged-symbolic", "kvswitch-split-symbolic")


def _make_icons() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kvswitch_make_icons", MAKE_ICONS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _validate(path: Path) -> str:
    """``desktop-file-validate``'s complaints (hints are advice, not faults); '' when clean."""
    done = subprocess.run(
        [require_tool("desktop-file-validate"), str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    faults = [line for line in (done.stdout + done.stderr).splitlines() if ": hint:" not in line]
    assert (done.returncode == 0) == (not faults), done.stdout + done.stderr
    return "\n".join(faults)


def _keys(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


# -- the desktop entry ------------------------------------------------------------------------------


def test_the_menu_entry_has_every_key_in_both_languages_and_is_valid(tmp_path: Path) -> None:
    text = desktop.desktop_entry()
    assert text.startswith("[Desktop Entry]\n")
    keys = _keys(text)
    assert keys["Type"] == "Application" and keys["Exec"] == "kvswitch-tray" and keys["Icon"] == "kvswitch"
    assert keys["Categories"] == "Development;Utility;"
    assert keys["StartupNotify"] == "false" and keys["Terminal"] == "false"
    assert keys["X-GNOME-UsesNotifications"] == "true"
    assert "X-GNOME-Autostart-enabled" not in keys  # only the login item has it
    for key in ("Name", "GenericName", "Comment", "Keywords"):
        assert keys[key] and keys[f"{key}[zh_CN]"], key
    for key in ("GenericName", "Comment", "Keywords"):
        assert re.search("[\u4e00-\u9fff]", keys[f"{key}[zh_CN]"]), key  # Chinese, not a copy
    assert keys["Keywords"].endswith(";") and keys["Keywords[zh_CN]"].endswith(";")
    path = tmp_path / desktop.DESKTOP_FILE
    path.write_text(text, encoding="utf-8")
    assert _validate(path) == ""


def test_the_validator_catches_a_broken_entry(tmp_path: Path) -> None:
    path = tmp_path / "broken.desktop"
    path.write_text(desktop.desktop_entry().replace("Type=Application\n", ""), encoding="utf-8")
    assert "Type" in _validate(path)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["kvswitch-tray"], "kvswitch-tray"),
        (["/opt/my tools/kvswitch-tray", "--tray-wait", "60"], '"/opt/my tools/kvswitch-tray" --tray-wait 60'),
        (["/srv/100%/kvswitch-tray"], "/srv/100%%/kvswitch-tray"),
        (['/a"b/$x', "c`d"], '"/a\\\\"b/\\\\$x" "c\\\\`d"'),  # quoting escapes, then the string's own
        (["C:\\kv\\kvswitch-tray"], '"C:\\\\\\\\kv\\\\\\\\kvswitch-tray"'),  # a literal backslash: four
    ],
)
def test_exec_lines_quote_as_the_spec_says(argv: list[str], line: str, tmp_path: Path) -> None:
    assert desktop.exec_line(argv) == line
    path = tmp_path / "x.desktop"
    path.write_text(desktop.desktop_entry(argv), encoding="utf-8")
    assert _validate(path) == ""


def test_an_exec_argument_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError):
        desktop.exec_line(["kvswitch-tray", "a\nb"])


def test_the_launcher_is_this_install_s_command() -> None:
    argv = desktop.launcher_argv()
    assert (
        argv == ["kvswitch-tray"]
        or Path(argv[0]).name.startswith("kvswitch-tray")
        or argv[1:] == ["-m", "kvswitch_gui"]
    )
    if argv != ["kvswitch-tray"]:
        assert Path(argv[0]).is_absolute()  # a desktop session's PATH may not have it


# -- the icons ----------------------------------------------------------------------------------------


def _rgba(image: QImage) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = image.width(), image.height()
    raw = bytes(image.constBits())
    stride = image.bytesPerLine()
    pixels = [tuple(raw[y * stride + 4 * x : y * stride + 4 * x + 4]) for y in range(h) for x in range(w)]
    return w, h, pixels  # type: ignore[return-value]


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _lost_to_the_panel(
    w: int, h: int, pixels: list[tuple[int, int, int, int]], panel: tuple[int, int, int], inset: int
) -> int:
    """How much of the icon's body melts into ``panel``: the body is its opaque area less a
    rim of ``inset`` px (where an outline or halo may sit); what melts is what a flood from the
    icon's edges reaches through pixels under 3:1 (WCAG) against the panel. 0: a closed
    outline of ≥ 3:1 holds the whole body apart."""

    def over(p: tuple[int, int, int, int]) -> tuple[float, float, float]:
        a = p[3] / 255
        return tuple(p[i] * a + panel[i] * (1 - a) for i in range(3))  # type: ignore[return-value]

    faint = [_contrast(over(p), panel) < 3.0 for p in pixels]
    seen = [False] * (w * h)
    queue = deque(i for i in range(w * h) if (i % w in (0, w - 1) or i // w in (0, h - 1)) and faint[i])
    for i in queue:
        seen[i] = True
    while queue:
        i = queue.popleft()
        x, y = i % w, i // w
        for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
            j = ny * w + nx
            if 0 <= nx < w and 0 <= ny < h and not seen[j] and faint[j]:
                seen[j] = True
                queue.append(j)
    opaque = [p[3] == 255 for p in pixels]

    def body(i: int) -> bool:
        x, y = i % w, i // w
        return all(
            0 <= x + dx < w and 0 <= y + dy < h and opaque[(y + dy) * w + x + dx]
            for dx in range(-inset, inset + 1)
            for dy in range(-inset, inset + 1)
        )

    return sum(1 for i in range(w * h) if seen[i] and body(i))


def test_every_hicolor_icon_is_shipped() -> None:
    names = {p.as_posix() for p in desktop.icon_files()}
    sizes = _make_icons().PNG_SIZES
    assert set(sizes) == {16, 22, 24, 32, 48, 64, 128, 256}
    assert names == {f"{s}x{s}/apps/kvswitch.png" for s in sizes} | {"scalable/apps/kvswitch.svg"} | {
        f"symbolic/apps/{name}.svg" for name in SYMBOLIC
    }


def test_the_pngs_are_the_svg_rendered_at_each_size(qapp: Any) -> None:
    make = _make_icons()
    for size in make.PNG_SIZES:
        png = QImage(str(make.png_path(size)))
        assert (png.width(), png.height()) == (size, size), size
        _, _, shipped = _rgba(png)
        _, _, fresh = _rgba(make.render(make.SVG, size))
        worst = max(abs(a - b) for p, q in zip(shipped, fresh, strict=True) for a, b in zip(p, q, strict=True))
        # exact with the Qt that made them; another Qt's antialiasing may move an edge a little
        assert worst <= 48, f"{size}px differs from the SVG by {worst}: run {MAKE_ICONS.name}"


@pytest.mark.parametrize("size", [16, 22, 24, 32, 48, 64, 128, 256])
def test_the_icon_reads_on_dark_and_light_panels(qapp: Any, size: int) -> None:
    w, h, pixels = _rgba(QImage(str(_make_icons().png_path(size))))
    inset = max(1, round(size / 16))  # the design's rim: 1 unit of its 16
    for panel in (DARK, LIGHT):
        assert _lost_to_the_panel(w, h, pixels, panel, inset) == 0, f"{size}px on {panel}"
    # and it is an icon, not a blank: the body is most of it
    assert sum(1 for p in pixels if p[3] == 255) > 0.7 * w * h


def test_the_legibility_check_catches_an_icon_without_an_outline() -> None:
    blue = (0x25, 0x63, 0xEB, 255)  # the merged fill alone: 2.7:1 on the dark panel
    w = h = 16
    pixels = [blue if 2 <= i % w < 14 and 2 <= i // w < 14 else (0, 0, 0, 0) for i in range(w * h)]
    assert _lost_to_the_panel(w, h, pixels, DARK, 1) > 0
    assert _lost_to_the_panel(w, h, pixels, LIGHT, 1) == 0


@pytest.mark.parametrize("name", SYMBOLIC)
def test_symbolic_icons_are_one_colour_with_alpha_only(qapp: Any, name: str) -> None:
    path = desktop.HICOLOR / "symbolic" / "apps" / f"{name}.svg"
    root = ET.parse(path).getroot()
    colours = set()
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        assert tag not in {"linearGradient", "radialGradient", "image", "text", "style"}, tag
        for attr in ("fill", "stroke", "stop-color", "color"):
            if attr in element.attrib:
                colours.add(element.attrib[attr].lower())
        assert "style" not in element.attrib or "#" not in element.attrib["style"]
    assert colours == {"#bebebe"}
    assert root.attrib.get("viewBox") == "0 0 16 16"
    for size in (16, 32):
        _, _, pixels = _rgba(_make_icons().render(path, size))
        drawn = [p for p in pixels if p[3] > 0]
        assert len(drawn) > size * size / 4  # a shape, not a speck
        # straight (unpremultiplied) colour is the one grey everywhere; edges differ only in alpha
        assert all(max(abs(c - 0xBE) for c in p[:3]) <= 3 for p in drawn if p[3] >= 16), name


def test_the_app_s_icon_comes_from_the_shipped_files(qapp: Any) -> None:
    from kvswitch_gui.app import app_icon

    icon = app_icon()
    assert not icon.isNull()
    assert not icon.pixmap(22, 22).isNull()


# -- install and uninstall ------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def test_install_is_idempotent_and_uninstall_takes_away_exactly_what_it_wrote(sandbox: Path) -> None:
    data = Path(os.environ["XDG_DATA_HOME"])
    # what the user had before: another app's entry and icon, in folders install also uses
    (data / "applications").mkdir(parents=True)
    (data / "applications" / "other.desktop").write_text("[Desktop Entry]\nType=Application\nName=Other\nExec=other\n")
    (data / "icons" / "hicolor" / "16x16" / "apps").mkdir(parents=True)
    (data / "icons" / "hicolor" / "16x16" / "apps" / "other.png").write_bytes(b"not ours")
    before = _tree(data)

    first = desktop.install(argv=["kvswitch-tray"])
    entry = data / "applications" / "kvswitch-tray.desktop"
    assert [c.action for c in first.changes] == ["installed"] * (1 + len(desktop.icon_files()))
    assert first.changes[0].path == entry and entry.read_text(encoding="utf-8") == desktop.desktop_entry()
    for rel in desktop.icon_files():
        assert (data / "icons" / "hicolor" / rel).read_bytes() == (desktop.HICOLOR / rel).read_bytes()
    assert oct(entry.stat().st_mode & 0o777) == "0o644"
    assert not (Path(os.environ["KVSWITCH_HOME"]) / "backups").exists()  # kvswitch's own files: no backups

    again = desktop.install(argv=["kvswitch-tray"])
    assert {c.action for c in again.changes} == {"unchanged"} and not again.changed
    moved = desktop.install(argv=["/opt/kv/kvswitch-tray"])  # a new place: the entry follows
    assert [c.action for c in moved.changes if c.action != "unchanged"] == ["updated"]
    assert _keys(entry.read_text(encoding="utf-8"))["Exec"] == "/opt/kv/kvswitch-tray"

    login = autostart.enable()
    assert login.is_file()
    gone = desktop.uninstall()
    assert {c.action for c in gone.changes} == {"removed"}
    assert {c.path for c in gone.changes} == {c.path for c in first.changes} | {login}
    assert _tree(data) == before  # the user's files, and the folders they were in, as they were
    assert not login.exists()

    nothing = desktop.uninstall()
    assert nothing.changes == [] and not nothing.changed


def test_the_desktop_caches_are_refreshed_where_the_folders_keep_them(sandbox: Path) -> None:
    require_tool("update-desktop-database")
    require_tool("gtk-update-icon-cache")
    data = Path(os.environ["XDG_DATA_HOME"])
    theme = data / "icons" / "hicolor"
    theme.mkdir(parents=True)
    (theme / "index.theme").write_text(
        "[Icon Theme]\nName=Hicolor\nComment=Fallback\nDirectories=16x16/apps\n\n"
        "[16x16/apps]\nSize=16\nContext=Applications\nType=Threshold\n"
    )
    apps = data / "applications"
    apps.mkdir(parents=True)
    (apps / "mimeinfo.cache").write_text("[MIME Cache]\n")
    report = desktop.install(argv=["kvswitch-tray"])
    assert [r.split()[0] for r in report.ran] == ["update-desktop-database", "gtk-update-icon-cache"]
    cache = theme / "icon-theme.cache"
    assert cache.is_file() and b"kvswitch" in cache.read_bytes()
    gone = desktop.uninstall()
    assert len(gone.ran) == 2
    assert not cache.exists() or b"kvswitch" not in cache.read_bytes()  # no icons left: no cache, or none of ours


def test_no_cache_file_is_made_where_there_was_none(sandbox: Path) -> None:
    data = Path(os.environ["XDG_DATA_HOME"])
    report = desktop.install(argv=["kvswitch-tray"])
    assert report.ran == []
    assert not (data / "applications" / "mimeinfo.cache").exists()
    assert not (data / "icons" / "hicolor" / "icon-theme.cache").exists()


def test_kvswitch_tray_install_and_uninstall_say_what_they_did(
    sandbox: Path, qapp: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from kvswitch_gui.app import main

    data = Path(os.environ["XDG_DATA_HOME"])
    assert main(["--install"]) == 0
    out = capsys.readouterr().out
    entry = data / "applications" / "kvswitch-tray.desktop"
    assert f"installed {entry}" in out and "kvswitch-tray --uninstall" in out
    assert out.count("installed ") == 1 + len(desktop.icon_files())
    assert main(["--install"]) == 0
    assert f"up to date: {entry}" in capsys.readouterr().out
    assert main(["--uninstall"]) == 0
    out = capsys.readouterr().out
    assert f"removed {entry}" in out and not entry.exists()
    assert main(["--uninstall"]) == 0
    assert "Nothing to remove" in capsys.readouterr().out


def test_install_as_a_command_of_its_own(sandbox: Path) -> None:
    """``python -m kvswitch_gui --install`` in a process with no display at all."""
    env = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch_gui", "--install"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (Path(env["XDG_DATA_HOME"]) / "icons/hicolor/256x256/apps/kvswitch.png").is_file()
    assert "Traceback" not in done.stderr
