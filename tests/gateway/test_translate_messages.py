"""Anthropic Messages carried over Chat Completions: the request (checked against the ``openai``
package's own request types), the whole answer (``anthropic.types.Message``) and the stream
(read by the ``anthropic`` SDK's own stream accumulation over an in-memory transport), the
refusals, the notes, and a real Claude Code request. One test runs a real llama.cpp stream
through the translator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
    completion_create_params,
)
from pydantic import TypeAdapter

from kvswitch.gateway.translate import UntranslatableError
from kvswitch.gateway.translate.messages import (
    HINTS,
    IMAGE_TOKENS,
    MessagesStream,
    MessagesTranslator,
    count_tokens,
)
from kvswitch.probe.sse import SSEParser
from tests.gateway.conftest import MODEL, Peers

FIXTURE = Path(__file__).parent.parent / "fixtures" / "translate" / "claude-code-messages.json"
T = MessagesTranslator()


# -- helpers ---------------------------------------------------------------------------------------
def _force(value: Any) -> None:
    """Consume pydantic's lazy iterators (``Iterable`` fields validate as they are read)."""
    if isinstance(value, dict):
        for item in value.values():
            _force(item)
    elif isinstance(value, list | tuple) or hasattr(value, "__next__"):
        for item in value:
            _force(item)


_ROLE_TYPES = {
    "system": ChatCompletionSystemMessageParam,
    "user": ChatCompletionUserMessageParam,
    "assistant": ChatCompletionAssistantMessageParam,
    "tool": ChatCompletionToolMessageParam,
}


_ADAPTERS: dict[bool, TypeAdapter[Any]] = {  # kept alive: the lazy iterators they hand out refer back to them
    True: TypeAdapter(completion_create_params.CompletionCreateParamsStreaming),
    False: TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming),
}


def _keys(typed: Any) -> set[str]:
    return set(typed.__required_keys__ | typed.__optional_keys__)


def assert_chat_request(body: dict[str, Any]) -> None:
    """``body`` is a valid Chat Completions request by the ``openai`` package's own types (plus
    ``top_k`` and an assistant's ``reasoning_content``, which the engines read)."""
    base = completion_create_params.CompletionCreateParamsBase
    assert set(body) <= _keys(base) | {"stream", "top_k"}, set(body) - _keys(base)
    _force(_ADAPTERS[bool(body.get("stream"))].validate_python(body))
    for message in body["messages"]:
        extra = {"reasoning_content"} if message["role"] == "assistant" else set()
        assert set(message) <= _keys(_ROLE_TYPES[message["role"]]) | extra, message
    json.dumps(body)  # plain JSON


def sdk_stream(data: bytes, **create: Any) -> anthropic.types.Message:
    """``data`` as an HTTP answer read by ``anthropic.Anthropic().messages.stream()``: the SDK's
    own event parsing and accumulation (no socket: an in-memory transport)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    args: dict[str, Any] = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **create}
    with client.messages.stream(**args) as stream:
        return stream.get_final_message()


def events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events in ``data``: (event name, parsed data)."""
    parsed = SSEParser().feed(data)
    return [(ev.event, json.loads(ev.data)) for ev in parsed]


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **choice: Any) -> str:
    """One Chat Completions stream chunk's data (``choice``: more fields of the choice)."""
    one: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish, **choice}
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "up", "choices": [one]})


def usage_chunk(prompt: int, completion: int, cached: int | None = None) -> str:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage})


def run(stream: MessagesStream, chunks: list[str]) -> bytes:
    return b"".join(stream.feed(c) for c in [*chunks, "[DONE]"]) + stream.finish()


