"""Summary statistics the probe reports, and the bootstrap interval of a ratio of medians."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "percentile", "ratio_interval", "summarize"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0…100) with linear interpolation (numpy's default)."""
    if not values:
        raise ValueError("no values")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """count, min, median, p90, p99, mean (seconds); ``None`` fields when there is no data."""

    count: int
    min: float | None = None
    median: float | None = None
    p90: float | None = None
    p99: float | None = None
    mean: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "min": self.min,
            "median": self.median,
            "p90": self.p90,
            "p99": self.p99,
            "mean": self.mean,
        }


def summarize(values: Sequence[float]) -> Summary:
    """The summary of ``values`` (an empty one when there are none)."""
    if not values:
        return Summary(0)
    return Summary(
        len(values),
        min(values),
        statistics.median(values),
        percentile(values, 90),
        percentile(values, 99),
        statistics.fmean(values),
    )


def ratio_interval(
    num: Sequence[float],
    den: Sequence[float],
    *,
    stat: str = "median",
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 20261202,
) -> tuple[float, float, float] | None:
    """``stat(num) / stat(den)`` and its percentile-bootstrap interval (both samples resampled
    independently, seeded so a report can be reproduced); ``None`` when either is empty."""
    if not num or not den:
        return None

    def value(xs: Sequence[float]) -> float:
        return statistics.median(xs) if stat == "median" else percentile(xs, 99)

    base = value(den)
    if base <= 0:
        return None
    point = value(num) / base
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        a = [num[rng.randrange(len(num))] for _ in num]
        b = [den[rng.randrange(len(den))] for _ in den]
        vb = value(b)
        if vb > 0:
            ratios.append(value(a) / vb)
    if not ratios:
        return None
    alpha = (1 - confidence) / 2 * 100
    return point, percentile(ratios, alpha), percentile(ratios, 100 - alpha)
