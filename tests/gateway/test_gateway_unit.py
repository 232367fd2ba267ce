"""The gateway's parts on their own: the four APIs' error shapes, the metrics families, the
key scrubber of streams, and how the gateway times streams with the one first-token function.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvswitch.first_token import StreamClock
from kvswitch.gateway import apis
from kvswitch.gateway.metrics import (
    E2E_BUCKETS,
    ITL_BUCKETS,
    OUTCOMES,
    TTFT_BUCKETS,
    GatewayMetrics,
)
from kvswitch.gateway.server import _Scrubber
from kvswitch.redact import mask
from tests.gateway.upstreams import (
    Reply,
    Upstream,
    chat_token,
    exchange,
    gateway,
    json_answer,
    request,
    sse_answer,
    sse_event,
)

KEY = "sk-proj-Zq8vN2kLmP4xR7tY1wB6"


# -- apis ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path,api",
    [
        ("/v1/chat/completions", "chat"),
        ("/v1/completions", "completions"),
        ("/v1/responses", "responses"),
        ("/v1/messages", "messages"),
        ("/v1/messages/count_tokens", "messages"),
        ("/v1/models", "other"),
        ("/v1/chat/completions/", "other"),
        ("/v1/embeddings", "other"),
        ("/", "other"),
    ],
)
def test_api_of(path: str, api: str) -> None:
    assert apis.api_of(path) == api


STATUSES = [400, 401, 403, 404, 405, 408, 413, 421, 429, 499, 500, 502, 503, 504, 505]


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("api", ["chat", "completions", "responses", "other"])
def test_openai_error_bodies_have_openais_shape(api: apis.Api, status: int) -> None:
    body = json.loads(apis.error_body(api, status, "why"))
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"] == "why" and body["error"]["param"] is None
    assert isinstance(body["error"]["type"], str) and body["error"]["type"]
    assert body["error"]["type"] == (
        "server_error" if status >= 500 and status not in (502, 503, 504) else body["error"]["type"]
    )
    assert apis.has_error_shape(api, apis.error_body(api, status, "why"))


@pytest.mark.parametrize("status", STATUSES)
def test_anthropic_error_bodies_have_anthropics_shape(status: int) -> None:
    body = json.loads(apis.error_body("messages", status, "why"))
    assert body == {"type": "error", "error": {"type": body["error"]["type"], "message": "why"}}
    expected = {
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        503: "overloaded_error",
    }
    if status in expected:
        assert body["error"]["type"] == expected[status]
    elif status >= 500:
        assert body["error"]["type"] in ("api_error", "timeout_error")
    assert apis.has_error_shape("messages", apis.error_body("messages", status, "why"))


def test_an_error_message_with_quotes_and_newlines_stays_one_json_value() -> None:
    message = 'a "quoted"\nline\r\n\u2028 and data: [DONE]\n\n'
    for api in ("chat", "responses", "messages"):
        assert json.loads(apis.error_body(api, 500, message))["error"]["message"] == message
        event = apis.error_event(api, message)
        assert event.endswith(b"\n\n") and event.count(b"\n\n") == 1  # one SSE event, whole
        data = [line for line in event.split(b"\n") if line.startswith(b"data: ")]
        assert len(data) == 1


def test_error_events_in_each_apis_form() -> None:
    chat = apis.error_event("chat", "gone", "timeout")
    assert chat.startswith(b"data: ") and b"event:" not in chat
    assert json.loads(chat[6:])["error"] == {
        "message": "gone",
        "type": "server_error",
        "param": None,
        "code": "timeout",
    }
    responses = apis.error_event("responses", "gone")
    assert responses.startswith(b"event: error\ndata: ")
    payload = json.loads(responses.split(b"data: ", 1)[1])
    assert payload["type"] == "error" and payload["message"] == "gone"
    messages = apis.error_event("messages", "gone")
    assert messages.startswith(b"event: error\ndata: ")
    assert json.loads(messages.split(b"data: ", 1)[1]) == {
        "type": "error",
        "error": {"type": "api_error", "message": "gone"},
    }


@pytest.mark.parametrize(
    "body,api,shaped",
    [
        (b'{"error": {"message": "x"}}', "chat", True),
        (b'{"error": "x"}', "chat", False),
        (b'{"detail": "x"}', "chat", False),
        (b"<html>502</html>", "chat", False),
        (b"[1, 2]", "chat", False),
        (b"", "chat", False),
        (b'{"type": "error", "error": {"type": "x", "message": "y"}}', "messages", True),
        (b'{"error": {"message": "x"}}', "messages", False),
    ],
)
def test_has_error_shape(body: bytes, api: apis.Api, shaped: bool) -> None:
    assert apis.has_error_shape(api, body) is shaped


def test_an_upstream_error_page_comes_back_in_the_apis_shape() -> None:
    """Without translation, an upstream that lacks the route says so in the API's shape."""

    async def go() -> list[Reply]:
        async with (
            Upstream(json_answer(404, b"<html>Not Found</html>")) as up,
            gateway(up.url, translate="never") as gw,
        ):
            return [await exchange(gw.port, request(r, body=b"{}")) for r in ("/v1/responses", "/v1/messages")]

    responses, messages = asyncio.run(go())
    assert responses.status == 404 and messages.status == 404
    assert "has no /v1/responses route" in responses.json()["error"]["message"]
    assert messages.json()["type"] == "error"
    assert messages.json()["error"]["type"] == "not_found_error"


