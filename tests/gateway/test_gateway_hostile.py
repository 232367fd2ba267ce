"""The gateway against hostile and careless clients: who chooses the mode, what reaches the
upstream, the local token, the Host check (DNS rebinding), no CORS, not an open proxy.

A real :class:`Gateway` in the test's event loop, raw bytes over a socket, and a recording
upstream (:class:`tests.gateway.upstreams.Upstream`) that says exactly what it received.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from tests.gateway.upstreams import (
    TOKEN,
    UPSTREAM_KEY,
    Reply,
    Upstream,
    exchange,
    gateway,
    json_answer,
    request,
)
from tests.rawhttp import accepted

OK = {"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def two_upstreams(exchanges: list[bytes], **overrides: Any) -> tuple[list[Reply], Upstream, Upstream]:
    """``exchanges`` sent one by one to a gateway in front of a merged and a split upstream."""
    async with (
        Upstream(json_answer(200, OK)) as merged,
        Upstream(json_answer(200, OK)) as split,
        gateway(merged.url, split.url, **overrides) as gw,
    ):
        replies = [await exchange(gw.port, data) for data in exchanges]
    return replies, merged, split


def openai_error(reply: Reply, status: int) -> dict[str, Any]:
    assert reply.status == status, reply.data[:400]
    body = reply.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["message"]
    return body["error"]  # type: ignore[no-any-return]


def anthropic_error(reply: Reply, status: int) -> dict[str, Any]:
    assert reply.status == status, reply.data[:400]
    body = reply.json()
    assert body["type"] == "error" and set(body) == {"type", "error"}, body
    assert set(body["error"]) == {"type", "message"} and body["error"]["message"], body
    return body["error"]  # type: ignore[no-any-return]


def error_in_shape(route: str, reply: Reply, status: int) -> dict[str, Any]:
    return (anthropic_error if route.endswith("/messages") else openai_error)(reply, status)


# -- mode per request --------------------------------------------------------------------------------
def test_the_mode_is_the_path_prefix_then_the_header_then_the_default() -> None:
    cases = [
        ("/v1/chat/completions", "", "merged; reason=default"),
        ("/v1/chat/completions", "X-Cache-Mode: split\r\n", "split; reason=header"),
        ("/v1/chat/completions", "X-Cache-Mode:  MERGED \r\n", "merged; reason=header"),
        ("/split/v1/chat/completions", "", "split; reason=path"),
        ("/merged/v1/chat/completions", "X-Cache-Mode: split\r\n", "merged; reason=path"),
        ("/split/v1/chat/completions", "X-Cache-Mode: merged\r\n", "split; reason=path"),
        ("/split/v1/models", "", "split; reason=path"),
    ]

    async def go() -> tuple[list[Reply], Upstream, Upstream, Reply]:
        async with (
            Upstream(json_answer(200, OK)) as merged,
            Upstream(json_answer(200, OK)) as split,
            gateway(merged.url, split.url) as gw,
        ):
            replies = []
            for path, extra, _ in cases:
                method = "GET" if path.endswith("/models") else "POST"
                body = None if method == "GET" else b"{}"
                replies.append(await exchange(gw.port, request(path, method=method, body=body, extra=extra)))
            gw.set_mode("split")
            flipped = await exchange(gw.port, request("/v1/chat/completions", body=b"{}"))
        return replies, merged, split, flipped

    replies, merged, split, flipped = run(go())
    for (path, _, expected), reply in zip(cases, replies, strict=True):
        assert reply.status == 200, (path, reply.data[:300])
        assert reply.header("X-KVSwitch-Mode") == expected, path
    assert flipped.header("X-KVSwitch-Mode") == "split; reason=default"
    # where each request went: merged got the 3 merged ones, split the rest
    assert [s.target for s in merged.seen] == ["/v1/chat/completions"] * 3
    assert [s.target for s in split.seen] == (["/v1/chat/completions"] * 3 + ["/v1/models", "/v1/chat/completions"])
    for seen in merged.seen + split.seen:
        assert "x-cache-mode" not in seen.names()  # the header never goes upstream


@pytest.mark.parametrize("route", ROUTES)
def test_a_bad_mode_header_is_a_400_in_the_apis_shape_and_nothing_is_forwarded(route: str) -> None:
    replies, merged, split = run(
        two_upstreams(
            [
                request(route, body=b"{}", extra="X-Cache-Mode: both\r\n"),
                request(route, body=b"{}", extra="X-Cache-Mode: \r\n"),
            ]
        )
    )
    for reply in replies:
        error = error_in_shape(route, reply, 400)
        assert "X-Cache-Mode" in error["message"]
    assert merged.seen == [] and split.seen == []


def test_the_clients_key_and_mode_header_never_reach_the_upstream_and_the_profiles_do() -> None:
    """Bearer style: the profile's key as Bearer; an x-api-key client: the key as x-api-key;
    the profile's extra headers are added; hop-by-hop headers and cookies stay behind."""
    headers = {"X-Org": "team-a", "X-Trace": "on"}
    replies, merged, _ = run(
        two_upstreams(
            [
                request(
                    "/v1/chat/completions",
                    body=b"{}",
                    extra="X-Cache-Mode: merged\r\nCookie: session=abc\r\nX-Client: kept\r\n",
                ),
                request(
                    "/v1/messages",
                    body=b"{}",
                    token=None,
                    extra=f"x-api-key: {TOKEN}\r\nanthropic-version: 2023-06-01\r\n",
                ),
            ],
            headers=headers,
        )
    )
    assert [r.status for r in replies] == [200, 200]
    bearer, anthropic = merged.seen
    assert bearer.header("Authorization") == f"Bearer {UPSTREAM_KEY}"
    assert bearer.header("x-api-key") is None
    assert bearer.header("X-Client") == "kept"
    assert anthropic.header("x-api-key") == UPSTREAM_KEY
    assert anthropic.header("Authorization") is None
    assert anthropic.header("anthropic-version") == "2023-06-01"
    for seen in (bearer, anthropic):
        assert seen.header("X-Org") == "team-a" and seen.header("X-Trace") == "on"
        assert "x-cache-mode" not in seen.names() and "cookie" not in seen.names()
        assert seen.header("Accept-Encoding") == "identity"
        assert TOKEN not in repr(seen.headers)  # the local token stays local
    for reply in replies:
        assert reply.header("X-KVSwitch-Mode") in ("merged; reason=header", "merged; reason=default")


