"""The Responses ↔ Chat Completions translator, proved with the real ``openai`` package.

Requests: the real body Codex sent translates, and the result validates as a Chat Completions
request against the SDK's own request type. Answers: whole ones validate as the SDK's
``Response``; streamed ones are served from a small aiohttp server on 127.0.0.1 and read by
``openai.OpenAI(...).responses.create(stream=True)`` (every event its typed class) and by
``responses.stream(...).get_final_response()``; the raw events validate strictly too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import openai
import pytest
from aiohttp import web
from openai.types import responses as rtypes
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import BaseModel, TypeAdapter

from kvswitch.errors import KvswitchError
from kvswitch.gateway.apis import error_body
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.translate import StreamTranslator, Translator, UntranslatableError
from kvswitch.gateway.translate.responses import (
    ResponsesStream,
    ResponsesTranslator,
    chat_tool_name,
)
from tests.gateway.conftest import Loop, oai

FIXTURE = Path(__file__).parent.parent / "fixtures" / "translate" / "codex-responses.json"
MODEL = "kvswitch-test-model"
CHAT_REQUEST = TypeAdapter(CompletionCreateParamsStreaming)
EVENT_CLASSES = {
    get_args(cls.model_fields["type"].annotation)[0]: cls for cls in get_args(get_args(rtypes.ResponseStreamEvent)[0])
}
"""Each Responses stream event class by its ``type``."""

T = ResponsesTranslator()


# -- helpers --------------------------------------------------------------------------------------
def consumed(value: Any) -> Any:
    """A validated TypedDict with its lazy iterables (pydantic checks them as they are read)
    read through, so every nested part is validated."""
    if isinstance(value, dict):
        return {k: consumed(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        return [consumed(v) for v in value]
    return value


def valid_chat(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` validated as a streamed Chat Completions request."""
    checked: dict[str, Any] = consumed(CHAT_REQUEST.validate_python({"model": MODEL, **body, "stream": True}))
    return checked


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "upstream",
            **extra,
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
        }
    )


def usage(prompt: int, completion: int, cached: int = 0) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "upstream",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
    )