def req(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    body.update(fields)
    return body


def refusal(body: dict[str, Any]) -> str:
    with pytest.raises(UntranslatableError) as info:
        T.request(body)
    return str(info.value)


# -- the real Claude Code request ------------------------------------------------------------------
def test_claude_codes_request_translates_to_a_valid_chat_request() -> None:
    body = json.loads(FIXTURE.read_text())
    done = T.request(body)
    chat = done.body
    assert_chat_request(chat)
    assert chat["model"] == body["model"] and chat["max_tokens"] == 32000
    assert chat["stream"] is True and chat["stream_options"] == {"include_usage": True}
    assert chat["reasoning_effort"] == "high"  # output_config.effort with adaptive thinking
    first = chat["messages"][0]
    assert first["role"] == "system"
    assert [p["text"] for p in first["content"]] == [b["text"] for b in body["system"]]  # exact
    # the system turn Claude Code puts among the messages stays where it was
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "system"]
    assert chat["messages"][2]["content"] == body["messages"][1]["content"][0]["text"]
    assert [p["text"] for p in chat["messages"][1]["content"]] == [b["text"] for b in body["messages"][0]["content"]]
    assert [t["function"]["name"] for t in chat["tools"]] == [t["name"] for t in body["tools"]]
    for tool, source in zip(chat["tools"], body["tools"], strict=True):
        assert tool["type"] == "function"
        assert tool["function"]["parameters"] is source["input_schema"]  # shared, not copied
        assert tool["function"]["description"] == source["description"]
    assert done.notes == [
        HINTS["context_management"],
        HINTS["cache_control"],
        "tools[].defer_loading: not carried (deferred tools are offered up front)",
        "thinking.display: not carried",
        "metadata.user_id: an id, not sent",
    ]
    assert "metadata" not in chat and "user" not in chat
    assert body == json.loads(FIXTURE.read_text())  # the client's body is left as it was


# -- the request -----------------------------------------------------------------------------------
def test_scalars_are_carried() -> None:
    chat = T.request(req(temperature=0.3, top_p=0.9, top_k=20, stop_sequences=["END", "##"], stream=False)).body
    assert_chat_request(chat)
    assert chat == {
        "model": "m",
        "max_tokens": 100,
        "temperature": 0.3,
        "top_p": 0.9,
        "top_k": 20,
        "stop": ["END", "##"],
        "stream": False,
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_system_as_a_string_and_as_blocks() -> None:
    chat = T.request(req(system="Be brief.")).body
    assert chat["messages"][0] == {"role": "system", "content": "Be brief."}
    done = T.request(
        req(
            system=[
                {"type": "text", "text": " a\n"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            ]
        )
    )
    assert done.body["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": " a\n"}, {"type": "text", "text": "b"}],
    }
    assert done.notes == ["cache_control: a caching hint, not carried"]
    one = T.request(req(system=[{"type": "text", "text": "only"}])).body
    assert one["messages"][0] == {"role": "system", "content": "only"}


def test_tool_results_come_before_the_users_own_content() -> None:
    body = req(
        messages=[
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"path": "é.txt"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "and then?"},
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a\nb"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_b",
                        "is_error": True,
                        "content": [{"type": "text", "text": "no such"}, {"type": "text", "text": "file"}],
                    },
                ],
            },
        ]
    )
    chat = T.request(body).body
    assert_chat_request(chat)
    assert chat["messages"][1] == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "toolu_a", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}},
            {"id": "toolu_b", "type": "function", "function": {"name": "Read", "arguments": '{"path": "é.txt"}'}},
        ],
    }
    assert chat["messages"][2:] == [
        {"role": "tool", "tool_call_id": "toolu_a", "content": "a\nb"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": "Error: no such\nfile"},
        {"role": "user", "content": "and then?"},
    ]


def test_a_turn_of_tool_results_alone_has_no_user_message_and_a_tool_reference_reads_as_text() -> None:
    chat = T.request(
        req(
            messages=[
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "tool_reference", "tool_name": "WebFetch"}],
                        }
                    ],
                },
            ]
        )
    ).body
    assert_chat_request(chat)
    assert chat["messages"][1]["content"] is None and chat["messages"][1]["tool_calls"][0]["id"] == "t1"
    assert chat["messages"][-1] == {"role": "tool", "tool_call_id": "t1", "content": "Tool loaded: WebFetch"}


def test_images() -> None:
    chat = T.request(
        req(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                        },
                        {"type": "image", "source": {"type": "url", "url": "https://example.invalid/cat.jpg"}},
                        {"type": "text", "text": "What are these?"},
                    ],
                }
            ]
        )
    ).body
    assert_chat_request(chat)
    assert chat["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.jpg"}},
        {"type": "text", "text": "What are these?"},
    ]
    assert refusal(
        req(
            messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}]
        )
    ) == ("messages[0].content[0].source: an image of source file cannot be carried over Chat Completions")


