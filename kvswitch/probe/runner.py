"""Running a probe: modes interleaved, warm-up, concurrency, background decode load, GPU
memory and ``/metrics`` around every batch (D-9)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from kvswitch.addresses import is_loopback_url
from kvswitch.i18n import tr
from kvswitch.key_scope import KeyScope, Origin
from kvswitch.probe.client import RequestResult, chat_body, stream_chat
from kvswitch.probe.gpu import GpuSampler
from kvswitch.probe.metrics import MetricsSnapshot, deltas, scrape
from kvswitch.prompts import PROBE_WORDS, filler
from kvswitch.urls import chat_url  # re-exported: the probe's API

__all__ = [
    "ARTICLE_PROMPT",
    "ProbeSettings",
    "Route",
    "chat_url",
    "estimate",
    "make_prompt",
    "resolve_routes",
    "run_probe",
]

ARTICLE_PROMPT = "请用 200 字解释 Transformer 中 KV Cache 的作用。" * 8
"""The source article's long prompt: one question repeated 8 times (S-21)."""

_WORDS = PROBE_WORDS  # the prompt vocabulary lives in kvswitch.prompts

Routing = Literal["auto", "header", "endpoint", "switch"]


@dataclass
class ProbeSettings:
    """What to measure and how. ``api_key`` is sent only to ``key_origins`` (the origins the
    profile names; by default the origin of ``base_url`` alone), never to another endpoint, and
    masked in every report."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    key_origins: frozenset[Origin] | None = None
    modes: Sequence[str] = ("merged", "split")
    routing: Routing = "auto"
    endpoints: dict[str, str] = field(default_factory=dict)
    url_convention: str | None = None
    runs: int = 10
    warmup: int = 2
    prompt_tokens: int = 256
    article_prompt: bool = False
    max_tokens: int = 128
    cache_bust: bool = True
    concurrency: int = 1
    background: int = 0
    background_max_tokens: int = 512
    stall_timeout: float = 30.0
    request_timeout: float = 300.0
    gpu: bool = True
    gpu_prefixes: dict[str, list[str]] = field(default_factory=lambda: {"local": []})
    gpu_interval_ms: int = 100
    smi: str = "nvidia-smi"
    metrics: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class Route:
    """Where one mode's requests go and how the mode is selected."""

    mode: str
    url: str  # the chat completions URL
    base_url: str
    headers: dict[str, str] = field(repr=False)
    how: str  # "header X-Cache-Mode", "endpoint", "client switch"
    key: str = "none"  # "sent", "none", or why the key was withheld


def key_scope(s: ProbeSettings) -> KeyScope:
    """Where the probe's key may go: ``s.key_origins``, else the origin of ``s.base_url``."""
    if s.key_origins is not None:
        return KeyScope(s.api_key or None, s.key_origins)
    return KeyScope.of(s.api_key, [s.base_url])


def redactor(s: ProbeSettings) -> Any:
    """The :class:`~kvswitch.redact.Redactor` of every key the run knows."""
    from kvswitch.redact import Redactor

    return Redactor([s.api_key])


def resolve_routes(s: ProbeSettings) -> dict[str, Route]:
    """Per-mode endpoints where given, else the ``X-Cache-Mode`` header on the one base URL
    (D-9); ``switch`` routing flips the registered clients before each mode's runs."""
    scope = key_scope(s)
    routes = {}
    for mode in s.modes:
        endpoint = s.endpoints.get(mode)
        routing = s.routing
        switched = routing == "switch"  # the clients are flipped first; requests still need a route
        if routing in ("auto", "switch"):
            routing = "endpoint" if endpoint else "header"
        base = endpoint if routing == "endpoint" and endpoint else s.base_url
        url = chat_url(base, s.url_convention)
        headers = scope.headers(url)
        key = "sent" if headers else scope.withheld(url) or "none"
        how = tr("per-mode endpoint")
        if routing == "header":
            headers["X-Cache-Mode"] = mode
            how = tr("X-Cache-Mode header (experimental: only some endpoints honour it)")
        if switched:
            how = tr("client config switched first, then {route}").format(route=how)
        routes[mode] = Route(mode, url, base, headers, how, key)
    return routes


