"""A hostile HTTP server for tests: it echoes the request's key back in every form a text can
carry it, breaks HTTP framing, sends without end, or never answers.

One scenario per server (``HostileServer(scenario)``), applied to every request it gets; it
records each request's target and ``Authorization`` header in ``seen``. Endless scenarios stop
after :data:`FLOOD` bytes, so a client without caps shows its growth without taking the machine.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["ECHO_FORMS", "FLOOD", "SCENARIOS", "HostileServer", "echo_form"]

FLOOD = 40 * 1024 * 1024
"""What an endless scenario sends at most before it only holds the connection open."""

_OK_SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


_ROLE = _event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
_TOKEN = _event({"choices": [{"index": 0, "delta": {"content": "tok"}}]})


def _json_unicode(text: str, upper: bool) -> str:
    return "".join(f"\\u{ord(c):04X}" if upper else f"\\u{ord(c):04x}" for c in text)


def echo_form(form: str, value: str) -> str:
    """``value`` (the request's ``Authorization`` value) written the way ``form`` says."""
    key = value.removeprefix("Bearer ")
    if form == "raw":
        return value
    if form == "json-unicode":  # every character as \\uXXXX, upper-case hex
        return _json_unicode(value, upper=True)
    if form == "json-mixed":  # \\/ for every slash, every other character \\uxxxx in lower case
        return "".join(("\\/" if c == "/" else c) if i % 2 else f"\\u{ord(c):04x}" for i, c in enumerate(value))
    if form == "json-slash":
        return value.replace("/", "\\/")
    if form == "percent":
        return urllib.parse.quote(value, safe="")
    if form == "percent-plus":
        return urllib.parse.quote_plus(value)
    if form == "percent-lower":
        return "".join(f"%{b:02x}" for b in value.encode())
    if form == "basic":
        return "Basic " + base64.b64encode(f"user:{key}".encode()).decode()
    if form == "base64-key":
        return base64.b64encode(key.encode()).decode()
    if form == "base64url-key":
        return base64.urlsafe_b64encode(f"admin:{key}".encode()).decode().rstrip("=")
    raise ValueError(form)


ECHO_FORMS = (
    "raw",
    "json-unicode",
    "json-mixed",
    "json-slash",
    "percent",
    "percent-plus",
    "percent-lower",
    "basic",
    "base64-key",
    "base64url-key",
)


class HostileServer:
    """A server on 127.0.0.1 that misbehaves as ``scenario`` says (see :data:`SCENARIOS`)."""

    def __init__(self, scenario: str, form: str = "raw") -> None:
        self.scenario, self.form = scenario, form
        self.seen: list[tuple[str, str]] = []
        self.sent: list[str] = []  # every echoed text, exactly as written
        self.port = 0
        self.location = ""  # where "redirect" sends the client
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target = [*lines[0].split(" "), "", ""][:2]
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ":" in ln)
                }
                length = int(headers.get("content-length", "0") or 0)
                if length:
                    await reader.readexactly(length)
                self.seen.append((target, headers.get("authorization", "")))
                handler = SCENARIOS[self.scenario]
                keep = await handler(self, method, target, headers.get("authorization", ""), writer)
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    # -- helpers -----------------------------------------------------------------------------

    def echo(self, auth: str) -> str:
        text = echo_form(self.form, auth or "Bearer (none)")
        self.sent.append(text)
        return text

    async def flood(self, writer: asyncio.StreamWriter, head: bytes, piece: bytes) -> bool:
        writer.write(head)
        sent = 0
        while sent < FLOOD:
            writer.write(piece)
            sent += len(piece)
            await writer.drain()
        await asyncio.sleep(3600)  # hold the connection open; the client must give up by itself
        return False


Handler = Callable[[HostileServer, str, str, str, asyncio.StreamWriter], Awaitable[bool]]


async def _send(
    writer: asyncio.StreamWriter, status: str, body: bytes, *, ctype: str = "application/json", extra: str = ""
) -> bool:
    writer.write(
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n{extra}Content-Length: {len(body)}\r\n\r\n".encode() + body
    )
    await writer.drain()
    return True


async def _write(writer: asyncio.StreamWriter, raw: bytes) -> bool:
    """``raw`` as it is (a response that may break HTTP), then the connection closes."""
    writer.write(raw)
    await writer.drain()
    return False


