"""Translation against a hostile upstream and hostile bodies: the key an upstream echoes is
masked in the translated stream, a stream cut or garbled ends in one error event of the
client's API, and a body that is not a request is a clear 400 with nothing sent upstream."""

from __future__ import annotations

import asyncio
import json

from tests.gateway.upstreams import (
    TOKEN,
    UPSTREAM_KEY,
    Reply,
    Upstream,
    chat_token,
    exchange,
    gateway,
    request,
    sse_answer,
)

MESSAGES = json.dumps(
    {"model": "test-model", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
).encode()
RESPONSES = json.dumps({"model": "test-model", "stream": True, "input": "hi"}).encode()


def run(writes: list[bytes], then: str, target: str, body: bytes) -> tuple[Reply, int]:
    async def go() -> tuple[Reply, int]:
        async with (
            Upstream(sse_answer(writes, then=then, gap=0.01)) as up,
            gateway(up.url, translate="always", idle_timeout=1.0) as gw,
        ):
            reply = await asyncio.wait_for(exchange(gw.port, request(target, body=body)), 30)
            return reply, len(up.seen)

    return asyncio.run(go())


def test_a_key_the_upstream_echoes_is_masked_in_the_translated_stream() -> None:
    half = len(UPSTREAM_KEY) // 2
    writes = [
        chat_token(f"your key is {UPSTREAM_KEY}"),
        chat_token(UPSTREAM_KEY[:half]),
        chat_token(UPSTREAM_KEY[half:]),
        b"data: [DONE]\n\n",
    ]
    for target, body in (("/v1/messages", MESSAGES), ("/v1/responses", RESPONSES)):
        reply, _ = run(writes, "end", target, body)
        assert reply.status == 200
        assert UPSTREAM_KEY.encode() not in reply.data and TOKEN.encode() not in reply.data


def test_an_upstream_cut_mid_stream_ends_in_one_error_event_of_the_clients_api() -> None:
    reply, _ = run([chat_token("a"), chat_token("b")], "abort", "/v1/messages", MESSAGES)
    assert reply.status == 200
    assert reply.body.count(b"event: error") == 1 and b"message_stop" not in reply.body
    reply, _ = run([chat_token("a")], "abort", "/v1/responses", RESPONSES)
    assert b"response.completed" not in reply.body
    assert b"response.failed" in reply.body or b"event: error" in reply.body


def test_a_silent_upstream_ends_in_an_error_event_not_a_hang() -> None:
    reply, _ = run([chat_token("a")], "hang", "/v1/messages", MESSAGES)
    assert reply.status == 200 and reply.body.count(b"event: error") == 1
    assert b"sent nothing for 1 s" in reply.body


def test_garbage_from_the_upstream_ends_the_stream_in_one_error_event_saying_so() -> None:
    writes = [chat_token("ok"), b"data: {not json\n\n", chat_token("more"), b"data: [DONE]\n\n"]
    reply, _ = run(writes, "end", "/v1/messages", MESSAGES)
    assert reply.status == 200 and b'"ok"' in reply.body
    assert reply.body.count(b"event: error") == 1 and b"not JSON" in reply.body
    assert b"more" not in reply.body and b"message_stop" not in reply.body  # nothing after it


def test_bodies_that_are_not_requests_are_refused_before_anything_goes_upstream() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    for body in (b"not json", b"[1, 2]", deep, json.dumps({"model": "m", "messages": "x"}).encode()):
        reply, sent = run([], "end", "/v1/messages", body)
        assert reply.status == 400 and sent == 0, (body[:20], reply.status)
        assert reply.json()["type"] == "error" and reply.json()["error"]["message"]
