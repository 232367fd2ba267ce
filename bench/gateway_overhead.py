#!/usr/bin/env python3
"""What kvswitch's gateway adds to a streamed request, side by side in one run with going
direct, LiteLLM's proxy and SGLang's router, on the same upstreams.

    .venv/bin/python bench/gateway_overhead.py [--requests 2000] [--json OUT]
    .venv/bin/python bench/gateway_overhead.py --requests 100 --cancel-trials 5   # a smoke run

Upstreams: kvswitch's deterministic SSE server (``kvswitch.testing.sse_server``: known time
to first token, inter-token gap and length) at concurrency 1, 4 and 64, and the lab's
llama.cpp serving the generated tiny model at concurrency 1 and 4. Arms: ``direct`` (the
upstream itself), ``kvswitch`` (``python -m kvswitch.gateway.server``), ``litellm``
(``litellm[proxy]==1.91.1``, installed once into ``bench/out/venv-litellm``; ``--no-litellm``
skips it) and ``sglang`` (``sglang-router``, from this interpreter or ``bench/out/venv-sglang``;
``--no-sglang``). Every server is a process of its own and so is the load generator (this
script re-run with ``--load``); everything binds 127.0.0.1.

The load generator opens a new connection per request (llama.cpp closes one after every
stream), connects first, then times from writing the request to each token-bearing event.
Requests go in rounds: in each round every arm, in a shuffled order, runs a block of requests
at the row's concurrency (20 at 1, 40 at 4, 256 at 64), so machine noise falls on all arms
alike. **Added TTFT** = the median over rounds of (arm p50 − direct p50), with a bootstrap
95 % interval (rounds resampled); added p99 = pooled p99 − direct's pooled p99, same interval.
Throughput (requests/s) and inter-token-gap p99 are ratios to direct, with intervals too.
A goal is met when its interval lies within it (the upper bound for "at most", the lower bound
for "at least"). ``CPU ms/req`` is the CPU time (user + system, from ``/proc``) each server's
process tree spent per request it served, warm-up included; for ``direct`` it is the
upstream's, over every arm's requests. On a shared machine it is the figure least moved by
other work; the title of each row gives the load average before and after it.

Cancellation: through each arm, to an SSE server that sends nothing for 100 ms and then 50
tokens 10 ms apart, and that stamps when its connection closes (``close-watch``), the client
closes mid-prefill (at 50 ms, before any upstream byte) and mid-stream (at the third token);
the figure is the upstream close time minus the client close time (``perf_counter``, one clock
on one machine). Goal: at most 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import platform
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
ARMS = ("direct", "kvswitch", "litellm", "sglang")
PATH = "/v1/chat/completions"
BLOCK = {1: 20, 4: 40, 64: 256}
TIMEOUT = 60.0
BOOT = 2000
CLOSE_GOAL_MS = 50.0


# ==================================================================================================
# The load generator (its own process: ``--load SPEC --load-out OUT``)
# ==================================================================================================
class _Response:
    """An HTTP/1.1 response read incrementally: status, chunked or sized body, SSE data lines;
    stamps each token-bearing chat-completions event with the time its bytes arrived."""

    def __init__(self, keep_body: bool = False) -> None:
        self.keep_body = keep_body
        self.skip = 0
        self.buf = b""
        self.head_done = False
        self.status = 0
        self.chunked = False
        self.length: int | None = None
        self.chunk_left = 0
        self.body_seen = 0
        self.lines = b""
        self.body_text = b""
        self.token_times: list[float] = []
        self.done = False
        self.any_byte = False

    def feed(self, data: bytes, now: float) -> None:
        self.any_byte = True
        self.buf += data
        if not self.head_done:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4 :]
            lines = head.split("\r\n")
            self.status = int(lines[0].split(" ", 2)[1])
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name, value = name.strip().lower(), value.strip()
                if name == "transfer-encoding" and "chunked" in value.lower():
                    self.chunked = True
                elif name == "content-length":
                    self.length = int(value)
            self.head_done = True
        if self.chunked:
            while self.buf:
                if self.chunk_left:  # inside a chunk's data
                    piece, self.buf = self.buf[: self.chunk_left], self.buf[self.chunk_left :]
                    self.chunk_left -= len(piece)
                    self.skip = 0 if self.chunk_left else 2  # its CRLF
                    self._body(piece, now)
                elif self.skip:
                    cut = min(self.skip, len(self.buf))
                    self.buf, self.skip = self.buf[cut:], self.skip - cut
                else:  # a chunk's size line
                    end = self.buf.find(b"\r\n")
                    if end < 0:
                        return
                    size = int(self.buf[:end].split(b";", 1)[0], 16)
                    self.buf = self.buf[end + 2 :]
                    if size == 0:
                        self.done = True
                        return
                    self.chunk_left = size
        else:
            piece, self.buf = self.buf, b""
            self._body(piece, now)
            if self.length is not None and self.body_seen >= self.length:
                self.done = True

    def _body(self, data: bytes, now: float) -> None:
        self.body_seen += len(data)
        if self.keep_body or self.status != 200:
            self.body_text += data if self.keep_body else data[: max(0, 2000 - len(self.body_text))]
            return
        self.lines += data
        *complete, self.lines = self.lines.split(b"\n")
        for line in complete:
            line = line.rstrip(b"\r")
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]" or (
                b'"content"' not in payload and b"reasoning" not in payload and b"tool_calls" not in payload
            ):
                continue
            with contextlib.suppress(ValueError):
                event = json.loads(payload)
                for choice in event.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if (
                        delta.get("content")
                        or delta.get("reasoning_content")
                        or delta.get("reasoning")
                        or delta.get("tool_calls")
                    ):
                        self.token_times.append(now)
                        break


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _request(port: int, body: bytes, auth: str) -> bytes:
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nAuthorization: Bearer {auth}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


async def _stream(port: int, request: bytes) -> dict[str, Any]:
    """One streamed request: ttft (s), itl (s), tokens, or error."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    _nodelay(writer)
    resp = _Response()
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
    if resp.status != 200:
        text = resp.body_text[:200].decode(errors="replace")
        return {"error": f"HTTP {resp.status or '(none)'}: {text}"}
    if not resp.token_times:
        return {"error": "the stream ended without a token"}
    times = resp.token_times
    return {
        "ttft": times[0] - t0,
        "itl": [b - a for a, b in itertools.pairwise(times)],
        "tokens": len(times),
        "total": times[-1] - t0,
    }


