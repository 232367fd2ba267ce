"""API translation: a client's API carried over an upstream that serves Chat Completions only.

Claude Code speaks Anthropic Messages and Codex the OpenAI Responses API, while the lab's
split pair and many local engines serve Chat Completions alone. Where the upstream lacks the
client's API, the gateway turns the request into a Chat Completions request and the answer
(streamed or whole) back into the client's API. What the Chat Completions shape cannot carry
is refused with :class:`UntranslatableError` (an HTTP 400 in the client's API's own shape),
never dropped silently.

Each translator has the same three parts: ``request`` (client body → Chat Completions body),
``response`` (a whole Chat Completions answer → the client's API), ``stream`` (a
:class:`StreamTranslator` that turns Chat Completions SSE events into the client's SSE bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kvswitch.gateway.errors import GatewayError

__all__ = ["StreamTranslator", "Translated", "Translator", "UntranslatableError"]


class UntranslatableError(GatewayError):
    """The request holds something the Chat Completions shape cannot carry; the message says
    what and where (answered with HTTP 400 in the client's API's shape)."""


@dataclass(slots=True)
class Translated:
    """A request as Chat Completions, and what of the client's request was not carried: hints
    with no bearing on the answer (``cache_control``, client metadata…) and tools the upstream
    cannot run (hosted tools such as web search, withdrawn from the offer). Each note is a short
    phrase naming the field, e.g. ``"tools[8] web_search: a hosted tool, withdrawn"``; the
    gateway reports them in a reply header and its log, so nothing is dropped silently."""

    body: dict[str, Any]
    notes: list[str] = field(default_factory=list)


class StreamTranslator(Protocol):
    """Chat Completions stream events in, the client's API's SSE bytes out."""

    def feed(self, data: str) -> bytes:
        """One upstream SSE event's ``data`` (a Chat Completions chunk as JSON text, or
        ``[DONE]``): the client's SSE bytes it completes (often ``b""``)."""
        ...

    def finish(self) -> bytes:
        """The upstream stream ended: the client's closing events (a stream that never began
        its message still gets a whole, empty one)."""
        ...

    def fail(self, message: str) -> bytes:
        """The stream broke: one error event in the client's API's shape (after it, nothing)."""
        ...


class Translator(Protocol):
    """One client API carried over Chat Completions."""

    def request(self, body: dict[str, Any]) -> Translated:
        """The Chat Completions request for the client's ``body``; :class:`UntranslatableError`
        for what cannot be carried."""
        ...

    def response(self, chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        """A whole Chat Completions answer as the client's API answers (``request``: the
        client's own body, for the model name and ids)."""
        ...

    def stream(self, request: dict[str, Any]) -> StreamTranslator:
        """A translator for one streamed answer to the client's ``request``."""
        ...
