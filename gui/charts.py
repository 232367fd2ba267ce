"""The probe's charts, drawn with QPainter from plain data (no I/O, no QtCharts).

- :class:`TtftChart`: every request's TTFT per mode as a strip plot over a box (quartiles,
  whiskers to min and max), the median marked and labelled in ms. Modes differ in marker shape
  and fill (merged: filled circles, split: hollow squares), not only in colour.
- :class:`GpuMemoryChart`: memory used over time, one line per GPU UUID (colour *and* dash
  pattern), from a report's ``gpu_timeline``; an "n/a: reason" message when there is none.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QCoreApplication, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from kvswitch_gui.translations import QT_TRANSLATE_NOOP

__all__ = ["MODE_STYLES", "GpuMemoryChart", "TtftChart", "nice_ticks"]

# (colour, marker, filled): a colour-blind-safe pair, told apart by shape and fill as well
MODE_STYLES: dict[str, tuple[str, str, bool]] = {
    "merged": ("#1f77b4", "circle", True),
    "split": ("#d95f02", "square", False),
}
_EXTRA_STYLES = [("#7570b3", "triangle", True), ("#1b9e77", "diamond", False)]
_LINE_COLOURS = ["#1f77b4", "#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e", "#a6761d", "#666666"]
_DASHES = [Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine]


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 × 10ⁿ apart) that cover ``lo``…``hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag * (1 + 1e-9))
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step
    count = round((last - first) / step)
    return [round(first + i * step, 10) for i in range(count + 1)]


def _tick_text(value: float, step: float) -> str:
    decimals = 0
    while decimals < 6 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6:
        decimals += 1
    return f"{value:,.{decimals}f}"


def _mode_style(mode: str, index: int) -> tuple[str, str, bool]:
    return MODE_STYLES.get(mode) or _EXTRA_STYLES[index % len(_EXTRA_STYLES)]


def _marker(p: QPainter, centre: QPointF, shape: str, size: float) -> None:
    r = size / 2
    if shape == "circle":
        p.drawEllipse(centre, r, r)
    elif shape == "square":
        p.drawRect(QRectF(centre.x() - r, centre.y() - r, size, size))
    elif shape == "triangle":
        p.drawPolygon(
            [
                QPointF(centre.x(), centre.y() - r),
                QPointF(centre.x() + r, centre.y() + r),
                QPointF(centre.x() - r, centre.y() + r),
            ]
        )
    else:
        p.drawPolygon(
            [
                QPointF(centre.x(), centre.y() - r),
                QPointF(centre.x() + r, centre.y()),
                QPointF(centre.x(), centre.y() + r),
                QPointF(centre.x() - r, centre.y()),
            ]
        )


def _tr(text: str) -> str:
    """``text`` (this module's words, context ``charts``) in the user's language."""
    return QCoreApplication.translate("charts", text)


class _Chart(QWidget):
    """Common bits: title, empty-state message, palette-aware text colour."""

    title = ""
    """The chart's title in English (drawn translated)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumSize(240, 200)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.message = ""

    def sizeHint(self) -> QSize:
        return QSize(460, 260)

    def _ink(self) -> QColor:
        return self.palette().color(QPalette.ColorRole.WindowText)

    def _begin(self) -> tuple[QPainter, QRectF, QFontMetrics]:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), self.palette().color(QPalette.ColorRole.Base))
        fm = QFontMetrics(self.font())
        bold = QFont(self.font())
        bold.setBold(True)
        p.setFont(bold)
        p.setPen(self._ink())
        p.drawText(QRectF(8, 4, self.width() - 16, fm.height() + 4), Qt.AlignmentFlag.AlignLeft, _tr(self.title))
        p.setFont(self.font())
        return p, QRectF(8, fm.height() + 10, self.width() - 16, self.height() - fm.height() - 14), fm

    def _draw_message(self, p: QPainter, area: QRectF) -> None:
        p.setPen(self._ink())
        p.drawText(area, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self.message)

    def has_data(self) -> bool:
        raise NotImplementedError

    def _paint(self, p: QPainter, area: QRectF, fm: QFontMetrics) -> None:
        """Draw the data into ``area`` (below the title); called only when there is data."""
        raise NotImplementedError

    def paintEvent(self, event: QPaintEvent) -> None:
        p, area, fm = self._begin()
        try:
            if self.has_data():
                self._paint(p, area, fm)
            else:
                self._draw_message(p, area)
        finally:
            p.end()


