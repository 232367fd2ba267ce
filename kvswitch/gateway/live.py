"""Live figures from a running gateway, per mode: the median time to first token of its latest
answers and how their mode was chosen (``GET /samples``, read with the local token).

Cheap enough for the tray to ask each time its menu opens: only the standard library (urllib,
no proxy, no redirect, so the token goes to the gateway and nowhere else), and a
:class:`LiveSamples` kept between reads fetches only the answers that are new since its last
read (the first read takes what the gateway keeps). :func:`live_figures` is one read alone.

TTFT here is the gateway's own: from its receiving the request to the first event carrying a
token. An answer counts as timed when it ended well and has a TTFT (a whole, unstreamed answer
the gateway marks ``"stream": false`` does not).
"""

from __future__ import annotations

import http.client
import json
import math
import statistics
import threading
import urllib.error
import urllib.request
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kvswitch.gateway.errors import GatewayError
from kvswitch.i18n import ntr, tr

__all__ = [
    "LAST",
    "MAX_ANSWER",
    "MODES",
    "LiveFigures",
    "LiveSamples",
    "ModeFigures",
    "gateway_origin",
    "is_int",
    "is_number",
    "live_figures",
    "samples_answer",
]

MODES = ("merged", "split")
LAST = 50
"""Answers per mode the figures are drawn from (the latest)."""
MAX_ANSWER = 64 * 1024 * 1024
"""The most bytes one ``GET /samples`` answer may hold."""
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}
"""A gateway listening on every address is reached on loopback."""


@dataclass(frozen=True)
class ModeFigures:
    """One mode's latest answers (at most ``last``): how many, how many timed, their TTFT
    median, and how their mode was chosen (``route`` → answers)."""

    mode: str
    requests: int = 0
    timed: int = 0
    ttft_p50_ms: float | None = None
    routes: Mapping[str, int] = field(default_factory=dict)
    failed: int = 0
    """Answers that did not end well (the client left, the upstream broke or went silent…)."""

    @property
    def line(self) -> str:
        """``merged: TTFT p50 123 ms (last 37 requests)`` / ``split: no requests yet`` (in the
        user's language; the mode's name stays as it is)."""
        n = self.requests
        if n == 0:
            return tr("{mode}: no requests yet").format(mode=self.mode)
        if self.ttft_p50_ms is None:
            return ntr(
                "{mode}: no TTFT in the last {count} request", "{mode}: no TTFT in the last {count} requests", n
            ).format(mode=self.mode, count=n)
        p50 = _ms(self.ttft_p50_ms)
        if self.timed == n:
            return ntr(
                "{mode}: TTFT p50 {p50} ms (last {count} request)",
                "{mode}: TTFT p50 {p50} ms (last {count} requests)",
                n,
            ).format(mode=self.mode, p50=p50, count=n)
        return ntr(
            "{mode}: TTFT p50 {p50} ms ({timed} of the last {count} request)",
            "{mode}: TTFT p50 {p50} ms ({timed} of the last {count} requests)",
            n,
        ).format(mode=self.mode, p50=p50, timed=self.timed, count=n)

    @property
    def detail(self) -> str:
        """How the mode was chosen and what failed: ``routes: default 30, header 7 · 2 failed``
        (``default``: the gateway's mode; ``path``: a /merged or /split prefix; ``header``:
        X-Cache-Mode); empty without requests."""
        if not self.requests:
            return ""
        counts = [f"{r} {n}" for r, n in sorted(self.routes.items(), key=lambda x: (-x[1], x[0]))]
        routes = counts[0] if counts else ""
        for more in counts[1:]:
            routes = tr("{earlier}, {next_item}").format(earlier=routes, next_item=more)
        if self.failed:
            return tr("routes: {routes} · {failed} failed").format(routes=routes, failed=self.failed)
        return tr("routes: {routes}").format(routes=routes)


@dataclass(frozen=True)
class LiveFigures:
    """What a gateway's latest answers say, per mode (both modes always present)."""

    url: str
    """The gateway's origin the figures were read from."""
    seq: int
    """The gateway's latest answer's sequence number (its answers so far)."""
    started: float | None
    last: int
    modes: Mapping[str, ModeFigures]

    def __getitem__(self, mode: str) -> ModeFigures:
        return self.modes[mode]

    @property
    def lines(self) -> tuple[str, ...]:
        """One line per mode, merged first."""
        return tuple(self.modes[m].line for m in MODES)


