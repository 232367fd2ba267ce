"""kvswitch's probe against a real llama.cpp server (the session's ``llama`` fixture)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import statistics
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kvswitch.lab.llama import LlamaServer
from kvswitch.probe.client import RequestResult
from kvswitch.probe.metrics import deltas, scrape
from kvswitch.probe.report import TTFT_DEFINITION, build_report
from kvswitch.probe.runner import ProbeSettings, make_prompt, run_probe
from kvswitch.probe.transport import StampedTransport
from tests.lab import support
from tests.lab.support import (
    BUSTED,
    MODEL_NAME,
    astream,
    fresh_client,
    median_ms,
    nonce,
    ok,
    streams,
)

LENGTHS = (32, 256, 1024)
REPS = 7

# TTFT − server prompt_ms must lie in [−1 ms, 30 ms + 20 % of prompt_ms] at the median of each
# prompt length. Measured on a 2-core box (client on the same cores), idle or beside one or two
# busy loops, threads 1 or 2: medians 2–12 ms at ≈60, ≈280 and ≈1050 prompt tokens (one run
# 25 ms at ≈1050 tokens), with prompt_ms up to 1.6 s under contention.
SLACK_MS = 30.0
SLACK_FRACTION = 0.20


def test_stream_through_the_probe_client(llama: LlamaServer) -> None:
    """One stream, timed by kvswitch's client: TTFT at the first content delta, the role-only
    first chunk (``content: null``) not counted, output tokens from ``usage``, ``[DONE]`` seen,
    llama.cpp's ``timings.prompt_ms`` read into ``server_prompt_ms``."""
    prompt = f"[{nonce()}] " + support.words(64, 1)
    (r,) = ok(streams(llama.url, [prompt], max_tokens=16, extra=BUSTED))
    assert r.status == 200 and r.done
    assert r.output_tokens == 16 and r.token_events == 16  # one token = one chunk; the role chunk is not one
    assert r.prompt_tokens is not None and r.prompt_tokens >= 64
    assert r.cached_tokens is not None and r.cached_tokens <= r.prompt_tokens
    assert r.server_prompt_ms is not None and r.server_prompt_ms > 0
    assert r.ttft is not None and r.ttfot == r.ttft
    assert r.first_event is not None and r.ttfb is not None and r.ttfb <= r.first_event <= r.ttft
    assert r.e2e is not None and r.e2e > r.ttft and len(r.itl) == 15
    assert r.tpot is not None and r.tpot > 0


