"""One first-token rule for the four APIs (issue 13, point 5), on the events the real APIs send.

The shapes are the documented stream events: OpenAI Chat Completions chunks (a role-only first
chunk, ``reasoning_content`` as DeepSeek/llama.cpp/vLLM send it, ``tool_calls``), legacy
Completions ``choices[].text``, the Responses API's typed events, and Anthropic Messages'
``message_start`` … ``message_stop`` with ``event:`` names. :class:`StreamClock` is fed bytes
the way a socket delivers them (split anywhere, CRLF), with explicit read times.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvswitch.first_token import StreamClock, carries_token, error_message


def chat(delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        **extra,
    }


TOOL_CALL = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": ""},
}

# (name, SSE event name, payload, carries a token)
EVENTS: list[tuple[str, str, dict[str, Any], bool]] = [
    # -- Chat Completions ---------------------------------------------------------------------
    ("chat role-only first chunk", "message", chat({"role": "assistant", "content": ""}), False),
    ("chat role with null content", "message", chat({"role": "assistant", "content": None}), False),
    ("chat content", "message", chat({"content": "Hello"}), True),
    ("chat reasoning_content", "message", chat({"reasoning_content": "Let me"}), True),
    ("chat reasoning", "message", chat({"reasoning": "Let me"}), True),
    ("chat empty reasoning_content", "message", chat({"reasoning_content": ""}), False),
    ("chat tool_calls", "message", chat({"tool_calls": [TOOL_CALL]}), True),
    ("chat empty tool_calls", "message", chat({"tool_calls": []}), False),
    (
        "chat finish chunk",
        "message",
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        False,
    ),
    (
        "chat usage chunk",
        "message",
        {
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        },
        False,
    ),
    (
        "llama.cpp prompt progress",
        "message",
        chat(
            {"role": "assistant", "content": None},
            prompt_progress={"total": 3027, "cache": 0, "processed": 512, "time_ms": 600},
        ),
        False,
    ),
    # -- Completions ----------------------------------------------------------------------------
    (
        "completions text",
        "message",
        {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": "m",
            "choices": [{"text": " world", "index": 0, "logprobs": None, "finish_reason": None}],
        },
        True,
    ),
    (
        "completions empty text",
        "message",
        {
            "object": "text_completion",
            "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "length"}],
        },
        False,
    ),
    # -- Responses ------------------------------------------------------------------------------
    (
        "responses created",
        "response.created",
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "usage": None},
        },
        False,
    ),
    (
        "responses output_item.added",
        "response.output_item.added",
        {
            "type": "response.output_item.added",
            "sequence_number": 2,
            "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        },
        False,
    ),
    (
        "responses content_part.added",
        "response.content_part.added",
        {
            "type": "response.content_part.added",
            "sequence_number": 3,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        False,
    ),
    (
        "responses output_text.delta",
        "response.output_text.delta",
        {
            "type": "response.output_text.delta",
            "sequence_number": 4,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hi",
            "logprobs": [],
        },
        True,
    ),
    (
        "responses empty output_text.delta",
        "response.output_text.delta",
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": ""},
        False,
    ),
    (
        "responses function_call_arguments.delta",
        "response.function_call_arguments.delta",
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 5,
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"loc',
        },
        True,
    ),
    (
        "responses reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": "Thinking",
        },
        True,
    ),
    (
        "responses output_text.done",
        "response.output_text.done",
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": "Hi there",
        },
        False,
    ),
    (
        "responses completed",
        "response.completed",
        {
            "type": "response.completed",
            "sequence_number": 9,
            "response": {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
            },
        },
        False,
    ),
    # -- Anthropic Messages ---------------------------------------------------------------------
    (
        "anthropic message_start",
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 25, "output_tokens": 1},
            },
        },
        False,
    ),
    (
        "anthropic content_block_start text",
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        False,
    ),
    (
        "anthropic content_block_start tool_use",
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
        },
        False,
    ),
    ("anthropic ping", "ping", {"type": "ping"}, False),
    (
        "anthropic text_delta",
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
        True,
    ),
    (
        "anthropic thinking_delta",
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me solve"}},
        True,
    ),
    (
        "anthropic input_json_delta",
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"location": "San'},
        },
        True,
    ),
    (
        "anthropic empty input_json_delta",
        "content_block_delta",
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
        False,
    ),
    (
        "anthropic signature_delta",
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
        },
        False,
    ),
    ("anthropic content_block_stop", "content_block_stop", {"type": "content_block_stop", "index": 0}, False),
    (
        "anthropic message_delta",
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 15},
        },
        False,
    ),
    ("anthropic message_stop", "message_stop", {"type": "message_stop"}, False),
]


@pytest.mark.parametrize(("event", "payload", "token"), [e[1:] for e in EVENTS], ids=[e[0] for e in EVENTS])
def test_which_events_carry_a_token(event: str, payload: dict[str, Any], token: bool) -> None:
    assert carries_token(payload, event) is token
    assert error_message(payload, event) is None


@pytest.mark.parametrize(
    "payload", [None, [], "text", 3, {"choices": "x"}, {"choices": [1]}, {"type": "content_block_delta", "delta": "x"}]
)
def test_odd_payloads_carry_no_token(payload: object) -> None:
    assert carries_token(payload) is False


ERRORS: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "openai error object",
        "message",
        {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}},
        "boom",
    ),
    (
        "llama.cpp error",
        "message",
        {"error": {"code": 500, "message": "slot unavailable", "type": "server_error"}},
        "slot unavailable",
    ),
    ("object error", "message", {"object": "error", "message": "bad", "type": "x"}, "bad"),
    (
        "responses failed",
        "response.failed",
        {
            "type": "response.failed",
            "sequence_number": 3,
            "response": {
                "id": "resp_1",
                "status": "failed",
                "error": {"code": "server_error", "message": "The model failed"},
            },
        },
        "The model failed",
    ),
    (
        "responses error event",
        "error",
        {
            "type": "error",
            "sequence_number": 1,
            "code": "rate_limit_exceeded",
            "message": "Too many requests",
            "param": None,
        },
        "Too many requests",
    ),
    (
        "anthropic error event",
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        "Overloaded",
    ),
]


@pytest.mark.parametrize(("event", "payload", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_in_band_errors_of_each_api(event: str, payload: dict[str, Any], message: str) -> None:
    assert error_message(payload, event) == message
    assert carries_token(payload, event) is False


# -- StreamClock --------------------------------------------------------------------------------
def frame(payload: object, event: str | None = None, *, eol: bytes = b"\n") -> bytes:
    head = b"event: " + event.encode() + eol if event else b""
    return head + b"data: " + json.dumps(payload).encode() + eol + eol


def test_a_role_only_first_chunk_is_no_first_token() -> None:
    clock = StreamClock(10.0)
    clock.feed(frame(chat({"role": "assistant", "content": ""})), now=10.5)
    assert clock.first_byte == 10.5 and clock.first_token is None and clock.ttft is None
    clock.feed(frame(chat({"content": "Hi"})), now=11.25)
    assert clock.first_token == 11.25 and clock.ttft == pytest.approx(1.25)
    assert clock.tokens == 1


def test_an_event_split_anywhere_counts_when_its_last_byte_arrives() -> None:
    data = frame(chat({"content": "Hi"}))
    for cut in range(1, len(data)):
        clock = StreamClock(0.0)
        clock.feed(data[:cut], now=1.0)
        assert clock.first_token is None, cut
        clock.feed(data[cut:], now=2.0)
        assert clock.first_token == 2.0, cut


def test_crlf_and_a_cr_lf_pair_split_between_reads() -> None:
    data = frame(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        "content_block_delta",
        eol=b"\r\n",
    )
    clock = StreamClock(0.0)
    cut = data.index(b"\r\n\r\n") + 1  # between the CR and the LF
    clock.feed(data[:cut], now=1.0)
    clock.feed(data[cut:], now=2.0)
    assert clock.first_token == 2.0 and clock.broken is None


def test_itl_gaps_between_token_reads() -> None:
    clock = StreamClock(0.0)
    clock.feed(frame(chat({"role": "assistant"})), now=0.5)
    for at, text in ((1.0, "a"), (1.5, "b"), (2.25, "c")):
        clock.feed(frame(chat({"content": text})), now=at)
    clock.feed(b"data: [DONE]\n\n", now=3.0)
    assert clock.tokens == 3 and clock.itl == pytest.approx([0.5, 0.75])
    # several token events in one read share its time: one event, no zero gap
    clock.feed(frame(chat({"content": "d"})) + frame(chat({"content": "e"})), now=4.0)
    assert clock.tokens == 4 and clock.itl == pytest.approx([0.5, 0.75, 1.75])


def test_responses_stream_with_usage_and_no_token_before_the_delta() -> None:
    clock = StreamClock(0.0)
    for at, (_, event, payload, _) in enumerate(
        e for e in EVENTS if e[0].startswith("responses") and "empty" not in e[0]
    ):
        clock.feed(frame(payload, event), now=float(at))
    assert clock.first_token == 3.0  # created, output_item.added, content_part.added, delta
    assert clock.usage == {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
    assert clock.error is None


def test_anthropic_stream_usage_from_start_and_delta() -> None:
    clock = StreamClock(0.0)
    stream = b"".join(frame(p, ev) for name, ev, p, _ in EVENTS if name.startswith("anthropic"))
    clock.feed(stream, now=1.0)
    clock.close()
    assert clock.first_token == 1.0 and clock.error is None
    assert clock.usage == {"input_tokens": 25, "output_tokens": 15}


def test_a_line_over_the_bound_breaks_the_parser_not_the_caller() -> None:
    clock = StreamClock(0.0, max_line=64)
    clock.feed(b"data: " + b"x" * 200, now=1.0)
    assert clock.broken is not None and clock.first_token is None
    clock.feed(frame(chat({"content": "late"})), now=2.0)  # timing has stopped, no exception
    clock.close()
    assert clock.first_token is None and clock.tokens == 0


def test_an_in_band_error_is_kept_and_is_no_token() -> None:
    clock = StreamClock(0.0)
    clock.feed(frame(chat({"content": "Hi"})), now=1.0)
    clock.feed(frame({"error": {"message": "context overflow", "type": "server_error"}}), now=2.0)
    clock.feed(frame({"error": {"message": "second"}}), now=3.0)
    assert clock.error == "context overflow" and clock.tokens == 1


def test_anthropic_error_event() -> None:
    clock = StreamClock(0.0)
    clock.feed(
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
        now=1.0,
    )
    assert clock.error == "Overloaded" and clock.first_token is None


def test_llama_cpp_timings_and_nan() -> None:
    clock = StreamClock(0.0)
    clock.feed(
        b'data: {"choices": [{"index": 0, "delta": {"content": "x"}}], '
        b'"timings": {"prompt_n": 3, "cache_n": 40, "prompt_ms": NaN}}\n\n',
        now=1.0,
    )
    assert clock.timings == {"prompt_n": 3, "cache_n": 40, "prompt_ms": None}
    assert clock.first_token == 1.0


def test_an_unfinished_last_event_is_dropped_at_close() -> None:
    clock = StreamClock(0.0)
    clock.feed(b'data: {"choices": [{"index": 0, "delta": {"content": "x"}}]}\n', now=1.0)
    clock.close()
    assert clock.first_token is None


def test_whole_bodies() -> None:
    ok = StreamClock(0.0)
    ok.whole(
        json.dumps(
            {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
                "usage": {"prompt_tokens": 4, "completion_tokens": 1},
                "timings": {"prompt_n": 4},
            }
        ).encode(),
        now=2.0,
    )
    assert ok.first_token == 2.0 and ok.ttft == 2.0 and ok.tokens == 1
    assert ok.usage == {"prompt_tokens": 4, "completion_tokens": 1}
    assert ok.timings == {"prompt_n": 4}
    anthropic = StreamClock(0.0)
    anthropic.whole(
        json.dumps(
            {
                "type": "message",
                "content": [{"type": "text", "text": "Hi"}],
                "usage": {"input_tokens": 3, "output_tokens": 1},
            }
        ).encode(),
        now=1.0,
    )
    assert anthropic.first_token == 1.0 and anthropic.usage == {"input_tokens": 3, "output_tokens": 1}
    failed = StreamClock(0.0)
    failed.whole(b'{"error": {"message": "no such model", "type": "invalid_request_error"}}', now=1.0)
    assert failed.error == "no such model" and failed.first_token is None
    junk = StreamClock(0.0)
    junk.whole(b"<html>oops</html>", now=1.0)
    assert junk.error is None and junk.usage is None and junk.first_byte == 1.0


# -- the LF fast path agrees with the full parser -----------------------------------------------------
_MIXED = (
    b": keep-alive\n\n"
    b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
    b'event: message\ndata: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
    b'data:{"choices":[{"delta":{"reasoning_content":"hm"}}]}\n\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n'
    b'data: "delta":{"type":"text_delta","text":"x"}}\n\n'
    b'data: {"type":"response.output_text.delta","delta":"y"}\n\n'
    b'data: {"error":{"message":"late"}}\n\n'
    b"data: [DONE]\n\n"
    b'data: {"choices":[{"delta":{"content":"never dispatched"}}]}'
)


@pytest.mark.parametrize("cut", range(0, len(_MIXED), 7))
def test_the_fast_path_agrees_with_the_full_parser_at_every_cut(cut: int) -> None:
    fast, full = StreamClock(0.0), StreamClock(0.0)
    full._fast = False  # the WHATWG parser from the start
    for clock in (fast, full):
        clock.feed(_MIXED[:cut], 1.0)
        clock.feed(_MIXED[cut:], 2.0)
        clock.close()
    assert fast._fast  # no CR, no BOM: it stayed on the fast path
    assert (fast.tokens, fast.first_token, fast.itl, fast.error) == (
        full.tokens,
        full.first_token,
        full.itl,
        full.error,
    )
    assert full.tokens in (1, 2) and full.error == "late"


def test_a_cr_hands_the_rest_to_the_full_parser_mid_event() -> None:
    clock = StreamClock(0.0)
    clock.feed(b'data: {"choices":[{"delta":{"con', 1.0)
    clock.feed(b'tent":"a"}}]}\r\n\r\ndata: {"choices":[{"delta":{"content":"b"}}]}\r\n\r\n', 2.0)
    assert not clock._fast and clock.tokens == 1 and clock.first_token == 2.0
