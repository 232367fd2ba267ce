"""When a streamed answer's first token came: one rule for the four APIs kvswitch sees.

The probe, the lab router and the gateway all time a stream by its first *token-bearing*
event, never by the first byte or a role-only chunk:

* Chat Completions: a ``choices[].delta`` with non-empty ``content``, ``reasoning`` or
  ``reasoning_content``, or any ``tool_calls``;
* Completions: a non-empty ``choices[].text``;
* Responses: ``response.output_text.delta`` and the other ``….delta`` events that carry text
  (reasoning, reasoning summary, refusal, function-call arguments) with a non-empty ``delta``;
* Anthropic Messages: ``content_block_delta`` whose delta carries text, thinking or tool input.

:class:`StreamClock` watches a stream's bytes go by (it never changes them) and keeps the
first token, the gaps between tokens, the usage and an in-band error event, if any.
"""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["RESPONSES_TOKEN_EVENTS", "StreamClock", "carries_token", "error_message"]

RESPONSES_TOKEN_EVENTS = frozenset(
    {
        "response.output_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_summary_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
    }
)
"""Responses API stream events that carry generated text in their ``delta``."""

_CHAT_TEXT = ("content", "reasoning", "reasoning_content")
_ANTHROPIC_TEXT = ("text", "thinking", "partial_json")


def _text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def carries_token(payload: object, event: str = "message") -> bool:
    """Whether one parsed SSE event (its JSON ``payload`` and SSE ``event`` name) carries a
    token, in any of the four APIs."""
    if not isinstance(payload, dict):
        return False
    kind = payload.get("type")
    if not isinstance(kind, str):
        kind = event
    if kind in RESPONSES_TOKEN_EVENTS:
        return _text(payload.get("delta"))
    if kind == "content_block_delta":
        delta = payload.get("delta")
        return isinstance(delta, dict) and any(_text(delta.get(k)) for k in _ANTHROPIC_TEXT)
    choices = payload.get("choices")
    if not isinstance(choices, list):
        return False
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict) and (any(_text(delta.get(k)) for k in _CHAT_TEXT) or bool(delta.get("tool_calls"))):
            return True
        if _text(choice.get("text")):
            return True
    return False


def error_message(payload: object, event: str = "message") -> str | None:
    """The message of an in-band error event (any of the four APIs), or ``None``."""
    if not isinstance(payload, dict):
        return None
    kind = payload.get("type")
    if kind == "response.failed":
        response = payload.get("response")
        err = response.get("error") if isinstance(response, dict) else None
    elif kind == "error" or event == "error" or payload.get("object") == "error":
        err = payload.get("error", payload)
    else:
        err = payload.get("error")
    if err is None:
        return None
    if isinstance(err, dict):
        msg = err.get("message") or err.get("type") or err.get("code")
        return str(msg) if msg is not None else "error"
    return str(err)


def _decode_constant(name: str) -> None:
    return None  # NaN and Infinity are not JSON


_DECODER = json.JSONDecoder(parse_constant=_decode_constant)


