"""The gateway's auto route: the per-request decider, and the profile's ``auto`` thresholds.

The bodies of the per-API tests are the bytes the official ``openai`` and ``anthropic`` SDKs
send (captured by an in-memory transport), and the usage they report back is the SDKs' own
parse of a reply, so the shapes are the real ones.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from kvswitch import advise
from kvswitch.gateway.auto import AutoDecider, Decision, prompt_tokens
from kvswitch.models import KvswitchConfig
from kvswitch.models.kvswitch_config import AutoRoute

SPLIT_FROM = advise.LONG_PROMPT
SYSTEM = "You are a careful coding agent. Read the files, then change them. " * 20  # ~1,300 chars


def text(chars: int, seed: int = 0) -> str:
    """``chars`` characters of varied text (each seed differs from the others)."""
    words = [f"w{seed}x{i}" for i in range(chars // 4 + 1)]
    return " ".join(words)[:chars]


def chat(*turns: str, system: str = SYSTEM) -> dict[str, Any]:
    """A Chat Completions body: the system prompt, then user and assistant turns alternating."""
    messages = [{"role": "system", "content": system}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)]
    return {"model": "m", "messages": messages}


def flips(modes: list[str]) -> int:
    """How often the mode changes along ``modes`` (the first one is not a change)."""
    return sum(a != b for a, b in itertools.pairwise(modes))


# -- the decision ---------------------------------------------------------------------------------
def test_defaults_come_from_advise() -> None:
    route = AutoRoute()
    assert route.split_from_tokens == advise.LONG_PROMPT
    assert route.busy_in_flight == advise.HIGH_CONCURRENCY
    assert route.busy_split_from_tokens == advise.SHORT_PROMPT < route.split_from_tokens
    assert route.sticky is True
    assert AutoDecider().settings == route


def test_first_request_counts_every_token_and_the_next_only_the_new_ones() -> None:
    decider = AutoDecider()
    first = decider.decide("chat", chat(text(9000)), 1)
    assert first.mode == "split" and first.reason == "new-tokens" and first.estimate == "chars/4"
    assert first.new_tokens >= (len(SYSTEM) + 9000) // 4
    again = decider.decide("chat", chat(text(9000), "ok", "thanks, next: rename it"), 1)
    assert again.conversation == first.conversation and len(again.conversation) == 12
    assert again.new_tokens <= math.ceil((len("ok") + len("thanks, next: rename it") + 20) / 4)
    assert again.mode == "split" and again.reason == "sticky"  # short, but the conversation went split
    assert again.mode_header() == f"split; reason=auto; why=sticky; new={again.new_tokens}; est={again.estimate}"


def test_twenty_turns_across_the_threshold_both_ways_flip_at_most_once() -> None:
    decider = AutoDecider()
    turns: list[str] = []
    decisions: list[Decision] = []
    sizes = [300, 200, 400, 9000, 100, 200, 12000, 50, 300, 9500, 80, 100, 150, 8800, 90, 60, 10000, 70, 40, 9000]
    for n, size in enumerate(sizes):
        turns += [text(size, n)] if not turns else ["(answer)", text(size, n)]
        decisions.append(decider.decide("chat", chat(*turns), 1))
    fresh = ["split" if d.reason in ("new-tokens", "load") else "merged" for d in decisions]
    assert flips(fresh) > 4  # the sizes do cross, often
    assert {d.conversation for d in decisions} == {decisions[0].conversation}
    assert [d.mode for d in decisions[:3]] == ["merged"] * 3 and decisions[3].reason == "new-tokens"
    assert flips([d.mode for d in decisions]) == 1
    assert all(d.mode == "split" for d in decisions[3:])
    assert {d.reason for d in decisions[3:]} == {"new-tokens", "sticky"}
    assert decider.tally == Counter(("auto", d.mode, d.reason) for d in decisions)
    assert sum(decider.tally.values()) == 20

    loose = AutoDecider(AutoRoute(sticky=False))
    turns = []
    free = []
    for n, size in enumerate(sizes):
        turns += [text(size, n)] if not turns else ["(answer)", text(size, n)]
        free.append(loose.decide("chat", chat(*turns), 1))
    assert flips([d.mode for d in free]) > 1  # stickiness is what holds it
    assert "sticky" not in {d.reason for d in free}


def test_two_conversations_are_routed_independently() -> None:
    decider = AutoDecider()
    a, b = [text(12000, 1)], [text(200, 2)]
    seen: dict[str, list[Decision]] = {"a": [], "b": []}
    for n in range(5):
        seen["a"].append(decider.decide("chat", chat(*a), 1))
        seen["b"].append(decider.decide("chat", chat(*b, system="You answer questions briefly."), 1))
        a += ["(answer)", text(100, 10 + n)]
        b += ["(answer)", text(100, 20 + n)]
    assert {d.mode for d in seen["a"]} == {"split"} and {d.mode for d in seen["b"]} == {"merged"}
    assert len({d.conversation for d in seen["a"]} | {d.conversation for d in seen["b"]}) == 2
    assert all(d.new_tokens < 100 for d in seen["b"][1:])
    assert len(decider) == 2


def test_the_same_opening_in_a_new_conversation_shares_its_prefix() -> None:
    decider = AutoDecider()
    decider.decide("chat", chat("explain this repo", "(answer)", text(400, 1)), 1)
    other = decider.decide("chat", chat("explain this repo", "(answer)", text(400, 2)), 1)
    assert other.new_tokens <= math.ceil((400 + 10) / 4)  # system, first question and answer were sent


@pytest.mark.parametrize(
    ("in_flight", "mode", "reason"),
    [
        (1, "merged", "short"),
        (advise.HIGH_CONCURRENCY - 1, "merged", "short"),
        (advise.HIGH_CONCURRENCY, "split", "load"),
        (60, "split", "load"),
    ],
)
def test_heavy_load_lowers_the_threshold(in_flight: int, mode: str, reason: str) -> None:
    body = chat(text(6000))  # ~1,850 new tokens: between the two thresholds
    decision = AutoDecider().decide("chat", body, in_flight)
    assert advise.SHORT_PROMPT <= decision.new_tokens < advise.LONG_PROMPT
    assert (decision.mode, decision.reason) == (mode, reason)


def test_a_short_prompt_stays_merged_under_load() -> None:
    decision = AutoDecider().decide("chat", chat(text(1000)), 500)
    assert (decision.mode, decision.reason) == ("merged", "short")


def test_thresholds_are_the_settings() -> None:
    decider = AutoDecider(AutoRoute(split_from_tokens=100, busy_in_flight=2, busy_split_from_tokens=50))
    assert decider.decide("chat", chat(text(300), system="s"), 1).reason == "short"
    assert decider.decide("chat", chat(text(300, 1), system="s"), 2).reason == "load"
    assert decider.decide("chat", chat(text(500, 2), system="s"), 1).reason == "new-tokens"
    decider.configure(AutoRoute(split_from_tokens=10_000, busy_split_from_tokens=10_000))
    assert decider.decide("chat", chat(text(5000, 3), system="s"), 1).mode == "merged"


# -- usage against characters / 4 -------------------------------------------------------------------
def test_usage_calibrates_characters_to_tokens() -> None:
    import openai.types as ot

    def turns(decider: AutoDecider, usage: dict[str, Any] | None) -> Decision:
        first = decider.decide("chat", chat(text(4000)), 1)
        if usage is not None:
            assert decider.note_usage(first, usage)
        return decider.decide("chat", chat(text(4000), "(answer)", text(3000, 1)), 1)

    # a tokenizer that makes 1 token of 2 characters (code, or most non-Latin text)
    tokens = (len(SYSTEM) + 4000) // 2
    usage = ot.CompletionUsage(prompt_tokens=tokens, completion_tokens=5, total_tokens=tokens + 5)
    calibrated = turns(AutoDecider(), usage.model_dump())
    plain = turns(AutoDecider(), None)
    assert (calibrated.estimate, plain.estimate) == ("usage", "chars/4")
    assert 1500 <= calibrated.new_tokens <= 1510 and 752 <= plain.new_tokens <= 756
    assert calibrated.new_tokens == pytest.approx(2 * plain.new_tokens, abs=6)  # roles count too


def test_usage_of_a_request_overtaken_by_the_next_is_ignored() -> None:
    decider = AutoDecider()
    old = decider.decide("chat", chat(text(4000)), 1)
    decider.decide("chat", chat(text(4000), "(answer)", "more"), 1)
    assert not decider.note_usage(old, {"prompt_tokens": 99_999})
    assert decider.decide("chat", chat(text(4000), "(answer)", "more", "x", "y"), 1).estimate == "chars/4"
    unparsed = decider.decide("chat", b"{", 1)
    assert not decider.note_usage(unparsed, {"prompt_tokens": 10})


def test_a_tiny_prompt_does_not_calibrate() -> None:
    decider = AutoDecider()
    first = decider.decide("chat", chat("hi", system="s"), 1)
    assert decider.note_usage(first, {"prompt_tokens": 40})  # the chat template's tokens, mostly
    assert decider.decide("chat", chat("hi", "hello", text(4000), system="s"), 1).estimate == "chars/4"


def test_prompt_tokens_reads_each_apis_usage() -> None:
    import anthropic.types as at
    import openai.types as ot
    import openai.types.responses as rt

    chat_usage = ot.CompletionUsage(prompt_tokens=1200, completion_tokens=7, total_tokens=1207)
    fields = rt.response_usage.InputTokensDetails.model_fields
    details = {name: 0 for name, f in fields.items() if f.is_required()} | {"cached_tokens": 800}
    responses_usage = rt.ResponseUsage(
        input_tokens=900,
        output_tokens=5,
        total_tokens=905,
        input_tokens_details=details,
        output_tokens_details={"reasoning_tokens": 0},
    )
    anthropic_usage = at.Usage(
        input_tokens=12, output_tokens=3, cache_read_input_tokens=3000, cache_creation_input_tokens=200
    )
    assert prompt_tokens(chat_usage.model_dump()) == 1200
    assert prompt_tokens(responses_usage.model_dump()) == 900  # its input_tokens count the cached ones
    assert prompt_tokens(anthropic_usage.model_dump()) == 3212  # Anthropic's leave them out
    junk: Any
    for junk in (None, [], "12", {"prompt_tokens": True}, {"prompt_tokens": -4}, {"input_tokens": "9"}, {}):
        assert prompt_tokens(junk) is None


# -- memory ---------------------------------------------------------------------------------------------
def test_conversations_are_bounded_least_recently_used_first() -> None:
    decider = AutoDecider(max_conversations=3)
    bodies = [chat(text(800, n), system=f"system {n}") for n in range(5)]
    for body in bodies[:3]:
        decider.decide("chat", body, 1)
    decider.decide("chat", bodies[0], 1)  # 0 is now the most recent: 1 goes first
    for body in bodies[3:]:
        decider.decide("chat", body, 1)
    assert len(decider) == 3
    assert decider.decide("chat", bodies[0], 1).new_tokens == 0  # remembered
    assert decider.decide("chat", bodies[1], 1).new_tokens > 200  # forgotten: all new again
    assert len(decider) == 3


def test_stored_digests_are_bounded_too() -> None:
    decider = AutoDecider(max_digests=50)
    for n in range(10):
        decider.decide("chat", chat(*[text(20, n * 100 + i) for i in range(9)], system=f"s{n}"), 1)
    assert len(decider) == 5  # ten messages each: five conversations fit in fifty digests


# -- bodies it cannot read ------------------------------------------------------------------------------
def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


HOSTILE: list[tuple[str, Any]] = [
    ("chat", b""),
    ("chat", b"not json"),
    ("chat", b"[1, 2]"),
    ("chat", b"\xff\xfe\x00"),
    ("chat", b"[" * 100_000 + b"]" * 100_000),
    ("chat", '{"messages": 5}'),
    ("chat", {"messages": []}),
    ("chat", {"messages": "hi"}),
    ("chat", {"messages": [{"role": "user"}] * 20_000}),
    ("chat", {"messages": [{"role": "user", "content": ["x"] * 300_000}]}),
    ("chat", b'{"messages": [{"role": "user", "content": 1' + b"0" * 5000 + b"}]}"),
    ("messages", {"messages": None}),
    ("messages", {"system": "s"}),
    ("responses", {"input": 5}),
    ("responses", {"instructions": "s"}),
    ("completions", {"prompt": 5}),
    ("completions", {"prompt": []}),
    ("completions", {"prompt": [1, "a"]}),
    ("completions", {"prompt": [10**30]}),
    ("completions", {"prompt": [[1, 2], 3]}),
    ("completions", {"prompt": "x" * 30_000_000}),
    ("completions", {"prompt": list(range(300_000))}),
    ("other", {"messages": [{"role": "user", "content": "hi"}]}),
    ("chat", None),
    ("chat", 17),
]


@pytest.mark.parametrize(("api", "body"), HOSTILE, ids=[f"{api}-{n}" for n, (api, _) in enumerate(HOSTILE)])
def test_a_body_it_cannot_read_goes_merged(api: str, body: Any) -> None:
    decider = AutoDecider()
    decision = decider.decide(api, body, 50)
    assert (decision.mode, decision.reason, decision.conversation, decision.new_tokens) == ("merged", "unparsed", "", 0)
    assert decider.tally == Counter({("auto", "merged", "unparsed"): 1}) and len(decider) == 0


@pytest.mark.parametrize(
    "content",
    [
        {"a": [None, 1.5, True, {"b": {"c": ["d", 7]}}]},
        12,
        None,
        [[["deep"]]],
        _deep(5000),
        [{"type": "text", "text": "\ud800 lone surrogate"}],
        [{"text": {"text": ["x"]}}],
    ],
)
def test_odd_but_readable_content_never_raises(content: Any) -> None:
    decision = AutoDecider().decide("chat", {"messages": [{"role": 5, "content": content}, "junk", 3]}, 1)
    assert decision.mode == "merged" and decision.reason == "short" and len(decision.conversation) == 12


def test_images_weigh_nothing() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400_000}}
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}]}
    decision = AutoDecider().decide("chat", body, 1)
    assert decision.mode == "merged" and decision.new_tokens < 10


# -- reset, pinned conversations, token counts --------------------------------------------------------
def test_reset_lets_a_conversation_decide_again() -> None:
    decider = AutoDecider()
    turns = [text(10000)]
    assert decider.decide("chat", chat(*turns), 1).mode == "split"
    turns += ["(answer)", "short"]
    assert decider.decide("chat", chat(*turns), 1).reason == "sticky"
    decider.reset()
    turns += ["(answer)", "short again"]
    after = decider.decide("chat", chat(*turns), 1)
    assert (after.mode, after.reason) == ("merged", "short")
    assert after.new_tokens < 10  # what it had sent is still known


def test_a_token_count_is_decided_but_not_remembered() -> None:
    decider = AutoDecider()
    body = chat(text(9000))
    peek = decider.decide("messages", {"system": SYSTEM, "messages": body["messages"][1:]}, 1, record=False)
    assert peek.mode == "split" and len(decider) == 0 and not decider.tally
    assert decider.decide("chat", body, 1, requested="header").reason == "new-tokens"
    assert decider.tally == Counter({("header", "split", "new-tokens"): 1})


# -- each API's body shape, as the official SDKs send it -----------------------------------------------------
class Captured:
    """Requests an SDK sent, answered in memory with ``reply(body)``."""

    def __init__(self, reply: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.bodies: list[bytes] = []
        self.reply = reply

    def transport(self, http: Any = httpx) -> Any:
        """An in-memory HTTP client of ``http``'s kind (the anthropic SDK's is ``httpx2``)."""

        def answer(request: Any) -> Any:
            self.bodies.append(request.content)
            return http.Response(200, json=self.reply(json.loads(request.content)))

        return http.Client(transport=http.MockTransport(answer))


def _third(body: dict[str, Any]) -> int:
    """A prompt-token count for a reply: a third of the body's length (a stand-in tokenizer)."""
    return len(json.dumps(body)) // 3