def call(index: int, *, id: str | None = None, name: str | None = None, args: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    delta: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        delta.update(id=id, type="function")
    return {"tool_calls": [delta]}


def texts(*pieces: str, finish: str = "stop") -> list[str]:
    return (
        [chunk({"role": "assistant", "content": ""})]
        + [chunk({"content": p}) for p in pieces]
        + [chunk(finish=finish), usage(7, len(pieces)), "[DONE]"]
    )


def events(raw: bytes, lenient: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The SSE events in ``raw``, each checked: ``event:`` names the data's type, the data
    validates strictly as a Responses stream event (but those of the types in ``lenient``),
    sequence numbers count up from 0."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        head, data = block.split("\n")
        assert head.startswith("event: ") and data.startswith("data: "), block
        event = json.loads(data[len("data: ") :])
        assert head[len("event: ") :] == event["type"]
        assert event["sequence_number"] == len(out)
        if event["type"] not in lenient:
            strict(event)
        out.append(event)
    return out


def strict(event: dict[str, Any]) -> BaseModel:
    """``event`` validated (not merely constructed) as its own Responses event class."""
    validated: BaseModel = EVENT_CLASSES[event["type"]].model_validate(event)
    return validated


def translate(body: dict[str, Any], script: list[str], end: str | None = None) -> bytes:
    stream = T.stream(body)
    raw = b"".join(stream.feed(data) for data in script)
    return raw + (stream.fail(end) if end is not None else stream.finish())


# -- a Responses server over scripted Chat Completions answers ------------------------------------
@dataclass
class Server:
    """POST ``/v1/responses``: the client's body goes through ``request`` (a refusal is a 400 in
    the Responses API's shape), then the scripted Chat stream through ``stream`` (or the
    scripted whole answer through ``response``)."""

    loop: Loop
    url: str = ""
    script: list[str] = field(default_factory=list)
    whole: dict[str, Any] = field(default_factory=dict)
    fail: str | None = None
    seen: list[dict[str, Any]] = field(default_factory=list)
    sent: bytes = b""
    runner: web.AppRunner | None = None

    def serve(self, script: list[str], fail: str | None = None) -> None:
        self.script, self.fail, self.sent = script, fail, b""
        self.seen.clear()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        try:
            chat = T.request(body)
        except UntranslatableError as exc:
            return web.Response(
                status=400, body=error_body("responses", 400, str(exc)), content_type="application/json"
            )
        self.seen.append(chat.body)
        if not body.get("stream"):
            return web.json_response(T.response(self.whole, body))
        stream = T.stream(body)
        answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await answer.prepare(request)
        for data in self.script:
            out = stream.feed(data)
            self.sent += out
            await answer.write(out)
        tail = stream.fail(self.fail) if self.fail is not None else stream.finish()
        self.sent += tail
        await answer.write(tail)
        await answer.write_eof()
        return answer

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/responses", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    loop = Loop()
    srv = Server(loop)
    loop.call(srv.start())
    try:
        yield srv
    finally:
        if srv.runner is not None:
            loop.call(srv.runner.cleanup())
        loop.close()


@pytest.fixture
def client(server: Server) -> Iterator[openai.OpenAI]:
    with oai(server.url, key="test-key-not-real") as c:
        yield c


# -- the protocol ---------------------------------------------------------------------------------
def test_it_implements_the_protocols() -> None:
    translator: Translator = ResponsesTranslator()
    stream: StreamTranslator = translator.stream({"model": MODEL})
    assert isinstance(stream, ResponsesStream)
    assert issubclass(UntranslatableError, GatewayError)
    assert issubclass(UntranslatableError, KvswitchError)


# -- requests -------------------------------------------------------------------------------------
def test_the_real_codex_request_translates_into_a_valid_chat_request() -> None:
    body = json.loads(FIXTURE.read_text())
    done = T.request(body)
    chat = valid_chat(done.body)
    assert chat["model"] == MODEL
    assert done.body["stream"] is True and done.body["stream_options"] == {"include_usage": True}
    roles = [m["role"] for m in done.body["messages"]]
    assert roles == ["system", "user", "user"]  # the two developer messages, joined
    system = done.body["messages"][0]["content"]
    assert system.startswith(body["input"][0]["content"][0]["text"])
    assert body["input"][1]["content"][0]["text"] in system
    assert done.body["messages"][-1]["content"] == "say ok"
    names = [t["function"]["name"] for t in done.body["tools"]]
    assert "exec_command" in names and "web_search" not in names
    assert "multi_agent_v1__spawn_agent" in names and "spawn_agent" not in names
    assert len(names) == len(set(names)) == 7 + len(body["tools"][4]["tools"])
    assert done.body["tool_choice"] == "auto" and done.body["parallel_tool_calls"] is True
    assert "tools[8] web_search: a hosted tool, withdrawn" in done.notes
    for hint in ("store", "include", "prompt_cache_key", "client_metadata", "reasoning.summary"):
        assert f"{hint}: not sent (a hint)" in done.notes
    assert not {"store", "include", "prompt_cache_key", "client_metadata", "reasoning"} & set(done.body)


def test_the_real_codex_request_through_the_sdk(server: Server, client: openai.OpenAI) -> None:
    body = json.loads(FIXTURE.read_text())
    server.serve(texts("o", "k"))
    rest = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
    with client.responses.stream(model=body["model"], input=body["input"], extra_body=rest) as s:
        final = s.get_final_response()
    assert final.output_text == "ok" and final.status == "completed"
    assert server.seen[0]["tools"][4]["function"]["name"] == "multi_agent_v1__close_agent"
    assert final.usage is not None and final.usage.input_tokens == 7


def test_top_level_fields_are_carried() -> None:
    done = T.request(
        {
            "model": "m",
            "instructions": "be brief",
            "input": "hi",
            "max_output_tokens": 64,
            "temperature": 0.2,
            "top_p": 0.9,
            "top_logprobs": 2,
            "stream": False,
            "reasoning": {"effort": "high"},
            "parallel_tool_calls": False,
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "out",
                    "strict": True,
                    "schema": {"type": "object", "properties": {}},
                }
            },
        }
    )
    chat = done.body
    assert chat["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert (chat["max_tokens"], chat["temperature"], chat["top_p"]) == (64, 0.2, 0.9)
    assert chat["logprobs"] is True and chat["top_logprobs"] == 2
    assert chat["reasoning_effort"] == "high" and chat["parallel_tool_calls"] is False
    assert chat["stream"] is False and "stream_options" not in chat
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert chat["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": True}}
    ]
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "strict": True, "schema": {"type": "object", "properties": {}}},
    }
    assert done.notes == []
    valid_chat(chat)


