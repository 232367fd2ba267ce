"""A deterministic OpenAI-compatible streaming server, for tests, benchmarks and demos.

It answers ``POST …/chat/completions`` with a stream whose timing it controls exactly: the
role-only chunk at once, a ``: keep-alive`` comment, then — after ``ttft_ms`` — ``tokens``
content chunks ``itl_ms`` apart, a finish chunk, a usage chunk and ``[DONE]``. It stamps
(``time.perf_counter``, the same monotonic clock a client in this machine uses) when it wrote
each request's first content event, so a client's TTFT error can be measured exactly.

Scenarios, chosen per server or per request (header ``X-Test-Scenario``): ``ok``, ``crlf``
(CRLF framing), ``split-frames`` (every event in two writes), ``no-done`` (EOF without
``[DONE]``), ``error-event`` (HTTP 200, then ``data: {"error": …}``), ``no-token`` (only the
role and finish chunks), ``reasoning`` (``reasoning_content`` before the answer), ``stall``
(the role chunk, then silence), ``close-watch`` (nothing at all, not even the status line,
until ``ttft_ms``, then the tokens; it reads the connection meanwhile, stamps in ``closes`` when
the client closed it and stops writing then, as an engine that aborts a cancelled request
does), ``http-401``/``http-404``/``http-429``/``http-500``. A
request header ``X-Cache-Mode: split`` uses ``split_ttft_ms``/``split_itl_ms`` when set, and
split requests to a server without a split deployment (``split_capable=False``) stall, the
article's S-25. ``api_key`` makes any other key a 401, and a path with ``//`` is a 401 too
(the trailing-slash case of S-24). ``GET /v1/models`` lists ``model``; ``GET /metrics``
counts requests per mode in Prometheus text; ``GET /stamps`` returns the stamps as JSON, each
with the request's ``X-Request-Id``, and ``GET /closes`` the close stamps (for clients in another process:
``perf_counter`` is the system-wide monotonic clock on Linux).

Run it on its own: ``python -m kvswitch.testing.sse_server --port 8765 --ttft-ms 300``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CloseStamp", "SSEServer", "Stamp"]


@dataclass(frozen=True, slots=True)
class Stamp:
    """When the server received a request and wrote its first content event."""

    received: float
    first_content: float | None
    mode: str
    scenario: str
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class CloseStamp:
    """A ``close-watch`` request: when it came, when the client closed its connection
    (``None``: it did not; the stream ran to its end at ``ended``) and how many tokens were
    written before. ``tag`` is its ``X-Request-Id``, else its last message's content."""

    tag: str
    received: float
    closed: float | None
    ended: float | None
    tokens_sent: int