def test_an_image_inside_a_tool_result_is_refused() -> None:
    body = req(
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [
                            {"type": "text", "text": "screenshot:"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                        ],
                    }
                ],
            }
        ]
    )
    assert refusal(body) == (
        "messages[0].content[0].content[1]: an image inside a tool result cannot be carried over Chat Completions"
    )


def test_thinking_is_carried_as_reasoning_content() -> None:
    chat = T.request(
        req(
            messages=[
                {"role": "user", "content": "2+2?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Two and two.", "signature": "sig"},
                        {"type": "thinking", "thinking": "", "signature": "omitted"},
                        {"type": "text", "text": "4"},
                    ],
                },
                {"role": "user", "content": "thanks"},
            ]
        )
    ).body
    assert_chat_request(chat)
    assert chat["messages"][1] == {"role": "assistant", "content": "4", "reasoning_content": "Two and two."}


@pytest.mark.parametrize(
    "block",
    [
        "document",
        "search_result",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "container_upload",
        "mystery",
    ],
)
def test_blocks_the_chat_shape_cannot_hold_are_refused_by_path(block: str) -> None:
    role = "user" if block in ("document", "search_result", "container_upload", "mystery") else "assistant"
    body = req(
        messages=[
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
            {"role": role, "content": [{"type": "text", "text": "x"}, {"type": block, "data": "…"}]},
        ]
    )
    assert refusal(body) == f"messages[3].content[1]: a {block} block cannot be carried over Chat Completions"


def test_odd_shapes_are_refused_by_path() -> None:
    assert refusal(req(messages=[{"role": "tool", "content": "x"}])) == (
        "messages[0].role: the role 'tool' cannot be carried over Chat Completions"
    )
    assert refusal(req(messages=[{"role": "user", "content": [{"type": "weird type!"}]}])) == (
        "messages[0].content[0]: a 'weird type!' block cannot be carried over Chat Completions"
    )
    assert refusal(
        req(messages=[{"role": "user", "content": [{"type": "tool_result", "content": "no id"}]}])
    ).startswith("messages[0].content[0]: a tool result")
    assert refusal(req(system=[{"type": "image"}])) == (
        "system[0]: a image block in a system prompt cannot be carried over Chat Completions"
    )


def test_unknown_top_level_fields_are_refused_and_hints_are_noted() -> None:
    assert refusal(req(frobnicate=True)) == "frobnicate: this field cannot be carried over Chat Completions"
    done = T.request(
        req(
            service_tier="auto",
            inference_geo="us",
            speed="fast",
            cache_control={"type": "ephemeral"},
            container="c",
            diagnostics={"previous_message_id": "m"},
            metadata={"user_id": "u1"},
            mcp_servers=[{"type": "url", "url": "https://example.invalid"}],
        )
    )
    assert_chat_request(done.body)
    assert set(done.body) == {"model", "max_tokens", "messages"}
    for key in ("service_tier", "inference_geo", "speed", "cache_control", "container", "diagnostics", "mcp_servers"):
        assert HINTS[key] in done.notes
    assert "metadata.user_id: an id, not sent" in done.notes
    assert "u1" not in json.dumps(done.body)


# -- tools -----------------------------------------------------------------------------------------
TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Weather.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "type": "custom",
        "name": "strict_one",
        "input_schema": {"type": "object"},
        "strict": True,
        "input_examples": [{}],
    },
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    {"type": "code_execution_20250825", "name": "code_execution"},
]


