"""The gateway's bounds and its answers when the upstream fails: body, header block, in-flight
cap, head, body, first-byte and idle timeouts, long SSE lines, an unreachable or dying upstream,
keys echoed back, and a SIGTERM that drains the streams in flight.

Real parts throughout: a :class:`Gateway` in the test's loop (or ``python -m
kvswitch.gateway.server`` in a subprocess), the deterministic SSE server or a scripted
upstream, raw bytes from the client side. No timed assertions: timeouts are set small and the
tests wait generously for what must happen.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from kvswitch.gateway.server import Gateway
from kvswitch.redact import mask
from kvswitch.testing.sse_server import SSEServer
from tests.gateway.upstreams import (
    CHAT,
    TOKEN,
    UPSTREAM_KEY,
    Reply,
    Seen,
    Upstream,
    chat_token,
    chunk,
    exchange,
    gateway,
    json_answer,
    request,
    silent,
    sse_answer,
    sse_event,
)
from tests.gateway.upstreams import (
    settings as settings_for,
)

ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"]
API = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def in_shape(route: str, reply: Reply, status: int) -> str:
    """The error message of a whole error answer, checked to be in the route's API shape."""
    assert reply.status == status, reply.data[:400]
    body = reply.json()
    if route.endswith("/messages"):
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}, body
    else:
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return str(body["error"]["message"])


def events(body: bytes) -> list[bytes]:
    return [e for e in body.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]


def error_events(route: str, body: bytes) -> list[bytes]:
    """The SSE error events in ``body``, in the forms of ``route``'s API."""
    found = []
    for event in events(body):
        if route.endswith(("/messages", "/responses")):
            if event.startswith(b"event: error\n"):
                found.append(event)
        elif event.startswith(b'data: {"error"'):
            found.append(event)
    return found


def outcome(gw: Gateway, api: str, what: str, mode: str = "merged") -> float:
    value = gw.metrics.registry.get_sample_value(
        "kvswitch_gateway_stream_outcome_total", {"mode": mode, "api": api, "outcome": what}
    )
    return value or 0.0


# -- the request's own bounds --------------------------------------------------------------------------
def test_a_body_over_the_cap_is_a_413_and_nothing_is_forwarded() -> None:
    big = b'{"x": "' + b"a" * 5000 + b'"}'
    chunked = (
        b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(chunk(big[i : i + 1000]) for i in range(0, len(big), 1000))
        + b"0\r\n\r\n"
    )

    async def go() -> tuple[Reply, Reply, Reply, Upstream]:
        async with (
            Upstream(json_answer(200, {})) as up,
            gateway(up.url, max_body=4096) as gw,
        ):
            declared = await exchange(gw.port, request("/v1/chat/completions", body=big))
            streamed = await exchange(gw.port, chunked)
            fits = await exchange(gw.port, request("/v1/chat/completions", body=big[:4000] + b'"}'))
            return declared, streamed, fits, up

    declared, streamed, fits, up = run(go())
    in_shape("/v1/chat/completions", declared, 413)
    in_shape("/v1/messages", streamed, 413)
    assert declared.closed and streamed.closed
    assert fits.status == 200 and len(up.seen) == 1


@pytest.mark.parametrize("case", ["one long header", "many headers", "long target"])
def test_a_header_block_over_the_limit_is_refused(case: str) -> None:
    extra = {
        "one long header": "X-A: " + "a" * 20000 + "\r\n",
        "many headers": "".join(f"X-{i}: a\r\n" for i in range(300)),
        "long target": "",
    }[case]
    target = "/v1/chat/completions" + ("?" + "a" * 20000 if case == "long target" else "")

    async def go() -> tuple[Reply, Reply, Upstream]:
        async with Upstream(json_answer(200, {})) as up, gateway(up.url) as gw:
            bad = await exchange(gw.port, request(target, extra=extra))
            after = await exchange(gw.port, request("/v1/chat/completions"))
            return bad, after, up

    bad, after, up = run(go())
    assert bad.status in (400, 414, 431) and bad.closed, bad.data[:300]
    assert after.status == 200 and len(up.seen) == 1