def test_without_a_profile_key_no_key_goes_upstream() -> None:
    replies, merged, _ = run(two_upstreams([request("/v1/chat/completions", body=b"{}")], upstream_key=None))
    assert replies[0].status == 200
    assert merged.seen[0].header("Authorization") is None
    assert merged.seen[0].header("x-api-key") is None


def test_every_forwarded_answer_says_its_mode_errors_from_upstream_too() -> None:
    async def go() -> list[Reply]:
        async with (
            Upstream(json_answer(500, {"error": {"message": "boom"}})) as up,
            gateway(up.url) as gw,
        ):
            return [await exchange(gw.port, request(r, body=b"{}")) for r in ROUTES] + [
                await exchange(gw.port, request("/v1/models", method="GET", body=None))
            ]

    for reply in run(go()):
        assert reply.status == 500
        assert reply.header("X-KVSwitch-Mode") == "merged; reason=default"


# -- the local token ----------------------------------------------------------------------------------
WRONG_TOKENS = {
    "missing": None,
    "empty": "",
    "a prefix of it": TOKEN[:-1],
    "right prefix, wrong tail": TOKEN[:-1] + ("x" if TOKEN[-1] != "x" else "y"),
    "longer": TOKEN + "0",
    "the upstream key": UPSTREAM_KEY,
    "other case": TOKEN.upper(),
}


