"""The gateway's side of API translation: when to translate, and the glue around a translator.

A Messages or Responses request goes through as it is unless its upstream lacks that API:
``translate="auto"`` (the default) learns that from the upstream's own 404, 405 or 501 for the
route (nothing was generated: the request is sent again, translated, at once) and remembers it
per upstream; ``"always"`` translates without asking, ``"never"`` passes through whatever the
upstream says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kvswitch.gateway.apis import Api
from kvswitch.http_serving import first_line

if TYPE_CHECKING:
    from kvswitch.gateway.translate import Translator

__all__ = [
    "LACKING_STATUS",
    "TRANSLATABLE",
    "TRANSLATED_HEADER",
    "Translate",
    "Translation",
    "notes_header",
    "start",
    "upstream_message",
]

Translate = Literal["auto", "always", "never"]
TRANSLATABLE: frozenset[Api] = frozenset({"messages", "responses"})
"""The APIs the gateway can carry over Chat Completions."""
LACKING_STATUS = frozenset({404, 405, 501})
"""An upstream's answers that say it has no such route."""
TRANSLATED_HEADER = "X-KVSwitch-Translated"
"""Reply header of a translated request: the API the upstream was asked in, and what of the
request was not carried."""
_HEADER_MAX = 1024


@dataclass(slots=True)
class Translation:
    """One request on its way through a translator: the client's own body (parsed), the Chat
    Completions body to send, and what was not carried."""

    api: Api
    translator: Translator
    request: dict[str, Any]
    body: bytes
    notes: list[str]
    local: dict[str, Any] | None = None
    """An answer the gateway gives itself (a token count), with nothing sent upstream."""

    @property
    def streaming(self) -> bool:
        return self.request.get("stream") is True

    def header(self) -> str:
        return notes_header(self.notes)


def _translator(api: Api) -> Translator:
    if api == "messages":
        from kvswitch.gateway.translate.messages import MessagesTranslator

        return MessagesTranslator()
    from kvswitch.gateway.translate.responses import ResponsesTranslator

    return ResponsesTranslator()


def start(api: Api, path: str, body: bytes) -> Translation:
    """The Chat Completions request for a client's ``body``; ``ValueError`` for a body that is
    not a JSON object, ``UntranslatableError`` for one that cannot be carried."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as exc:  # nesting past the parser's depth is no request either
        raise ValueError(f"the request body is not JSON: {first_line(exc)}") from None
    if not isinstance(request, dict):
        raise ValueError("the request body is not a JSON object")
    translator = _translator(api)
    if api == "messages" and path.endswith("/count_tokens"):
        from kvswitch.gateway.translate.messages import count_tokens

        return Translation(
            api, translator, request, b"", ["input_tokens: estimated as characters/4"], local=count_tokens(request)
        )
    done = translator.request(request)
    return Translation(api, translator, request, json.dumps(done.body).encode(), done.notes)


def notes_header(notes: list[str]) -> str:
    """``X-KVSwitch-Translated``'s value: ``chat`` and, where something was not carried, what
    (printable ASCII, at most 1 KiB)."""
    if not notes:
        return "chat"
    text = "; ".join(notes).replace('"', "'")
    text = "".join(c if " " <= c <= "~" else "?" for c in text)
    if len(text) > _HEADER_MAX:
        text = text[: _HEADER_MAX - 1] + "…".encode("ascii", "replace").decode()
    return f'chat; not-carried="{text}"'


def upstream_message(data: bytes) -> str:
    """The message of an upstream's error body (any API's shape), else its first 300 characters."""
    try:
        payload = json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace").strip()[:300]
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])[:300]
    if isinstance(err, str):
        return err[:300]
    return data.decode("utf-8", "replace").strip()[:300]
