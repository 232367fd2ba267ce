"""The gateway in front of the lab: merged = the lab's merged llama.cpp server, split = the lab
router's ``/split/v1`` (prefill server → slot file → decode server).

Routing is proven by the upstreams' own counters, not by the gateway's word: the lab router's
``kvswitch_lab:kv_handoffs_total`` moves once per split request and never for a merged one,
while the merged server's ``llamacpp:tokens_predicted_total`` moves only for merged ones. A
live flip with 8 streams in flight breaks none of them, each finishes in the mode it began
in, and the next request takes the new mode — by ``Gateway.set_mode`` and by the control
socket ``kvswitch switch`` uses. No timing is asserted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from kvswitch.gateway import control
from kvswitch.gateway.server import REPLY_HEADER
from tests.gateway.conftest import (
    AUTH,
    MODEL,
    Peers,
    ant,
    client,
    handoffs,
    llama_counts,
    metrics,
    stream_chat,
    wait_for,
)
from tests.lab import support


def prompt(n: int = 12) -> str:
    return f"[{support.nonce()}] " + support.words(n, 5)


# -- mode by path, header or default: proven by the lab router's hand-off counter -----------------------
def _chat(url: str, headers: dict[str, str], *, stream: bool) -> tuple[str, str]:
    """One request of 4 tokens (chat, or a completion on …/completions): (X-KVSwitch-Mode, body)."""
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 4, "ignore_eos": True, "stream": stream}
    if url.endswith("/chat/completions"):
        body["messages"] = [{"role": "user", "content": prompt()}]
    else:
        body["prompt"] = prompt()
    with client() as c:
        r = c.post(url, json=body, headers={**AUTH, **headers})
        assert r.status_code == 200, r.text
        return r.headers[REPLY_HEADER], r.text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_routing_is_proven_by_the_lab_handoff_counter(peers: Peers, stream: bool) -> None:
    """Path prefix, then header, then the gateway's mode: each request lands where asked, and
    the lab router's hand-off counter moves only for split ones (merged ones reach the merged
    llama server's own counters instead)."""
    g = peers.gateway.url
    cases = [
        (f"{g}/v1/chat/completions", {}, "merged; reason=default"),
        (f"{g}/v1/chat/completions", {"X-Cache-Mode": "split"}, "split; reason=header"),
        (f"{g}/v1/chat/completions", {"X-Cache-Mode": "Merged"}, "merged; reason=header"),
        (f"{g}/split/v1/chat/completions", {}, "split; reason=path"),
        (f"{g}/merged/v1/chat/completions", {"X-Cache-Mode": "split"}, "merged; reason=path"),
        (f"{g}/split/v1/completions", {"X-Cache-Mode": "merged"}, "split; reason=path"),
    ]
    before = metrics(peers.router.url)  # other tests' split requests (some cancelled) came first
    for url, headers, expected in cases:
        h0, m0 = handoffs(peers), llama_counts(peers.merged)["tokens_predicted_total"]
        got, text = _chat(url, headers, stream=stream)
        assert got == expected, (url, headers)
        split = expected.startswith("split")
        assert handoffs(peers) == h0 + (1 if split else 0), (url, headers)
        assert llama_counts(peers.merged)["tokens_predicted_total"] == m0 + (0 if split else 4), (
            url,
            headers,
        )
        assert ("data: [DONE]" in text) == stream
    old = peers.set_mode("split")
    try:
        h0 = handoffs(peers)
        assert _chat(f"{g}/v1/chat/completions", {}, stream=stream)[0] == "split; reason=default"
        assert handoffs(peers) == h0 + 1
    finally:
        peers.set_mode(old)
    # the lab router saw split requests only (the merged upstream is the llama server itself)
    m = metrics(peers.router.url)
    split_key, handoff_key = 'kvswitch_lab:requests_total{mode="split"}', "kvswitch_lab:kv_handoffs_total"
    assert m[split_key] - before[split_key] == m[handoff_key] - before[handoff_key] == 4
    assert m['kvswitch_lab:requests_total{mode="merged"}'] == 0


# -- a live flip ---------------------------------------------------------------------------------------
STREAMS = 8
FLIP_TOKENS = 300


@dataclass
class Run:
    """One stream of the flip: the mode the gateway said, its last event, its token count."""

    api: str
    mode: str = ""
    ended: str = ""
    tokens: int = 0
    kinds: list[str] = field(default_factory=list)


def _chat_stream(url: str, run: Run, seen: threading.Event) -> Run:
    body = stream_chat(prompt(), FLIP_TOKENS)
    with (
        client() as c,
        c.stream("POST", f"{url}/v1/chat/completions", json=body, headers=AUTH) as r,
    ):
        run.mode = r.headers.get(REPLY_HEADER, "")
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            run.ended = line[6:]
            if '"content":"' in line and '"content":""' not in line:
                run.tokens += 1
                seen.set()
    return run


