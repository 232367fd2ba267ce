"""The report's ``gpu_timeline`` and ``export_report`` (kvswitch.probe.report)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kvswitch.errors import KvswitchError
from kvswitch.probe import report as report_mod
from kvswitch.probe.gpu import GpuSample, GpuSampler
from kvswitch.probe.runner import ProbeSettings, resolve_routes
from kvswitch.testing.sse_server import SSEServer
from tests.probe import fake_nvidia_smi
from tests.probe.test_runner import U0, probe, settings

U1 = "GPU-4eac38f2-1a70-662a-f6f4-9b62d1778ef4"


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)


def _raw(samples: list[GpuSample], *, unavailable: str | None = None) -> dict[str, Any]:
    s: ProbeSettings = settings("http://127.0.0.1:9/v1", gpu=True)
    gpu = GpuSampler()
    gpu.source = "" if unavailable else "nvidia-smi"
    gpu.unavailable = unavailable
    gpu.samples = samples
    return {
        "settings": s,
        "routes": resolve_routes(s),
        "results": [],
        "windows": {m: [(0.0, 100.0)] for m in s.modes},
        "scraped": {m: [] for m in s.modes},
        "background_itl": {m: [] for m in s.modes},
        "gpu": gpu,
        "baseline_until": 0.0,
        "cancelled": False,
    }


def test_timeline_is_relative_sorted_and_skips_unknown_readings() -> None:
    samples = [
        GpuSample(10.5, "local", U1, 500.0, 8000.0),
        GpuSample(10.0, "local", U0, 1000.0, 8000.0),
        GpuSample(10.0, "local", U1, None, None),
        GpuSample(10.25, "local", U0, 1200.0, 8000.0),
    ]
    rep = report_mod.build_report(_raw(samples))
    assert rep["gpu_timeline"] == [[0.0, U0, 1000.0], [0.25, U0, 1200.0], [0.5, U1, 500.0]]
    assert json.loads(json.dumps(rep))["gpu_timeline"] == rep["gpu_timeline"]
    # the per-mode figures are what they were before the timeline existed
    assert rep["modes"]["merged"]["gpu_memory"][U0]["peak_mib"] == 1200.0


def test_timeline_is_empty_without_a_gpu() -> None:
    rep = report_mod.build_report(_raw([], unavailable="local: nvidia-smi not found"))
    assert rep["gpu_timeline"] == []
    assert rep["modes"]["merged"]["gpu_memory"] == "n/a: local: nvidia-smi not found"


def test_a_long_timeline_is_bucketed_and_keeps_the_peak() -> None:
    samples = [GpuSample(i * 0.1, "local", U0, 1000.0 + (5000.0 if i == 4321 else 0.0), None) for i in range(10_000)]
    line = report_mod.gpu_timeline(samples, max_points=100)
    assert len(line) == 100
    assert max(row[2] for row in line) == 6000.0
    assert [row[0] for row in line] == sorted(row[0] for row in line)
    assert line[0][0] == 0.0


def test_a_probe_with_the_stand_in_has_a_timeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_SEQ", ",".join(str(1000 + 100 * i) for i in range(200)))
    smi = fake_nvidia_smi.install(tmp_path / "bin")
    with SSEServer(ttft_ms=20, itl_ms=2, tokens=3) as srv:
        _, rep = probe(settings(srv.url, runs=2, warmup=0, gpu=True, smi=str(smi), gpu_interval_ms=25))
    line = rep["gpu_timeline"]
    assert len(line) >= 3 and {row[1] for row in line} == {U0}
    assert line[0][0] == 0.0 and line[-1][2] > line[0][2]


def test_export_report_writes_json_atomically(tmp_path: Path) -> None:
    rep = report_mod.build_report(_raw([GpuSample(1.0, "local", U0, 1000.0, 8000.0)]))
    rep["notes"].append("naïve ✓")
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    out.write_text("old")
    report_mod.export_report(rep, out)
    text = out.read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(rep)) and "naïve ✓" in text and text.endswith("\n")
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]  # no temp file or backup left behind
    report_mod.export_report(rep, str(out))  # a str path too; same bytes: nothing to do
    assert out.read_text(encoding="utf-8") == text


def test_export_report_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(KvswitchError):
        report_mod.export_report({"kvswitch_probe": 1}, tmp_path / "no" / "such" / "dir" / "r.json")
