"""The gateway reaches a non-loopback upstream through the proxy HTTP_PROXY names (NO_PROXY
honoured), never a loopback one, like probe and doctor (kvswitch.network). Offline: the upstream
has a name that resolves nowhere, and only the proxy on 127.0.0.1 can reach it."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from kvswitch.testing.sse_server import SSEServer
from tests.gateway.upstreams import exchange, gateway, request

NAME = "upstream.invalid"


class Proxy:
    """An HTTP forward proxy on 127.0.0.1 (absolute-form requests); every name is 127.0.0.1."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.server: asyncio.Server | None = None
        self.url = ""

    async def __aenter__(self) -> Proxy:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            first, *lines = [line for line in head.split("\r\n") if line]
            method, target, _ = first.split(" ", 2)
            self.seen.append(target)
            length = next(
                (int(v) for k, v in (line.split(":", 1) for line in lines) if k.strip().lower() == "content-length"), 0
            )
            body = await reader.readexactly(length)
            parts = urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", parts.port or 80)
            kept = [
                line
                for line in lines
                if line.split(":", 1)[0].strip().lower() not in ("connection", "proxy-connection")
            ]
            up_writer.write(
                "\r\n".join([f"{method} {parts.path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode("latin-1")
                + body
            )
            await up_writer.drain()
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
            up_writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()


async def _ask(upstream: str) -> tuple[int, bytes]:
    async with gateway(upstream) as gw:
        reply = await exchange(gw.port, request("/v1/chat/completions"), wait=20)
    return reply.status, reply.body


def test_a_named_upstream_is_reached_through_the_proxy_and_only_so(monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> None:
        with SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as server:
            port = urlsplit(server.url).port
            upstream = f"http://{NAME}:{port}/v1"
            async with Proxy() as proxy:
                status, _ = await _ask(upstream)  # no proxy: the name resolves nowhere
                assert status == 502 and proxy.seen == []

                monkeypatch.setenv("HTTP_PROXY", proxy.url)
                status, body = await _ask(upstream)
                assert status == 200 and b"[DONE]" in body
                assert proxy.seen == [f"http://{NAME}:{port}/v1/chat/completions"]  # absolute form

                proxy.seen.clear()
                monkeypatch.setenv("NO_PROXY", "localhost,.invalid")
                status, _ = await _ask(upstream)
                assert status == 502 and proxy.seen == []  # NO_PROXY covers it: straight there, which fails

                monkeypatch.delenv("NO_PROXY")
                status, _ = await _ask(
                    server.url.rstrip("/") + ("" if server.url.rstrip("/").endswith("/v1") else "/v1")
                )
                assert status == 200 and proxy.seen == []  # a loopback upstream never goes through it

    asyncio.run(go())
