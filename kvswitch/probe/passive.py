"""The passive probe: per-mode figures from the timings kvswitch's gateway keeps of the real
traffic it carries (``GET /samples``), in the same report shape as the active probe's.

The gateway times every answer it passes on (TTFT from its receiving the request to the first
token-bearing event, the gaps between token events, the outcome) and keeps the latest few
thousand.
:func:`watch` reads the ones that end during a window — the next ``window`` seconds, or until
``requests`` answers per mode, or (``past``) the kept answers of the last ``window`` seconds —
and :func:`build_passive_report` turns them into a report the probe's renderer prints. Real
traffic is not a controlled experiment, and the report says so.
"""

from __future__ import annotations

import math
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from kvswitch.errors import KvswitchError
from kvswitch.gateway.live import is_int as _int
from kvswitch.gateway.live import is_number as _number
from kvswitch.gateway.live import samples_answer
from kvswitch.i18n import N_, ntr, tr
from kvswitch.probe.comparison import compare
from kvswitch.probe.shapes import Comparison, Report
from kvswitch.probe.stats import summarize

__all__ = [
    "APIS",
    "MODES",
    "PASSIVE_NOTE",
    "NoTrafficError",
    "PassiveError",
    "PassiveSettings",
    "Watched",
    "build_passive_report",
    "run_passive",
    "samples_url",
    "watch",
]

MODES = ("merged", "split")
APIS = ("chat", "completions", "responses", "messages")
MAX_ANSWER = 64 * 1024 * 1024
"""The most bytes one ``GET /samples`` answer may hold."""

PASSIVE_NOTE = N_(
    "passive: these are the gateway's real requests, not a controlled experiment — prompts, output "
    "lengths, APIs and load differ between the modes, nothing busts the prefix cache, and each mode "
    "may have run at other times than the other; read the comparison as a hint and confirm it with "
    "an active kvswitch probe"
)
GATEWAY_TTFT = N_(
    "TTFT here is the gateway's: from its receiving the request to the first event carrying a token "
    "(non-empty content, reasoning or tool call: the active probe's rule, for all four APIs) that it passed "
    "on; a client's own TTFT adds its hop to the gateway. ITL = the gaps between token events as they passed "
    "(tokens read together are one event; of a long answer, an evenly spaced part of them); TPOT = an answer's "
    "mean gap; E2E = TTFT plus the gaps; a failed answer never counts as a time"
)
_NOW = 1 << 62
"""``since`` that returns no sample, only the gateway's latest sequence number."""


class PassiveError(KvswitchError):
    """The gateway's samples could not be read: no gateway answers, it refused the token, or the
    answer is not a kvswitch gateway's."""


class NoTrafficError(PassiveError):
    """No answer the window looked for passed through the gateway."""


@dataclass(frozen=True)
class PassiveSettings:
    """What to read. ``gateway`` is the gateway's URL (only its origin is used); ``token`` its
    local token. ``window`` seconds (``None``: no time limit, only ``requests``); ``requests``
    answers per mode end the window early; ``past`` looks back over the kept answers of the last
    ``window`` seconds instead of waiting. ``apis`` empty: every API. ``upstreams`` (each mode's
    upstream URL, when known) is shown as the mode's URL."""

    gateway: str
    token: str = field(repr=False)
    window: float | None = 60.0
    requests: int | None = None
    modes: tuple[str, ...] = MODES
    apis: tuple[str, ...] = ()
    past: bool = False
    poll: float = 0.5
    upstreams: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.window is None and self.requests is None:
            raise ValueError(tr("a passive probe needs a window, a number of requests, or both"))
        if self.window is not None and not (math.isfinite(self.window) and self.window >= 0):
            raise ValueError(tr("the window must be a number of seconds, 0 or more"))
        if self.requests is not None and self.requests < 1:
            raise ValueError(tr("requests must be at least 1"))
        if self.past and self.window is None:
            raise ValueError(tr("looking back needs a window"))