def _fixed(raw: bytes) -> Handler:
    """A scenario that answers every request with ``raw`` and closes the connection."""

    async def handler(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
        return await _write(w, raw)

    return handler


async def echo_401(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """401 whose JSON body quotes the Authorization header (as a gateway's debug message might)."""
    body = '{"error": {"message": "invalid credentials: ' + srv.echo(auth) + '", "type": "auth"}}'
    return await _send(w, "401 Unauthorized", body.encode())


async def echo_text_401(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """401 with a plain-text body: the key sits 30 characters before the body is cut anywhere."""
    body = "x" * 30 + " you sent " + srv.echo(auth) + " and that is not a key we know"
    return await _send(w, "401 Unauthorized", body.encode(), ctype="text/plain")


async def sse_error(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream whose error event quotes the key."""
    if method == "GET":
        return await _send(w, "200 OK", b'{"object": "list", "data": [{"id": "m"}]}')
    event = '{"error": {"message": "upstream rejected ' + srv.echo(auth) + '"}}'
    return await _write(w, _OK_SSE + b"\r\n" + _ROLE + b"data: " + event.encode() + b"\n\n")


async def sse_unparseable(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream with an event that is not JSON and quotes the key."""
    if method == "GET":
        return await _send(w, "200 OK", b'{"object": "list", "data": [{"id": "m"}]}')
    return await _write(
        w, _OK_SSE + b"\r\n" + _ROLE + b"data: <debug> Authorization: " + srv.echo(auth).encode() + b"\n\n"
    )


async def status_line_echo(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """Not an HTTP status line, and it quotes the key."""
    return await _write(w, f"XTTP/1.1 {srv.echo(auth)}\r\n\r\n".encode())


async def header_echo(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 500 that quotes the key in a header and in its body, and a header line without a colon."""
    echoed = srv.echo(auth)
    return await _send(
        w,
        "500 Internal Server Error",
        f"failed for {echoed}".encode(),
        ctype="text/plain",
        extra=f"X-Seen-Authorization: {echoed}\r\n",
    )


async def bad_header_line(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A header line without a colon, holding the key."""
    return await _write(w, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + srv.echo(auth).encode() + b"\r\n\r\nok")


async def endless_line(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream of one ``data:`` line that never ends."""
    return await srv.flood(w, _OK_SSE + b"\r\n" + _ROLE + b"data: ", b"x" * 65536)


async def endless_event(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream of ``data:`` lines that never gets its blank line."""
    return await srv.flood(w, _OK_SSE + b"\r\n" + _ROLE, b"data: " + b"y" * 1000 + b"\n")


async def endless_comments(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream of keep-alive comments as fast as the socket takes them."""
    return await srv.flood(w, _OK_SSE + b"\r\n" + _ROLE, b": keep-alive\n" * 512)


async def endless_tokens(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """Token events as fast as the socket takes them, far past max_tokens."""
    return await srv.flood(w, _OK_SSE + b"\r\n" + _ROLE, _TOKEN * 64)


async def huge_header(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A header block that never ends."""
    return await srv.flood(w, b"HTTP/1.1 200 OK\r\n", b"X-Pad: " + b"a" * 1000 + b"\r\n")


async def endless_body(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A close-delimited body that never ends (also for GET /models and /metrics)."""
    return await srv.flood(w, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[", b"1," * 32768)


bad_content_length = _fixed(
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: abc\r\n\r\n" + _ROLE
)
negative_content_length = _fixed(
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: -5\r\n\r\n" + _ROLE
)
two_content_lengths = _fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 700\r\n\r\n" + _ROLE)
chunk_bad_size = _fixed(_OK_SSE + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + _ROLE + b"\r\n0\r\n\r\n")
chunk_negative_size = _fixed(_OK_SSE + b"Transfer-Encoding: chunked\r\n\r\n-5\r\n" + _ROLE + b"\r\n0\r\n\r\n")
# a chunk that carries more bytes than its size line says
chunk_overlong = _fixed(_OK_SSE + b"Transfer-Encoding: chunked\r\n\r\n4\r\n" + _ROLE + b"\r\n0\r\n\r\n")


async def chunk_endless_size(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A chunk-size line that never ends."""
    return await srv.flood(w, _OK_SSE + b"Transfer-Encoding: chunked\r\n\r\n", b"0" * 65536)


async def trickle(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A 200 stream that sends a comment every 50 ms and never ends (no stall, no end)."""
    w.write(_OK_SSE + b"\r\n" + _ROLE)
    while True:
        w.write(b": still thinking\n")
        await w.drain()
        await asyncio.sleep(0.05)


async def slow_head(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """The status line and headers one byte every 50 ms, never finished."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * 100000:
        w.write(bytes([byte]))
        await w.drain()
        await asyncio.sleep(0.05)
    return False


async def silent(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """Reads the request and never answers."""
    await asyncio.sleep(3600)
    return False


async def redirect(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """Every request sent on to ``srv.location`` (a client must not follow it with the key)."""
    return await _send(
        w, "307 Temporary Redirect", b'{"error": {"message": "moved"}}', extra=f"Location: {srv.location}\r\n"
    )


async def nan_numbers(srv: HostileServer, method: str, target: str, auth: str, w: asyncio.StreamWriter) -> bool:
    """A good stream whose numbers are NaN and Infinity (not JSON), and a /metrics of NaN and +Inf."""
    if target.endswith("/metrics"):
        text = (
            "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc NaN\n"
            "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total +Inf\n"
        )
        return await _send(w, "200 OK", text.encode(), ctype="text/plain")
    if method == "GET":
        return await _send(w, "200 OK", b'{"object": "list", "data": [{"id": "m"}]}')
    last = (
        b'data: {"choices": [], "usage": {"completion_tokens": 1, "prompt_tokens": NaN}, '
        b'"timings": {"prompt_ms": NaN, "predicted_ms": Infinity}}\n\n'
    )
    return await _write(w, _OK_SSE + b"\r\n" + _ROLE + _TOKEN + last + b"data: [DONE]\n\n")


SCENARIOS: dict[str, Handler] = {
    "echo-401": echo_401,
    "echo-text-401": echo_text_401,
    "sse-error": sse_error,
    "sse-unparseable": sse_unparseable,
    "status-line-echo": status_line_echo,
    "header-echo": header_echo,
    "bad-header-line": bad_header_line,
    "endless-line": endless_line,
    "endless-event": endless_event,
    "endless-comments": endless_comments,
    "endless-tokens": endless_tokens,
    "huge-header": huge_header,
    "endless-body": endless_body,
    "bad-content-length": bad_content_length,
    "negative-content-length": negative_content_length,
    "two-content-lengths": two_content_lengths,
    "chunk-bad-size": chunk_bad_size,
    "chunk-negative-size": chunk_negative_size,
    "chunk-overlong": chunk_overlong,
    "chunk-endless-size": chunk_endless_size,
    "trickle": trickle,
    "slow-head": slow_head,
    "silent": silent,
    "nan": nan_numbers,
    "redirect": redirect,
}