# -- metrics ---------------------------------------------------------------------------------------
def test_the_histograms_use_vllms_bucket_edges() -> None:
    assert TTFT_BUCKETS[:3] == (0.001, 0.005, 0.01) and TTFT_BUCKETS[-1] == 2560.0
    assert ITL_BUCKETS[0] == 0.01 and ITL_BUCKETS[-1] == 80.0
    assert E2E_BUCKETS[0] == 0.3 and E2E_BUCKETS[-1] == 7680.0
    for edges in (TTFT_BUCKETS, ITL_BUCKETS, E2E_BUCKETS):
        assert list(edges) == sorted(set(edges))
    metrics = GatewayMetrics()
    metrics.ttft.labels("merged", "chat").observe(0.002)
    text = metrics.text().decode()
    assert 'kvswitch_gateway_time_to_first_token_seconds_bucket{api="chat",le="0.005",mode="merged"} 1.0' in text


def test_two_gateways_keep_their_own_counts() -> None:
    a, b = GatewayMetrics(), GatewayMetrics()
    a.outcomes.labels("merged", "chat", "ok").inc()
    assert (
        a.registry.get_sample_value(
            "kvswitch_gateway_stream_outcome_total", {"mode": "merged", "api": "chat", "outcome": "ok"}
        )
        == 1
    )
    assert (
        b.registry.get_sample_value(
            "kvswitch_gateway_stream_outcome_total", {"mode": "merged", "api": "chat", "outcome": "ok"}
        )
        is None
    )


def test_set_mode_marks_one_mode() -> None:
    m = GatewayMetrics()
    m.set_mode("split")
    get = m.registry.get_sample_value
    assert get("kvswitch_gateway_mode", {"mode": "split"}) == 1
    assert get("kvswitch_gateway_mode", {"mode": "merged"}) == 0
    assert set(OUTCOMES) == {"ok", "client_disconnect", "upstream_error", "inband_error", "timeout"}


# -- the scrubber ----------------------------------------------------------------------------------
def scrubbed(key: str | None, pieces: list[bytes]) -> bytes:
    scrub = _Scrubber(key)
    return b"".join(scrub(p) for p in pieces) + scrub.rest()


def test_no_key_means_bytes_pass_untouched() -> None:
    data = [b"abc", b"", b"sk-"]
    assert scrubbed(None, data) == b"abcsk-"
    scrub = _Scrubber(None)
    assert all(scrub(p) is p for p in data)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(
            [
                b"a",
                b"sk-",
                b"sk-proj",
                b"data: ",
                b"\n\n",
                KEY.encode(),
                KEY.encode()[:10],
                KEY.encode()[10:],
                b"\xe2\x80\xa6",
            ]
        ),
        max_size=30,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_key_is_masked_however_the_stream_is_cut(parts: list[bytes], seed: int) -> None:
    data = b"".join(parts)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 12))))
    pieces = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    out = scrubbed(KEY, pieces)
    assert KEY.encode() not in out
    assert out == data.replace(KEY.encode(), mask(KEY).encode())


def test_the_scrubber_holds_back_only_a_possible_start_of_the_key() -> None:
    scrub = _Scrubber(KEY)
    assert scrub(b"hello sk-pr") == b"hello "
    assert scrub(b"ize") == b"sk-prize"  # not the key after all: released whole
    assert scrub(b"...s") == b"..."
    assert scrub(KEY.encode()[1:] + b"!") == mask(KEY).encode() + b"!"
    assert scrub.rest() == b""


