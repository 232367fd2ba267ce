"""The lab router under hostile clients: it is not an open proxy, it never hangs on a client,
and it frames messages by RFC 9112.

Every scenario speaks raw bytes over a socket to a real :class:`Router` whose three upstreams
are kvswitch's deterministic SSE server (in a thread). No llama.cpp needed: these run in
seconds. Each test also watches every outgoing ``connect`` of the process: the router may
reach its upstream and nothing else, whatever the request target says.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kvswitch.lab.router import Router, RouterError
from kvswitch.testing.sse_server import SSEServer
from tests.rawhttp import Reply, accepted, exchange

BODY = json.dumps(
    {
        "model": "test-model",
        "stream": True,
        "max_tokens": 2,
        "messages": [{"role": "user", "content": "hi"}],
    }
).encode()
STILL_THERE = b"GET /lab/handoffs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
"""A request any live router answers with a 200."""


@dataclass
class Connects:
    """Every address this process connected a socket to, during the test."""

    seen: list[tuple[str, int]] = field(default_factory=list)

    def elsewhere(self, *ports: int) -> list[tuple[str, int]]:
        """Connections to anything but 127.0.0.1 at ``ports`` (the router and its upstream)."""
        return [a for a in self.seen if a not in {("127.0.0.1", p) for p in ports}]


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> Connects:
    record = Connects()
    guarded = socket.socket.connect  # the sandbox's loopback guard, wrapped

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            record.seen.append((str(address[0]), int(address[1])))
        guarded(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return record


@pytest.fixture
def upstream() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=5, itl_ms=5, tokens=2) as server:
        yield server


@contextlib.asynccontextmanager
async def running(upstream: SSEServer | str, tmp_path: Path, **options: Any) -> AsyncIterator[Router]:
    """A router whose three upstreams are ``upstream`` (a server, or its ``http://host:port``)."""
    root = upstream if isinstance(upstream, str) else upstream.root
    router = Router(root, root, root, tmp_path, prefill_slots=1, decode_slots=1, **options)
    await router.start()
    try:
        yield router
    finally:
        await router.close()


def post(target: str, *, extra: str = "", body: bytes = BODY, host: str = "127.0.0.1") -> bytes:
    return (
        f"POST {target} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Connection: close\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def upstream_hits(server: SSEServer) -> int:
    return sum(server.requests.values())


# -- not an open proxy -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["merged", "split"])
def test_a_request_target_never_chooses_where_the_router_connects(
    upstream: SSEServer,
    tmp_path: Path,
    connects: Connects,
    bystander: tuple[socket.socket, int],
    mode: str,
) -> None:
    """``POST @host:port/v1/…`` once made the router connect to host:port (the target was
    glued to the upstream's URL as userinfo). Every target form that names another host is
    refused, and no socket goes anywhere but the upstream."""
    listener, port = bystander
    targets = {
        f"@127.0.0.1:{port}/v1/chat/completions": 400,
        f"@127.0.0.1:{port}/merged/v1/chat/completions": 400,
        f"http://127.0.0.1:{port}/v1/chat/completions": 421,
        f"http://user@127.0.0.1:{port}/v1/chat/completions": 421,
        f"//127.0.0.1:{port}/v1/chat/completions": 400,
        f"127.0.0.1:{port}": 400,
        "*": 400,
    }

    async def run() -> tuple[dict[str, Reply], int]:
        async with running(upstream, tmp_path) as router:
            out = {t: await exchange(router.port, post(t, extra=f"X-Cache-Mode: {mode}\r\n")) for t in targets}
            out["CONNECT"] = await exchange(
                router.port,
                f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(),
            )
            return out, router.port

    replies, router_port = asyncio.run(run())
    for target, status in targets.items():
        assert replies[target].status == status, (target, replies[target].data[:300])
        assert replies[target].closed, target
    assert replies["CONNECT"].status in (400, 405) and replies["CONNECT"].closed
    assert accepted(listener) == 0
    assert connects.elsewhere(router_port, upstream.port) == []
    assert upstream_hits(upstream) == 0


def test_the_host_header_and_an_absolute_target_naming_the_router_are_harmless(
    upstream: SSEServer,
    tmp_path: Path,
    connects: Connects,
    bystander: tuple[socket.socket, int],
) -> None:
    """A ``Host`` naming another server changes nothing (the upstream is the router's own);
    an absolute-form target naming the router itself is served (RFC 9112 §3.2.2)."""
    listener, port = bystander

    async def run() -> tuple[Reply, Reply, int]:
        async with running(upstream, tmp_path) as router:
            a = await exchange(router.port, post("/v1/chat/completions", host=f"127.0.0.1:{port}"), wait=5)
            b = await exchange(router.port, post(f"http://127.0.0.1:{router.port}/v1/chat/completions"), wait=5)
            return a, b, router.port

    a, b, router_port = asyncio.run(run())
    assert a.status == 200 and b"[DONE]" in a.data
    assert b.status == 200 and b"[DONE]" in b.data
    assert accepted(listener) == 0
    assert connects.elsewhere(router_port, upstream.port) == []
    assert upstream_hits(upstream) == 2


def test_an_upstream_that_is_not_a_plain_origin_is_refused(tmp_path: Path) -> None:
    for bad in (
        "http://user@127.0.0.1:1",
        "https://127.0.0.1:1",
        "http://127.0.0.1:1/v1?x=1",
        "file:///etc",
        "http://127.0.0.1:1/prefix",
    ):
        with pytest.raises(RouterError, match="plain http://host:port"):
            Router(bad, "http://127.0.0.1:2", "http://127.0.0.1:3", tmp_path)


# -- nothing hangs on a client ---------------------------------------------------------------------
def test_a_half_sent_request_head_times_out(upstream: SSEServer, tmp_path: Path) -> None:
    """A head that never ends, a connection that never sends, and a second head left half-sent
    on a kept-alive connection are each closed after the head timeout."""

    async def run() -> tuple[Reply, Reply, Reply, float]:
        async with running(upstream, tmp_path, head_timeout=0.5) as router:
            t = time.monotonic()
            half = await exchange(router.port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-", wait=5)
            took = time.monotonic() - t
            silent = await exchange(router.port, b"", wait=5)
            second = await exchange(
                router.port,
                b"GET /lab/handoffs HTTP/1.1\r\nHost: x\r\n\r\nGET /lab/handoffs HTTP/1.1\r\nHo",
                wait=5,
            )
            return half, silent, second, took

    half, silent, second, took = asyncio.run(run())
    assert half.closed and silent.closed and second.closed
    assert took < 4
    assert second.status == 200 and second.data.count(b"HTTP/1.1 ") == 1


def test_a_stream_longer_than_the_head_timeout_is_not_cut(tmp_path: Path) -> None:
    with SSEServer(ttft_ms=50, itl_ms=150, tokens=8) as slow:

        async def run() -> Reply:
            async with running(slow, tmp_path, head_timeout=0.3) as router:
                return await exchange(
                    router.port,
                    post(
                        "/v1/chat/completions",
                        body=BODY.replace(b'"max_tokens": 2', b'"max_tokens": 8'),
                    ),
                    wait=10,
                )

        reply = asyncio.run(run())
    assert reply.status == 200 and reply.data.count(b'"content": "tok') == 8 and b"[DONE]" in reply.data


def test_idle_connections_are_capped_and_the_router_keeps_serving(upstream: SSEServer, tmp_path: Path) -> None:
    """40 connections that send nothing against a cap of 20: the 21st on get a 503 at once;
    the idle ones are closed after the head timeout; then a real request is served."""

    async def run() -> tuple[list[bytes], list[bytes], Reply, int]:
        async with running(upstream, tmp_path, max_connections=20, head_timeout=1.0) as router:
            conns = [await asyncio.open_connection("127.0.0.1", router.port) for _ in range(40)]
            await asyncio.sleep(0.2)
            early: list[bytes] = []
            for reader, _ in conns[20:]:
                early.append(await asyncio.wait_for(reader.read(), 3))
            late: list[bytes] = []
            for reader, _ in conns[:20]:
                late.append(await asyncio.wait_for(reader.read(), 5))
            for _, writer in conns:
                writer.close()
            reply = await exchange(router.port, post("/v1/chat/completions"), wait=5)
            return early, late, reply, router.stats.refused

    early, late, reply, refused = asyncio.run(run())
    assert all(d.startswith(b"HTTP/1.1 503 ") for d in early) and refused == 20
    assert all(d == b"" for d in late)  # closed by the head timeout, nothing sent
    assert reply.status == 200 and b"[DONE]" in reply.data


def test_a_slow_body_times_out(upstream: SSEServer, tmp_path: Path) -> None:
    async def run() -> Reply:
        async with running(upstream, tmp_path, body_timeout=0.5) as router:
            return await exchange(router.port, post("/v1/chat/completions")[:-5], wait=5)

    reply = asyncio.run(run())
    assert reply.status == 408 and reply.closed
    assert upstream_hits(upstream) == 0


# -- RFC 9112 framing: malformed → 400 and close, never forwarded, never a traceback ---------------
CHUNKED = "Transfer-Encoding: chunked\r\n"
POST_HEAD = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
MALFORMED = {
    "bad chunk size": (f"{POST_HEAD}{CHUNKED}\r\nzz\r\nab\r\n0\r\n\r\n"),
    "negative chunk size": (f"{POST_HEAD}{CHUNKED}\r\n-1\r\nab\r\n0\r\n\r\n"),
    "0x chunk size": (f"{POST_HEAD}{CHUNKED}\r\n0x2\r\nab\r\n0\r\n\r\n"),
    "underscore chunk size": (f"{POST_HEAD}{CHUNKED}\r\n1_0\r\n" + "a" * 16 + "\r\n0\r\n\r\n"),
    "huge chunk size": (f"{POST_HEAD}{CHUNKED}\r\n{'f' * 40}\r\nab\r\n"),
    "chunk without CRLF": (f"{POST_HEAD}{CHUNKED}\r\n2\r\nabXY0\r\n\r\n"),
    "Content-Length with Transfer-Encoding": (
        f"{POST_HEAD}Content-Length: 4\r\n{CHUNKED}\r\n0\r\n\r\nGET /lab/handoffs HTTP/1.1\r\nHost: x\r\n\r\n"
    ),
    "two different Content-Length": (POST_HEAD + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x"),
    "two equal Content-Length": (POST_HEAD + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
    "Content-Length abc": POST_HEAD + "Content-Length: abc\r\n\r\n{}",
    "Content-Length +2": POST_HEAD + "Content-Length: +2\r\n\r\n{}",
    "Content-Length -1": POST_HEAD + "Content-Length: -1\r\n\r\n{}",
    "Transfer-Encoding gzip": POST_HEAD + "Transfer-Encoding: gzip\r\n\r\n{}",
    "chunked, then gzip": (POST_HEAD + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"),
    "bare LF line ends": "POST /v1/chat/completions HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}",
    "obs-fold": POST_HEAD + "X-A: b\r\n c\r\nContent-Length: 2\r\n\r\n{}",
    "space before colon": POST_HEAD + "Content-Length : 2\r\n\r\n{}",
    "no Host in HTTP/1.1": "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    "not HTTP": "HELLO\r\n\r\n",
    "HTTP/2.0 request line": "GET /lab/handoffs HTTP/2.0\r\nHost: x\r\n\r\n",
    "NUL in a header": "GET /lab/handoffs HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_request_gets_a_400_and_is_closed(
    upstream: SSEServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
) -> None:
    async def run() -> tuple[Reply, Reply]:
        async with running(upstream, tmp_path) as router:
            bad = await exchange(router.port, MALFORMED[case].encode("latin-1"), wait=5)
            after = await exchange(router.port, STILL_THERE)
            return bad, after

    with caplog.at_level(logging.DEBUG):
        bad, after = asyncio.run(run())
    assert bad.status in (400, 501, 505), bad.data[:300]
    assert bad.closed
    assert b" 200 OK\r\n" not in bad.data  # nothing smuggled behind it was answered
    assert upstream_hits(upstream) == 0  # nothing was forwarded
    assert after.status == 200  # the router is still there
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "Traceback" not in caplog.text


OVERSIZED = {
    "request line": "GET /" + "a" * 20000 + " HTTP/1.1\r\nHost: x\r\n\r\n",
    "header line": "GET /lab/handoffs HTTP/1.1\r\nHost: x\r\nX-A: " + "a" * 20000 + "\r\n\r\n",
    "header count": "GET /lab/handoffs HTTP/1.1\r\nHost: x\r\n" + "".join(f"X-{i}: a\r\n" for i in range(300)) + "\r\n",
}


@pytest.mark.parametrize("case", list(OVERSIZED))
def test_an_oversized_head_is_refused(upstream: SSEServer, tmp_path: Path, case: str) -> None:
    async def run() -> Reply:
        async with running(upstream, tmp_path) as router:
            return await exchange(router.port, OVERSIZED[case].encode(), wait=5)

    reply = asyncio.run(run())
    assert reply.status in (400, 414, 431) and reply.closed


def test_a_body_over_the_cap_is_a_413(upstream: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kvswitch.lab.router as router_module

    monkeypatch.setattr(router_module, "_MAX_BODY", 1000)

    async def run() -> Reply:
        async with running(upstream, tmp_path) as router:
            return await exchange(router.port, post("/v1/chat/completions", body=b"x" * 5000), wait=5)

    reply = asyncio.run(run())
    assert reply.status == 413 and reply.closed and upstream_hits(upstream) == 0


def test_a_well_formed_chunked_request_is_served(upstream: SSEServer, tmp_path: Path) -> None:
    half = len(BODY) // 2
    chunks = b"%x\r\n%b\r\n%x\r\n%b\r\n0\r\n\r\n" % (
        half,
        BODY[:half],
        len(BODY) - half,
        BODY[half:],
    )

    async def run() -> Reply:
        async with running(upstream, tmp_path) as router:
            head = (
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            return await exchange(router.port, head + chunks, wait=5)

    reply = asyncio.run(run())
    assert reply.status == 200 and b"[DONE]" in reply.data and upstream_hits(upstream) == 1


def test_a_stream_that_breaks_midway_is_cut_off_not_ended_cleanly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The upstream sends half a stream and dies: the client's chunked body never gets its
    last chunk (it sees the break), the router logs no traceback and keeps serving."""

    async def run() -> tuple[Reply, Reply]:
        async def dying(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
                b'1a\r\ndata: {"choices": []}\r\n\r\n\r\n'
            )
            await writer.drain()
            writer.transport.abort()

        server = await asyncio.start_server(dying, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            async with running(url, tmp_path) as router:
                cut = await exchange(router.port, post("/v1/chat/completions"), wait=5)
                after = await exchange(router.port, STILL_THERE)
        finally:
            server.close()
            await server.wait_closed()
        return cut, after

    with caplog.at_level(logging.DEBUG):
        cut, after = asyncio.run(run())
    assert cut.status == 200 and cut.closed and b"data: {" in cut.data
    assert not cut.data.endswith(b"0\r\n\r\n")
    assert after.status == 200
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_client_that_goes_away_frees_the_upstream_connection(tmp_path: Path) -> None:
    """The client reads the start of a stream and leaves while the server is silent: the
    router closes its upstream connection at once (not after the 600 s read timeout)."""

    async def run() -> float | None:
        closed = asyncio.Event()
        started = asyncio.Event()

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n"
            )
            await writer.drain()
            started.set()
            with contextlib.suppress(ConnectionError):
                while await reader.read(65536):
                    pass
            closed.set()
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            async with running(url, tmp_path) as router:
                reader, writer = await asyncio.open_connection("127.0.0.1", router.port)
                writer.write(post("/v1/chat/completions"))
                await asyncio.wait_for(started.wait(), 5)
                await reader.read(100)
                writer.close()
                t = time.monotonic()
                try:
                    await asyncio.wait_for(closed.wait(), 5)
                except TimeoutError:
                    return None
                return time.monotonic() - t
        finally:
            server.close()
            await server.wait_closed()

    took = asyncio.run(run())
    assert took is not None and took < 2