@pytest.fixture
def openai_client() -> Iterator[tuple[Any, Captured]]:
    import openai

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        tokens = _third(body)
        if "input" in body:
            return {
                "id": f"resp_{len(captured.bodies)}",
                "object": "response",
                "created_at": 0,
                "model": "m",
                "status": "completed",
                "output": [],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {
                    "input_tokens": tokens,
                    "output_tokens": 1,
                    "total_tokens": tokens + 1,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
        if "prompt" in body:
            return {
                "id": "c",
                "object": "text_completion",
                "created": 0,
                "model": "m",
                "usage": usage,
                "choices": [{"index": 0, "text": "ok", "finish_reason": "stop", "logprobs": None}],
            }
        return {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "usage": usage,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        }

    captured = Captured(reply)
    with captured.transport() as http:
        yield openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9/v1", max_retries=0, http_client=http), captured


def test_chat_completions_bodies_keep_one_conversation(openai_client: tuple[Any, Captured]) -> None:
    client, captured = openai_client
    decider = AutoDecider()
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    decisions = []
    for n, size in enumerate([600, 9000, 300]):
        messages.append({"role": "user", "content": [{"type": "text", "text": text(size, n)}]})
        resp = client.chat.completions.create(model="m", messages=messages, tools=tools)
        decisions.append(decider.decide("chat", captured.bodies[-1], 1))
        decider.note_usage(decisions[-1], resp.usage.model_dump())
        messages.append({"role": "assistant", "content": "ok"})
    assert len({d.conversation for d in decisions}) == 1
    assert [d.mode for d in decisions] == ["merged", "split", "split"]
    assert [d.reason for d in decisions] == ["short", "new-tokens", "sticky"]
    assert [d.estimate for d in decisions] == ["chars/4", "usage", "usage"]
    assert decisions[2].new_tokens < decisions[1].new_tokens / 10  # only its own turn is new


def test_completions_bodies_keep_one_conversation(openai_client: tuple[Any, Captured]) -> None:
    client, captured = openai_client
    decider = AutoDecider(AutoRoute(sticky=False))
    prompt = SYSTEM + text(9000)
    decisions = []
    for n in range(3):
        client.completions.create(model="m", prompt=prompt)
        decisions.append(decider.decide("completions", captured.bodies[-1], 1))
        prompt += "ok\n" + text(400, n)
    assert len({d.conversation for d in decisions}) == 1
    assert decisions[0].new_tokens == math.ceil(len(SYSTEM + text(9000)) / 4) and decisions[0].mode == "split"
    assert all(d.new_tokens <= (403 + 2048) / 4 for d in decisions[1:])  # at most a block more than new
    assert [d.mode for d in decisions[1:]] == ["merged", "merged"]
    ids = AutoDecider().decide("completions", {"prompt": list(range(3000))}, 1)
    assert ids.new_tokens == 3000 and ids.mode == "split"  # token ids count one each


def test_responses_bodies_keep_one_conversation(openai_client: tuple[Any, Captured]) -> None:
    client, captured = openai_client
    decider = AutoDecider()
    items: list[dict[str, Any]] = []
    decisions = []
    for n in range(3):
        items.append({"role": "user", "content": [{"type": "input_text", "text": text(800, n)}]})
        client.responses.create(model="m", instructions=SYSTEM, input=items)
        decisions.append(decider.decide("responses", captured.bodies[-1], 1))
        items += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read", "arguments": '{"path": "a"}'},
            {"type": "function_call_output", "call_id": f"c{n}", "output": text(200, 50 + n)},
        ]
    assert len({d.conversation for d in decisions}) == 1
    assert all(d.new_tokens < 300 for d in decisions[1:])
    other = decider.decide("responses", {"instructions": "Another agent.", "input": items}, 1)
    assert other.conversation != decisions[0].conversation


def test_a_responses_chain_stays_where_its_state_is(openai_client: tuple[Any, Captured]) -> None:
    client, captured = openai_client
    decider = AutoDecider()
    resp = client.responses.create(model="m", instructions="Be brief.", input="hello")
    first = decider.decide("responses", captured.bodies[-1], 1)
    decider.note_usage(first, resp.usage.model_dump(), response_id=resp.id)
    assert first.mode == "merged"
    client.responses.create(model="m", instructions="Be brief.", previous_response_id=resp.id, input=text(12000))
    chained = decider.decide("responses", captured.bodies[-1], 1)
    assert chained.conversation == first.conversation
    assert chained.new_tokens >= 3000 and (chained.mode, chained.reason) == ("merged", "sticky")
    decider.reset()  # a mode switch does not move a conversation whose state the upstream holds
    assert decider.decide("responses", {"previous_response_id": resp.id, "input": "x"}, 1).mode == "merged"
    held = [decider.decide("responses", {"conversation": {"id": "conv_9"}, "input": text(n)}, 1) for n in (9000, 5)]
    assert [d.mode for d in held] == ["split", "split"] and held[0].conversation == held[1].conversation


def test_anthropic_messages_bodies_keep_one_conversation() -> None:
    import anthropic

    image_data = "A" * 300_000

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        raw = json.dumps(body)  # a third of the text, and 1,600 tokens an image
        tokens = (len(raw) - raw.count(image_data) * len(image_data)) // 3 + 1600 * raw.count(image_data)
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": tokens},
        }

    captured = Captured(reply)
    decider = AutoDecider()
    mark: Any = {"type": "ephemeral"}
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image_data}}
    turns: list[list[dict[str, Any]]] = [
        [{"type": "text", "text": "look at this"}, image],
        [{"type": "text", "text": text(9000, 1)}],
        [{"type": "text", "text": "thanks"}],
    ]
    messages: list[Any] = []
    decisions = []
    with captured.transport(httpx2) as http:
        client = anthropic.Anthropic(api_key="test", base_url="http://127.0.0.1:9", max_retries=0, http_client=http)
        for blocks in turns:
            for m in messages:  # Claude Code moves its cache breakpoint to the newest message
                for block in m["content"]:
                    block.pop("cache_control", None)
            messages.append({"role": "user", "content": [dict(b) for b in blocks]})
            messages[-1]["content"][-1]["cache_control"] = mark
            resp = client.messages.create(
                model="m",
                max_tokens=8,
                messages=messages,
                system=[{"type": "text", "text": SYSTEM, "cache_control": mark}],
            )
            decisions.append(decider.decide("messages", captured.bodies[-1], 1))
            decider.note_usage(decisions[-1], resp.usage.model_dump())
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    assert len({d.conversation for d in decisions}) == 1
    assert [d.mode for d in decisions] == ["merged", "split", "split"]  # the image weighs nothing
    assert decisions[0].new_tokens < (len(SYSTEM) + 100) / 4
    assert decisions[2].new_tokens < 20 and decisions[2].reason == "sticky"


