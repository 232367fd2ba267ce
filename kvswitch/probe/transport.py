"""A lean HTTP/1.1 transport for httpx that stamps every socket read.

httpx's default stack parses responses in pure Python (h11) and hands bytes up through several
layers; at 64 concurrent streams on two cores that adds milliseconds between a token reaching
the socket and the probe seeing it. This transport reads the socket itself, records
``time.perf_counter()`` the moment each read returns (``response.extensions["kvswitch.reads"]``,
newest last) and when the request was written (``"kvswitch.sent"``), decodes chunked bodies
with plain buffer scans, and keeps connections alive per origin. The probe still speaks httpx
(requests, responses, errors); only the wire work is done here.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["StampedTransport"]

_READ = 65536


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
                 request: httpx.Request) -> None:
        self._t, self._key, self._conn = transport, key, conn
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

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._chunked:
            async for piece in self._dechunk():
                yield piece
        elif self._length is not None:
            left = self._length
            if self._buf:
                piece, self._buf = self._buf[:left], b""
                left -= len(piece)
                yield piece
            while left > 0:
                data = await self._more()
                if not data:
                    raise httpx.RemoteProtocolError("connection closed before the body ended", request=self._request)
                piece = data[:left]
                left -= len(piece)
                yield piece
            self._complete = True
        else:
            if self._buf:
                yield self._buf
                self._buf = b""
            while data := await self._more():
                yield data
            self._keep = False
            self._complete = True

    async def _need(self, buf: bytes, what: str) -> bytes:
        data = await self._more()
        if not data:
            raise httpx.RemoteProtocolError(f"connection closed inside {what}", request=self._request)
        return buf + data

    async def _dechunk(self) -> AsyncIterator[bytes]:
        buf = self._buf
        while True:
            while (eol := buf.find(b"\r\n")) < 0:
                buf = await self._need(buf, "a chunk header")
            try:
                size = int(buf[:eol].split(b";", 1)[0], 16)
            except ValueError:
                raise httpx.RemoteProtocolError("bad chunk size", request=self._request) from None
            buf = buf[eol + 2 :]
            if size == 0:
                while not buf.startswith(b"\r\n") and b"\r\n\r\n" not in buf:
                    buf = await self._need(buf, "the trailers")  # trailers end with an empty line
                self._complete = True
                return
            while size > 0:  # the chunk's data, passed up as soon as it arrives
                if not buf:
                    buf = await self._need(buf, "a chunk")
                piece, buf = buf[:size], buf[size:]
                size -= len(piece)
                yield piece
            while len(buf) < 2:
                buf = await self._need(buf, "a chunk")
            buf = buf[2:]

    async def aclose(self) -> None:
        if self._complete and self._keep:
            self._t._release(self._key, self._conn)
        else:
            self._conn.close()


class StampedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams, with keep-alive per origin and stamped reads."""

    def __init__(self, *, verify: bool = True) -> None:
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
                        data = await conn.reader.read(_READ)
                        reads.append(time.perf_counter())
                        if not data:
                            break
                        buf += data
            except TimeoutError:
                conn.close()
                raise httpx.ReadTimeout("no response within the read timeout", request=request) from None
            except OSError as exc:
                conn.close()
                if reused and attempt == 1 and not buf:
                    continue
                raise httpx.ReadError(str(exc), request=request) from exc
            if end < 0:
                conn.close()
                if reused and attempt == 1 and not buf:
                    continue
                raise httpx.RemoteProtocolError("connection closed before a response", request=request)
            break
        lines = buf[:end].decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            conn.close()
            raise httpx.RemoteProtocolError(f"not an HTTP response: {lines[0][:80]!r}", request=request) from None
        headers = [tuple(line.split(":", 1)) for line in lines[1:] if ":" in line]
        hdr = {k.strip().lower(): v.strip() for k, v in headers}
        chunked = "chunked" in hdr.get("transfer-encoding", "").lower()
        length = int(hdr["content-length"]) if "content-length" in hdr and not chunked else None
        keep = hdr.get("connection", "").lower() != "close"
        stream = _Body(self, key, conn, buf[end + 4 :], length, chunked, keep, reads, read_timeout, request)
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
