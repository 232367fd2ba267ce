"""A recording model server for the real-client tests (stdlib only).

Every request becomes one JSON line in the log: ``name``, ``method``, ``path``, ``query``,
``headers`` (names lower-cased; a name sent twice keeps its last value), ``header_lines``
(every header line as sent, ``[name, value]`` in order: a repeated header shows there), ``body``
(parsed when it is JSON, else text) and ``time``.
It answers what each real client needs to finish one turn with the text "ok":

- Anthropic Messages ``POST …/v1/messages`` (Claude Code), streamed or not, and
  ``POST …/v1/messages/count_tokens``;
- OpenAI Responses ``POST …/responses`` (Codex), streamed;
- Chat Completions ``POST …/chat/completions`` (Cline, OpenCode, Qwen Code), streamed or not;
- ``GET …/models``: a list holding the model of the last request (or ``--model``);
- any other GET or HEAD: 200 ``{}``; any other POST: 404.

Paths match on their suffix, so a base URL with or without ``/v1`` (or another prefix) works.

Run: ``python -m tests.realclients.recorder --name merged --log FILE --port-file PORTFILE``
(port 0 by default: the bound port is written to ``PORTFILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["REPLY", "main", "serve"]

REPLY = "ok"


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for event, data in events:
        head = f"event: {event}\n" if event else ""
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        out.append(f"{head}data: {text}\n\n")
    return "".join(out).encode()


def anthropic(model: str, stream: bool) -> tuple[str, bytes]:
    """An Anthropic Messages answer ("ok"), as SSE or as one JSON body."""
    usage = {"input_tokens": 3, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message: dict[str, Any] = {
        "id": "msg_rec_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    if not stream:
        whole = {**message, "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn"}
        return "application/json", json.dumps(whole).encode()
    return "text/event-stream", _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def responses(model: str) -> tuple[str, bytes]:
    """An OpenAI Responses stream ("ok") in the shape Codex parses."""
    item_id = "msg_rec_1"
    done_item = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": REPLY, "annotations": []}],
    }
    base = {"id": "resp_rec_1", "object": "response", "created_at": int(time.time()), "model": model}
    usage = {
        "input_tokens": 3,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 4,
    }
    events: list[tuple[str | None, Any]] = [
        (
            "response.created",
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {**base, "status": "in_progress", "output": []},
            },
        ),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": {**done_item, "status": "in_progress", "content": []},
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": 2,
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": REPLY,
            },
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": done_item},
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "sequence_number": 4,
                "response": {**base, "status": "completed", "output": [done_item], "usage": usage},
            },
        ),
    ]
    return "text/event-stream", _sse(events)


def chat(model: str, stream: bool) -> tuple[str, bytes]:
    """A Chat Completions answer ("ok"), as SSE chunks ending in ``[DONE]`` or as one body."""
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    head = {"id": "chatcmpl-rec-1", "created": int(time.time()), "model": model}
    if not stream:
        whole = {
            **head,
            "object": "chat.completion",
            "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
        }
        return "application/json", json.dumps(whole).encode()
    chunk = {**head, "object": "chat.completion.chunk"}
    return "text/event-stream", _sse(
        [
            (
                None,
                {
                    **chunk,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                },
            ),
            (None, {**chunk, "choices": [{"index": 0, "delta": {"content": REPLY}, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (None, {**chunk, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
    )


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kvswitch-recorder"
    name = ""
    log_path = Path()
    default_model = "test-model"
    lock = threading.Lock()
    last_model: str | None = None

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the JSON log is the record."""

    def _record(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        url = urlsplit(self.path)
        entry = {
            "name": self.name,
            "method": self.command,
            "path": url.path,
            "query": url.query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "header_lines": [[k.lower(), v] for k, v in self.headers.items()],
            "body": body,
            "time": time.time(),
        }
        with self.lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")
            log.flush()
        return body

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
            self.wfile.flush()

    def _model(self, body: Any) -> str:
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model:
            type(self).last_model = model
            return model
        return self.default_model

    def do_POST(self) -> None:
        body = self._record()
        path = urlsplit(self.path).path.rstrip("/")
        model = self._model(body)
        stream = isinstance(body, dict) and bool(body.get("stream"))
        if path.endswith("/messages/count_tokens"):
            self._send(200, "application/json", b'{"input_tokens": 3}')
        elif path.endswith("/messages"):
            self._send(200, *anthropic(model, stream))
        elif path.endswith("/responses"):
            self._send(200, *responses(model))
        elif path.endswith("/chat/completions"):
            self._send(200, *chat(model, stream))
        else:
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

    def do_GET(self) -> None:
        self._record()
        if urlsplit(self.path).path.rstrip("/").endswith("/models"):
            model = self.last_model or self.default_model
            listing = {
                "object": "list",
                "data": [{"id": model, "object": "model", "created": 0, "owned_by": "recorder"}],
            }
            self._send(200, "application/json", json.dumps(listing).encode())
        else:
            self._send(200, "application/json", b"{}")

    do_HEAD = do_GET


def serve(
    name: str, log: Path, port: int = 0, model: str = "test-model", host: str = "127.0.0.1"
) -> ThreadingHTTPServer:
    """A bound (not yet serving) recorder; call ``serve_forever`` on it."""
    handler = type(
        "Recorder", (_Recorder,), {"name": name, "log_path": log, "default_model": model, "lock": threading.Lock()}
    )
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def run(server: ThreadingHTTPServer, port_file: Path | None) -> int:
    """Write the bound port to ``port_file`` atomically (a reader never sees half of it),
    then serve until interrupted."""
    if port_file:
        temp = port_file.with_name(port_file.name + ".tmp")
        temp.write_text(f"{server.server_address[1]}\n")
        os.replace(temp, port_file)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a recording model server")
    parser.add_argument("--name", required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--model", default="test-model")
    args = parser.parse_args(argv)
    return run(serve(args.name, args.log, args.port, args.model), args.port_file)


if __name__ == "__main__":
    raise SystemExit(main())