def test_custom_tools_become_functions_and_hosted_tools_are_withdrawn() -> None:
    done = T.request(req(tools=TOOLS))
    assert_chat_request(done.body)
    assert done.body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather.", "parameters": TOOLS[0]["input_schema"]},
        },
        {"type": "function", "function": {"name": "strict_one", "parameters": {"type": "object"}, "strict": True}},
    ]
    assert done.notes == [
        "tools[].input_examples: not carried",
        "tools[2] web_search_20250305: a hosted tool, withdrawn",
        "tools[3] bash_20250124: a hosted tool, withdrawn",
        "tools[4] text_editor_20250728: a hosted tool, withdrawn",
        "tools[5] code_execution_20250825: a hosted tool, withdrawn",
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "get_weather"}, {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: Any) -> None:
    chat = T.request(req(tools=TOOLS[:1], tool_choice=choice)).body
    assert_chat_request(chat)
    assert chat["tool_choice"] == expected
    assert "parallel_tool_calls" not in chat
    serial = T.request(req(tools=TOOLS[:1], tool_choice={**choice, "disable_parallel_tool_use": True})).body
    assert serial["parallel_tool_calls"] is False


def test_a_tool_choice_of_a_withdrawn_tool_is_refused_and_one_without_tools_is_noted() -> None:
    assert refusal(req(tools=TOOLS, tool_choice={"type": "tool", "name": "web_search"})) == (
        "tool_choice: the hosted tool 'web_search' (withdrawn) cannot be carried over Chat Completions"
    )
    done = T.request(req(tools=TOOLS[2:3], tool_choice={"type": "any"}))
    assert "tools" not in done.body and "tool_choice" not in done.body
    assert done.notes[-1] == "tool_choice: no tool left to choose, not carried"
    assert refusal(req(tool_choice={"type": "sometimes"})) == (
        "tool_choice.type: the choice sometimes cannot be carried over Chat Completions"
    )


# -- reasoning -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "effort"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2000}}, "low"),
        ({"thinking": {"type": "enabled", "budget_tokens": 10000}}, "medium"),
        ({"thinking": {"type": "enabled", "budget_tokens": 31999}}, "high"),
        ({"thinking": {"type": "enabled", "budget_tokens": 31999}, "output_config": {"effort": "low"}}, "low"),
        ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}, "medium"),
        ({"thinking": {"type": "adaptive"}}, None),
        ({"output_config": {"effort": "high"}}, "high"),
        ({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}, None),
        ({}, None),
    ],
)
def test_reasoning_effort(fields: dict[str, Any], effort: str | None) -> None:
    chat = T.request(req(**fields)).body
    assert_chat_request(chat)
    assert chat.get("reasoning_effort") == effort


def test_reasoning_notes_and_refusals() -> None:
    done = T.request(req(thinking={"type": "adaptive"}, output_config={"effort": "max"}))
    assert done.body["reasoning_effort"] == "high"
    assert done.notes == ["output_config.effort max: carried as high"]
    off = T.request(req(thinking={"type": "disabled"}, output_config={"effort": "low"})).notes
    assert off == [
        "thinking disabled: not carried (the upstream's default applies)",
        "output_config.effort: not carried (thinking is disabled)",
    ]
    assert refusal(req(thinking={"type": "eager"})) == (
        "thinking.type: the thinking mode eager cannot be carried over Chat Completions"
    )
    assert refusal(req(output_config={"verbosity": "low"})) == (
        "output_config.verbosity: this field cannot be carried over Chat Completions"
    )
    assert refusal(req(output_config={"effort": "extreme"})).startswith("output_config.effort: the effort")


def test_an_output_format_becomes_a_json_schema_response_format() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    chat = T.request(req(output_config={"format": {"type": "json_schema", "schema": schema}})).body
    assert_chat_request(chat)
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


# -- the whole answer ------------------------------------------------------------------------------
def chat_answer(message: dict[str, Any], finish: str, **choice: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "up",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish, **choice}],
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 5,
            "total_tokens": 35,
            "prompt_tokens_details": {"cached_tokens": 24},
        },
    }


def test_a_whole_answer_with_text() -> None:
    answer = T.response(chat_answer({"content": "Hello."}, "stop"), req())
    message = anthropic.types.Message.model_validate(answer)
    assert message.id.startswith("msg_") and message.model == "m"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Hello."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens, message.usage.output_tokens) == (
        6,
        24,
        5,
    )