async def trickle(port: int, data: bytes, gap: float) -> bool:
    """Send ``data`` a byte every ``gap`` s: True if the gateway closed the connection first."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for byte in data:
            writer.write(bytes([byte]))
            try:
                if not await asyncio.wait_for(reader.read(65536), gap):
                    return True
            except TimeoutError:
                continue
            except ConnectionError:
                return True
        return False
    finally:
        writer.close()


@pytest.mark.parametrize("case", ["half-sent head", "trickled head", "half-sent body"])
def test_a_request_that_never_arrives_whole_is_dropped(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slowloris: a head cut short, a head sent a byte at a time (each byte does not restart the
    clock) or a body cut short is dropped once its timeout passes (a short body with a 408);
    nothing goes upstream and the gateway serves the next request."""
    import kvswitch.gateway.server as server_module

    monkeypatch.setattr(server_module, "HEAD_TIMEOUT", 0.5)
    monkeypatch.setattr(server_module, "BODY_TIMEOUT", 0.5)
    whole = request("/v1/chat/completions")
    head = whole.partition(b"\r\n\r\n")[0]

    async def go() -> tuple[Reply | bool, Reply, Upstream]:
        async with Upstream(json_answer(200, {})) as up, gateway(up.url) as gw:
            cut: Reply | bool
            if case == "trickled head":
                cut = await trickle(gw.port, head + b"\r\nX-Pad: " + b"a" * 400, 0.05)
            else:
                cut = await exchange(gw.port, head if case == "half-sent head" else whole[:-5])
            after = await exchange(gw.port, whole)
            return cut, after, up

    cut, after, up = run(go())
    if isinstance(cut, Reply):
        assert cut.closed and (case != "half-sent body" or cut.status == 408), cut.data[:300]
    else:
        assert cut, "the trickled head was still read after 400 bytes"
    assert after.status == 200 and len(up.seen) == 1


def test_over_the_in_flight_cap_is_a_429_with_retry_after() -> None:
    async def go() -> tuple[list[Reply], Reply, Upstream]:
        async with (
            Upstream(silent()) as up,
            gateway(up.url, max_in_flight=2) as gw,
        ):
            held = [asyncio.ensure_future(exchange(gw.port, request("/v1/chat/completions"), wait=3)) for _ in range(2)]
            while gw.in_flight < 2:
                await asyncio.sleep(0.01)
            over = [await exchange(gw.port, request(r, body=b"{}")) for r in ROUTES]
            for task in held:
                task.cancel()
            await asyncio.gather(*held, return_exceptions=True)
            while gw.in_flight:
                await asyncio.sleep(0.01)
            return over, await exchange(gw.port, request("/v1/models", method="GET", body=None), wait=0.5), up

    over, _, up = run(go())
    for route, reply in zip(ROUTES, over, strict=True):
        in_shape(route, reply, 429)
        assert reply.header("Retry-After") == "1"
    assert len(up.seen) == 2 + 1  # the two held, the models probe; none of the refused


def test_the_in_flight_cap_holds_for_requests_whose_bodies_arrive_together() -> None:
    """Requests that pass the cap check while their bodies are still arriving count against
    the cap: four at once with a cap of two forward at most two."""

    async def go() -> tuple[list[Reply], Upstream]:
        async with Upstream(silent()) as up, gateway(up.url, max_in_flight=2) as gw:
            conns = [await asyncio.open_connection("127.0.0.1", gw.port) for _ in range(4)]
            whole = request("/v1/chat/completions")
            for _, writer in conns:
                writer.write(whole[:-5])  # the head and most of the body
                await writer.drain()
            await asyncio.sleep(0.3)
            for _, writer in conns:
                writer.write(whole[-5:])
                await writer.drain()
            replies = []
            for reader, writer in conns:
                try:
                    data = await asyncio.wait_for(reader.read(65536), 1.5)
                except TimeoutError:
                    data = b""
                replies.append(Reply(data, False))
                writer.close()
            return replies, up

    replies, up = run(go())
    assert len(up.seen) <= 2
    assert sorted(r.status for r in replies) == [0, 0, 429, 429]