@pytest.mark.parametrize(
    "choice, chat_choice",
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "custom", "name": "patch"}, {"type": "function", "function": {"name": "patch"}}),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]},
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": "f"}}]},
            },
        ),
    ],
)
def test_tool_choice(choice: Any, chat_choice: Any) -> None:
    tools = [{"type": "function", "name": "f"}, {"type": "custom", "name": "patch"}]
    assert T.request({"input": "x", "tools": tools, "tool_choice": choice}).body["tool_choice"] == chat_choice


def test_json_object_format_and_plain_text_format() -> None:
    assert T.request({"input": "x", "text": {"format": {"type": "json_object"}}}).body["response_format"] == {
        "type": "json_object"
    }
    done = T.request({"input": "x", "text": {"format": {"type": "text"}, "verbosity": "low"}})
    assert "response_format" not in done.body and done.notes == ["text.verbosity: not sent (a hint)"]


def test_every_hint_is_noted_and_not_sent() -> None:
    hints = {
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k",
        "client_metadata": {"a": "b"},
        "metadata": {"a": "b"},
        "user": "u",
        "service_tier": "auto",
        "safety_identifier": "s",
        "truncation": "auto",
    }
    done = T.request(
        {"model": "m", "input": "x", "reasoning": {"summary": "auto"}, "text": {"verbosity": "high"}, **hints}
    )
    assert set(done.body) == {"model", "messages"}
    assert sorted(done.notes) == sorted(
        [f"{k}: not sent (a hint)" for k in hints]
        + ["reasoning.summary: not sent (a hint)", "text.verbosity: not sent (a hint)"]
    )


def test_the_request_is_built_without_copying_large_parts() -> None:
    schema = {"type": "object", "properties": {"cmd": {"type": "string"}}}
    body = {"input": "x", "tools": [{"type": "function", "name": "f", "parameters": schema}]}
    assert T.request(body).body["tools"][0]["function"]["parameters"] is schema


def test_messages_parts_and_roles() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"}
    done = T.request(
        {
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d1"}]},
                {"role": "system", "content": "s2"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}, image]},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "I "}, {"type": "output_text", "text": "see"}],
                },
                {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
            ]
        }
    )
    assert done.body["messages"] == [
        {"role": "system", "content": "d1\n\ns2"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
            ],
        },
        {"role": "assistant", "content": "I see"},
        {"role": "user", "content": "thanks"},
    ]
    valid_chat(done.body)


def test_tool_calls_merge_with_the_assistant_text_and_reasoning_before_them() -> None:
    done = T.request(
        {
            "input": [
                {"role": "user", "content": "run two"},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "plan"}],
                    "encrypted_content": None,
                },
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
                {
                    "type": "function_call",
                    "call_id": "c2",
                    "name": "close_agent",
                    "namespace": "multi_agent_v1",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "c1", "output": "a b"},
                {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "closed"}]},
                {
                    "type": "reasoning",
                    "id": "rs_2",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": "raw thought"}],
                },
                {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** Begin Patch"},
                {"type": "custom_tool_call_output", "call_id": "c3", "output": "Done"},
            ]
        }
    )
    messages = done.body["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "plan",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'}},
            {"id": "c2", "type": "function", "function": {"name": "multi_agent_v1__close_agent", "arguments": "{}"}},
        ],
    }
    assert messages[2:4] == [
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "tool", "tool_call_id": "c2", "content": "closed"},
    ]
    assert messages[4] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "raw thought",
        "tool_calls": [
            {
                "id": "c3",
                "type": "function",
                "function": {
                    "name": "apply_patch",
                    "arguments": json.dumps({"input": "*** Begin Patch"}, separators=(",", ":")),
                },
            }
        ],
    }
    assert messages[5] == {"role": "tool", "tool_call_id": "c3", "content": "Done"}
    assert done.notes == []
    valid_chat(done.body)


def test_encrypted_or_stranded_reasoning_is_noted() -> None:
    done = T.request(
        {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA..."},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "lost"}]},
                {"role": "user", "content": "again"},
            ]
        }
    )
    assert done.notes == [
        "input[1] reasoning: encrypted, not carried",
        "input[2] reasoning: no assistant turn follows it, not carried",
    ]
    assert [m["role"] for m in done.body["messages"]] == ["user", "user"]