def test_a_whole_answer_with_thinking_and_tool_calls() -> None:
    answer = T.response(
        chat_answer(
            {
                "content": None,
                "reasoning_content": "Need the weather.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    },
                    {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": ""}},
                ],
            },
            "tool_calls",
        ),
        req(),
    )
    message = anthropic.types.Message.model_validate(answer)
    assert [b.type for b in message.content] == ["thinking", "tool_use", "tool_use"]
    thinking, first, second = message.content
    assert thinking.thinking == "Need the weather."  # type: ignore[union-attr]
    assert (first.id, first.name, first.input) == ("call_1", "get_weather", {"city": "Oslo"})  # type: ignore[union-attr]
    assert second.input == {}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("finish", "extra", "reason", "sequence"),
    [
        ("length", {}, "max_tokens", None),
        ("stop", {"stop_reason": "END"}, "stop_sequence", "END"),  # vLLM names the matched stop
        ("stop", {"matched_stop": "##"}, "stop_sequence", "##"),  # SGLang too
        ("stop", {"stop_reason": "OTHER"}, "end_turn", None),
        ("stop", {"stop_reason": 2}, "end_turn", None),  # a stop token id
        ("content_filter", {}, "refusal", None),
    ],
)
def test_stop_reasons(finish: str, extra: dict[str, Any], reason: str, sequence: str | None) -> None:
    answer = T.response(chat_answer({"content": "x"}, finish, **extra), req(stop_sequences=["END", "##"]))
    message = anthropic.types.Message.model_validate(answer)
    assert (message.stop_reason, message.stop_sequence) == (reason, sequence)


def test_tool_arguments_that_are_not_an_object_cannot_be_read() -> None:
    bad = chat_answer(
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1, 2"}}]}, "tool_calls"
    )
    with pytest.raises(ValueError, match="not a JSON object"):
        T.response(bad, req())


# -- the stream ------------------------------------------------------------------------------------
def test_a_text_stream_through_the_sdk() -> None:
    data = run(
        T.stream(req(stream=True)),
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": 'lo "world" ✓'}),
            chunk({}, "stop"),
            usage_chunk(12, 3, cached=8),
        ],
    )
    message = sdk_stream(data)
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == 'Hello "world" ✓'  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.model == "m"
    assert (message.usage.input_tokens, message.usage.output_tokens, message.usage.cache_read_input_tokens) == (4, 3, 8)
    assert [name for name, _ in events(data)] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_thinking_text_tool_calls_and_text_again_through_the_sdk() -> None:
    data = run(
        T.stream(req()),
        [
            chunk({"role": "assistant", "reasoning_content": "Let me "}),
            chunk({"reasoning_content": "check."}),
            chunk({"content": "Checking."}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
                        }
                    ]
                }
            ),
            chunk({"content": "Done."}),
            chunk({}, "tool_calls"),
            usage_chunk(50, 20),
        ],
    )
    message = sdk_stream(data)
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use", "text"]
    thinking, text, first, second, after = message.content
    assert thinking.thinking == "Let me check."  # type: ignore[union-attr]
    assert text.text == "Checking." and after.text == "Done."  # type: ignore[union-attr]
    assert (first.id, first.name, first.input) == ("call_a", "get_weather", {"city": "Oslo"})  # type: ignore[union-attr]
    assert (second.id, second.name, second.input) == ("call_b", "get_time", {"tz": "CET"})  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (50, 20)
    # blocks open and close in turn, indexed 0..4
    starts = [d["index"] for n, d in events(data) if n == "content_block_start"]
    stops = [d["index"] for n, d in events(data) if n == "content_block_stop"]
    assert starts == stops == [0, 1, 2, 3, 4]


def test_parallel_tool_calls_in_one_chunk_and_a_stop_sequence() -> None:
    data = run(
        T.stream(req()),
        [
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c0", "function": {"name": "a", "arguments": "{}"}},
                        {"index": 1, "id": "c1", "function": {"name": "b", "arguments": '{"x": 1}'}},
                    ]
                }
            ),
            chunk({}, "tool_calls"),
        ],
    )
    message = sdk_stream(data)
    assert [(b.name, b.input) for b in message.content] == [("a", {}), ("b", {"x": 1})]  # type: ignore[union-attr]
    stopped = run(
        T.stream(req(stop_sequences=["END"])), [chunk({"content": "x"}), chunk({}, "stop", stop_reason="END")]
    )
    message = sdk_stream(stopped)
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "END")
    long = sdk_stream(run(T.stream(req()), [chunk({"content": "x"}), chunk({}, "length")]))
    assert long.stop_reason == "max_tokens"