@dataclass
class Watched:
    """What a window saw. ``samples``: the answers of the chosen modes and APIs, oldest first;
    ``others``: answers of other modes or APIs; ``malformed``: entries that were not samples;
    ``lost``: answers that ended in the window but were no longer kept when read (at most);
    ``restarts``: times the gateway restarted meanwhile. Times are Unix seconds."""

    began: float
    ended: float = 0.0
    samples: list[dict[str, Any]] = field(default_factory=list)
    others: int = 0
    malformed: int = 0
    lost: int = 0
    restarts: int = 0
    cancelled: bool = False
    reached: bool = False

    def counts(self) -> dict[str, int]:
        """Answers per mode so far."""
        return dict(Counter(x["mode"] for x in self.samples))


def samples_url(gateway: str) -> str:
    """``GET /samples`` of the gateway at ``gateway`` (its origin; any path is dropped)."""
    parts = urlsplit(gateway)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PassiveError(tr("not a gateway URL: {url}").format(url=_shown(gateway)))
    return f"{parts.scheme}://{parts.netloc}/samples"


def _shown(text: str) -> str:
    from kvswitch.validate import redact_url, show

    return show(redact_url(text))


def _fetch(client: Any, s: PassiveSettings, since: int) -> dict[str, Any]:
    """One ``GET /samples?since=…``: the checked answer."""
    import httpx

    url = samples_url(s.gateway)
    where = _shown(url.removesuffix("/samples"))
    try:
        with client.stream(
            "GET",
            url,
            params={"since": str(since)},
            headers={"Authorization": f"Bearer {s.token}", "Accept-Encoding": "identity"},
        ) as resp:
            body = bytearray()
            if resp.status_code == 200:
                for chunk in resp.iter_raw():
                    body += chunk
                    if len(body) > MAX_ANSWER:
                        raise PassiveError(
                            tr("the gateway at {url} sent more than {mib} MiB of samples").format(
                                url=where, mib=MAX_ANSWER >> 20
                            )
                        )
    except httpx.HTTPError as exc:
        from kvswitch.redact import Redactor

        why = Redactor([s.token]).text(str(exc) or type(exc).__name__)[:200]
        raise PassiveError(
            tr("no gateway answers at {url}: {reason} (kvswitch gateway status shows whether one runs)").format(
                url=where, reason=why
            )
        ) from None
    status = resp.status_code
    if status == 401:
        raise PassiveError(
            tr(
                "the gateway at {url} refused the token (HTTP 401): it runs with another token "
                "than kvswitch's config gives (kvswitch gateway token)"
            ).format(url=where)
        )
    if status == 404:
        raise PassiveError(
            tr(
                "the server at {url} has no /samples route: not a kvswitch gateway, or one older "
                "than the passive probe (restart it: kvswitch gateway stop, then start it again)"
            ).format(url=where)
        )
    if status != 200:
        raise PassiveError(
            tr("the gateway at {url} answered GET /samples with HTTP {status}").format(url=where, status=status)
        )
    data = samples_answer(bytes(body))
    if data is None:
        raise PassiveError(
            tr("the answer of GET /samples at {url} is not a kvswitch gateway's samples").format(url=where)
        )
    return data


_WORD = re.compile(r"[a-z][a-z_]{0,39}")
"""What an API's, a route's or an outcome's name may be (it is printed as it is)."""


def _word(value: Any) -> bool:
    return isinstance(value, str) and _WORD.fullmatch(value) is not None


def _valid(x: Any) -> bool:
    """Whether ``x`` is one sample as the gateway writes it."""
    if not isinstance(x, dict) or not _int(x.get("seq")) or x.get("mode") not in MODES:
        return False
    ttft, itl = x.get("ttft"), x.get("itl")
    return (
        _word(x.get("api"))
        and _word(x.get("outcome"))
        and _word(x.get("route", "default"))
        and _number(x.get("time"))
        and (ttft is None or (_number(ttft) and ttft >= 0))
        and isinstance(itl, list)
        and all(_number(g) and g >= 0 for g in itl)
        and _int(x.get("tokens", 0))
        and _int(x.get("itl_count", 0))
    )


