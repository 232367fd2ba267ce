"""The probe's report: per-mode statistics, the split/merged comparison with its interval,
GPU memory and backend metrics, and honest notes on what the numbers mean."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from kvswitch.i18n import N_, tr
from kvswitch.probe.comparison import compare
from kvswitch.probe.shapes import Comparison, Report
from kvswitch.probe.stats import summarize
from kvswitch.times import iso_utc

__all__ = [
    "REPORT_VERSION",
    "TIMELINE_POINTS",
    "TTFT_DEFINITION",
    "build_report",
    "combine_reports",
    "dumps",
    "export_report",
    "finite",
    "gpu_timeline",
    "history_path",
    "iso_utc",
    "load_history",
    "normalize_report",
    "save_history",
    "unwrap",
]

REPORT_VERSION = 2
"""The report's ``kvswitch_probe`` version. 2: times are ISO 8601 UTC (``…Z``) and
``routing_verified`` is a field; 1 (older kvswitch): local times with an offset, or Unix seconds,
which :func:`normalize_report` still reads."""

TTFT_DEFINITION = N_(
    "TTFT = time from sending the request to the first streamed delta that carries a token "
    "(non-empty content, reasoning or tool call); the role-only first chunk, keep-alive comments "
    "and empty deltas are not counted, and a failed request never counts as a time."
)
MEMORY_NOTE = N_(
    "GPU memory may look flat: vLLM and SGLang reserve their KV cache when they start "
    "(gpu-memory-utilization), so a mode change shows up in KV-cache usage from /metrics rather "
    "than in nvidia-smi's memory.used."
)


TIMELINE_POINTS = 600
"""At most this many points per GPU in a report's ``gpu_timeline`` (longer runs are bucketed)."""


def _ms(values: list[float]) -> list[float]:
    return [v * 1000 for v in values if math.isfinite(v)]


