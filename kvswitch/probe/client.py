"""One streaming chat request, timed the way a careful benchmark times it (D-9).

Clock: ``time.perf_counter`` (monotonic). ``t0`` is taken when httpx starts sending the
request headers, so connecting is measured apart (``connect``). Every read from the socket is
stamped as it arrives, before JSON parsing; the events it completes share that stamp.

- TTFB: first response byte; first event: first SSE data event (diagnostic only).
- **TTFT: the first delta that carries a token — non-empty ``content``, ``reasoning``,
  ``reasoning_content`` or ``tool_calls`` — never the role-only first chunk.**
- TTFOT: the first non-empty ``content`` (what a user sees of an answer).
- ITL: gaps between token-bearing events; E2E: to the last token-bearing event;
  TPOT = (E2E − TTFT) / (output tokens − 1), output tokens from ``usage`` when sent.

A failure is a failure, never a TTFT of 0: HTTP status ≠ 200 (with the body's message), an
error event inside a 200 stream, a stream without any token, a stream that ends without
``[DONE]``, no data for ``stall_timeout`` seconds, a connection error, a response that breaks
HTTP framing or a cap (a line, an event, the header block or the body too long; far more token
events than ``max_tokens`` asked for).

Every text taken from the server (an error body, an error event, an unreadable event, a protocol
error) goes through ``redact`` before it is cut short and kept, so an echoed key never reaches
a report.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvswitch.first_token import carries_token, error_message
from kvswitch.i18n import tr

__all__ = ["RequestResult", "chat_body", "stream_chat"]

_ERROR_BODY_LIMIT = 64 * 1024
"""The most bytes of a failed request's body that are read (the message shown is far shorter)."""
_MESSAGE = 300
"""The most characters of a server's message kept in a result."""


def _same(text: str) -> str:
    return text


@dataclass
class RequestResult:
    """The timings (seconds) and outcome of one request."""

    mode: str
    ok: bool = False
    error: str | None = None
    status: int | None = None
    connect: float | None = None
    ttfb: float | None = None
    first_event: float | None = None
    ttft: float | None = None
    ttfot: float | None = None
    e2e: float | None = None
    itl: list[float] = field(default_factory=list)
    token_events: int = 0
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    server_prompt_ms: float | None = None
    done: bool = False
    comments: int = 0
    started: float = 0.0  # perf_counter at t0, to place the request on a timeline
    background: bool = False

    @property
    def tpot(self) -> float | None:
        n = self.output_tokens if self.output_tokens is not None else self.token_events
        if self.e2e is None or self.ttft is None or n is None or n < 2:
            return None
        return (self.e2e - self.ttft) / (n - 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "ok": self.ok,
            "error": self.error,
            "status": self.status,
            "connect": self.connect,
            "ttfb": self.ttfb,
            "first_event": self.first_event,
            "ttft": self.ttft,
            "ttfot": self.ttfot,
            "e2e": self.e2e,
            "tpot": self.tpot,
            "itl": self.itl,
            "token_events": self.token_events,
            "output_tokens": self.output_tokens,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "server_prompt_ms": self.server_prompt_ms,
            "done": self.done,
            "background": self.background,
        }


def chat_body(model: str, prompt: str, max_tokens: int, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request the probe sends: streamed, usage included, one choice, greedy."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
        "temperature": 0,
        "n": 1,
    }
    body.update(extra or {})
    return body


def _no_constant(name: str) -> Any:
    """``NaN`` and ``Infinity`` are not JSON: read as ``null``, so no such number gets into a result."""
    return None


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
"""JSON as the probe reads an event (made once: ``json.loads`` with options builds a decoder per call)."""


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _error_text(body: bytes, redact: Callable[[str], str] = _same) -> str:
    """The message of an error body, redacted before it is cut short."""
    text = redact(body[:_ERROR_BODY_LIMIT].decode("utf-8", "replace").strip())
    try:
        data = json.loads(text)
    except ValueError:
        return text[:_MESSAGE] or tr("(empty body)")
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("type") or json.dumps(err, ensure_ascii=False)
            return redact(str(msg))[:_MESSAGE]
        return redact(str(err))[:_MESSAGE]
    return text[:_MESSAGE]