def _ms(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def gateway_origin(url: str) -> str:
    """``scheme://host:port`` of a gateway's URL (a path is dropped; an address that listens on
    every interface becomes loopback). Anything but an http(s) URL is a :class:`GatewayError`."""
    from kvswitch.validate import redact_url, show

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise GatewayError(tr("not a gateway URL: {url}").format(url=show(redact_url(url))))
    host = _UNSPECIFIED.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + (f":{port}" if port is not None else "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, never followed: the token goes to the gateway alone."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _fetch(origin: str, token: str, since: int, timeout: float) -> dict[str, Any]:
    """One ``GET /samples?since=…``: the checked answer."""
    req = urllib.request.Request(
        f"{origin}/samples?since={since}",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json", "Accept-Encoding": "identity"},
    )
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            body = resp.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise _refused(origin, exc.code) from None
    except (TimeoutError, urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
            raise GatewayError(
                tr("the gateway at {origin} did not answer GET /samples within {seconds} s").format(
                    origin=origin, seconds=f"{timeout:g}"
                )
            ) from None
        why = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        from kvswitch.redact import Redactor

        raise GatewayError(
            tr("no gateway answers at {origin}: {reason}").format(
                origin=origin, reason=Redactor([token]).text(str(why))[:200]
            )
        ) from None
    if len(body) > MAX_ANSWER:
        raise GatewayError(
            tr("the gateway at {origin} sent more than {size} MiB of samples").format(
                origin=origin, size=MAX_ANSWER >> 20
            )
        )
    data = samples_answer(body)
    if data is None:
        raise GatewayError(
            tr("the answer of GET /samples at {origin} is not a kvswitch gateway's samples").format(origin=origin)
        )
    return data


def samples_answer(body: bytes) -> dict[str, Any] | None:
    """A ``GET /samples`` answer as its JSON object; ``None`` when it is not a gateway's samples
    (no whole ``seq``, no ``samples`` list, a ``started`` that is not a time)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or not is_int(data.get("seq"))
        or not isinstance(data.get("samples"), list)
        or not (data.get("started") is None or is_number(data.get("started")))
    ):
        return None
    return data


def _refused(origin: str, status: int) -> GatewayError:
    if status == 401:
        return GatewayError(
            tr(
                "the gateway at {origin} refused the local token (HTTP 401): it runs with another "
                "token than kvswitch's config gives (kvswitch gateway token)"
            ).format(origin=origin)
        )
    if status == 404:
        return GatewayError(
            tr(
                "the server at {origin} has no /samples route: not a kvswitch gateway, or an older "
                "one (restart it: kvswitch gateway stop, then start it again)"
            ).format(origin=origin)
        )
    if 300 <= status < 400:
        return GatewayError(
            tr(
                "the server at {origin} redirected GET /samples (HTTP {status}): not a kvswitch "
                "gateway; the token was not sent on"
            ).format(origin=origin, status=status)
        )
    return GatewayError(
        tr("the gateway at {origin} answered GET /samples with HTTP {status}").format(origin=origin, status=status)
    )


def is_int(value: Any) -> bool:
    """A JSON whole number (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite JSON number (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class _Kept:
    """What the figures need of one answer."""

    route: str
    ttft: float | None
    ok: bool


def _kept(x: Any) -> tuple[str, _Kept] | None:
    """A sample as the figures keep it (its mode first), ``None`` when it is not one."""
    if not isinstance(x, dict) or x.get("mode") not in MODES:
        return None
    raw: Any = x.get("ttft")
    ok = x.get("outcome") == "ok"
    ttft = float(raw) if ok and is_number(raw) and raw >= 0 and x.get("stream") is not False else None
    route = x.get("route")
    return x["mode"], _Kept(route if isinstance(route, str) and route else "unknown", ttft, ok)


class LiveSamples:
    """The latest ``last`` answers per mode of one gateway, kept between reads: each
    :meth:`read` fetches only the answers that are new since the last one (all it keeps after a
    restart of the gateway, or when asked about another). Safe to share between threads."""

    def __init__(self, last: int = LAST) -> None:
        if last < 1:
            raise ValueError("last must be at least 1")
        self.last = last
        self._lock = threading.Lock()
        self._origin: str | None = None
        self._started: float | None = None
        self._seq = 0
        self._kept: dict[str, deque[_Kept]] = {m: deque(maxlen=last) for m in MODES}

    def _clear(self) -> None:
        self._seq = 0
        for kept in self._kept.values():
            kept.clear()

    def read(self, url: str, token: str, timeout: float = 2.0) -> LiveFigures:
        """The figures of the gateway at ``url`` now. A gateway that cannot be read (none
        answers, it refuses the token, the answer is not its samples) is a :class:`GatewayError`
        whose message never holds the token."""
        origin = gateway_origin(url)
        with self._lock:
            if origin != self._origin:
                self._origin, self._started = origin, None
                self._clear()
            since = self._seq
            data = _fetch(origin, token, since, timeout)
            started = data.get("started")
            if started != self._started or data["seq"] < since:
                self._clear()  # another gateway (a restart): its sequence began again
                if since:
                    since = 0
                    data = _fetch(origin, token, 0, timeout)
                    started = data.get("started")
                self._started = started
            for x in data["samples"]:
                if isinstance(x, dict) and is_int(x.get("seq")) and x["seq"] > since:
                    kept = _kept(x)
                    if kept is not None:
                        self._kept[kept[0]].append(kept[1])
            self._seq = max(since, int(data["seq"]))
            return LiveFigures(
                origin, self._seq, self._started, self.last, {m: _figures(m, list(self._kept[m])) for m in MODES}
            )


def _figures(mode: str, kept: list[_Kept]) -> ModeFigures:
    ttfts = [k.ttft for k in kept if k.ttft is not None]
    return ModeFigures(
        mode,
        len(kept),
        len(ttfts),
        statistics.median(ttfts) * 1000 if ttfts else None,
        dict(Counter(k.route for k in kept)),
        sum(1 for k in kept if not k.ok),
    )


def live_figures(url: str, token: str, last: int = LAST, timeout: float = 2.0) -> LiveFigures:
    """Per mode, from the latest ``last`` answers of the gateway at ``url`` (its local
    ``token`` sent as ``Authorization: Bearer``): how many had a TTFT, its median in ms, and
    how their mode was chosen. One read of all the gateway keeps; :class:`LiveSamples` reads
    only what is new. Errors are a :class:`GatewayError` (never quoting the token)."""
    return LiveSamples(last).read(url, token, timeout)