def watch(
    s: PassiveSettings,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[Watched, float | None], None] | None = None,
) -> Watched:
    """Read the gateway's samples over the window: every poll, the answers that ended since the
    last; ``cancel`` ends the window early (one last read). ``progress(watched, seconds_left)``
    after each read. Raises :class:`PassiveError` when the gateway cannot be read."""
    import httpx

    cancel = cancel or threading.Event()
    with httpx.Client(trust_env=False, timeout=s.timeout, follow_redirects=False) as client:
        head = _fetch(client, s, _NOW)
        started, since = head.get("started"), int(head["seq"])
        w = Watched(began=time.time())
        cutoff = w.began - (s.window or 0.0)
        if s.past:
            since = 0
        deadline = None if s.window is None or s.past else time.monotonic() + s.window
        last = False
        while True:
            data = _fetch(client, s, since)
            if data.get("started") != started or data["seq"] < since:
                # a new gateway: its sequence starts again; the old one's unread answers are gone
                w.restarts += 1
                started, since = data.get("started"), 0
                data = _fetch(client, s, 0)
            since = _take(w, s, data, since, cutoff if s.past else None)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if progress is not None:
                progress(w, left)
            if s.past or last:
                break
            if s.requests is not None and all(w.counts().get(m, 0) >= s.requests for m in s.modes):
                w.reached = True
                break
            if left is not None and left <= 0:
                break
            if cancel.wait(s.poll if left is None else min(s.poll, left)):
                w.cancelled = last = True
    w.ended = time.time()
    return w


def _take(w: Watched, s: PassiveSettings, data: dict[str, Any], since: int, cutoff: float | None) -> int:
    """Add the answers of ``data`` to ``w``; the new ``since``."""
    entries = [x for x in data["samples"] if not (isinstance(x, dict) and _int(x.get("seq")) and x["seq"] <= since)]
    good = [x for x in entries if _valid(x)]
    w.malformed += len(entries) - len(good)
    first = min((x["seq"] for x in entries if isinstance(x, dict) and _int(x.get("seq"))), default=since + 1)
    gap = first - since - 1  # answers after ``since`` the gateway no longer kept
    if cutoff is not None:
        if gap > 0 and good and min(x["time"] for x in good) > cutoff:
            w.lost += gap  # the window began before the oldest kept answer
        good = [x for x in good if x["time"] >= cutoff]
    elif gap > 0:
        w.lost += gap
    for x in good:
        if x["mode"] in s.modes and (not s.apis or x["api"] in s.apis):
            w.samples.append(x)
        else:
            w.others += 1
    return max(since, int(data["seq"]))


# -- the report ------------------------------------------------------------------------------------


def _ms(values: list[float]) -> list[float]:
    return [v * 1000 for v in values]


def _timed(x: dict[str, Any]) -> bool:
    """An answer that ended well and whose TTFT is a first token's: streamed (a whole answer's
    "first token" is the whole answer, when the gateway says it was not streamed)."""
    return x["outcome"] == "ok" and x["ttft"] is not None and x.get("stream") is not False


def _e2e(x: dict[str, Any]) -> float:
    """TTFT plus the gaps to the last token: their sum, or — where the gateway kept an evenly
    spaced part of a long answer's gaps (``itl_count`` of them in all) — their mean times their count."""
    gaps, count = x["itl"], x.get("itl_count", len(x["itl"]))
    if not gaps or count <= len(gaps):
        return float(x["ttft"] + math.fsum(gaps))
    return float(x["ttft"] + statistics.fmean(gaps) * count)


