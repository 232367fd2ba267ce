"""The lab router: one OpenAI-compatible URL in front of the lab's three llama.cpp servers.

A learning and testing aid, not a production proxy. It is an HTTP/1.1 server on 127.0.0.1
(aiohttp's server and client) that routes ``POST /v1/chat/completions`` (and
``/v1/completions``, ``/chat/completions``, ``/completions``) by mode:

* the path prefix ``/merged/v1/…`` or ``/split/v1/…``, else
* the ``X-Cache-Mode: merged|split`` header, else merged.

**merged** — proxied to the merged server (chunked prefill and continuous batching on one
instance); the response, SSE included, is passed through byte for byte.

**split** — the KV cache is handed over for every request, with llama.cpp's slot files:

1. the prefill server prefills the prompt: the same body with ``max_tokens: 1``,
   ``cache_prompt: true``, ``id_slot: s``, streamed with ``return_progress: true`` (an event
   after every batch, so a closed connection stops the prefill at the next batch);
2. ``POST /slots/{s}?action=save`` on the prefill server writes the slot to a file with a
   unique name in the shared ``--slot-save-path`` directory;
3. ``POST /slots/{d}?action=restore`` on the decode server reads it into slot ``d``;
4. the original request goes to the decode server with ``id_slot: d``, ``cache_prompt: true``;
   the prompt is already in its KV cache, so it evaluates about one token before decoding,
   and its (streamed) response is passed through;
5. the slot file is deleted.

A slot serves one request at a time (a queue of free slots per server). Errors from a server
are passed on with their status and body. A client that goes away cancels its request in
every phase: a wait for a slot ends, the upstream connection is closed (llama.cpp stops a
streamed prefill or decode at its next write; it cannot stop a *silent* one, such as a merged
request still prefilling, before that prefill ends), a slot save or restore is let finish,
then the slot goes back to its pool and the slot file is deleted. ``GET /metrics`` serves the router's counters
(``kvswitch_lab:kv_handoffs_total`` moves only for split requests: that is how kvswitch's
probe tells the modes apart) and every server's own ``/metrics`` with an
``instance="merged|prefill|decode"`` label. ``GET /lab/handoffs`` lists the latest hand-offs
with their timings; ``GET /health``; ``GET /v1/models`` (the merged server's).

It is not an open proxy: it connects only to the three servers it was started with, on the
routes above; a request target that is not a path (``@host/…``, ``http://other/…``,
``host:port``) is refused and never decides where anything goes. Request heads must arrive
within 10 s, bodies within 60 s; at most 256 client connections are open at once (more get a
503); malformed requests (RFC 9112 framing, checked by llhttp in strict mode) get a 400 and the
connection is closed.

Run as a process::

    python -m kvswitch.lab.router --port 18080 --merged http://127.0.0.1:A \\
        --prefill http://127.0.0.1:B --decode http://127.0.0.1:C --slot-dir DIR

It prints ``LISTENING http://127.0.0.1:<port>`` once bound and exits on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from yarl import URL

from kvswitch.errors import KvswitchError
from kvswitch.first_token import StreamClock
from kvswitch.http_serving import (
    AnswerTooLarge,
    QuietLogger,
    cut,
    first_line,
    forwarded_headers,
    json_response,
    plain_http_origin,
    read_capped,
    serve_until_signal,
    shown,
    upstream_session,
    why,
)

__all__ = [
    "BODY_TIMEOUT",
    "HANDOFF_PREFIX",
    "HEAD_TIMEOUT",
    "INSTANCES",
    "MAX_CONNECTIONS",
    "Router",
    "RouterError",
    "main",
]

HANDOFF_PREFIX = "kvswitch-lab-"
"""Slot files the router writes are named ``kvswitch-lab-<hex>.bin``."""

INSTANCES = ("merged", "prefill", "decode")
MODES = ("merged", "split")
LISTENING = "LISTENING"
COMPLETIONS = frozenset({"/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions"})
"""The paths a completion request may have (after a ``/merged`` or ``/split`` prefix)."""
HEAD_TIMEOUT = 10.0
"""Seconds a connection may take to send a whole request head (from its opening, or from the
end of the previous response)."""
BODY_TIMEOUT = 60.0
"""Seconds a request body may take to arrive."""
MAX_CONNECTIONS = 256
"""Client connections open at once; each may hold one upstream connection, so the router stays
well inside a desktop's usual limit of 1024 open files."""
_LINGER = 1.0
"""Seconds the rest of a refused request's body is read (and dropped) before the close, so
that the client reads the answer rather than a reset."""
_MAX_LINE = 8190
_MAX_HEADERS = 100
_MAX_BODY = 64 * 1024 * 1024
_MAX_UPSTREAM_BODY = 64 * 1024 * 1024


