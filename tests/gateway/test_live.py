"""Live figures per mode from a real gateway's ``GET /samples`` (what the tray shows): counts,
the TTFT median of the latest answers, how their mode was chosen, reads of only what is new,
a restarted gateway, and every way a read fails (never quoting the token, never via a proxy,
never following a redirect)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import statistics
from typing import Any

import pytest

from kvswitch.gateway import live
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.live import (
    LiveFigures,
    LiveSamples,
    ModeFigures,
    gateway_origin,
    live_figures,
)
from tests.gateway.upstreams import (
    TOKEN,
    Upstream,
    chat_token,
    exchange,
    gateway,
    json_answer,
    request,
    silent,
    sse_answer,
    sse_event,
)

WRITES = [
    sse_event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
    chat_token("a"),
    chat_token("b"),
    b"data: [DONE]\n\n",
]
P50 = re.compile(r"TTFT p50 \d+(\.\d)? ms")


async def _raw_samples(port: int) -> list[dict[str, Any]]:
    reply = await exchange(port, request("/samples", body=None, method="GET"))
    samples: list[dict[str, Any]] = json.loads(reply.body)["samples"]
    return samples


async def _read(reader: LiveSamples | None, url: str, token: str = TOKEN, **kw: Any) -> LiveFigures:
    """A read from a thread of its own (it blocks), as the tray's worker makes it."""
    if reader is None:
        return await asyncio.to_thread(live_figures, url, token, **kw)
    return await asyncio.to_thread(reader.read, url, token, **kw)


def test_figures_per_mode_from_a_real_gateway() -> None:
    async def go() -> tuple[LiveFigures, LiveFigures, list[dict[str, Any]]]:
        async with Upstream(sse_answer(WRITES, gap=0.005)) as up, gateway(up.url) as gw:
            empty = await _read(None, gw.url)
            for _ in range(3):
                await exchange(gw.port, request("/v1/chat/completions"))
            await exchange(gw.port, request("/v1/chat/completions", extra="X-Cache-Mode: merged\r\n"))
            await exchange(gw.port, request("/split/v1/chat/completions"))
            figures = await _read(None, gw.url)
            return empty, figures, await _raw_samples(gw.port)

    empty, figures, raw = asyncio.run(go())
    assert empty.lines == ("merged: no requests yet", "split: no requests yet") and empty.seq == 0
    merged, split = figures["merged"], figures["split"]
    assert (merged.requests, merged.timed, merged.failed) == (4, 4, 0)
    assert dict(merged.routes) == {"default": 3, "header": 1}
    assert (split.requests, split.timed, dict(split.routes)) == (1, 1, {"path": 1})
    want = statistics.median(x["ttft"] for x in raw if x["mode"] == "merged") * 1000
    assert merged.ttft_p50_ms == pytest.approx(want)
    assert figures.seq == 5 and figures.last == live.LAST and figures.url.startswith("http://127.0.0.1:")
    assert P50.search(merged.line) and merged.line.startswith("merged: TTFT p50 ")
    assert merged.line.endswith(" ms (last 4 requests)") and split.line.endswith(" ms (last 1 request)")
    assert merged.detail == "routes: default 3, header 1" and split.detail == "routes: path 1"


def test_only_the_latest_answers_of_each_mode_count() -> None:
    async def go() -> tuple[LiveFigures, list[dict[str, Any]]]:
        async with Upstream(sse_answer(WRITES, gap=0.005)) as up, gateway(up.url) as gw:
            for _ in range(5):
                await exchange(gw.port, request("/merged/v1/chat/completions"))
            return await _read(None, gw.url, last=2), await _raw_samples(gw.port)

    figures, raw = asyncio.run(go())
    merged = figures["merged"]
    assert (merged.requests, merged.timed, figures.last) == (2, 2, 2)
    assert merged.ttft_p50_ms == pytest.approx(statistics.median(x["ttft"] for x in raw[-2:]) * 1000)
    assert merged.line.endswith("(last 2 requests)")


def test_failed_answers_are_counted_but_never_timed() -> None:
    async def go() -> LiveFigures:
        async with (
            Upstream(sse_answer(WRITES, gap=0.005)) as good,
            Upstream(sse_answer(WRITES[:2], then="abort")) as broken,
            gateway(good.url, broken.url) as gw,
        ):
            await exchange(gw.port, request("/v1/chat/completions"))
            for _ in range(2):
                await exchange(gw.port, request("/split/v1/chat/completions"))
            gw.set_mode("split")
            await exchange(gw.port, request("/v1/chat/completions"))
            return await _read(None, gw.url)

    figures = asyncio.run(go())
    split = figures["split"]
    assert (split.requests, split.timed, split.failed, split.ttft_p50_ms) == (3, 0, 3, None)
    assert split.line == "split: no TTFT in the last 3 requests"
    assert split.detail == "routes: path 2, default 1 · 3 failed"
    assert figures["merged"].line.endswith("(last 1 request)")


