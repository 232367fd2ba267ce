"""The gateway against real peers: the official ``openai`` and ``anthropic`` Python SDKs and
``curl -N`` as clients, the lab's llama.cpp servers (and the lab router) as upstreams.

Every API the SDKs speak goes through, streamed and not (Chat Completions, Completions,
Responses, Messages); an upstream without a route gives that API's own 404, which the SDK
raises as ``NotFoundError``; the gateway's own errors are raised as their proper exception
types (401, 400, 429 with Retry-After, 502). No timing is asserted anywhere.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import anthropic
import openai
import pytest

from kvswitch.gateway.server import LISTENING, REPLY_HEADER
from tests.conftest import require_tool
from tests.gateway.conftest import (
    MODEL,
    TOKEN,
    Peers,
    ant,
    llama_counts,
    metrics,
    oai,
    slots,
    stream_chat,
    wait_for,
)
from tests.lab import support

WRONG = "kvsgw-not-the-token-000000000000"


def prompt(n: int = 12) -> str:
    return f"[{support.nonce()}] " + support.words(n, 3)


@pytest.fixture
def oa(peers: Peers) -> Iterator[openai.OpenAI]:
    with oai(f"{peers.gateway.url}/v1") as c:
        yield c


@pytest.fixture
def an(peers: Peers) -> Iterator[anthropic.Anthropic]:
    with ant(peers.gateway.url) as c:
        yield c


# -- the four APIs, through, streamed and not -----------------------------------------------------
def test_openai_chat_completions(peers: Peers, oa: openai.OpenAI) -> None:
    before = llama_counts(peers.merged)
    raw = oa.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": prompt()}],
        max_tokens=5,
        extra_body={"ignore_eos": True},
    )
    assert raw.headers[REPLY_HEADER] == "merged; reason=default"
    done = raw.parse()
    assert done.choices[0].message.content and done.usage is not None and done.usage.completion_tokens == 5

    stream = oa.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": prompt()}],
        max_tokens=6,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 6
    assert llama_counts(peers.merged)["tokens_predicted_total"] - before["tokens_predicted_total"] == 11


def test_openai_completions(oa: openai.OpenAI) -> None:
    done = oa.completions.create(model=MODEL, prompt=prompt(), max_tokens=4, extra_body={"ignore_eos": True})
    assert done.choices[0].text and done.usage is not None and done.usage.completion_tokens == 4
    pieces = [
        c.choices[0].text
        for c in oa.completions.create(
            model=MODEL, prompt=prompt(), max_tokens=4, stream=True, extra_body={"ignore_eos": True}
        )
        if c.choices
    ]
    assert sum(1 for p in pieces if p) >= 2 and "".join(pieces)


def test_openai_responses(peers: Peers, oa: openai.OpenAI) -> None:
    """llama.cpp serves /v1/responses: through the gateway, whole and streamed (the SDK's own
    typed events). The lab router has no such route: with translation off, the SDK raises
    NotFoundError with the API's own error body (translation: test_gateway_translation.py)."""
    done = oa.responses.create(model=MODEL, input=prompt(), max_output_tokens=5)
    assert done.status == "completed" and done.output_text
    events = list(oa.responses.create(model=MODEL, input=prompt(), max_output_tokens=5, stream=True))
    kinds = [e.type for e in events]
    assert "response.output_text.delta" in kinds and kinds[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta")

    plain = peers.start_gateway(peers.settings(translate="never"))
    try:
        with oai(f"{plain.url}/split/v1") as split, pytest.raises(openai.NotFoundError) as info:
            split.responses.create(model=MODEL, input=prompt(), max_output_tokens=5)
    finally:
        peers.stop_gateway(plain)
    assert info.value.status_code == 404
    assert info.value.response.headers[REPLY_HEADER] == "split; reason=path"
    body = info.value.response.json()
    assert set(body) == {"error"} and "/v1/responses" in body["error"]["message"]


def test_anthropic_messages(peers: Peers, an: anthropic.Anthropic) -> None:
    """``anthropic.Anthropic(base_url=gateway, api_key=TOKEN)`` sends the token as x-api-key."""
    raw = an.messages.with_raw_response.create(
        model=MODEL, max_tokens=5, messages=[{"role": "user", "content": prompt()}]
    )
    assert raw.headers[REPLY_HEADER] == "merged; reason=default"
    message = raw.parse()
    assert message.type == "message" and message.content[0].type == "text" and message.content[0].text
    assert message.usage.output_tokens >= 1

    with an.messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": prompt()}]) as s:
        kinds = [e.type for e in s]
        final = s.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "content_block_delta" in kinds
    assert final.content[0].type == "text" and final.content[0].text

    plain = peers.start_gateway(peers.settings(translate="never"))
    try:
        with ant(f"{plain.url}/split") as split, pytest.raises(anthropic.NotFoundError) as info:
            split.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": prompt()}])
    finally:
        peers.stop_gateway(plain)
    body = info.value.response.json()  # the lab router's 404, put in Anthropic's own shape
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    assert "/v1/messages" in body["error"]["message"]


def test_models_route(oa: openai.OpenAI) -> None:
    assert MODEL in [m.id for m in oa.models.list()]


# -- errors, as each SDK's own exception types ------------------------------------------------------
def test_a_wrong_token_is_an_authentication_error(peers: Peers) -> None:
    before = llama_counts(peers.merged)
    with oai(f"{peers.gateway.url}/v1", WRONG) as c, pytest.raises(openai.AuthenticationError) as o:
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert o.value.status_code == 401 and o.value.body["type"] == "authentication_error"  # type: ignore[index]
    with ant(peers.gateway.url, WRONG) as c, pytest.raises(anthropic.AuthenticationError) as a:
        c.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert a.value.response.json()["error"]["type"] == "authentication_error"
    assert WRONG not in o.value.response.text and WRONG not in a.value.response.text
    assert llama_counts(peers.merged) == before  # nothing reached the upstream


def test_a_bad_cache_mode_header_is_a_bad_request(peers: Peers) -> None:
    with (
        oai(f"{peers.gateway.url}/v1", default_headers={"X-Cache-Mode": "both"}) as c,
        pytest.raises(openai.BadRequestError) as o,
    ):
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert "X-Cache-Mode" in o.value.message
    with (
        ant(peers.gateway.url, default_headers={"X-Cache-Mode": "fast"}) as c,
        pytest.raises(anthropic.BadRequestError) as a,
    ):
        c.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert a.value.response.json()["error"]["type"] == "invalid_request_error"


def test_an_unreachable_upstream_is_a_502(peers: Peers) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    gateway = peers.start_gateway(peers.settings(merged=dead, split=dead))
    try:
        with oai(f"{gateway.url}/v1") as c, pytest.raises(openai.InternalServerError) as o:
            c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        assert o.value.status_code == 502 and "cannot be reached" in o.value.message
        assert o.value.response.headers[REPLY_HEADER] == "merged; reason=default"
        with ant(gateway.url) as c, pytest.raises(anthropic.InternalServerError) as a:
            c.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
        assert a.value.status_code == 502 and a.value.response.json()["type"] == "error"
        up = metrics(gateway.url)
        assert up['kvswitch_gateway_upstream_up{mode="merged"}'] == 0
    finally:
        peers.stop_gateway(gateway)


def test_the_in_flight_cap_is_a_429_with_retry_after(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings(max_in_flight=1))
    holder = socket.create_connection(("127.0.0.1", gateway.port), timeout=60)
    try:
        body = json.dumps(stream_chat(prompt(), 1500)).encode()
        holder.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %b\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (TOKEN.encode(), len(body), body)
        )
        wait_for(lambda: peers.in_flight(gateway) == 1, message="the holding stream in flight")
        with oai(f"{gateway.url}/v1") as c, pytest.raises(openai.RateLimitError) as o:
            c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        assert o.value.response.headers["Retry-After"] == "1"
        with ant(gateway.url) as c, pytest.raises(anthropic.RateLimitError) as a:
            c.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
        assert a.value.response.headers["Retry-After"] == "1"
        assert a.value.response.json()["error"]["type"] == "rate_limit_error"
    finally:
        holder.close()
        wait_for(lambda: peers.in_flight(gateway) == 0, message="the holder's close reached the gateway")
        peers.stop_gateway(gateway)
    wait_for(lambda: not any(s.get("is_processing") for s in slots(peers.merged)), message="llama idle")


