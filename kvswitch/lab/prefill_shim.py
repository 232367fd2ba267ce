"""The prefill shim: a llama.cpp server made to answer like a PD router's prefill worker.

A PD router such as SGLang's (``sglang_router.launch_router --pd-disaggregation``) sends each
request to a prefill worker and a decode worker at once, and holds the decode worker's stream
back until the prefill worker's answer has ended. SGLang's own prefill server computes the
prompt's KV cache, hands it to the decode server and answers after one token. A llama.cpp
server in its place would generate the whole answer first (every ``max_tokens`` of it, streamed
if the client streams), so the client's first event would wait for a complete generation on the
prefill side and then arrive in a burst.

The shim sits in front of that llama.cpp server and makes its answer what the router expects
from a prefill worker: every completion request (``POST /v1/chat/completions``,
``/v1/completions``, ``/chat/completions``, ``/completions``, ``/completion``) goes upstream
with ``max_tokens: 1`` (``max_completion_tokens`` and ``n_predict`` removed) and
``stream: false`` (``stream_options`` removed), and the one JSON answer comes back. The first
event then waits for the prompt's evaluation only, which is what a prefill costs. llama.cpp has
no KV transfer: the decode server evaluates the prompt again itself, so the shim makes a PD
router's *timing* fair, not its work.

Every other request (``GET /health``, ``/v1/models``, ``/metrics``, the router's metadata
lookups) is passed to the same server unchanged. The shim connects only to the server it was
started with; the path of a request never chooses the host. A client that goes away closes the
upstream connection at once.

Run as a process::

    python -m kvswitch.lab.prefill_shim --upstream http://127.0.0.1:A --port 0

It prints ``LISTENING http://127.0.0.1:<port>`` once bound and exits on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from kvswitch.errors import KvswitchError
from kvswitch.http_serving import (
    AnswerTooLarge,
    QuietLogger,
    forwarded_headers,
    json_response,
    plain_http_origin,
    read_capped,
    serve_until_signal,
    upstream_session,
    why,
)

__all__ = ["COMPLETIONS", "LISTENING", "PrefillShim", "PrefillShimError", "main", "prefill_body"]

COMPLETIONS = frozenset({"/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions", "/completion"})
"""The paths whose requests are turned into one-token, non-streamed prefills."""
LISTENING = "LISTENING"
_DROPPED = ("max_completion_tokens", "n_predict", "stream_options")
_MAX_BODY = 64 * 1024 * 1024
_MAX_UPSTREAM_BODY = 64 * 1024 * 1024
_HEAD_TIMEOUT = 10.0

_log = logging.getLogger("kvswitch.lab.prefill_shim")


class PrefillShimError(KvswitchError):
    """The shim cannot start as asked (an upstream that is not a plain ``http://host:port``)."""


def prefill_body(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the prefill worker gets it: one token, not streamed; the rest unchanged."""
    out = {k: v for k, v in body.items() if k not in _DROPPED}
    out["max_tokens"] = 1
    out["stream"] = False
    return out


class PrefillShim:
    """The shim as an aiohttp server on ``host:port`` (``port=0``: any free port; :attr:`url`
    tells which once :meth:`start` returns) in front of ``upstream`` (``http://host:port``)."""

    def __init__(
        self, upstream: str, *, host: str = "127.0.0.1", port: int = 0, upstream_timeout: float = 600.0
    ) -> None:
        self.upstream = _origin(upstream)
        self.host = host
        self.port = port
        self.prefills = 0
        """Completion requests turned into prefills so far."""
        self._timeout = upstream_timeout
        self._session: aiohttp.ClientSession | None = None
        self._web: web.Server | None = None
        self._listener: asyncio.base_events.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self._session = upstream_session(self._timeout)
        self._web = web.Server(
            self._handle,
            access_log=None,
            logger=QuietLogger(_log, {}),
            keepalive_timeout=_HEAD_TIMEOUT,
            # a client that goes away closes the upstream connection, even while it is silent
            handler_cancellation=True,
        )
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._web, self.host, self.port)
        self.port = self._listener.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._web is not None:
            await self._web.shutdown(1.0)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if not request.raw_path.startswith("/"):  # an absolute or authority form never picks a host
            return json_response(400, _error("the request target must be a path", 400))
        try:
            body = await _read_body(request)
        except _Refused as exc:
            return json_response(exc.status, _error(str(exc), exc.status))
        path = request.rel_url.path
        if request.method == "POST" and path in COMPLETIONS:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                return json_response(400, _error("the request body must be a JSON object", 400))
            body = json.dumps(prefill_body(parsed)).encode()
            self.prefills += 1
        headers = forwarded_headers(request.headers)
        headers["Accept-Encoding"] = "identity"
        url = self.upstream.with_path(path, encoded=True).with_query(request.rel_url.query)
        assert self._session is not None
        try:
            async with self._session.request(request.method, url, data=body or None, headers=headers) as resp:
                data = await read_capped(resp, _MAX_UPSTREAM_BODY)
                kind = resp.headers.get("Content-Type", "application/json")
                return web.Response(status=resp.status, body=data, headers={"Content-Type": kind})
        except (aiohttp.ClientError, TimeoutError, AnswerTooLarge) as exc:
            message = f"the prefill server ({self.upstream}): {why(exc)}"
            return json_response(502, _error(message, 502, "upstream_error"))


class _Refused(KvswitchError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _read_body(request: web.BaseRequest) -> bytes:
    body = bytearray()
    try:
        async for chunk in request.content.iter_any():
            body += chunk
            if len(body) > _MAX_BODY:
                raise _Refused(413, f"the request body is larger than {_MAX_BODY} bytes")
    except web.RequestPayloadError:  # llhttp refused its framing
        raise _Refused(400, "malformed request body") from None
    return bytes(body)


def _origin(url: str) -> URL:
    parsed = plain_http_origin(url)
    if parsed is None:
        raise PrefillShimError(f"the prefill server must be a plain http://host:port URL, not {url!r}")
    return parsed.with_path("")


def _error(message: str, status: int, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "type": kind}}


# -- the process ---------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m kvswitch.lab.prefill_shim",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--upstream", required=True, help="the llama.cpp prefill server, http://host:port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (see the LISTENING line)")
    return ap


async def _serve(args: argparse.Namespace) -> None:
    shim = PrefillShim(args.upstream, host=args.host, port=args.port)
    await serve_until_signal(shim)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    asyncio.run(_serve(_parser().parse_args(argv)))


if __name__ == "__main__":
    main()