def test_images_from_a_tool_follow_the_tool_results() -> None:
    done = T.request(
        {
            "input": [
                {"type": "function_call", "call_id": "v1", "name": "view_image", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "v1",
                    "output": [
                        {"type": "input_text", "text": "here"},
                        {"type": "input_image", "image_url": "data:image/png;base64,BBBB"},
                    ],
                },
            ]
        }
    )
    assert done.body["messages"][1:] == [
        {"role": "tool", "tool_call_id": "v1", "content": "here"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]},
    ]
    assert done.notes == ["input[1] function_call_output: its images follow the tool results as a user message"]
    valid_chat(done.body)


def test_custom_tools_are_functions_with_one_string_input() -> None:
    tool = {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: patch"},
    }
    function = T.request({"input": "x", "tools": [tool]}).body["tools"][0]["function"]
    assert function["name"] == "apply_patch" and function["description"] == "Edit files."
    assert function["parameters"]["required"] == ["input"]
    described = function["parameters"]["properties"]["input"]["description"]
    assert "lark grammar" in described and "start: patch" in described


def test_namespace_names() -> None:
    assert chat_tool_name("spawn", None) == "spawn"
    assert chat_tool_name("spawn", "agents") == "agents__spawn"
    assert chat_tool_name("lookup", "mcp__server__") == "mcp__server__lookup"


# -- refusals -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "item",
    [
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
        {"type": "item_reference", "id": "msg_1"},
        {"type": "local_shell_call", "call_id": "l1", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "file_search_call", "id": "fs_1", "queries": []},
        {"type": "computer_call", "call_id": "cc1", "action": {}},
        {"type": "mystery_call"},
    ],
)
def test_items_that_cannot_be_carried_are_refused_by_path(item: dict[str, Any]) -> None:
    with pytest.raises(UntranslatableError) as err:
        T.request({"input": [{"role": "user", "content": "x"}, item]})
    article = "an" if item["type"][0] in "aeiou" else "a"
    expected = f"input[1]: {article} {item['type']} item cannot be carried over Chat Completions"
    assert str(err.value) == expected


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_text", "text": "x"}, {"type": "input_file", "file_id": "f"}],
                    }
                ]
            },
            "input[0].content[1]: an input_file part cannot be carried over Chat Completions",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "input[0].content[0]: an image given by file_id (the upstream has no files) cannot be carried "
            "over Chat Completions",
        ),
        (
            {"input": "x", "previous_response_id": "resp_1"},
            "previous_response_id: the upstream keeps no responses; send the whole conversation",
        ),
        ({"input": "x", "frobnicate": 1}, "frobnicate: an unknown field cannot be carried over Chat Completions"),
        (
            {"input": "x", "tools": [{"type": "mystery"}]},
            "tools[0]: a mystery tool cannot be carried over Chat Completions",
        ),
        (
            {"input": "x", "tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search"}},
            "tool_choice: it requires the hosted tool web_search, which the upstream cannot run",
        ),
        (
            {"input": "x", "tools": [{"type": "web_search"}], "tool_choice": "required"},
            "tool_choice: it requires a tool call, and no tool is left to offer (hosted tools are withdrawn)",
        ),
        ({"input": "x", "background": True}, "background: the upstream runs no background responses"),
        (
            {"input": "x", "text": {"format": {"type": "xml"}}},
            "text.format: the format xml cannot be carried over Chat Completions",
        ),
        (
            {"input": [{"role": "critic", "content": "x"}]},
            "input[0].role: the role critic cannot be carried over Chat Completions",
        ),
    ],
)
def test_refusals_name_the_field(body: dict[str, Any], message: str) -> None:
    with pytest.raises(UntranslatableError) as err:
        T.request(body)
    assert str(err.value) == message


def test_a_hostile_field_name_is_quoted_safely() -> None:
    name = "\x1b[31mevil\nname" + "x" * 200
    with pytest.raises(UntranslatableError) as err:
        T.request({"input": "x", name: 1})
    text = str(err.value)
    assert "\x1b" not in text and "\n" not in text and len(text) < 160


