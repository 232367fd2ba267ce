"""The gateway: one local address for pinned clients, merged or split chosen per request.

An HTTP/1.1 server (aiohttp's server and client, llhttp parsing in strict mode) that passes
``POST /v1/chat/completions``, ``/v1/completions``, ``/v1/responses`` and ``/v1/messages``
through to the profile's merged or split upstream, as they are, and serves ``GET /v1/models``,
``/health`` and ``/metrics``. The mode of a request is, in this order:

* its path prefix, ``/merged/v1/…`` or ``/split/v1/…``;
* its ``X-Cache-Mode: merged|split`` header (another value is a 400);
* the gateway's current mode, which ``kvswitch switch`` changes at once for new requests.

Every answer says what it got: ``X-KVSwitch-Mode: split; reason=path|header|default``. The
header never goes upstream, nor does the client's own ``Authorization`` or ``x-api-key``: the
local token is checked (constant time) on every route but ``/health``, then the profile's key
is sent in the client's style. Streams pass through as they are read, parsed aside only to time
them (:class:`kvswitch.first_token.StreamClock`); an upstream that breaks a begun stream gets one
error event in the API's own form, then the close. A client that goes away cancels its upstream
request at once, whatever phase it is in.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import logging
import os
import signal
import sys
import time
from array import array
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextvars import ContextVar
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web
from yarl import URL

from kvswitch.errors import KvswitchError
from kvswitch.first_token import StreamClock
from kvswitch.gateway.apis import Api, api_of, error_body, error_event, has_error_shape
from kvswitch.gateway.auto import AutoDecider, Decision
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.metrics import GatewayMetrics
from kvswitch.gateway.settings import GatewaySettings
from kvswitch.gateway.translating import (
    LACKING_STATUS,
    TRANSLATABLE,
    TRANSLATED_HEADER,
    Translation,
    upstream_message,
)
from kvswitch.gateway.translating import start as start_translation
from kvswitch.http_serving import (
    HOP_BY_HOP,
    QuietLogger,
    cut,
    first_line,
    forwarded_headers,
    json_response,
    read_capped,
    shown,
    why,
)
from kvswitch.literals import CacheMode

if TYPE_CHECKING:
    from kvswitch.redact import Redactor

__all__ = ["LISTENING", "MODE_HEADER", "REPLY_HEADER", "Gateway", "main", "run_loop"]

LISTENING = "LISTENING"
MODE_HEADER = "X-Cache-Mode"
REPLY_HEADER = "X-KVSwitch-Mode"
MODES: tuple[CacheMode, ...] = ("merged", "split")
ROUTES = ("merged", "split", "auto")
"""What a request may ask for: a mode, or ``auto`` (the gateway decides per request)."""
HEAD_TIMEOUT = 10.0
"""Seconds a connection may take to send a whole request head."""
BODY_TIMEOUT = 60.0
"""Seconds a request body may take to arrive."""
_MAX_LINE = 8190
_MAX_HEADERS = 100
_MAX_ANSWER = 64 * 1024 * 1024
_SMALL_BUFFER = 16 * 1024
_DECISION: ContextVar[Decision | None] = ContextVar("kvswitch_gateway_decision", default=None)
"""The ``auto`` decision of the request a task serves (its answer's usage goes back to it)."""
SAMPLES_KEPT = 4096
"""How many answers' timings ``GET /samples`` keeps."""
SAMPLE_GAPS = 128
"""The most gaps between tokens one sample keeps (evenly spaced over a longer stream): with
``SAMPLES_KEPT``, at most about 5 MB."""
"""Bytes queued towards a client below which a write is made without a timer: aiohttp waits
for the reader only past 64 KiB."""
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_HOP = HOP_BY_HOP | {"authorization", "x-api-key", "cookie", MODE_HEADER.lower()}
"""Client headers never sent upstream: its own credentials and mode go no further."""
_log = logging.getLogger("kvswitch.gateway")


class _Answer(KvswitchError):
    """A request the gateway answers itself, in the API's own error shape."""

    def __init__(
        self, status: int, message: str, *, close: bool = False, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.close, self.headers = status, close, headers or {}


class _Scrubber:
    """Masks the upstream key in bytes passing by, holding back only a tail that could be the
    start of it (a key split across two reads is still caught)."""

    __slots__ = ("_held", "_key", "_mask")

    def __init__(self, key: str | None) -> None:
        from kvswitch.redact import mask

        self._key = key.encode() if key else b""
        self._mask = mask(key).encode() if key else b""
        self._held = b""

    def __call__(self, chunk: bytes) -> bytes:
        key = self._key
        if not key:
            return chunk
        data = self._held + chunk if self._held else chunk
        if key in data:
            data = data.replace(key, self._mask)
        keep = 0
        start = max(0, len(data) - len(key) + 1)
        i = data.find(key[:1], start)
        while i >= 0:
            if key.startswith(data[i:]):
                keep = len(data) - i
                break
            i = data.find(key[:1], i + 1)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep] if keep else data

    def rest(self) -> bytes:
        held, self._held = self._held, b""
        return held


class _IdleWatch:
    """One timer per stream in place of one per read: cancels the streaming task once a read
    has waited ``timeout`` seconds (``fired`` then says why). ``since`` is when the read now
    waiting began, ``None`` between reads (a write has its own timeout)."""

    __slots__ = ("_handle", "_loop", "_task", "_timeout", "fired", "since")

    def __init__(self, timeout: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._timeout = timeout
        self.fired = False
        self.since: float | None = None
        self._handle = self._loop.call_later(timeout, self._check)

    def _check(self) -> None:
        since = self.since
        left = self._timeout if since is None else since + self._timeout - time.perf_counter()
        if left > 0:
            self._handle = self._loop.call_later(left, self._check)
        elif self._task is not None:
            self.fired = True
            self._task.cancel()

    def timed_out(self) -> bool:
        """Whether a cancellation is this watch's own; if so it is taken back."""
        if not self.fired or self._task is None:
            return False
        self.fired = False
        return self._task.uncancel() == 0

    def stop(self) -> None:
        self._handle.cancel()


class Gateway:
    """``await start()``, then ``url``; ``set_mode``; ``await close()``."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self.mode: CacheMode = settings.mode
        self.port = settings.port
        self.metrics = GatewayMetrics()
        self.metrics.set_mode(self.mode)
        self.auto = AutoDecider(settings.auto)
        self.stopping = asyncio.Event()
        self.started = time.time()
        self.in_flight = 0
        self.served = dict.fromkeys(MODES, 0)
        self._token = settings.token.encode()
        self._redact = _redactor(settings)
        self._listener: asyncio.base_events.Server | None = None
        self._web: web.Server | None = None
        self._session: aiohttp.ClientSession | None = None
        self._closing_origins: set[tuple[str | None, int | None]] = set()
        self._origin_options: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
        """Upstreams seen closing a kept-alive connection (llama.cpp, after each stream)."""
        self._requests: set[asyncio.Task[Any]] = set()  # the tasks of in-flight requests
        self._cutting = False  # the drain is over: in-flight requests are being ended
        self._samples: deque[dict[str, Any]] = deque(maxlen=SAMPLES_KEPT)
        """The latest answers' timings, served at ``GET /samples`` (what ``probe --passive`` reads)."""
        self._seq = 0
        self._lacking: set[tuple[str, Api]] = set()
        """(upstream API base, API) pairs seen answering that they have no such route."""
        self._noted: set[tuple[Api, tuple[str, ...]]] = set()  # translation notes logged once

    # -- life ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host = self.settings.listen
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    @property
    def loopback(self) -> bool:
        return self.settings.listen in _LOOPBACK_HOSTS or self.settings.listen.startswith("127.")

    async def start(self) -> None:
        s = self.settings
        reuse = aiohttp.TraceConfig()
        reuse.on_connection_reuseconn.append(_note_reuse)
        self._session = aiohttp.ClientSession(
            # upstream connections are kept alive and reused (a pool per upstream)
            connector=aiohttp.TCPConnector(
                limit=0, limit_per_host=s.max_in_flight, keepalive_timeout=30, use_dns_cache=False
            ),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10.0),
            auto_decompress=False,
            trust_env=False,
            skip_auto_headers=("User-Agent",),
            cookie_jar=aiohttp.DummyCookieJar(),
            trace_configs=[reuse],
        )
        self._web = web.Server(
            self._handle,
            access_log=None,
            logger=QuietLogger(_log, {}),
            keepalive_timeout=HEAD_TIMEOUT,
            max_line_size=_MAX_LINE,
            max_field_size=_MAX_LINE,
            max_headers=_MAX_HEADERS,
            lingering_time=1.0,
            # a client that goes away cancels its handler: the upstream request is closed at
            # once in any phase (waiting for a connection, prefill, mid-stream)
            handler_cancellation=True,
        )
        loop = asyncio.get_running_loop()
        try:
            self._listener = await loop.create_server(self._web, s.listen, s.port, backlog=512)
        except OSError as exc:
            await self._session.close()
            raise GatewayError(f"cannot listen on {s.listen}:{s.port}: {exc.strerror or exc}") from exc
        self.port = self._listener.sockets[0].getsockname()[1]
        for mode in MODES:
            self.metrics.upstream_up.labels(mode).set(1)

    async def close(self, drain: float | None = None) -> None:
        """Stop taking connections; in-flight requests get ``drain`` seconds to finish, then a
        stream ends with an error event and a request still waiting for its answer gets a 503
        (never a silent cut)."""
        if self._listener is not None:
            self._listener.close()
        wait = self.settings.drain_timeout if drain is None else drain
        if self._requests:
            _, late = await asyncio.wait(set(self._requests), timeout=max(wait, 0.001))
            if late:
                self._cutting = True
                for task in late:
                    task.cancel()
                await asyncio.wait(late, timeout=5.0)
        if self._web is not None:
            await self._web.shutdown(1.0)  # idle connections; answers being finished
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()
        if self._session is not None:
            await self._session.close()

    def set_mode(self, mode: CacheMode) -> CacheMode:
        """New requests without a prefix or header get ``mode``; in-flight ones keep theirs."""
        if mode not in MODES:
            raise GatewayError(f"a mode is merged or split, not {mode!r}")
        old, self.mode = self.mode, mode
        self.metrics.set_mode(mode)
        self.auto.reset()  # a switch lets every auto-routed conversation decide again
        return old

    def reload(self, settings: GatewaySettings) -> None:
        """New upstreams, keys and bounds for new requests (the listening address stays)."""
        self.settings = settings
        self._token = settings.token.encode()
        self._redact = _redactor(settings)
        self.auto.configure(settings.auto)

    def request_stop(self) -> None:
        self.stopping.set()

    def status(self) -> dict[str, Any]:
        s = self.settings
        return {
            "url": self.url,
            "pid": os.getpid(),
            "mode": self.mode,
            "route": s.default_route,
            "profile": s.profile,
            "upstreams": {"merged": s.merged, "split": s.split},
            "in_flight": self.in_flight,
            "requests": dict(self.served),
            "started": self.started,
        }

    # -- one request --------------------------------------------------------------------------------
    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        t0 = time.perf_counter()
        path = request.raw_path.partition("?")[0]
        try:
            return await self._route(request, path, t0)
        except _Answer as exc:
            return self._error(api_of(_strip_mode(path)[1]), exc.status, str(exc), close=exc.close, headers=exc.headers)

    def _error(
        self, api: Api, status: int, message: str, *, close: bool = False, headers: dict[str, str] | None = None
    ) -> web.Response:
        response = web.Response(
            status=status,
            body=error_body(api, status, message),
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        if close:
            response.force_close()
        return response

    async def _route(self, request: web.BaseRequest, path: str, t0: float) -> web.StreamResponse:
        if request.version.major != 1:
            raise _Answer(505, "the gateway speaks HTTP/1.1", close=True)
        if not path.startswith("/") or path.startswith("//"):
            raise _Answer(
                421 if "://" in request.raw_path else 400,
                "the request target must be a path such as /v1/chat/completions; "
                "the gateway forwards only to its own upstreams",
                close=True,
            )
        self._check_host(request)
        if request.method == "GET" and path == "/health":
            return json_response(200, {"status": "stopping" if self.stopping.is_set() else "ok"})
        self._check_token(request)
        mode_from_path, rest = _strip_mode(path)
        if request.method == "GET":
            if rest == "/metrics":
                return web.Response(
                    body=self.metrics.text(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
                )
            if rest == "/samples":
                return json_response(200, self.samples(_since(request.query.get("since"))))
            if rest == "/v1/models":
                mode, reason = self._mode_of(request, mode_from_path)
                if mode == "auto":  # a list of models is no request to decide on
                    mode = self.mode
                return await self._forward(request, "GET", rest, mode, reason, "other", t0)
            raise _Answer(404, f"no route for GET {shown(rest)}")
        api = api_of(rest)
        if request.method != "POST":
            raise _Answer(
                405,
                f"no route for {shown(request.method)} {shown(rest)}",
                headers={"Allow": "GET, POST"},
                close=request.method == "CONNECT",
            )
        if api == "other":
            raise _Answer(
                404,
                f"no route for POST {shown(rest)}; the gateway serves "
                "/v1/chat/completions, /v1/completions, /v1/responses and /v1/messages",
            )
        mode, reason = self._mode_of(request, mode_from_path)
        if self.in_flight >= self.settings.max_in_flight:
            raise _Answer(
                429,
                f"the gateway is serving {self.in_flight} requests, its limit; try again shortly",
                headers={"Retry-After": "1"},
            )
        return await self._forward(request, "POST", rest, mode, reason, api, t0)

    def samples(self, since: int = 0) -> dict[str, Any]:
        """The kept samples after sequence number ``since``, oldest first."""
        kept = [{**x, "itl": list(x["itl"])} for x in self._samples if x["seq"] > since] if since < self._seq else []
        return {"seq": self._seq, "started": self.started, "samples": kept}

    def _sample(
        self,
        mode: CacheMode,
        reason: str,
        api: Api,
        clock: StreamClock | None,
        outcome: str,
        status: int,
        *,
        stream: bool = True,
    ) -> None:
        decision = _DECISION.get()
        if decision is not None and clock is not None and clock.usage:
            self.auto.note_usage(decision, clock.usage)
        self._seq += 1
        gaps = clock.itl if clock else []
        if len(gaps) > SAMPLE_GAPS:
            step = len(gaps) / SAMPLE_GAPS
            gaps = [gaps[int(i * step)] for i in range(SAMPLE_GAPS)]
        self._samples.append(
            {
                "seq": self._seq,
                "time": time.time(),
                "mode": mode,
                "route": reason,
                "api": api,
                "ttft": clock.ttft if clock else None,
                "itl": array("d", gaps),
                "itl_count": len(clock.itl) if clock else 0,
                "tokens": clock.tokens if clock else 0,
                "outcome": outcome,
                "status": status,
                "stream": stream,
            }
        )

    def _check_host(self, request: web.BaseRequest) -> None:
        """A browser page on another site may reach a loopback port by a name it controls
        (DNS rebinding): on loopback, Host must name a loopback address."""
        if not self.loopback:
            return
        host = request.headers.get("Host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name.lower() not in _LOOPBACK_HOSTS and not _loopback_address(name):
            raise _Answer(421, f"Host {shown(host)} is not this gateway's address (127.0.0.1)")

    def _check_token(self, request: web.BaseRequest) -> None:
        headers = request.headers
        given = headers.get("x-api-key", "")
        auth = headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self._token):
            raise _Answer(
                401,
                "missing or wrong local token: send the gateway's token as "
                "Authorization: Bearer (kvswitch gateway pin writes it for your clients)",
            )

    def _mode_of(self, request: web.BaseRequest, from_path: str | None) -> tuple[str, str]:
        """The route asked for (a mode, or ``auto``) and how it was asked."""
        if from_path is not None:
            return from_path, "path"
        asked = request.headers.get(MODE_HEADER)
        if asked is not None:
            value = asked.strip().lower()
            if value not in ROUTES:
                raise _Answer(400, f"{MODE_HEADER} must be merged, split or auto, not {shown(asked)}")
            return value, "header"
        if self.settings.default_route == "auto":
            return "auto", "default"
        return self.mode, "default"

    async def _body(self, request: web.BaseRequest) -> bytes:
        limit = self.settings.max_body
        if request.content_length is not None and request.content_length > limit:
            raise _Answer(413, f"the request body is larger than {limit} bytes", close=True)
        if request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = bytearray()
        try:
            async with asyncio.timeout(BODY_TIMEOUT):
                async for chunk in request.content.iter_any():
                    body += chunk
                    if len(body) > limit:
                        raise _Answer(413, f"the request body is larger than {limit} bytes", close=True)
        except TimeoutError:
            raise _Answer(408, f"the request body did not arrive within {BODY_TIMEOUT:g} s", close=True) from None
        except web.RequestPayloadError as exc:
            raise _Answer(400, f"malformed request body: {first_line(exc)}", close=True) from None
        return bytes(body)

    def _upstream_headers(self, request: web.BaseRequest) -> dict[str, str]:
        s = self.settings
        out = forwarded_headers(request.headers, _HOP)
        out.update(s.headers)
        out["Accept-Encoding"] = "identity"
        if s.upstream_key:
            if "x-api-key" in request.headers and "Authorization" not in request.headers:
                out["x-api-key"] = s.upstream_key  # an Anthropic-style client: its style upstream
            else:
                out["Authorization"] = f"Bearer {s.upstream_key}"
        return out

    async def _forward(
        self, request: web.BaseRequest, method: str, path: str, asked: str, reason: str, api: Api, t0: float
    ) -> web.StreamResponse:
        s = self.settings
        m = self.metrics
        headers = self._upstream_headers(request)
        # counted before the body is read: requests whose bodies are still arriving hold their
        # place under max_in_flight (else any number pass the check together)
        self.in_flight += 1
        task = asyncio.current_task()
        if task is not None:
            self._requests.add(task)
        code, streaming, counted = 0, False, False
        mode: CacheMode = "merged"
        why = reason
        try:
            body = await self._body(request) if method == "POST" else None
            if asked == "auto":
                decision = self.auto.decide(api, body or b"", self.in_flight, record=not path.endswith("/count_tokens"))
                _DECISION.set(decision)
                mode, why, mode_value = decision.mode, str(decision.reason), decision.mode_header()
            else:
                mode = "split" if asked == "split" else "merged"
                why, mode_value = reason, f"{mode}; reason={reason}"
            self.served[mode] += 1
            m.in_flight.labels(mode).inc()
            counted = True
            m.decisions.labels(asked, mode, why).inc()
            route = "auto" if asked == "auto" else reason
            url = URL(s.base(mode).rstrip("/") + path.removeprefix("/v1"), encoded=False)
            assert self._session is not None
            translation = None
            if body is not None and api in TRANSLATABLE and self._translates(mode, api):
                translation = self._translation(api, path, body, mode)
                if translation.local is not None:
                    code = 200
                    return self._local_answer(translation, mode_value)
                url, body = self._chat_url(mode), translation.body
            m.overhead.labels(mode, api).observe(time.perf_counter() - t0)
            resp = await self._reach(method, url, body, headers, mode, api)
            if (
                translation is None
                and body is not None
                and api in TRANSLATABLE
                and s.translate == "auto"
                and resp.status in LACKING_STATUS
            ):
                # the upstream lacks this API (it generated nothing): from now on, translate
                resp.release()
                self._lacking.add((s.base(mode), api))
                translation = self._translation(api, path, body, mode)
                if translation.local is not None:
                    code = 200
                    return self._local_answer(translation, mode_value)
                resp = await self._reach(method, self._chat_url(mode), translation.body, headers, mode, api)
            try:
                code = resp.status
                content_type = resp.headers.get("Content-Type", "application/json")
                if resp.status == 200 and content_type.startswith("text/event-stream"):
                    streaming = True
                    if translation is not None:
                        return await self._stream_translated(request, resp, translation, mode, route, mode_value, t0)
                    return await self._stream(request, resp, content_type, mode, route, api, mode_value, t0)
                if translation is not None:
                    return await self._whole_translated(resp, translation, mode, route, mode_value, t0)
                return await self._whole(resp, content_type, mode, route, api, mode_value, t0, path)
            finally:
                # back to the pool when the answer was read to its end; closed otherwise
                resp.release()
        except _Answer as exc:
            code = exc.status
            response = self._error(api, exc.status, str(exc), close=exc.close, headers=exc.headers)
            response.headers[REPLY_HEADER] = f"{mode}; reason={reason}" if not counted else mode_value
            return response
        except asyncio.CancelledError:
            if not streaming and self._drain_over():
                code = 503
                m.outcomes.labels(mode, api, "timeout").inc()
                response = self._error(api, 503, "the gateway is stopping; try again shortly", close=True)
                response.headers[REPLY_HEADER] = f"{mode}; reason={reason}" if not counted else mode_value
                return response
            code = 499  # the client went away: the upstream request is closed with this task
            m.outcomes.labels(mode, api, "client_disconnect").inc()
            raise
        finally:
            if task is not None:
                self._requests.discard(task)
            self.in_flight -= 1
            if counted:
                m.in_flight.labels(mode).dec()
            m.requests.labels(mode, "auto" if asked == "auto" else reason, api, str(code)).inc()

    async def _reach(
        self, method: str, url: URL, body: bytes | None, headers: dict[str, str], mode: CacheMode, api: Api
    ) -> aiohttp.ClientResponse:
        """The upstream's response head, or the error the client gets instead."""
        s, m = self.settings, self.metrics
        try:
            resp = await self._open(method, url, body, headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            # the first-byte timeout is a 504; a connect timeout is an unreachable upstream
            if isinstance(exc, TimeoutError) and not isinstance(exc, aiohttp.ConnectionTimeoutError):
                m.upstream_up.labels(mode).set(1)
                m.outcomes.labels(mode, api, "timeout").inc()
                raise _Answer(504, f"the {mode} upstream sent nothing within {s.first_byte_timeout:g} s") from None
            m.upstream_up.labels(mode).set(0)
            m.outcomes.labels(mode, api, "upstream_error").inc()
            raise _Answer(502, f"the {mode} upstream ({_origin(url)}) cannot be reached: {why(exc)}") from None
        m.upstream_up.labels(mode).set(1)
        return resp

    # -- translation -------------------------------------------------------------------------------
    def _translates(self, mode: CacheMode, api: Api) -> bool:
        how = self.settings.translate
        return how == "always" or (how == "auto" and (self.settings.base(mode), api) in self._lacking)

    def _chat_url(self, mode: CacheMode) -> URL:
        return URL(self.settings.base(mode).rstrip("/") + "/chat/completions", encoded=False)

    def _translation(self, api: Api, path: str, body: bytes, mode: CacheMode) -> Translation:
        from kvswitch.gateway.translate import UntranslatableError

        try:
            translation = start_translation(api, path, body)
        except (ValueError, UntranslatableError) as exc:
            raise _Answer(
                400, f"{exc}; the {mode} upstream serves Chat Completions only, so this request must be translated"
            ) from None
        if translation.notes:
            seen = (api, tuple(translation.notes))
            if seen not in self._noted and len(self._noted) < 256:
                self._noted.add(seen)
                _log.warning(
                    "%s request translated to Chat Completions for the %s upstream; not carried: %s",
                    api,
                    mode,
                    "; ".join(translation.notes),
                )
        return translation

    def _local_answer(self, translation: Translation, mode_value: str) -> web.Response:
        return web.Response(
            body=json.dumps(translation.local).encode(),
            headers={
                "Content-Type": "application/json",
                REPLY_HEADER: mode_value,
                TRANSLATED_HEADER: translation.header(),
            },
        )

    async def _whole_translated(
        self, resp: aiohttp.ClientResponse, tr: Translation, mode: CacheMode, reason: str, mode_value: str, t0: float
    ) -> web.Response:
        try:
            async with asyncio.timeout(self.settings.idle_timeout):
                data = await read_capped(resp, _MAX_ANSWER)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise _Answer(502, f"the {mode} upstream's answer broke: {why(exc)}") from None
        redact = self._redact
        text = data.decode("utf-8", "replace")
        if redact and redact.holds(text):
            text = redact.text(text)
        headers = {"Content-Type": "application/json", REPLY_HEADER: mode_value, TRANSLATED_HEADER: tr.header()}
        if "Retry-After" in resp.headers:
            headers["Retry-After"] = resp.headers["Retry-After"]
        if resp.status != 200:
            message = upstream_message(text.encode())
            return web.Response(
                status=resp.status,
                headers=headers,
                body=error_body(
                    tr.api,
                    resp.status,
                    f"the {mode} upstream answered HTTP {resp.status}" + (f": {message}" if message else ""),
                ),
            )
        try:
            chat = json.loads(text)
            if not isinstance(chat, dict):
                raise ValueError("not a JSON object")
            answer = tr.translator.response(chat, tr.request)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _Answer(
                502, f"the {mode} upstream's Chat Completions answer cannot be read: {first_line(exc)}"
            ) from None
        clock = StreamClock(t0)
        clock.whole(data)
        if clock.ttft is not None:
            self.metrics.ttft.labels(mode, tr.api).observe(clock.ttft)
        self.metrics.e2e.labels(mode, tr.api).observe(time.perf_counter() - t0)
        self._sample(mode, reason, tr.api, clock, "ok" if clock.error is None else "inband_error", 200, stream=False)
        return web.Response(body=json.dumps(answer).encode(), headers=headers)

    async def _stream_translated(
        self,
        request: web.BaseRequest,
        resp: aiohttp.ClientResponse,
        tr: Translation,
        mode: CacheMode,
        reason: str,
        mode_value: str,
        t0: float,
    ) -> web.StreamResponse:
        """A Chat Completions stream passed on in the client's API, event by event."""
        from kvswitch.probe.sse import SSEError, SSEParser

        s, m, api = self.settings, self.metrics, tr.api
        out = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                REPLY_HEADER: mode_value,
                TRANSLATED_HEADER: tr.header(),
            },
        )
        clock = StreamClock(t0, max_line=s.max_sse_line)
        parser = SSEParser(max_line=s.max_sse_line)
        stream = tr.translator.stream(tr.request)
        scrub = _Scrubber(s.upstream_key)
        await out.prepare(request)
        outcome, cause = "ok", ""
        read = resp.content.readany
        idle = _IdleWatch(s.idle_timeout)
        try:
            while True:
                chunk, outcome, cause = await self._read(read, idle, mode)
                if not chunk:
                    break
                now = time.perf_counter()
                try:
                    events = parser.feed(chunk)
                except SSEError as exc:
                    outcome, cause = "upstream_error", f"the {mode} upstream's stream broke: {exc}"
                    break
                data = scrub(b"".join([stream.feed(ev.data) for ev in events]))
                if data and not await self._send(request, out, data):
                    m.outcomes.labels(mode, api, "timeout").inc()
                    self._sample(mode, reason, api, clock, "timeout", 200)
                    return out
                clock.feed(chunk, now)
            clock.close()
            if outcome == "ok" and clock.error is not None:
                outcome = "inband_error"
            end = stream.finish() if outcome in ("ok", "inband_error") else stream.fail(cause)
            await out.write(scrub(end) + scrub.rest())
            if outcome not in ("ok", "inband_error"):
                out.force_close()
            await out.write_eof()
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            outcome = "client_disconnect"
        finally:
            idle.stop()
        self._ended(mode, reason, api, clock, outcome, t0)
        return out

    async def _read(
        self, read: Callable[[], Awaitable[bytes]], idle: _IdleWatch, mode: CacheMode
    ) -> tuple[bytes, str, str]:
        """The upstream's next bytes (``b""`` at its end or when it broke), with the stream's
        outcome and cause so far (``ok``, or why it ended)."""
        idle.since = time.perf_counter()
        try:
            chunk = await read()
        except (aiohttp.ClientError, ConnectionError) as exc:
            return b"", "upstream_error", f"the {mode} upstream broke the stream: {why(exc)}"
        except asyncio.CancelledError:
            if idle.timed_out():
                return b"", "timeout", f"the {mode} upstream sent nothing for {self.settings.idle_timeout:g} s"
            if not self._drain_over():
                raise
            return b"", "timeout", "the gateway is stopping; the stream outlasted its drain"
        idle.since = None
        return chunk, "ok", ""

    def _ended(self, mode: CacheMode, reason: str, api: Api, clock: StreamClock, outcome: str, t0: float) -> None:
        """A stream's end in the metrics and the samples."""
        m = self.metrics
        m.outcomes.labels(mode, api, outcome).inc()
        self._sample(mode, reason, api, clock, outcome, 200)
        if clock.ttft is not None:
            m.ttft.labels(mode, api).observe(clock.ttft)
            itl = m.itl.labels(mode, api)
            for gap in clock.itl:
                itl.observe(gap)
        if outcome == "ok":
            m.e2e.labels(mode, api).observe(time.perf_counter() - t0)

    async def _send(self, request: web.BaseRequest, out: web.StreamResponse, data: bytes) -> bool:
        """Write ``data`` on; ``False`` when the reader took nothing for the idle timeout (it is
        let go)."""
        transport = request.transport
        if transport is not None and transport.get_write_buffer_size() < _SMALL_BUFFER:
            await out.write(data)  # nothing queued: this write cannot wait for long
            return True
        try:
            async with asyncio.timeout(self.settings.idle_timeout):
                await out.write(data)
        except TimeoutError:
            cut(request)
            return False
        return True

    def _drain_over(self) -> bool:
        """Whether this cancellation is the end of the drain, not the client going away; if
        so it is taken back, and the request ends in its own words."""
        task = asyncio.current_task()
        if not self._cutting or task is None:
            return False
        task.uncancel()
        return True

    async def _open(self, method: str, url: URL, body: bytes | None, headers: dict[str, str]) -> aiohttp.ClientResponse:
        """The upstream's response head, within the first-byte timeout. A kept-alive connection
        the upstream had just closed (llama.cpp closes one after each stream) is retried once
        on a new one: the upstream never saw the request. A new connection the upstream hung
        up on is not: it saw the request, and a second one would be a second generation."""
        assert self._session is not None
        origin = (url.host, url.port)
        if origin in self._closing_origins:
            headers = {**headers, "Connection": "close"}  # it closes them itself: a new one each time
        route = self._connection_options(url)
        async with asyncio.timeout(self.settings.first_byte_timeout):
            reused: list[bool] = []
            try:
                return await self._session.request(
                    method, url, data=body, headers=headers, trace_request_ctx=reused, **route
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                if not reused:
                    raise
                # a kept-alive connection it had closed: from now on, a new one per request
                self._closing_origins.add(origin)
                headers = {**headers, "Connection": "close"}
                return await self._session.request(method, url, data=body, headers=headers, **route)

    def _connection_options(self, url: URL) -> dict[str, Any]:
        """How requests reach an upstream origin, worked out once per origin: through the proxy
        HTTP(S)_PROXY / NO_PROXY name for it (never for a loopback host), and for https with the
        CA store probe and doctor trust (SSL_CERT_FILE, SSL_CERT_DIR, else the system's)."""
        key = (url.scheme, url.host, url.port)
        route = self._origin_options.get(key)
        if route is None:
            from kvswitch import network

            route = {}
            proxy = network.proxy_for(str(url))
            if proxy is not None:
                route["proxy"] = proxy.shown
                if proxy.authorization:
                    route["proxy_headers"] = {"Proxy-Authorization": proxy.authorization}
            if url.scheme == "https":
                route["ssl"] = network.ssl_context()
            self._origin_options[key] = route
        return route

    async def _whole(
        self,
        resp: aiohttp.ClientResponse,
        content_type: str,
        mode: CacheMode,
        reason: str,
        api: Api,
        mode_value: str,
        t0: float,
        path: str,
    ) -> web.Response:
        try:
            async with asyncio.timeout(self.settings.idle_timeout):
                data = await read_capped(resp, _MAX_ANSWER)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise _Answer(502, f"the {mode} upstream's answer broke: {why(exc)}") from None
        redact = self._redact
        if redact:
            text = data.decode("utf-8", "replace")
            if redact.holds(text):
                data = redact.text(text).encode()
        headers = {"Content-Type": content_type, REPLY_HEADER: mode_value}
        if resp.status >= 400 and api != "other" and not has_error_shape(api, data):
            # an upstream without this route, or an engine's own error page: the API's own shape
            what = (
                f"the {mode} upstream has no {path} route"
                if resp.status in (404, 405, 501)
                else f"the {mode} upstream answered HTTP {resp.status}"
            )
            text = data.decode("utf-8", "replace").strip()[:300]
            data = error_body(api, resp.status, what + (f": {text}" if text else ""))
            headers["Content-Type"] = "application/json"
        elif resp.status == 200:
            clock = StreamClock(t0)
            clock.whole(data)
            if clock.ttft is not None:
                self.metrics.ttft.labels(mode, api).observe(clock.ttft)
            self.metrics.e2e.labels(mode, api).observe(time.perf_counter() - t0)
            if api != "other":
                self._sample(
                    mode, reason, api, clock, "ok" if clock.error is None else "inband_error", 200, stream=False
                )
        if "Retry-After" in resp.headers:
            headers["Retry-After"] = resp.headers["Retry-After"]
        return web.Response(status=resp.status, body=data, headers=headers)

    async def _stream(
        self,
        request: web.BaseRequest,
        resp: aiohttp.ClientResponse,
        content_type: str,
        mode: CacheMode,
        reason: str,
        api: Api,
        mode_value: str,
        t0: float,
    ) -> web.StreamResponse:
        s, m = self.settings, self.metrics
        out = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": content_type,
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                REPLY_HEADER: mode_value,
            },
        )
        clock = StreamClock(t0, max_line=s.max_sse_line)
        scrub = _Scrubber(s.upstream_key)
        await out.prepare(request)
        outcome, cause = "ok", ""
        tail = b"\n\n"
        read = resp.content.readany
        idle = _IdleWatch(s.idle_timeout)
        try:
            while True:
                chunk, outcome, cause = await self._read(read, idle, mode)
                if not chunk:
                    break
                now = time.perf_counter()
                raw, chunk = chunk, scrub(chunk)
                if chunk:
                    tail = chunk[-2:] if len(chunk) >= 2 else tail[-1:] + chunk
                    if not await self._send(request, out, chunk):
                        m.outcomes.labels(mode, api, "timeout").inc()
                        self._sample(mode, reason, api, clock, "timeout", 200)
                        return out
                clock.feed(raw, now)  # timed as read, parsed after it is passed on
            rest = scrub.rest()
            if rest:
                await out.write(rest)
            clock.close()
            if outcome != "ok":
                await out.write(
                    (b"" if tail.endswith(b"\n\n") else b"\n\n")
                    + error_event(api, cause, "timeout" if outcome == "timeout" else "upstream_error")
                )
                out.force_close()
            elif clock.error is not None:
                outcome = "inband_error"
            await out.write_eof()
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            outcome = "client_disconnect"
        finally:
            idle.stop()
        self._ended(mode, reason, api, clock, outcome, t0)
        return out


async def _note_reuse(
    session: aiohttp.ClientSession, ctx: SimpleNamespace, params: aiohttp.TraceConnectionReuseconnParams
) -> None:
    """Marks a request sent on a pooled connection (its ``trace_request_ctx`` list)."""
    if isinstance(ctx.trace_request_ctx, list):
        ctx.trace_request_ctx.append(True)


def _since(value: str | None) -> int:
    """``?since=`` as a sequence number (absent or not a number: from the start)."""
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _loopback_address(name: str) -> bool:
    """Whether ``name`` is a loopback IP address (``127.evil.example`` is a name, not one)."""
    import ipaddress

    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


_MODE_PREFIXES = tuple((route, f"/{route}/") for route in ROUTES)


def _strip_mode(path: str) -> tuple[str | None, str]:
    for mode, prefix in _MODE_PREFIXES:
        if path.startswith(prefix):
            return mode, path[len(prefix) - 1 :]
    return None, path


def _redactor(settings: GatewaySettings) -> Redactor:
    """What masks the upstream key in a whole answer (made once per settings: its patterns
    cost more than a request)."""
    from kvswitch.redact import Redactor

    return Redactor([settings.upstream_key])


def _origin(url: URL) -> str:
    return f"{url.scheme}://{url.host}:{url.port}"


# -- a gateway without a config (benchmarks, tests) -------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m kvswitch.gateway.server",
        description="A gateway in front of two API bases, without kvswitch's config; the token "
        "comes from KVSWITCH_GATEWAY_TOKEN, an upstream key from KVSWITCH_UPSTREAM_KEY.",
    )
    ap.add_argument("--merged", required=True, help="the merged upstream's API base, http://host:port/v1")
    ap.add_argument("--split", required=True, help="the split upstream's API base")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", choices=MODES, default="merged")
    ap.add_argument("--max-in-flight", type=int, default=64)
    ap.add_argument(
        "--translate",
        choices=("auto", "always", "never"),
        default="auto",
        help="Messages and Responses requests over Chat Completions: where the upstream "
        "lacks them (auto), always, or never",
    )
    return ap


async def _serve(args: argparse.Namespace, token: str) -> None:
    gateway = Gateway(
        GatewaySettings(
            merged=args.merged,
            split=args.split,
            token=token,
            upstream_key=os.environ.get("KVSWITCH_UPSTREAM_KEY") or None,
            mode=args.mode,
            port=args.port,
            max_in_flight=args.max_in_flight,
            translate=args.translate,
        )
    )
    await gateway.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, gateway.request_stop)
    sys.stdout.write(f"{LISTENING} {gateway.url}\n")
    sys.stdout.flush()
    try:
        await gateway.stopping.wait()
    finally:
        await gateway.close()


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop where it is installed (its sockets cost a fraction of asyncio's
    own loop per read and write), else on asyncio's loop."""
    if os.environ.get("KVSWITCH_GATEWAY_LOOP", "uvloop") == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            uvloop.run(main)
            return
    asyncio.run(main)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    parser = _parser()
    args = parser.parse_args(argv)
    token = os.environ.get("KVSWITCH_GATEWAY_TOKEN")
    if not token:
        parser.error("set KVSWITCH_GATEWAY_TOKEN to the token clients must send")
    run_loop(_serve(args, token))


if __name__ == "__main__":
    main()