def finite(value: Any) -> Any:
    """A JSON-like value with every NaN or infinity replaced by ``None`` (they are not JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(report: Mapping[str, Any], *, indent: int | None = None) -> str:
    """A report as strict JSON: non-finite numbers become ``null``, never a bare ``NaN``."""
    return json.dumps(finite(report), ensure_ascii=False, indent=indent, allow_nan=False)


def gpu_timeline(samples: list[Any], max_points: int = TIMELINE_POINTS) -> list[list[Any]]:
    """GPU memory over time, ``[[t_s, uuid, used_mib], …]`` sorted by time: ``t_s`` counts from
    the first sample; unknown readings (``[N/A]``) are left out. A GPU with more than
    ``max_points`` samples keeps the highest reading of each of ``max_points`` equal time
    buckets, so a peak is never averaged away."""
    known = [s for s in samples if s.used_mib is not None]
    if not known:
        return []
    t0 = min(s.at for s in known)
    span = max(s.at for s in known) - t0
    out: list[list[Any]] = []
    for uuid in sorted({s.uuid for s in known}):
        mine = sorted((s for s in known if s.uuid == uuid), key=lambda s: s.at)
        if len(mine) > max_points and span > 0:
            buckets: dict[int, Any] = {}
            for s in mine:
                k = min(int((s.at - t0) / span * max_points), max_points - 1)
                if k not in buckets or s.used_mib > buckets[k].used_mib:
                    buckets[k] = s
            mine = [buckets[k] for k in sorted(buckets)]
        out += [[round(s.at - t0, 3), uuid, s.used_mib] for s in mine]
    out.sort(key=lambda row: (row[0], row[1]))
    return out


def build_report(raw: dict[str, Any]) -> Report:
    """A JSON-ready report from :func:`kvswitch.probe.runner.run_probe`'s output: no key of the
    run in any form (every string redacted), no NaN or infinity (``None`` instead)."""
    from kvswitch.probe.runner import metric_deltas, redactor

    s = raw["settings"]
    results = raw["results"]
    gpu = raw["gpu"]
    modes: dict[str, Any] = {}
    for mode in s.modes:
        mine = [r for r in results if r.mode == mode and not r.background]
        ok = [r for r in mine if r.ok]
        windows = raw["windows"][mode]
        memory: Any = tr("n/a: {reason}").format(reason=gpu.unavailable) if gpu.unavailable else None
        if memory is None:
            memory = gpu.memory(raw["baseline_until"], windows) or tr("n/a: {reason}").format(reason=tr("no samples"))
        route = raw["routes"][mode]
        modes[mode] = {
            "url": route.url,
            "routed_by": route.how,
            "key": route.key,
            "requests": len(mine),
            "failures": len(mine) - len(ok),
            "failure_causes": dict(Counter(r.error for r in mine if not r.ok)),
            "ttft_ms": summarize(_ms([r.ttft for r in ok if r.ttft is not None])).as_dict(),
            "ttfot_ms": summarize(_ms([r.ttfot for r in ok if r.ttfot is not None])).as_dict(),
            "ttfb_ms": summarize(_ms([r.ttfb for r in ok if r.ttfb is not None])).as_dict(),
            "itl_ms": summarize(_ms([g for r in ok for g in r.itl])).as_dict(),
            "tpot_ms": summarize(_ms([r.tpot for r in ok if r.tpot is not None])).as_dict(),
            "e2e_ms": summarize(_ms([r.e2e for r in ok if r.e2e is not None])).as_dict(),
            "connect_ms": summarize(_ms([r.connect for r in ok if r.connect is not None])).as_dict(),
            "output_tokens": sum((r.output_tokens if r.output_tokens is not None else r.token_events) for r in ok),
            "cached_tokens": sum(r.cached_tokens or 0 for r in ok)
            if any(r.cached_tokens is not None for r in ok)
            else None,
            "server_prompt_ms": summarize([r.server_prompt_ms for r in ok if r.server_prompt_ms is not None]).as_dict(),
            "background_itl_ms": summarize(_ms(raw["background_itl"][mode])).as_dict(),
            "gpu_memory": memory,
            "metrics": metric_deltas(raw["scraped"][mode]),
            "ttft_samples_ms": _ms([r.ttft for r in ok if r.ttft is not None]),
        }
    comparison: Comparison = {}
    if "merged" in modes and "split" in modes:
        itl_s = [g * 1000 for r in results if r.mode == "split" and r.ok for g in r.itl] or raw["background_itl"][
            "split"
        ]
        itl_m = [g * 1000 for r in results if r.mode == "merged" and r.ok for g in r.itl] or raw["background_itl"][
            "merged"
        ]
        comparison = compare(modes["split"]["ttft_samples_ms"], modes["merged"]["ttft_samples_ms"], itl_s, itl_m)
    notes = [tr(TTFT_DEFINITION)]
    if not gpu.unavailable:
        notes.append(tr(MEMORY_NOTE))
        shared = gpu.shared_gpus()
        if shared:
            notes.append(
                tr(
                    "prefill and decode instances report the same GPU ({gpus}): they are only logically "
                    "split, so memory will not drop"
                ).format(gpus=", ".join(shared))
            )
    urls = {r.url for r in raw["routes"].values()}
    moved = [
        m
        for m in s.modes
        if isinstance(modes[m]["metrics"], dict) and (modes[m]["metrics"].get("split_transfers") or 0) > 0
    ]
    verified: bool | None = None
    if "split" in modes and moved == ["split"]:
        verified = True
        notes.append(tr("routing verified: the split path's KV-transfer counter moved only while split ran"))
    elif len(urls) == 1 and len(s.modes) > 1:
        verified = False
        notes.append(
            tr(
                "routing unverified: both modes went to one URL and nothing in the backend's /metrics "
                "or responses tells them apart — the numbers may compare a mode with itself"
            )
        )
    if s.cache_bust:
        notes.append(tr("each prompt starts with a unique nonce, so the prefix cache cannot serve it"))
    else:
        notes.append(tr("prompts repeat: with the prefix cache on, later requests may be served from it"))
    withheld = sorted({m["key"] for m in modes.values() if m["key"] not in ("sent", "none")})
    notes += [tr("{reason} (its requests went without a key)").format(reason=w) for w in withheld]
    report = {
        "kvswitch_probe": REPORT_VERSION,
        "time": iso_utc(time.time()),
        "settings": {
            "base_url": s.base_url,
            "model": s.model,
            "modes": list(s.modes),
            "routing": s.routing,
            "runs": s.runs,
            "warmup": s.warmup,
            "concurrency": s.concurrency,
            "background": s.background,
            "prompt": tr("one fixed question × 8")
            if s.article_prompt
            else tr("about {count} tokens").format(count=s.prompt_tokens),
            "max_tokens": s.max_tokens,
            "cache_bust": s.cache_bust,
            "key": "set" if s.api_key else "none",
        },
        "cancelled": raw["cancelled"],
        "routing_verified": verified,
        "gpu_source": gpu.source or None,
        "gpu_unavailable": gpu.unavailable,
        "gpu_samples_per_s": round(gpu.rate(), 1),
        "gpu_processes": raw.get("gpu_processes") or None,
        "gpu_timeline": gpu_timeline(gpu.window(-math.inf, math.inf)),
        "modes": modes,
        "comparison": comparison,
        "notes": notes,
    }
    return cast("Report", finite(redactor(s).data(report)))


def export_report(report: Mapping[str, Any], path: Any) -> None:
    """Write ``report`` as indented JSON (UTF-8) to ``path``, atomically; an existing file is
    replaced whole or not at all."""
    from pathlib import Path

    from kvswitch.io import atomic_write

    data = (dumps(report, indent=2) + "\n").encode("utf-8")
    atomic_write(Path(path), data, backup=False)


def combine_reports(reports: list[Any]) -> Report:
    """One side-by-side report from reports of single modes taken apart (e.g. after switching a
    deployment between them): modes gathered, the comparison recomputed from the samples. Each
    report may be a bare report or ``kvswitch probe --format json``'s envelope, of this version or
    the one before (:func:`normalize_report`). ``ValueError`` (saying which report and why) for
    anything that is not a probe report."""
    if not reports:
        raise ValueError(tr("no reports to combine"))
    reports = [normalize_report(r) for r in reports]
    modes: dict[str, Any] = {}
    for i, r in enumerate(reports, 1):
        if not isinstance(r, dict) or not isinstance(r.get("modes"), dict) or not isinstance(r.get("settings"), dict):
            raise ValueError(
                tr("report {number} is not a kvswitch probe report (no modes or settings)").format(number=i)
            )
        for mode, data in r["modes"].items():
            samples = data.get("ttft_samples_ms") if isinstance(data, dict) else None
            if not isinstance(samples, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in samples
            ):
                raise ValueError(
                    tr("report {number}: mode {mode} has no list of TTFT samples").format(
                        number=i, mode=repr(str(mode)[:40])
                    )
                )
            modes[str(mode)] = {**data, "ttft_samples_ms": [x for x in samples if math.isfinite(x)]}
    combined = {
        **reports[-1],
        "modes": modes,
        "comparison": {},
        "kvswitch_probe": REPORT_VERSION,
        "routing_verified": None,
    }
    combined["settings"] = {
        **reports[0]["settings"],
        "modes": list(modes),
        "combined_from": [r.get("time") for r in reports],
    }
    if "merged" in modes and "split" in modes:
        combined["comparison"] = compare(modes["split"]["ttft_samples_ms"], modes["merged"]["ttft_samples_ms"])
    notes = [n for r in reports for n in _list(r.get("notes")) if isinstance(n, str)]
    combined["notes"] = list(
        dict.fromkeys(
            [
                *notes,
                tr(
                    "modes were measured one after the other, not interleaved: a drift over time counts against one "
                    "of them"
                ),
            ]
        )
    )
    return cast("Report", finite(combined))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- reading reports back: this version's shape, and the one before it ----------------------------
# Version 1 (kvswitch before the JSON envelope) wrote local times with an offset
# ("2026-01-02T03:04:05+0100") and had no routing_verified; remove the fallbacks one version on.


def unwrap(data: Any) -> Any:
    """The report inside ``kvswitch probe --format json``'s envelope (``{"kvswitch", "format",
    "command", "ok", "generated_at", "data"}``); anything else as it is."""
    if isinstance(data, dict) and isinstance(data.get("data"), dict) and "format" in data and "command" in data:
        return data["data"]
    return data


def _utc(value: Any) -> Any:
    """A report's time as ISO 8601 UTC: from Unix seconds or an ISO time with any offset; a
    value that is neither is left as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return iso_utc(value) if math.isfinite(value) and abs(value) < 1e11 else None
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a time without an offset was this machine's local time
    return iso_utc(moment.timestamp())