def test_hosted_tools_are_withdrawn_with_a_note() -> None:
    done = T.request(
        {
            "input": "x",
            "tools": [
                {"type": "function", "name": "f"},
                {"type": "web_search_preview_2025_03_11"},
                {"type": "file_search", "vector_store_ids": []},
                {"type": "code_interpreter"},
                {"type": "image_generation"},
                {"type": "computer_use_preview"},
                {"type": "local_shell"},
                {"type": "mcp", "server_label": "x"},
            ],
        }
    )
    assert [t["function"]["name"] for t in done.body["tools"]] == ["f"]
    assert done.notes[0] == "tools[1] web_search_preview_2025_03_11: a hosted tool, withdrawn"
    assert done.notes[-1] == "tools[7] mcp: a hosted tool, withdrawn"
    assert len(done.notes) == 7


def test_a_refusal_reaches_the_sdk_as_a_400(server: Server, client: openai.OpenAI) -> None:
    server.serve(texts("never"))
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(
            model=MODEL, input=[{"role": "user", "content": "x"}, {"type": "item_reference", "id": "msg_1"}]
        )
    assert "input[1]: an item_reference item cannot be carried" in err.value.message
    assert server.seen == []


# -- whole answers --------------------------------------------------------------------------------
def whole(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "up",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": 5,
            "total_tokens": 16,
            "prompt_tokens_details": {"cached_tokens": 8},
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
        **extra,
    }


NAMESPACE_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
    {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Sub-agents.",
        "tools": [
            {
                "type": "function",
                "name": "close_agent",
                "strict": True,
                "parameters": {
                    "type": "object",
                    "properties": {"target": {"type": "string"}},
                    "required": ["target"],
                    "additionalProperties": False,
                },
            }
        ],
    },
    {"type": "custom", "name": "apply_patch", "description": "Edit files."},
]


def test_a_whole_answer_is_a_valid_response() -> None:
    request = {"model": MODEL, "input": "x", "tools": NAMESPACE_TOOLS}
    out = T.response(
        whole(
            {
                "content": "Done.",
                "reasoning_content": "thinking",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "multi_agent_v1__close_agent", "arguments": '{"target":"a"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "apply_patch", "arguments": '{"input":"*** Begin Patch"}'},
                    },
                    {
                        "id": "call_c",
                        "type": "function",
                        "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'},
                    },
                ],
            },
            finish="tool_calls",
        ),
        request,
    )
    response = rtypes.Response.model_validate(out)
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "completed" and response.model == MODEL
    assert response.output_text == "Done."
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message", "function_call", "custom_tool_call", "function_call"]
    reasoning, _, closing, patch, run = response.output
    assert isinstance(reasoning, rtypes.ResponseReasoningItem)
    assert reasoning.summary[0].text == "thinking"
    assert isinstance(closing, rtypes.ResponseFunctionToolCall)
    assert (closing.name, closing.namespace, closing.call_id) == ("close_agent", "multi_agent_v1", "call_a")
    assert isinstance(patch, rtypes.ResponseCustomToolCall)
    assert (patch.name, patch.input, patch.call_id) == ("apply_patch", "*** Begin Patch", "call_b")
    assert isinstance(run, rtypes.ResponseFunctionToolCall) and run.namespace is None
    assert run.arguments == '{"cmd":"ls"}'
    assert response.usage is not None
    counts = response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens
    assert counts == (11, 5, 16)
    assert response.usage.input_tokens_details.cached_tokens == 8
    assert response.usage.output_tokens_details.reasoning_tokens == 2


def test_a_whole_answer_cut_by_length_is_incomplete() -> None:
    out = T.response(whole({"content": "Half"}, finish="length"), {"model": MODEL, "input": "x"})
    response = rtypes.Response.model_validate(out)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Half"


def test_a_whole_answer_with_nothing_and_an_error() -> None:
    empty = rtypes.Response.model_validate(T.response(whole({"content": None}), {"input": "x"}))
    assert empty.output == [] and empty.status == "completed"
    failed = rtypes.Response.model_validate(
        T.response({"error": {"message": "boom", "code": "server_error"}}, {"model": MODEL})
    )
    assert failed.status == "failed" and failed.error is not None and failed.error.message == "boom"


