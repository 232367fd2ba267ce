"""The gateway's memory under load: it gives back what a thousand streams took, and readers
that stop reading cost it a bounded amount (backpressure, not buffering).

The gateway runs as its own process (``python -m kvswitch.gateway.server``) so its resident
set is read from ``/proc/PID/status`` (VmRSS) without the test's own allocations in it; the
upstream is the deterministic SSE server in a thread of the test process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.testing.sse_server import SSEServer
from tests.gateway.upstreams import CHAT, TOKEN, Reply, exchange, request

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status"),
]

MIB = 1024 * 1024
WARM_UP = 300
STREAMS = 1000
CONCURRENCY = 16
SLOW_READERS = 64


def rss(pid: int) -> int:
    """The process's resident set, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@contextlib.contextmanager
def gateway_process(upstream: str) -> Iterator[tuple[int, int]]:
    """A gateway subprocess in front of ``upstream``: (its pid, its port)."""
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvswitch.gateway.server",
            "--merged",
            upstream,
            "--split",
            upstream,
            "--port",
            "0",
            "--max-in-flight",
            "256",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KVSWITCH_GATEWAY_TOKEN": TOKEN},
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("LISTENING http://127.0.0.1:"), line
            yield proc.pid, int(line.rsplit(":", 1)[1])
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=20)
            assert "Traceback" not in err, err


async def streams(port: int, count: int, concurrency: int) -> list[int]:
    """``count`` whole streams, ``concurrency`` at a time: their statuses (200 only if whole)."""
    gate = asyncio.Semaphore(concurrency)
    data = request("/v1/chat/completions")

    async def one() -> int:
        async with gate:
            reply = await exchange(port, data, wait=30)
            return reply.status if reply.complete and b"[DONE]" in reply.body else -reply.status

    return list(await asyncio.gather(*(one() for _ in range(count))))


def test_a_thousand_streams_leave_the_gateways_memory_where_the_warm_up_left_it() -> None:
    with SSEServer(ttft_ms=0, itl_ms=0, tokens=8) as server, gateway_process(server.url) as (pid, port):
        start = rss(pid)
        assert asyncio.run(streams(port, WARM_UP, CONCURRENCY)) == [200] * WARM_UP
        warm = rss(pid)
        assert asyncio.run(streams(port, STREAMS, CONCURRENCY)) == [200] * STREAMS
        after = rss(pid)
    print(
        f"gateway RSS: start {start / MIB:.1f} MiB, after {WARM_UP} warm-up streams "
        f"{warm / MIB:.1f} MiB, after {STREAMS} more {after / MIB:.1f} MiB "
        f"({(after - warm) / MIB:+.2f} MiB)"
    )
    assert after - warm <= 5 * MIB


async def slow_readers(port: int, pid: int) -> tuple[int, int, Reply]:
    """64 clients that read the start of an endless stream and then stop reading: the peak RSS
    while they hang and the RSS after they went away, then one normal request's reply."""
    body = json.dumps({**CHAT, "max_tokens": 10_000_000}).encode()
    conns = []
    for _ in range(SLOW_READERS):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/v1/chat/completions", body=body, extra="X-Test-Scenario: ok\r\n"))
        await writer.drain()
        conns.append((reader, writer))
    for reader, _ in conns:
        first = await asyncio.wait_for(reader.read(200), 30)
        assert first.startswith(b"HTTP/1.1 200 ")
    peak = 0
    for _ in range(20):  # ~2 s with every stream held back by its reader
        await asyncio.sleep(0.1)
        peak = max(peak, rss(pid))
    for _, writer in conns:
        writer.transport.abort()
    await asyncio.sleep(0.5)
    reply = await exchange(
        port, request("/v1/chat/completions", extra="X-Test-Scenario: ok\r\n", body=json.dumps(CHAT).encode()), wait=30
    )
    return peak, rss(pid), reply


def test_sixty_four_slow_readers_cost_a_bounded_amount_and_the_gateway_serves_after() -> None:
    with SSEServer(ttft_ms=0, itl_ms=0, tokens=10_000_000) as endless, gateway_process(endless.url) as (pid, port):
        assert asyncio.run(streams(port, 32, 32)) == [200] * 32  # warm-up: short streams
        before = rss(pid)
        peak, after, reply = asyncio.run(slow_readers(port, pid))
    print(
        f"gateway RSS: before {before / MIB:.1f} MiB, peak with {SLOW_READERS} slow readers "
        f"{peak / MIB:.1f} MiB ({(peak - before) / MIB:+.2f} MiB), after they left "
        f"{after / MIB:.1f} MiB"
    )
    assert peak - before <= 50 * MIB
    assert reply.status == 200 and reply.complete and b"[DONE]" in reply.body
