"""The tray's icons, drawn with QPainter (no image files).

Each state has its own *shape*, so the icon reads at 16 px and without colour (monochrome
panels, colour-blind users):

- merged: one solid rounded block (one instance does prefill and decode);
- split: two separated bars with a clear gap between them (prefill | decode);
- unknown (not set up, config unreadable): a hollow outline of the block;
- warning (a client drifted or is invalid, the last switch failed): a triangle with "!" cut
  into the bottom-right corner, separated from the base shape by a transparent margin.

Colours only add to the shapes: merged blue, split teal, unknown grey, warning amber.

The unknown icon is the app's first, shown before anything else loads: it is drawn without Qt's
``Qt`` namespace, whose enums cost a noticeable part of a start to create.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import (
    QColor,
    QIcon,
    QImage,
    QPainter,
    QPainterPath,
    QPainterPathStroker,
    QPen,
    QPixmap,
    QPolygonF,
)

__all__ = ["SIZES", "mode_icon", "render"]

SIZES = (16, 22, 24, 32, 48, 64)

_FILL = {"merged": QColor("#2563eb"), "split": QColor("#0d9488"), None: QColor("#6b7280")}
_WARN = QColor("#f59e0b")
_INK = QColor("#1f2937")


def _base(p: QPainter, mode: str | None, s: float) -> None:
    fill = _FILL.get(mode, _FILL[None])
    m = s * 0.06  # margin
    radius = s * 0.16
    inner = QRectF(m, m, s - 2 * m, s - 2 * m)
    if mode not in ("merged", "split"):
        # the outline as a pen of this width draws it, stroked into a path and filled: QPainter's
        # setPen and a coloured QBrush would load the Qt namespace (their overloads take its enums)
        width = max(1.5, s * 0.12)
        w = width / 2
        outline = QPainterPath()
        outline.addRoundedRect(inner.adjusted(w, w, -w, -w), radius, radius)
        stroker = QPainterPathStroker()
        stroker.setWidth(width)
        solid = QPen()
        solid.setColor(fill)
        p.fillPath(stroker.createStroke(outline), solid.brush())
        return
    from PySide6.QtCore import Qt

    pen = QPen(fill.darker(150), max(1.0, s / 16))
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    if mode == "merged":
        p.setPen(pen)
        p.setBrush(fill)
        p.drawRoundedRect(inner.adjusted(0.5, 0.5, -0.5, -0.5), radius, radius)
    else:
        # the merged block cut in two: rounded outer corners, straight inner edges, a clear gap
        gap = max(3.0, s * 0.18)
        width = (inner.width() - gap) / 2
        block = QPainterPath()
        block.addRoundedRect(inner.adjusted(0.5, 0.5, -0.5, -0.5), radius, radius)
        p.setPen(pen)
        p.setBrush(fill)
        for x in (inner.left() - 1, inner.right() - width):
            half = QPainterPath()
            half.addRect(QRectF(x, 0, width + 1, s))
            p.drawPath(block.intersected(half))


def _warning(p: QPainter, s: float) -> None:
    from PySide6.QtCore import Qt

    side = s * 0.62
    x0, y0 = s - side, s - side
    tri = QPolygonF([QPointF(x0 + side / 2, y0), QPointF(s, s), QPointF(x0, s)])
    # a transparent margin around the badge, so its outline stands apart from the base shape
    p.save()
    p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
    p.setPen(
        QPen(
            Qt.GlobalColor.transparent,
            max(2.0, s * 0.14),
            Qt.PenStyle.SolidLine,
            Qt.PenCapStyle.RoundCap,
            Qt.PenJoinStyle.RoundJoin,
        )
    )
    p.setBrush(Qt.GlobalColor.transparent)
    p.drawPolygon(tri)
    p.restore()
    p.setPen(QPen(_INK, max(1.0, s / 24), Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin))
    p.setBrush(_WARN)
    p.drawPolygon(tri)
    # the "!": a bar and a dot, in ink
    cx = x0 + side / 2
    bar = QPainterPath()
    w = max(1.0, side * 0.16)
    bar.addRect(QRectF(cx - w / 2, y0 + side * 0.34, w, side * 0.34))
    bar.addRect(QRectF(cx - w / 2, y0 + side * 0.76, w, max(1.0, side * 0.12)))
    p.fillPath(bar, _INK)


def render(mode: str | None, warning: bool = False, size: int = 16) -> QImage:
    """The icon for ``mode`` (``merged``, ``split``, or ``None`` for unknown) at ``size`` px."""
    # transparent: made from zeroed bytes (QImage.fill's overloads would load the Qt namespace)
    image = QImage(bytes(4 * size * size), size, size, QImage.Format.Format_ARGB32_Premultiplied).copy()
    p = QPainter(image)
    try:
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        _base(p, mode if mode in ("merged", "split") else None, float(size))
        if warning:
            _warning(p, float(size))
    finally:
        p.end()
    return image


@cache
def mode_icon(mode: str | None, warning: bool = False) -> QIcon:
    """The tray icon for a mode and warning state, at every common tray size."""
    icon = QIcon()
    for size in SIZES:
        icon.addPixmap(QPixmap.fromImage(render(mode, warning, size)))
    return icon
