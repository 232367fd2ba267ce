"""Probe reports in this version's shape (``kvswitch_probe`` 2: ISO 8601 UTC times, a
``routing_verified`` field) and the shapes read back for one version: history lines an older
kvswitch wrote (local time with an offset, or Unix seconds, no envelope), ``--format json``'s
envelope around a report, and passive reports' window times."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvswitch.cli.envelope import envelope, iso_time
from kvswitch.probe import report as report_mod
from kvswitch.probe.passive import PassiveSettings, Watched, build_passive_report
from kvswitch.probe.report import (
    REPORT_VERSION,
    combine_reports,
    iso_utc,
    load_history,
    normalize_report,
)

OLD_ACTIVE = {  # as kvswitch 0.1 wrote it: time.strftime("%Y-%m-%dT%H:%M:%S%z"), no routing_verified
    "kvswitch_probe": 1,
    "time": "2026-01-02T03:04:05+0100",
    "settings": {"base_url": "http://h/v1", "model": "m", "modes": ["merged", "split"], "runs": 2},
    "modes": {
        "merged": {"requests": 2, "failures": 0, "ttft_samples_ms": [10.0, 11.0]},
        "split": {"requests": 2, "failures": 0, "ttft_samples_ms": [20.0, 21.0]},
    },
    "comparison": {},
    "notes": [
        "TTFT = …",
        "routing unverified: both modes went to one URL and nothing in the backend's /metrics "
        "or responses tells them apart — the numbers may compare a mode with itself",
    ],
}
OLD_PASSIVE = {
    "kvswitch_probe": 1,
    "time": "2026-03-04T10:00:30-0500",
    "settings": {
        "passive": True,
        "gateway": "http://127.0.0.1:18090",
        "look": "next",
        "began": "2026-03-04T10:00:00-0500",
        "ended": "2026-03-04T10:00:30-0500",
        "seconds": 30.0,
    },
    "modes": {},
    "comparison": {},
    "notes": [],
}


def write_history(*lines: str) -> None:
    path = report_mod.history_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_history_lines_of_every_shape_read_as_this_versions_reports() -> None:
    new = {**OLD_ACTIVE, "kvswitch_probe": 2, "time": "2026-05-06T07:08:09Z", "routing_verified": True}
    write_history(
        json.dumps(OLD_ACTIVE),
        json.dumps(OLD_PASSIVE),
        json.dumps({**OLD_ACTIVE, "time": 1767225600.25, "notes": ["routing verified: the split path's …"]}),
        json.dumps(envelope("probe", new)),  # a line someone appended from --format json
        "not json",
        "[1, 2]",
    )
    reports = load_history()
    assert [r["time"] for r in reports] == [
        "2026-01-02T02:04:05Z",
        "2026-03-04T15:00:30Z",
        "2026-01-01T00:00:00.250Z",
        "2026-05-06T07:08:09Z",
    ]
    assert [r["routing_verified"] for r in reports] == [False, None, True, True]
    assert all(r["kvswitch_probe"] == REPORT_VERSION for r in reports)
    passive = reports[1]["settings"]
    assert (passive["began"], passive["ended"]) == ("2026-03-04T15:00:00Z", "2026-03-04T15:00:30Z")
    assert load_history(limit=3)[-1]["time"] == "2026-05-06T07:08:09Z"  # the newest last


def test_normalizing_twice_changes_nothing_and_strange_values_pass_through() -> None:
    once = normalize_report(OLD_ACTIVE)
    assert normalize_report(once) == once and OLD_ACTIVE["time"] == "2026-01-02T03:04:05+0100"  # not mutated
    odd = {"time": "yesterday", "settings": {"began": None, "combined_from": [True, "2026-01-02T03:04:05+0100"]}}
    got = normalize_report(odd)
    assert got["time"] == "yesterday" and got["settings"]["began"] is None
    assert got["settings"]["combined_from"] == [True, "2026-01-02T02:04:05Z"]
    assert normalize_report([1]) == [1] and normalize_report(None) is None


def test_iso_utc_is_the_envelopes_time_format() -> None:
    for seconds in (0.0, 1767225600.0, 1767225600.25, 1767225600.999):
        assert iso_utc(seconds) == iso_time(seconds)
    assert iso_utc(1767225600) == "2026-01-01T00:00:00Z" and iso_utc(None) is None


def test_combine_takes_envelopes_and_old_reports_alike() -> None:
    split_only = {
        **OLD_ACTIVE,
        "kvswitch_probe": 2,
        "time": "2026-01-02T02:10:00Z",
        "modes": {"split": OLD_ACTIVE["modes"]["split"]},
    }  # type: ignore[index]
    merged_only = {**OLD_ACTIVE, "modes": {"merged": OLD_ACTIVE["modes"]["merged"]}}  # type: ignore[index]
    combined = combine_reports([merged_only, envelope("probe", split_only)])
    assert combined["settings"]["combined_from"] == ["2026-01-02T02:04:05Z", "2026-01-02T02:10:00Z"]
    assert combined["kvswitch_probe"] == REPORT_VERSION and combined["routing_verified"] is None
    assert combined["comparison"]["ttft_median_ratio"]["split/merged"] == pytest.approx(20.5 / 10.5, rel=0.01)
    with pytest.raises(ValueError, match="report 2"):
        combine_reports([merged_only, envelope("probe", {"modes": 3})])


def test_a_passive_report_gives_its_window_in_utc() -> None:
    s = PassiveSettings(gateway="http://127.0.0.1:18090", token="t" * 32, window=60.0)
    w = Watched(began=1767225600.0, ended=1767225660.25)
    rep: dict[str, Any] = build_passive_report(w, s)
    assert rep["kvswitch_probe"] == REPORT_VERSION and rep["routing_verified"] is None
    assert rep["time"] == "2026-01-01T00:01:00.250Z"
    window = (rep["settings"]["began"], rep["settings"]["ended"])
    assert window == ("2026-01-01T00:00:00Z", "2026-01-01T00:01:00.250Z")
    past = build_passive_report(w, PassiveSettings(gateway=s.gateway, token=s.token, window=600.0, past=True))
    assert past["settings"]["began"] == "2025-12-31T23:50:00Z"  # looking back: the window before it was read