class TtftChart(_Chart):
    """TTFT of every measured request, one row per mode; ``set_data`` with plain lists (ms)."""

    title = QT_TRANSLATE_NOOP("charts", "Time to first token per request")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.samples: dict[str, list[float]] = {}
        self.medians: dict[str, float | None] = {}
        self.message = _tr("No probe results yet")
        self.setAccessibleName(_tr("TTFT distribution chart"))

    def set_data(
        self,
        samples: Mapping[str, Sequence[float]],
        medians: Mapping[str, float | None] | None = None,
        *,
        empty: str | None = None,
    ) -> None:
        """``samples``: mode → TTFTs in ms; ``medians``: mode → the report's median (else computed)."""
        self.samples = {m: [float(v) for v in vs if v is not None and math.isfinite(v)] for m, vs in samples.items()}
        self.medians = {m: (medians or {}).get(m) for m in self.samples}
        for m, vs in self.samples.items():
            if self.medians[m] is None and vs:
                self.medians[m] = statistics.median(vs)
        self.message = "" if self.has_data() else empty or _tr("No successful requests to show")
        described = "; ".join(
            QCoreApplication.translate("charts", "{mode}: median {median} ms over {count} requests").format(
                mode=m, median=f"{v:.1f}", count=len(self.samples[m])
            )
            for m, v in self.medians.items()
            if v is not None
        )
        self.setAccessibleDescription(described or self.message)
        self.update()

    def has_data(self) -> bool:
        return any(self.samples.values())

    def clear(self, message: str | None = None) -> None:
        self.samples, self.medians, self.message = {}, {}, message or _tr("No probe results yet")
        self.update()

    def _paint(self, p: QPainter, area: QRectF, fm: QFontMetrics) -> None:
        ink = self._ink()
        modes = list(self.samples)
        values = [v for vs in self.samples.values() for v in vs]
        lo, hi = min(values), max(values)
        # from zero, so the modes' ratio reads true, unless every value sits in a narrow band far from it
        lo = 0.0 if lo <= hi * 0.8 else lo - (hi - lo) * 0.1
        ticks = nice_ticks(lo, hi * 1.02 if hi > 0 else 1.0)
        x0, x1 = ticks[0], ticks[-1]
        label_w = max(fm.horizontalAdvance(f"{m} (n={len(self.samples[m])})") for m in modes) + 12
        plot = QRectF(
            area.left() + label_w, area.top() + 4, area.width() - label_w - 8, area.height() - 2 * fm.height() - 14
        )
        if plot.width() < 20 or plot.height() < 20:
            return

        def x_of(v: float) -> float:
            return plot.left() + (v - x0) / (x1 - x0) * plot.width()

        # the axis: grid lines, tick labels in ms, the axis title
        grid = QColor(ink)
        grid.setAlpha(40)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        for t in ticks:
            x = x_of(t)
            p.setPen(QPen(grid, 1))
            p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            p.setPen(ink)
            text = _tick_text(t, step)
            p.drawText(QPointF(x - fm.horizontalAdvance(text) / 2, plot.bottom() + fm.ascent() + 4), text)
        p.setPen(QPen(ink, 1))
        p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        axis_title = QCoreApplication.translate("charts", "TTFT (ms)")
        p.drawText(
            QPointF(
                plot.center().x() - fm.horizontalAdvance(axis_title) / 2, plot.bottom() + fm.height() + fm.ascent() + 8
            ),
            axis_title,
        )

        band = plot.height() / len(modes)
        for i, mode in enumerate(modes):
            colour, shape, filled = _mode_style(mode, i)
            c = QColor(colour)
            vs = sorted(self.samples[mode])
            cy = plot.top() + band * (i + 0.5)
            p.setPen(ink)
            label = f"{mode} (n={len(vs)})"
            p.drawText(
                QRectF(area.left(), cy - fm.height() / 2, label_w - 8, fm.height()),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                label,
            )
            if not vs:
                p.drawText(
                    QPointF(plot.left() + 6, cy + fm.ascent() / 2),
                    QCoreApplication.translate("charts", "no successful requests"),
                )
                continue
            half = min(band * 0.3, 22.0)
            # whiskers (min–max) and the box (quartiles)
            q1, q3 = statistics.quantiles(vs, n=4, method="inclusive")[::2] if len(vs) > 1 else (vs[0], vs[0])
            p.setPen(QPen(c, 1))
            p.drawLine(QPointF(x_of(vs[0]), cy), QPointF(x_of(vs[-1]), cy))
            for end in (vs[0], vs[-1]):
                p.drawLine(QPointF(x_of(end), cy - half / 2), QPointF(x_of(end), cy + half / 2))
            fill = QColor(c)
            fill.setAlpha(35)
            p.setBrush(fill)
            p.drawRect(QRectF(x_of(q1), cy - half, max(x_of(q3) - x_of(q1), 1.0), 2 * half))
            # every request, jittered vertically (deterministically) so equal values stay visible
            p.setPen(QPen(c, 1.2))
            p.setBrush(QBrush(c) if filled else Qt.BrushStyle.NoBrush)
            for k, v in enumerate(vs):
                jitter = ((k * 0.6180339887) % 1.0 - 0.5) * 1.6 * half
                _marker(p, QPointF(x_of(v), cy + jitter), shape, 6.0)
            # the median: a thick bar across the box, labelled
            median = self.medians.get(mode)
            if median is not None:
                xm = x_of(median)
                p.setPen(QPen(ink, 3))
                p.drawLine(QPointF(xm, cy - half - 3), QPointF(xm, cy + half + 3))
                text = QCoreApplication.translate("charts", "median {median} ms").format(median=f"{median:.1f}")
                width = fm.horizontalAdvance(text)
                tx = min(max(xm - width / 2, plot.left()), plot.right() - width)
                p.setPen(ink)
                p.drawText(QPointF(tx, cy - half - 6), text)
            p.setBrush(Qt.BrushStyle.NoBrush)


