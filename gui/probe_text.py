"""The probe window's words for a report: the comparison with its verdict, a mode's GPU cell, a
history entry's label. Plain functions over report data (no widgets, no I/O); the verdict itself
is the library's (:func:`kvswitch.probe.comparison.verdict`), the same the CLI prints.

Words go through ``QCoreApplication.translate`` in the context ``ProbeWindow`` (where they were
first written, so their translations stay).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication

if TYPE_CHECKING:
    from kvswitch.probe.comparison import Verdict

__all__ = ["comparison_text", "gpu_cell", "history_label", "identity", "ms", "verdict_text"]


def ms(value: Any) -> str:
    """A time in milliseconds as the table shows it, ``–`` where there is none."""
    return "–" if value is None else f"{value:.1f} ms"


def verdict_text(v: Verdict) -> str:
    """What a split/merged ratio's 95 % interval says, in words."""
    if v.faster == "split":
        return QCoreApplication.translate("ProbeWindow", "split is faster")
    if v.faster == "merged":
        return QCoreApplication.translate("ProbeWindow", "merged is faster")
    return QCoreApplication.translate("ProbeWindow", "no difference the interval can show")


def comparison_text(report: Mapping[str, Any]) -> str:
    """The TTFT and ITL comparisons with their verdicts, or why there is none."""
    from kvswitch.probe.comparison import verdict

    comp = report.get("comparison") or {}
    lines = []
    v = verdict(comp.get("ttft_median_ratio"))
    if v is not None:
        lines.append(
            QCoreApplication.translate(
                "ProbeWindow",
                "TTFT median split/merged = {ratio} (95 % bootstrap interval {low}–{high}): {verdict} to "
                "the first token.",
            ).format(ratio=f"{v.ratio:.2f}", low=f"{v.low:.2f}", high=f"{v.high:.2f}", verdict=verdict_text(v))
        )
    v = verdict(comp.get("itl_p99_ratio"))
    if v is not None:
        lines.append(
            QCoreApplication.translate(
                "ProbeWindow", "ITL p99 split/merged = {ratio} (95 % interval {low}–{high}): {verdict} between tokens."
            ).format(ratio=f"{v.ratio:.2f}", low=f"{v.low:.2f}", high=f"{v.high:.2f}", verdict=verdict_text(v))
        )
    if not lines:
        modes = list(report.get("modes") or {})
        lines.append(
            QCoreApplication.translate(
                "ProbeWindow", "No comparison: it needs both modes with successful requests (this run: {modes})."
            ).format(modes=", ".join(modes))
            if modes
            else QCoreApplication.translate(
                "ProbeWindow", "No comparison: it needs both modes with successful requests."
            )
        )
    return "\n".join(lines)


def gpu_cell(memory: Any) -> tuple[str, str]:
    """(text, tooltip) for a mode's GPU memory: the peak's delta per GPU, or n/a with why."""
    if isinstance(memory, str):
        return "n/a", memory
    if not isinstance(memory, dict) or not memory:
        return "n/a", QCoreApplication.translate("ProbeWindow", "n/a: no GPU memory figures")
    texts, tips = [], []
    for uuid, g in memory.items():
        delta = g.get("delta_mib")
        texts.append("n/a" if delta is None else f"{delta:+.0f} MiB")
        tips.append(
            QCoreApplication.translate(
                "ProbeWindow", "{gpu} ({instance}): baseline {baseline} MiB, peak {peak} MiB, Δ {delta} MiB"
            ).format(
                gpu=uuid,
                instance=g.get("instance"),
                baseline=g.get("baseline_mib"),
                peak=g.get("peak_mib"),
                delta=delta,
            )
        )
    return ", ".join(texts), "\n".join(tips)


def history_label(report: Mapping[str, Any]) -> str:
    """A history entry: local time, model and each mode's TTFT median."""
    from kvswitch.times import local_minute

    s = report.get("settings") or {}
    parts = []
    for mode, m in (report.get("modes") or {}).items():
        median = (m.get("ttft_ms") or {}).get("median")
        parts.append(f"{mode} {median:.0f} ms" if median is not None else f"{mode} –")
    when = local_minute(report["time"]) if report.get("time") else "?"
    label = f"{when} · {s.get('model', '?')} · {' / '.join(parts)}"
    if report.get("cancelled"):
        return QCoreApplication.translate("ProbeWindow", "{label} (cancelled)").format(label=label)
    return label


def identity(report: Mapping[str, Any]) -> str:
    """Enough to tell one history entry from another (the same run read back is the same)."""
    modes = report.get("modes") or {}
    return repr((report.get("time"), report.get("settings"), [m.get("ttft_samples_ms") for m in modes.values()]))