# -- the profile's auto section -----------------------------------------------------------------------------
CONFIG = """version = 2
active_profile = "p"
[profiles.p]
base_url = "http://127.0.0.1:8000/v1"
model = "m"
key = "none"
"""


def test_a_config_with_or_without_the_auto_section_loads(tmp_path: Path) -> None:
    from kvswitch.config import read_config_text
    from kvswitch.loader import load

    plain = read_config_text(CONFIG, tmp_path / "kvswitch.toml")
    assert plain.model.profiles["p"].auto == AutoRoute()
    text_ = CONFIG + "[profiles.p.auto]\nsplit_from_tokens = 4096\nbusy_in_flight = 16\nsticky = false\n"
    own = read_config_text(text_, tmp_path / "kvswitch.toml").model.profiles["p"].auto
    assert (own.split_from_tokens, own.busy_in_flight, own.busy_split_from_tokens, own.sticky) == (
        4096,
        16,
        advise.SHORT_PROMPT,
        False,
    )
    path = tmp_path / "kvswitch.toml"
    path.write_text(text_)
    assert load(path).provider.model == "m"
    assert KvswitchConfig.model_validate({"profiles": {"p": {"base_url": "http://h", "model": "m"}}})


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ("split_from_tokens = 500\n", "busy_split_from_tokens (1000) is above split_from_tokens (500)"),
        ('split_from_tokens = "2000"\n', "KVS002"),
        ("busy_in_flight = 0\n", "KVS002"),
    ],
)
def test_a_bad_auto_section_is_refused_with_its_place(tmp_path: Path, table: str, words: str) -> None:
    from kvswitch.config import read_config_text
    from kvswitch.errors import ConfigValidationError

    with pytest.raises(ConfigValidationError) as info:
        read_config_text(CONFIG + "[profiles.p.auto]\n" + table, tmp_path / "kvswitch.toml")
    assert words in str(info.value)
    assert info.value.location is not None and info.value.location.line is not None


def test_the_committed_schema_knows_the_auto_section() -> None:
    import tomllib

    import jsonschema

    from tests.conftest import ROOT

    committed = (ROOT / "schemas" / "kvswitch-config.schema.json").read_text()
    validator = jsonschema.Draft202012Validator(json.loads(committed))
    validator.validate(tomllib.loads(CONFIG + "[profiles.p.auto]\nsplit_from_tokens = 4096\n"))
    errors = list(validator.iter_errors(tomllib.loads(CONFIG + "[profiles.p.auto]\nsticky = 1\n")))
    assert errors and "boolean" in errors[0].message