# -- first-token timing in the gateway ------------------------------------------------------------------
STREAMS: dict[str, tuple[str, list[bytes]]] = {
    "chat": (
        "/v1/chat/completions",
        [
            sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            chat_token("a"),
            chat_token("b"),
            chat_token("c"),
            b"data: [DONE]\n\n",
        ],
    ),
    "completions": ("/v1/completions", [sse_event({"choices": [{"index": 0, "text": t}]}) for t in "abc"]),
    "responses": (
        "/v1/responses",
        [
            sse_event({"type": "response.created"}, "response.created"),
            *[
                sse_event({"type": "response.output_text.delta", "delta": t}, "response.output_text.delta")
                for t in "abc"
            ],
            sse_event({"type": "response.completed"}, "response.completed"),
        ],
    ),
    "messages": (
        "/v1/messages",
        [
            sse_event({"type": "message_start"}, "message_start"),
            *[
                sse_event(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
                    "content_block_delta",
                )
                for t in "abc"
            ],
            sse_event({"type": "message_stop"}, "message_stop"),
        ],
    ),
}


def sample(gw: Any, name: str, labels: dict[str, str]) -> float:
    return gw.metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("api", list(STREAMS))
def test_the_gateway_times_each_apis_stream_by_its_token_events(api: str) -> None:
    route, writes = STREAMS[api]

    async def go() -> tuple[Reply, Any]:
        async with Upstream(sse_answer(writes, gap=0.02)) as up, gateway(up.url) as gw:
            return await exchange(gw.port, request(route)), gw

    reply, gw = asyncio.run(go())
    assert reply.status == 200 and reply.body == b"".join(writes)
    labels = {"mode": "merged", "api": api}
    assert sample(gw, "kvswitch_gateway_time_to_first_token_seconds_count", labels) == 1
    assert sample(gw, "kvswitch_gateway_inter_token_latency_seconds_count", labels) == 2
    assert sample(gw, "kvswitch_gateway_e2e_request_latency_seconds_count", labels) == 1
    assert sample(gw, "kvswitch_gateway_overhead_seconds_count", labels) == 1


def test_a_stream_without_tokens_has_no_ttft_and_a_whole_answer_has_one() -> None:
    role_only = [
        sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        b"data: [DONE]\n\n",
    ]
    whole = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}

    async def go() -> Any:
        async with (
            Upstream(sse_answer(role_only)) as streaming,
            Upstream(json_answer(200, whole)) as answering,
            gateway(streaming.url, answering.url) as gw,
        ):
            await exchange(gw.port, request("/v1/chat/completions"))
            await exchange(gw.port, request("/split/v1/chat/completions"))
            return gw

    gw = asyncio.run(go())
    name = "kvswitch_gateway_time_to_first_token_seconds_count"
    assert sample(gw, name, {"mode": "merged", "api": "chat"}) == 0
    assert sample(gw, name, {"mode": "split", "api": "chat"}) == 1
    assert sample(gw, "kvswitch_gateway_stream_outcome_total", {"mode": "merged", "api": "chat", "outcome": "ok"}) == 1


def test_the_clock_the_gateway_uses_stops_at_a_long_line_but_keeps_count_before() -> None:
    clock = StreamClock(0.0, max_line=64)
    clock.feed(chat_token("a"), now=1.0)
    clock.feed(b"data: " + b"x" * 100, now=2.0)  # an unfinished line over the bound
    clock.feed(b"x" * 100 + b"\n\n", now=2.5)
    clock.feed(chat_token("b"), now=3.0)
    assert clock.tokens == 1 and clock.ttft == 1.0 and clock.broken


# -- the event loop ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("choice", "module"), [(None, "uvloop"), ("asyncio", "asyncio")])
def test_the_gateway_runs_on_uvloop_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, choice: str | None, module: str
) -> None:
    from kvswitch.gateway.server import run_loop

    if choice is None:
        monkeypatch.delenv("KVSWITCH_GATEWAY_LOOP", raising=False)
    else:
        monkeypatch.setenv("KVSWITCH_GATEWAY_LOOP", choice)
    seen: list[str] = []

    async def which() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__.split(".")[0])

    run_loop(which())
    assert seen == [module]