class GpuMemoryChart(_Chart):
    """GPU memory used over the probe, per GPU UUID; ``set_data`` with a report's timeline."""

    title = QT_TRANSLATE_NOOP("charts", "GPU memory used over the probe")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series: dict[str, list[tuple[float, float]]] = {}
        self.message = _tr("No probe results yet")
        self.setAccessibleName(_tr("GPU memory chart"))

    def set_data(self, timeline: Sequence[Sequence[Any]] | None, unavailable: str | None = None) -> None:
        """``timeline``: ``[[t_s, uuid, used_mib], …]``; ``unavailable``: why there is none
        (shown as "n/a: reason")."""
        self.series = {}
        for row in timeline or ():
            try:
                t, uuid, used = float(row[0]), str(row[1]), row[2]
            except (TypeError, ValueError, IndexError):
                continue
            if used is None:
                continue
            self.series.setdefault(uuid, []).append((t, float(used)))
        for points in self.series.values():
            points.sort()
        if unavailable:
            reason = unavailable.removeprefix("n/a: ")
            self.message = QCoreApplication.translate("charts", "GPU memory: n/a: {reason}").format(reason=reason)
            self.series = {}
        elif not self.series:
            self.message = QCoreApplication.translate(
                "charts",
                "GPU memory: no samples over time in this report "
                "(per-mode baseline and peak, where known, are in the table)",
            )
        else:
            self.message = ""
        self.setAccessibleDescription(
            self.message
            or QCoreApplication.translate("charts", "{count} GPU(s) sampled").format(count=len(self.series))
        )
        self.update()

    def has_data(self) -> bool:
        return bool(self.series)

    def clear(self, message: str | None = None) -> None:
        self.series, self.message = {}, message or _tr("No probe results yet")
        self.update()

    def _paint(self, p: QPainter, area: QRectF, fm: QFontMetrics) -> None:
        ink = self._ink()
        ts = [t for pts in self.series.values() for t, _ in pts]
        ms = [m for pts in self.series.values() for _, m in pts]
        gib = max(ms) >= 10 * 1024
        scale, unit = (1 / 1024, "GiB") if gib else (1.0, "MiB")
        xt = nice_ticks(0.0, max(max(ts), 1e-3))
        lo, hi = min(ms) * scale, max(ms) * scale
        pad = (hi - lo) * 0.1 or max(hi * 0.01, 1.0)
        yt = nice_ticks(max(lo - pad, 0.0), hi + pad, 4)
        y_labels = [_tick_text(v, yt[1] - yt[0] if len(yt) > 1 else 1.0) for v in yt]
        left = max(fm.horizontalAdvance(s) for s in y_labels) + 10
        legend_h = 2 * fm.height() + 10
        plot = QRectF(
            area.left() + left,
            area.top() + legend_h + 4,
            area.width() - left - 8,
            area.height() - legend_h - 2 * fm.height() - 18,
        )
        if plot.width() < 20 or plot.height() < 20:
            return

        def x_of(t: float) -> float:
            return plot.left() + (t - xt[0]) / (xt[-1] - xt[0]) * plot.width()

        def y_of(v: float) -> float:
            return plot.bottom() - (v * scale - yt[0]) / (yt[-1] - yt[0]) * plot.height()

        grid = QColor(ink)
        grid.setAlpha(40)
        for v, text in zip(yt, y_labels, strict=True):
            y = plot.bottom() - (v - yt[0]) / (yt[-1] - yt[0]) * plot.height()
            p.setPen(QPen(grid, 1))
            p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            p.setPen(ink)
            p.drawText(QPointF(plot.left() - 6 - fm.horizontalAdvance(text), y + fm.ascent() / 2 - 1), text)
        xstep = xt[1] - xt[0] if len(xt) > 1 else 1.0
        for t in xt:
            text = _tick_text(t, xstep)
            p.drawText(QPointF(x_of(t) - fm.horizontalAdvance(text) / 2, plot.bottom() + fm.ascent() + 4), text)
        p.setPen(QPen(ink, 1))
        p.drawLine(plot.bottomLeft(), plot.bottomRight())
        p.drawLine(plot.bottomLeft(), plot.topLeft())
        axis = QCoreApplication.translate("charts", "time since the first sample (s)")
        p.drawText(
            QPointF(plot.center().x() - fm.horizontalAdvance(axis) / 2, plot.bottom() + fm.height() + fm.ascent() + 8),
            axis,
        )
        p.drawText(QPointF(area.left(), plot.top() - fm.ascent() / 2 - 6), unit)

        lx = plot.left()
        for i, (uuid, pts) in enumerate(self.series.items()):
            pen = QPen(QColor(_LINE_COLOURS[i % len(_LINE_COLOURS)]), 2)
            pen.setStyle(_DASHES[i % len(_DASHES)])
            p.setPen(pen)
            if len(pts) == 1:
                p.setBrush(pen.color())
                p.drawEllipse(QPointF(x_of(pts[0][0]), y_of(pts[0][1])), 3, 3)
                p.setBrush(Qt.BrushStyle.NoBrush)
            else:
                p.drawPolyline([QPointF(x_of(t), y_of(m)) for t, m in pts])
            # legend: a short stretch of the line's own pen, then the UUID (shortened)
            label = uuid if len(uuid) <= 17 else uuid[:13] + "…"
            ly = area.top() + fm.height() / 2 + 2
            p.drawLine(QPointF(lx, ly), QPointF(lx + 24, ly))
            p.setPen(ink)
            p.drawText(QPointF(lx + 28, ly + fm.ascent() / 2 - 1), label)
            lx += 40 + fm.horizontalAdvance(label)