class StreamClock:
    """Times a stream passing by: feed it the bytes as read; it parses them aside.

    ``first_token`` is the ``perf_counter`` of the first token-bearing event; ``itl`` the gaps
    between token events (several tokens in one read count as one event time); ``error`` an
    in-band error event's message; ``broken`` why the parser gave up (a line or event over its
    bound: the bytes still pass, the timing stops).
    """

    __slots__ = (
        "_fast",
        "_last",
        "_max_event",
        "_max_line",
        "_parser",
        "_pending",
        "broken",
        "error",
        "first_byte",
        "first_token",
        "itl",
        "t0",
        "timings",
        "tokens",
        "usage",
    )

    def __init__(self, t0: float | None = None, *, max_line: int | None = None) -> None:
        from kvswitch.probe.sse import MAX_EVENT, MAX_LINE, SSEParser

        limit = max_line or MAX_LINE
        self._max_line, self._max_event = limit, min(MAX_EVENT, 4 * limit)
        self._parser = SSEParser(max_line=limit, max_event=self._max_event)
        # LF-framed streams (what engines send) are split here directly; the first CR or BOM
        # hands the rest to the full WHATWG parser
        self._fast = True
        self._pending = b""
        self.t0 = time.perf_counter() if t0 is None else t0
        self.first_byte: float | None = None
        self.first_token: float | None = None
        self._last: float | None = None
        self.tokens = 0
        self.itl: list[float] = []
        self.error: str | None = None
        self.broken: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None

    @property
    def ttft(self) -> float | None:
        """Seconds from ``t0`` to the first token, or ``None``."""
        return None if self.first_token is None else self.first_token - self.t0

    def feed(self, chunk: bytes, now: float | None = None) -> None:
        """A read of the stream, at ``now`` (default: the clock now)."""
        if self.broken is not None or not chunk:
            return
        now = time.perf_counter() if now is None else now
        first = self.first_byte is None
        if first:
            self.first_byte = now
        token = False
        if self._fast and b"\r" not in chunk and not (first and chunk[:1] == b"\xef"):
            for data, event in self._split(chunk):
                token = self._event(data, event) or token
        else:
            from kvswitch.probe.sse import SSEError

            if self._fast:  # from here on, the full parser (it starts at an event boundary)
                self._fast, chunk, self._pending = False, self._pending + chunk, b""
            try:
                events = self._parser.feed(chunk)
            except SSEError as exc:
                self.broken = str(exc)
                return
            for ev in events:
                token = self._event(ev.data, ev.event) or token
        if self.broken is None and token:
            self._token(now)

    def _split(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events an LF-framed ``chunk`` completes (``data`` lines joined, ``event``)."""
        buf = self._pending + chunk if self._pending else chunk
        blocks = buf.split(b"\n\n")
        self._pending = rest = blocks.pop()
        if len(rest) > self._max_event or len(rest) - rest.rfind(b"\n") - 1 > self._max_line:
            self.broken = f"an unfinished line or event longer than {self._max_line // 1024} KiB"
            self._pending = b""
            return []
        out: list[tuple[str, str]] = []
        for block in blocks:
            if len(block) > self._max_event:
                self.broken = f"an event longer than {self._max_event // 1024} KiB"
                return out
            data: list[bytes] = []
            event = "message"
            for line in block.split(b"\n"):
                if line.startswith(b"data"):
                    if line == b"data":
                        data.append(b"")
                    elif line[4:5] == b":":
                        data.append(line[6:] if line[5:6] == b" " else line[5:])
                elif line.startswith(b"event:"):
                    value = line[7:] if line[6:7] == b" " else line[6:]
                    event = value.decode("utf-8", "replace")[:256] or "message"
            if data:
                out.append((b"\n".join(data).decode("utf-8", "replace"), event))
        return out

    def close(self) -> None:
        """The stream ended: a last event without its blank line is dropped, as SSE says."""
        self._pending = b""
        if self.broken is None and not self._fast:
            self._parser.close()

    def whole(self, body: bytes, now: float | None = None) -> None:
        """A non-streamed answer (one JSON body): its arrival is its first token."""
        now = time.perf_counter() if now is None else now
        self.first_byte = self.first_byte or now
        try:
            payload = _DECODER.decode(body.decode("utf-8", "replace"))
        except ValueError:
            return
        if isinstance(payload, dict):
            self.error = error_message(payload)
            self._note(payload)
        if self.error is None:
            self._token(now)

    def _token(self, now: float) -> None:
        self.tokens += 1
        if self.first_token is None:
            self.first_token = now
        elif self._last is not None:
            self.itl.append(now - self._last)
        self._last = now

    def _event(self, data: str, event: str) -> bool:
        if not data or data == "[DONE]":
            return False
        try:
            payload = _DECODER.decode(data)
        except ValueError:
            return False
        if not isinstance(payload, dict):
            return False
        if self.error is None:
            self.error = error_message(payload, event)
        self._note(payload)
        return carries_token(payload, event)

    def _note(self, payload: dict[str, Any]) -> None:
        usage = payload.get("usage")
        if usage is None:
            inner = payload.get("response") or payload.get("message")
            usage = inner.get("usage") if isinstance(inner, dict) else None
        if isinstance(usage, dict):
            self.usage = {**(self.usage or {}), **usage}
        timings = payload.get("timings")
        if isinstance(timings, dict):
            self.timings = timings