def test_first_chunk_is_role_only_and_sent_with_the_first_token(llama: LlamaServer) -> None:
    """What the probe relies on, seen on the wire: llama.cpp's first event is
    ``delta: {role: assistant, content: null}``, then one event per token, a finish event,
    a ``choices: []`` usage event with ``timings``, and ``data: [DONE]``."""
    body = {
        "model": MODEL_NAME,
        "messages": [{"role": "user", "content": support.words(16, 2)}],
        "max_tokens": 4,
        "stream": True,
        "stream_options": {"include_usage": True},
        **BUSTED,
    }
    events: list[Any] = []
    with (
        httpx.Client(trust_env=False, timeout=30) as client,
        client.stream("POST", f"{llama.url}/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data:"):
                data = line[5:].strip()
                events.append(data if data == "[DONE]" else json.loads(data))
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    contents = [e["choices"][0]["delta"].get("content") for e in events[1:5]]
    assert all(isinstance(c, str) and c for c in contents)
    assert events[5]["choices"][0]["finish_reason"] == "length"
    assert events[6]["choices"] == [] and events[6]["usage"]["completion_tokens"] == 4
    assert events[6]["timings"]["prompt_ms"] > 0
    assert events[7] == "[DONE]" and len(events) == 8


@pytest.fixture(scope="module")
def sweep(llama: LlamaServer) -> dict[int, list[RequestResult]]:
    """REPS requests per prompt length, lengths interleaved, after a warm-up; each prompt starts
    with a nonce and sends ``cache_prompt: false``, so every token is prefilled."""
    streams(llama.url, [support.words(64, 3), support.words(512, 4)], max_tokens=4, extra=BUSTED)  # warm-up
    out: dict[int, list[RequestResult]] = {n: [] for n in LENGTHS}

    async def run() -> None:
        async with fresh_client() as client:
            for rep in range(REPS):
                for n in LENGTHS:
                    prompt = f"[{nonce()}] " + support.words(n, 100 * n + rep)
                    out[n].append(await astream(client, llama.url, prompt, max_tokens=4, extra=BUSTED))

    asyncio.run(run())
    for results in out.values():
        ok(results)
    return out


def test_ttft_grows_with_prompt_length(sweep: dict[int, list[RequestResult]]) -> None:
    """Median TTFT over 7 cache-busted requests is strictly increasing over 32, 256 and 1024
    prompt words (one token each); the prompt token counts grow with them."""
    medians = [median_ms([r.ttft for r in sweep[n]]) for n in LENGTHS]
    tokens = [sweep[n][0].prompt_tokens or 0 for n in LENGTHS]
    assert tokens[0] < tokens[1] < tokens[2] and tokens[2] >= 1024, tokens
    assert medians[0] < medians[1] < medians[2], dict(zip(LENGTHS, medians, strict=True))
    # prefill is the bulk of TTFT here: 4× the words costs clearly more than the fixed overhead
    assert medians[2] > 2 * medians[1], medians


def test_ttft_agrees_with_the_servers_prompt_ms(sweep: dict[int, list[RequestResult]]) -> None:
    """The client's TTFT against llama.cpp's own ``timings.prompt_ms`` (prefill time).

    Tolerance: for every prompt length, the median over 7 requests of TTFT − prompt_ms lies
    in [−1 ms, 30 ms + 20 % × prompt_ms]. TTFT also covers sending, tokenizing, templating,
    sampling the first token and reading it, so it is never below prompt_ms (−1 ms for
    rounding); on a 2-core box the measured medians were 2–25 ms."""
    for n in LENGTHS:
        diffs = [(r.ttft or 0) * 1000 - (r.server_prompt_ms or 0) for r in sweep[n]]
        prompt_ms = statistics.median(r.server_prompt_ms or 0 for r in sweep[n])
        diff = statistics.median(diffs)
        assert -1.0 <= diff <= SLACK_MS + SLACK_FRACTION * prompt_ms, (n, prompt_ms, diffs)
        assert all(d >= -1.0 for d in diffs), (n, diffs)  # the first token cannot precede its prefill


def test_metrics_are_scraped_and_count_a_batch(llama: LlamaServer) -> None:
    """``/metrics`` (Prometheus text) has ``llamacpp:*`` series, and the deltas kvswitch takes
    around a batch count its prompt and generated tokens."""
    prompts = [f"[{nonce()}] " + support.words(100, 10 + i) for i in range(3)]

    async def run() -> tuple[Any, Any, list[RequestResult]]:
        async with fresh_client() as client:
            before = await scrape(client, llama.url + "/v1", {})
            results = [await astream(client, llama.url, p, max_tokens=8, extra=BUSTED) for p in prompts]
            after = await scrape(client, llama.url + "/v1", {})
            return before, after, results

    before, after, results = asyncio.run(run())
    ok(results)
    assert before.error is None and after.error is None, (before.error, after.error)
    names = {k.split("{", 1)[0] for k in after.values}
    assert {
        "llamacpp:prompt_tokens_total",
        "llamacpp:tokens_predicted_total",
        "llamacpp:requests_processing",
    } <= names, sorted(names)
    d = deltas(before, after)
    prefilled = sum((r.prompt_tokens or 0) - (r.cached_tokens or 0) for r in results)
    assert d["generation_tokens"] == sum(r.output_tokens or 0 for r in results) == 24
    assert d["prompt_tokens"] == prefilled > 300, (d, prefilled)  # cache_prompt false: all prefilled
    assert d["requests_running"] == 0


def test_prefix_cache_hits_never_exceed_queries(llama: LlamaServer) -> None:
    prompt = support.words(300, 30)

    async def run() -> tuple[Any, Any]:
        async with fresh_client() as client:
            ok([await astream(client, llama.url, prompt, max_tokens=2)])  # fills the cache
            before = await scrape(client, llama.url, {})
            ok([await astream(client, llama.url, prompt, max_tokens=2) for _ in range(3)])
            return before, await scrape(client, llama.url, {})

    before, after = asyncio.run(run())
    d = deltas(before, after)
    assert d["prefix_cache_hits"] is not None and d["prefix_cache_hits"] > 800
    assert d["prefix_cache_queries"] is not None and d["prefix_cache_hits"] <= d["prefix_cache_queries"], d


def test_prefix_reuse_shows_without_cache_busting(llama: LlamaServer) -> None:
    """With llama.cpp's prefix cache on (its default), a repeated identical prompt is served
    from the cache: ``cached_tokens`` ≈ the whole prompt and a far lower TTFT. The probe's
    cache-busting nonce at the start of the prompt defeats it: only the chat template's first
    few tokens can match."""
    settings = ProbeSettings(base_url=llama.url, model=MODEL_NAME, prompt_tokens=512, seed=7)
    same = make_prompt(settings, None)
    extra = {"ignore_eos": True}
    repeated = ok(streams(llama.url, [same] * 6, max_tokens=4, extra=extra))[1:]  # the first fills the cache
    busted = ok(streams(llama.url, [make_prompt(settings, nonce()) for _ in range(5)], max_tokens=4, extra=extra))
    n_prompt = repeated[0].prompt_tokens or 0
    assert n_prompt >= 500
    for r in repeated:
        assert r.cached_tokens is not None and r.cached_tokens >= 0.9 * n_prompt, (r.cached_tokens, n_prompt)
    for r in busted:
        assert r.cached_tokens is not None and r.cached_tokens <= 16, r.cached_tokens
        assert r.cached_tokens < 0.05 * (r.prompt_tokens or 0)
    assert median_ms([r.ttft for r in repeated]) < 0.5 * median_ms([r.ttft for r in busted])


def test_run_probe_end_to_end(llama: LlamaServer) -> None:
    """``run_probe`` with the one mode a plain llama.cpp server has: a full report, no failure."""
    settings = ProbeSettings(
        base_url=llama.url + "/v1",
        model=MODEL_NAME,
        modes=("merged",),
        runs=5,
        warmup=1,
        prompt_tokens=128,
        max_tokens=8,
        gpu=False,
        extra_body={"ignore_eos": True},
    )
    report = build_report(asyncio.run(run_probe(settings)))
    json.dumps(report)  # JSON-ready
    merged = report["modes"]["merged"]
    assert merged["requests"] == 5 and merged["failures"] == 0, merged["failure_causes"]
    assert merged["url"] == f"{llama.url}/v1/chat/completions"
    assert merged["ttft_ms"]["count"] == 5 and merged["ttft_ms"]["median"] > 0
    assert merged["server_prompt_ms"]["count"] == 5
    assert merged["output_tokens"] == 40
    assert merged["cached_tokens"] is not None and merged["cached_tokens"] <= 5 * 16  # the nonce busts the cache
    assert isinstance(merged["metrics"], dict) and merged["metrics"]["generation_tokens"] > 0
    assert report["notes"][0] == TTFT_DEFINITION
    assert any("nonce" in note for note in report["notes"])
    assert report["comparison"] == {} and not report["cancelled"]


def test_llamacpp_closes_the_connection_after_every_stream(llama: LlamaServer) -> None:
    """The peer's quirk behind the xfail below: after a streamed response llama.cpp closes the
    connection within a millisecond, though its headers say ``Keep-Alive: timeout=5, max=100``
    and never ``Connection: close``. Plain (non-streamed) responses keep it open."""
    port = int(llama.url.rsplit(":", 1)[1])
    body = json.dumps(
        {
            "model": MODEL_NAME,
            "messages": [{"role": "user", "content": support.words(8, 5)}],
            "max_tokens": 2,
            "stream": True,
            **BUSTED,
        }
    ).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while not data.endswith(b"\r\n0\r\n\r\n"):
            more = sock.recv(65536)
            assert more, "closed before the stream ended"
            data += more
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
        assert "transfer-encoding: chunked" in head and "keep-alive:" in head and "connection: close" not in head
        assert sock.recv(1) == b""  # EOF: the server closed its side
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for _ in range(2):
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            reply = sock.recv(65536)
            assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b'{"status":"ok"}')