# -- the upstream's failures ---------------------------------------------------------------------------
@pytest.mark.parametrize("route", ROUTES)
def test_an_upstream_silent_before_its_first_byte_is_a_504(route: str) -> None:
    async def go() -> tuple[Reply, Gateway]:
        async with Upstream(silent()) as up, gateway(up.url, first_byte_timeout=0.3) as gw:
            return await exchange(gw.port, request(route, body=b"{}"), wait=10), gw

    reply, gw = run(go())
    assert "sent nothing within 0.3 s" in in_shape(route, reply, 504)
    assert reply.header("X-KVSwitch-Mode") == "merged; reason=default"
    assert outcome(gw, API[route], "timeout") == 1


@pytest.mark.parametrize("route", ROUTES)
def test_an_unreachable_upstream_is_a_502(route: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now

    async def go() -> tuple[Reply, Gateway]:
        async with gateway(f"http://127.0.0.1:{port}/v1") as gw:
            return await exchange(gw.port, request(route, body=b"{}"), wait=10), gw

    reply, gw = run(go())
    message = in_shape(route, reply, 502)
    assert "cannot be reached" in message and UPSTREAM_KEY not in message
    assert gw.metrics.registry.get_sample_value("kvswitch_gateway_upstream_up", {"mode": "merged"}) == 0


def test_an_upstream_silent_mid_stream_gets_one_error_event_then_the_close() -> None:
    async def go() -> tuple[Reply, Reply, Gateway]:
        with SSEServer(ttft_ms=5, itl_ms=5, tokens=2, scenario="stall") as server:
            async with gateway(server.url, idle_timeout=0.3) as gw:
                stalled = await exchange(gw.port, request("/v1/chat/completions"), wait=10)
                after = await exchange(gw.port, request("/v1/chat/completions", extra="X-Test-Scenario: ok\r\n"))
                return stalled, after, gw

    stalled, after, gw = run(go())
    assert stalled.status == 200 and stalled.closed
    errors = error_events("/v1/chat/completions", stalled.body)
    assert len(errors) == 1 and events(stalled.body)[-1] == errors[0]
    error = json.loads(errors[0].removeprefix(b"data: "))["error"]
    assert error["code"] == "timeout" and "sent nothing for 0.3 s" in error["message"]
    assert b'"role": "assistant"' in stalled.body  # what came before passed through
    assert outcome(gw, "chat", "timeout") == 1
    assert after.status == 200 and b"[DONE]" in after.body


def test_an_sse_line_over_the_bound_passes_unharmed_and_the_gateway_survives() -> None:
    long_line = b'data: {"choices": [{"index": 0, "delta": {"content": "' + b"x" * 200_000 + b'"}}]}\n\n'
    writes = [chat_token("a"), long_line[:70_000], long_line[70_000:], chat_token("b"), b"data: [DONE]\n\n"]

    async def go() -> tuple[Reply, Reply, Gateway]:
        async with (
            Upstream(sse_answer(writes)) as up,
            gateway(up.url, max_sse_line=4096) as gw,
        ):
            long = await exchange(gw.port, request("/v1/chat/completions"), wait=10)
            again = await exchange(gw.port, request("/v1/chat/completions"), wait=10)
            return long, again, gw

    long, again, gw = run(go())
    for reply in (long, again):
        assert reply.status == 200 and reply.complete
        assert reply.body == b"".join(writes)  # byte for byte
    assert outcome(gw, "chat", "ok") == 2


# -- the upstream key never comes back -------------------------------------------------------------
def test_an_upstream_error_that_echoes_the_key_comes_back_masked(caplog: pytest.LogCaptureFixture) -> None:
    echo = {"error": {"message": f"invalid key {UPSTREAM_KEY} (Bearer {UPSTREAM_KEY})", "type": "auth"}}
    page = f"<html>bad key {UPSTREAM_KEY}</html>".encode()

    async def go() -> list[Reply]:
        async with (
            Upstream(json_answer(401, echo)) as shaped,
            Upstream(json_answer(403, page)) as html,
            gateway(shaped.url, html.url) as gw,
        ):
            return [
                await exchange(gw.port, request(r, body=b"{}", extra=f"X-Cache-Mode: {m}\r\n"))
                for r in ("/v1/chat/completions", "/v1/messages")
                for m in ("merged", "split")
            ]

    with caplog.at_level(logging.DEBUG):
        replies = run(go())
    for reply in replies:
        assert reply.status in (401, 403)
        text = reply.data.decode()
        assert UPSTREAM_KEY not in text and UPSTREAM_KEY[3:-4] not in text
    assert mask(UPSTREAM_KEY) in replies[0].body.decode()
    assert UPSTREAM_KEY[3:-4] not in caplog.text and TOKEN not in caplog.text  # nor in the log


@pytest.mark.parametrize("cut", [1, 5, 17, len(UPSTREAM_KEY) - 1])
def test_a_stream_that_echoes_the_key_comes_back_masked_even_split_across_reads(cut: int) -> None:
    echoed = sse_event({"choices": [{"index": 0, "delta": {"content": f"key={UPSTREAM_KEY}!"}}]})
    at = echoed.index(UPSTREAM_KEY.encode()) + cut
    writes = [chat_token("a"), echoed[:at], echoed[at:], sse_event({"note": UPSTREAM_KEY}), b"data: [DONE]\n\n"]

    async def go() -> Reply:
        async with Upstream(sse_answer(writes, gap=0.05)) as up, gateway(up.url) as gw:
            return await exchange(gw.port, request("/v1/chat/completions"), wait=10)

    reply = run(go())
    assert reply.status == 200 and reply.complete
    assert UPSTREAM_KEY.encode() not in reply.data
    assert reply.body == b"".join(writes).replace(UPSTREAM_KEY.encode(), mask(UPSTREAM_KEY).encode())


# -- a begun stream that breaks ---------------------------------------------------------------------
FIRST = {
    "/v1/chat/completions": chat_token("hello"),
    "/v1/completions": sse_event({"choices": [{"index": 0, "text": "hello"}]}),
    "/v1/responses": sse_event({"type": "response.output_text.delta", "delta": "hello"}, "response.output_text.delta"),
    "/v1/messages": sse_event(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}},
        "content_block_delta",
    ),
}