async def _block(port: int, request: bytes, n: int, concurrency: int) -> dict[str, Any]:
    """``n`` requests, ``concurrency`` at a time: their figures and the wall time."""
    left = n
    out: dict[str, Any] = {"ttft": [], "itl": [], "tokens": [], "errors": 0, "error": ""}

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            try:
                one = await asyncio.wait_for(_stream(port, request), TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - counted, never fatal: the report shows it
                one = {"error": f"{type(exc).__name__}: {exc}"}
            if "error" in one:
                out["errors"] += 1
                out["error"] = out["error"] or one["error"]
                continue
            out["ttft"].append(round(one["ttft"], 7))
            out["itl"].extend(round(x, 7) for x in one["itl"])
            out["tokens"].append(one["tokens"])

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))
    out["wall"] = time.perf_counter() - t0
    out["n"] = n - out["errors"]
    return out


async def _load(spec: dict[str, Any]) -> dict[str, Any]:
    rnd = random.Random(spec["seed"])
    arms: dict[str, int] = spec["arms"]
    body = json.dumps(spec["body"]).encode()
    requests = {name: _request(port, body, spec["auth"]) for name, port in arms.items()}
    c, block = spec["concurrency"], spec["block"]
    for name in arms:  # warm-up: first connections, lazy imports, caches
        await _block(arms[name], requests[name], spec["warmup"], c)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    names = list(arms)
    for _ in range(spec["rounds"]):
        rnd.shuffle(names)
        for name in names:
            rounds[name].append(await _block(arms[name], requests[name], block, c))
    return {"rounds": rounds}


async def _get_json(port: int, path: str) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    resp = _Response(keep_body=True)
    while not resp.done:
        more = await reader.read(65536)
        if not more:
            break
        resp.feed(more, 0.0)
    writer.close()
    return json.loads(resp.body_text)