_log = logging.getLogger("kvswitch.lab.router")
_T = TypeVar("_T")


class RouterError(KvswitchError):
    """The router cannot start as asked (an upstream that is not a plain ``http://host:port``)."""


class _Refused(KvswitchError):
    """A request the router answers itself with ``status`` (and, for a malformed one, closes)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Upstream(KvswitchError):
    """A server could not be reached, or answered unreadably (502)."""


@dataclass(frozen=True)
class _Answer:
    """A whole upstream response."""

    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def response(self) -> web.Response:
        return web.Response(status=self.status, body=self.body, headers={"Content-Type": self.content_type})


class _Refuse(asyncio.Protocol):
    """A connection past the cap: a 503, then closed, without reading it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        body = json.dumps(_error("the lab router has too many open connections; try again", 503)).encode()
        assert isinstance(transport, asyncio.Transport)
        transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%b" % (len(body), body)
        )
        transport.close()


@dataclass
class _Summary:
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        self.total += value
        self.count += 1


@dataclass
class Handoff:
    """One split request: what was handed over and how long each step took."""

    id: str
    phase: str | None = None
    """Where it is (or ended): ``prefill_wait``, ``prefill``, ``save``, ``decode_wait``,
    ``restore``, ``decode``, ``done``."""
    cancelled: bool = False
    """The client went away before the end (``phase`` says where)."""
    prefill_slot: int | None = None
    decode_slot: int | None = None
    status: int | None = None
    error: str | None = None
    prefill_ms: float | None = None
    prefill_prompt_n: int | None = None
    save_ms: float | None = None
    n_saved: int | None = None
    bytes: int | None = None
    restore_ms: float | None = None
    n_restored: int | None = None
    decode_ttft_ms: float | None = None
    decode_prompt_n: int | None = None
    decode_cache_n: int | None = None
    total_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Stats:
    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    in_flight: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    cancelled: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    ttft: dict[str, _Summary] = field(default_factory=lambda: {m: _Summary() for m in MODES})
    handoffs: int = 0
    handoff_bytes: int = 0
    handoff_tokens: int = 0
    prefill: _Summary = field(default_factory=_Summary)
    save: _Summary = field(default_factory=_Summary)
    restore: _Summary = field(default_factory=_Summary)
    decode_ttft: _Summary = field(default_factory=_Summary)
    recent: collections.deque[Handoff] = field(default_factory=lambda: collections.deque(maxlen=100))
    refused: int = 0


