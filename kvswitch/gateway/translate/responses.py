"""The OpenAI Responses API (Codex) carried over a Chat Completions upstream.

The request: ``instructions`` and ``developer`` / ``system`` messages become system messages
(Chat servers such as llama.cpp know no ``developer`` role), adjacent ones joined into one
(many chat templates take a single leading system message). ``function_call`` items become an
assistant message's ``tool_calls`` (consecutive calls, and the assistant text just before
them, in one message); ``function_call_output`` items become ``tool`` messages, and an image
a tool returned follows the tool results as a user message (a Chat tool message holds text
only). A ``reasoning`` item's readable text (its ``content``, else its ``summary``) rides on
the next assistant message as ``reasoning_content``; encrypted reasoning cannot be carried and
is noted. Items the upstream could not have produced or cannot read (hosted tool calls, item
references, files…) are refused with :class:`UntranslatableError`, naming their path.

Tools: a ``function`` tool is a Chat function tool. A ``namespace`` tool's nested tools are
offered flat, each named ``<namespace>__<name>`` (``<namespace><name>`` when the namespace
already ends in ``_``), a name Chat Completions accepts (``[A-Za-z0-9_-]``); the namespace's
own description is not carried. A call to such a tool comes back as Codex dispatches it: a
``function_call`` item with the tool's own ``name`` and the ``namespace`` field. A ``custom``
(freeform) tool is offered as a function with one string parameter, ``input`` (its grammar, if
any, in that parameter's description); its calls come back as ``custom_tool_call`` items with
that string as ``input``, and ``custom_tool_call`` / ``custom_tool_call_output`` items in the
input are carried as a function call with ``{"input": …}`` arguments and a tool message.
Hosted tools (web search, file search, code interpreter…) are withdrawn from the offer, noted.

The answer: reasoning text (``reasoning_content``, or vLLM's ``reasoning``) becomes a
``reasoning`` item whose ``summary`` holds it, streamed as ``response.reasoning_summary_text``
events, the ones Codex shows by default (raw ``reasoning_text`` shows only on request). A
Chat answer cut by ``length`` ends ``incomplete`` (``max_output_tokens``), streamed with the
terminal ``response.incomplete`` event as the Responses API does. A failure is one
``response.failed`` event carrying the message twice: in ``response.error`` (read by Codex,
with the upstream's own code, e.g. ``context_length_exceeded``) and as a top-level ``error``
(which the ``openai`` SDK raises as ``APIError``). The answer's
response object does not echo the offered ``tools`` or the ``instructions`` (the client has
them; echoing would re-encode the largest part of the request three times a stream).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kvswitch.gateway.translate import StreamTranslator, Translated, UntranslatableError
from kvswitch.http_serving import shown

__all__ = ["ResponsesStream", "ResponsesTranslator", "chat_tool_name"]

_CARRIED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_output_tokens",
        "temperature",
        "top_p",
        "top_logprobs",
        "text",
        "stream",
    }
)
"""Fields carried over (``reasoning`` too, its ``effort``; ``background`` when false)."""

_HINTS = frozenset(
    {
        "store",
        "include",
        "prompt_cache_key",
        "client_metadata",
        "metadata",
        "user",
        "service_tier",
        "safety_identifier",
        "truncation",
        "stream_options",
        "prompt_cache_retention",
        "prompt_cache_options",
        "context_management",
        "max_tool_calls",
    }
)
"""Fields with no bearing on a Chat Completions answer: noted, not sent (``max_tool_calls``
limits hosted tools only, which are withdrawn)."""

_STATELESS = {
    "previous_response_id": "the upstream keeps no responses; send the whole conversation",
    "conversation": "the upstream keeps no conversations; send the whole conversation",
    "prompt": "the upstream keeps no stored prompts; send the prompt itself",
}

_HOSTED = frozenset(
    {
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "computer_use_preview",
        "computer",
        "local_shell",
        "shell",
        "apply_patch",
        "mcp",
        "tool_search",
    }
)
"""Tool types the Responses API (or its client, through call items of their own) runs: withdrawn
from a Chat Completions offer (a dated variant such as ``web_search_2025_08_26`` too)."""

_CUSTOM_INPUT = "The tool's whole input, as free text."
_WORD = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _utf8(text: str) -> bytes:
    """Events as bytes; half of a surrogate pair (an upstream that split one across two
    chunks) becomes ``?`` rather than an error."""
    return text.encode("utf-8", "replace")


def _word(value: object) -> str:
    """A client's name for a message: as it is when it is a plain word, else quoted safely."""
    if isinstance(value, str) and _WORD.fullmatch(value):
        return value
    return shown(str(value))