def test_a_kept_reader_fetches_only_what_is_new_and_starts_again_for_a_new_gateway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []
    fetch = live._fetch

    def spy(origin: str, token: str, since: int, timeout: float) -> dict[str, Any]:
        asked.append(since)
        return fetch(origin, token, since, timeout)

    monkeypatch.setattr(live, "_fetch", spy)
    reader = LiveSamples(last=10)

    async def go() -> tuple[LiveFigures, LiveFigures, LiveFigures, LiveFigures]:
        async with Upstream(sse_answer(WRITES, gap=0.002)) as up:
            async with gateway(up.url) as gw:
                port = gw.port
                for _ in range(2):
                    await exchange(port, request("/v1/chat/completions"))
                first = await _read(reader, gw.url)
                await exchange(port, request("/split/v1/chat/completions"))
                second = await _read(reader, gw.url)
                third = await _read(reader, gw.url)
            async with gateway(up.url, port=port) as again:  # restarted on the same address
                await exchange(port, request("/split/v1/chat/completions"))
                fourth = await _read(reader, again.url)
            return first, second, third, fourth

    first, second, third, fourth = asyncio.run(go())
    assert (first["merged"].requests, first["split"].requests) == (2, 0)
    assert (second["merged"].requests, second["split"].requests) == (2, 1)
    assert third == second  # nothing new: the same figures
    # the kept samples are from the new gateway alone, though its sequence starts below the old one's
    assert (fourth["merged"].requests, fourth["split"].requests, fourth.seq) == (0, 1, 1)
    assert fourth.started is not None and fourth.started != first.started
    assert asked == [0, 2, 3, 3, 0]  # the whole first, then only what is new; all again after the restart


def test_another_gateway_is_read_from_the_start() -> None:
    reader = LiveSamples()

    async def go() -> tuple[LiveFigures, LiveFigures]:
        async with Upstream(sse_answer(WRITES)) as up, gateway(up.url) as one, gateway(up.url) as two:
            await exchange(one.port, request("/v1/chat/completions"))
            await exchange(two.port, request("/split/v1/chat/completions"))
            return await _read(reader, one.url), await _read(reader, two.url)

    one, two = asyncio.run(go())
    assert (one["merged"].requests, one["split"].requests) == (1, 0)
    assert (two["merged"].requests, two["split"].requests) == (0, 1)


def test_unstreamed_and_malformed_samples() -> None:
    """A whole answer the gateway marks ``stream: false`` counts as a request, not as a TTFT;
    entries that are not samples are left out."""
    answer = {
        "seq": 6,
        "started": 1.0,
        "samples": [
            {"seq": 1, "mode": "merged", "route": "default", "ttft": 0.2, "outcome": "ok", "stream": False},
            {"seq": 2, "mode": "merged", "route": "default", "ttft": 0.05, "outcome": "ok"},
            {"seq": 3, "mode": "other", "route": "default", "ttft": 0.05, "outcome": "ok"},
            "junk",
            {"mode": "split"},
            {"seq": 6, "mode": "split", "route": "", "ttft": -1, "outcome": "ok"},
        ],
    }

    async def go() -> LiveFigures:
        async with Upstream(json_answer(200, answer)) as fake:
            return await _read(None, f"http://127.0.0.1:{fake.port}")

    figures = asyncio.run(go())
    merged, split = figures["merged"], figures["split"]
    assert (merged.requests, merged.timed) == (2, 1) and merged.ttft_p50_ms == pytest.approx(50.0)
    assert merged.line == "merged: TTFT p50 50 ms (1 of the last 2 requests)"
    assert (split.requests, split.timed, dict(split.routes)) == (1, 0, {"unknown": 1})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _failure(url: str, **kw: Any) -> str:
    with pytest.raises(GatewayError) as info:
        live_figures(url, TOKEN, **kw)
    text = str(info.value)
    assert TOKEN not in text
    return text


def test_a_wrong_token_is_refused_and_never_quoted() -> None:
    async def go() -> str:
        async with Upstream(sse_answer(WRITES)) as up, gateway(up.url) as gw:
            with pytest.raises(GatewayError) as info:
                await _read(None, gw.url, token="kvsgw-the-wrong-one-0123456789")
            return str(info.value)

    text = asyncio.run(go())
    assert "refused the local token (HTTP 401)" in text and "kvsgw-the-wrong-one" not in text