def test_a_stream_with_no_chunks_is_a_whole_empty_message() -> None:
    stream = T.stream(req())
    data = stream.finish()
    message = sdk_stream(data)
    assert message.content == [] and message.stop_reason == "end_turn"
    assert [name for name, _ in events(data)] == ["message_start", "message_delta", "message_stop"]
    assert stream.finish() == b"" and stream.feed(chunk({"content": "late"})) == b""


def test_an_upstream_error_chunk_is_an_anthropic_error_event_and_the_end() -> None:
    stream = T.stream(req())
    head = stream.feed(chunk({"content": "par"}))
    failed = stream.feed(json.dumps({"error": {"message": "model crashed", "type": "server_error"}}))
    assert events(failed) == [("error", {"type": "error", "error": {"type": "api_error", "message": "model crashed"}})]
    assert stream.feed(chunk({"content": "more"})) == b"" and stream.finish() == b""
    with pytest.raises(anthropic.APIStatusError, match="model crashed"):
        sdk_stream(head + failed)


def test_fail_is_one_error_event() -> None:
    stream = T.stream(req())
    begun = stream.feed(chunk({"content": "x"}))
    end = stream.fail("the upstream sent nothing for 60 s")
    assert [name for name, _ in events(end)] == ["error"]
    assert stream.finish() == b"" and stream.fail("again") == b""
    with pytest.raises(anthropic.APIStatusError, match="sent nothing"):
        sdk_stream(begun + end)
    assert [n for n, _ in events(T.stream(req()).fail("no upstream"))] == ["error"]  # before any start


def test_an_event_that_is_not_json_fails_the_stream() -> None:
    stream = T.stream(req())
    assert [n for n, _ in events(stream.feed("{oops"))] == ["error"]
    assert stream.finish() == b""


# -- count_tokens ----------------------------------------------------------------------------------
def test_count_tokens_estimates_characters_over_four() -> None:
    body = req(
        system="12345678",
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "abcd"}, {"type": "image", "source": {"type": "url", "url": "u"}}],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ab", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "xy"}]},
        ],
        tools=[
            {"name": "t1", "description": "dd", "input_schema": {}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
    )
    chars = 8 + 4 + (2 + 2) + 2 + (2 + 2 + 2)  # system, text, tool_use name + "{}", result, tool
    assert count_tokens(body) == {"input_tokens": (chars + 3) // 4 + IMAGE_TOKENS}
    fixture = json.loads(FIXTURE.read_text())
    assert count_tokens(fixture)["input_tokens"] > len(fixture["system"][-1]["text"]) // 4


# -- a real llama.cpp stream -----------------------------------------------------------------------
def test_a_real_llama_cpp_answer_translates(peers: Peers) -> None:
    """The lab's llama.cpp server answers the translated request; its stream and its whole
    answer, translated back, read as Messages in the SDK."""
    merged_url = f"{peers.merged.url}/v1/chat/completions"
    body = req(
        model=MODEL,
        max_tokens=6,
        stream=True,
        system="You are terse.",
        messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
    )
    chat = T.request(body).body
    stream = T.stream(body)
    out: list[bytes] = []
    parser = SSEParser()
    with httpx.Client(trust_env=False, timeout=120) as client:
        with client.stream("POST", merged_url, json=chat) as resp:
            assert resp.status_code == 200
            for raw in resp.iter_bytes():
                out.extend(stream.feed(ev.data) for ev in parser.feed(raw))
        out.append(stream.finish())
        message = sdk_stream(b"".join(out))
        assert message.stop_reason in ("end_turn", "max_tokens")
        assert 0 < message.usage.output_tokens <= 6 and message.usage.input_tokens > 0
        assert all(b.type in ("text", "thinking") for b in message.content)
        plain = {k: v for k, v in chat.items() if k not in ("stream", "stream_options")}
        whole = client.post(merged_url, json=plain).json()
    answer = anthropic.types.Message.model_validate(T.response(whole, body))
    assert answer.usage.output_tokens > 0 and answer.model == MODEL