async def _cancel_one(port: int, request: bytes, kind: str, close_at: float, after_tokens: int) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    _nodelay(writer)
    resp = _Response()
    t0 = time.perf_counter()
    writer.write(request)
    deadline = t0 + (close_at if kind == "prefill" else TIMEOUT)
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        try:
            data = await asyncio.wait_for(reader.read(65536), left)
        except TimeoutError:
            break
        if not data:
            return {"error": "the stream ended before the client closed it", "closed": None}
        resp.feed(data, time.perf_counter())
        if kind == "stream" and len(resp.token_times) >= after_tokens:
            break
    closed = time.perf_counter()
    writer.close()
    return {"closed": closed, "bytes_before": resp.any_byte, "tokens_before": len(resp.token_times)}


async def _cancel(spec: dict[str, Any]) -> dict[str, Any]:
    """Close through each arm mid-prefill and mid-stream; pair with the upstream's close stamps."""
    arms: dict[str, int] = spec["arms"]
    upstream: int = spec["upstream"]
    out: dict[str, list[dict[str, Any]]] = {}
    rnd = random.Random(spec["seed"])
    plan = [(name, kind, i) for name in arms for kind in ("prefill", "stream") for i in range(spec["trials"])]
    rnd.shuffle(plan)
    for name, kind, i in plan:
        tag = f"cancel-{name}-{kind}-{i}-{secrets.token_hex(3)}"
        body = dict(spec["body"], messages=[{"role": "user", "content": tag}])
        request = _request(arms[name], json.dumps(body).encode(), spec["auth"])
        got = await _cancel_one(arms[name], request, kind, spec["close_at"], spec["after_tokens"])
        stamp = None
        deadline = time.perf_counter() + spec["settle"]
        while time.perf_counter() < deadline:
            closes = await _get_json(upstream, "/closes")
            stamp = next((c for c in closes if c[0] == tag), None)
            if stamp is not None:
                break
            await asyncio.sleep(0.01)
        record = dict(got, kind=kind)
        if stamp is None:
            record["outcome"] = "no close stamp within the settle time"
        elif stamp[2] is not None and got.get("closed") is not None:
            record["outcome"] = "closed"
            record["gap"] = stamp[2] - got["closed"]
            record["tokens_upstream"] = stamp[4]
        else:
            record["outcome"] = "ran to the end"
            record["tokens_upstream"] = stamp[4]
        out.setdefault(name, []).append(record)
    return out


def load_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    result = asyncio.run(_cancel(spec) if spec.get("mode") == "cancel" else _load(spec))
    Path(out_path).write_text(json.dumps(result))
    return 0


def run_load(spec: dict[str, Any], work: Path) -> Any:
    """Run the load generator in a process of its own; its JSON answer."""
    spec_path, out_path = work / "load-spec.json", work / "load-out.json"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, str(HERE), "--load", str(spec_path), "--load-out", str(out_path)],
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the load generator failed (status {done.returncode})")
    return json.loads(out_path.read_text())


# ==================================================================================================
# Statistics
# ==================================================================================================
def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def interval(
    stat: Callable[[list[int]], float], n: int, rnd: random.Random, boot: int = BOOT
) -> tuple[float, float, float]:
    """(estimate, low, high): ``stat`` over all rounds and the 2.5/97.5 % bootstrap bounds
    (rounds resampled with replacement; ``stat`` takes the round indices)."""
    est = stat(list(range(n)))
    if n < 2:
        return est, math.nan, math.nan
    draws = sorted(v for v in (stat([rnd.randrange(n) for _ in range(n)]) for _ in range(boot)) if not math.isnan(v))
    if not draws:
        return est, math.nan, math.nan
    return est, draws[int(0.025 * (len(draws) - 1))], draws[math.ceil(0.975 * (len(draws) - 1))]


def _pooled(rounds: list[dict[str, Any]], idx: list[int], key: str) -> list[float]:
    out: list[float] = []
    for i in idx:
        out.extend(rounds[i][key])
    return out


