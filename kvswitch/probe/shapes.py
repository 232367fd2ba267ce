"""The probe report's JSON shape, as TypedDicts: what ``kvswitch probe --format json`` prints, what
the history keeps and what the tray, ``advise`` and the passive probe read.

They type plain dicts (the JSON on disk stays exactly as it was). Every key is optional to the
type checker (``total=False``): a report read back from a file or an older kvswitch may lack any,
so readers of stored reports still check what they get.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["Comparison", "GpuMemory", "ModeReport", "Ratio", "Report", "ReportSettings", "StatSummary"]


class StatSummary(TypedDict, total=False):
    """One figure's summary in milliseconds (:meth:`kvswitch.probe.stats.Summary.as_dict`)."""

    count: int
    min: float | None
    median: float | None
    p90: float | None
    p99: float | None
    mean: float | None


class GpuMemory(TypedDict, total=False):
    """One GPU's memory during a mode's own batches, in MiB."""

    instance: str
    baseline_mib: float | None
    peak_mib: float | None
    delta_mib: float | None


Ratio = TypedDict("Ratio", {"split/merged": float, "ci95": list[float]}, total=False)
"""A split/merged ratio and its 95 % bootstrap interval ``[low, high]``."""


class Comparison(TypedDict, total=False):
    """Split against merged (present only when both modes had successful requests)."""

    ttft_median_ratio: Ratio
    itl_p99_ratio: Ratio


class ModeReport(TypedDict, total=False):
    """One mode's figures. ``gpu_memory`` and ``metrics`` are a string saying why there are none;
    a passive report adds ``routes`` and ``apis`` (the same figures per API)."""

    url: str
    routed_by: str
    key: str
    requests: int
    failures: int
    failure_causes: dict[str, int]
    ttft_ms: StatSummary
    ttfot_ms: StatSummary
    ttfb_ms: StatSummary
    itl_ms: StatSummary
    tpot_ms: StatSummary
    e2e_ms: StatSummary
    connect_ms: StatSummary
    output_tokens: int
    cached_tokens: int | None
    server_prompt_ms: StatSummary
    background_itl_ms: StatSummary
    gpu_memory: dict[str, GpuMemory] | str | None
    metrics: dict[str, float] | str | None
    ttft_samples_ms: list[float]
    routes: dict[str, int]
    apis: dict[str, ModeReport]


class ReportSettings(TypedDict, total=False):
    """What was measured and how (active and passive reports; ``combined_from`` after --combine)."""

    base_url: str | None
    model: str | None
    modes: list[str]
    routing: str
    runs: int | None
    warmup: int | None
    concurrency: int | None
    background: int
    prompt: str
    max_tokens: int
    cache_bust: bool
    key: str
    combined_from: list[str | None]
    passive: bool
    gateway: str
    apis: list[str] | str
    window_s: float | None
    look: str
    requests_per_mode: int | None
    began: str
    ended: str
    seconds: float


class Report(TypedDict, total=False):
    """A probe report (``kvswitch_probe`` version 2)."""

    kvswitch_probe: int
    time: str
    settings: ReportSettings
    cancelled: bool
    routing_verified: bool | None
    gpu_source: str | None
    gpu_unavailable: str | None
    gpu_samples_per_s: float
    gpu_processes: list[dict[str, object]] | None
    gpu_timeline: list[list[object]]
    requests: int
    modes: dict[str, ModeReport]
    comparison: Comparison
    notes: list[str]