@pytest.mark.parametrize(
    "route", [*ROUTES, "/merged/v1/chat/completions", "/v1/models", "/metrics", "/split/v1/models", "/v1/nothing"]
)
@pytest.mark.parametrize("case", list(WRONG_TOKENS))
def test_every_route_but_health_needs_the_exact_token(route: str, case: str) -> None:
    token = WRONG_TOKENS[case]
    method = "GET" if route.endswith(("/models", "/metrics")) else "POST"
    body = None if method == "GET" else b"{}"
    replies, merged, split = run(
        two_upstreams(
            [
                request(route, method=method, body=body, token=token),
                request(
                    route,
                    method=method,
                    body=body,
                    token=None,
                    extra="" if token is None else f"x-api-key: {token}\r\n",
                ),
            ]
        )
    )
    for reply in replies:
        error = error_in_shape(route, reply, 401)
        assert "token" in error["message"]
        assert TOKEN not in reply.data.decode("latin-1")
    assert merged.seen == [] and split.seen == []


def test_health_needs_no_token_and_the_right_token_opens_every_route() -> None:
    routes = [("GET", "/health"), ("GET", "/metrics"), ("GET", "/v1/models"), *[("POST", r) for r in ROUTES]]
    replies, merged, _ = run(
        two_upstreams(
            [request("/health", method="GET", body=None, token=None)]
            + [request(p, method=m, body=None if m == "GET" else b"{}") for m, p in routes]
            + [
                request(p, method=m, body=None if m == "GET" else b"{}", token=None, extra=f"x-api-key: {TOKEN}\r\n")
                for m, p in routes
            ]
        )
    )
    assert [r.status for r in replies] == [200] * len(replies)
    assert replies[0].json() == {"status": "ok"}
    assert b"kvswitch_gateway_requests" in replies[2].body
    assert len(merged.seen) == 2 * (len(routes) - 2)


# -- Host (DNS rebinding), CORS, absolute targets -------------------------------------------------------
BAD_HOSTS = [
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.evil.example",
    "127.evil.example:{port}",
    "localhost.evil.example",
    "[::2]:{port}",
    "0.0.0.0:{port}",
    "10.0.0.1",
    "localhost@evil.example",
    "",
]


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_host_that_is_not_loopback_is_refused(host: str) -> None:
    """A page on another site that rebinds its own name to 127.0.0.1 sends its name as Host;
    a name that merely starts like a loopback address (``127.evil.example``) is a name too."""

    async def go() -> tuple[Reply, Upstream]:
        async with Upstream(json_answer(200, OK)) as up, gateway(up.url) as gw:
            data = request("/v1/chat/completions", body=b"{}", host=host.format(port=gw.port))
            if not host:
                data = data.replace(b"Host: \r\n", b"")
            return await exchange(gw.port, data), up

    reply, up = run(go())
    assert reply.status in (400, 421), reply.data[:300]
    if reply.status == 421:
        openai_error(reply, 421)
    assert up.seen == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "LOCALHOST:{port}",
        "[::1]:{port}",
        "[::1]",
        "127.0.0.1",
        "127.0.0.2:{port}",
    ],
)
def test_a_loopback_host_is_accepted(host: str) -> None:
    async def go() -> Reply:
        async with Upstream(json_answer(200, OK)) as up, gateway(up.url) as gw:
            return await exchange(gw.port, request("/v1/chat/completions", body=b"{}", host=host.format(port=gw.port)))

    assert run(go()).status == 200


def test_no_cors_a_preflight_gets_no_allow_headers() -> None:
    preflight = request(
        "/v1/chat/completions",
        method="OPTIONS",
        body=None,
        token=None,
        extra="Origin: https://evil.example\r\n"
        "Access-Control-Request-Method: POST\r\n"
        "Access-Control-Request-Headers: authorization, content-type\r\n",
    )
    with_origin = request("/v1/chat/completions", body=b"{}", extra="Origin: https://evil.example\r\n")
    replies, merged, _ = run(
        two_upstreams(
            [
                preflight,
                with_origin,
                request("/health", method="GET", body=None, token=None, extra="Origin: https://evil.example\r\n"),
            ]
        )
    )
    assert replies[0].status >= 400
    for reply in replies:
        assert not {h for h in reply.headers() if h.startswith("access-control-")}, reply.head
    assert len(merged.seen) == 1  # only the POST with the token


