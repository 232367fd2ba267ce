"""What kvswitch's two aiohttp servers (the lab router and the gateway) share: a logger that
never quotes a refused request, messages that quote client text safely, the client headers
passed on upstream, and reading an upstream's whole answer up to a cap."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
from aiohttp import ClientResponse, web
from aiohttp.http_exceptions import HttpProcessingError

if TYPE_CHECKING:
    from yarl import URL
from multidict import CIMultiDictProxy

from kvswitch.errors import KvswitchError

__all__ = [
    "HOP_BY_HOP",
    "AnswerTooLarge",
    "QuietLogger",
    "Served",
    "cut",
    "first_line",
    "forwarded_headers",
    "json_response",
    "plain_http_origin",
    "read_capped",
    "serve_until_signal",
    "shown",
    "upstream_session",
    "why",
]


HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "host",
        "accept-encoding",
        "expect",
    }
)
"""Client headers never passed on: those of one connection, and those the client side of the
server in between writes itself."""


class AnswerTooLarge(KvswitchError, ValueError):
    """An upstream's answer over the cap."""


class QuietLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger: a request its parser refused is one line at INFO, its first
    line only (the rest quotes the request, a client's token with it), not an ERROR with a
    traceback; anything else stays as it is."""

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info if isinstance(exc_info, BaseException) else None
        if exc is None and exc_info:
            exc = sys.exc_info()[1]
        if isinstance(exc, HttpProcessingError):
            self.logger.info("refused a malformed request: %s", first_line(exc.message or type(exc).__name__))
            return
        super().log(level, msg, *args, **kwargs)


async def read_capped(resp: ClientResponse, cap: int) -> bytes:
    """An upstream's whole answer; :class:`AnswerTooLarge` past ``cap`` bytes."""
    data = bytearray()
    async for chunk in resp.content.iter_any():
        data += chunk
        if len(data) > cap:
            raise AnswerTooLarge(f"the answer is larger than {cap} bytes")
    return bytes(data)


def forwarded_headers(headers: CIMultiDictProxy[str], dropped: frozenset[str] = HOP_BY_HOP) -> dict[str, str]:
    """A client's headers as passed on: those in ``dropped`` (lower case) and those its
    ``Connection`` header names are left out; a repeated one is joined into one value."""
    named = {t.strip().lower() for v in headers.getall("Connection", ()) for t in v.split(",")}
    out: dict[str, str] = {}
    for key, value in headers.items():
        low = key.lower()
        if low in dropped or low in named:
            continue
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def cut(request: web.BaseRequest) -> None:
    """Close a client's connection midway (an answer that cannot be completed)."""
    transport = request.transport
    if transport is not None:
        transport.abort()


def json_response(status: int, data: Any) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(data).encode(), headers={"Content-Type": "application/json; charset=utf-8"}
    )


def shown(text: str, limit: int = 80) -> str:
    """A client's text quoted for a message: cut short, control characters escaped."""
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def first_line(what: BaseException | str) -> str:
    """The first line of a message or an exception's text, at most 200 characters."""
    text = what if isinstance(what, str) else str(what)
    return (text.strip().splitlines() or [type(what).__name__])[0][:200]


def why(exc: BaseException) -> str:
    """An exception as ``Type: first line``."""
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


class Served(Protocol):
    """A server kvswitch runs as a process of its own (the lab router, the prefill shim)."""

    @property
    def url(self) -> str: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


async def serve_until_signal(server: Served) -> None:
    """Start ``server``, print ``LISTENING <url>`` once it is bound, serve until SIGTERM or
    SIGINT, then close it."""
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(f"LISTENING {server.url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await server.close()


def upstream_session(read_timeout: float) -> aiohttp.ClientSession:
    """A client session for llama.cpp upstreams: a new connection per request (llama.cpp closes
    a connection it advertised as kept alive right after a response, and a pooled one reused in
    that instant fails), no proxy from the environment, no cookies, bytes as sent."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=True, limit=0, use_dns_cache=False),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=read_timeout),
        auto_decompress=False,
        trust_env=False,
        skip_auto_headers=("User-Agent",),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def plain_http_origin(url: str) -> URL | None:
    """``url`` parsed when it is a plain ``http://host:port`` (no user, path, query or fragment):
    what the lab's servers forward to; None for anything else."""
    from yarl import URL

    parsed = URL(url)
    if (
        parsed.scheme != "http"
        or not parsed.host
        or parsed.user is not None
        or parsed.password is not None
        or parsed.path not in ("", "/")
        or parsed.query_string
        or parsed.fragment
    ):
        return None
    return parsed
