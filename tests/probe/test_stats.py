"""Percentiles, summaries and the bootstrap interval of a ratio (kvswitch.probe.stats)."""

from __future__ import annotations

import random

import pytest

from kvswitch.probe.stats import Summary, percentile, ratio_interval, summarize

# numpy.percentile(v, q) (linear interpolation) worked out by hand:
# position = (n - 1) * q / 100 in the sorted values, interpolated between its neighbours.
KNOWN = [
    ([1, 2, 3, 4], 0, 1.0),
    ([1, 2, 3, 4], 25, 1.75),  # pos 0.75
    ([1, 2, 3, 4], 50, 2.5),  # pos 1.5
    ([1, 2, 3, 4], 90, 3.7),  # pos 2.7
    ([1, 2, 3, 4], 100, 4.0),
    ([4, 1, 3, 2], 50, 2.5),  # order does not matter
    ([7], 0, 7.0),
    ([7], 99, 7.0),
    ([10, 20], 10, 11.0),  # pos 0.1
    ([3, 1, 2], 50, 2.0),
    (list(range(1, 11)), 90, 9.1),  # pos 8.1
    (list(range(1, 11)), 99, 9.91),  # pos 8.91
    (list(range(1, 11)), 50, 5.5),
    ([5, 5, 5, 100], 75, 28.75),  # pos 2.25: 5 + 0.25 * 95
    ([0.1, 0.4, 0.2, 0.3, 0.5], 99, 0.496),  # pos 3.96: 0.4 + 0.96 * 0.1
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], 99, 19.81),  # p99 of 20 ≈ the max
]


@pytest.mark.parametrize(("values", "q", "expected"), KNOWN)
def test_percentile_linear_interpolation(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected, abs=1e-12)


def test_percentile_of_nothing_raises() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


def test_percentile_does_not_sort_the_input_in_place() -> None:
    values = [3.0, 1.0, 2.0]
    percentile(values, 50)
    assert values == [3.0, 1.0, 2.0]


def test_summarize_empty_one_many() -> None:
    assert summarize([]) == Summary(0)
    assert summarize([]).as_dict() == {"count": 0, "min": None, "median": None, "p90": None, "p99": None, "mean": None}
    assert summarize([0.25]) == Summary(1, 0.25, 0.25, 0.25, 0.25, 0.25)
    s = summarize([4.0, 1.0, 3.0, 2.0])
    assert (s.count, s.min, s.median, s.mean) == (4, 1.0, 2.5, 2.5)
    assert s.p90 == pytest.approx(3.7) and s.p99 == pytest.approx(3.97)
    s = summarize(list(range(1, 11)))
    assert s.median == 5.5 and s.p90 == pytest.approx(9.1) and s.p99 == pytest.approx(9.91) and s.mean == 5.5


def test_ratio_interval_point_is_the_ratio_of_medians() -> None:
    result = ratio_interval([2.0, 4.0, 6.0, 100.0, 5.0], [1.0, 2.0, 3.0])
    assert result is not None
    point, lo, hi = result
    assert point == pytest.approx(5.0 / 2.0)
    assert lo <= point <= hi


def _samples(rng: random.Random, n: int, mu: float) -> list[float]:
    return [max(0.001, rng.gauss(mu, mu * 0.2)) for _ in range(n)]


def test_ratio_interval_contains_the_point_and_the_truth() -> None:
    rng = random.Random(7)
    num, den = _samples(rng, 60, 200.0), _samples(rng, 60, 100.0)
    point, lo, hi = ratio_interval(num, den)  # type: ignore[misc]
    assert lo < point < hi
    assert lo < 2.0 < hi
    assert 1.7 < point < 2.3


def test_ratio_interval_is_deterministic_for_a_seed() -> None:
    rng = random.Random(3)
    num, den = _samples(rng, 15, 2.0), _samples(rng, 15, 1.0)
    assert ratio_interval(num, den) == ratio_interval(num, den)
    assert ratio_interval(num, den, seed=5) == ratio_interval(list(num), list(den), seed=5)
    assert ratio_interval(num, den, seed=5) != ratio_interval(num, den, seed=6)
    assert ratio_interval(num, den, seed=5)[0] == ratio_interval(num, den, seed=6)[0]  # type: ignore[index]


def test_ratio_interval_narrows_with_more_samples() -> None:
    rng = random.Random(11)
    widths = []
    for n in (8, 40, 200):
        _, lo, hi = ratio_interval(_samples(rng, n, 150.0), _samples(rng, n, 100.0), resamples=1000)  # type: ignore[misc]
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2] > 0


def test_ratio_interval_p99_and_confidence() -> None:
    rng = random.Random(5)
    num, den = _samples(rng, 50, 30.0), _samples(rng, 50, 10.0)
    point, lo, hi = ratio_interval(num, den, stat="p99")  # type: ignore[misc]
    assert point == pytest.approx(percentile(num, 99) / percentile(den, 99))
    assert lo <= point <= hi
    _, lo80, hi80 = ratio_interval(num, den, confidence=0.8)  # type: ignore[misc]
    _, lo95, hi95 = ratio_interval(num, den, confidence=0.95)  # type: ignore[misc]
    assert lo95 <= lo80 and hi80 <= hi95


def test_ratio_interval_none_on_empty_or_zero() -> None:
    assert ratio_interval([], [1.0]) is None
    assert ratio_interval([1.0], []) is None
    assert ratio_interval([], []) is None
    assert ratio_interval([1.0, 2.0], [0.0, 0.0, 0.0]) is None


def test_ratio_interval_of_single_samples() -> None:
    assert ratio_interval([3.0], [1.5]) == (2.0, 2.0, 2.0)


def test_ratio_interval_never_raises_when_resamples_all_have_a_zero_denominator() -> None:
    # den's median is 1, but seed 2's only resample draws two of its zeros: no ratio to take
    assert ratio_interval([1.0], [0.0, 1.0, 1.0], resamples=1, seed=2) is None