class Router:
    """The router; ``await start()``, then ``url``; ``await close()``.

    It forwards only to its three upstreams, by routes it knows: a request's target never
    names where a request goes. Request heads must arrive within ``head_timeout`` seconds of
    the connection opening (or of the previous response), bodies within ``body_timeout``; at
    most ``max_connections`` client connections are open at once (more get a 503 and are
    closed). Malformed requests get a 400 and the connection is closed; message framing is
    aiohttp's llhttp parser in strict mode (RFC 9112: ``Content-Length`` with
    ``Transfer-Encoding``, two ``Content-Length``, bare LF and obs-fold are all refused)."""

    def __init__(
        self,
        merged: str,
        prefill: str,
        decode: str,
        slot_dir: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        prefill_slots: int | None = None,
        decode_slots: int | None = None,
        upstream_timeout: float = 600.0,
        head_timeout: float = HEAD_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.upstreams = {
            "merged": merged.rstrip("/"),
            "prefill": prefill.rstrip("/"),
            "decode": decode.rstrip("/"),
        }
        self._origins = {name: _origin(name, url) for name, url in self.upstreams.items()}
        self.slot_dir = Path(slot_dir)
        self.host = host
        self.port = port
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self._slot_counts = {"prefill": prefill_slots, "decode": decode_slots}
        self._pools: dict[str, asyncio.Queue[int]] = {}
        self._pool_lock = asyncio.Lock()
        self.stats = _Stats()
        self._listener: asyncio.base_events.Server | None = None
        self._web: web.Server | None = None
        self._session: aiohttp.ClientSession | None = None
        self._timeout = upstream_timeout

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self._session = upstream_session(self._timeout)
        # aiohttp arms keepalive_timeout when a connection opens and after every response, and
        # closes the connection then unless a whole request head has arrived: the head timeout
        self._web = web.Server(
            self._handle,
            access_log=None,
            logger=QuietLogger(_log, {}),
            keepalive_timeout=self.head_timeout,
            max_line_size=_MAX_LINE,
            max_field_size=_MAX_LINE,
            max_headers=_MAX_HEADERS,
            lingering_time=_LINGER,
            # a client that goes away cancels its request: the upstream connection is closed
            # at once, even while the server is silent (e.g. still prefilling)
            handler_cancellation=True,
        )
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._protocol, self.host, self.port, backlog=512)
        self.port = self._listener.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._web is not None:
            await self._web.shutdown(1.0)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()
        if self._session is not None:
            await self._session.close()
        self._remove_files(HANDOFF_PREFIX + "*")

    def _protocol(self) -> asyncio.BaseProtocol:
        """A new connection: aiohttp's handler, or a 503 and close past the cap."""
        assert self._web is not None
        if len(self._web.connections) >= self.max_connections:
            self.stats.refused += 1
            return _Refuse()
        return self._web()

    # -- requests ------------------------------------------------------------------------------
    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            if request.version.major != 1:
                raise _Refused(
                    505,
                    f"HTTP/{request.version.major}.{request.version.minor} is not supported; "
                    "the lab router speaks HTTP/1.1",
                )
            path = self._route_path(request)
            body = await self._body(request)
            return await self._dispatch(request, path, body)
        except _Refused as exc:
            response = json_response(exc.status, _error(str(exc), exc.status))
            response.force_close()
            return response

    def _route_path(self, request: web.BaseRequest) -> str:
        """The request's path, from an origin-form target (``/v1/…``), or an absolute-form one
        naming this router; anything else is refused: the router is not a proxy."""
        target = request.raw_path
        if target.startswith("/") and not target.startswith("//"):
            return target.partition("?")[0].partition("#")[0]
        url = request.url if target.lower().startswith(("http://", "https://")) else None
        if (
            url is not None
            and url.scheme == "http"
            and url.user is None
            and url.password is None
            and url.host in {self.host, "localhost", "127.0.0.1"}
            and url.port == self.port
            and url.raw_path.startswith("/")
            and not url.raw_path.startswith("//")
        ):
            return url.raw_path
        if url is not None:
            raise _Refused(
                421,
                "the lab router forwards only to its own servers; the request target "
                f"names another one ({shown(target)})",
            )
        raise _Refused(
            400,
            f"the request target must be a path such as /v1/chat/completions, not {shown(target)}",
        )

    async def _body(self, request: web.BaseRequest) -> bytes:
        expect = request.headers.get("Expect", "")
        if expect:
            if expect.lower() != "100-continue":
                raise _Refused(417, f"unsupported Expect: {shown(expect)}")
            if request.version >= aiohttp.HttpVersion11:  # curl, for large bodies
                await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = bytearray()
        try:
            async with asyncio.timeout(self.body_timeout):
                async for chunk in request.content.iter_any():
                    body += chunk
                    if len(body) > _MAX_BODY:
                        raise _Refused(413, f"the request body is larger than {_MAX_BODY} bytes")
        except TimeoutError:
            raise _Refused(408, f"the request body did not arrive within {self.body_timeout:g} s") from None
        except web.RequestPayloadError as exc:  # llhttp refused its framing (a bad chunk size…)
            raise _Refused(400, f"malformed request body: {first_line(exc)}") from None
        return bytes(body)

    async def _dispatch(self, request: web.BaseRequest, path: str, body: bytes) -> web.StreamResponse:
        mode_from_path = None
        for mode in MODES:
            if path == f"/{mode}" or path.startswith(f"/{mode}/"):
                mode_from_path, path = mode, path[len(mode) + 1 :] or "/"
                break
        method = request.method
        try:
            if method == "GET":
                if path == "/health":
                    status, data = await self._health()
                    return json_response(status, data)
                if path == "/metrics":
                    text = await self._metrics()
                    return web.Response(
                        status=200,
                        body=text.encode(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
                    )
                if path in ("/v1/models", "/models"):
                    answer = await self._call("merged", "GET", path, None, _forward_headers(request.headers))
                    return answer.response()
                if path == "/lab/handoffs":
                    return json_response(200, {"handoffs": [h.as_dict() for h in self.stats.recent]})
                return json_response(404, _error(f"no route for GET {shown(path)}", 404))
            if method == "POST" and path in COMPLETIONS:
                mode = mode_from_path or request.headers.get("X-Cache-Mode", "merged").strip().lower() or "merged"
                if mode not in MODES:
                    return json_response(
                        400,
                        _error(f"X-Cache-Mode must be merged or split, not {shown(mode)}", 400),
                    )
                self.stats.requests[mode] += 1
                self.stats.in_flight[mode] += 1
                try:
                    if mode == "merged":
                        response, ok = await self._merged(path, request, body)
                    else:
                        response, ok = await self._split(path, request, body)
                except BaseException as exc:
                    self.stats.errors[mode] += 1
                    if isinstance(exc, asyncio.CancelledError):  # the client went away
                        self.stats.cancelled[mode] += 1
                    raise
                finally:
                    self.stats.in_flight[mode] -= 1
                if not ok:
                    self.stats.errors[mode] += 1
                return response
            if method in ("GET", "POST"):
                return json_response(404, _error(f"no route for {method} {shown(path)}", 404))
            response = json_response(405, _error(f"no route for {shown(method)} {shown(path)}", 405))
            response.headers["Allow"] = "GET, POST"
            if method == "CONNECT":
                response.force_close()
            return response
        except _Upstream as exc:
            return json_response(502, _error(str(exc), 502, "upstream_error"))

    # -- upstream calls ---------------------------------------------------------------------------
    def _url(self, instance: str, path: str) -> URL:
        """``path`` on ``instance``'s origin: host and port come from the router's own settings,
        never from the request."""
        return self._origins[instance].with_path(path, encoded=True)

    async def _call(
        self,
        instance: str,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float | None = None,
        *,
        query: dict[str, str] | None = None,
    ) -> _Answer:
        """One whole upstream exchange (the body read in full, up to a cap)."""
        assert self._session is not None
        url = self._url(instance, path)
        if query:
            url = url.with_query(query)
        limit = aiohttp.ClientTimeout(total=timeout) if timeout is not None else self._session.timeout
        try:
            async with self._session.request(method, url, data=body, headers=headers, timeout=limit) as resp:
                data = await read_capped(resp, _MAX_UPSTREAM_BODY)
                return _Answer(resp.status, resp.headers.get("Content-Type", "application/json"), data)
        except (aiohttp.ClientError, TimeoutError, AnswerTooLarge) as exc:
            raise _Upstream(f"{instance} server ({url}): {why(exc)}") from exc

    async def _post(
        self,
        instance: str,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        *,
        query: dict[str, str] | None = None,
    ) -> _Answer:
        return await self._call(
            instance,
            "POST",
            path,
            json.dumps(body).encode(),
            {**headers, "Content-Type": "application/json"},
            query=query,
        )

    # -- merged ------------------------------------------------------------------------------
    async def _merged(self, path: str, request: web.BaseRequest, body: bytes) -> tuple[web.StreamResponse, bool]:
        t0 = time.perf_counter()
        watch = StreamClock(t0)
        response, status = await self._relay("merged", path, body, _forward_headers(request.headers), request, watch)
        if status == 200 and watch.ttft is not None:
            self.stats.ttft["merged"].observe(watch.ttft)
        return response, status == 200

    async def _relay(
        self,
        instance: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        request: web.BaseRequest,
        watch: StreamClock,
    ) -> tuple[web.StreamResponse, int]:
        """Send ``body`` to ``instance`` and pass its response on: SSE as it arrives (chunked
        to HTTP/1.1 clients; to HTTP/1.0 ones until the connection closes), anything else
        whole. Returns the response and the upstream status (0: the stream broke midway)."""
        assert self._session is not None
        url = self._url(instance, path)
        try:
            async with self._session.post(url, data=body, headers=headers) as resp:
                content_type = resp.headers.get("Content-Type", "application/json")
                if resp.status == 200 and content_type.startswith("text/event-stream"):
                    return await self._stream_out(request, resp, content_type, watch)
                data = await read_capped(resp, _MAX_UPSTREAM_BODY)
                if resp.status == 200:
                    watch.whole(data)
                return _Answer(resp.status, content_type, data).response(), resp.status
        except (aiohttp.ClientError, TimeoutError, AnswerTooLarge) as exc:
            raise _Upstream(f"{instance} server ({url}): {why(exc)}") from exc

    async def _stream_out(
        self,
        request: web.BaseRequest,
        resp: aiohttp.ClientResponse,
        content_type: str,
        watch: StreamClock,
    ) -> tuple[web.StreamResponse, int]:
        out = web.StreamResponse(
            status=resp.status,
            headers={
                "Content-Type": content_type,
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            },
        )
        try:
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
                watch.feed(chunk)
            await out.write_eof()
        except (aiohttp.ClientError, TimeoutError, ConnectionError):
            # the server's stream broke, or the client went away: the response has begun, so
            # all that is left is to cut the client's connection (it sees a broken stream, not
            # a clean end); leaving the caller's block closes the server's connection
            cut(request)
            return out, 0
        return out, resp.status

    # -- split -------------------------------------------------------------------------------
    async def _pool(self, instance: str) -> asyncio.Queue[int]:
        async with self._pool_lock:
            if instance not in self._pools:
                count = self._slot_counts[instance] or await self._count_slots(instance)
                pool: asyncio.Queue[int] = asyncio.Queue()
                for slot in range(max(1, count)):
                    pool.put_nowait(slot)
                self._pools[instance] = pool
            return self._pools[instance]

    async def _count_slots(self, instance: str) -> int:
        with contextlib.suppress(_Upstream, ValueError):
            answer = await self._call(instance, "GET", "/slots", None, {}, timeout=10)
            if answer.status == 200:
                slots = answer.json()
                if isinstance(slots, list) and slots:
                    return len(slots)
        return 1

    async def _split(self, path: str, request: web.BaseRequest, raw: bytes) -> tuple[web.StreamResponse, bool]:
        t0 = time.perf_counter()
        try:
            data = json.loads(raw or b"null")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return json_response(400, _error("the request body must be a JSON object", 400)), False
        headers = _forward_headers(request.headers)
        record = Handoff(id=uuid.uuid4().hex[:12])
        self.stats.recent.append(record)
        filename = f"{HANDOFF_PREFIX}{record.id}.bin"
        # A client that goes away cancels this task (handler_cancellation) at whichever await
        # it is in: a slot wait ends, an upstream call's connection is closed (the prefill is
        # streamed with progress events, so llama.cpp notices at its next batch), a slot save
        # or restore is let finish first (llama.cpp cannot stop one: the file is deleted only
        # once written); every slot goes back to its pool and the file is deleted.
        try:
            # 1-2: prefill on P, save its slot
            record.phase = "prefill_wait"
            prefill_pool = await self._pool("prefill")
            s = await prefill_pool.get()
            record.prefill_slot = s
            try:
                body = {k: v for k, v in data.items() if k not in ("stream", "stream_options")}
                body.update(
                    stream=True,
                    return_progress=True,
                    max_tokens=1,
                    n_predict=1,
                    cache_prompt=True,
                    id_slot=s,
                )
                record.phase = "prefill"
                t = time.perf_counter()
                response, timings = await self._prefill(path, body, headers)
                record.prefill_ms = (time.perf_counter() - t) * 1000
                if response.status != 200:
                    return self._fail(record, response, "prefill"), False
                record.prefill_prompt_n = (timings or {}).get("prompt_n")
                self.stats.prefill.observe(record.prefill_ms / 1000)
                record.phase = "save"
                t = time.perf_counter()
                response = await _settled(
                    self._post(
                        "prefill",
                        f"/slots/{s}",
                        {"filename": filename},
                        headers,
                        query={"action": "save"},
                    )
                )
                record.save_ms = (time.perf_counter() - t) * 1000
                if response.status != 200:
                    return self._fail(record, response, "slot save"), False
                with contextlib.suppress(ValueError, AttributeError):
                    saved = response.json()
                    record.n_saved, record.bytes = saved.get("n_saved"), saved.get("n_written")
                self.stats.save.observe(record.save_ms / 1000)
            finally:
                prefill_pool.put_nowait(s)
            # 3-4: restore on D, then the request itself, its response passed on
            record.phase = "decode_wait"
            decode_pool = await self._pool("decode")
            d = await decode_pool.get()
            record.decode_slot = d
            try:
                record.phase = "restore"
                t = time.perf_counter()
                response = await _settled(
                    self._post(
                        "decode",
                        f"/slots/{d}",
                        {"filename": filename},
                        headers,
                        query={"action": "restore"},
                    )
                )
                record.restore_ms = (time.perf_counter() - t) * 1000
                self._remove_files(filename)
                if response.status != 200:
                    return self._fail(record, response, "slot restore"), False
                with contextlib.suppress(ValueError, AttributeError):
                    record.n_restored = response.json().get("n_restored")
                self.stats.restore.observe(record.restore_ms / 1000)
                self.stats.handoffs += 1
                self.stats.handoff_bytes += int(record.bytes or 0)
                self.stats.handoff_tokens += int(record.n_restored or 0)
                decode_body = {**data, "id_slot": d, "cache_prompt": True}
                record.phase = "decode"
                t = time.perf_counter()
                watch = StreamClock(t)
                out, status = await self._relay(
                    "decode", path, json.dumps(decode_body).encode(), headers, request, watch
                )
                record.status = status
                if watch.ttft is not None:
                    record.decode_ttft_ms = watch.ttft * 1000
                    self.stats.decode_ttft.observe(watch.ttft)
                    self.stats.ttft["split"].observe(watch.ttft + (t - t0))
                if watch.timings:
                    record.decode_prompt_n = watch.timings.get("prompt_n")
                    record.decode_cache_n = watch.timings.get("cache_n")
                record.phase = "done"
                return out, status == 200
            finally:
                decode_pool.put_nowait(d)
        except asyncio.CancelledError:
            record.error = f"the client went away ({record.phase})"
            record.cancelled = True
            raise
        finally:
            # 5: the slot file is gone whatever happened
            self._remove_files(filename)
            record.total_ms = (time.perf_counter() - t0) * 1000

    async def _prefill(
        self, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[_Answer, dict[str, Any] | None]:
        """The split prefill, streamed: llama.cpp sends a progress event after each batch, so
        a closed connection stops the prefill there (a silent request runs to its end).
        Returns the answer (a server's error as it came, an in-band error as a 502) and the
        server's ``timings``."""
        assert self._session is not None
        url = self._url("prefill", path)
        data = json.dumps(body).encode()
        try:
            async with self._session.post(
                url, data=data, headers={**headers, "Content-Type": "application/json"}
            ) as resp:
                content_type = resp.headers.get("Content-Type", "application/json")
                if resp.status != 200 or not content_type.startswith("text/event-stream"):
                    answer = _Answer(resp.status, content_type, await read_capped(resp, _MAX_UPSTREAM_BODY))
                    return answer, None
                clock = StreamClock()
                size = 0
                async for chunk in resp.content.iter_any():
                    size += len(chunk)
                    if size > _MAX_UPSTREAM_BODY:
                        raise AnswerTooLarge(f"the response is larger than {_MAX_UPSTREAM_BODY} bytes")
                    clock.feed(chunk)
                clock.close()
        except (aiohttp.ClientError, TimeoutError, AnswerTooLarge) as exc:
            raise _Upstream(f"prefill server ({url}): {why(exc)}") from exc
        if clock.error is not None:
            message = f"prefill server: an error event in its stream: {clock.error[:300]}"
            body_out = json.dumps(_error(message, 502, "upstream_error")).encode()
            return _Answer(502, "application/json", body_out), clock.timings
        return _Answer(200, "application/json", b"{}"), clock.timings

    def _fail(self, record: Handoff, answer: _Answer, step: str) -> web.Response:
        """Pass a server's error on with its status and body."""
        record.status = answer.status
        record.error = f"{step}: HTTP {answer.status}"
        return answer.response()

    def _remove_files(self, pattern: str) -> None:
        for path in self.slot_dir.glob(pattern):
            with contextlib.suppress(OSError):
                path.unlink()

    # -- health and metrics ----------------------------------------------------------------------
    async def _get_text(self, instance: str, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            answer = await self._call(instance, "GET", path, None, {}, timeout=timeout)
        except _Upstream as exc:  # reported, never raised
            return 0, str(exc)
        return answer.status, answer.body.decode("utf-8", "replace")

    async def _health(self) -> tuple[int, dict[str, Any]]:
        answers = await asyncio.gather(*(self._get_text(i, "/health", 2.0) for i in INSTANCES))
        upstreams = {
            i: ("ok" if status == 200 else (f"HTTP {status}" if status else text))
            for i, (status, text) in zip(INSTANCES, answers, strict=True)
        }
        ok = all(v == "ok" for v in upstreams.values())
        return (200 if ok else 503), {"status": "ok" if ok else "degraded", "upstreams": upstreams}

    async def _metrics(self) -> str:
        answers = await asyncio.gather(*(self._get_text(i, "/metrics") for i in INSTANCES))
        st = self.stats
        lines: list[str] = []

        def family(name: str, kind: str, help_text: str, samples: Sequence[tuple[str, float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{sample} {_num(value)}" for sample, value in samples)

        def summary(name: str, help_text: str, values: dict[str, _Summary]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} summary")
            for labels, s in values.items():
                lines.append(f"{name}_sum{labels} {_num(s.total)}")
                lines.append(f"{name}_count{labels} {s.count}")

        for name, kind, help_text, counts in (
            (
                "kvswitch_lab:requests_total",
                "counter",
                "Completion requests the lab router received, by mode.",
                st.requests,
            ),
            (
                "kvswitch_lab:request_errors_total",
                "counter",
                "Requests that did not end with HTTP 200, by mode.",
                st.errors,
            ),
            (
                "kvswitch_lab:requests_cancelled_total",
                "counter",
                "Requests whose client went away before the end, by mode.",
                st.cancelled,
            ),
            (
                "kvswitch_lab:requests_in_flight",
                "gauge",
                "Requests being served now, by mode.",
                st.in_flight,
            ),
        ):
            family(name, kind, help_text, [(f'{name}{{mode="{m}"}}', counts[m]) for m in MODES])
        for name, help_text, value in (
            (
                "kvswitch_lab:kv_handoffs_total",
                "KV caches handed from the prefill server to the decode server (slot save + restore).",
                st.handoffs,
            ),
            (
                "kvswitch_lab:kv_handoff_bytes_total",
                "Bytes of slot files handed over.",
                st.handoff_bytes,
            ),
            (
                "kvswitch_lab:kv_handoff_tokens_total",
                "Prompt tokens restored on the decode server.",
                st.handoff_tokens,
            ),
        ):
            family(name, "counter", help_text, [(name, value)])
        summary(
            "kvswitch_lab:ttft_seconds",
            "Router-side time to first token, request in to first token out.",
            {f'{{mode="{m}"}}': st.ttft[m] for m in MODES},
        )
        for name, help_text, split_step in (
            (
                "kvswitch_lab:prefill_seconds",
                "Split: the prefill request on the prefill server.",
                st.prefill,
            ),
            (
                "kvswitch_lab:slot_save_seconds",
                "Split: POST /slots/{id}?action=save on the prefill server.",
                st.save,
            ),
            (
                "kvswitch_lab:slot_restore_seconds",
                "Split: POST /slots/{id}?action=restore on the decode server.",
                st.restore,
            ),
            (
                "kvswitch_lab:decode_ttft_seconds",
                "Split: the decode request (KV restored) to its first token.",
                st.decode_ttft,
            ),
        ):
            summary(name, help_text, {"": split_step})
        family(
            "kvswitch_lab:upstream_up",
            "gauge",
            "Whether each server's /metrics answered.",
            [
                (f'kvswitch_lab:upstream_up{{instance="{i}"}}', 1 if status == 200 else 0)
                for i, (status, _) in zip(INSTANCES, answers, strict=True)
            ],
        )
        lines += _relabel([(i, text) for i, (status, text) in zip(INSTANCES, answers, strict=True) if status == 200])
        return "\n".join(lines) + "\n"


def _origin(name: str, url: str) -> URL:
    """An upstream's ``http://host:port``, checked once at start."""
    parsed = plain_http_origin(url)
    if parsed is None:
        raise RouterError(f"the {name} server must be a plain http://host:port URL, not {url!r}")
    return parsed


def _forward_headers(headers: Any) -> dict[str, str]:
    """A client's headers as sent on to a server: hop-by-hop ones (and those ``Connection``
    names) and ``X-Cache-Mode`` dropped, no compression asked for."""
    out = {k: v for k, v in forwarded_headers(headers).items() if not k.lower().startswith("x-cache-mode")}
    out["Accept-Encoding"] = "identity"
    return out


_SETTLE = 60.0
"""Seconds a slot save or restore is still waited for after its client went away."""


async def _settled(call: Coroutine[Any, Any, _T]) -> _T:
    """Await ``call``; if the caller is cancelled meanwhile, let ``call`` finish first (up to
    :data:`_SETTLE` s), then pass the cancellation on. For upstream steps that cannot be
    stopped once sent (a slot save writes its file whatever happens to the connection)."""
    task = asyncio.ensure_future(call)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, _SETTLE)
        raise


def _error(message: str, status: int, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "type": kind}}


def _num(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def _relabel(texts: Sequence[tuple[str, str]]) -> list[str]:
    """Several servers' Prometheus text as one: each sample gets ``instance="<name>"``, and
    each family's ``# HELP``/``# TYPE`` appears once (a parser refuses repeats)."""
    families: dict[str, dict[str, Any]] = {}
    order: list[str] = []

    def fam(name: str) -> dict[str, Any]:
        if name not in families:
            families[name] = {"help": None, "type": None, "samples": []}
            order.append(name)
        return families[name]

    for instance, text in texts:
        current: str | None = None
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    current = parts[2]
                    entry = fam(current)
                    key = parts[1].lower()
                    if entry[key] is None:
                        entry[key] = line
                continue
            name_end = min((i for i in (line.find("{"), line.find(" ")) if i >= 0), default=len(line))
            name = line[:name_end]
            label = f'instance="{instance}"'
            if line[name_end : name_end + 1] == "{":
                inner = line[name_end + 1 :]
                sample = f"{name}{{{label}{',' if not inner.startswith('}') else ''}{inner}"
            else:
                sample = f"{name}{{{label}}}{line[name_end:]}"
            owner = current if current is not None and name.startswith(current) else name
            fam(owner)["samples"].append(sample)
    out: list[str] = []
    for name in order:
        entry = families[name]
        out += [x for x in (entry["help"], entry["type"]) if x]
        out += entry["samples"]
    return out


# -- the process ---------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m kvswitch.lab.router",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080, help="0: any free port (see the LISTENING line)")
    ap.add_argument("--merged", required=True, help="the merged server, http://host:port")
    ap.add_argument("--prefill", required=True, help="the prefill server, http://host:port")
    ap.add_argument("--decode", required=True, help="the decode server, http://host:port")
    ap.add_argument("--slot-dir", required=True, help="the --slot-save-path both split servers share")
    ap.add_argument("--prefill-slots", type=int, default=None, help="default: the server's /slots")
    ap.add_argument("--decode-slots", type=int, default=None, help="default: the server's /slots")
    ap.add_argument(
        "--head-timeout",
        type=float,
        default=HEAD_TIMEOUT,
        help=f"seconds a client may take to send a request head ({HEAD_TIMEOUT:g})",
    )
    ap.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help=f"client connections open at once; more get a 503 ({MAX_CONNECTIONS})",
    )
    return ap


async def _serve(args: argparse.Namespace) -> None:
    router = Router(
        args.merged,
        args.prefill,
        args.decode,
        args.slot_dir,
        host=args.host,
        port=args.port,
        prefill_slots=args.prefill_slots,
        decode_slots=args.decode_slots,
        head_timeout=args.head_timeout,
        max_connections=args.max_connections,
    )
    await serve_until_signal(router)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    asyncio.run(_serve(_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
