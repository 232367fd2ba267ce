"""A client that goes away cancels the upstream's work, in every phase, proven by the
upstream's own counters (llama.cpp's ``/metrics`` and ``/slots``, the lab router's counters and
slot folder) — and an upstream that dies mid-stream gives the client one error event in its
API's shape, then the close.

What this llama.cpp build does with a closed connection sets what each test can prove: it
notices the close only when it has something to send (a token, or a progress event when the
request asked for ``return_progress``) or, for a queued request, when it takes it up. So:

* waiting for a slot: the queued request is dropped at its first step — it decodes nothing and
  processes less than its prompt;
* prefill, with progress events: cut mid-prompt (prompt tokens processed < the prompt);
  prefill in silence: the gateway closes its upstream connection at once (an upstream that
  watches its socket, ``close-watch``, sees it before sending anything), and llama.cpp decodes
  at most one token;
* the split hand-off: the lab router drops a request waiting for a decode slot with its slot
  file, and the decode server never sees it;
* mid-stream: llama.cpp stops within a few tokens of what the client had read.

Waits are generous and only end hung tests; nothing asserts a duration.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from kvswitch.gateway.server import Gateway
from kvswitch.lab.llama import LlamaServer
from kvswitch.lab.router import HANDOFF_PREFIX
from kvswitch.testing.sse_server import SSEServer
from tests.gateway.conftest import (
    MODEL,
    TOKEN,
    Peers,
    ant,
    busy,
    handoffs,
    llama_counts,
    llama_server,
    metrics,
    oai,
    outcome,
    stream_chat,
    wait_for,
)
from tests.lab import support

MID_STREAM_SLACK = 16
"""Tokens llama.cpp may decode between the client's close and its own stop: those already on
their way (in the gateway's and the sockets' buffers). Measured here: 1–2 past the 12 read."""


class Raw:
    """A request on a socket of its own, read as far as a test needs, then closed (a client
    that goes away)."""

    def __init__(self, port: int, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items()).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.sendall(
            b"POST %b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%b"
            b"Content-Length: %d\r\n\r\n%b" % (path.encode(), extra, len(data), data)
        )
        self.got = b""

    def read_until(self, marker: bytes, count: int = 1) -> bytes:
        while self.got.count(marker) < count:
            chunk = self.sock.recv(65536)
            assert chunk, f"the connection ended before {count}× {marker!r}: {self.got[-300:]!r}"
            self.got += chunk
        return self.got

    def tokens(self) -> int:
        """Token events read so far (Chat Completions)."""
        return sum(1 for line in self.got.split(b"\n") if b'"content":"' in line and b'"content":""' not in line)

    def close(self) -> None:
        self.sock.close()


def gw(peers: Peers, path: str, body: dict[str, Any]) -> Raw:
    return Raw(peers.gateway.port, path, body, {"Authorization": f"Bearer {TOKEN}"})


def chat(content: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return stream_chat(content, max_tokens, cache_prompt=False, **extra)


def long_prompt(words: int, seed: int) -> str:
    return f"[{support.nonce()}] " + support.words(words, seed)


def disconnects(peers: Peers) -> float:
    return outcome(peers.gateway.url, "client_disconnect")


def idle(server: LlamaServer) -> None:
    wait_for(lambda: busy(server) == 0, message=f"{server!r} idle")


def gateway_idle(peers: Peers) -> None:
    wait_for(lambda: peers.in_flight() == 0, message="the gateway has nothing in flight")


# -- 1. waiting for an upstream slot ---------------------------------------------------------------
def test_a_request_waiting_for_a_slot_never_decodes(peers: Peers) -> None:
    """Both llama.cpp slots busy: the request waits in llama.cpp's queue; its client goes away;
    when the slots free up llama.cpp drops it at its first step: no token of it is decoded, less
    than its prompt is processed."""
    m = peers.merged
    port = int(m.url.rsplit(":", 1)[1])
    occupants = [Raw(port, "/v1/chat/completions", chat(long_prompt(8, i), 1000)) for i in range(2)]
    try:
        for o in occupants:
            o.read_until(b'"content":"', 2)  # decoding: their prompts are counted already
        d0, before = disconnects(peers), llama_counts(m)
        waiter_words = 600
        waiter = gw(peers, "/v1/chat/completions", chat(long_prompt(waiter_words, 9), 50))
        wait_for(
            lambda: metrics(m.url)["llamacpp:requests_deferred"] >= 1,
            message="the request queued in llama.cpp",
        )
        waiter.close()
        gateway_idle(peers)  # the gateway saw the close and dropped its upstream request
        assert disconnects(peers) == d0 + 1
        for o in occupants:
            o.read_until(b"data: [DONE]")
    finally:
        for o in occupants:
            o.close()
    idle(m)
    after = llama_counts(m)
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] == 2 * 1000  # the occupants' only
    assert after["prompt_tokens_total"] - before["prompt_tokens_total"] < waiter_words


# -- 2. prefill ------------------------------------------------------------------------------------
def test_a_close_during_prefill_cuts_the_prompt(peers: Peers) -> None:
    """A 3,000-token prompt, closed once llama.cpp has begun it (its progress events reach the
    client through the gateway): llama.cpp stops mid-prompt."""
    m = peers.merged
    prompt_words = 3000
    d0, before = disconnects(peers), llama_counts(m)
    r = gw(peers, "/v1/chat/completions", chat(long_prompt(prompt_words, 11), 64, return_progress=True))
    r.read_until(b'"prompt_progress"')
    r.close()
    gateway_idle(peers)
    idle(m)
    after = llama_counts(m)
    processed = after["prompt_tokens_total"] - before["prompt_tokens_total"]
    assert 0 < processed < prompt_words, processed
    assert after["tokens_predicted_total"] == before["tokens_predicted_total"]
    assert disconnects(peers) == d0 + 1


def test_a_close_during_a_silent_prefill_closes_the_upstream_connection(peers: Peers) -> None:
    """No byte has come from the upstream yet, so only the client's socket tells the gateway:
    an upstream that watches its connection (and sends nothing for 60 s) sees it closed."""
    with SSEServer(ttft_ms=60_000, scenario="close-watch", model=MODEL) as upstream:
        gateway = peers.start_gateway(peers.settings(merged=upstream.url))
        try:
            r = Raw(
                gateway.port,
                "/v1/chat/completions",
                chat("silent", 8),
                {"Authorization": f"Bearer {TOKEN}"},
            )
            wait_for(
                lambda: peers.in_flight(gateway) == 1 and upstream.requests.get("merged", 0) == 1,
                message="the request reached the upstream",
            )
            r.close()
            wait_for(lambda: len(upstream.closes) == 1, message="the upstream saw its connection closed")
            assert upstream.closes[0].closed is not None and upstream.closes[0].tokens_sent == 0
            wait_for(lambda: peers.in_flight(gateway) == 0)
            assert outcome(gateway.url, "client_disconnect") == 1
        finally:
            peers.stop_gateway(gateway)


def test_llama_decodes_nothing_after_a_close_during_a_silent_prefill(peers: Peers) -> None:
    """The same against llama.cpp: it finishes the prompt it had begun (it does not watch its
    sockets) but decodes at most one token of the 64 asked for."""
    m = peers.merged
    d0, before = disconnects(peers), llama_counts(m)
    r = gw(peers, "/v1/chat/completions", chat(long_prompt(800, 13), 64))
    wait_for(lambda: busy(m) == 1, message="llama.cpp prefilling")
    r.close()
    gateway_idle(peers)
    idle(m)
    after = llama_counts(m)
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] <= 2
    assert disconnects(peers) == d0 + 1


# -- 3. the split hand-off ---------------------------------------------------------------------------
def _slot_files(peers: Peers) -> list[Path]:
    return sorted(peers.slot_dir.glob(HANDOFF_PREFIX + "*"))


def test_a_close_during_the_split_handoff_drops_it(peers: Peers) -> None:
    """Two split streams hold both of the router's decode slots; a third is prefilled and its KV
    saved to a slot file, then waits for a decode slot. Its client goes away: the router drops
    it and its slot file, and the decode server never restores or decodes it."""
    router = peers.router.url
    occupants = [gw(peers, "/split/v1/chat/completions", chat(long_prompt(8, 20 + i), 1200)) for i in range(2)]
    try:
        for o in occupants:
            o.read_until(b'"content":"', 2)
        h0, d_before, d0 = handoffs(peers), llama_counts(peers.decode), disconnects(peers)
        third = gw(peers, "/split/v1/chat/completions", chat(long_prompt(40, 23), 8))

        def waiting_with_its_file() -> bool:
            latest = httpx.get(f"{router}/lab/handoffs", timeout=30, trust_env=False).json()["handoffs"][-1]
            return latest["save_ms"] is not None and latest["decode_slot"] is None and len(_slot_files(peers)) == 1

        wait_for(waiting_with_its_file, message="the third request saved, waiting for a decode slot")
        third.close()
        wait_for(
            lambda: metrics(router)['kvswitch_lab:requests_in_flight{mode="split"}'] == 2,
            message="the router dropped the third request",
        )
        assert _slot_files(peers) == []  # its KV cache file is gone
        assert disconnects(peers) == d0 + 1
    finally:
        for o in occupants:
            o.close()  # mid-stream, through the router
    wait_for(
        lambda: metrics(router)['kvswitch_lab:requests_in_flight{mode="split"}'] == 0,
        message="router idle",
    )
    idle(peers.decode)
    assert handoffs(peers) == h0  # the occupants' were counted before; the third never restored
    after = llama_counts(peers.decode)
    # the decode server saw only the occupants: no prompt of the third was restored or evaluated
    assert after["prompt_tokens_total"] == d_before["prompt_tokens_total"]
    assert _slot_files(peers) == []
    assert disconnects(peers) == d0 + 3


def test_a_close_during_the_split_prefill_step_hands_nothing_over(peers: Peers) -> None:
    """Closed while the prefill server works on the prompt (the first step of the hand-off):
    nothing is saved, restored or decoded, and no slot file is left."""
    router = peers.router.url
    h0, d_before, d0 = handoffs(peers), llama_counts(peers.decode), disconnects(peers)
    r = gw(peers, "/split/v1/chat/completions", chat(long_prompt(600, 24), 8))
    wait_for(lambda: busy(peers.prefill) == 1, message="the prefill server at work")
    r.close()
    wait_for(
        lambda: metrics(router)['kvswitch_lab:requests_in_flight{mode="split"}'] == 0,
        message="the router dropped the request",
    )
    idle(peers.prefill)
    assert handoffs(peers) == h0
    assert llama_counts(peers.decode) == d_before
    assert _slot_files(peers) == []
    assert disconnects(peers) == d0 + 1


# -- 4. mid-stream -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["merged", "split"])
def test_a_close_mid_stream_stops_decoding(peers: Peers, mode: str) -> None:
    server = peers.merged if mode == "merged" else peers.decode
    d0, before = disconnects(peers), llama_counts(server)
    r = gw(peers, f"/{mode}/v1/chat/completions", chat(long_prompt(8, 30), 3000))
    r.read_until(b'"content":"', 12)
    read = r.tokens()
    r.close()
    gateway_idle(peers)
    idle(server)
    decoded = llama_counts(server)["tokens_predicted_total"] - before["tokens_predicted_total"]
    assert read <= decoded <= read + MID_STREAM_SLACK, (read, decoded)
    assert disconnects(peers) == d0 + 1


# -- an upstream killed mid-stream ------------------------------------------------------------------------
@pytest.fixture
def doomed(peers: Peers) -> Iterator[tuple[LlamaServer, Gateway]]:
    """A llama.cpp server of its own (to be SIGKILLed) and a gateway in front of it."""
    folder = peers.model_path.parent
    server = llama_server(
        peers.model_path,
        folder,
        f"doomed-{support.nonce()}",
        ctx_size=4096,
        n_batch=512,
        n_ubatch=512,
        parallel=1,
    ).start()
    gateway = peers.start_gateway(peers.settings(merged=f"{server.url}/v1", split=f"{server.url}/v1"))
    try:
        yield server, gateway
    finally:
        peers.stop_gateway(gateway)
        server.stop()


def _kill(server: LlamaServer) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)


def _events(body: bytes) -> list[bytes]:
    return [e for e in body.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]


def test_an_upstream_killed_mid_stream_ends_with_one_error_event(
    doomed: tuple[LlamaServer, Gateway],
) -> None:
    """Chat Completions, read raw: the tokens, then exactly one ``data: {"error": …}`` event,
    then the end of the response (no [DONE], nothing after it)."""
    server, gateway = doomed
    body = chat(long_prompt(8, 40), 3000)
    with (
        httpx.Client(trust_env=False, timeout=120) as c,
        c.stream(
            "POST",
            f"{gateway.url}/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as r,
    ):
        assert r.status_code == 200
        got = b""
        it = r.iter_raw()
        while got.count(b'"content":"') < 3:
            got += next(it)
        _kill(server)
        for chunk in it:
            got += chunk
    events = _events(got)
    errors = [e for e in events if b'"error"' in e]
    assert len(errors) == 1 and events[-1] == errors[0], events[-3:]
    error = json.loads(errors[0].removeprefix(b"data: "))["error"]
    assert error["code"] == "upstream_error" and "broke the stream" in error["message"]
    assert b"[DONE]" not in got
    assert outcome(gateway.url, "upstream_error") == 1


def test_an_upstream_killed_mid_stream_is_an_openai_api_error(
    doomed: tuple[LlamaServer, Gateway],
) -> None:
    server, gateway = doomed
    seen = 0
    with oai(f"{gateway.url}/v1") as c:
        stream = c.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": long_prompt(8, 41)}],
            max_tokens=3000,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        with pytest.raises(openai.APIError) as info:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    seen += 1
                    if seen == 3:
                        _kill(server)
    assert seen >= 3 and "broke the stream" in info.value.message
    assert outcome(gateway.url, "upstream_error") == 1


def test_an_upstream_killed_mid_stream_is_an_anthropic_error(
    doomed: tuple[LlamaServer, Gateway],
) -> None:
    server, gateway = doomed
    seen = 0
    with (
        ant(gateway.url) as c,
        c.messages.stream(
            model=MODEL,
            max_tokens=3000,
            messages=[{"role": "user", "content": long_prompt(8, 42)}],
            extra_body={"ignore_eos": True},
        ) as s,
        pytest.raises(anthropic.APIStatusError) as info,
    ):
        for event in s:
            if event.type == "content_block_delta":
                seen += 1
                if seen == 3:
                    _kill(server)
    assert seen >= 3
    body = info.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["error"]["type"] == "api_error"
    assert "broke the stream" in body["error"]["message"]
    assert outcome(gateway.url, "upstream_error", "merged") == 1
    with contextlib.suppress(Exception):
        s.close()
