"""Anthropic Messages carried over Chat Completions (Claude Code in front of a Chat-only upstream).

The request (:meth:`MessagesTranslator.request`):

* ``model``, ``max_tokens``, ``temperature``, ``top_p`` and ``top_k`` (llama.cpp, vLLM and SGLang
  read it) as they are; ``stop_sequences`` as ``stop``; ``stream: true`` adds
  ``stream_options.include_usage`` so the stream ends with the token counts.
* ``system`` (a string or text blocks) becomes the leading ``system`` message, and a ``system``
  turn inside ``messages`` a ``system`` message in its place. Text is never altered: one text
  block is carried as a string, several as a list of text parts (engines whose template wants a
  string join the parts themselves).
* A user turn: text and images (base64 as a ``data:`` URL, or the image's URL) as content
  parts; each ``tool_result`` as a ``tool`` message, all of them *before* the turn's own content
  (Chat Completions wants them right after the assistant's tool calls). A tool result's text
  blocks are joined with ``"\\n"``; one marked ``is_error`` is prefixed with ``"Error: "``; a
  ``tool_reference`` reads ``"Tool loaded: NAME"`` (deferred tools are offered up front anyway).
* An assistant turn: text as content, each ``tool_use`` as a tool call (``arguments`` is the
  JSON text of ``input``), ``thinking`` as ``reasoning_content`` (the field llama.cpp and
  DeepSeek read).
* Custom tools as functions (``input_schema`` as ``parameters``, ``strict`` kept); Anthropic's
  hosted tools (web search, bash, text editor, computer, code execution…) are withdrawn with a
  note. ``tool_choice`` auto/any/tool/none as ``auto``/``required``/the function/``none``, and
  ``disable_parallel_tool_use`` as ``parallel_tool_calls: false``.
* ``thinking`` and ``output_config.effort`` as ``reasoning_effort`` where they ask for
  reasoning: the effort when given (``xhigh`` and ``max`` as ``high``), else for
  ``thinking.type: enabled`` one read from ``budget_tokens`` (under 8,192 ``low``, under 24,576
  ``medium``, else ``high``). ``output_config.format`` (and the older ``output_format``) as a
  ``json_schema`` ``response_format``.

Hints with no bearing on the answer are noted and not sent (:data:`HINTS`, plus
``cache_control`` anywhere, ``metadata``, and tool fields such as ``defer_loading``). Blocks the
Chat shape cannot hold (``redacted_thinking``, ``document``, ``search_result``, server tool
blocks, images inside tool results, any unknown block) and unknown top-level fields are refused
with :class:`UntranslatableError`, naming where.

The answer: ``reasoning_content`` (or ``reasoning``) as a ``thinking`` block (empty
signature), the text, then a ``tool_use`` block per tool call; ``finish_reason`` ``stop`` as
``end_turn`` (``stop_sequence`` when the upstream names the matched stop, as vLLM's
``stop_reason`` and SGLang's ``matched_stop`` do), ``length`` as ``max_tokens``, tool calls as
``tool_use``. Prompt tokens the upstream read from its cache (``cached_tokens``) are reported as
``cache_read_input_tokens``, the rest as ``input_tokens``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kvswitch.gateway.apis import error_event
from kvswitch.gateway.translate import Translated, UntranslatableError
from kvswitch.http_serving import shown

__all__ = ["HINTS", "IMAGE_TOKENS", "MessagesStream", "MessagesTranslator", "count_tokens"]

HINTS: dict[str, str] = {
    "cache_control": "cache_control: a caching hint, not carried",
    "container": "container: the hosted tools' container, not carried",
    "context_management": "context_management: server-side context editing is not done by the upstream",
    "diagnostics": "diagnostics: not carried",
    "inference_geo": "inference_geo: a placement hint, not carried",
    "mcp_servers": "mcp_servers: hosted MCP connectors, withdrawn",
    "service_tier": "service_tier: a capacity hint, not carried",
    "speed": "speed: a capacity hint, not carried",
    "user_profile_id": "user_profile_id: an id, not sent",
    "workspace_id": "workspace_id: an id, not sent",
}
"""Top-level request fields that are noted and not sent (``metadata`` is noted per key)."""

IMAGE_TOKENS = 1600
"""What :func:`count_tokens` counts for one image (about Anthropic's figure for a 1.15-megapixel
image; the dimensions are not read)."""

_CARRIED = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "output_format",
        "metadata",
    }
)
_CACHE_NOTE = HINTS["cache_control"]
_TOOL_KEYS = frozenset({"type", "name", "description", "input_schema", "strict", "cache_control"})
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_CANNOT = "cannot be carried over Chat Completions"


def _refuse(where: str, what: str) -> UntranslatableError:
    return UntranslatableError(f"{where}: {what} {_CANNOT}")


def _block_name(kind: Any) -> str:
    return kind if isinstance(kind, str) and kind.replace("_", "").isalnum() and len(kind) <= 40 else shown(str(kind))


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text part as a string, anything else as the list of parts."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        text: str = parts[0]["text"]
        return text
    return parts


class _Request:
    """One request's translation: the notes gathered on the way."""

    __slots__ = ("notes",)

    def __init__(self) -> None:
        self.notes: dict[str, None] = {}

    def note(self, text: str) -> None:
        self.notes[text] = None

    # -- text ------------------------------------------------------------------------------------
    def text_parts(self, blocks: Any, where: str) -> list[dict[str, Any]]:
        """Text blocks (a system prompt or a system turn) as text parts."""
        if not isinstance(blocks, list):
            raise _refuse(where, "content that is neither text nor a list of blocks")
        parts: list[dict[str, Any]] = []
        for j, block in enumerate(blocks):
            if not isinstance(block, dict) or block.get("type") != "text":
                kind = block.get("type") if isinstance(block, dict) else None
                raise _refuse(f"{where}[{j}]", f"a {_block_name(kind)} block in a system prompt")
            if "cache_control" in block:
                self.note(_CACHE_NOTE)
            parts.append({"type": "text", "text": _text(block, f"{where}[{j}]")})
        return parts

    # -- messages --------------------------------------------------------------------------------
    def messages(self, messages: Any, out: list[dict[str, Any]]) -> None:
        if not isinstance(messages, list):
            raise _refuse("messages", "a value that is not a list")
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, dict):
                raise _refuse(where, "a value that is not a message")
            role = message.get("role")
            content = message.get("content")
            if role == "user":
                self.user(content, where, out)
            elif role == "assistant":
                out.append(self.assistant(content, where))
            elif role == "system":
                body = content if isinstance(content, str) else _content(self.text_parts(content, f"{where}.content"))
                out.append({"role": "system", "content": body})
            else:
                raise _refuse(f"{where}.role", f"the role {shown(str(role))}")

    def user(self, content: Any, where: str, out: list[dict[str, Any]]) -> None:
        if isinstance(content, str):
            out.append({"role": "user", "content": content})
            return
        if not isinstance(content, list):
            raise _refuse(f"{where}.content", "content that is neither text nor a list of blocks")
        parts: list[dict[str, Any]] = []
        for j, block in enumerate(content):
            at = f"{where}.content[{j}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                parts.append({"type": "text", "text": _text(block, at)})
            elif kind == "image":
                parts.append(_image(block, at))
            elif kind == "tool_result":
                out.append(self.tool_result(block, at))  # tool results go before the turn's content
            else:
                raise _refuse(at, f"a {_block_name(kind)} block")
            if "cache_control" in block:
                self.note(_CACHE_NOTE)
        if parts or not content:
            out.append({"role": "user", "content": _content(parts) if parts else ""})

    def tool_result(self, block: dict[str, Any], where: str) -> dict[str, Any]:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            raise _refuse(where, "a tool result without a tool_use_id")
        content = block.get("content")
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        elif isinstance(content, list):
            texts: list[str] = []
            for k, inner in enumerate(content):
                at = f"{where}.content[{k}]"
                kind = inner.get("type") if isinstance(inner, dict) else None
                if kind == "text":
                    texts.append(_text(inner, at))
                elif kind == "tool_reference":
                    texts.append(f"Tool loaded: {inner.get('tool_name', '')}")
                elif kind == "image":
                    raise _refuse(at, "an image inside a tool result")
                else:
                    raise _refuse(at, f"a {_block_name(kind)} block inside a tool result")
                if "cache_control" in inner:
                    self.note(_CACHE_NOTE)
            text = "\n".join(texts)
        else:
            raise _refuse(f"{where}.content", "content that is neither text nor a list of blocks")
        if block.get("is_error") is True:
            text = "Error: " + text
        return {"role": "tool", "tool_call_id": call_id, "content": text}

    def assistant(self, content: Any, where: str) -> dict[str, Any]:
        if isinstance(content, str):
            return {"role": "assistant", "content": content}
        if not isinstance(content, list):
            raise _refuse(f"{where}.content", "content that is neither text nor a list of blocks")
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        thinking: list[str] = []
        for j, block in enumerate(content):
            at = f"{where}.content[{j}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                parts.append({"type": "text", "text": _text(block, at)})
            elif kind == "tool_use":
                name, call_id = block.get("name"), block.get("id")
                if not isinstance(name, str) or not isinstance(call_id, str):
                    raise _refuse(at, "a tool_use block without a name and an id")
                arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            elif kind == "thinking":
                text = block.get("thinking")
                if isinstance(text, str) and text:
                    thinking.append(text)
            else:
                raise _refuse(at, f"a {_block_name(kind)} block")
            if "cache_control" in block:
                self.note(_CACHE_NOTE)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": _content(parts) if parts else (None if calls else ""),
        }
        if calls:
            message["tool_calls"] = calls
        if thinking:
            message["reasoning_content"] = "\n".join(thinking)
        return message

    # -- tools -----------------------------------------------------------------------------------
    def tools(self, tools: Any) -> tuple[list[dict[str, Any]], set[str]]:
        """The custom tools as functions, and the names of the hosted tools withdrawn."""
        if not isinstance(tools, list):
            raise _refuse("tools", "a value that is not a list")
        functions: list[dict[str, Any]] = []
        withdrawn: set[str] = set()
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict):
                raise _refuse(f"tools[{i}]", "a value that is not a tool")
            kind = tool.get("type")
            name = tool.get("name")
            if kind is not None and kind != "custom":
                self.note(f"tools[{i}] {_block_name(kind)}: a hosted tool, withdrawn")
                if isinstance(name, str):
                    withdrawn.add(name)
                continue
            if not isinstance(name, str):
                raise _refuse(f"tools[{i}]", "a custom tool without a name")
            function: dict[str, Any] = {"name": name}
            if "description" in tool:
                function["description"] = tool["description"]
            function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
            if "strict" in tool:
                function["strict"] = tool["strict"]
            functions.append({"type": "function", "function": function})
            if "cache_control" in tool:
                self.note(_CACHE_NOTE)
            for key in tool.keys() - _TOOL_KEYS:
                self.note(
                    "tools[].defer_loading: not carried (deferred tools are offered up front)"
                    if key == "defer_loading"
                    else f"tools[].{_block_name(key)}: not carried"
                )
        return functions, withdrawn

    def tool_choice(
        self, choice: Any, functions: list[dict[str, Any]], withdrawn: set[str], chat: dict[str, Any]
    ) -> None:
        if not isinstance(choice, dict):
            raise _refuse("tool_choice", "a value that is not an object")
        kind = choice.get("type")
        value: Any
        if kind == "auto":
            value = "auto"
        elif kind == "any":
            value = "required"
        elif kind == "none":
            value = "none"
        elif kind == "tool":
            name = choice.get("name")
            if name in withdrawn:
                raise _refuse("tool_choice", f"the hosted tool {shown(str(name))} (withdrawn)")
            if not isinstance(name, str):
                raise _refuse("tool_choice", "a tool choice without a name")
            value = {"type": "function", "function": {"name": name}}
        else:
            raise _refuse("tool_choice.type", f"the choice {_block_name(kind)}")
        if not functions:
            if kind != "none":
                self.note("tool_choice: no tool left to choose, not carried")
            return
        chat["tool_choice"] = value
        if choice.get("disable_parallel_tool_use") is True:
            chat["parallel_tool_calls"] = False

    # -- reasoning -------------------------------------------------------------------------------
    def reasoning(self, body: dict[str, Any], chat: dict[str, Any]) -> None:
        thinking = body.get("thinking")
        config = body.get("output_config")
        effort: Any = None
        if config is not None:
            if not isinstance(config, dict):
                raise _refuse("output_config", "a value that is not an object")
            extra = sorted(config.keys() - {"effort", "format"})
            if extra:
                raise _refuse(f"output_config.{_block_name(extra[0])}", "this field")
            effort = config.get("effort")
            if effort is not None and effort not in _EFFORTS:
                raise _refuse("output_config.effort", f"the effort {shown(str(effort))}")
            if config.get("format") is not None:
                chat["response_format"] = _response_format(config["format"], "output_config.format")
        if body.get("output_format") is not None:
            chat["response_format"] = _response_format(body["output_format"], "output_format")
        asked = effort is not None
        if thinking is not None:
            if not isinstance(thinking, dict):
                raise _refuse("thinking", "a value that is not an object")
            kind = thinking.get("type")
            if kind == "disabled":
                self.note("thinking disabled: not carried (the upstream's default applies)")
                if asked:
                    self.note("output_config.effort: not carried (thinking is disabled)")
                return
            if kind == "enabled" and effort is None:
                budget = thinking.get("budget_tokens")
                if isinstance(budget, int):
                    effort = "low" if budget < 8192 else "medium" if budget < 24576 else "high"
            elif kind not in ("enabled", "adaptive", "between_tools"):
                raise _refuse("thinking.type", f"the thinking mode {_block_name(kind)}")
            if thinking.get("display") is not None:
                self.note("thinking.display: not carried")
        if effort is not None:
            chat["reasoning_effort"] = _EFFORTS[effort]
            if _EFFORTS[effort] != effort:
                self.note(f"output_config.effort {effort}: carried as high")