@dataclass
class SSEServer:
    """Start with ``start()`` (or as a context manager); ``url`` is its ``…/v1`` base URL."""

    ttft_ms: float = 300.0
    itl_ms: float = 20.0
    tokens: int = 8
    scenario: str = "ok"
    model: str = "test-model"
    api_key: str | None = None
    split_ttft_ms: float | None = None
    split_itl_ms: float | None = None
    split_capable: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    stamps: list[Stamp] = field(default_factory=list)
    closes: list[CloseStamp] = field(default_factory=list)
    _readers: dict[asyncio.StreamWriter, asyncio.StreamReader] = field(default_factory=dict, repr=False)
    requests: dict[str, int] = field(default_factory=dict)
    auth_log: list[tuple[str, str]] = field(default_factory=list)
    """(path, Authorization header or "") of every request, so a test can see where a key went."""
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.base_events.Server | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> SSEServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sse-test-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the test server did not start")

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._server is not None and loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            with contextlib.suppress(Exception):
                fut.result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)

    async def _shutdown(self) -> None:
        """Close the listener and end every open connection (stalled streams too)."""
        assert self._server is not None
        self._server.close()
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._client, self.host, self.port, backlog=1024))
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            with contextlib.suppress(Exception):
                loop.run_until_complete(server.wait_closed())
            loop.close()

    # -- HTTP/1.1 ------------------------------------------------------------------------
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                received = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = ([*lines[0].split(" ", 2), "", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                self._readers[writer] = reader  # for close-watch; _route keeps its signature (subclasses)
                keep = await self._route(method, target, headers, body, writer, received)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        finally:
            self._readers.pop(writer, None)
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(
        self, writer: asyncio.StreamWriter, status: int, body: bytes, ctype: str = "application/json"
    ) -> None:
        reason = {
            200: "OK",
            401: "Unauthorized",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
        }
        writer.write(
            f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    async def _route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        received: float,
    ) -> bool:
        reader = self._readers.get(writer)
        path = target.split("?", 1)[0]
        self.auth_log.append((path, headers.get("authorization", "")))
        if "//" in path:
            await self._send(
                writer, 401, _err("invalid api key (the path has '//': a base URL with a trailing slash?)", 401)
            )
            return True
        if method == "GET" and path.endswith("/models"):
            if not self._authorized(headers):
                await self._send(writer, 401, _err("invalid api key", 401))
                return True
            await self._send(
                writer, 200, json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}).encode()
            )
            return True
        if method == "GET" and path == "/metrics":
            text = "".join(
                f'kvswitch_test_requests_total{{mode="{m}"}} {n}\n' for m, n in sorted(self.requests.items())
            )
            await self._send(
                writer,
                200,
                ("# TYPE kvswitch_test_requests_total counter\n" + text).encode(),
                "text/plain; version=0.0.4",
            )
            return True
        if method == "GET" and path == "/stamps":
            data = [[st.request_id, st.received, st.first_content, st.mode] for st in self.stamps]
            await self._send(writer, 200, json.dumps(data).encode())
            return True
        if method == "GET" and path == "/closes":
            closes = [[c.tag, c.received, c.closed, c.ended, c.tokens_sent] for c in self.closes]
            await self._send(writer, 200, json.dumps(closes).encode())
            return True
        if method == "GET" and path in ("/health", "/"):
            await self._send(writer, 200, b'{"status":"ok"}')
            return True
        if method != "POST" or not path.endswith("/chat/completions"):
            await self._send(writer, 404, _err(f"no route {method} {path}", 404))
            return True
        mode = headers.get("x-cache-mode", "merged")
        scenario = headers.get("x-test-scenario", self.scenario)
        self.requests[mode] = self.requests.get(mode, 0) + 1
        if not self._authorized(headers):
            await self._send(writer, 401, _err("invalid api key", 401))
            return True
        if scenario.startswith("http-"):
            code = int(scenario[5:])
            await self._send(writer, code, _err(f"test failure {code}", code))
            return True
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            await self._send(writer, 400, _err("body is not JSON", 400))
            return True
        if request.get("model") != self.model:
            await self._send(writer, 404, _err(f"model {request.get('model')!r} does not exist", 404))
            return True
        if mode == "split" and not self.split_capable:
            scenario = "stall"  # S-25: no split deployment behind the endpoint
        if scenario == "close-watch" and reader is not None:
            await self._close_watch(reader, writer, request, headers, received)
            return False
        await self._stream(writer, request, mode, scenario, received, headers.get("x-request-id", ""))
        return scenario != "stall"

    async def _close_watch(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: dict[str, Any],
        headers: dict[str, str],
        received: float,
    ) -> None:
        """The ``close-watch`` scenario: stream as ``ok`` (but nothing before ``ttft_ms``) while
        reading the connection; its end (EOF or reset) is the client's close: stamp it, stop."""
        messages = request.get("messages") or [{}]
        tag = headers.get("x-request-id") or str(messages[-1].get("content", ""))
        n = min(self.tokens, int(request.get("max_tokens") or request.get("max_completion_tokens") or self.tokens))
        sent = 0

        async def stream() -> None:
            nonlocal sent
            await asyncio.sleep(max(0.0, received + self.ttft_ms / 1000 - time.perf_counter()))
            writer.write(_SSE_HEAD)
            for i in range(n):
                if i:
                    await asyncio.sleep(self.itl_ms / 1000)
                _chunk(writer, _chat_chunk(self.model, {"content": f"tok{i} "}) + b"\n\n")
                await writer.drain()
                sent += 1
            _chunk(writer, b"data: [DONE]\n\n")
            _chunk(writer, b"")
            await writer.drain()

        async def watch() -> float:
            with contextlib.suppress(ConnectionError):
                while await reader.read(65536):
                    pass
            return time.perf_counter()

        streaming, watching = asyncio.ensure_future(stream()), asyncio.ensure_future(watch())
        try:
            done, _ = await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
            now = time.perf_counter()
            if watching in done:
                self.closes.append(CloseStamp(tag, received, watching.result(), None, sent))
            elif streaming.exception() is not None:  # a write found the connection reset
                self.closes.append(CloseStamp(tag, received, now, None, sent))
            else:
                self.closes.append(CloseStamp(tag, received, None, now, sent))
        finally:
            for task in (streaming, watching):
                task.cancel()
            await asyncio.gather(streaming, watching, return_exceptions=True)

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        return headers.get("authorization", "") == f"Bearer {self.api_key}"

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        request: dict[str, Any],
        mode: str,
        scenario: str,
        received: float,
        request_id: str = "",
    ) -> None:
        eol = b"\r\n" if scenario == "crlf" else b"\n"
        ttft = (self.split_ttft_ms if mode == "split" and self.split_ttft_ms is not None else self.ttft_ms) / 1000
        itl = (self.split_itl_ms if mode == "split" and self.split_itl_ms is not None else self.itl_ms) / 1000
        n = min(self.tokens, int(request.get("max_tokens") or self.tokens))
        writer.write(_SSE_HEAD)
        first_content: float | None = None

        async def event(payload: bytes) -> None:
            data = payload + eol + eol
            if scenario == "split-frames" and len(data) > 4:
                half = len(data) // 2
                _chunk(writer, data[:half])
                await writer.drain()
                await asyncio.sleep(0.002)
                _chunk(writer, data[half:])
            else:
                _chunk(writer, data)
            await writer.drain()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _chat_chunk(self.model, delta, finish)

        await event(chunk({"role": "assistant", "content": ""}))
        _chunk(writer, b": keep-alive" + eol + eol)
        await writer.drain()
        if scenario == "stall":
            await asyncio.sleep(3600)
            return
        deadline = received + ttft
        await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
        if scenario == "error-event":
            await event(b'data: {"error": {"message": "the engine failed mid-stream", "type": "InternalServerError"}}')
            await event(b"data: [DONE]")
            _chunk(writer, b"")
            await writer.drain()
            self.stamps.append(Stamp(received, None, mode, scenario, request_id))
            return
        if scenario != "no-token":
            for i in range(n):
                if scenario == "reasoning" and i < 2:
                    payload = chunk({"reasoning_content": f"think{i} "})
                else:
                    payload = chunk({"content": f"tok{i} "})
                if first_content is None:
                    first_content = time.perf_counter()  # the first token-bearing event
                await event(payload)
                if i < n - 1:
                    await asyncio.sleep(itl)
        await event(chunk({}, "length"))
        prompt = request.get("messages", [{}])[-1].get("content", "") if request.get("messages") else ""
        usage = {
            "prompt_tokens": len(str(prompt).split()),
            "completion_tokens": 0 if scenario == "no-token" else n,
            "total_tokens": 0,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        await event(
            b"data: "
            + json.dumps(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": usage,
                    "timings": {"prompt_ms": ttft * 1000},
                }
            ).encode()
        )
        self.stamps.append(Stamp(received, first_content, mode, scenario, request_id))
        if scenario != "no-done":
            await event(b"data: [DONE]")
        _chunk(writer, b"")  # the body ends cleanly either way
        await writer.drain()


_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Cache-Control: no-cache\r\n\r\n"
)


def _chat_chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One Chat Completions stream event's ``data:`` line (without its blank line)."""
    return (
        b"data: "
        + json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        ).encode()
    )


def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _err(message: str, code: int) -> bytes:
    return json.dumps({"error": {"message": message, "type": "test_error", "code": code}}).encode()


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (for benchmarks and demos in another process)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kvswitch.testing.sse_server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=300.0)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--split-ttft-ms", type=float)
    ap.add_argument("--model", default="test-model")
    ap.add_argument("--scenario", default="ok", help="the scenario of requests without X-Test-Scenario")
    args = ap.parse_args(argv)
    server = SSEServer(
        ttft_ms=args.ttft_ms,
        itl_ms=args.itl_ms,
        tokens=args.tokens,
        port=args.port,
        split_ttft_ms=args.split_ttft_ms,
        model=args.model,
        scenario=args.scenario,
    )
    server.start()
    import sys

    sys.stdout.write(f"LISTENING {server.url}\n")  # a program's own output, for whoever started it
    sys.stdout.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    main()