# -- curl -N against `python -m kvswitch.gateway.server` ---------------------------------------------
@pytest.fixture
def gateway_process(peers: Peers) -> Iterator[str]:
    """The gateway as its own process (the entry point benchmarks use), in front of the peers."""
    env = {**os.environ, "KVSWITCH_GATEWAY_TOKEN": TOKEN}
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvswitch.gateway.server",
            "--merged",
            f"{peers.merged.url}/v1",
            "--split",
            f"{peers.router.url}/split/v1",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            line = proc.stdout.readline()
            assert line.startswith(LISTENING + " "), line
            yield line.split()[1]
        finally:
            proc.terminate()
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err  # SIGTERM: drained and ended cleanly
        assert TOKEN not in line + out + err


def test_curl_streams_through_the_gateway_process(peers: Peers, gateway_process: str) -> None:
    """``curl -N``: the first token event reaches curl while the upstream is still generating
    (the gateway passes bytes on as read), then the stream ends with [DONE]."""
    curl = require_tool("curl")
    url = gateway_process
    body = json.dumps(stream_chat(prompt(), 1200))
    with subprocess.Popen(
        [
            curl,
            "-N",
            "-sS",
            "--noproxy",
            "*",
            "-D",
            "-",
            "-H",
            f"Authorization: Bearer {TOKEN}",
            "-H",
            "X-Cache-Mode: merged",
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
            f"{url}/v1/chat/completions",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        head: list[bytes] = []
        while (line := proc.stdout.readline()) not in (b"\r\n", b""):
            head.append(line)
        assert head[0].startswith(b"HTTP/1.1 200")
        assert f"{REPLY_HEADER.lower()}: merged; reason=header".encode() in b"".join(head).lower()
        while b'"content":"' not in (line := proc.stdout.readline()) or b'"content":""' in line:
            assert line, "the stream ended before a token"
        # a token has reached curl: the gateway still has the request in flight, llama still decodes
        live = metrics(url)
        assert live['kvswitch_gateway_requests_in_flight{mode="merged"}'] == 1
        rest = proc.stdout.read()
        assert proc.wait(60) == 0, proc.stderr.read()
    assert rest.rstrip().endswith(b"data: [DONE]") and rest.count(b"data: ") >= 1000
    after = metrics(url)
    assert after['kvswitch_gateway_stream_outcome_total{api="chat",mode="merged",outcome="ok"}'] == 1