def _cause(outcome: str) -> str:
    """Why an answer failed, in words (an outcome kvswitch does not know: as it is)."""
    causes = {
        "client_disconnect": tr("the client closed the connection before the answer ended"),
        "upstream_error": tr("the upstream broke the stream"),
        "inband_error": tr("an error event inside the answer"),
        "timeout": tr("the upstream went silent (the gateway's idle or first-byte timeout)"),
    }
    return causes.get(outcome, outcome)


def _figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The probe report's per-mode figures from the gateway's samples (what it cannot see:
    empty summaries)."""
    ok = [x for x in samples if x["outcome"] == "ok"]
    timed = [x for x in ok if _timed(x)]
    empty = summarize([]).as_dict()
    causes = Counter(_cause(x["outcome"]) for x in samples if x["outcome"] != "ok")
    return {
        "requests": len(samples),
        "failures": len(samples) - len(ok),
        "failure_causes": dict(causes),
        "ttft_ms": summarize(_ms([x["ttft"] for x in timed])).as_dict(),
        "ttfot_ms": empty,
        "ttfb_ms": empty,
        "itl_ms": summarize(_ms([g for x in ok for g in x["itl"]])).as_dict(),
        "tpot_ms": summarize(_ms([statistics.fmean(x["itl"]) for x in ok if x["itl"]])).as_dict(),
        "e2e_ms": summarize(_ms([_e2e(x) for x in timed])).as_dict(),
        "connect_ms": empty,
        "output_tokens": sum(x.get("tokens", 0) for x in ok),
        "cached_tokens": None,
        "server_prompt_ms": empty,
        "background_itl_ms": empty,
    }


def build_passive_report(w: Watched, s: PassiveSettings) -> Report:
    """A JSON-ready probe report of what ``w`` saw: ``modes`` (with ``apis``: the same figures per
    API, and ``routes``: how the gateway chose the mode), ``comparison``, ``notes``; strict JSON,
    the token nowhere."""
    from kvswitch.probe.report import REPORT_VERSION, finite
    from kvswitch.times import iso_utc

    gateway = samples_url(s.gateway).removesuffix("/samples")
    modes: dict[str, Any] = {}
    for mode in s.modes:
        mine = [x for x in w.samples if x["mode"] == mode]
        routes = Counter(str(x.get("route", "default")) for x in mine)
        how = ", ".join(f"{r} {n}" for r, n in sorted(routes.items(), key=lambda kv: -kv[1]))
        figures = _figures(mine)
        modes[mode] = {
            "url": s.upstreams.get(mode) or gateway,
            "routed_by": tr("the gateway ({routes})").format(routes=how)
            if mine
            else tr("the gateway (no requests in the window)"),
            "key": "none",
            **figures,
            "gpu_memory": None,
            "metrics": None,
            "ttft_samples_ms": _ms([x["ttft"] for x in mine if _timed(x)]),
            "routes": dict(routes),
            "apis": {
                api: {
                    k: v
                    for k, v in _figures([x for x in mine if x["api"] == api]).items()
                    if k in ("requests", "failures", "failure_causes", "ttft_ms", "itl_ms", "tpot_ms", "output_tokens")
                }
                for api in sorted({x["api"] for x in mine})
            },
        }
    comparison: Comparison = {}
    if "merged" in modes and "split" in modes:
        itl = {
            m: _ms([g for x in w.samples if x["mode"] == m and x["outcome"] == "ok" for g in x["itl"]])
            for m in ("split", "merged")
        }
        comparison = compare(
            modes["split"]["ttft_samples_ms"], modes["merged"]["ttft_samples_ms"], itl["split"], itl["merged"]
        )
    notes = [tr(PASSIVE_NOTE), tr(GATEWAY_TTFT)]
    notes += [
        tr("{mode}: no requests in the window, so nothing to show or compare for it").format(mode=m)
        for m in s.modes
        if not modes[m]["requests"]
    ]
    whole = sum(1 for x in w.samples if x.get("stream") is False)
    if whole:
        notes.append(
            ntr(
                "{count} answer was not streamed: counted, but not in TTFT (its time is the whole answer's)",
                "{count} answers were not streamed: counted, but not in TTFT (their time is the whole answer's)",
                whole,
            ).format(count=whole)
        )
    if w.cancelled:
        notes.append(tr("the window was ended early, after {seconds} s").format(seconds=f"{w.ended - w.began:.0f}"))
    if w.others:
        notes.append(
            ntr(
                "{count} answer of other modes or APIs left out",
                "{count} answers of other modes or APIs left out",
                w.others,
            ).format(count=w.others)
        )
    if w.lost:
        notes.append(
            ntr(
                "up to {count} answer that ended in the window was no longer kept when read "
                "(the gateway keeps only its latest answers)",
                "up to {count} answers that ended in the window were no longer kept when read "
                "(the gateway keeps only its latest answers)",
                w.lost,
            ).format(count=w.lost)
        )
    if w.restarts:
        notes.append(
            tr(
                "the gateway restarted during the window ({count}×): answers of the one before "
                "that were not yet read are missing"
            ).format(count=w.restarts)
        )
    if w.malformed:
        notes.append(
            ntr(
                "{count} entry of the gateway's answer was not a sample and was left out",
                "{count} entries of the gateway's answer were not samples and were left out",
                w.malformed,
            ).format(count=w.malformed)
        )
    window = "past" if s.past else "next"
    report = {
        "kvswitch_probe": REPORT_VERSION,
        "time": iso_utc(w.ended or w.began),
        "settings": {
            "passive": True,
            "gateway": gateway,
            "base_url": gateway,
            "model": None,
            "modes": list(s.modes),
            "apis": list(s.apis) or "all",
            "window_s": s.window,
            "look": window,
            "requests_per_mode": s.requests,
            "began": iso_utc(w.began - (s.window or 0.0) if s.past else w.began),
            "ended": iso_utc(w.ended or w.began),
            "seconds": round((s.window or 0.0) if s.past else (w.ended or w.began) - w.began, 1),
            "runs": None,
            "warmup": None,
            "concurrency": None,
            "background": 0,
            "cache_bust": False,
            "key": "none",
        },
        "cancelled": w.cancelled,
        "routing_verified": None,
        "requests": len(w.samples),
        "modes": modes,
        "comparison": comparison,
        "notes": notes,
    }
    from kvswitch.redact import Redactor

    return cast("Report", finite(Redactor([s.token]).data(report)))


def run_passive(
    s: PassiveSettings,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[Watched, float | None], None] | None = None,
) -> Report:
    """:func:`watch`, then :func:`build_passive_report`; :class:`NoTrafficError` (saying what the
    window was) when no answer of the chosen modes and APIs passed."""
    w = watch(s, cancel=cancel, progress=progress)
    report = build_passive_report(w, s)
    if not w.samples:
        gateway = report["settings"]["gateway"]
        if s.past:
            span = tr("in the last {seconds} s").format(seconds=f"{s.window:g}")
        else:
            seconds = f"{w.ended - w.began:.0f}" if w.cancelled or s.window is None else f"{s.window:g}"
            span = tr("during the {seconds} s window").format(seconds=seconds)
        apis, modes = "/".join(s.apis), "/".join(s.modes)
        partial = tuple(s.modes) != MODES
        if s.apis:
            what = (
                tr("no {apis} requests in {modes} mode").format(apis=apis, modes=modes)
                if partial
                else tr("no {apis} requests").format(apis=apis)
            )
        else:
            what = tr("no requests in {modes} mode").format(modes=modes) if partial else tr("no requests")
        other = tr(" ({count} of other modes or APIs did)").format(count=w.others) if w.others else ""
        raise NoTrafficError(
            tr(
                "{what} passed through the gateway at {url} {span}{other}: nothing to measure. "
                "Send traffic through it (clients pinned with kvswitch gateway pin), or widen "
                "--window"
            ).format(what=what, url=_shown(gateway), span=span, other=other)
        )
    return report