def test_a_target_naming_another_host_is_never_forwarded(bystander: tuple[socket.socket, int]) -> None:
    listener, port = bystander
    targets = {
        f"http://127.0.0.1:{port}/v1/chat/completions": 421,
        f"http://user@127.0.0.1:{port}/v1/chat/completions": 421,
        f"//127.0.0.1:{port}/v1/chat/completions": 400,
        f"@127.0.0.1:{port}/v1/chat/completions": 400,
        f"127.0.0.1:{port}": 400,
        "*": 400,
    }

    async def go() -> tuple[dict[str, Reply], Reply, Upstream]:
        async with Upstream(json_answer(200, OK)) as up, gateway(up.url) as gw:
            replies = {t: await exchange(gw.port, request(t, body=b"{}")) for t in targets}
            connect = await exchange(
                gw.port,
                (
                    f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Authorization: Bearer {TOKEN}\r\n\r\n"
                ).encode(),
            )
            return replies, connect, up

    replies, connect, up = run(go())
    for target, status in targets.items():
        assert replies[target].status == status, (target, replies[target].data[:300])
        if status == 421:
            openai_error(replies[target], 421)
    assert connect.status in (400, 405, 421) and connect.closed
    assert up.seen == [] and accepted(listener) == 0


# -- HTTP framing: the parser (llhttp, strict) refuses what could smuggle a request ------------------
def _framing_cases() -> dict[str, bytes]:
    from tests.lab.test_router_hostile import MALFORMED

    auth = f"Host: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
    return {
        name: raw.replace("Host: x\r\n", auth).replace("Host: x\n", auth).encode("latin-1")
        for name, raw in MALFORMED.items()
    }


FRAMING = _framing_cases()


@pytest.mark.parametrize("case", list(FRAMING))
def test_a_malformed_request_is_refused_and_nothing_is_forwarded(case: str, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> tuple[Reply, Reply, Upstream]:
        async with Upstream(json_answer(200, OK)) as up, gateway(up.url) as gw:
            bad = await exchange(gw.port, FRAMING[case])
            after = await exchange(gw.port, request("/v1/chat/completions", body=b"{}"))
            return bad, after, up

    with caplog.at_level(logging.DEBUG):
        bad, after, up = run(go())
    assert bad.status in (400, 501, 505), bad.data[:300]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "Traceback" not in caplog.text
    assert bad.closed
    assert b" 200 OK\r\n" not in bad.data  # nothing smuggled behind it was answered
    assert after.status == 200 and len(up.seen) == 1  # only the good request went upstream


@pytest.mark.parametrize(
    "header", [f"Authorization: Bearer {TOKEN}\x00", f"x-api-key: {TOKEN} \x7f", f"Authorization : Bearer {TOKEN}"]
)
def test_a_malformed_header_carrying_the_token_is_not_logged(header: str, caplog: pytest.LogCaptureFixture) -> None:
    """aiohttp's parser error quotes the offending line; logged as it is, a client's token (or
    an upstream key sent by mistake) would land in the gateway's log."""

    async def go() -> Reply:
        async with Upstream(json_answer(200, OK)) as up, gateway(up.url) as gw:
            return await exchange(
                gw.port,
                (
                    f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}\r\n"
                    "Content-Length: 2\r\n\r\n{}"
                ).encode("latin-1"),
            )

    with caplog.at_level(logging.DEBUG):
        reply = run(go())
    assert reply.status == 400
    assert TOKEN not in caplog.text and TOKEN[:12] not in caplog.text
    assert "refused a malformed request" in caplog.text