def _text(block: dict[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise _refuse(where, "a text block without text")
    return text


def _image(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _refuse(where, "an image without a source")
    kind = source.get("type")
    if kind == "base64" and isinstance(source.get("data"), str):
        url = f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"
    elif kind == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise _refuse(f"{where}.source", f"an image of source {_block_name(kind)}")
    return {"type": "image_url", "image_url": {"url": url}}


def _response_format(form: Any, where: str) -> dict[str, Any]:
    if not isinstance(form, dict) or form.get("type") != "json_schema" or not isinstance(form.get("schema"), dict):
        raise _refuse(where, "an output format other than a json_schema with its schema")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": form["schema"], "strict": True}}


class MessagesTranslator:
    """Anthropic Messages over Chat Completions (the gateway's ``Translator`` for ``/v1/messages``)."""

    def request(self, body: dict[str, Any]) -> Translated:
        """The Chat Completions request for a Messages ``body``; :class:`UntranslatableError` for
        what cannot be carried."""
        if not isinstance(body, dict):
            raise _refuse("the request", "a body that is not a JSON object")
        build = _Request()
        for key in body.keys() - _CARRIED:
            if key not in HINTS:
                raise _refuse(_block_name(key), "this field")
            build.note(HINTS[key])
        chat: dict[str, Any] = {}
        for key in ("model", "max_tokens", "temperature", "top_p", "top_k"):
            if body.get(key) is not None:
                chat[key] = body[key]
        messages: list[dict[str, Any]] = []
        system = body.get("system")
        if isinstance(system, str):
            messages.append({"role": "system", "content": system})
        elif system is not None:
            parts = build.text_parts(system, "system")
            if parts:
                messages.append({"role": "system", "content": _content(parts)})
        build.messages(body.get("messages"), messages)
        chat["messages"] = messages
        stops = body.get("stop_sequences")
        if stops:
            chat["stop"] = stops
        if body.get("stream") is True:
            chat["stream"] = True
            chat["stream_options"] = {"include_usage": True}
        elif "stream" in body:
            chat["stream"] = bool(body["stream"])
        if body.get("tools") is not None:
            functions, withdrawn = build.tools(body["tools"])
            if functions:
                chat["tools"] = functions
        else:
            functions, withdrawn = [], set()
        if body.get("tool_choice") is not None:
            build.tool_choice(body["tool_choice"], functions, withdrawn, chat)
        build.reasoning(body, chat)
        metadata = body.get("metadata")
        if isinstance(metadata, dict):
            for key in metadata:
                build.note(
                    "metadata.user_id: an id, not sent"
                    if key == "user_id"
                    else f"metadata.{_block_name(key)}: not carried"
                )
        elif metadata is not None:
            build.note("metadata: not carried")
        return Translated(chat, list(build.notes))

    def response(self, chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        """A whole Chat Completions answer as a Messages answer; ``ValueError`` for a tool call
        whose arguments are not a JSON object."""
        choices = chat.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        content: list[dict[str, Any]] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        text = message.get("content")
        if isinstance(text, list):
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if isinstance(text, str) and text:
            content.append({"type": "text", "text": text})
        calls = message.get("tool_calls") or ()
        for call in calls:
            if not isinstance(call, dict):
                continue
            function = call.get("function") or {}
            name = function.get("name") or ""
            content.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or _tool_id(),
                    "name": name,
                    "input": _arguments(function.get("arguments"), name),
                }
            )
        reason, matched = _stop(choice, request.get("stop_sequences"), bool(calls))
        return {
            "id": _message_id(),
            "type": "message",
            "role": "assistant",
            "model": request.get("model") or chat.get("model") or "",
            "content": content,
            "stop_reason": reason,
            "stop_sequence": matched,
            "usage": _usage(chat.get("usage")),
        }

    def stream(self, request: dict[str, Any]) -> MessagesStream:
        """A translator for one streamed answer to ``request``."""
        return MessagesStream(str(request.get("model") or ""), request.get("stop_sequences") or ())


def _message_id() -> str:
    return "msg_" + uuid.uuid4().hex


def _tool_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def _arguments(arguments: Any, name: str) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"the call of the tool {shown(name)} has arguments that are not a JSON object")
    return value


def _stop(choice: dict[str, Any], stops: Any, called: bool) -> tuple[str, str | None]:
    finish = choice.get("finish_reason")
    if finish == "length":
        return "max_tokens", None
    if called or finish in ("tool_calls", "function_call"):
        return "tool_use", None
    if finish == "content_filter":
        return "refusal", None
    matched = choice.get("stop_reason") or choice.get("matched_stop")  # vLLM, SGLang
    if isinstance(matched, str) and stops and matched in stops:
        return "stop_sequence", matched
    return "end_turn", None


def _usage(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {"input_tokens": 0, "output_tokens": 0}
    prompt = usage.get("prompt_tokens") or 0
    details = usage.get("prompt_tokens_details")
    cached = (details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return {
        "input_tokens": max(prompt - cached, 0),
        "output_tokens": usage.get("completion_tokens") or 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


_DELTA = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":{"type":"%s","%s":%s}}\n\n'
)
_BLOCK_STOP = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n'
_BLOCK_START = b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,"content_block":%s}\n\n'
_TEXT_START = b'{"type":"text","text":""}'
_THINKING_START = b'{"type":"thinking","thinking":"","signature":""}'
_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


class MessagesStream:
    """One streamed Chat Completions answer as Anthropic Messages events: ``message_start``,
    each content block's start, deltas and stop, then ``message_delta`` and ``message_stop``.
    Each chunk is parsed once and costs what its size costs."""

    __slots__ = (
        "_block",
        "_ended",
        "_finish",
        "_kind",
        "_matched",
        "_model",
        "_next",
        "_started",
        "_stops",
        "_tools",
        "_usage",
    )

    def __init__(self, model: str, stops: Sequence[str] = ()) -> None:
        self._model = model
        self._stops = stops
        self._started = False
        self._ended = False
        self._block = -1  # the open block's index (-1: none open)
        self._kind = ""  # the open block's kind: text, thinking or tool
        self._next = 0
        self._tools: dict[int, int] = {}  # a Chat tool call's index → its block's index
        self._finish: Any = None
        self._matched: Any = None
        self._usage: Any = None

    def feed(self, data: str) -> bytes:
        """One upstream event's data: the Messages events it completes."""
        if self._ended or data == "[DONE]":
            return b""
        try:
            chunk = json.loads(data)
        except ValueError:
            return self.fail("the upstream sent an event that is not JSON")
        if not isinstance(chunk, dict):
            return self.fail("the upstream sent an event that is not a JSON object")
        error = chunk.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            return self.fail(str(message or "the upstream reported an error"))
        out: list[bytes] = []
        if not self._started:
            out.append(self._start())
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if choices and isinstance(choices[0], dict):
            choice = choices[0]
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                self._open("thinking", _THINKING_START, out)
                out.append(_DELTA % (self._block, b"thinking_delta", b"thinking", _json(reasoning)))
            text = delta.get("content")
            if text and isinstance(text, str):
                self._open("text", _TEXT_START, out)
                out.append(_DELTA % (self._block, b"text_delta", b"text", _json(text)))
            calls = delta.get("tool_calls")
            if calls:
                self._calls(calls, out)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
                self._matched = choice.get("stop_reason") or choice.get("matched_stop")
        return b"".join(out)

    def finish(self) -> bytes:
        """The upstream stream ended: the open block's stop, ``message_delta`` and ``message_stop``."""
        if self._ended:
            return b""
        self._ended = True
        out: list[bytes] = []
        if not self._started:
            out.append(self._start())
        self._close(out)
        reason, matched = _stop(
            {"finish_reason": self._finish, "stop_reason": self._matched}, self._stops, bool(self._tools)
        )
        usage: dict[str, int] = {"output_tokens": 0} if not isinstance(self._usage, dict) else _usage(self._usage)
        usage.pop("cache_creation_input_tokens", None)
        delta = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": matched}, "usage": usage}
        out.append(b"event: message_delta\ndata: " + _json(delta) + b"\n\n")
        out.append(_MESSAGE_STOP)
        return b"".join(out)

    def fail(self, message: str) -> bytes:
        """The stream broke: one Anthropic ``error`` event, and nothing after it."""
        if self._ended:
            return b""
        self._ended = True
        return error_event("messages", message)

    def _start(self) -> bytes:
        self._started = True
        message: dict[str, Any] = {
            "id": _message_id(),
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return b"event: message_start\ndata: " + _json({"type": "message_start", "message": message}) + b"\n\n"

    def _close(self, out: list[bytes]) -> None:
        if self._block >= 0:
            out.append(_BLOCK_STOP % self._block)
            self._block = -1
            self._kind = ""

    def _open(self, kind: str, start: bytes, out: list[bytes]) -> None:
        if self._kind != kind:
            self._close(out)
            self._block = self._next
            self._next += 1
            self._kind = kind
            out.append(_BLOCK_START % (self._block, start))

    def _calls(self, calls: Iterable[Any], out: list[bytes]) -> None:
        for position, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            index = call.get("index", position)
            function = call.get("function") or {}
            block = self._tools.get(index)
            if block is None:  # a new call: its own block
                self._close(out)
                block = self._block = self._tools[index] = self._next
                self._next += 1
                self._kind = "tool"
                start: dict[str, Any] = {
                    "type": "tool_use",
                    "id": call.get("id") or _tool_id(),
                    "name": function.get("name") or "",
                    "input": {},
                }
                out.append(_BLOCK_START % (block, _json(start)))
            arguments = function.get("arguments")
            if arguments and isinstance(arguments, str):
                out.append(_DELTA % (block, b"input_json_delta", b"partial_json", _json(arguments)))


def count_tokens(body: dict[str, Any]) -> dict[str, int]:
    """An estimate for ``/v1/messages/count_tokens``, which a Chat-only upstream cannot answer:
    the characters of the text the request carries (system, turns, tool calls and results, tool
    definitions) divided by 4, plus :data:`IMAGE_TOKENS` per image."""
    chars = 0
    images = 0

    def blocks(content: Any) -> None:
        nonlocal chars, images
        if isinstance(content, str):
            chars += len(content)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += len(block.get("text") or "")
            elif kind == "thinking":
                chars += len(block.get("thinking") or "")
            elif kind == "tool_use":
                chars += len(block.get("name") or "") + len(json.dumps(block.get("input", {}), ensure_ascii=False))
            elif kind == "tool_result":
                blocks(block.get("content"))
            elif kind == "tool_reference":
                chars += len(block.get("tool_name") or "")
            elif kind == "image":
                images += 1

    blocks(body.get("system"))
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            blocks(message.get("content"))
    for tool in body.get("tools") or ():
        if isinstance(tool, dict) and tool.get("type") in (None, "custom"):
            chars += len(tool.get("name") or "") + len(tool.get("description") or "")
            chars += len(json.dumps(tool.get("input_schema") or {}, ensure_ascii=False))
    return {"input_tokens": (chars + 3) // 4 + images * IMAGE_TOKENS}