def _a(value: object) -> str:
    """A client's name with its article: ``a web_search_call``, ``an item_reference``."""
    word = _word(value)
    return f"an {word}" if word[:1] in "aeiouAEIOU" else f"a {word}"


def _refuse(path: str, what: str) -> UntranslatableError:
    return UntranslatableError(f"{path}: {what} cannot be carried over Chat Completions")


def chat_tool_name(name: str, namespace: str | None) -> str:
    """The Chat Completions name of a tool offered inside ``namespace`` (``name`` itself when
    there is none)."""
    if not namespace:
        return name
    return f"{namespace}{name}" if namespace.endswith("_") else f"{namespace}__{name}"


def _hosted(kind: object) -> bool:
    return isinstance(kind, str) and kind.rstrip("0123456789_") in _HOSTED


ToolNames = dict[str, tuple[str, str | None, bool]]
"""Chat tool name → (the tool's own name, its namespace, whether it is a custom tool), for the
tools whose calls do not come back as a plain ``function_call`` of the same name."""


def tool_names(tools: object) -> ToolNames:
    """The names to map back, from a Responses request's ``tools``."""
    names: ToolNames = {}
    if not isinstance(tools, list):
        return names
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind == "custom" and isinstance(tool.get("name"), str):
            names[tool["name"]] = (tool["name"], None, True)
        elif kind == "namespace" and isinstance(tool.get("tools"), list):
            space = tool.get("name") if isinstance(tool.get("name"), str) else None
            for inner in tool["tools"]:
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    custom = inner.get("type") == "custom"
                    names[chat_tool_name(inner["name"], space)] = (inner["name"], space, custom)
    return names


