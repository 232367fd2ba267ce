#!/usr/bin/env python3
"""How much of a measured TTFT is the probe's own doing: kvswitch's client beside a minimal
raw-socket client, against the deterministic test server running in another process.

    .venv/bin/python bench/probe_overhead.py [--concurrency 64] [--rounds 4] [--ttft-ms 300]

The server stamps (system-wide monotonic clock) when it wrote each request's first content
event; a client's **TTFT error** is the time it saw that token minus the stamp — its own
overhead plus the loopback. Connections are opened first, so connect time is not in it
(D-12). Goals (issue 5): at concurrency 64, error p50 ≤ 2 ms and p99 ≤ 10 ms. Also: CPU time
per streamed token of each client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from kvswitch.probe.client import chat_body, stream_chat
from kvswitch.probe.stats import percentile

ROOT = Path(__file__).resolve().parent.parent


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def start_server(ttft_ms: float, tokens: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvswitch.testing.sse_server",
            "--ttft-ms",
            str(ttft_ms),
            "--itl-ms",
            "5",
            "--tokens",
            str(tokens),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("LISTENING "), line
    return proc, line.split(" ", 1)[1]


async def stamps(url: str) -> dict[str, float]:
    host, port = urlsplit(url).hostname, urlsplit(url).port
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /stamps HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    body = data.split(b"\r\n\r\n", 1)[1]
    return {rid: first for rid, _recv, first, _mode in json.loads(body) if first is not None}


async def kvswitch_client(url: str, concurrency: int, rounds: int, tokens: int) -> tuple[dict[str, float], int]:
    import httpx

    seen: dict[str, float] = {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    from kvswitch.probe.transport import StampedTransport

    async with httpx.AsyncClient(transport=StampedTransport(), limits=limits, timeout=None, trust_env=False) as client:

        async def one(rid: str) -> None:
            body = chat_body("test-model", f"[{rid}] hello", tokens)
            r = await stream_chat(client, url + "/chat/completions", body, {"X-Request-Id": rid}, mode="merged")
            if r.ok and r.ttft is not None:
                seen[rid] = r.started + r.ttft

        await asyncio.gather(*(one(f"warm-{i}") for i in range(concurrency)))  # open every connection first
        seen.clear()
        for r in range(rounds):
            await asyncio.gather(*(one(f"k{r}-{i}-{uuid.uuid4().hex[:6]}") for i in range(concurrency)))
    return seen, len(seen) * tokens


async def raw_client(url: str, concurrency: int, rounds: int, tokens: int) -> tuple[dict[str, float], int]:
    """The smallest client that can time a stream: a socket, one write, scan for the first token."""
    parts = urlsplit(url)
    conns = [await asyncio.open_connection(parts.hostname, parts.port) for _ in range(concurrency)]
    seen: dict[str, float] = {}

    async def one(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], rid: str) -> None:
        reader, writer = conn
        body = json.dumps(chat_body("test-model", f"[{rid}] hello", tokens)).encode()
        writer.write(
            f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: "
            f"application/json\r\n"
            f"X-Request-Id: {rid}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        buf = b""
        while True:
            chunk = await reader.read(65536)
            now = time.perf_counter()
            if not chunk:
                return
            buf += chunk
            if rid not in seen and b'"content": "tok' in buf:
                seen[rid] = now
            if buf.endswith(b"0\r\n\r\n") and b"[DONE]" in buf:
                return

    for r in range(rounds + 1):
        ids = [f"r{r}-{i}-{uuid.uuid4().hex[:6]}" for i in range(concurrency)]
        await asyncio.gather(*(one(c, rid) for c, rid in zip(conns, ids, strict=True)))
        if r == 0:
            seen.clear()  # the first round warms the connections
    for _, writer in conns:
        writer.close()
    return seen, len(seen) * tokens


def errors(seen: dict[str, float], truth: dict[str, float]) -> list[float]:
    return [(seen[rid] - truth[rid]) * 1000 for rid in seen if rid in truth]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--ttft-ms", type=float, default=300.0)
    ap.add_argument("--tokens", type=int, default=8)
    args = ap.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    proc, url = start_server(args.ttft_ms, args.tokens)
    try:
        rows = []
        for name, fn in (("raw socket client", raw_client), ("kvswitch probe client", kvswitch_client)):
            c0 = cpu()
            seen, n_tokens = asyncio.run(fn(url, args.concurrency, args.rounds, args.tokens))
            used = cpu() - c0
            truth = asyncio.run(stamps(url))
            err = errors(seen, truth)
            rows.append(
                (name, len(err), percentile(err, 50), percentile(err, 99), max(err), used / max(n_tokens, 1) * 1e6)
            )
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    print(f"concurrency {args.concurrency}, {args.rounds} rounds, server in another process, connections opened first")
    print("TTFT error = when the client saw the first content token − when the server wrote it (same monotonic clock)")
    print(f"{'client':24} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU µs/token':>13}")
    for name, n, p50, p99, mx, per_tok in rows:
        print(f"{name:24} {n:>5} {p50:8.2f} {p99:8.2f} {mx:8.2f} {per_tok:13.1f}")
    k = rows[1]
    print(f"goals: p50 ≤ 2 ms → {'ok' if k[2] <= 2 else 'ABOVE'}; p99 ≤ 10 ms → {'ok' if k[3] <= 10 else 'ABOVE'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