def _messages_stream(url: str, run: Run, seen: threading.Event) -> Run:
    with (
        ant(url) as c,
        c.messages.stream(
            model=MODEL,
            max_tokens=FLIP_TOKENS,
            messages=[{"role": "user", "content": prompt()}],
            extra_body={"ignore_eos": True},
        ) as s,
    ):
        run.mode = s.response.headers.get(REPLY_HEADER, "")
        for event in s:
            run.kinds.append(event.type)
            if event.type == "content_block_delta":
                run.tokens += 1
                seen.set()
        run.ended = run.kinds[-1] if run.kinds else ""
    return run


def _flip(peers: Peers, begin: str, to: str, apis: list[str], tell: Callable[[], int]) -> None:
    """Start STREAMS streams in mode ``begin``; once all are in flight and tokens flow, flip to
    ``to`` (``tell`` returns the gateway's in-flight count at the flip); none breaks, each ends
    in ``begin``, and the next request takes ``to``."""
    assert peers.gateway.mode == begin
    g = peers.gateway.url
    h0, m0 = handoffs(peers), llama_counts(peers.merged)["tokens_predicted_total"]
    seen = threading.Event()
    runs = [Run(api) for api in apis]
    with ThreadPoolExecutor(STREAMS) as pool:
        futures = [pool.submit(_chat_stream if r.api == "chat" else _messages_stream, g, r, seen) for r in runs]
        wait_for(
            lambda: peers.in_flight() == STREAMS and seen.is_set(),
            message=f"{STREAMS} streams in flight, tokens flowing",
        )
        in_flight_at_flip = tell()
        done = [f.result(120) for f in futures]  # a broken stream raises here
    assert in_flight_at_flip == STREAMS
    for run in done:
        assert run.mode == f"{begin}; reason=default", run
        assert run.tokens == FLIP_TOKENS, run
        assert run.ended == ("[DONE]" if run.api == "chat" else "message_stop"), run
    h1, m1 = handoffs(peers), llama_counts(peers.merged)["tokens_predicted_total"]
    if begin == "merged":  # they finished where they began: no hand-off for any of them
        assert (h1 - h0, m1 - m0) == (0, STREAMS * FLIP_TOKENS)
    else:  # one hand-off each, the merged server untouched
        assert (h1 - h0, m1 - m0) == (STREAMS, 0)
    # the next request takes the new mode
    with client() as c:
        r = c.post(
            f"{g}/v1/chat/completions",
            headers=AUTH,
            json={
                "model": MODEL,
                "messages": [{"role": "user", "content": prompt()}],
                "max_tokens": 3,
                "ignore_eos": True,
            },
        )
    assert r.status_code == 200, r.text
    assert r.headers[REPLY_HEADER] == f"{to}; reason=default"
    assert handoffs(peers) - h1 == (1 if to == "split" else 0)
    assert llama_counts(peers.merged)["tokens_predicted_total"] - m1 == (3 if to == "merged" else 0)
    outcomes = metrics(g)
    assert (
        outcomes.get(
            f'kvswitch_gateway_stream_outcome_total{{api="chat",mode="{begin}",outcome="upstream_error"}}',
            0,
        )
        == 0
    )


def test_a_live_flip_breaks_no_stream_set_mode(peers: Peers) -> None:
    """merged → split with ``Gateway.set_mode``, on the gateway's own loop, at the instant all 8
    (4 Chat Completions through httpx, 4 Messages through the anthropic SDK) are in flight."""

    def tell() -> int:
        def flip() -> int:
            n = peers.gateway.in_flight
            assert peers.gateway.set_mode("split") == "merged"
            return n

        return peers.loop.run(flip)

    try:
        _flip(peers, "merged", "split", ["chat", "messages"] * (STREAMS // 2), tell)
    finally:
        peers.set_mode("merged")


def test_a_live_flip_breaks_no_stream_control_socket(peers: Peers) -> None:
    """split → merged through the control socket (what ``kvswitch switch`` does for a running
    gateway), with 8 split streams in flight through the lab router."""
    path = control.socket_path()
    ctl = control.ControlServer(peers.gateway, path)
    peers.loop.call(ctl.start())
    peers.set_mode("split")

    def tell() -> int:
        info = control.tell_mode("merged")
        assert info is not None and info.mode == "merged"
        return info.in_flight

    try:
        _flip(peers, "split", "merged", ["chat"] * STREAMS, tell)
    finally:
        peers.set_mode("merged")
        peers.loop.call(ctl.close())
    assert not path.exists()
