"""Split against merged: the comparison a report carries, and what it says.

:func:`compare` computes the ratios (active, combined and passive reports alike);
:func:`verdict` reads one ratio back — which mode is faster, or no difference when the 95 %
interval includes 1 — for every reader: the CLI's text, the tray's window, ``advise``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from kvswitch.probe.shapes import Comparison, Ratio, Report

__all__ = ["Faster", "Verdict", "compare", "faster", "ttft_verdict", "verdict"]

Faster = Literal["split", "merged"]


def compare(
    ttft_split: Sequence[float],
    ttft_merged: Sequence[float],
    itl_split: Sequence[float] = (),
    itl_merged: Sequence[float] = (),
) -> Comparison:
    """The TTFT median ratio and, given both modes' gaps between tokens (ms), the ITL p99 ratio,
    each split/merged with its 95 % bootstrap interval; a ratio the samples cannot give is left out."""
    from kvswitch.probe.stats import percentile, ratio_interval

    comparison: Comparison = {}
    ci = ratio_interval(ttft_split, ttft_merged)
    if ci:
        comparison["ttft_median_ratio"] = _ratio(ci)
    if itl_split and itl_merged and percentile(itl_merged, 99) > 0:
        ci = ratio_interval(itl_split, itl_merged, stat="p99")
        if ci:
            comparison["itl_p99_ratio"] = _ratio(ci)
    return comparison


def _ratio(ci: tuple[float, float, float]) -> Ratio:
    return {"split/merged": ci[0], "ci95": [ci[1], ci[2]]}


def faster(low: float, high: float) -> Faster | None:
    """``split`` when a split/merged interval lies below 1, ``merged`` above, else ``None``."""
    if high < 1:
        return "split"
    if low > 1:
        return "merged"
    return None


@dataclass(frozen=True)
class Verdict:
    """One split/merged ratio read: its value, its 95 % interval, and the faster mode (``None``:
    the interval includes 1, no difference it can show)."""

    ratio: float
    low: float
    high: float
    faster: Faster | None


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def verdict(ratio: Any) -> Verdict | None:
    """The verdict of one ratio (``{"split/merged": r, "ci95": [low, high]}``), or ``None`` where
    any part is missing or not a number (a report read from a file may lack anything)."""
    if not isinstance(ratio, dict):
        return None
    value, ci = ratio.get("split/merged"), ratio.get("ci95")
    if not _number(value) or not isinstance(ci, list) or len(ci) != 2 or not all(_number(x) for x in ci):
        return None
    low, high = float(ci[0]), float(ci[1])
    return Verdict(float(value), low, high, faster(low, high))


def ttft_verdict(report: Report | dict[str, Any]) -> Verdict | None:
    """The verdict of a report's TTFT median ratio, or ``None`` where it has none."""
    comparison = report.get("comparison")
    return verdict(comparison.get("ttft_median_ratio")) if isinstance(comparison, dict) else None