def test_a_whole_answer_through_the_sdk(server: Server, client: openai.OpenAI) -> None:
    server.whole = whole({"content": "fine", "refusal": None})
    response = client.responses.create(model=MODEL, input="hi")
    assert response.output_text == "fine" and response.status == "completed"
    assert server.seen[0]["messages"] == [{"role": "user", "content": "hi"}]


# -- streams --------------------------------------------------------------------------------------
def test_a_text_stream_through_both_sdk_paths(server: Server, client: openai.OpenAI) -> None:
    server.serve(texts("Hel", "lo", " there"))
    seen = list(client.responses.create(model=MODEL, input="hi", stream=True))
    assert [type(e).__name__ for e in seen] == [
        "ResponseCreatedEvent",
        "ResponseInProgressEvent",
        "ResponseOutputItemAddedEvent",
        "ResponseContentPartAddedEvent",
        "ResponseTextDeltaEvent",
        "ResponseTextDeltaEvent",
        "ResponseTextDeltaEvent",
        "ResponseTextDoneEvent",
        "ResponseContentPartDoneEvent",
        "ResponseOutputItemDoneEvent",
        "ResponseCompletedEvent",
    ]
    assert [e.sequence_number for e in seen] == list(range(len(seen)))
    assert "".join(e.delta for e in seen if isinstance(e, rtypes.ResponseTextDeltaEvent)) == "Hello there"
    assert len(events(server.sent)) == len(seen)
    with client.responses.stream(model=MODEL, input="hi") as s:
        final = s.get_final_response()
    assert final.output_text == "Hello there" and final.status == "completed"
    assert final.usage is not None and final.usage.output_tokens == 3
    assert server.seen[-1]["stream_options"] == {"include_usage": True}


def test_a_stream_with_reasoning_and_tool_calls(server: Server, client: openai.OpenAI) -> None:
    server.serve(
        [
            chunk({"role": "assistant", "reasoning_content": "Let me "}),
            chunk({"reasoning_content": "look."}),
            chunk({"content": "Checking."}),
            chunk(call(0, id="call_1", name="multi_agent_v1__close_agent", args='{"tar')),
            chunk(call(0, args='get":"a"}')),
            chunk(call(1, id="call_2", name="apply_patch", args='{"input":')),
            chunk(call(1, args='"*** Begin Patch\\n"}')),
            chunk(call(2, id="call_3", name="exec_command", args='{"cmd":"ls"}')),
            chunk(finish="tool_calls"),
            usage(20, 9, cached=16),
            "[DONE]",
        ]
    )
    with client.responses.stream(model=MODEL, input="go", tools=NAMESPACE_TOOLS) as s:
        seen = [type(e).__name__ for e in s]
        final = s.get_final_response()
    assert "ResponseReasoningSummaryTextDeltaEvent" in seen
    assert "ResponseFunctionCallArgumentsDeltaEvent" in seen
    assert "ResponseCustomToolCallInputDoneEvent" in seen
    assert [item.type for item in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "custom_tool_call",
        "function_call",
    ]
    reasoning, _, closing, patch, run = final.output
    assert isinstance(reasoning, rtypes.ResponseReasoningItem)
    assert reasoning.summary[0].text == "Let me look."
    assert final.output_text == "Checking."
    assert isinstance(closing, rtypes.ParsedResponseFunctionToolCall)
    assert (closing.name, closing.namespace, closing.call_id) == ("close_agent", "multi_agent_v1", "call_1")
    assert closing.parsed_arguments == {"target": "a"}  # the SDK found the nested strict tool
    assert isinstance(patch, rtypes.ResponseCustomToolCall)
    assert (patch.name, patch.input, patch.call_id) == ("apply_patch", "*** Begin Patch\n", "call_2")
    assert isinstance(run, rtypes.ParsedResponseFunctionToolCall) and run.namespace is None
    assert (run.name, run.arguments) == ("exec_command", '{"cmd":"ls"}')
    assert final.usage is not None and final.usage.input_tokens_details.cached_tokens == 16
    kinds = [e["type"] for e in events(server.sent)]
    assert kinds[-1] == "response.completed"


