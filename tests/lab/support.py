"""Helpers for the real-peer tests: prompts of known token counts, streams through the probe,
plain HTTP calls to a server's own routes."""

from __future__ import annotations

import asyncio
import json
import statistics
import urllib.request
import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from kvswitch.probe.client import RequestResult, chat_body, stream_chat

MODEL_NAME = "tiny"
BUSTED = {"cache_prompt": False, "ignore_eos": True}
"""llama.cpp request fields: no prefix reuse, never stop before max_tokens."""


def http_get(url: str) -> tuple[int, bytes]:
    """GET ``url`` (no proxy): (status, body)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return response.status, response.read()


def http_post(url: str, body: dict[str, object]) -> dict[str, object]:
    """POST ``body`` as JSON to ``url`` (no proxy); the JSON answer."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        result: dict[str, object] = json.loads(response.read())
        return result


def words(n: int, seed: int) -> str:
    """``n`` words of the tiny model's vocabulary: ``n`` tokens (a different text per seed)."""
    from kvswitch.lab.model import WORDS

    step = 7919 % len(WORDS) or 1
    return " ".join(WORDS[(seed * 104729 + i * step) % len(WORDS)] for i in range(n))


def nonce() -> str:
    return uuid.uuid4().hex[:12]


def fresh_client() -> httpx.AsyncClient:
    """A client that opens one connection per request (llama.cpp closes streamed ones)."""
    return httpx.AsyncClient(timeout=60, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))


async def astream(
    client: httpx.AsyncClient, base: str, prompt: str, *, max_tokens: int = 8, extra: dict[str, Any] | None = None
) -> RequestResult:
    body = chat_body(MODEL_NAME, prompt, max_tokens, extra=extra)
    return await stream_chat(
        client, f"{base}/v1/chat/completions", body, {}, mode="merged", stall_timeout=30, total_timeout=60
    )


def streams(
    base: str, prompts: Sequence[str], *, max_tokens: int = 8, extra: dict[str, Any] | None = None
) -> list[RequestResult]:
    """Stream ``prompts`` one after another through kvswitch's probe client."""

    async def run() -> list[RequestResult]:
        async with fresh_client() as client:
            return [await astream(client, base, p, max_tokens=max_tokens, extra=extra) for p in prompts]

    return asyncio.run(run())


def ok(results: Sequence[RequestResult]) -> list[RequestResult]:
    bad = [r.error for r in results if not r.ok]
    assert not bad, f"failed requests: {bad}"
    return list(results)


def median_ms(values: Sequence[float | None]) -> float:
    return statistics.median(v * 1000 for v in values if v is not None)
