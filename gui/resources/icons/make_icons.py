"""Make kvswitch's PNG icons from its SVG: ``python gui/resources/icons/make_icons.py``.

The SVG (``hicolor/scalable/apps/kvswitch.svg``) is the source; this renders it with Qt's SVG
renderer at every size the hicolor theme lists (``hicolor/NNxNN/apps/kvswitch.png``). Run it
after editing the SVG and commit the PNGs with it; ``tests/gui/test_desktop.py`` checks that
they match. The symbolic icons (``hicolor/symbolic/apps/*-symbolic.svg``) are SVG only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtGui import QImage

__all__ = ["HICOLOR", "PNG_SIZES", "SVG", "main", "png_path", "render"]

HICOLOR = Path(__file__).resolve().parent / "hicolor"
SVG = HICOLOR / "scalable" / "apps" / "kvswitch.svg"
PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)


def png_path(size: int, root: Path = HICOLOR) -> Path:
    return root / f"{size}x{size}" / "apps" / "kvswitch.png"


def render(svg: Path, size: int) -> QImage:
    """``svg`` drawn at ``size`` × ``size`` px on a transparent image (ARGB32)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg.name} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
    finally:
        painter.end()
    return image


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    _app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    for size in PNG_SIZES:
        path = png_path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(SVG, size).save(str(path)):  # PNG, by the name
            sys.stderr.write(f"could not write {path}\n")
            return 1
        sys.stdout.write(f"wrote {path.relative_to(HICOLOR.parent)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