# -- the request ---------------------------------------------------------------------------------
class _Request:
    """One Responses request turned into a Chat Completions body."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.messages: list[dict[str, Any]] = []
        self._reasoning: list[tuple[str, str]] = []  # (path, text) waiting for an assistant turn
        self._images: list[dict[str, Any]] = []  # image parts from tool results
        self._offered: set[str] = set()

    # -- tools
    def tools(self, tools: object) -> list[dict[str, Any]]:
        if not isinstance(tools, list):
            raise UntranslatableError("tools: expected a list")
        out: list[dict[str, Any]] = []
        for i, tool in enumerate(tools):
            path = f"tools[{i}]"
            kind = tool.get("type") if isinstance(tool, dict) else None
            if kind in ("function", "custom"):
                out.append(self._tool(tool, path, None))
            elif kind == "namespace":
                space = tool.get("name")
                inner = tool.get("tools")
                if not isinstance(space, str) or not space or not isinstance(inner, list):
                    raise UntranslatableError(f"{path}: a namespace tool needs a name and tools")
                for j, nested in enumerate(inner):
                    nested_kind = nested.get("type") if isinstance(nested, dict) else None
                    if nested_kind not in ("function", "custom"):
                        raise _refuse(f"{path}.tools[{j}]", f"{_a(nested_kind)} tool in a namespace")
                    out.append(self._tool(nested, f"{path}.tools[{j}]", space))
            elif _hosted(kind):
                self.notes.append(f"{path} {kind}: a hosted tool, withdrawn")
            else:
                raise _refuse(path, f"{_a(kind)} tool")
        return out

    def _tool(self, tool: dict[str, Any], path: str, space: str | None) -> dict[str, Any]:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise UntranslatableError(f"{path}: a tool needs a name")
        chat = chat_tool_name(name, space)
        if chat in self._offered:
            raise UntranslatableError(f"{path}: the tool name {_word(chat)} is offered twice")
        self._offered.add(chat)
        function: dict[str, Any] = {"name": chat}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        if tool.get("type") == "custom":
            function["parameters"] = _custom_parameters(tool.get("format"))
        else:
            if tool.get("parameters") is not None:
                function["parameters"] = tool["parameters"]
            if tool.get("strict") is not None:
                function["strict"] = tool["strict"]
        return {"type": "function", "function": function}

    def tool_choice(self, choice: object) -> object:
        if choice in ("auto", "none", "required"):
            return choice
        kind = choice.get("type") if isinstance(choice, dict) else None
        if isinstance(choice, dict) and kind in ("function", "custom"):
            name = choice.get("name")
            if not isinstance(name, str):
                raise UntranslatableError("tool_choice: a tool choice needs a name")
            return {"type": "function", "function": {"name": chat_tool_name(name, choice.get("namespace"))}}
        if isinstance(choice, dict) and kind == "allowed_tools":
            allowed = []
            for k, tool in enumerate(choice.get("tools") or []):
                tool_kind = tool.get("type") if isinstance(tool, dict) else None
                if tool_kind in ("function", "custom") and isinstance(tool.get("name"), str):
                    name = chat_tool_name(tool["name"], tool.get("namespace"))
                    allowed.append({"type": "function", "function": {"name": name}})
                elif _hosted(tool_kind):
                    self.notes.append(f"tool_choice.tools[{k}] {tool_kind}: a hosted tool, withdrawn")
                else:
                    raise _refuse(f"tool_choice.tools[{k}]", f"{_a(tool_kind)} tool")
            return {"type": "allowed_tools", "allowed_tools": {"mode": choice.get("mode", "auto"), "tools": allowed}}
        if _hosted(kind):
            raise UntranslatableError(f"tool_choice: it requires the hosted tool {kind}, which the upstream cannot run")
        raise _refuse("tool_choice", f"the tool choice {_word(kind or choice)}")

    # -- input
    def system(self, text: str) -> None:
        self._flush_images()
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "system" and isinstance(last["content"], str):
            last["content"] = f"{last['content']}\n\n{text}"
        else:
            self.messages.append({"role": "system", "content": text})

    def items(self, items: object) -> None:
        if isinstance(items, str):
            self.messages.append({"role": "user", "content": items})
            return
        if not isinstance(items, list):
            raise UntranslatableError("input: expected a string or a list of items")
        for i, item in enumerate(items):
            path = f"input[{i}]"
            if not isinstance(item, dict):
                raise UntranslatableError(f"{path}: expected an object")
            kind = item.get("type", "message")
            if kind == "message":
                self._message(item, path)
            elif kind in ("function_call", "custom_tool_call"):
                self._call(item, path, kind == "custom_tool_call")
            elif kind in ("function_call_output", "custom_tool_call_output"):
                self._output(item, path)
            elif kind == "reasoning":
                self._reasoning_item(item, path)
            else:
                raise _refuse(path, f"{_a(kind)} item")
        self._flush_images()
        self._drop_reasoning()

    def _message(self, item: dict[str, Any], path: str) -> None:
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            self.system(_text(content, path, "\n\n"))
        elif role == "user":
            self._flush_images()
            self._drop_reasoning()
            self.messages.append({"role": "user", "content": _user_content(content, path)})
        elif role == "assistant":
            self._flush_images()
            message: dict[str, Any] = {"role": "assistant", "content": None}
            text, refusal = _assistant_content(content, path)
            message["content"] = text
            if refusal:
                message["refusal"] = refusal
            self._take_reasoning(message)
            self.messages.append(message)
        else:
            raise _refuse(f"{path}.role", f"the role {_word(role)}")

    def _call(self, item: dict[str, Any], path: str, custom: bool) -> None:
        self._flush_images()
        name = item.get("name")
        call_id = item.get("call_id")
        if not isinstance(name, str) or not isinstance(call_id, str):
            raise UntranslatableError(f"{path}: a tool call needs a name and a call_id")
        if custom:
            arguments = _JSON({"input": item.get("input") or ""})
        else:
            given = item.get("arguments")
            arguments = given if isinstance(given, str) else _JSON(given if given is not None else {})
        last = self.messages[-1] if self.messages else None
        if last is None or last["role"] != "assistant":
            last = {"role": "assistant", "content": None}
            self.messages.append(last)
        self._take_reasoning(last)
        last.setdefault("tool_calls", []).append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": chat_tool_name(name, item.get("namespace")), "arguments": arguments},
            }
        )

    def _output(self, item: dict[str, Any], path: str) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            raise UntranslatableError(f"{path}: a tool result needs a call_id")
        output = item.get("output")
        if isinstance(output, str):
            text = output
        elif isinstance(output, list):
            texts: list[str] = []
            for k, part in enumerate(output):
                converted = _part(part, f"{path}.output[{k}]", "user")
                if converted["type"] == "text":
                    texts.append(converted["text"])
                else:
                    if not self._images:
                        self.notes.append(
                            f"{path} {item.get('type')}: its images follow the tool results as a user message"
                        )
                    self._images.append(converted)
            text = "\n".join(texts)
        elif isinstance(output, dict) and isinstance(output.get("content"), str):
            text = output["content"]  # an older client's {"content", "success"}
        else:
            text = "" if output is None else _JSON(output)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def _reasoning_item(self, item: dict[str, Any], path: str) -> None:
        texts = _texts(item.get("content")) or _texts(item.get("summary"))
        if texts:
            self._reasoning.append((path, "\n\n".join(texts)))
        elif item.get("encrypted_content"):
            self.notes.append(f"{path} reasoning: encrypted, not carried")

    def _take_reasoning(self, message: dict[str, Any]) -> None:
        if not self._reasoning:
            return
        text = "\n\n".join(t for _, t in self._reasoning)
        before = message.get("reasoning_content")
        message["reasoning_content"] = f"{before}\n\n{text}" if before else text
        self._reasoning.clear()

    def _drop_reasoning(self) -> None:
        for path, _ in self._reasoning:
            self.notes.append(f"{path} reasoning: no assistant turn follows it, not carried")
        self._reasoning.clear()

    def _flush_images(self) -> None:
        if self._images:
            self.messages.append({"role": "user", "content": self._images})
            self._images = []


def _custom_parameters(fmt: object) -> dict[str, Any]:
    described = _CUSTOM_INPUT
    if isinstance(fmt, dict) and fmt.get("type") == "grammar" and fmt.get("definition"):
        described += f" It follows this {fmt.get('syntax') or ''} grammar:\n{fmt['definition']}"
    return {
        "type": "object",
        "properties": {"input": {"type": "string", "description": described}},
        "required": ["input"],
        "additionalProperties": False,
    }


def _texts(parts: object) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]]


def _part(part: object, path: str, role: str) -> dict[str, Any]:
    """One Responses content part as a Chat content part."""
    kind = part.get("type") if isinstance(part, dict) else None
    if not isinstance(part, dict) or kind is None:
        raise UntranslatableError(f"{path}: expected a content part")
    if kind in ("input_text", "output_text", "text"):
        text = part.get("text")
        return {"type": "text", "text": text if isinstance(text, str) else ""}
    if kind == "input_image" and role == "user":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise _refuse(path, "an image given by file_id (the upstream has no files)")
        image: dict[str, Any] = {"url": url}
        if part.get("detail") in ("low", "high", "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_audio" and role == "user" and isinstance(part.get("input_audio"), dict):
        return {"type": "input_audio", "input_audio": part["input_audio"]}
    if kind in ("input_image", "input_audio"):
        raise _refuse(path, f"an {kind} part in a {_word(role)} message")
    raise _refuse(path, f"{_a(kind)} part")


def _text(content: object, path: str, joint: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UntranslatableError(f"{path}.content: expected a string or a list of parts")
    texts = []
    for k, part in enumerate(content):
        converted = _part(part, f"{path}.content[{k}]", "system")
        texts.append(converted["text"])
    return joint.join(texts)


def _user_content(content: object, path: str) -> object:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UntranslatableError(f"{path}.content: expected a string or a list of parts")
    parts = [_part(p, f"{path}.content[{k}]", "user") for k, p in enumerate(content)]
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    return parts


def _assistant_content(content: object, path: str) -> tuple[str | None, str | None]:
    if isinstance(content, str) or content is None:
        return content, None
    if not isinstance(content, list):
        raise UntranslatableError(f"{path}.content: expected a string or a list of parts")
    texts: list[str] = []
    refusals: list[str] = []
    for k, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "refusal":
            refusals.append(str(part.get("refusal") or ""))
        else:
            texts.append(_part(part, f"{path}.content[{k}]", "assistant")["text"])
    return "".join(texts), ("".join(refusals) or None)


# -- the answer ----------------------------------------------------------------------------------
def _usage(usage: object) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    prompt_details = usage.get("prompt_tokens_details")
    completion_details = usage.get("completion_tokens_details")
    cached = prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else None
    reasoning = completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else None
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(cached or 0), "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(reasoning or 0)},
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }


def _custom_input(arguments: str) -> str:
    """A custom tool's input from the arguments of the function it was offered as."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    text = parsed.get("input") if isinstance(parsed, dict) else None
    return text if isinstance(text, str) else arguments