def test_what_is_not_a_gateway_is_told_apart() -> None:
    async def go(script: Any, **kw: Any) -> str:
        async with Upstream(script) as fake:
            return await asyncio.to_thread(_failure, f"http://127.0.0.1:{fake.port}/v1", **kw)

    assert "has no /samples route" in asyncio.run(go(json_answer(404, {"error": "no"})))
    assert "answered GET /samples with HTTP 500" in asyncio.run(go(json_answer(500, {"error": "x"})))
    assert "is not a kvswitch gateway's samples" in asyncio.run(go(json_answer(200, b"<html>")))
    assert "is not a kvswitch gateway's samples" in asyncio.run(go(json_answer(200, {"seq": "1", "samples": []})))
    assert "did not answer GET /samples within 0.2 s" in asyncio.run(go(silent(), timeout=0.2))
    assert _failure(f"http://127.0.0.1:{_closed_port()}").startswith("no gateway answers at http://127.0.0.1:")


def test_a_redirect_is_not_followed_so_the_token_goes_nowhere_else() -> None:
    async def go() -> tuple[str, int]:
        async with Upstream(json_answer(200, {"seq": 0, "samples": []})) as elsewhere:

            async def moved(seen: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                writer.write(
                    f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{elsewhere.port}/samples\r\n"
                    "Content-Length: 0\r\n\r\n".encode()
                )
                await writer.drain()

            async with Upstream(moved) as redirecting:
                text = await asyncio.to_thread(_failure, f"http://127.0.0.1:{redirecting.port}")
                assert redirecting.seen[0].header("Authorization") == f"Bearer {TOKEN}"
            return text, len(elsewhere.seen)

    text, reached = asyncio.run(go())
    assert "redirected GET /samples (HTTP 302)" in text and reached == 0


def test_proxy_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy in the environment never sees the request (nor the token): loopback is asked directly."""

    async def go() -> tuple[LiveFigures, int]:
        async with Upstream(json_answer(200, b"no")) as proxy:
            for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
                monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
            for name in ("no_proxy", "NO_PROXY"):
                monkeypatch.delenv(name, raising=False)
            async with Upstream(sse_answer(WRITES)) as up, gateway(up.url) as gw:
                await exchange(gw.port, request("/v1/chat/completions"))
                return await _read(None, gw.url), len(proxy.seen)

    figures, via_proxy = asyncio.run(go())
    assert figures["merged"].requests == 1 and via_proxy == 0


def test_gateway_origin() -> None:
    assert gateway_origin("http://127.0.0.1:18090/v1/chat") == "http://127.0.0.1:18090"
    assert gateway_origin("http://0.0.0.0:18090") == "http://127.0.0.1:18090"
    assert gateway_origin("http://[::]:18090/") == "http://[::1]:18090"
    assert gateway_origin("https://gw.example") == "https://gw.example"
    for bad in ("ftp://127.0.0.1:1", "127.0.0.1:18090", "http://", "http://127.0.0.1:99999"):
        with pytest.raises(GatewayError, match="not a gateway URL"):
            gateway_origin(bad)
    with pytest.raises(ValueError):
        LiveSamples(last=0)


def test_mode_figures_lines() -> None:
    assert ModeFigures("split").line == "split: no requests yet" and ModeFigures("split").detail == ""
    fast = ModeFigures("merged", 37, 37, 4.25, {"default": 37})
    assert fast.line == "merged: TTFT p50 4.2 ms (last 37 requests)"
    assert ModeFigures("merged", 37, 37, 123.4, {}).line == "merged: TTFT p50 123 ms (last 37 requests)"


def test_mode_figures_lines_in_chinese() -> None:
    """The tray shows these lines as they are: in the user's language, modes and numbers kept."""
    from kvswitch import i18n

    i18n.set_language("zh_CN")
    assert ModeFigures("split").line == "split：尚无请求"
    figures = ModeFigures("merged", 37, 30, 123.4, {"default": 30, "header": 7}, 2)
    assert figures.line == "merged：首 token 延迟 p50 123 ms（最近 37 个请求中的 30 个）"
    assert figures.detail == "路由：default 30、header 7 · 2 个失败"
    assert ModeFigures("split", 3, 0, None, {"path": 3}, 3).line == "split：最近 3 个请求中没有首 token 延迟（TTFT）"
