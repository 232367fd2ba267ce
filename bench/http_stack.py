#!/usr/bin/env python3
"""Which HTTP stack for the lab router (and the gateway after it): the added time to first
token of a streamed response through a minimal pass-through proxy on each candidate, side by
side in one run, against the same upstream.

    .venv/bin/python bench/http_stack.py [--rounds 400] [--ttft-ms 2]

The upstream is kvswitch's deterministic SSE server (``kvswitch.testing.sse_server``) in a
process of its own; each proxy runs in a process of its own too (as the lab router does) and
opens a new upstream connection per request (llama.cpp closes one after every stream). The
client connects first, then times from sending the request to the first token-bearing event;
candidates take turns in a shuffled order every round, so machine noise falls on all alike.
**Added TTFT** = a candidate's TTFT percentile minus the direct one's, at concurrency 1.

Candidates: ``streams+httpx`` (the router before: asyncio streams parsed by hand, httpx
client), ``aiohttp`` (its server and client), ``aiohttp-pooled`` (the same, upstream
connections kept alive: what a gateway gets from a server that keeps them, which llama.cpp
does not after a stream), ``h11`` (h11 on both sides under asyncio),
``httptools`` (llhttp on both sides under asyncio), and ``lab-router`` (kvswitch's router
itself, merged route). Goal: added TTFT p50 <= 0.5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("streams+httpx", "aiohttp", "aiohttp-pooled", "h11", "httptools", "lab-router")
BODY = json.dumps(
    {
        "model": "test-model",
        "stream": True,
        "max_tokens": 4,
        "messages": [{"role": "user", "content": "hello"}],
    }
).encode()
PATH = "/v1/chat/completions"


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# -- the candidate proxies (each: serve(port, upstream host, upstream port) forever) ---------------
async def serve_streams_httpx(port: int, host: str, up: int) -> None:
    import httpx

    client = httpx.AsyncClient(timeout=60, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _nodelay(writer)
        with contextlib.suppress(Exception):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ")
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                length = int({k.lower(): v for k, v in headers.items()}.get("content-length", "0"))
                body = await reader.readexactly(length)
                async with client.stream(
                    method,
                    f"http://{host}:{up}{target}",
                    content=body,
                    headers={"content-type": "application/json"},
                ) as resp:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                    )
                    async for chunk in resp.aiter_raw():
                        writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                        await writer.drain()
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
        writer.close()

    server = await asyncio.start_server(conn, "127.0.0.1", port)
    await server.serve_forever()


async def serve_aiohttp(port: int, host: str, up: int, *, pooled: bool = False) -> None:
    import aiohttp
    from aiohttp import web

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=not pooled),
        auto_decompress=False,
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
    )

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        async with session.post(
            f"http://{host}:{up}{request.path}",
            data=body,
            headers={"content-type": "application/json"},
        ) as resp:
            out = web.StreamResponse(status=resp.status, headers={"Content-Type": resp.headers["content-type"]})
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    server = web.Server(handle, access_log=None)
    srv = await asyncio.get_running_loop().create_server(server, "127.0.0.1", port)
    await srv.serve_forever()


async def serve_h11(port: int, host: str, up: int) -> None:
    import h11

    async def events(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await reader.read(65536)
                if not data:
                    raise ConnectionError("closed mid-message")
                conn.receive_data(data)
                continue
            yield ev
            if isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
                return

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _nodelay(writer)
        server = h11.Connection(h11.SERVER)
        with contextlib.suppress(Exception):
            request, body = None, b""
            async for ev in events(server, reader):
                if isinstance(ev, h11.Request):
                    request = ev
                elif isinstance(ev, h11.Data):
                    body += ev.data
            assert request is not None
            ur, uw = await asyncio.open_connection(host, up)
            _nodelay(uw)
            client = h11.Connection(h11.CLIENT)
            uw.write(
                client.send(
                    h11.Request(
                        method="POST",
                        target=request.target,
                        headers=[
                            ("Host", f"{host}:{up}"),
                            ("Content-Type", "application/json"),
                            ("Content-Length", str(len(body))),
                            ("Connection", "close"),
                        ],
                    )
                )
            )
            uw.write(client.send(h11.Data(data=body)) + client.send(h11.EndOfMessage()))
            async for ev in events(client, ur):
                if isinstance(ev, h11.Response):
                    writer.write(
                        server.send(
                            h11.Response(
                                status_code=ev.status_code,
                                headers=[
                                    ("Content-Type", "text/event-stream"),
                                    ("Transfer-Encoding", "chunked"),
                                ],
                            )
                        )
                    )
                elif isinstance(ev, h11.Data):
                    writer.write(server.send(h11.Data(data=ev.data)))
                    await writer.drain()
            writer.write(server.send(h11.EndOfMessage()))
            await writer.drain()
            uw.close()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    await srv.serve_forever()


async def serve_httptools(port: int, host: str, up: int) -> None:
    import httptools

    class Sink:
        def __init__(self) -> None:
            self.url = b""
            self.body = bytearray()
            self.done = False
            self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        def on_url(self, url: bytes) -> None:
            self.url += url

        def on_body(self, body: bytes) -> None:
            self.body += body
            self.queue.put_nowait(bytes(body))

        def on_message_complete(self) -> None:
            self.done = True
            self.queue.put_nowait(None)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _nodelay(writer)
        with contextlib.suppress(Exception):
            req = Sink()
            parser = httptools.HttpRequestParser(req)
            while not req.done:
                data = await reader.read(65536)
                if not data:
                    raise ConnectionError("closed before a whole request")
                parser.feed_data(data)
            ur, uw = await asyncio.open_connection(host, up)
            _nodelay(uw)
            uw.write(
                b"POST %b HTTP/1.1\r\nHost: %b:%d\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%b"
                % (req.url, host.encode(), up, len(req.body), bytes(req.body))
            )
            resp = Sink()
            rparser = httptools.HttpResponseParser(resp)
            sent_head = False

            async def pump() -> None:
                while not resp.done:
                    data = await ur.read(65536)
                    if not data:
                        break
                    rparser.feed_data(data)

            pumping = asyncio.ensure_future(pump())
            while True:
                piece = await resp.queue.get()
                if not sent_head:
                    writer.write(
                        b"HTTP/1.1 %d OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" % rparser.get_status_code()
                    )
                    sent_head = True
                if piece is None:
                    writer.write(b"0\r\n\r\n")
                    break
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                await writer.drain()
            await writer.drain()
            await pumping
            uw.close()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    await srv.serve_forever()


async def serve_lab_router(port: int, host: str, up: int) -> None:
    import tempfile

    from kvswitch.lab.router import Router

    upstream = f"http://{host}:{up}"
    with tempfile.TemporaryDirectory() as slots:
        router = Router(upstream, upstream, upstream, slots, port=port, prefill_slots=1, decode_slots=1)
        await router.start()
        await asyncio.Event().wait()


async def serve_aiohttp_pooled(port: int, host: str, up: int) -> None:
    await serve_aiohttp(port, host, up, pooled=True)


SERVE = {
    "streams+httpx": serve_streams_httpx,
    "aiohttp": serve_aiohttp,
    "aiohttp-pooled": serve_aiohttp_pooled,
    "h11": serve_h11,
    "httptools": serve_httptools,
    "lab-router": serve_lab_router,
}


# -- the measuring side ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT)


async def one(port: int) -> float:
    """Connect, then time request → first token-bearing event (seconds)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    _nodelay(writer)
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
    ).encode()
    t0 = time.perf_counter()
    writer.write(head + BODY)
    seen = b""
    while b'"content": "tok' not in seen:
        data = await reader.read(65536)
        if not data:
            raise RuntimeError(f"port {port}: the stream ended before a token: {seen[:200]!r}")
        seen += data
    ttft = time.perf_counter() - t0
    while b"[DONE]" not in seen:  # the rest of the stream, so that every request ends alike
        data = await reader.read(65536)
        if not data:
            break
        seen += data
    writer.close()
    return ttft


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(ports: dict[str, int], rounds: int, warmup: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in ports}
    names = list(ports)
    for r in range(warmup + rounds):
        random.shuffle(names)
        for name in names:
            t = await one(ports[name])
            if r >= warmup:
                out[name].append(t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--ttft-ms", type=float, default=2.0)
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--serve", choices=CANDIDATES, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--upstream", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:  # a candidate proxy, in a process of its own
        parts = urlsplit(args.upstream)
        asyncio.run(SERVE[args.serve](args.port, parts.hostname or "127.0.0.1", parts.port or 80))
        return 0
    import importlib.util

    import kvswitch

    needs = {
        "aiohttp": "aiohttp",
        "aiohttp-pooled": "aiohttp",
        "h11": "h11",
        "httptools": "httptools",
        "lab-router": "aiohttp",
        "streams+httpx": "httpx",
    }
    candidates = []
    for name in args.candidates.split(","):
        if importlib.util.find_spec(needs[name]) is None:
            print(f"skipped {name}: pip install {needs[name]}")
        else:
            candidates.append(name)
    procs: list[subprocess.Popen[str]] = []
    try:
        upstream = spawn(
            [
                "-m",
                "kvswitch.testing.sse_server",
                "--ttft-ms",
                str(args.ttft_ms),
                "--itl-ms",
                "1",
                "--tokens",
                "4",
            ]
        )
        procs.append(upstream)
        assert upstream.stdout is not None
        line = upstream.stdout.readline().strip()
        root = line.split(" ", 1)[1].removesuffix("/v1")
        ports = {"direct": int(urlsplit(root).port or 0)}
        for name in candidates:
            port = free_port()
            procs.append(
                spawn(
                    [
                        str(Path(__file__).resolve()),
                        "--serve",
                        name,
                        "--port",
                        str(port),
                        "--upstream",
                        root,
                    ]
                )
            )
            ports[name] = port
        deadline = time.monotonic() + 30
        for name, port in ports.items():
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"{name} did not listen") from None
                    time.sleep(0.05)
        results = asyncio.run(measure(ports, args.rounds, args.warmup))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
    versions = {}
    for mod in ("aiohttp", "h11", "httptools", "httpx"):
        with contextlib.suppress(Exception):
            versions[mod] = __import__(mod).__version__
    print(
        f"kvswitch {kvswitch.__version__ if hasattr(kvswitch, '__version__') else ''} · python "
        f"{sys.version.split()[0]} · " + " · ".join(f"{k} {v}" for k, v in versions.items())
    )
    print(
        f"concurrency 1 · {args.rounds} rounds (+{args.warmup} warm-up) · upstream TTFT "
        f"{args.ttft_ms:g} ms · client connects before timing · proxies open a new upstream "
        "connection per request (except aiohttp-pooled)"
    )
    direct50 = statistics.median(results["direct"])
    direct99 = pct(results["direct"], 0.99)
    print(f"{'candidate':<14} {'TTFT p50':>9} {'p99':>9} {'added p50':>10} {'added p99':>10}  goal p50<=0.5")
    for name, values in results.items():
        p50, p99 = statistics.median(values) * 1000, pct(values, 0.99) * 1000
        if name == "direct":
            print(f"{name:<14} {p50:8.3f}  {p99:8.3f}")
            continue
        added50, added99 = p50 - direct50 * 1000, p99 - direct99 * 1000
        verdict = "ok" if added50 <= 0.5 else "MISSES"
        print(f"{name:<14} {p50:8.3f}  {p99:8.3f}  {added50:9.3f}  {added99:9.3f}   {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