class Pooled:
    """One arm's values of every round, for percentiles of a resample of rounds: with numpy a
    weighted quantile over one sorted array (fast enough for 60,000 gaps x 2,000 draws), else
    the pooled values sorted again."""

    def __init__(self, rounds: list[dict[str, Any]], key: str) -> None:
        self.rounds, self.key, self.n = rounds, key, len(rounds)
        try:
            import numpy as np
        except ImportError:
            self.np = None
            return
        self.np = np
        values = np.fromiter((v for r in rounds for v in r[key]), float)
        labels = np.fromiter((i for i, r in enumerate(rounds) for _ in r[key]), np.int64)
        order = np.argsort(values, kind="stable")
        self.values, self.labels = values[order], labels[order]

    def pct(self, idx: list[int], q: float) -> float:
        """``pct`` of the values of the rounds ``idx`` (a round drawn twice counts twice)."""
        if self.np is None:
            return pct(_pooled(self.rounds, idx, self.key), q)
        np = self.np
        counts = np.bincount(np.asarray(idx, dtype=np.int64), minlength=self.n)
        cum = np.cumsum(counts[self.labels])
        if not len(cum) or cum[-1] == 0:
            return math.nan
        k = min(int(cum[-1]) - 1, round(q * (int(cum[-1]) - 1)))
        return float(self.values[int(np.searchsorted(cum, k + 1))])


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def _rate(rounds: list[dict[str, Any]], idx: list[int]) -> float:
    wall = sum(rounds[i]["wall"] for i in idx)
    return sum(rounds[i]["n"] for i in idx) / wall if wall else math.nan


def _against(
    arm: list[dict[str, Any]],
    direct: list[dict[str, Any]],
    d50: list[float],
    rnd: random.Random,
    boot: int,
) -> dict[str, Any]:
    """An arm against direct, round by round: added TTFT p50/p99 (ms), throughput and ITL p99
    ratios."""
    n = len(direct)
    diffs = [_median(r["ttft"]) - d for r, d in zip(arm, d50, strict=True)]

    a_ttft, d_ttft = Pooled(arm, "ttft"), Pooled(direct, "ttft")
    a_itl, d_itl = Pooled(arm, "itl"), Pooled(direct, "itl")

    def added_p99(idx: list[int]) -> float:
        return (a_ttft.pct(idx, 0.99) - d_ttft.pct(idx, 0.99)) * 1e3

    def itl_ratio(idx: list[int]) -> float:
        return a_itl.pct(idx, 0.99) / d_itl.pct(idx, 0.99)

    return {
        "per_round_added_ms": [x * 1e3 for x in diffs],
        "added_p50_ms": interval(lambda idx: _median([diffs[i] for i in idx]) * 1e3, n, rnd, boot),
        "added_p99_ms": interval(added_p99, n, rnd, boot),
        "throughput_ratio": interval(lambda idx: _rate(arm, idx) / _rate(direct, idx), n, rnd, boot),
        "itl_p99_ratio": interval(itl_ratio, n, rnd, boot),
    }


def analyse(rounds: dict[str, list[dict[str, Any]]], rnd: random.Random, boot: int) -> dict[str, Any]:
    """Per arm: figures, and against direct: added TTFT p50/p99, throughput and ITL p99 ratios."""
    direct = rounds["direct"]
    n = len(direct)
    out: dict[str, Any] = {}
    d50 = [_median(r["ttft"]) for r in direct]
    for name, arm in rounds.items():
        ttft, itl = _pooled(arm, list(range(n)), "ttft"), _pooled(arm, list(range(n)), "itl")
        tokens = _pooled(arm, list(range(n)), "tokens")
        wall, done = sum(r["wall"] for r in arm), sum(r["n"] for r in arm)
        row: dict[str, Any] = {
            "requests": done,
            "errors": sum(r["errors"] for r in arm),
            "first_error": next((r["error"] for r in arm if r["error"]), ""),
            "ttft_p50_ms": _median(ttft) * 1e3,
            "ttft_p99_ms": pct(ttft, 0.99) * 1e3,
            "itl_p50_ms": _median(itl) * 1e3,
            "itl_p99_ms": pct(itl, 0.99) * 1e3,
            "req_per_s": done / wall if wall else math.nan,
            "tokens_mean": statistics.fmean(tokens) if tokens else math.nan,
        }
        if name != "direct":
            row.update(_against(arm, direct, d50, rnd, boot))
        out[name] = row
    # kvswitch against the other proxies, paired by round: added p50 minus a share of theirs
    if "kvswitch" in rounds:
        mine = out["kvswitch"]["per_round_added_ms"]
        for other, share in (("litellm", 0.2), ("sglang", 1.0)):
            if other in rounds and out[other]["errors"] < out[other]["requests"]:
                theirs = out[other]["per_round_added_ms"]
                out["kvswitch"][f"vs_{other}_ms"] = interval(
                    lambda idx, t=theirs, s=share: _median([mine[i] for i in idx]) - s * _median([t[i] for i in idx]),
                    n,
                    rnd,
                    boot,
                )
    return out