def make_prompt(s: ProbeSettings, nonce: str | None) -> str:
    """The prompt: the article's (S-21) or about ``prompt_tokens`` words; a cache-busting
    nonce goes at the very start, where prefix caches match (S-28)."""
    body = ARTICLE_PROMPT if s.article_prompt else filler(s.prompt_tokens, s.seed)
    return f"[{nonce}] {body}" if nonce else body


def estimate(s: ProbeSettings) -> tuple[int, int, list[str]]:
    """(requests, tokens at most, hosts that are not loopback) a probe would spend."""
    per_mode = s.warmup + s.runs * s.concurrency
    prompt = len(ARTICLE_PROMPT) if s.article_prompt else s.prompt_tokens  # ≈ one token per CJK character
    requests = per_mode * len(s.modes) + s.background * s.runs * len(s.modes)
    tokens = per_mode * len(s.modes) * (prompt + s.max_tokens) + s.background * s.runs * len(s.modes) * (
        prompt + s.background_max_tokens
    )
    routes = resolve_routes(s)
    remote = sorted({urlsplit(r.url).hostname or "" for r in routes.values() if not is_loopback_url(r.url)})
    return requests, tokens, remote


Progress = Callable[[int, int, str], None]


async def run_probe(
    s: ProbeSettings,
    *,
    progress: Progress | None = None,
    cancel: Any = None,
    switcher: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the probe; returns the raw material of a report (see :mod:`kvswitch.probe.report`).

    ``cancel`` is anything with ``is_set()``; ``switcher(mode)`` flips the client configs for
    ``switch`` routing."""
    import httpx

    routes = resolve_routes(s)
    limits = httpx.Limits(
        max_connections=max(4, (s.concurrency + s.background) * 2),
        max_keepalive_connections=max(4, (s.concurrency + s.background) * 2),
    )
    gpu = GpuSampler(interval_ms=s.gpu_interval_ms, prefixes=s.gpu_prefixes, smi=s.smi)
    if s.gpu:
        gpu.start()
    else:
        gpu.unavailable = tr("GPU sampling turned off")
    results: list[RequestResult] = []
    windows: dict[str, list[tuple[float, float]]] = {m: [] for m in s.modes}
    scraped: dict[str, list[tuple[MetricsSnapshot, MetricsSnapshot]]] = {m: [] for m in s.modes}
    background_itl: dict[str, list[float]] = {m: [] for m in s.modes}
    total = (s.warmup + s.runs * s.concurrency) * len(s.modes)
    done = 0
    cancelled = False

    def tick(mode: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, mode)

    from kvswitch.probe.transport import StampedTransport

    transport = StampedTransport()
    redact = redactor(s)
    async with httpx.AsyncClient(transport=transport, limits=limits, timeout=None, trust_env=False) as client:
        await asyncio.sleep(0.3 if s.gpu and not gpu.unavailable else 0)
        t_baseline = time.perf_counter()

        async def one(mode: str, *, background: bool = False, on_token: Any = None) -> RequestResult:
            route = routes[mode]
            nonce = uuid.uuid4().hex[:12] if s.cache_bust else None
            body = chat_body(
                s.model,
                make_prompt(s, nonce),
                s.background_max_tokens if background else s.max_tokens,
                extra=s.extra_body,
            )
            return await stream_chat(
                client,
                route.url,
                body,
                route.headers,
                mode=mode,
                background=background,
                stall_timeout=s.stall_timeout,
                total_timeout=s.request_timeout,
                on_token=on_token,
                redact=redact.text,
            )

        async def batch(mode: str, record: bool) -> None:
            started = asyncio.Event()
            bg_tasks = []
            for _ in range(s.background if record else 0):
                task = asyncio.create_task(
                    one(mode, background=True, on_token=_itl_sink(background_itl[mode], started))
                )
                task.add_done_callback(lambda _t: started.set())  # a background stream that fails at once
                bg_tasks.append(task)
            if bg_tasks:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(started.wait(), timeout=s.stall_timeout)
            before = await _scrape(client, routes[mode], s) if record else None
            t_start = time.perf_counter()
            outs = await _unless_cancelled(
                asyncio.gather(*(one(mode) for _ in range(s.concurrency if record else 1))), cancel, bg_tasks
            )
            t_end = time.perf_counter()
            for task in bg_tasks:
                task.cancel()
            await asyncio.gather(*bg_tasks, return_exceptions=True)
            if record:
                after = await _scrape(client, routes[mode], s)
                assert before is not None
                scraped[mode].append((before, after))
                windows[mode].append((t_start, t_end))
                results.extend(outs)
            for _ in outs:
                tick(mode)

        try:
            for _ in range(s.warmup):
                for mode in s.modes:
                    if _is_set(cancel):
                        raise asyncio.CancelledError
                    if switcher is not None and s.routing == "switch":
                        switcher(mode)
                    await batch(mode, record=False)
            blocks = s.routing == "switch"
            order = (
                [(m, i) for m in s.modes for i in range(s.runs)]
                if blocks
                else [(m, i) for i in range(s.runs) for m in _rotate(s.modes, i)]
            )
            current = None
            for mode, _ in order:
                if _is_set(cancel):
                    raise asyncio.CancelledError
                if blocks and mode != current and switcher is not None:
                    switcher(mode)
                    current = mode
                await batch(mode, record=True)
        except asyncio.CancelledError:
            cancelled = True
        finally:
            gpu.stop()
    processes: dict[str, Any] = {}
    if gpu.source == "nvidia-smi":
        from kvswitch.probe.gpu import per_process

        for instance, prefix in s.gpu_prefixes.items():
            processes[instance] = per_process(s.smi, prefix)

    return {
        "settings": s,
        "routes": routes,
        "results": results,
        "windows": windows,
        "scraped": scraped,
        "background_itl": background_itl,
        "gpu": gpu,
        "baseline_until": t_baseline,
        "cancelled": cancelled,
        "gpu_processes": processes,
    }


async def _unless_cancelled(work: Any, cancel: Any, also: list[asyncio.Task[Any]]) -> Any:
    """Await ``work``; if ``cancel`` is set meanwhile (checked every 0.1 s), stop it and the
    ``also`` tasks at once — a stalled server must not hold a Cancel for the stall timeout."""
    task = asyncio.ensure_future(work)
    while not task.done():
        await asyncio.wait({task}, timeout=0.1)
        if not task.done() and _is_set(cancel):
            task.cancel()
            for t in also:
                t.cancel()
            await asyncio.gather(task, *also, return_exceptions=True)
            raise asyncio.CancelledError
    return task.result()


def _rotate(modes: Sequence[str], i: int) -> list[str]:
    """The modes starting at a different one each run, so neither always goes first."""
    k = i % len(modes)
    return [*modes[k:], *modes[:k]]


def _is_set(cancel: Any) -> bool:
    return bool(cancel is not None and cancel.is_set())


def _itl_sink(sink: list[float], started: asyncio.Event) -> Callable[[float, float | None], None]:
    def on_token(at: float, gap: float | None) -> None:
        started.set()
        if gap is not None:
            sink.append(gap)

    return on_token


async def _scrape(client: Any, route: Route, s: ProbeSettings) -> MetricsSnapshot:
    if not s.metrics:
        return MetricsSnapshot(error=tr("metrics turned off"))
    headers = {k: v for k, v in route.headers.items() if k == "Authorization"}
    return await scrape(client, route.base_url, headers)


def metric_deltas(pairs: list[tuple[MetricsSnapshot, MetricsSnapshot]]) -> dict[str, float] | str:
    """Counters summed over a mode's batches (gauges: the last value), or why none."""
    if not pairs:
        return tr("no batches")
    errors = [b.error or a.error for b, a in pairs if b.error or a.error]
    if errors and len(errors) == len(pairs):
        return tr("n/a: {reason}").format(reason=errors[0])
    total: dict[str, float | None] = {}
    for before, after in pairs:
        if before.error or after.error:
            continue
        for name, value in deltas(before, after).items():
            if value is None:
                total.setdefault(name, None)
            elif name in ("kv_cache_usage", "requests_running", "sglang_cache_hit_rate"):
                total[name] = value
            else:
                total[name] = (total.get(name) or 0.0) + value
    known = {k: v for k, v in total.items() if v is not None}
    none_known = tr("the backend's /metrics has none of the series kvswitch knows")
    return known or tr("n/a: {reason}").format(reason=none_known)
