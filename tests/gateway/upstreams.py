"""Hand-written upstreams and a raw client for the gateway's hostile and bounds tests.

:class:`Upstream` is a server on 127.0.0.1 in the test's own event loop: it records every
request it gets (method, target, headers, body) and answers with a script of raw writes, so a
test can make it break HTTP where and how it likes. :func:`request` writes a raw request for
:func:`exchange` (from ``tests/rawhttp.py``, re-exported here with :class:`Reply`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kvswitch.gateway.server import Gateway
from kvswitch.gateway.settings import GatewaySettings
from tests.rawhttp import Reply as Reply
from tests.rawhttp import exchange as exchange

TOKEN = "gw-local-token-0123456789abcdef"
"""The local token every test gateway takes."""
UPSTREAM_KEY = "sk-upstream-SECRET-key-abcdef123456"
"""The profile's key every test gateway sends upstream."""

CHAT = {"model": "test-model", "stream": True, "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
BODY = json.dumps(CHAT).encode()


@dataclass
class Seen:
    """One request as an upstream received it."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def names(self) -> set[str]:
        return {k.lower() for k, _ in self.headers}


Script = Callable[[Seen, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Upstream:
    """A scripted HTTP/1.1 server on 127.0.0.1 (``async with Upstream(script) as up``)."""

    script: Script
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    connections: int = 0
    _server: asyncio.base_events.Server | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> Upstream:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:] if line)]
                seen = Seen(method, target, headers, b"")
                length = int(seen.header("Content-Length") or 0)
                seen.body = await reader.readexactly(length) if length else b""
                self.seen.append(seen)
                await self.script(seen, reader, writer)
                if writer.is_closing():
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def json_answer(status: int, body: bytes | dict[str, Any]) -> Script:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def script(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    return script


def sse_answer(writes: list[bytes], *, then: str = "end", gap: float = 0.0) -> Script:
    """A 200 stream of ``writes`` (each one chunk, ``gap`` s apart), then ``end`` (the last
    chunk), ``abort`` (the connection reset), ``close`` (closed without the last chunk) or
    ``hang`` (silence)."""

    async def script(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE_HEAD)
        for data in writes:
            writer.write(chunk(data))
            await writer.drain()
            if gap:
                await asyncio.sleep(gap)
        if then == "end":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        elif then == "abort":
            writer.transport.abort()
        elif then == "hang":
            await asyncio.sleep(3600)
        else:
            writer.close()

    return script


def silent() -> Script:
    """Reads the request and never answers."""

    async def script(seen: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(3600)

    return script


def sse_event(payload: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


def chat_token(text: str) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": text}}]})


# -- the gateway ------------------------------------------------------------------------------------
def settings(merged: str, split: str | None = None, **overrides: Any) -> GatewaySettings:
    base = GatewaySettings(merged=merged, split=split or merged, token=TOKEN, upstream_key=UPSTREAM_KEY, port=0)
    return replace(base, **overrides)


@contextlib.asynccontextmanager
async def gateway(merged: str, split: str | None = None, **overrides: Any) -> AsyncIterator[Gateway]:
    gw = Gateway(settings(merged, split, **overrides))
    await gw.start()
    try:
        yield gw
    finally:
        await gw.close(0.5)


# -- a raw client ---------------------------------------------------------------------------------
def request(
    target: str,
    *,
    body: bytes | None = BODY,
    method: str = "POST",
    host: str = "127.0.0.1",
    token: str | None = TOKEN,
    extra: str = "",
    close: bool = True,
) -> bytes:
    """A raw request (with ``Authorization: Bearer token`` unless ``token`` is None)."""
    auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    length = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body is not None else ""
    conn = "Connection: close\r\n" if close else ""
    return f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n{auth}{conn}{extra}{length}\r\n".encode("latin-1") + (
        body or b""
    )