@pytest.mark.parametrize("how", ["abort", "close"])
@pytest.mark.parametrize("route", ROUTES)
def test_an_upstream_that_dies_mid_stream_gets_exactly_one_error_event(route: str, how: str) -> None:
    """The first event half-sent, then the connection reset (or closed without the last
    chunk): the client gets what came, one error event in its API's form, then the end."""
    first = FIRST[route]
    writes = [first, b'data: {"partial']

    async def go() -> tuple[Reply, Reply, Gateway]:
        async with Upstream(sse_answer(writes, then=how)) as up, gateway(up.url) as gw:
            broken = await exchange(gw.port, request(route), wait=10)
            up.script = json_answer(200, {"ok": True})
            after = await exchange(gw.port, request(route))
            return broken, after, gw

    broken, after, gw = run(go())
    assert broken.status == 200 and broken.closed
    assert broken.complete  # the gateway ended its own chunked body properly
    assert broken.header("X-KVSwitch-Mode") == "merged; reason=default"
    body = broken.body
    assert body.startswith(first)
    errors = error_events(route, body)
    assert len(errors) == 1, body
    assert body.endswith(errors[0] + b"\n\n")
    assert b"\n\n" + errors[0] in body  # on an event boundary after the half-sent line
    payload = json.loads(errors[0].split(b"data: ", 1)[1])
    if route == "/v1/messages":
        assert payload["type"] == "error" and payload["error"]["type"] == "api_error"
    elif route == "/v1/responses":
        assert payload["type"] == "error" and payload["code"] == "upstream_error"
    else:
        assert payload["error"]["code"] == "upstream_error"
    assert outcome(gw, API[route], "upstream_error") == 1
    assert outcome(gw, API[route], "ok") == 0
    assert after.status == 200


