#!/usr/bin/env python3
"""What translating costs: the time to the first token of a Messages or Responses request that
kvswitch's gateway translates to Chat Completions, against a Chat Completions request it passes
through, on the same upstream, side by side in one run.

    .venv/bin/python bench/translation_overhead.py [--rounds 50] [--block 20] [--json OUT]

The upstream is kvswitch's deterministic SSE server (Chat Completions only: first token after
2 ms, then 8 tokens 5 ms apart), behind one gateway process. Three arms, one request at a time:
``chat`` (passed through), ``messages`` and ``responses`` (translated: the server lacks those
routes, which the gateway learns in the warm-up). Rounds as in ``gateway_overhead.py``: each
round runs a block of every arm in a shuffled order; the load generator is a process of its
own (this script re-run with ``--load``), opens a new connection per request and stamps each
read; a token is an event that carries one in the arm's own API (``kvswitch.first_token``).
**Added TTFT** = the median over rounds of (arm p50 − chat p50), with a bootstrap 95 % interval.
Goal: at most 0.5 ms (met when the interval's upper bound is within it). ``CPU ms/req`` is the
gateway's CPU per request over the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _gateway_arms as arms
import gateway_overhead as go

HERE = Path(__file__).resolve()
GOAL_MS = 0.5
PROMPT = "one two three four five six seven eight"
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": (
        "/v1/chat/completions",
        {"model": "test-model", "stream": True, "max_tokens": 8, "messages": [{"role": "user", "content": PROMPT}]},
    ),
    "messages": (
        "/v1/messages",
        {"model": "test-model", "stream": True, "max_tokens": 8, "messages": [{"role": "user", "content": PROMPT}]},
    ),
    "responses": ("/v1/responses", {"model": "test-model", "stream": True, "max_output_tokens": 8, "input": PROMPT}),
}


class _Stream(go._Response):
    """An HTTP response whose SSE events are told token-bearing by the shared first-token rule."""

    def __init__(self) -> None:
        super().__init__()
        from kvswitch.probe.sse import SSEParser

        self.parser = SSEParser()

    def _body(self, data: bytes, now: float) -> None:
        from kvswitch.first_token import carries_token

        self.body_seen += len(data)
        if self.status != 200:
            self.body_text += data[: max(0, 2000 - len(self.body_text))]
            return
        for event in self.parser.feed(data):
            with contextlib.suppress(ValueError):
                if carries_token(json.loads(event.data), event.event):
                    self.token_times.append(now)


def _request(port: int, path: str, body: dict[str, Any], token: str) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode() + data


async def _one(port: int, request: bytes) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    go._nodelay(writer)
    resp = _Stream()
    try:
        t0 = time.perf_counter()
        writer.write(request)
        while not resp.done:
            data = await reader.read(65536)
            now = time.perf_counter()
            if not data:
                break
            resp.feed(data, now)
    finally:
        writer.close()
    if resp.status != 200 or not resp.token_times:
        return {"error": f"HTTP {resp.status}: {resp.body_text[:200].decode(errors='replace')}"}
    times = resp.token_times
    return {"ttft": times[0] - t0, "itl": [b - a for a, b in itertools.pairwise(times)], "tokens": len(times)}


async def _block(port: int, request: bytes, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"ttft": [], "itl": [], "tokens": [], "errors": 0, "error": ""}
    t0 = time.perf_counter()
    for _ in range(n):
        one = await asyncio.wait_for(_one(port, request), go.TIMEOUT)
        if "error" in one:
            out["errors"] += 1
            out["error"] = out["error"] or one["error"]
            continue
        out["ttft"].append(one["ttft"])
        out["itl"].extend(one["itl"])
        out["tokens"].append(one["tokens"])
    out["wall"] = time.perf_counter() - t0
    out["n"] = n - out["errors"]
    return out


async def _load(spec: dict[str, Any]) -> dict[str, Any]:
    rnd = random.Random(spec["seed"])
    port = spec["port"]
    requests = {name: _request(port, path, body, spec["token"]) for name, (path, body) in ARMS.items()}
    for request in requests.values():  # warm-up: the gateway learns the upstream lacks two APIs
        await _block(port, request, spec["warmup"])
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in ARMS}
    names = list(ARMS)
    for _ in range(spec["rounds"]):
        rnd.shuffle(names)
        for name in names:
            rounds[name].append(await _block(port, requests[name], spec["block"]))
    return {"rounds": rounds}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--block", type=int, default=20)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--load", help=argparse.SUPPRESS)
    ap.add_argument("--load-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.load:
        spec = json.loads(Path(args.load).read_text())
        Path(args.load_out).write_text(json.dumps(asyncio.run(_load(spec))))
        return 0

    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="kvswitch-translation-bench-") as tmp:
        work = Path(tmp)
        sse = arms.start_sse(work, ttft_ms=2.0, itl_ms=5.0, tokens=8)
        gateway = None
        try:
            gateway = arms.start_gateway(work, sse.root, token, "translate")
            port = gateway.port
            spec = {
                "port": port,
                "token": token,
                "rounds": args.rounds,
                "block": args.block,
                "warmup": 10,
                "seed": args.seed,
            }
            spec_path, out_path = work / "spec.json", work / "out.json"
            spec_path.write_text(json.dumps(spec))
            cpu0 = arms.cpu_seconds(gateway.pid)
            done = subprocess.run(
                [sys.executable, str(HERE), "--load", str(spec_path), "--load-out", str(out_path)], check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"the load generator failed (status {done.returncode})")
            cpu = arms.cpu_seconds(gateway.pid) - cpu0
            rounds = json.loads(out_path.read_text())["rounds"]
        finally:
            if gateway is not None:
                gateway.stop()
            sse.stop()

    rnd = random.Random(args.seed)
    n = len(rounds["chat"])
    base = [go._median(r["ttft"]) for r in rounds["chat"]]
    total = sum(r["n"] for arm in rounds.values() for r in arm)
    print(
        f"Translation: SSE server (TTFT 2 ms, ITL 5 ms, 8 tokens), concurrency 1, {n} rounds x "
        f"{args.block} requests per arm" + f"; gateway CPU {cpu / total * 1e3:.2f} ms/req over all arms"
    )
    print(f"  {'arm':<10} {'TTFT p50':>9} {'p99':>8} {'added p50 ms [95% CI]':>28} {'errors':>7}")
    report: dict[str, Any] = {"rounds": n, "block": args.block, "arms": {}}
    met_all = True
    for name, arm in rounds.items():
        ttft = go._pooled(arm, list(range(n)), "ttft")
        errors = sum(r["errors"] for r in arm)
        row: dict[str, Any] = {
            "ttft_p50_ms": go._median(ttft) * 1e3,
            "ttft_p99_ms": go.pct(ttft, 0.99) * 1e3,
            "errors": errors,
        }
        shown = ""
        if name != "chat":
            diffs = [go._median(r["ttft"]) - b for r, b in zip(arm, base, strict=True)]

            def added(idx: list[int], d: list[float] = diffs) -> float:
                return go._median([d[i] for i in idx]) * 1e3

            est, low, high = go.interval(added, n, rnd)
            row["added_p50_ms"] = [est, low, high]
            met = high <= GOAL_MS and errors == 0
            met_all &= met
            shown = f"{est:+.3f} [{low:+.3f}, {high:+.3f}] {'met' if met else 'NOT MET'}"
        report["arms"][name] = row
        print(f"  {name:<10} {row['ttft_p50_ms']:>9.3f} {row['ttft_p99_ms']:>8.3f} {shown:>28} {errors:>7}")
    print(f"goal: added TTFT p50 of a translated request <= {GOAL_MS} ms: {'met' if met_all else 'NOT MET'}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
