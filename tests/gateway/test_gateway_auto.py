"""The ``auto`` route through a running gateway: two recording upstreams show where each request
went, the reply header says why, and the decisions counter matches."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from kvswitch.gateway.server import REPLY_HEADER, Gateway
from kvswitch.models.kvswitch_config import AutoRoute
from tests.gateway.upstreams import Reply, Upstream, exchange, gateway, json_answer, request

ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": "test-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}
LOW = AutoRoute(split_from_tokens=200, busy_in_flight=8, busy_split_from_tokens=100)
"""Thresholds in reach of small test bodies: 200 new tokens ≈ 800 characters."""


def turn(system: str, first: str, later: list[str]) -> bytes:
    messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": first}]
    for i, text in enumerate(later):
        messages += [{"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": text}]
    return json.dumps({"model": "test-model", "messages": messages}).encode()


def decisions(gw: Gateway) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for metric in gw.metrics.decisions.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                key = (sample.labels["requested"], sample.labels["served"], sample.labels["reason"])
                out[key] = sample.value
    return out


def run(script: Any) -> Any:
    async def go() -> Any:
        async with (
            Upstream(json_answer(200, ANSWER)) as merged,
            Upstream(json_answer(200, ANSWER)) as split,
            gateway(merged.url, split.url, auto=LOW) as gw,
        ):
            return await script(gw, merged, split)

    return asyncio.run(go())


def test_twenty_turns_crossing_the_threshold_both_ways_flip_at_most_once() -> None:
    # turns add short, then long, then short, then long text: the rule alone would flip four times
    sizes = [10] * 5 + [1200] * 3 + [10] * 6 + [1200] * 2 + [10] * 4
    later: list[str] = []

    async def script(gw: Gateway, merged: Upstream, split: Upstream) -> list[Any]:
        replies: list[Any] = []
        for size in sizes:
            body = turn("you are terse", "hello", later)
            replies.append(await exchange(gw.port, request("/auto/v1/chat/completions", body=body)))
            later.append("word " * (size // 5))
        return [*replies, decisions(gw), len(merged.seen), len(split.seen)]

    *replies, counts, to_merged, to_split = run(script)
    modes = [str(r.header(REPLY_HEADER)).split(";")[0] for r in replies]
    assert all(r.status == 200 for r in replies)
    flips = sum(1 for a, b in itertools.pairwise(modes) if a != b)
    assert flips == 1 and modes[0] == "merged" and modes[-1] == "split", modes
    heads = [str(r.header(REPLY_HEADER)) for r in replies]
    assert all("reason=auto; why=" in h for h in heads)
    # the first turn is counted from its characters, later ones from the replies' own usage
    assert heads[0].endswith("est=chars/4") and heads[-1].endswith("est=usage"), heads
    assert sum(counts.values()) == len(sizes)
    assert sum(v for (asked, served, _), v in counts.items() if asked == "auto" and served == "split") == to_split
    assert sum(v for (asked, served, _), v in counts.items() if asked == "auto" and served == "merged") == to_merged
    assert counts.get(("auto", "split", "sticky"), 0) >= 1  # short turns kept on split


def test_two_conversations_are_routed_independently_and_a_path_or_header_still_overrides() -> None:
    async def script(gw: Gateway, merged: Upstream, split: Upstream) -> list[str]:
        short = turn("a", "short one", [])
        long = turn("b", "long one " + "word " * 400, [])
        heads = []
        for target, body, extra in (
            ("/auto/v1/chat/completions", short, ""),
            ("/auto/v1/chat/completions", long, ""),
            ("/v1/chat/completions", long, "X-Cache-Mode: merged\r\n"),
            ("/split/v1/chat/completions", short, "X-Cache-Mode: auto\r\n"),
            ("/v1/chat/completions", long, "X-Cache-Mode: auto\r\n"),
        ):
            reply = await exchange(gw.port, request(target, body=body, extra=extra))
            heads.append(str(reply.header(REPLY_HEADER)))
        return heads

    heads = run(script)
    assert heads[0].startswith("merged; reason=auto; why=short")
    assert heads[1].startswith("split; reason=auto; why=new-tokens")
    assert heads[2] == "merged; reason=header"
    assert heads[3] == "split; reason=path"
    assert heads[4].startswith("split; reason=auto")  # the long conversation stays split


def test_default_route_auto_decides_requests_that_ask_nothing_and_a_switch_resets() -> None:
    async def go() -> tuple[list[str], dict[str, Any]]:
        async with (
            Upstream(json_answer(200, ANSWER)) as merged,
            Upstream(json_answer(200, ANSWER)) as split,
            gateway(merged.url, split.url, auto=LOW, default_route="auto") as gw,
        ):
            heads = []
            body = turn("c", "long " + "word " * 400, [])
            heads.append(
                str((await exchange(gw.port, request("/v1/chat/completions", body=body))).header(REPLY_HEADER))
            )
            short = turn("c", "long " + "word " * 400, ["a short follow-up"])
            heads.append(
                str((await exchange(gw.port, request("/v1/chat/completions", body=short))).header(REPLY_HEADER))
            )
            gw.set_mode("merged")  # a switch: the conversation decides again
            third = turn("c", "long " + "word " * 400, ["a short follow-up", "and another"])
            heads.append(
                str((await exchange(gw.port, request("/v1/chat/completions", body=third))).header(REPLY_HEADER))
            )
            return heads, gw.status()

    heads, status = asyncio.run(go())
    assert heads[0].startswith("split; reason=auto; why=new-tokens")
    assert heads[1].startswith("split; reason=auto; why=sticky")
    assert heads[2].startswith("merged; reason=auto; why=short")
    assert status["route"] == "auto"


def test_a_bad_route_header_names_the_three_choices() -> None:
    async def script(gw: Gateway, merged: Upstream, split: Upstream) -> Reply:
        return await exchange(gw.port, request("/v1/chat/completions", extra="X-Cache-Mode: fast\r\n"))

    reply = run(script)
    assert reply.status == 400
    assert "merged, split or auto" in reply.json()["error"]["message"]