class HoldOpenRelay:
    """A loopback TCP relay to ``port``. When the server closes a connection, the relay keeps
    the client's side open until the client sends again, then closes it without a reply — what
    a client sees whenever the server's FIN reaches it after its next request left (on a
    network with any delay, or just by timing on loopback)."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            self.sockets += [client, upstream]
            thread = threading.Thread(target=self._pipe, args=(client, upstream), daemon=True)
            thread.start()
            self.threads.append(thread)

    @staticmethod
    def _pipe(client: socket.socket, upstream: socket.socket) -> None:
        state = {"closed": False, "waiting": False}
        lock = threading.Lock()

        def down() -> None:
            try:
                while data := upstream.recv(65536):
                    with lock:
                        state["waiting"] = False
                    client.sendall(data)
            except OSError:
                pass
            with lock:
                state["closed"] = True
                if state["waiting"]:  # a request went out after the last reply: it gets none
                    _shut(client)

        thread = threading.Thread(target=down, daemon=True)
        thread.start()
        try:
            while data := client.recv(65536):
                with lock:
                    if state["closed"]:
                        break
                    state["waiting"] = True
                upstream.sendall(data)
        except OSError:
            pass
        _shut(client)
        _shut(upstream)
        thread.join(5)

    def close(self) -> None:
        _shut(self.listener)  # wakes the accept() (close alone does not, on Linux)
        self.listener.close()
        for sock in self.sockets:
            _shut(sock)
        for thread in self.threads:
            thread.join(5)
        for sock in self.sockets:
            sock.close()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def relay(llama: LlamaServer) -> Iterator[HoldOpenRelay]:
    proxy = HoldOpenRelay(int(llama.url.rsplit(":", 1)[1]))
    try:
        yield proxy
    finally:
        proxy.close()


def test_run_probe_survives_a_server_closing_streamed_connections(relay: HoldOpenRelay) -> None:
    settings = ProbeSettings(
        base_url=f"http://127.0.0.1:{relay.port}/v1",
        model=MODEL_NAME,
        modes=("merged",),
        runs=4,
        warmup=0,
        prompt_tokens=32,
        max_tokens=4,
        gpu=False,
        metrics=False,
        extra_body={"ignore_eos": True},
    )
    report = build_report(asyncio.run(run_probe(settings)))
    gc.collect()
    merged = report["modes"]["merged"]
    assert merged["failures"] == 0, merged["failure_causes"]


def test_probe_transport_closes_connections_the_server_closed(llama: LlamaServer) -> None:
    async def run() -> None:
        async with httpx.AsyncClient(transport=StampedTransport(), trust_env=False, timeout=30) as client:
            for i in range(3):
                ok([await astream(client, llama.url, support.words(8, 20 + i), max_tokens=2, extra=BUSTED)])
                await asyncio.sleep(0.05)  # llama.cpp's FIN arrives: the idle connection is at EOF

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        asyncio.run(run())
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks
