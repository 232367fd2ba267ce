"""``GET /samples``: the latest answers' timings, what ``probe --passive`` reads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kvswitch.gateway import server
from tests.gateway.upstreams import (
    TOKEN,
    UPSTREAM_KEY,
    Upstream,
    chat_token,
    exchange,
    gateway,
    json_answer,
    request,
    sse_answer,
    sse_event,
)

WRITES = [
    sse_event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
    chat_token("a"),
    chat_token("b"),
    chat_token("c"),
    b"data: [DONE]\n\n",
]


def _samples(reply_body: bytes) -> dict[str, Any]:
    data = json.loads(reply_body)
    assert isinstance(data, dict)
    return data


def test_each_answer_leaves_one_sample_with_its_mode_route_and_timings() -> None:
    whole = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}

    async def go() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with (
            Upstream(sse_answer(WRITES, gap=0.01)) as streaming,
            Upstream(json_answer(200, whole)) as answering,
            gateway(streaming.url, answering.url) as gw,
        ):
            await exchange(gw.port, request("/v1/chat/completions"))
            await exchange(gw.port, request("/split/v1/chat/completions"))
            await exchange(gw.port, request("/v1/chat/completions", extra="X-Cache-Mode: split\r\n"))
            every = _samples((await exchange(gw.port, request("/samples", body=None, method="GET"))).body)
            later = _samples((await exchange(gw.port, request("/samples?since=2", body=None, method="GET"))).body)
            refused = await exchange(gw.port, request("/samples", body=None, method="GET", token="wrong"))
            return every, later, refused.status

    every, later, refused = asyncio.run(go())
    first, second, third = every["samples"]
    assert every["seq"] == 3 and [s["seq"] for s in every["samples"]] == [1, 2, 3]
    assert (first["mode"], first["route"], first["api"], first["outcome"]) == ("merged", "default", "chat", "ok")
    assert first["tokens"] == 3 and first["itl_count"] == 2 and len(first["itl"]) == 2
    assert 0 < first["ttft"] < 5 and all(gap > 0 for gap in first["itl"])
    assert (second["mode"], second["route"], second["tokens"], second["itl"], second["stream"]) == (
        "split",
        "path",
        1,
        [],
        False,
    )
    assert first["stream"] is True
    assert (third["mode"], third["route"]) == ("split", "header")
    assert [s["seq"] for s in later["samples"]] == [3]
    assert refused == 401


def test_samples_are_bounded_and_hold_no_key_or_token(monkeypatch: Any) -> None:
    monkeypatch.setattr(server, "SAMPLES_KEPT", 3)
    monkeypatch.setattr(server, "SAMPLE_GAPS", 4)
    many = [chat_token(str(i)) for i in range(12)]

    async def go() -> bytes:
        async with Upstream(sse_answer(many, gap=0.003)) as up, gateway(up.url) as gw:
            for _ in range(5):
                await exchange(gw.port, request("/v1/chat/completions"))
            return (await exchange(gw.port, request("/samples?since=junk", body=None, method="GET"))).body

    body = asyncio.run(go())
    data = _samples(body)
    assert [s["seq"] for s in data["samples"]] == [3, 4, 5]
    assert all(s["itl_count"] == 11 and len(s["itl"]) == 4 for s in data["samples"])
    assert TOKEN.encode() not in body and UPSTREAM_KEY.encode() not in body