def goals(row: dict[str, Any], concurrency: int) -> list[tuple[str, str, tuple[float, float, float], bool]]:
    """(goal, shown figure, interval, met) for the kvswitch arm of one row."""
    gw = row.get("kvswitch")
    if gw is None or "added_p50_ms" not in gw:
        return []
    out = []
    limits = {1: (0.5, 2.0), 64: (2.0, 10.0)}.get(concurrency)
    if limits:
        out.append(
            (
                f"added TTFT p50 <= {limits[0]:g} ms",
                "ms",
                gw["added_p50_ms"],
                gw["added_p50_ms"][2] <= limits[0],
            )
        )
        out.append(
            (
                f"added TTFT p99 <= {limits[1]:g} ms",
                "ms",
                gw["added_p99_ms"],
                gw["added_p99_ms"][2] <= limits[1],
            )
        )
    if "vs_litellm_ms" in gw:
        iv = gw["vs_litellm_ms"]
        out.append(("added TTFT p50 <= 1/5 of LiteLLM's (kvswitch - LiteLLM/5 <= 0)", "ms", iv, iv[2] <= 0))
    if "vs_sglang_ms" in gw:
        iv = gw["vs_sglang_ms"]
        out.append(("added TTFT p50 <= SGLang router's (kvswitch - SGLang <= 0)", "ms", iv, iv[2] <= 0))
    tr = gw["throughput_ratio"]
    out.append(("throughput >= 0.95x direct", "x", tr, tr[1] >= 0.95))
    ir = gw["itl_p99_ratio"]
    out.append(("ITL p99 <= 1.1x direct", "x", ir, ir[2] <= 1.1))
    return out


# ==================================================================================================
# Printing
# ==================================================================================================
def _iv(iv: Sequence[float], unit: str) -> str:
    est, lo, hi = iv
    if unit == "x":
        return f"{est:.3f}x [{lo:.3f}, {hi:.3f}]"
    return f"{est:+.3f} [{lo:+.3f}, {hi:+.3f}]"


COLUMNS = (  # (heading, width, the cell of an arm's figures; "" for direct where it compares)
    ("TTFT p50", 9, lambda s: f"{s['ttft_p50_ms']:.3f}"),
    ("p99", 8, lambda s: f"{s['ttft_p99_ms']:.3f}"),
    ("added p50 ms [95% CI]", 26, lambda s: _iv(s["added_p50_ms"], "ms")),
    ("added p99 ms [95% CI]", 27, lambda s: _iv(s["added_p99_ms"], "ms")),
    ("req/s", 7, lambda s: f"{s['req_per_s']:.1f}"),
    ("x direct [95% CI]", 24, lambda s: _iv(s["throughput_ratio"], "x")),
    ("ITL p99", 8, lambda s: f"{s['itl_p99_ms']:.3f}"),
    ("x direct [95% CI]", 24, lambda s: _iv(s["itl_p99_ratio"], "x")),
    ("CPU ms/req", 10, lambda s: f"{s.get('cpu_ms_per_request', math.nan):.3f}"),
    ("tok", 5, lambda s: f"{s['tokens_mean']:.1f}"),
    ("err", 4, lambda s: f"{s['errors']}"),
)


def print_row(title: str, stats: dict[str, Any]) -> None:
    """One row's side-by-side table (TTFT and ITL in ms)."""
    print(f"\n{title}")
    print(f"  {'arm':<10}" + "".join(f" {head:>{width}}" for head, width, _ in COLUMNS))
    for name, s in stats.items():
        cells = []
        for _, width, cell in COLUMNS:
            try:
                cells.append(f" {cell(s):>{width}}")
            except KeyError:  # direct has nothing to compare with
                cells.append(f" {'':>{width}}")
        print(f"  {name:<10}" + "".join(cells))
        if s["errors"]:
            print(f"  {'':<10} first error: {s['first_error'][:160]}")
    base = stats["direct"]["tokens_mean"]
    for name, s in stats.items():
        if not math.isnan(base) and abs(s["tokens_mean"] - base) > 0.01 * base:
            print(
                f"  note: {name} streamed {s['tokens_mean']:.1f} token events per request, "
                f"direct {base:.1f}: its throughput and ITL are not like for like"
            )