def _ending(finish: object) -> tuple[str, dict[str, Any] | None]:
    """The response status and ``incomplete_details`` for a Chat ``finish_reason``."""
    if finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if finish == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def _reasoning_of(holder: dict[str, Any]) -> str | None:
    text = holder.get("reasoning_content")
    if not isinstance(text, str) or not text:
        text = holder.get("reasoning")
    return text if isinstance(text, str) and text else None


class _Ids:
    """Ids for one answer: ``resp_…`` and its items', from one random hex."""

    def __init__(self) -> None:
        self.hex = uuid.uuid4().hex
        self.response = f"resp_{self.hex}"
        self._n = 0

    def item(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self.hex}_{self._n}"


def _response(request: dict[str, Any], ids: _Ids, created: int, status: str, model: object) -> dict[str, Any]:
    """A response object's frame (no output, no usage), echoing the request's small settings."""
    name = request.get("model")
    return {
        "id": ids.response,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": request.get("max_output_tokens"),
        "model": name if isinstance(name, str) else (model if isinstance(model, str) else ""),
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": request.get("reasoning"),
        "temperature": request.get("temperature"),
        "text": request.get("text"),
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": [],
        "top_p": request.get("top_p"),
        "truncation": "disabled",
        "usage": None,
        "metadata": request.get("metadata") or {},
    }


