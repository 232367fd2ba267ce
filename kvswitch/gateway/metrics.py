"""The gateway's Prometheus metrics (one registry per gateway; histograms on vLLM's edges)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = [
    "E2E_BUCKETS",
    "ITL_BUCKETS",
    "OUTCOMES",
    "OVERHEAD_BUCKETS",
    "TTFT_BUCKETS",
    "GatewayMetrics",
]

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
"""vLLM's ``vllm:time_to_first_token_seconds`` bucket edges."""
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
"""vLLM's ``vllm:inter_token_latency_seconds`` bucket edges."""
E2E_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
"""vLLM's ``vllm:e2e_request_latency_seconds`` bucket edges."""
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
"""The gateway's own time per request: finer, it is meant to be well under a millisecond."""

OUTCOMES = ("ok", "client_disconnect", "upstream_error", "inband_error", "timeout")
"""How a stream ended: ``ok``; the client went away; the upstream broke it; the upstream
said error inside a 200 stream; a timeout (no first byte, a silent upstream, a reader too slow)."""

PREFIX = "kvswitch_gateway"


class GatewayMetrics:
    """The families, registered on a registry of their own."""

    def __init__(self) -> None:
        from prometheus_client import (
            CollectorRegistry,
            Counter,
            Gauge,
            Histogram,
            disable_created_metrics,
        )

        disable_created_metrics()  # type: ignore[no-untyped-call]  # the *_created series double the text and say nothing here

        self.registry: CollectorRegistry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            f"{PREFIX}_requests",
            "Requests by mode served, how the mode was chosen, API and HTTP status.",
            ("mode", "route", "api", "code"),
            registry=r,
        )
        self.outcomes = Counter(
            f"{PREFIX}_stream_outcome", "How each streamed answer ended.", ("mode", "api", "outcome"), registry=r
        )
        self.ttft = Histogram(
            f"{PREFIX}_time_to_first_token_seconds",
            "Request received to the first token-bearing event sent on, by mode and API.",
            ("mode", "api"),
            buckets=TTFT_BUCKETS,
            registry=r,
        )
        self.itl = Histogram(
            f"{PREFIX}_inter_token_latency_seconds",
            "Gaps between token events, by mode and API.",
            ("mode", "api"),
            buckets=ITL_BUCKETS,
            registry=r,
        )
        self.e2e = Histogram(
            f"{PREFIX}_e2e_request_latency_seconds",
            "Request received to the answer's end, by mode and API.",
            ("mode", "api"),
            buckets=E2E_BUCKETS,
            registry=r,
        )
        self.overhead = Histogram(
            f"{PREFIX}_overhead_seconds",
            "The gateway's own time: request received to the upstream request sent.",
            ("mode", "api"),
            buckets=OVERHEAD_BUCKETS,
            registry=r,
        )
        self.decisions = Counter(
            f"{PREFIX}_mode_decisions",
            "How each request's mode was decided: the route asked for "
            "(merged, split or auto), the mode served, and why (path, header, default, or the auto "
            "route's reason).",
            ("requested", "served", "reason"),
            registry=r,
        )
        self.in_flight = Gauge(
            f"{PREFIX}_requests_in_flight", "Requests being served now, by mode.", ("mode",), registry=r
        )
        self.upstream_up = Gauge(
            f"{PREFIX}_upstream_up",
            "Whether each mode's upstream answered its last request or check (1) or not (0).",
            ("mode",),
            registry=r,
        )
        self.mode = Gauge(
            f"{PREFIX}_mode", "1 for the mode requests without a path prefix or header get.", ("mode",), registry=r
        )
        for m in ("merged", "split"):
            self.in_flight.labels(m).set(0)

    def set_mode(self, mode: str) -> None:
        for m in ("merged", "split"):
            self.mode.labels(m).set(1 if m == mode else 0)

    def text(self) -> bytes:
        """The Prometheus text exposition."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)