def test_an_in_band_error_event_is_counted_as_inband_error() -> None:
    async def go() -> tuple[Reply, Gateway]:
        with SSEServer(ttft_ms=5, itl_ms=5, tokens=2, scenario="error-event") as server:
            async with gateway(server.url) as gw:
                return await exchange(gw.port, request("/v1/chat/completions")), gw

    reply, gw = run(go())
    assert reply.status == 200 and reply.complete
    assert len(error_events("/v1/chat/completions", reply.body)) == 1  # the upstream's own, once
    assert outcome(gw, "chat", "inband_error") == 1 and outcome(gw, "chat", "ok") == 0


def test_a_stream_that_ends_well_is_counted_ok() -> None:
    async def go() -> tuple[Reply, Gateway]:
        with SSEServer(ttft_ms=5, itl_ms=5, tokens=3) as server:
            async with gateway(server.url) as gw:
                return await exchange(gw.port, request("/v1/chat/completions")), gw

    reply, gw = run(go())
    assert reply.status == 200 and reply.complete and b"[DONE]" in reply.body
    assert error_events("/v1/chat/completions", reply.body) == []
    assert outcome(gw, "chat", "ok") == 1


# -- SIGTERM drains ------------------------------------------------------------------------------------
def _gateway_process(upstream: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kvswitch.gateway.server", "--merged", upstream, "--split", upstream, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KVSWITCH_GATEWAY_TOKEN": TOKEN},
    )


def _listening(proc: subprocess.Popen[str]) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("LISTENING http://127.0.0.1:"), line
    return int(line.rsplit(":", 1)[1])


@pytest.mark.slow
def test_sigterm_lets_a_stream_in_flight_finish_refuses_new_connections_and_exits_0() -> None:
    with (
        SSEServer(ttft_ms=100, itl_ms=100, tokens=20) as server,
        _gateway_process(server.url) as proc,
    ):  # a stream of about 2 s
        try:
            port = _listening(proc)
            with socket.create_connection(("127.0.0.1", port), timeout=15) as conn:
                conn.sendall(request("/v1/chat/completions", body=json.dumps({**CHAT, "max_tokens": 20}).encode()))
                got = bytearray(conn.recv(65536))
                while b"tok0" not in got:
                    got += conn.recv(65536)
                proc.send_signal(signal.SIGTERM)
                refused = False
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:  # the listener closes soon after the signal
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    except (ConnectionRefusedError, ConnectionResetError):
                        # a connect that lands in the backlog as the listener closes is reset,
                        # not refused: either way no new connection is served
                        refused = True
                        break
                    time.sleep(0.05)
                while part := conn.recv(65536):
                    got += part
            _, stderr = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    reply = Reply(bytes(got), True)
    assert reply.status == 200 and reply.complete
    assert reply.body.count(b'"content": "tok') == 20 and b"[DONE]" in reply.body
    assert refused
    assert proc.returncode == 0
    assert "Traceback" not in stderr


@pytest.mark.parametrize("drain", [0.0, 0.3])
def test_close_cuts_streams_that_outlast_the_drain_even_a_drain_of_zero(drain: float) -> None:
    """``close(drain)`` returns once the drain is over; 0 means cut now (aiohttp reads a
    timeout of 0 as none at all, which made a drain of 0 wait for ever)."""

    async def go() -> tuple[Reply, bool]:
        with SSEServer(ttft_ms=5, itl_ms=5, tokens=2, scenario="stall") as server:
            gw = Gateway(settings_for(server.url))
            await gw.start()
            client = asyncio.ensure_future(exchange(gw.port, request("/v1/chat/completions"), wait=20))
            while gw.in_flight == 0:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            closing = asyncio.ensure_future(gw.close(drain))
            done, _ = await asyncio.wait({closing}, timeout=10)
            if not done:
                closing.cancel()
            reply = await client
            return reply, bool(done)

    reply, closed = run(go())
    assert closed, "close() did not return"
    assert reply.status == 200 and reply.closed