def _call_item(names: ToolNames, chat_name: str, arguments: str, call_id: str, ids: _Ids) -> dict[str, Any]:
    name, space, custom = names.get(chat_name, (chat_name, None, False))
    item: dict[str, Any]
    if custom:
        item = {
            "id": ids.item("ctc"),
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": name,
            "input": _custom_input(arguments),
        }
    else:
        item = {
            "id": ids.item("fc"),
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }
    if space:
        item["namespace"] = space
    return item


def _failure(message: object, code: object) -> tuple[str, str]:
    text = message if isinstance(message, str) and message else "the upstream failed"
    return text[:1000], code if isinstance(code, str) and code else "server_error"


class ResponsesTranslator:
    """The OpenAI Responses API over Chat Completions (see the module's text for the mapping)."""

    def request(self, body: dict[str, Any]) -> Translated:
        """The Chat Completions request for a Responses ``body``; :class:`UntranslatableError`
        for what cannot be carried (the message names the field)."""
        built = _Request()
        chat: dict[str, Any] = {}
        reasoning_effort: object = None
        for key, value in body.items():
            if value is None:
                continue
            if key in _HINTS:
                built.notes.append(f"{key}: not sent (a hint)")
            elif key in _STATELESS:
                raise UntranslatableError(f"{key}: {_STATELESS[key]}")
            elif key == "background":
                if value:
                    raise UntranslatableError("background: the upstream runs no background responses")
            elif key == "reasoning":
                reasoning_effort = self._reasoning(value, built.notes)
            elif key not in _CARRIED:
                raise _refuse(_word(key), "an unknown field")
        if body.get("model") is not None:
            chat["model"] = body["model"]
        instructions = body.get("instructions")
        if instructions is not None:
            if not isinstance(instructions, str):
                raise UntranslatableError("instructions: expected a string")
            built.system(instructions)
        if body.get("input") is not None:
            built.items(body["input"])
        chat["messages"] = built.messages
        if body.get("tools") is not None:
            tools = built.tools(body["tools"])
            if tools:
                chat["tools"] = tools
        choice = body.get("tool_choice")
        if choice is not None:
            carried = built.tool_choice(choice)
            if "tools" in chat:
                chat["tool_choice"] = carried
            elif choice not in ("auto", "none"):
                raise UntranslatableError(
                    "tool_choice: it requires a tool call, and no tool is left to offer (hosted tools are withdrawn)"
                )
        if body.get("parallel_tool_calls") is not None and "tools" in chat:
            chat["parallel_tool_calls"] = body["parallel_tool_calls"]
        for source, target in (("max_output_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p")):
            if body.get(source) is not None:
                chat[target] = body[source]
        if body.get("top_logprobs") is not None:
            chat["logprobs"] = True
            chat["top_logprobs"] = body["top_logprobs"]
        if reasoning_effort is not None:
            chat["reasoning_effort"] = reasoning_effort
        if body.get("text") is not None:
            self._format(body["text"], chat, built.notes)
        if body.get("stream"):
            chat["stream"] = True
            chat["stream_options"] = {"include_usage": True}
        elif "stream" in body:
            chat["stream"] = False
        return Translated(chat, built.notes)

    @staticmethod
    def _reasoning(value: object, notes: list[str]) -> object:
        if not isinstance(value, dict):
            raise UntranslatableError("reasoning: expected an object")
        for key, setting in value.items():
            if key != "effort" and setting is not None:
                notes.append(f"reasoning.{_word(key)}: not sent (a hint)")
        return value.get("effort")

    @staticmethod
    def _format(value: object, chat: dict[str, Any], notes: list[str]) -> None:
        if not isinstance(value, dict):
            raise UntranslatableError("text: expected an object")
        for key, setting in value.items():
            if setting is None:
                continue
            if key == "verbosity":
                notes.append("text.verbosity: not sent (a hint)")
            elif key != "format":
                raise _refuse(f"text.{_word(key)}", "an unknown field")
        fmt = value.get("format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if fmt is None or kind == "text":
            return
        if isinstance(fmt, dict) and kind == "json_schema":
            schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if fmt.get(k) is not None}
            chat["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif kind == "json_object":
            chat["response_format"] = {"type": "json_object"}
        else:
            raise _refuse("text.format", f"the format {_word(kind)}")

    def response(self, chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        """A whole Chat Completions answer as a Responses ``response`` object."""
        ids = _Ids()
        created = chat.get("created")
        out = _response(
            request, ids, created if isinstance(created, int) else int(time.time()), "completed", chat.get("model")
        )
        if chat.get("error"):
            error = chat["error"]
            text, code = _failure(
                error.get("message") if isinstance(error, dict) else error,
                error.get("code") if isinstance(error, dict) else None,
            )
            out["status"] = "failed"
            out["error"] = {"code": code, "message": text}
            return out
        choices = chat.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        message = choice.get("message") or {}
        status, details = _ending(choice.get("finish_reason"))
        out["status"], out["incomplete_details"] = status, details
        output: list[dict[str, Any]] = out["output"]
        reasoning = _reasoning_of(message)
        if reasoning:
            output.append(
                {"id": ids.item("rs"), "type": "reasoning", "summary": [{"type": "summary_text", "text": reasoning}]}
            )
        parts: list[dict[str, Any]] = []
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(_texts(content))
        if isinstance(content, str) and content:
            logprobs = choice.get("logprobs")
            parts.append(
                {
                    "type": "output_text",
                    "text": content,
                    "annotations": [],
                    "logprobs": (logprobs.get("content") or []) if isinstance(logprobs, dict) else [],
                }
            )
        if isinstance(message.get("refusal"), str) and message["refusal"]:
            parts.append({"type": "refusal", "refusal": message["refusal"]})
        if parts:
            output.append(
                {"id": ids.item("msg"), "type": "message", "role": "assistant", "status": status, "content": parts}
            )
        calls = message.get("tool_calls") or []
        if not calls and isinstance(message.get("function_call"), dict):
            calls = [{"function": message["function_call"]}]
        names = tool_names(request.get("tools")) if calls else {}
        for call in calls:
            function = call.get("function") or {}
            arguments = function.get("arguments")
            output.append(
                _call_item(
                    names,
                    str(function.get("name") or ""),
                    arguments if isinstance(arguments, str) else _JSON(arguments or {}),
                    call.get("id") or ids.item("call"),
                    ids,
                )
            )
        out["usage"] = _usage(chat.get("usage"))
        return out

    def stream(self, request: dict[str, Any]) -> ResponsesStream:
        """A translator for one streamed answer to ``request``."""
        return ResponsesStream(request)


# -- the stream ----------------------------------------------------------------------------------
@dataclass(slots=True)
class _Call:
    """One streamed tool call, by its Chat index."""

    call_id: str = ""
    chat_name: str = ""
    arguments: list[str] = field(default_factory=list)
    index: int | None = None  # its output index, once it is open
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Open:
    """The reasoning or message item being streamed."""

    kind: str  # "reasoning" or "message"
    index: int
    id: str
    text: list[str] = field(default_factory=list)
    logprobs: list[Any] = field(default_factory=list)
    head: str = ""  # the start of each delta event, up to its delta


class ResponsesStream(StreamTranslator):
    """Chat Completions chunks in, Responses stream events out: ``response.created`` and
    ``response.in_progress`` first, each output item between ``response.output_item.added`` and
    ``.done``, then ``response.completed`` (or ``response.incomplete``) with the usage of the
    Chat stream's last chunk. Each chunk is parsed once and costs what it holds."""

    def __init__(self, request: dict[str, Any]) -> None:
        self._request = request
        self._names = tool_names(request.get("tools"))
        self._ids = _Ids()
        self._created = int(time.time())
        self._seq = 0
        self._started = False
        self._ended = False
        self._done: list[dict[str, Any] | None] = []  # output items by index, once done
        self._open: _Open | None = None
        self._refusal: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._usage: object = None
        self._finish: object = None
        self._model: object = None

    # -- the protocol
    def feed(self, data: str) -> bytes:
        """One Chat Completions chunk (or ``[DONE]``): the Responses events it completes."""
        if self._ended:
            return b""
        text = data.strip()
        if not text:
            return b""
        if text == "[DONE]":
            return self.finish()
        try:
            chunk = json.loads(text)
        except ValueError:
            return self.fail("the upstream sent a stream event that is not JSON")
        if not isinstance(chunk, dict):
            return self.fail("the upstream sent a stream event that is not an object")
        if chunk.get("error"):
            error = chunk["error"]
            if isinstance(error, dict):
                return self._failed(*_failure(error.get("message"), error.get("code")))
            return self._failed(*_failure(str(error), None))
        out: list[str] = []
        if not self._started:
            self._start(out)
            self._model = chunk.get("model")
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    self._choice(choice, out)
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        return _utf8("".join(out))

    def finish(self) -> bytes:
        """The closing events: every open item done, then the terminal response event."""
        if self._ended:
            return b""
        out: list[str] = []
        if not self._started:
            self._start(out)
        self._close_all(out)
        status, details = _ending(self._finish)
        response = self._frame(status)
        response["incomplete_details"] = details
        response["output"] = [item for item in self._done if item is not None]
        response["usage"] = _usage(self._usage)
        kind = "response.incomplete" if status == "incomplete" else "response.completed"
        out.append(self._event(kind, {"type": kind, "response": response}))
        self._ended = True
        return _utf8("".join(out))

    def fail(self, message: str) -> bytes:
        """One ``response.failed`` event (nothing after it)."""
        if self._ended:
            return b""
        return self._failed(*_failure(message, None))

    # -- events
    def _event(self, kind: str, data: dict[str, Any]) -> str:
        data["sequence_number"] = self._seq
        self._seq += 1
        return f"event: {kind}\ndata: {_JSON(data)}\n\n"

    def _frame(self, status: str) -> dict[str, Any]:
        return _response(self._request, self._ids, self._created, status, self._model)

    def _start(self, out: list[str]) -> None:
        self._started = True
        frame = _JSON(self._frame("in_progress"))  # the same in both events: encoded once
        for kind in ("response.created", "response.in_progress"):
            out.append(f'event: {kind}\ndata: {{"type":"{kind}","response":{frame},"sequence_number":{self._seq}}}\n\n')
            self._seq += 1

    def _failed(self, message: str, code: str) -> bytes:
        self._ended = True
        response = self._frame("failed")
        response["error"] = {"code": code, "message": message}
        response["output"] = [item for item in self._done if item is not None]
        error = {"type": "server_error", "code": code, "message": message, "param": None}
        event = {"type": "response.failed", "response": response, "error": error}
        return _utf8(self._event("response.failed", event))

    def _added(self, item: dict[str, Any], out: list[str]) -> int:
        index = len(self._done)
        self._done.append(None)
        out.append(
            self._event(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        )
        return index

    def _item_done(self, index: int, item: dict[str, Any], out: list[str]) -> None:
        self._done[index] = item
        out.append(
            self._event(
                "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}
            )
        )

    # -- a chunk's choice
    def _choice(self, choice: dict[str, Any], out: list[str]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = _reasoning_of(delta)
            if reasoning:
                self._delta("reasoning", reasoning, None, out)
            content = delta.get("content")
            if isinstance(content, str) and content:
                logprobs = choice.get("logprobs")
                self._delta("message", content, logprobs.get("content") if isinstance(logprobs, dict) else None, out)
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                self._refusal.append(delta["refusal"])
            calls = delta.get("tool_calls")
            if not calls and isinstance(delta.get("function_call"), dict):
                calls = [{"index": 0, "function": delta["function_call"]}]
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict):
                        self._call_delta(call, out)
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
            self._close_all(out)

    def _delta(self, kind: str, text: str, logprobs: object, out: list[str]) -> None:
        current = self._open
        if current is None or current.kind != kind:
            self._close_open(out)
            current = self._open_item(kind, out)
        current.text.append(text)
        if isinstance(logprobs, list):
            current.logprobs.extend(logprobs)
        tail = _JSON(logprobs) if kind == "message" and isinstance(logprobs, list) else "[]"
        extra = f',"logprobs":{tail}' if kind == "message" else ""
        out.append(f'{current.head}{_JSON(text)}{extra},"sequence_number":{self._seq}}}\n\n')
        self._seq += 1

    def _open_item(self, kind: str, out: list[str]) -> _Open:
        if kind == "reasoning":
            item_id = self._ids.item("rs")
            index = self._added({"id": item_id, "type": "reasoning", "summary": []}, out)
            out.append(
                self._event(
                    "response.reasoning_summary_part.added",
                    {
                        "type": "response.reasoning_summary_part.added",
                        "item_id": item_id,
                        "output_index": index,
                        "summary_index": 0,
                        "part": {"type": "summary_text", "text": ""},
                    },
                )
            )
            event = "response.reasoning_summary_text.delta"
            where = f'"item_id":"{item_id}","output_index":{index},"summary_index":0'
        else:
            item_id = self._ids.item("msg")
            index = self._added(
                {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}, out
            )
            out.append(
                self._event(
                    "response.content_part.added",
                    {
                        "type": "response.content_part.added",
                        "item_id": item_id,
                        "output_index": index,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
                    },
                )
            )
            event = "response.output_text.delta"
            where = f'"item_id":"{item_id}","output_index":{index},"content_index":0'
        self._open = _Open(kind, index, item_id, head=f'event: {event}\ndata: {{"type":"{event}",{where},"delta":')
        return self._open

    def _close_open(self, out: list[str]) -> None:
        current, self._open = self._open, None
        if current is None:
            return
        text = "".join(current.text)
        base: dict[str, Any] = {"item_id": current.id, "output_index": current.index}
        part: dict[str, Any]
        if current.kind == "reasoning":
            part = {"type": "summary_text", "text": text}
            out.append(
                self._event(
                    "response.reasoning_summary_text.done",
                    {"type": "response.reasoning_summary_text.done", **base, "summary_index": 0, "text": text},
                )
            )
            out.append(
                self._event(
                    "response.reasoning_summary_part.done",
                    {"type": "response.reasoning_summary_part.done", **base, "summary_index": 0, "part": part},
                )
            )
            self._item_done(current.index, {"id": current.id, "type": "reasoning", "summary": [part]}, out)
            return
        out.append(
            self._event(
                "response.output_text.done",
                {
                    "type": "response.output_text.done",
                    **base,
                    "content_index": 0,
                    "text": text,
                    "logprobs": current.logprobs,
                },
            )
        )
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": current.logprobs}
        out.append(
            self._event(
                "response.content_part.done",
                {"type": "response.content_part.done", **base, "content_index": 0, "part": part},
            )
        )
        parts: list[dict[str, Any]] = [part]
        if self._refusal:
            parts.append(self._refusal_part(current.id, current.index, 1, out))
        self._item_done(
            current.index,
            {
                "id": current.id,
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if self._finish == "length" else "completed",
                "content": parts,
            },
            out,
        )

    def _refusal_part(self, item_id: str, index: int, content_index: int, out: list[str]) -> dict[str, Any]:
        refusal = "".join(self._refusal)
        self._refusal.clear()
        base = {"item_id": item_id, "output_index": index, "content_index": content_index}
        out.append(
            self._event(
                "response.content_part.added",
                {"type": "response.content_part.added", **base, "part": {"type": "refusal", "refusal": ""}},
            )
        )
        out.append(self._event("response.refusal.delta", {"type": "response.refusal.delta", **base, "delta": refusal}))
        out.append(self._event("response.refusal.done", {"type": "response.refusal.done", **base, "refusal": refusal}))
        part = {"type": "refusal", "refusal": refusal}
        out.append(
            self._event("response.content_part.done", {"type": "response.content_part.done", **base, "part": part})
        )
        return part

    def _call_delta(self, delta: dict[str, Any], out: list[str]) -> None:
        position = delta.get("index", 0)
        key = position if isinstance(position, int) else 0
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call()
        if not call.call_id and isinstance(delta.get("id"), str):
            call.call_id = delta["id"]
        function = delta.get("function")
        if not isinstance(function, dict):
            return
        if not call.chat_name and isinstance(function.get("name"), str):
            call.chat_name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)
            if call.index is not None and call.item["type"] == "function_call":
                out.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": call.item["id"],
                            "output_index": call.index,
                            "delta": arguments,
                        },
                    )
                )
        if call.index is None and call.chat_name:
            self._open_call(call, out)

    def _open_call(self, call: _Call, out: list[str]) -> None:
        self._close_open(out)
        if not call.call_id:
            call.call_id = self._ids.item("call")
        item = _call_item(self._names, call.chat_name, "", call.call_id, self._ids)
        call.item = item
        if item["type"] == "custom_tool_call":
            call.index = len(self._done)  # its events all come when it is done
            self._done.append(None)
            return
        item["status"] = "in_progress"
        call.index = self._added(dict(item), out)
        if call.arguments:
            out.append(
                self._event(
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": call.index,
                        "delta": "".join(call.arguments),
                    },
                )
            )

    def _close_all(self, out: list[str]) -> None:
        self._close_open(out)
        if self._refusal:  # a refusal with no text before it
            self._open_item("message", out)
            self._close_open(out)
        calls, self._calls = self._calls, {}
        opened = sorted((c for c in calls.values() if c.index is not None), key=lambda c: c.index or 0)
        for call in opened + [calls[k] for k in sorted(calls) if calls[k].index is None]:
            if call.index is None:
                self._open_call(call, out)
            self._close_call(call, out)

    def _close_call(self, call: _Call, out: list[str]) -> None:
        assert call.index is not None
        arguments = "".join(call.arguments)
        item = call.item
        base = {"item_id": item["id"], "output_index": call.index}
        if item["type"] == "custom_tool_call":
            text = _custom_input(arguments)
            out.append(
                self._event(
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": call.index, "item": {**item, "input": ""}},
                )
            )
            out.append(
                self._event(
                    "response.custom_tool_call_input.delta",
                    {"type": "response.custom_tool_call_input.delta", **base, "delta": text},
                )
            )
            out.append(
                self._event(
                    "response.custom_tool_call_input.done",
                    {"type": "response.custom_tool_call_input.done", **base, "input": text},
                )
            )
            self._item_done(call.index, {**item, "input": text}, out)
            return
        out.append(
            self._event(
                "response.function_call_arguments.done",
                {"type": "response.function_call_arguments.done", **base, "name": item["name"], "arguments": arguments},
            )
        )
        self._item_done(call.index, {**item, "arguments": arguments, "status": "completed"}, out)
