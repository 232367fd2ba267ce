"""A backend's Prometheus ``/metrics``, scraped before and after each mode (D-9).

Preallocating engines (vLLM, SGLang) show flat GPU memory whatever the mode; their KV-cache
usage and prefix-cache hits are in ``/metrics`` instead, and the split path has its own
counters (vLLM's NIXL transfers). Names changed across versions; each entry below lists the
names seen in the wild (reference notes on engines, §1.6, §2.5; llama.cpp's ``llamacpp:``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kvswitch.i18n import tr

__all__ = ["INTERESTING", "MetricsSnapshot", "metrics_url", "parse_metrics", "scrape"]

INTERESTING: dict[str, tuple[str, ...]] = {
    "kv_cache_usage": (
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "sglang:token_usage",
        "llamacpp:kv_cache_usage_ratio",
    ),
    "prefix_cache_hits": (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_hits",
        "vllm:gpu_prefix_cache_hits_total",
        "llamacpp:prompt_tokens_cached_total",
    ),
    # llama.cpp has no "queries" series: its prompt_tokens_total counts only what was prefilled
    "prefix_cache_queries": (
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_queries",
        "vllm:gpu_prefix_cache_queries_total",
    ),
    "sglang_cache_hit_rate": ("sglang:cache_hit_rate",),
    "split_transfers": (
        "vllm:nixl_xfer_time_seconds_count",
        "vllm:nixl_num_transfers_total",
        "sglang:kv_transfer_total",
        "kvswitch_lab:kv_handoffs_total",
    ),
    "prompt_tokens": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "llamacpp:prompt_tokens_total"),
    "generation_tokens": (
        "vllm:generation_tokens_total",
        "sglang:generation_tokens_total",
        "llamacpp:tokens_predicted_total",
    ),
    "requests_running": ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"),
}
"""Report name → the metric names engines use for it (first found wins)."""

_GAUGES = frozenset({"kv_cache_usage", "sglang_cache_hit_rate", "requests_running"})

MAX_METRICS_BYTES = 16 * 1024 * 1024
"""The most bytes of one ``/metrics`` answer that are read (vLLM's is tens of kilobytes)."""


def metrics_url(base_url: str) -> str:
    """``/metrics`` at the server's root: ``http://h:8000/v1`` → ``http://h:8000/metrics``."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "/metrics", "", ""))


@dataclass
class MetricsSnapshot:
    """Flat ``name{labels}`` → value of one scrape, or why there is none."""

    values: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def pick(self, report_name: str) -> float | None:
        """The first metric name the engine has for ``report_name``, over its label sets:
        counters summed, usage-like gauges by their largest value (two engines at 25 % and
        50 % are not at 75 %)."""
        for name in INTERESTING[report_name]:
            found = [v for k, v in self.values.items() if k == name or k.startswith(name + "{")]
            if found:
                return max(found) if report_name in _GAUGES else sum(found)
        return None


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text → ``name{labels}`` → value (prometheus_client's own parser); NaN and
    infinite samples are left out (they are no count and not JSON)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            value = float(sample.value)
            if math.isfinite(value):
                out[f"{sample.name}{{{labels}}}" if labels else sample.name] = value
    return out


async def scrape(client: Any, base_url: str, headers: dict[str, str], timeout: float = 5.0) -> MetricsSnapshot:
    """Scrape ``/metrics`` of the server behind ``base_url`` (never raises)."""
    import asyncio

    import httpx

    from kvswitch.network import read_capped

    url = metrics_url(base_url)
    body: bytes | None = b""
    try:
        async with asyncio.timeout(timeout * 2):  # an answer that trickles forever ends too
            async with client.stream("GET", url, headers=headers, timeout=timeout) as response:
                if response.status_code != 200:
                    return MetricsSnapshot(error=f"{url}: HTTP {response.status_code}")
                body = await read_capped(response, MAX_METRICS_BYTES)
                if body is None:
                    return MetricsSnapshot(
                        error=tr("{url}: over {mib} MiB").format(url=url, mib=MAX_METRICS_BYTES // (1024 * 1024))
                    )
    except TimeoutError:
        return MetricsSnapshot(
            error=tr("{url}: no complete answer within {seconds} s").format(url=url, seconds=f"{timeout * 2:g}")
        )
    except httpx.HTTPError as exc:
        return MetricsSnapshot(error=f"{url}: {type(exc).__name__}")
    try:
        return MetricsSnapshot(parse_metrics((body or b"").decode("utf-8", "replace")))
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        return MetricsSnapshot(error=tr("{url}: not Prometheus text ({reason})").format(url=url, reason=str(exc)[:200]))


def deltas(before: MetricsSnapshot, after: MetricsSnapshot) -> dict[str, float | None]:
    """Counters: after − before; gauges (usage, running): the value after."""
    out: dict[str, float | None] = {}
    for name in INTERESTING:
        a, b = before.pick(name), after.pick(name)
        if name in _GAUGES:
            out[name] = b
        else:
            out[name] = (b - a) if a is not None and b is not None else None
    if (
        out["prefix_cache_queries"] is None
        and after.pick("prefix_cache_hits") is not None
        and any(k.startswith("llamacpp:prompt_tokens_total") for k in after.values)
    ):
        # llama.cpp counts prefilled and cached prompt tokens apart: the queries are both
        hits, prefilled = out["prefix_cache_hits"], out["prompt_tokens"]
        out["prefix_cache_queries"] = hits + prefilled if hits is not None and prefilled is not None else None
    return out
