"""A lean HTTP/1.1 transport for httpx that stamps every socket read.

httpx's default stack parses responses in pure Python (h11) and hands bytes up through several
layers; at 64 concurrent streams on two cores that adds milliseconds between a token reaching
the socket and the probe seeing it. This transport reads the socket itself, records
``time.perf_counter()`` the moment each read returns (``response.extensions["kvswitch.reads"]``,
newest last) and when the request was written (``"kvswitch.sent"``), decodes chunked bodies
with plain buffer scans, and keeps connections alive per origin. The probe still speaks httpx
(requests, responses, errors); only the wire work is done here.

It is also how ``kvswitch doctor`` talks (:func:`async_client`), so both honour
the same proxies (an ``http://`` target forwarded by the proxy, an ``https://`` one tunnelled
through it with ``CONNECT``; loopback targets always direct) and trust the same certificates:
:mod:`kvswitch.network` decides both, from the environment as it was when the transport was made.

It trusts no server: the header block, a chunk-size line, the trailers and the whole body have
caps; a status line, Content-Length or chunk size that is not what RFC 9112 allows is a
:class:`BadResponse` (an ``httpx.RemoteProtocolError``) that says what was wrong, never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.network import Proxy

__all__ = ["MAX_BODY", "MAX_HEAD", "BadResponse", "StampedTransport", "async_client"]

_READ = 65536
MAX_HEAD = 64 * 1024
"""The most bytes of a response's status line and headers, and of a chunked body's trailers."""
MAX_BODY = 64 * 1024 * 1024
"""The most bytes of one response body (a long streamed answer is well under a megabyte)."""
_MAX_CHUNK_LINE = 4096
_CLOSE_WAIT = 0.5
"""Seconds a closed connection may take to say goodbye (TLS) before it is cut."""
_HEAD_TIMEOUT = "no complete response head within the read timeout"
_STATUS = re.compile(rb"HTTP/1\.[01] ([1-5][0-9]{2})(?: .*)?")
_DIGITS = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


class BadResponse(KvswitchError, httpx.RemoteProtocolError):
    """A response that breaks HTTP/1.1 framing or one of the transport's caps (also an
    ``httpx.RemoteProtocolError``, for code that handles httpx's errors)."""

    def __init__(self, message: str, *, request: httpx.Request | None = None) -> None:
        super().__init__(message)
        self._request = request  # httpx.RequestError's own slot: what ``.request`` gives


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    async def aclose(self) -> None:
        """Close and wait (briefly) until the socket is gone: a TLS connection says goodbye first,
        and an event loop that ends meanwhile would leave its socket open."""
        self.close()
        try:
            async with asyncio.timeout(_CLOSE_WAIT):
                await self.writer.wait_closed()
        except TimeoutError:
            self.writer.transport.abort()
        except Exception:  # noqa: BLE001 - a connection that ends badly is ended all the same
            pass


class _Body(httpx.AsyncByteStream):
    """The response body: chunked, sized or until close; stamps each socket read."""

    def __init__(
        self,
        transport: StampedTransport,
        key: tuple[str, str, int],
        conn: _Conn,
        rest: bytes,
        length: int | None,
        chunked: bool,
        keep: bool,
        reads: list[float],
        timeout: float | None,
        request: httpx.Request,
        max_body: int = MAX_BODY,
    ) -> None:
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
            raise BadResponse(f"the response body is over {self._max_body // (1024 * 1024)} MiB", request=self._request)

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
            await self._conn.aclose()


class StampedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams, with keep-alive per origin and stamped reads.

    Proxies and certificates follow :mod:`kvswitch.network`, read from ``environ`` (default: the
    process environment, as it is now); ``verify=False`` checks no certificate at all."""

    def __init__(
        self, *, verify: bool = True, max_body: int = MAX_BODY, environ: Mapping[str, str] | None = None
    ) -> None:
        from kvswitch.network import CA_VARIABLES, PROXY_VARIABLES

        self._max_body = max_body
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._verify = verify
        source = os.environ if environ is None else environ
        wanted = (*PROXY_VARIABLES, *CA_VARIABLES, "REQUEST_METHOD")
        self._env = {name: source[name] for name in wanted if name in source}
        self._ssl: ssl.SSLContext | None = None

    def _ssl_context(self, request: httpx.Request) -> ssl.SSLContext:
        """The TLS context, made on the first https request (a broken CA setting fails only those)."""
        if self._ssl is None:
            if not self._verify:
                self._ssl = ssl._create_unverified_context()
            else:
                from kvswitch.network import NetworkSettingsError, ssl_context

                try:
                    self._ssl = ssl_context(self._env)
                except NetworkSettingsError as exc:
                    raise httpx.ConnectError(exc.message, request=request) from None
        return self._ssl

    def _proxy(self, request: httpx.Request) -> Proxy | None:
        from kvswitch.network import NetworkSettingsError, proxy_for

        try:
            return proxy_for(str(request.url), self._env)
        except NetworkSettingsError as exc:
            raise httpx.ConnectError(exc.message, request=request) from None

    def _release(self, key: tuple[str, str, int], conn: _Conn) -> None:
        self._idle.setdefault(key, []).append(conn)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme, host = url.scheme, url.raw_host.decode("ascii")
        port = url.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        connect_timeout, read_timeout = timeouts.get("connect"), timeouts.get("read")
        proxy = self._proxy(request)
        body = await request.aread()
        target = url.raw_path.decode("ascii")
        if proxy is not None and scheme == "http":  # a forward proxy takes the whole URL (absolute-form)
            target = f"http://{url.netloc.decode('ascii')}{target}"
        head = [f"{request.method} {target} HTTP/1.1", f"Host: {url.netloc.decode('ascii')}"]
        for name, value in request.headers.multi_items():
            if any(c in value or c in name for c in "\r\n\0"):
                # a key with a stray newline must not become a second header
                raise httpx.LocalProtocolError(
                    tr("header {name} holds a line break; nothing was sent").format(name=repr(name))
                )
            if value != value.strip(" \t"):  # as h11 refuses it: a pasted key with a space around it
                raise httpx.LocalProtocolError(
                    tr("header {name} has whitespace around its value; nothing was sent").format(name=repr(name))
                )
            if name.lower() not in ("host", "content-length", "transfer-encoding", "connection", "proxy-authorization"):
                head.append(f"{name}: {value}")
        if proxy is not None and scheme == "http" and proxy.authorization:
            head.append(f"Proxy-Authorization: {proxy.authorization}")
        head.append(f"Content-Length: {len(body)}")
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        # a kept-alive connection the server has closed meanwhile (llama.cpp closes after every
        # stream while advertising keep-alive) gets one retry on a fresh connection
        for attempt in (1, 2):
            conn, connect = await self._connection(
                key, host, port, scheme, connect_timeout, request, fresh=attempt == 2, proxy=proxy
            )
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
                raise httpx.ReadTimeout(
                    _HEAD_TIMEOUT if buf else "no response within the read timeout", request=request
                ) from None
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
        stream = _Body(
            self, key, conn, buf[end + 4 :], length, chunked, keep, reads, read_timeout, request, self._max_body
        )
        return httpx.Response(
            status,
            headers=[(k.strip(), v.strip()) for k, v in headers],
            stream=stream,
            extensions={"kvswitch.sent": sent, "kvswitch.reads": reads, "kvswitch.connect": connect},
        )

    async def _connection(
        self,
        key: tuple[str, str, int],
        host: str,
        port: int,
        scheme: str,
        timeout: float | None,
        request: httpx.Request,
        *,
        fresh: bool,
        proxy: Proxy | None = None,
    ) -> tuple[_Conn, float | None]:
        """A kept-alive connection (connect time None) or a new one (its connect time): direct, to
        the proxy (http), or tunnelled through the proxy (https)."""
        idle = self._idle.get(key)
        while idle and not fresh:
            conn = idle.pop()
            if not conn.reader.at_eof():
                return conn, None
            conn.close()  # closed by the server meanwhile
        context = self._ssl_context(request) if scheme == "https" else None
        where = _authority(host, port)
        started = time.perf_counter()
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(timeout):
                if proxy is None:
                    reader, writer = await asyncio.open_connection(host, port, ssl=context, limit=2**20)
                else:
                    reader, writer = await asyncio.open_connection(proxy.host, proxy.port, limit=2**20)
                    if context is not None:
                        await _tunnel(reader, writer, where, proxy, request)
                        await writer.start_tls(context, server_hostname=host)
        except TimeoutError:
            if writer is not None:
                writer.close()
            message = (
                tr("cannot connect to {address} in time")
                if proxy is None
                else tr("cannot connect to {address} through the proxy {proxy} in time")
            )
            raise httpx.ConnectTimeout(
                message.format(address=where, proxy=proxy.shown if proxy else ""), request=request
            ) from None
        except OSError as exc:
            if writer is not None:
                writer.close()
            message = (
                tr("cannot connect to {address}: {reason}")
                if proxy is None
                else tr("cannot connect to {address} through the proxy {proxy}: {reason}")
            )
            raise httpx.ConnectError(
                message.format(address=where, proxy=proxy.shown if proxy else "", reason=_os_reason(exc)),
                request=request,
            ) from exc
        except httpx.ConnectError:
            if writer is not None:
                writer.close()
            raise
        return _Conn(reader, writer), time.perf_counter() - started

    async def aclose(self) -> None:
        conns = [conn for idle in self._idle.values() for conn in idle]
        self._idle.clear()
        await asyncio.gather(*(conn.aclose() for conn in conns))


def _os_reason(exc: OSError) -> str:
    """What went wrong, in the system's words: "Connection refused" rather than asyncio's
    "Connect call failed ('127.0.0.1', 9)"."""
    if isinstance(exc, ConnectionError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc.strerror or exc)


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _tunnel(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str, proxy: Proxy, request: httpx.Request
) -> None:
    """Ask the proxy for a tunnel to ``authority`` (``CONNECT``); returns once it answers 2xx."""
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.authorization:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
    await writer.drain()
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise httpx.ConnectError(
            tr("the proxy {proxy} closed the connection instead of opening a tunnel to {address}").format(
                proxy=proxy.shown, address=authority
            ),
            request=request,
        ) from None
    m = _STATUS.fullmatch(head.split(b"\r\n", 1)[0])
    if m is None or not 200 <= int(m.group(1)) < 300:
        status = f"HTTP {m.group(1).decode()}" if m else head[:40].decode("latin-1")
        raise httpx.ConnectError(
            tr("the proxy {proxy} refused a tunnel to {address} ({status})").format(
                proxy=proxy.shown, address=authority, status=status
            ),
            request=request,
        )


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


def async_client(*, timeout: float | None, **transport: Any) -> httpx.AsyncClient:
    """The ``httpx.AsyncClient`` probe and doctor talk through: the stamped transport with
    :mod:`kvswitch.network`'s proxy and certificate policy, no redirects followed, nothing else
    read from the environment (``transport`` options go to :class:`StampedTransport`)."""
    return httpx.AsyncClient(
        transport=StampedTransport(**transport), timeout=timeout, trust_env=False, follow_redirects=False
    )