async def stream_chat(
    client: Any,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    mode: str,
    stall_timeout: float = 30.0,
    total_timeout: float = 300.0,
    background: bool = False,
    on_token: Callable[[float, float | None], None] | None = None,
    redact: Callable[[str], str] = _same,
) -> RequestResult:
    """Send one streaming chat request with the ``httpx.AsyncClient`` ``client``; ``redact``
    masks the run's keys in every text taken from the server."""
    import asyncio

    import httpx

    from kvswitch.probe.sse import SSEError, SSEParser
    from kvswitch.probe.transport import BadResponse

    result = RequestResult(mode=mode, background=background)
    marks: dict[str, float] = {}

    async def trace(name: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if name == "connection.connect_tcp.started":
            marks["connect_start"] = now
        elif name == "connection.connect_tcp.complete":
            marks["connect_end"] = now
        elif name.endswith("send_request_headers.started") and "t0" not in marks:
            marks["t0"] = now

    request = client.build_request(
        "POST",
        url,
        json=body,
        headers={**headers, "Accept": "text/event-stream", "Accept-Encoding": "identity"},
        extensions={
            "trace": trace,
            "timeout": {"connect": stall_timeout, "read": stall_timeout, "write": stall_timeout, "pool": stall_timeout},
        },
    )
    fallback_t0 = time.perf_counter()
    parser = SSEParser()
    last_token: float | None = None
    asked = body.get("max_tokens")
    most_tokens = 4 * asked + 256 if isinstance(asked, int) and asked > 0 else 1_000_000

    async def run() -> None:
        nonlocal last_token
        response = await client.send(request, stream=True)
        # kvswitch's own transport stamps the socket reads; other transports: the trace and the clock
        reads: list[float] | None = response.extensions.get("kvswitch.reads")
        try:
            t0 = response.extensions.get("kvswitch.sent") or marks.get("t0", fallback_t0)
            result.started = t0
            if "kvswitch.connect" in response.extensions:
                result.connect = response.extensions["kvswitch.connect"]
            elif "connect_start" in marks and "connect_end" in marks:
                result.connect = marks["connect_end"] - marks["connect_start"]
            result.status = response.status_code
            if response.status_code != 200:
                raw = b""
                async for chunk in response.aiter_raw():
                    raw += chunk
                    if len(raw) > _ERROR_BODY_LIMIT:
                        break
                result.ttfb = time.perf_counter() - t0
                result.error = f"HTTP {response.status_code}: {_error_text(raw, redact)}"
                return
            async for chunk in response.aiter_raw():
                now = reads[-1] if reads else time.perf_counter()
                if result.ttfb is None:
                    result.ttfb = now - t0
                for event in parser.feed(chunk):
                    if _handle(event.data, now - t0, event.event) is False:
                        return
            for event in parser.close():
                if _handle(event.data, time.perf_counter() - t0, event.event) is False:
                    return
        finally:
            result.comments = parser.comments
            await response.aclose()

    def _handle(data: str, at: float, event: str) -> bool:
        nonlocal last_token
        if result.first_event is None:
            result.first_event = at
        if data.strip() == "[DONE]":
            result.done = True
            return True
        try:
            payload = _DECODER.decode(data)
        except ValueError:
            result.error = tr("unreadable event: {event}").format(event=repr(redact(data)[:120]))
            return False
        if not isinstance(payload, dict):
            return True
        msg = error_message(payload, event)
        if msg is not None:
            result.error = tr("error event in the stream: {message}").format(message=redact(msg)[:_MESSAGE])
            return False
        usage = payload.get("usage")
        if isinstance(usage, dict):
            if isinstance(usage.get("completion_tokens"), int):
                result.output_tokens = usage["completion_tokens"]
            if isinstance(usage.get("prompt_tokens"), int):
                result.prompt_tokens = usage["prompt_tokens"]
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                result.cached_tokens = details["cached_tokens"]
        timings = payload.get("timings")
        prompt_ms = timings.get("prompt_ms") if isinstance(timings, dict) else None
        if isinstance(prompt_ms, int | float) and not isinstance(prompt_ms, bool) and math.isfinite(prompt_ms):
            result.server_prompt_ms = float(prompt_ms)
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            if not carries_token({"choices": [choice]}):
                continue
            delta = choice.get("delta")
            content = isinstance(delta, dict) and _nonempty(delta.get("content"))
            result.token_events += 1
            if result.token_events > most_tokens:
                result.error = tr("the server sent more than {count} token events for max_tokens {asked}").format(
                    count=most_tokens, asked=asked
                )
                return False
            if result.ttft is None:
                result.ttft = at
            if content and result.ttfot is None:
                result.ttfot = at
            gap = at - last_token if last_token is not None else None
            if gap is not None:
                result.itl.append(gap)
            if on_token is not None:
                on_token(at, gap)
            last_token = at
            result.e2e = at
        return True

    try:
        await asyncio.wait_for(run(), timeout=total_timeout)
    except TimeoutError:
        result.error = tr("no complete answer within {seconds} s").format(seconds=f"{total_timeout:g}")
    except httpx.ReadTimeout as exc:
        stall = f"{stall_timeout:g}"
        result.error = (
            tr("stalled: no complete response head within {seconds} s").format(seconds=stall)
            if "head" in str(exc)
            else tr("stalled: no data for {seconds} s").format(seconds=stall)
        )
    except httpx.ConnectTimeout:
        result.error = tr("cannot connect within {seconds} s").format(seconds=f"{stall_timeout:g}")
    except httpx.ConnectError as exc:
        result.error = tr("cannot connect: {reason}").format(reason=exc)
    except BadResponse as exc:
        result.error = tr("bad response: {reason}").format(reason=exc)
    except httpx.RemoteProtocolError as exc:
        result.error = tr("connection broken mid-stream: {reason}").format(reason=exc)
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    except SSEError as exc:
        result.error = tr("bad stream: {reason}").format(reason=exc)
    except (ValueError, UnicodeError) as exc:  # a malformed response that httpx's own stack rejects
        result.error = tr("bad response: {reason}").format(reason=f"{type(exc).__name__}: {exc}")
    if result.error is not None:
        result.error = redact(result.error)
    if result.error is None:
        if result.ttft is None:
            result.error = tr("the stream carried no token (no non-empty content, reasoning or tool call)")
        elif not result.done:
            result.error = tr("the stream ended without [DONE]")
    result.ok = result.error is None
    if not result.ok:
        result.ttft = result.ttfot = None  # a failure never counts as a time
    return result
