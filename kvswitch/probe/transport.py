"""A lean HTTP/1.1 transport for httpx that stamps every socket read.

httpx's default stack parses responses in pure Python (h11) and hands bytes up through several
layers; at 64 concurrent streams on two cores that adds milliseconds between a token reaching
the socket and the probe seeing it. This transport reads the socket itself, records
``time.perf_counter()`` the moment each read returns (``response.extensions["kvswitch.reads"]``,
newest last) and when the request was written (``"kvswitch.sent"``), decodes chunked bodies
with plain buffer scans, and keeps connections alive per origin. The probe still speaks httpx
(requests, responses, errors); only the wire work is done here.

It trusts no server: the header block, a chunk-size line, the trailers and the whole body have
caps; a status line, Content-Length or chunk size that is not what RFC 9112 allows is a
:class:`BadResponse` (an ``httpx.RemoteProtocolError``) that says what was wrong, never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["MAX_BODY", "MAX_HEAD", "BadResponse", "StampedTransport"]

_READ = 65536
MAX_HEAD = 64 * 1024
"""The most bytes of a response's status line and headers, and of a chunked body's trailers."""
MAX_BODY = 64 * 1024 * 1024
"""The most bytes of one response body (a long streamed answer is well under a megabyte)."""
_MAX_CHUNK_LINE = 4096
_HEAD_TIMEOUT = "no complete response head within the read timeout"
_STATUS = re.compile(rb"HTTP/1\.[01] ([1-5][0-9]{2})(?: .*)?")
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


class BadResponse(httpx.RemoteProtocolError):
    """A response that breaks HTTP/1.1 framing or one of the transport's caps."""


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _Body(httpx.AsyncByteStream):
    """The response body: chunked, sized or until close; stamps each socket read."""

    def __init__(self, transport: StampedTransport, key: tuple[str, str, int], conn: _Conn, rest: bytes,
                 length: int | None, chunked: bool, keep: bool, reads: list[float], timeout: float | None,
                 request: httpx.Request, max_body: int = MAX_BODY) -> None:
        self._t, self._key, self._conn = transport, key, conn
        self._max_body, self._got = max_body, 0
        self._buf = rest
        self._length, self._chunked, self._keep = length, chunked, keep
        self._reads, self._timeout, self._request = reads, timeout, request
        self._complete = False

    async def _more(self) -> bytes:
        try:
            async with asyncio.timeout(self._timeout):
                data = await self._conn.reader.read(_READ)
        except TimeoutError:
            raise httpx.ReadTimeout("no data within the read timeout", request=self._request) from None
        except OSError as exc:
            raise httpx.ReadError(str(exc), request=self._request) from exc
        self._reads.append(time.perf_counter())
        return data

    def _count(self, n: int) -> None:
        self._got += n
        if self._got > self._max_body:
            self._keep = False
            raise BadResponse(f"the response body is over {self._max_body // (1024 * 1024)} MiB",
                              request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._chunked:
            async for piece in self._dechunk():
                yield piece
        elif self._length is not None:
            left = self._length
            if self._buf:
                piece, self._buf = self._buf[:left], b""
                left -= len(piece)
                self._count(len(piece))
                yield piece
            while left > 0:
                data = await self._more()
                if not data:
                    raise httpx.RemoteProtocolError("connection closed before the body ended", request=self._request)
                piece = data[:left]
                left -= len(piece)
                self._count(len(piece))
                yield piece
            self._complete = True
        else:
            if self._buf:
                self._count(len(self._buf))
                yield self._buf
                self._buf = b""
            while data := await self._more():
                self._count(len(data))
                yield data
            self._keep = False
            self._complete = True

    async def _need(self, buf: bytes, what: str, cap: int | None = None) -> bytes:
        if cap is not None and len(buf) > cap:
            raise BadResponse(f"{what} is longer than {cap} bytes", request=self._request)
        data = await self._more()
        if not data:
            raise httpx.RemoteProtocolError(f"connection closed inside {what}", request=self._request)
        return buf + data

    async def _dechunk(self) -> AsyncIterator[bytes]:
        buf = self._buf
        while True:
            while (eol := buf.find(b"\r\n")) < 0:
                buf = await self._need(buf, "a chunk header", _MAX_CHUNK_LINE)
            if eol > _MAX_CHUNK_LINE:
                raise BadResponse(f"a chunk header is longer than {_MAX_CHUNK_LINE} bytes", request=self._request)
            field = buf[:eol]
            if _HEX.fullmatch(field) is None:  # not bare hex digits: extensions, or not a size at all
                field = field.split(b";", 1)[0].strip(b" \t")
                if _HEX.fullmatch(field) is None:
                    raise BadResponse(f"bad chunk size {field[:20]!r}", request=self._request)
            size = int(field, 16)
            buf = buf[eol + 2 :]
            if size == 0:
                while not buf.startswith(b"\r\n") and b"\r\n\r\n" not in buf:
                    buf = await self._need(buf, "the trailers", MAX_HEAD)  # trailers end with an empty line
                self._complete = True
                return
            while size > 0:  # the chunk's data, passed up as soon as it arrives
                if not buf:
                    buf = await self._need(buf, "a chunk")
                piece, buf = buf[:size], buf[size:]
                size -= len(piece)
                self._count(len(piece))
                yield piece
            while len(buf) < 2:
                buf = await self._need(buf, "a chunk")
            if not buf.startswith(b"\r\n"):
                raise BadResponse("a chunk is longer than its size says", request=self._request)
            buf = buf[2:]

    async def aclose(self) -> None:
        if self._complete and self._keep:
            self._t._release(self._key, self._conn)
        else:
            self._conn.close()


class StampedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams, with keep-alive per origin and stamped reads."""

    def __init__(self, *, verify: bool = True, max_body: int = MAX_BODY) -> None:
        self._max_body = max_body
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._ssl = ssl.create_default_context() if verify else ssl._create_unverified_context()

    def _release(self, key: tuple[str, str, int], conn: _Conn) -> None:
        self._idle.setdefault(key, []).append(conn)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme, host = url.scheme, url.host
        port = url.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        connect_timeout, read_timeout = timeouts.get("connect"), timeouts.get("read")
        body = await request.aread()
        target = url.raw_path.decode("ascii")
        head = [f"{request.method} {target} HTTP/1.1", f"Host: {url.netloc.decode('ascii')}"]
        for name, value in request.headers.multi_items():
            if any(c in value or c in name for c in "\r\n\0"):
                # a key with a stray newline must not become a second header
                raise httpx.LocalProtocolError(f"header {name!r} holds a line break; nothing was sent")
            if name.lower() not in ("host", "content-length", "transfer-encoding", "connection"):
                head.append(f"{name}: {value}")
        head.append(f"Content-Length: {len(body)}")
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        # a kept-alive connection the server has closed meanwhile (llama.cpp closes after every
        # stream while advertising keep-alive) gets one retry on a fresh connection
        for attempt in (1, 2):
            conn, connect = await self._connection(key, host, port, scheme, connect_timeout, request, fresh=attempt == 2)
            reused = connect is None
            sent = time.perf_counter()
            try:
                conn.writer.write(payload)
                await conn.writer.drain()
            except OSError as exc:
                conn.close()
                if reused and attempt == 1:
                    continue
                raise httpx.WriteError(str(exc), request=request) from exc
            reads: list[float] = []
            buf = b""
            try:
                async with asyncio.timeout(read_timeout):
                    while (end := buf.find(b"\r\n\r\n")) < 0:
                        if len(buf) > MAX_HEAD:
                            break
                        data = await conn.reader.read(_READ)
                        reads.append(time.perf_counter())
                        if not data:
                            break
                        buf += data
            except TimeoutError:
                conn.close()
                raise httpx.ReadTimeout(_HEAD_TIMEOUT if buf else "no response within the read timeout",
                                        request=request) from None
            except OSError as exc:
                conn.close()
                if reused and attempt == 1 and not buf:
                    continue
                raise httpx.ReadError(str(exc), request=request) from exc
            if end < 0 and len(buf) <= MAX_HEAD:
                conn.close()
                if reused and attempt == 1 and not buf:
                    continue
                raise httpx.RemoteProtocolError("connection closed before a response", request=request)
            break
        if end < 0 or end > MAX_HEAD:
            conn.close()
            raise BadResponse(f"the response's header block is over {MAX_HEAD // 1024} KiB", request=request)
        try:
            status, headers, length, chunked, keep = _head(buf[:end])
        except ValueError as exc:
            conn.close()
            raise BadResponse(str(exc), request=request) from None
        stream = _Body(self, key, conn, buf[end + 4 :], length, chunked, keep, reads, read_timeout, request,
                       self._max_body)
        return httpx.Response(
            status, headers=[(k.strip(), v.strip()) for k, v in headers], stream=stream,
            extensions={"kvswitch.sent": sent, "kvswitch.reads": reads, "kvswitch.connect": connect},
        )

    async def _connection(
        self, key: tuple[str, str, int], host: str, port: int, scheme: str, timeout: float | None,
        request: httpx.Request, *, fresh: bool,
    ) -> tuple[_Conn, float | None]:
        """A kept-alive connection (connect time None) or a new one (its connect time)."""
        idle = self._idle.get(key)
        while idle and not fresh:
            conn = idle.pop()
            if not conn.reader.at_eof():
                return conn, None
            conn.close()  # closed by the server meanwhile
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=self._ssl if scheme == "https" else None, limit=2**20,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"cannot connect to {host}:{port} in time", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc.strerror or exc}", request=request) from exc
        return _Conn(reader, writer), time.perf_counter() - started

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


def _head(block: bytes) -> tuple[int, list[tuple[str, str]], int | None, bool, bool]:
    """(status, headers, Content-Length, chunked, keep-alive) of a response head (RFC 9112);
    ``ValueError`` saying what is wrong with it."""
    lines = block.split(b"\r\n")
    m = _STATUS.fullmatch(lines[0])
    if m is None:
        raise ValueError(f"not an HTTP response: {lines[0][:80].decode('latin-1')!r}")
    status = int(m.group(1))
    headers: list[tuple[str, str]] = []
    for raw in lines[1:]:
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip() or any(c in name for c in " \t\0"):
            raise ValueError(f"a malformed header line ({len(raw)} bytes)")
        headers.append((name, value.strip(" \t")))
    lower = [(k.lower(), v) for k, v in headers]
    codings = [c.strip().lower() for k, v in lower if k == "transfer-encoding" for c in v.split(",") if c.strip()]
    chunked = bool(codings) and codings[-1] == "chunked"
    lengths = {part.strip() for k, v in lower if k == "content-length" for part in v.split(",")}
    length: int | None = None
    if lengths and not codings:
        if len(lengths) > 1:
            raise ValueError("the response has more than one Content-Length")
        (value,) = lengths
        if not _DIGITS.fullmatch(value):
            raise ValueError(f"bad Content-Length {value[:20]!r}")
        length = int(value)
    connection = {t.strip().lower() for k, v in lower if k == "connection" for t in v.split(",")}
    # a body framed by Transfer-Encoding and Content-Length both, or read until close, ends the connection
    keep = "close" not in connection and not (codings and lengths) and (chunked or length is not None)
    if status in (204, 304) or 100 <= status < 200:
        length, chunked = 0, False
    return status, headers, length, chunked, keep
