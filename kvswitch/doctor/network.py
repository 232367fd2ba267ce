"""Doctor's requests: a capped, deadlined GET and a one-token chat request (the probe's own
:func:`kvswitch.probe.client.stream_chat`), over the client :func:`kvswitch.probe.transport.async_client`
gives probe and doctor; the key goes only to the target's allowed origins, and is masked in
whatever a server answers."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvswitch.doctor.target import Target, clean_key
from kvswitch.i18n import tr
from kvswitch.key_scope import key_for
from kvswitch.network import read_capped

if TYPE_CHECKING:
    from kvswitch.probe.client import RequestResult

__all__ = ["MAX_ANSWER", "Answer", "Net", "not_sent", "refused", "stalled"]


def not_sent() -> str:
    """Why a request with the key was not sent at all (the key would break its header)."""
    return tr("not sent: the HTTP library refuses a header value (the key) with whitespace or a line break")


@dataclass
class Answer:
    """A plain (not streamed) answer: its status and parsed JSON, or why there is none."""

    status: int | None = None
    data: Any = None
    error: str | None = None
    refused: bool = False  # the HTTP library would not send it (a header value with whitespace)
    ms: float = 0.0

    @property
    def models(self) -> list[str] | None:
        """The model ids of a ``GET …/models`` answer, or ``None``."""
        if self.status != 200 or not isinstance(self.data, dict) or not isinstance(self.data.get("data"), list):
            return None
        return [str(m["id"]) for m in self.data["data"] if isinstance(m, dict) and "id" in m]

    def describe(self) -> str:
        if self.refused:
            return not_sent()
        if self.error:
            return self.error
        message = ""
        if isinstance(self.data, dict):
            err = self.data.get("error", self.data.get("detail"))
            if isinstance(err, dict):
                err = err.get("message")
            if isinstance(err, str):
                message = f" ({err[:160]})"
        return f"HTTP {self.status}{message}"


class Net:
    """Every request doctor makes; the key goes only to the target's allowed origins."""

    def __init__(self, client: Any, target: Target, timeout: float) -> None:
        from kvswitch.redact import Redactor

        self.client = client
        self.target = target
        self.timeout = timeout
        key = target.key
        self.redact = Redactor([key, clean_key(key)] if key else [])

    def auth(self, url: str, key: str | None) -> dict[str, str]:
        key = key_for(url, self.target.allowed, key)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def get(self, url: str, key: str | None = None) -> Answer:
        import asyncio
        import json

        import httpx

        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout * 2):  # a body that trickles forever ends too
                async with self.client.stream("GET", url, headers=self.auth(url, key)) as response:
                    body = await read_capped(response, MAX_ANSWER)
                    if body is None:
                        return Answer(
                            error=tr("HTTP {status} with an answer over {size} MiB (not read)").format(
                                status=response.status_code, size=MAX_ANSWER // (1024 * 1024)
                            )
                        )
                    status = response.status_code
        except httpx.LocalProtocolError:
            return Answer(refused=True, error="refused")
        except httpx.ConnectError as exc:
            return Answer(error=self.redact(_reason(exc)))  # the transport says "cannot connect to …" and why
        except (httpx.TimeoutException, TimeoutError):
            return Answer(error=tr("no answer within {seconds} s").format(seconds=f"{self.timeout:g}"))
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            return Answer(error=f"{type(exc).__name__}")
        data: Any = None
        try:  # the server's words, keys masked before anything is cut from them
            data = json.loads(self.redact(body.decode("utf-8", "replace")), parse_constant=lambda _: None)
        except ValueError:
            data = None
        return Answer(status, data, ms=(time.perf_counter() - t0) * 1000)

    async def chat(
        self, url: str, model: str, prompt: str, key: str | None, extra_headers: dict[str, str] | None = None
    ) -> RequestResult:
        from kvswitch.probe.client import chat_body, stream_chat

        body = chat_body(model, prompt, 1)
        headers = {**self.auth(url, key), **(extra_headers or {})}
        result = await stream_chat(
            self.client,
            url,
            body,
            headers,
            mode=(extra_headers or {}).get("X-Cache-Mode", "plain"),
            stall_timeout=self.timeout,
            total_timeout=self.timeout * 2,
            redact=self.redact.text,
        )
        if result.error and "LocalProtocolError" in result.error:
            result.error = not_sent()
        return result


MAX_ANSWER = 4 * 1024 * 1024
"""The most bytes doctor reads of one plain (not streamed) answer, such as a model list."""


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text[:160]


def refused(r: RequestResult) -> bool:
    """Whether the request was never sent (the key would break its header)."""
    return r.error == not_sent()


def _like(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` with its placeholders filled in (any language)."""
    pattern = ".*?".join(re.escape(part) for part in re.split(r"\{[^{}]*\}", template))
    return re.fullmatch(pattern, text, re.DOTALL) is not None


def stalled(r: RequestResult) -> bool:
    """Whether the request stalled or ran past its deadline (the probe client's own words)."""
    if not r.error:
        return False
    return any(
        _like(template, r.error)
        for template in (
            tr("stalled: no data for {seconds} s"),
            tr("stalled: no complete response head within {seconds} s"),
            tr("no complete answer within {seconds} s"),
        )
    ) or r.error.startswith("stalled")