def test_the_namespace_round_trip(server: Server, client: openai.OpenAI) -> None:
    """A call to a nested tool comes back as Codex dispatches it (name + namespace), and the
    call sent back in the next request's history reaches the upstream as it was offered."""
    server.serve(
        [
            chunk(call(0, id="call_9", name="multi_agent_v1__close_agent", args='{"target":"b"}')),
            chunk(finish="tool_calls"),
            "[DONE]",
        ]
    )
    with client.responses.stream(model=MODEL, input="close b", tools=NAMESPACE_TOOLS) as s:
        final = s.get_final_response()
    item = final.output[0]
    assert isinstance(item, rtypes.ResponseFunctionToolCall)
    assert (item.name, item.namespace) == ("close_agent", "multi_agent_v1")
    offered = [t["function"]["name"] for t in server.seen[0]["tools"]]
    assert offered == ["exec_command", "multi_agent_v1__close_agent", "apply_patch"]
    server.serve(texts("closed"))
    history: list[Any] = [
        {"role": "user", "content": "close b"},
        item.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": item.call_id, "output": "ok"},
    ]
    with client.responses.stream(model=MODEL, input=history, tools=NAMESPACE_TOOLS) as s:
        assert s.get_final_response().output_text == "closed"
    sent = server.seen[0]["messages"]
    assert sent[1]["tool_calls"][0]["function"] == {
        "name": "multi_agent_v1__close_agent",
        "arguments": '{"target":"b"}',
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "ok"}


def test_a_stream_cut_by_length_ends_incomplete(server: Server, client: openai.OpenAI) -> None:
    server.serve(texts("Half", finish="length"))
    seen = list(client.responses.create(model=MODEL, input="hi", stream=True, max_output_tokens=1))
    last = seen[-1]
    assert isinstance(last, rtypes.ResponseIncompleteEvent)
    assert last.response.incomplete_details is not None
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert last.response.output_text == "Half"
    assert server.seen[0]["max_tokens"] == 1


def test_an_upstream_error_chunk_fails_the_stream(server: Server, client: openai.OpenAI) -> None:
    server.serve(
        [
            chunk({"content": "par"}),
            json.dumps({"error": {"message": "context too long", "code": "context_length_exceeded"}}),
            chunk({"content": "never"}),
        ]
    )
    with pytest.raises(openai.APIError) as err:
        list(client.responses.create(model=MODEL, input="hi", stream=True))
    assert "context too long" in err.value.message
    # the upstream's code is passed on: Codex reads ``context_length_exceeded`` there, a code the
    # SDK's own list lacks (its parser is lenient; its strict model is not)
    sent = events(server.sent, lenient=frozenset({"response.failed"}))
    assert sent[-1]["type"] == "response.failed"
    assert sent[-1]["response"]["error"] == {"code": "context_length_exceeded", "message": "context too long"}
    assert "never" not in server.sent.decode()


def test_fail_is_one_event_and_nothing_after() -> None:
    stream = T.stream({"model": MODEL})
    begun = events(stream.feed(chunk({"content": "a"})))
    raw = stream.fail("the upstream went away")
    assert len(raw.split(b"\n\n")) == 2 and raw.startswith(b"event: response.failed\n")
    event = json.loads(raw.split(b"\n")[1][len(b"data: ") :])
    assert event["sequence_number"] == len(begun)  # the sequence goes on
    assert event["response"]["status"] == "failed"
    assert event["error"]["message"] == "the upstream went away"
    strict(event)
    assert stream.feed(chunk({"content": "b"})) == b"" and stream.finish() == b""
    assert stream.fail("again") == b""


def test_fail_reaches_the_sdk_as_an_error(server: Server, client: openai.OpenAI) -> None:
    server.serve([chunk({"content": "par"})], fail="the upstream went away")
    with pytest.raises(openai.APIError) as err, client.responses.stream(model=MODEL, input="hi") as s:
        s.get_final_response()
    assert err.value.message == "the upstream went away"


def test_finish_with_no_chunks_is_a_whole_empty_response(server: Server, client: openai.OpenAI) -> None:
    sent = events(translate({"model": MODEL}, []))
    assert [e["type"] for e in sent] == ["response.created", "response.in_progress", "response.completed"]
    server.serve([])
    with client.responses.stream(model=MODEL, input="hi") as s:
        final = s.get_final_response()
    assert final.output == [] and final.status == "completed" and final.usage is None


def test_done_then_finish_completes_once() -> None:
    stream = T.stream({"model": MODEL})
    raw = b"".join(stream.feed(d) for d in texts("x")) + stream.finish()
    kinds = [e["type"] for e in events(raw)]
    assert kinds.count("response.completed") == 1 and kinds[-1] == "response.completed"


