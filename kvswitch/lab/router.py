"""The lab router: one OpenAI-compatible URL in front of the lab's three llama.cpp servers.

A learning and testing aid, not a production proxy. It is a small asyncio HTTP/1.1 server on
127.0.0.1 that routes ``POST …/chat/completions`` (and ``…/completions``) by mode:

* the path prefix ``/merged/v1/…`` or ``/split/v1/…``, else
* the ``X-Cache-Mode: merged|split`` header, else merged.

**merged** — proxied to the merged server (chunked prefill and continuous batching on one
instance); the response, SSE included, is passed through byte for byte.

**split** — the KV cache is handed over for every request, with llama.cpp's slot files:

1. the prefill server prefills the prompt: the same body with ``stream: false``,
   ``max_tokens: 1``, ``cache_prompt: true``, ``id_slot: s``;
2. ``POST /slots/{s}?action=save`` on the prefill server writes the slot to a file with a
   unique name in the shared ``--slot-save-path`` directory;
3. ``POST /slots/{d}?action=restore`` on the decode server reads it into slot ``d``;
4. the original request goes to the decode server with ``id_slot: d``, ``cache_prompt: true``;
   the prompt is already in its KV cache, so it evaluates about one token before decoding,
   and its (streamed) response is passed through;
5. the slot file is deleted.

A slot serves one request at a time (a queue of free slots per server). Errors from a server
are passed on with their status and body. ``GET /metrics`` serves the router's counters
(``kvswitch_lab:kv_handoffs_total`` moves only for split requests: that is how kvswitch's
probe tells the modes apart) and every server's own ``/metrics`` with an
``instance="merged|prefill|decode"`` label. ``GET /lab/handoffs`` lists the latest hand-offs
with their timings; ``GET /health``; ``GET /v1/models`` (the merged server's).

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
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["HANDOFF_PREFIX", "INSTANCES", "Router", "main"]

HANDOFF_PREFIX = "kvswitch-lab-"
"""Slot files the router writes are named ``kvswitch-lab-<hex>.bin``."""

INSTANCES = ("merged", "prefill", "decode")
MODES = ("merged", "split")
LISTENING = "LISTENING"
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
                  "content-length", "host", "accept-encoding"})
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
    ttft: dict[str, _Summary] = field(default_factory=lambda: {m: _Summary() for m in MODES})
    handoffs: int = 0
    handoff_bytes: int = 0
    handoff_tokens: int = 0
    prefill: _Summary = field(default_factory=_Summary)
    save: _Summary = field(default_factory=_Summary)
    restore: _Summary = field(default_factory=_Summary)
    decode_ttft: _Summary = field(default_factory=_Summary)
    recent: collections.deque[Handoff] = field(default_factory=lambda: collections.deque(maxlen=100))


class _StreamWatch:
    """Looks at an SSE (or JSON) response as it passes: when the first token-bearing event
    came, and the server's ``timings`` (``prompt_n``, ``cache_n``) when it sends them."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.first_token: float | None = None
        self.timings: dict[str, Any] | None = None
        self._buffer = b""

    def feed(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if line.startswith(b"data:"):
                self._event(line[5:].strip())

    def whole(self, body: bytes) -> None:
        """A non-streamed response: the body is one JSON object."""
        self._event(body)
        if self.first_token is None:
            self.first_token = time.perf_counter()

    def _event(self, payload: bytes) -> None:
        if not payload or payload == b"[DONE]":
            return
        try:
            event = json.loads(payload)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if isinstance(event.get("timings"), dict):
            self.timings = event["timings"]
        if self.first_token is None and _carries_token(event):
            self.first_token = time.perf_counter()

    @property
    def ttft(self) -> float | None:
        return self.first_token - self.t0 if self.first_token is not None else None


def _carries_token(event: dict[str, Any]) -> bool:
    for choice in event.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if any(isinstance(delta.get(k), str) and delta[k] for k in ("content", "reasoning", "reasoning_content")):
                return True
            if delta.get("tool_calls"):
                return True
        if isinstance(choice.get("text"), str) and choice["text"]:  # /v1/completions
            return True
    return False


class _Request:
    def __init__(self, method: str, target: str, version: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        path, _, query = target.partition("?")
        self.path = path
        self.query = query

    @property
    def keep_alive(self) -> bool:
        if self.version == "HTTP/1.0":  # no keep-alive for 1.0 clients: a stream ends with the connection
            return False
        return self.headers.get("connection", "").lower() != "close"


class Router:
    """The router; ``await start()``, then ``url``; ``await close()``."""

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
    ) -> None:
        self.upstreams = {"merged": merged.rstrip("/"), "prefill": prefill.rstrip("/"), "decode": decode.rstrip("/")}
        self.slot_dir = Path(slot_dir)
        self.host = host
        self.port = port
        self._slot_counts = {"prefill": prefill_slots, "decode": decode_slots}
        self._pools: dict[str, asyncio.Queue[int]] = {}
        self._pool_lock = asyncio.Lock()
        self.stats = _Stats()
        self._server: asyncio.base_events.Server | None = None
        self._client: Any = None
        self._timeout = upstream_timeout
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        import httpx

        # a new connection per upstream request: llama.cpp closes a connection right after a
        # streamed response although it advertises keep-alive, and a pooled one reused in that
        # instant fails
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self._timeout, connect=10.0), trust_env=False,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )
        self._server = await asyncio.start_server(self._connection, self.host, self.port, limit=_MAX_HEAD,
                                                  backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        if self._client is not None:
            await self._client.aclose()
        self._remove_files(HANDOFF_PREFIX + "*")

    # -- HTTP/1.1 ----------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    request = await self._read_request(reader, writer)
                except _BadRequest as exc:
                    await self._send_json(writer, exc.status, _error(str(exc), exc.status), keep_alive=False)
                    break
                if request is None:
                    break
                keep = await self._dispatch(request, writer) and request.keep_alive
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                raise _BadRequest(400, "incomplete request head") from None
            return None
        except asyncio.LimitOverrunError:
            raise _BadRequest(400, "request head too large") from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(400, f"not an HTTP/1.x request line: {lines[0][:80]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        if headers.get("expect", "").lower() == "100-continue":  # curl, for large bodies
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        else:
            try:
                length = int(headers.get("content-length", "0") or 0)
            except ValueError:
                raise _BadRequest(400, "bad Content-Length") from None
            if length < 0 or length > _MAX_BODY:
                raise _BadRequest(413, "request body too large")
            body = await reader.readexactly(length) if length else b""
        return _Request(parts[0].upper(), parts[1], parts[2], headers, body)

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        body = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _BadRequest(400, "bad chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return bytes(body)
            if len(body) + size > _MAX_BODY:
                raise _BadRequest(413, "request body too large")
            body += await reader.readexactly(size)
            await reader.readexactly(2)

    async def _send(self, writer: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes, *,
                    keep_alive: bool) -> None:
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head += [f"Content-Length: {len(body)}", f"Connection: {'keep-alive' if keep_alive else 'close'}", "", ""]
        writer.write("\r\n".join(head).encode("latin-1") + body)
        await writer.drain()

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, data: Any, *, keep_alive: bool) -> None:
        body = json.dumps(data).encode()
        await self._send(writer, status, {"Content-Type": "application/json; charset=utf-8"}, body,
                         keep_alive=keep_alive)

    # -- routing -------------------------------------------------------------------------------
    async def _dispatch(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; returns whether the connection may be reused."""
        keep = request.keep_alive
        path = request.path
        mode_from_path = None
        for mode in MODES:
            if path == f"/{mode}" or path.startswith(f"/{mode}/"):
                mode_from_path, path = mode, path[len(mode) + 1:] or "/"
                break
        try:
            if request.method == "GET":
                if path == "/health":
                    status, data = await self._health()
                    await self._send_json(writer, status, data, keep_alive=keep)
                elif path == "/metrics":
                    text = await self._metrics()
                    await self._send(writer, 200, {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
                                     text.encode(), keep_alive=keep)
                elif path in ("/v1/models", "/models"):
                    await self._proxy_plain("merged", "GET", path, request, writer)
                elif path == "/lab/handoffs":
                    await self._send_json(writer, 200, {"handoffs": [h.as_dict() for h in self.stats.recent]},
                                          keep_alive=keep)
                else:
                    await self._send_json(writer, 404, _error(f"no route for GET {request.path}", 404), keep_alive=keep)
                return keep
            if request.method == "POST" and path.endswith(("/chat/completions", "/completions")):
                mode = mode_from_path or request.headers.get("x-cache-mode", "merged").strip().lower() or "merged"
                if mode not in MODES:
                    await self._send_json(writer, 400, _error(
                        f"X-Cache-Mode must be merged or split, not {mode!r}", 400), keep_alive=keep)
                    return keep
                self.stats.requests[mode] += 1
                self.stats.in_flight[mode] += 1
                try:
                    if mode == "merged":
                        ok = await self._merged(path, request, writer)
                    else:
                        ok = await self._split(path, request, writer)
                except BaseException:
                    self.stats.errors[mode] += 1
                    raise
                finally:
                    self.stats.in_flight[mode] -= 1
                if not ok:
                    self.stats.errors[mode] += 1
                return keep
            await self._send_json(writer, 404 if request.method in ("GET", "POST") else 405,
                                  _error(f"no route for {request.method} {request.path}", 404), keep_alive=keep)
            return keep
        except _Upstream as exc:
            await self._send_json(writer, 502, _error(str(exc), 502, "upstream_error"), keep_alive=keep)
            return keep

    # -- merged ------------------------------------------------------------------------------
    async def _merged(self, path: str, request: _Request, writer: asyncio.StreamWriter) -> bool:
        t0 = time.perf_counter()
        watch = _StreamWatch(t0)
        status = await self._relay("merged", path, request.body, _forward_headers(request.headers), request,
                                   writer, watch)
        if status == 200 and watch.ttft is not None:
            self.stats.ttft["merged"].observe(watch.ttft)
        return status == 200

    async def _relay(self, instance: str, path: str, body: bytes, headers: dict[str, str], request: _Request,
                     writer: asyncio.StreamWriter, watch: _StreamWatch) -> int:
        """Send ``body`` to ``instance`` and pass its response on: SSE chunked as it arrives,
        anything else whole. Returns the upstream status."""
        import httpx

        url = self.upstreams[instance] + path
        try:
            async with self._client.stream("POST", url, content=body, headers=headers) as response:
                content_type = response.headers.get("content-type", "application/json")
                if response.status_code == 200 and content_type.startswith("text/event-stream"):
                    await self._stream_out(writer, response.status_code, content_type, response.aiter_raw(), watch,
                                           keep_alive=request.keep_alive, version=request.version)
                else:
                    data = await response.aread()
                    if response.status_code == 200:
                        watch.whole(data)
                    await self._send(writer, response.status_code, {"Content-Type": content_type}, data,
                                     keep_alive=request.keep_alive)
                return int(response.status_code)
        except httpx.HTTPError as exc:
            raise _Upstream(f"{instance} server ({url}): {type(exc).__name__}: {exc}") from exc

    async def _stream_out(self, writer: asyncio.StreamWriter, status: int, content_type: str,
                          chunks: AsyncIterator[bytes], watch: _StreamWatch, *, keep_alive: bool,
                          version: str = "HTTP/1.1") -> None:
        """Pass a stream on as it arrives: chunked to HTTP/1.1 clients; to an HTTP/1.0 one,
        raw bytes, and the connection closes at the end (1.0 requests are never kept alive)."""
        chunked = version != "HTTP/1.0"
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"Content-Type: {content_type}",
                "Cache-Control: no-cache", "X-Accel-Buffering: no",
                *(["Transfer-Encoding: chunked"] if chunked else []),
                f"Connection: {'keep-alive' if keep_alive else 'close'}", "", ""]
        writer.write("\r\n".join(head).encode("latin-1"))
        await writer.drain()
        import httpx

        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
                await writer.drain()
                watch.feed(chunk)
        except httpx.HTTPError as exc:  # the response has begun: all that is left is to cut it off
            raise _Aborted(f"the server's stream broke: {type(exc).__name__}") from exc
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _proxy_plain(self, instance: str, method: str, path: str, request: _Request,
                           writer: asyncio.StreamWriter) -> None:
        import httpx

        url = self.upstreams[instance] + path
        try:
            response = await self._client.request(method, url, headers=_forward_headers(request.headers))
        except httpx.HTTPError as exc:
            raise _Upstream(f"{instance} server ({url}): {type(exc).__name__}: {exc}") from exc
        await self._send(writer, response.status_code,
                         {"Content-Type": response.headers.get("content-type", "application/json")},
                         response.content, keep_alive=request.keep_alive)

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
        with contextlib.suppress(Exception):
            response = await self._client.get(self.upstreams[instance] + "/slots", timeout=10)
            if response.status_code == 200:
                slots = response.json()
                if isinstance(slots, list) and slots:
                    return len(slots)
        return 1

    async def _split(self, path: str, request: _Request, writer: asyncio.StreamWriter) -> bool:
        t0 = time.perf_counter()
        try:
            data = json.loads(request.body or b"null")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            await self._send_json(writer, 400, _error("the request body must be a JSON object", 400),
                                  keep_alive=request.keep_alive)
            return False
        headers = _forward_headers(request.headers)
        record = Handoff(id=uuid.uuid4().hex[:12])
        self.stats.recent.append(record)
        filename = f"{HANDOFF_PREFIX}{record.id}.bin"
        try:
            # 1-2: prefill on P, save its slot
            prefill_pool = await self._pool("prefill")
            s = await prefill_pool.get()
            record.prefill_slot = s
            try:
                body = {k: v for k, v in data.items() if k not in ("stream", "stream_options")}
                body.update(stream=False, max_tokens=1, n_predict=1, cache_prompt=True, id_slot=s)
                t = time.perf_counter()
                response = await self._post("prefill", path, body, headers)
                record.prefill_ms = (time.perf_counter() - t) * 1000
                if response.status_code != 200:
                    return await self._fail(writer, request, record, response, "prefill")
                with contextlib.suppress(ValueError, AttributeError):
                    timings = response.json().get("timings") or {}
                    record.prefill_prompt_n = timings.get("prompt_n")
                self.stats.prefill.observe(record.prefill_ms / 1000)
                t = time.perf_counter()
                response = await self._post("prefill", f"/slots/{s}?action=save", {"filename": filename}, headers)
                record.save_ms = (time.perf_counter() - t) * 1000
                if response.status_code != 200:
                    return await self._fail(writer, request, record, response, "slot save")
                with contextlib.suppress(ValueError, AttributeError):
                    saved = response.json()
                    record.n_saved, record.bytes = saved.get("n_saved"), saved.get("n_written")
                self.stats.save.observe(record.save_ms / 1000)
            finally:
                prefill_pool.put_nowait(s)
            # 3-4: restore on D, then the request itself, its response passed on
            decode_pool = await self._pool("decode")
            d = await decode_pool.get()
            record.decode_slot = d
            try:
                t = time.perf_counter()
                response = await self._post("decode", f"/slots/{d}?action=restore", {"filename": filename}, headers)
                record.restore_ms = (time.perf_counter() - t) * 1000
                self._remove_files(filename)
                if response.status_code != 200:
                    return await self._fail(writer, request, record, response, "slot restore")
                with contextlib.suppress(ValueError, AttributeError):
                    record.n_restored = response.json().get("n_restored")
                self.stats.restore.observe(record.restore_ms / 1000)
                self.stats.handoffs += 1
                self.stats.handoff_bytes += int(record.bytes or 0)
                self.stats.handoff_tokens += int(record.n_restored or 0)
                decode_body = {**data, "id_slot": d, "cache_prompt": True}
                t = time.perf_counter()
                watch = _StreamWatch(t)
                status = await self._relay("decode", path, json.dumps(decode_body).encode(), headers, request,
                                           writer, watch)
                record.status = status
                if watch.ttft is not None:
                    record.decode_ttft_ms = watch.ttft * 1000
                    self.stats.decode_ttft.observe(watch.ttft)
                    self.stats.ttft["split"].observe(watch.ttft + (t - t0))
                if watch.timings:
                    record.decode_prompt_n = watch.timings.get("prompt_n")
                    record.decode_cache_n = watch.timings.get("cache_n")
                return status == 200
            finally:
                decode_pool.put_nowait(d)
        finally:
            # 5: the slot file is gone whatever happened
            self._remove_files(filename)
            record.total_ms = (time.perf_counter() - t0) * 1000

    async def _post(self, instance: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        import httpx

        url = self.upstreams[instance] + path
        try:
            return await self._client.post(url, content=json.dumps(body).encode(),
                                           headers={**headers, "Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise _Upstream(f"{instance} server ({url}): {type(exc).__name__}: {exc}") from exc

    async def _fail(self, writer: asyncio.StreamWriter, request: _Request, record: Handoff, response: Any,
                    step: str) -> bool:
        """Pass a server's error on with its status and body."""
        record.status = int(response.status_code)
        record.error = f"{step}: HTTP {response.status_code}"
        await self._send(writer, response.status_code,
                         {"Content-Type": response.headers.get("content-type", "application/json")},
                         response.content, keep_alive=request.keep_alive)
        return False

    def _remove_files(self, pattern: str) -> None:
        for path in self.slot_dir.glob(pattern):
            with contextlib.suppress(OSError):
                path.unlink()

    # -- health and metrics ----------------------------------------------------------------------
    async def _get_text(self, instance: str, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            response = await self._client.get(self.upstreams[instance] + path, timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            return 0, f"{type(exc).__name__}: {exc}"
        return int(response.status_code), response.text

    async def _health(self) -> tuple[int, dict[str, Any]]:
        answers = await asyncio.gather(*(self._get_text(i, "/health", 2.0) for i in INSTANCES))
        upstreams = {i: ("ok" if status == 200 else (f"HTTP {status}" if status else text))
                     for i, (status, text) in zip(INSTANCES, answers, strict=True)}
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

        family("kvswitch_lab:requests_total", "counter", "Completion requests the lab router received, by mode.",
               [(f'kvswitch_lab:requests_total{{mode="{m}"}}', st.requests[m]) for m in MODES])
        family("kvswitch_lab:request_errors_total", "counter", "Requests that did not end with HTTP 200, by mode.",
               [(f'kvswitch_lab:request_errors_total{{mode="{m}"}}', st.errors[m]) for m in MODES])
        family("kvswitch_lab:requests_in_flight", "gauge", "Requests being served now, by mode.",
               [(f'kvswitch_lab:requests_in_flight{{mode="{m}"}}', st.in_flight[m]) for m in MODES])
        family("kvswitch_lab:kv_handoffs_total", "counter",
               "KV caches handed from the prefill server to the decode server (slot save + restore).",
               [("kvswitch_lab:kv_handoffs_total", st.handoffs)])
        family("kvswitch_lab:kv_handoff_bytes_total", "counter", "Bytes of slot files handed over.",
               [("kvswitch_lab:kv_handoff_bytes_total", st.handoff_bytes)])
        family("kvswitch_lab:kv_handoff_tokens_total", "counter", "Prompt tokens restored on the decode server.",
               [("kvswitch_lab:kv_handoff_tokens_total", st.handoff_tokens)])
        summary("kvswitch_lab:ttft_seconds", "Router-side time to first token, request in to first token out.",
                {f'{{mode="{m}"}}': st.ttft[m] for m in MODES})
        summary("kvswitch_lab:prefill_seconds", "Split: the prefill request on the prefill server.",
                {"": st.prefill})
        summary("kvswitch_lab:slot_save_seconds", "Split: POST /slots/{id}?action=save on the prefill server.",
                {"": st.save})
        summary("kvswitch_lab:slot_restore_seconds", "Split: POST /slots/{id}?action=restore on the decode server.",
                {"": st.restore})
        summary("kvswitch_lab:decode_ttft_seconds",
                "Split: the decode request (KV restored) to its first token.", {"": st.decode_ttft})
        family("kvswitch_lab:upstream_up", "gauge", "Whether each server's /metrics answered.",
               [(f'kvswitch_lab:upstream_up{{instance="{i}"}}', 1 if status == 200 else 0)
                for i, (status, _) in zip(INSTANCES, answers, strict=True)])
        lines += _relabel([(i, text) for i, (status, text) in zip(INSTANCES, answers, strict=True) if status == 200])
        return "\n".join(lines) + "\n"


class _Upstream(Exception):
    """A server could not be reached (502)."""


class _Aborted(ConnectionError):
    """A server's stream broke after the response began: the client's connection is closed."""


def _forward_headers(headers: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in headers.items() if k not in _HOP and not k.startswith("x-cache-mode")}
    out["accept-encoding"] = "identity"
    return out


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
            if line[name_end:name_end + 1] == "{":
                inner = line[name_end + 1:]
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
    ap = argparse.ArgumentParser(prog="python -m kvswitch.lab.router", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18080, help="0: any free port (see the LISTENING line)")
    ap.add_argument("--merged", required=True, help="the merged server, http://host:port")
    ap.add_argument("--prefill", required=True, help="the prefill server, http://host:port")
    ap.add_argument("--decode", required=True, help="the decode server, http://host:port")
    ap.add_argument("--slot-dir", required=True, help="the --slot-save-path both split servers share")
    ap.add_argument("--prefill-slots", type=int, default=None, help="default: the server's /slots")
    ap.add_argument("--decode-slots", type=int, default=None, help="default: the server's /slots")
    return ap


async def _serve(args: argparse.Namespace) -> None:
    router = Router(args.merged, args.prefill, args.decode, args.slot_dir, host=args.host, port=args.port,
                    prefill_slots=args.prefill_slots, decode_slots=args.decode_slots)
    await router.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(f"{LISTENING} {router.url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await router.close()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    asyncio.run(_serve(_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