def print_goals(row_goals: list[tuple[str, str, tuple[float, float, float], bool]]) -> None:
    for goal, unit, iv, met in row_goals:
        print(f"  goal  {goal:<66} {_iv(iv, unit):>28}  {'met' if met else 'NOT MET'}")


def cancel_summary(trials: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, records in trials.items():
        for kind in ("prefill", "stream"):
            rs = [r for r in records if r["kind"] == kind]
            gaps = sorted(r["gap"] * 1e3 for r in rs if r.get("outcome") == "closed")
            out[f"{name}/{kind}"] = {
                "trials": len(rs),
                "closed": len(gaps),
                "ran_to_end": sum(r.get("outcome") == "ran to the end" for r in rs),
                "other": sum(r.get("outcome") not in ("closed", "ran to the end") for r in rs),
                "bytes_before_close": sum(bool(r.get("bytes_before")) for r in rs),
                "median_ms": _median(gaps),
                "p95_ms": pct(gaps, 0.95),
                "max_ms": max(gaps) if gaps else math.nan,
                "tokens_upstream_median": _median([r["tokens_upstream"] for r in rs if "tokens_upstream" in r]),
            }
    return out


def print_cancel(summary: dict[str, Any], title: str) -> None:
    print(f"\n{title}")
    print(
        f"  {'arm / closed':<20} {'trials':>6} {'closed':>6} {'ran on':>6} {'median ms':>10}"
        f" {'p95 ms':>8} {'max ms':>8} {'tokens sent':>11}  goal <= {CLOSE_GOAL_MS:g} ms"
    )
    for key, s in summary.items():
        ok = s["closed"] == s["trials"] and s["max_ms"] <= CLOSE_GOAL_MS
        verdict = ("met" if ok else "NOT MET") if key.startswith("kvswitch/") else ""
        print(
            f"  {key:<20} {s['trials']:6d} {s['closed']:6d} {s['ran_to_end']:6d}"
            f" {s['median_ms']:10.2f} {s['p95_ms']:8.2f} {s['max_ms']:8.2f}"
            f" {s['tokens_upstream_median']:11.1f}  {verdict}"
        )


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as ``null`` (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# ==================================================================================================
# The run
# ==================================================================================================
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--requests",
        type=int,
        default=2000,
        help="requests per arm at concurrency 1 and 64 (half that at 4); at least 3 rounds",
    )
    ap.add_argument("--warmup", type=int, default=20, help="requests per arm before each row, not counted")
    ap.add_argument("--sse-concurrency", default="1,4,64")
    ap.add_argument("--llama-concurrency", default="1,4")
    ap.add_argument("--sse-ttft-ms", type=float, default=2.0)
    ap.add_argument("--sse-itl-ms", type=float, default=5.0)
    ap.add_argument("--sse-tokens", type=int, default=8)
    ap.add_argument("--llama-tokens", type=int, default=32)
    ap.add_argument("--cancel-trials", type=int, default=20, help="per arm and kind (0: no cancellation figure)")
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--no-sglang", action="store_true")
    ap.add_argument("--no-llama", action="store_true")
    ap.add_argument("--lab-router", action="store_true", help="add kvswitch's lab router as an arm")
    ap.add_argument("--bootstrap", type=int, default=BOOT)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    ap.add_argument("--keep-logs", action="store_true", help="keep the servers' logs (the folder is printed)")
    ap.add_argument("--load", help=argparse.SUPPRESS)
    ap.add_argument("--load-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.load:
        return load_main(args.load, args.load_out)
    if args.requests < 1 or args.cancel_trials < 0:
        ap.error("--requests must be at least 1 and --cancel-trials at least 0")
    try:
        sse_cs = [int(x) for x in args.sse_concurrency.split(",") if x]
        llama_cs = [int(x) for x in args.llama_concurrency.split(",") if x]
    except ValueError:
        ap.error("--sse-concurrency/--llama-concurrency take numbers separated by commas")

    import importlib.util

    import _gateway_arms as arms

    def say(text: str) -> None:
        print(f"· {text}", flush=True)

    litellm = sglang_py = None
    if not args.no_litellm:
        litellm = arms.ensure_litellm(say)
    if not args.no_sglang:
        sglang_py = arms.sglang_python(say)
    has_gateway = importlib.util.find_spec("kvswitch.gateway.server") is not None
    if not has_gateway:
        say("kvswitch gateway arm skipped: kvswitch.gateway.server is not there")
    llama_ok = not args.no_llama and importlib.util.find_spec("xllamacpp") is not None
    if not args.no_llama and not llama_ok:
        say("llama.cpp rows skipped: the lab packages are not installed (pip install -e '.[lab]')")

    token = secrets.token_urlsafe(24)
    rnd = random.Random(args.seed)
    report: dict[str, Any] = {"rows": [], "cancel": None}
    all_goals: list[tuple[str, int, str, tuple[float, float, float], bool]] = []
    keep = tempfile.mkdtemp(prefix="kvswitch-gw-bench-") if args.keep_logs else None
    with contextlib.ExitStack() as stack:
        work = (
            Path(keep) if keep else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kvswitch-gw-bench-")))
        )
        versions: dict[str, str] = {}

        def start_proxies(upstream: arms.Server, model: str, tag: str) -> dict[str, arms.Server]:
            """The upstream as ``direct`` and every proxy arm in front of it, started."""
            t0 = time.monotonic()
            servers = {"direct": upstream}
            root = upstream.root
            wanted: list[tuple[str, Callable[[], arms.Server]]] = []
            if has_gateway:
                wanted.append(("kvswitch", lambda: arms.start_gateway(work, root, token, tag)))
            if litellm is not None:
                wanted.append(("litellm", lambda: arms.start_litellm(work, litellm, root, model, tag)))
            if sglang_py is not None:
                wanted.append(("sglang", lambda: arms.start_sglang(work, sglang_py, root, tag)))
            if args.lab_router:
                wanted.append(("lab-router", lambda: arms.start_lab_router(work, root, tag)))
            for name, start in wanted:
                server = start()
                stack.callback(server.stop)
                servers[name] = server
                if server.version:
                    versions[name] = server.version
            say(f"{', '.join(servers)} up in {time.monotonic() - t0:.1f} s")
            return servers

        def run_rows(
            upstream: arms.Server,
            model: str,
            body: dict[str, Any],
            cs: list[int],
            label: str,
            tag: str,
        ) -> None:
            servers = start_proxies(upstream, model, tag)
            ports = {name: server.port for name, server in servers.items()}
            for c in cs:
                total = args.requests // 2 if 1 < c < 64 else args.requests
                block = BLOCK.get(c, max(20, 4 * c))
                if total < 3 * block:  # a short run: three rounds of smaller blocks
                    block = max(c, (total // 3) // c * c, 1)
                rounds = max(3, math.ceil(total / block))
                cpu_before = {name: arms.cpu_seconds(sv.pid) for name, sv in servers.items()}
                load_before = os.getloadavg()
                t0 = time.monotonic()
                say(f"{label}, concurrency {c}: {rounds} rounds x {block} requests x {len(ports)}")
                data = run_load(
                    {
                        "arms": ports,
                        "body": body,
                        "auth": token,
                        "concurrency": c,
                        "block": block,
                        "rounds": rounds,
                        "warmup": args.warmup,
                        "seed": rnd.randrange(1 << 30),
                    },
                    work,
                )
                load_after = os.getloadavg()
                stats = analyse(data["rounds"], rnd, args.bootstrap)
                served = args.warmup + rounds * block
                for name, sv in servers.items():  # the upstream served every arm's requests
                    spent = arms.cpu_seconds(sv.pid) - cpu_before[name]
                    share = served * (len(servers) if name == "direct" else 1)
                    stats[name]["cpu_ms_per_request"] = spent * 1e3 / share
                title = (
                    f"{label} · concurrency {c} · {rounds} rounds x {block} requests per arm"
                    f" · {time.monotonic() - t0:.0f} s"
                    f" · load avg {load_before[0]:.2f} -> {load_after[0]:.2f}"
                )
                print_row(title, stats)
                row_goals = goals(stats, c)
                print_goals(row_goals)
                for g in row_goals:
                    all_goals.append((label.split(" (")[0], c, g[0], g[2], g[3]))
                for s in stats.values():
                    s.pop("per_round_added_ms", None)
                report["rows"].append(
                    {
                        "upstream": label,
                        "concurrency": c,
                        "rounds": rounds,
                        "block": block,
                        "loadavg": [load_before[0], load_after[0]],
                        "arms": stats,
                        "goals": [{"goal": g[0], "interval": g[2], "met": g[3]} for g in row_goals],
                    }
                )

        # 1. the deterministic SSE server
        if sse_cs:
            sse = arms.start_sse(work, ttft_ms=args.sse_ttft_ms, itl_ms=args.sse_itl_ms, tokens=args.sse_tokens)
            stack.callback(sse.stop)
            body = {
                "model": "test-model",
                "stream": True,
                "max_tokens": args.sse_tokens,
                "messages": [{"role": "user", "content": "hello"}],
            }
            run_rows(
                sse,
                "test-model",
                body,
                sse_cs,
                f"SSE server (TTFT {args.sse_ttft_ms:g} ms, ITL {args.sse_itl_ms:g} ms, {args.sse_tokens} tokens)",
                "sse",
            )
        # 2. llama.cpp, the tiny model
        if llama_ok and llama_cs:
            llama = arms.start_llama(work, parallel=max(4, max(llama_cs)), alias="tiny")
            stack.callback(llama.stop)
            versions["xllamacpp"] = llama.version
            prompt = " ".join(["the quick brown fox jumps over the lazy dog"] * 6)
            body = {
                "model": "tiny",
                "stream": True,
                "max_tokens": args.llama_tokens,
                "temperature": 0,
                "messages": [{"role": "user", "content": prompt}],
            }
            run_rows(
                llama,
                "tiny",
                body,
                llama_cs,
                f"llama.cpp (tiny model, {args.llama_tokens} tokens)",
                "llama",
            )
        # 3. cancellation
        if args.cancel_trials:
            watch = arms.start_sse(work, ttft_ms=100, itl_ms=10, tokens=50, scenario="close-watch", name="sse-close")
            stack.callback(watch.stop)
            ports = {n: sv.port for n, sv in start_proxies(watch, "test-model", "cancel").items()}
            say(f"cancellation: {args.cancel_trials} trials per arm and kind")
            trials = run_load(
                {
                    "mode": "cancel",
                    "arms": ports,
                    "upstream": watch.port,
                    "auth": token,
                    "body": {"model": "test-model", "stream": True, "max_tokens": 50},
                    "trials": args.cancel_trials,
                    "close_at": 0.05,
                    "after_tokens": 3,
                    "settle": 2.0,
                    "seed": rnd.randrange(1 << 30),
                },
                work,
            )
            summary = cancel_summary(trials)
            print_cancel(
                summary,
                "Cancellation: client close -> upstream connection closed (upstream: nothing for"
                " 100 ms, then 50 tokens 10 ms apart; closed at 50 ms or at the 3rd token)",
            )
            report["cancel"] = summary
            if "kvswitch/prefill" in summary:
                for kind in ("prefill", "stream"):
                    s = summary[f"kvswitch/{kind}"]
                    met = s["closed"] == s["trials"] and s["max_ms"] <= CLOSE_GOAL_MS
                    all_goals.append(
                        (
                            "cancellation",
                            1,
                            f"close mid-{kind} -> upstream closed, max <= 50 ms",
                            (s["median_ms"], s["p95_ms"], s["max_ms"]),
                            met,
                        )
                    )

    print(f"\nkvswitch gateway goals ({sum(g[4] for g in all_goals)} of {len(all_goals)} met):")
    for upstream, c, goal, iv, met in all_goals:
        shown = (
            f"median {iv[0]:.2f}, p95 {iv[1]:.2f}, max {iv[2]:.2f} ms"
            if upstream == "cancellation"
            else _iv(iv, "x" if "x direct" in goal else "ms")
        )
        where = upstream if upstream == "cancellation" else f"{upstream} c={c}"
        print(f"  {'met    ' if met else 'NOT MET'}  {where}: {goal} — {shown}")
    versions_line = " · ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    print(f"\npython {platform.python_version()} · {os.cpu_count()} CPUs · {versions_line}")
    if keep:
        print(f"logs: {keep}")
    if args.json:
        report.update(
            versions=versions,
            python=platform.python_version(),
            cpus=os.cpu_count(),
            argv=sys.argv[1:],
            goals=[
                {"upstream": u, "concurrency": c, "goal": g, "figure": iv, "met": m} for u, c, g, iv, m in all_goals
            ],
        )
        Path(args.json).write_text(json.dumps(_finite(report), indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