def test_a_text_delta_is_one_event() -> None:
    stream = T.stream({"model": MODEL})
    stream.feed(chunk({"role": "assistant", "content": "a"}))
    raw = stream.feed(chunk({"content": 'b"c\n'}))
    assert raw.count(b"event: ") == 1
    event = json.loads(raw.split(b"\n")[1][len(b"data: ") :])
    assert event["type"] == "response.output_text.delta" and event["delta"] == 'b"c\n'


def test_a_malformed_chunk_fails_the_stream() -> None:
    sent = events(translate({"model": MODEL}, [chunk({"content": "a"}), "{not json"]))
    assert sent[-1]["type"] == "response.failed"
    assert sent[-1]["response"]["error"]["message"] == "the upstream sent a stream event that is not JSON"


def test_the_recorders_minimal_stream_is_a_subset() -> None:
    """The five events Codex needs at least (tests/realclients/recorder.py) all come, in order."""
    kinds = [e["type"] for e in events(translate({"model": MODEL}, texts("ok")))]
    needed = [
        "response.created",
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
        "response.completed",
    ]
    positions = [kinds.index(k) for k in needed]
    assert positions == sorted(positions)


def test_interleaved_tool_calls_and_a_late_name() -> None:
    raw = translate(
        {"model": MODEL, "input": "x"},
        [
            chunk(call(0, id="call_a", args='{"a"')),  # the name comes later
            chunk(call(1, id="call_b", name="g", args='{"b":')),
            chunk(call(0, name="f", args=":1}")),
            chunk(call(1, args="2}")),
            chunk(finish="tool_calls"),
            "[DONE]",
        ],
    )
    done = [e["item"] for e in events(raw) if e["type"] == "response.output_item.done"]
    assert [(i["name"], i["call_id"], i["arguments"]) for i in done] == [
        ("g", "call_b", '{"b":2}'),
        ("f", "call_a", '{"a":1}'),
    ]
    final = events(raw)[-1]["response"]
    assert [i["call_id"] for i in final["output"]] == ["call_b", "call_a"]
    rtypes.Response.model_validate(final)


def test_a_streamed_refusal() -> None:
    raw = translate(
        {"model": MODEL},
        [chunk({"role": "assistant", "refusal": "I can"}), chunk({"refusal": "not."}), chunk(finish="stop"), "[DONE]"],
    )
    final = rtypes.Response.model_validate(events(raw)[-1]["response"])
    message = final.output[0]
    assert isinstance(message, rtypes.ResponseOutputMessage)
    refusal = message.content[-1]
    assert isinstance(refusal, rtypes.ResponseOutputRefusal) and refusal.refusal == "I cannot."


def test_logprobs_are_carried_back() -> None:
    entry = {
        "token": "Hi",
        "logprob": -0.1,
        "bytes": [72, 105],
        "top_logprobs": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105]}],
    }
    out = T.response(
        whole({"content": "Hi"}, logprobs=None)
        | {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Hi"},
                    "finish_reason": "stop",
                    "logprobs": {"content": [entry]},
                }
            ]
        },
        {"model": MODEL, "top_logprobs": 1},
    )
    text = rtypes.Response.model_validate(out).output[0]
    assert isinstance(text, rtypes.ResponseOutputMessage)
    part = text.content[0]
    assert isinstance(part, rtypes.ResponseOutputText)
    assert part.logprobs is not None and part.logprobs[0].token == "Hi"
    raw = translate(
        {"model": MODEL},
        [
            json.dumps(
                {
                    "object": "chat.completion.chunk",
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": "Hi"},
                            "logprobs": {"content": [entry]},
                            "finish_reason": None,
                        }
                    ],
                }
            ),
            chunk(finish="stop"),
        ],
    )
    deltas = [e for e in events(raw) if e["type"] == "response.output_text.delta"]
    assert deltas[0]["logprobs"][0]["token"] == "Hi"


def test_half_a_surrogate_pair_does_not_break_the_stream() -> None:
    raw = translate(
        {"model": MODEL}, ['{"choices":[{"index":0,"delta":{"content":"a\\ud83d"}}]}', chunk(finish="stop")]
    )
    deltas = [e["delta"] for e in events(raw) if e["type"] == "response.output_text.delta"]
    assert deltas == ["a?"]