def _verified(notes: Any) -> bool | None:
    """An older report's routing check, from its (English) notes."""
    for note in _list(notes):
        if isinstance(note, str) and note.startswith("routing verified"):
            return True
        if isinstance(note, str) and note.startswith("routing unverified"):
            return False
    return None


def normalize_report(data: Any) -> Any:
    """A probe report as this version writes it, from a bare report or the ``--format json``
    envelope around one, written by this kvswitch or the version before (times made ISO 8601 UTC,
    ``routing_verified`` filled in). Anything that is not a dict comes back as it is: callers
    check the shape."""
    report = unwrap(data)
    if not isinstance(report, dict):
        return report
    out = dict(report)
    if "time" in out:
        out["time"] = _utc(out["time"])
    settings = out.get("settings")
    if isinstance(settings, dict):
        settings = dict(settings)
        for name in ("began", "ended"):
            if name in settings:
                settings[name] = _utc(settings[name])
        if isinstance(settings.get("combined_from"), list):
            settings["combined_from"] = [_utc(t) for t in settings["combined_from"]]
        out["settings"] = settings
    if "routing_verified" not in out:
        out["routing_verified"] = _verified(out.get("notes"))
    if out.get("kvswitch_probe") == 1:
        out["kvswitch_probe"] = REPORT_VERSION
    return out


def history_path() -> Any:
    from kvswitch import paths

    return paths.dirs().history / "probe.jsonl"


def save_history(report: Mapping[str, Any]) -> None:
    """Append the report (one JSON line, no envelope) to ``<history>/probe.jsonl``."""
    from kvswitch.io import append_private

    append_private(history_path(), (dumps(report) + "\n").encode("utf-8"))


def load_history(limit: int = 50) -> list[Report]:
    """The latest reports, newest last, each in this version's shape (:func:`normalize_report`:
    lines an older kvswitch wrote, and enveloped lines, read the same); lines that are not
    reports are skipped."""
    try:
        lines = history_path().read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out: list[Report] = []
    for line in lines[-limit:]:
        try:
            report = normalize_report(json.loads(line))
        except ValueError:
            continue
        if isinstance(report, dict):
            out.append(cast("Report", report))
    return out
