"""The four APIs the gateway passes through, and their own error shapes.

OpenAI's (Chat Completions, Completions, Responses): ``{"error": {"message", "type", "param",
"code"}}``; Anthropic's (Messages): ``{"type": "error", "error": {"type", "message"}}``. An
error after a stream has begun is one SSE event in the API's own form, so each client's SDK
raises it as an error instead of seeing a stream that merely stops.
"""

from __future__ import annotations

import json
from typing import Literal

__all__ = [
    "API_PATHS",
    "Api",
    "api_of",
    "error_body",
    "error_event",
    "has_error_shape",
]

Api = Literal["chat", "completions", "responses", "messages", "other"]

API_PATHS: dict[str, Api] = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "messages",
}
"""The POST routes the gateway passes through, by API."""

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "invalid_request_error",
    421: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout_error",
}
_ANTHROPIC_TYPES = {
    **_OPENAI_TYPES,
    413: "request_too_large",
    502: "api_error",
    503: "overloaded_error",
}


def api_of(path: str) -> Api:
    """The API a request path belongs to (``other`` for anything else)."""
    return API_PATHS.get(path, "messages" if path.startswith("/v1/messages") else "other")


def error_body(api: Api, status: int, message: str, code: str | None = None) -> bytes:
    """A whole error response body in ``api``'s own shape."""
    if api == "messages":
        kind = _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code or kind}}).encode()


def error_event(api: Api, message: str, code: str = "upstream_error") -> bytes:
    """One SSE event that ends a begun stream with an error, in ``api``'s own form."""
    if api == "messages":
        data: dict[str, object] = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    error: dict[str, object] = {"message": message, "type": "server_error", "param": None, "code": code}
    if api == "responses":
        data = {"type": "error", "code": code, "message": message, "param": None, "error": error}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    return b"data: " + json.dumps({"error": error}).encode() + b"\n\n"


def has_error_shape(api: Api, body: bytes) -> bool:
    """Whether an upstream's error body is in ``api``'s own shape already."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    err = data.get("error")
    if api == "messages":
        return data.get("type") == "error" and isinstance(err, dict) and "message" in err
    return isinstance(err, dict) and "message" in err