@pytest.mark.parametrize("route", ROUTES)
def test_a_stream_cut_at_the_end_of_the_drain_gets_an_error_event_not_a_silent_cut(route: str) -> None:
    """A stream still running when the drain is over ends with one error event in its API's
    form and a proper end of the body; a request still waiting for its first byte gets a 503."""

    async def go() -> tuple[Reply, Reply, Gateway, float]:
        async with (
            Upstream(sse_answer([FIRST[route]], then="hang")) as streaming,
            Upstream(silent()) as waiting,
        ):
            gw = Gateway(settings_for(streaming.url, waiting.url))
            await gw.start()
            cut = asyncio.ensure_future(exchange(gw.port, request(route), wait=20))
            queued = asyncio.ensure_future(exchange(gw.port, request(route, extra="X-Cache-Mode: split\r\n"), wait=20))
            while gw.in_flight < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            await asyncio.wait_for(gw.close(0.3), 20)
            return await cut, await queued, gw, outcome(gw, API[route], "timeout")

    cut, queued, gw, timeouts = run(go())
    assert cut.status == 200 and cut.closed and cut.complete
    assert cut.body.startswith(FIRST[route])
    errors = error_events(route, cut.body)
    assert len(errors) == 1 and cut.body.endswith(errors[0] + b"\n\n")
    assert b"stopping" in errors[0]
    assert "stopping" in in_shape(route, queued, 503)
    assert timeouts == 1
    assert gw.in_flight == 0


def test_a_reader_that_stops_reading_is_let_go_after_the_idle_timeout() -> None:
    """Backpressure, then a timeout: the gateway stops reading the upstream while the client
    takes nothing, and after ``idle_timeout`` it lets the client go and frees its place."""

    async def go() -> tuple[Gateway, int]:
        body = json.dumps({**CHAT, "max_tokens": 10_000_000}).encode()
        with SSEServer(ttft_ms=0, itl_ms=0, tokens=10_000_000) as endless:
            async with gateway(endless.url, idle_timeout=0.5) as gw:
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.setblocking(False)
                await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", gw.port))
                await asyncio.get_running_loop().sock_sendall(sock, request("/v1/chat/completions", body=body))
                for _ in range(3000):  # the client reads nothing; wait (30 s at most) for the cut
                    await asyncio.sleep(0.01)
                    if gw.in_flight == 0:
                        break
                left = gw.in_flight
                sock.close()
                return gw, left

    gw, left = run(go())
    assert left == 0
    assert outcome(gw, "chat", "timeout") == 1


def test_a_request_the_upstream_hung_up_on_is_not_sent_twice() -> None:
    """An upstream that reads a request and closes the connection without an answer saw it:
    a new connection's request is not sent again (a second generation), it is a 502."""

    async def hang_up(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def go() -> tuple[Reply, Upstream]:
        async with Upstream(hang_up) as up, gateway(up.url) as gw:
            return await exchange(gw.port, request("/v1/chat/completions"), wait=10), up

    reply, up = run(go())
    in_shape("/v1/chat/completions", reply, 502)
    assert len(up.seen) == 1


def test_a_kept_alive_connection_the_upstream_closed_is_retried_once() -> None:
    """The other side of the rule above: a pooled connection the upstream closed after its
    last answer (llama.cpp does) costs the next request nothing."""

    async def once_then_close(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = b'{"ok": true}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (len(data), data)
        )
        await writer.drain()
        await asyncio.sleep(0.2)  # closes after the gateway pooled the connection
        writer.close()

    async def go() -> tuple[list[Reply], Upstream]:
        async with Upstream(once_then_close) as up, gateway(up.url) as gw:
            first = await exchange(gw.port, request("/v1/chat/completions"))
            await asyncio.sleep(0.5)
            return [first, await exchange(gw.port, request("/v1/chat/completions"))], up

    replies, up = run(go())
    assert [r.status for r in replies] == [200, 200]
    assert len(up.seen) == 2
