"""``kvswitch advise``: the rules (S-19, S-30…S-32, §7.3), table-driven, and how a probe
result decides the mode only when its interval excludes 1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kvswitch.advise import (
    Advice,
    ProbeEvidence,
    Workload,
    advise,
    evidence_from_report,
    load_probe,
)
from kvswitch.cli import main
from kvswitch.errors import ReadError


def text(a: Advice) -> str:
    return "\n".join(f"{r.text} [{r.source}]" for r in a.reasons)


def sources(a: Advice) -> str:
    return " ".join(r.source for r in a.reasons)


# -- the rules ----------------------------------------------------------------------------

RULES: list[tuple[str, Workload, dict[str, Any], list[str]]] = [
    # name, workload, expected fields, phrases/sources that must be among the reasons
    ("nothing known: merged, the default", Workload(),
     {"mode": "merged", "chunk_size": 512, "prefix_cache": True, "kv_cache_dtype": "auto"},
     ["right default", "§7.3", "S-19", "article table"]),
    ("S-30 short prompts, high concurrency", Workload(prompt_tokens=300, concurrency=32),
     {"mode": "merged", "chunk_size": 512}, ["S-30", "no KV transfer", "smooth"]),
    ("S-30 short prompts alone", Workload(prompt_tokens=500), {"mode": "merged"}, ["S-30", "steadier TTFT"]),
    ("S-31 long context with two GPUs", Workload(prompt_tokens=4000, gpus=2),
     {"mode": "split", "chunk_size": None}, ["S-31", "1–2k new prompt tokens", "2 GPUs", "S-26", "proxy hop"]),
    ("S-31 long context under load", Workload(prompt_tokens=4000, concurrency=16, gpus=4),
     {"mode": "split"}, ["under load"]),
    ("S-31 hard TTFT SLO under load", Workload(ttft_slo_ms=300, concurrency=16, gpus=2),
     {"mode": "split"}, ["TTFT SLO", "S-31"]),
    ("a TTFT SLO at low load: split's hop hurts", Workload(ttft_slo_ms=300, concurrency=1, gpus=2),
     {"mode": "merged", "chunk_size": 1024}, ["usually make TTFT worse", "Low load"]),
    ("S-32 coding: split with prefix cache", Workload(workload="coding", prompt_tokens=3000, gpus=2),
     {"mode": "split", "prefix_cache": True}, ["S-32", "long system prompt"]),
    ("S-32 agent, GPUs unknown: says split needs a second instance group", Workload(workload="agent"),
     {"mode": "split", "prefix_cache": True}, ["second instance group", "S-25"]),
    ("coding at low load: a tie goes to merged", Workload(workload="coding", concurrency=1),
     {"mode": "merged"}, ["tie goes to merged"]),
    ("chat is S-30", Workload(workload="chat"), {"mode": "merged"}, ["Chat", "S-30"]),
    ("batch is throughput: merged, bigger chunk", Workload(workload="batch"),
     {"mode": "merged", "chunk_size": 1024}, ["throughput", "does not raise throughput"]),
    ("one GPU never gets split", Workload(prompt_tokens=8000, gpus=1, workload="agent", ttft_slo_ms=200,
                                          concurrency=8),
     {"mode": "merged", "chunk_size": 1024}, ["needs a second instance group", "1 GPU"]),
    ("one GPU, nothing for split", Workload(gpus=1, prompt_tokens=200), {"mode": "merged"},
     ["One GPU: merged", "second instance group"]),
    ("long prompts with high reuse: count new tokens", Workload(prompt_tokens=3000, prefix_reuse="high", gpus=2),
     {"mode": "split", "prefix_cache": True}, ["new (uncached) tokens"]),
    ("low prefix reuse: cache off", Workload(prefix_reuse="low"), {"prefix_cache": False}, ["S-28", "only helps"]),
    ("KV pressure: fp8, never plain int8", Workload(prompt_tokens=8000, concurrency=16, gpus=2),
     {"kv_cache_dtype": "fp8"}, ["doubles KV capacity", "no plain int8", "calibrated"]),
    ("S-19 merged chunk stays in 512–1024", Workload(prompt_tokens=3000, gpus=1),
     {"mode": "merged", "chunk_size": 1024}, ["512–1024", "never below 256", "multiple of 64"]),
]


@pytest.mark.parametrize(("name", "workload", "expected", "phrases"), RULES, ids=[r[0] for r in RULES])
def test_rules(name: str, workload: Workload, expected: dict[str, Any], phrases: list[str]) -> None:
    a = advise(workload)
    for field_, value in expected.items():
        assert getattr(a, field_) == value, (field_, text(a))
    for phrase in phrases:
        assert phrase in text(a), (phrase, text(a))
    assert a.decided_by == "rules" and a.measurement is None
    assert all(r.source for r in a.reasons)  # every reason cites its source


@pytest.mark.parametrize("workload", [w for _, w, _, _ in RULES])
def test_split_is_never_advised_without_the_second_instance_group(workload: Workload) -> None:
    a = advise(workload)
    if a.mode == "split":
        assert "second instance group" in text(a) or f"{workload.gpus} GPUs: room for a prefill and a decode" in text(a)
    if workload.gpus == 1:
        assert a.mode == "merged" and "second instance group" in text(a)


def test_split_advice_carries_the_doctor_step() -> None:
    a = advise(Workload(prompt_tokens=5000, gpus=2))
    assert any("kvswitch doctor --mode split" in s for s in a.next_steps)
    assert any("S-35" in s for s in a.next_steps) and any("S-34" in s for s in a.next_steps)


# -- the measurement ------------------------------------------------------------------------

SHORT = Workload(prompt_tokens=300, concurrency=32)  # the rules say merged
LONG = Workload(prompt_tokens=4000, gpus=2)  # the rules say split

PROBES: list[tuple[str, Workload, ProbeEvidence, str, str, list[str]]] = [
    ("split faster, interval below 1: split although the rules say merged", SHORT,
     ProbeEvidence(0.62, 0.55, 0.70), "split", "measurement",
     ["interval excludes 1", "split is faster to first token", "the rules alone would say merged"]),
    ("merged faster, interval above 1: merged although the rules say split", LONG,
     ProbeEvidence(1.45, 1.20, 1.70), "merged", "measurement",
     ["interval excludes 1", "merged is faster to first token", "the rules alone would say split"]),
    ("interval includes 1: the rules decide", LONG, ProbeEvidence(0.98, 0.90, 1.07), "split", "rules",
     ["not decided by the measurement", "includes 1"]),
    ("interval includes 1, rules merged", SHORT, ProbeEvidence(1.02, 0.95, 1.10), "merged", "rules",
     ["not decided by the measurement"]),
    ("no comparison: the rules decide", LONG, ProbeEvidence(failures={"merged": (0, 5)}), "split", "rules",
     ["no split/merged TTFT comparison", "not decided by the measurement"]),
    ("every split request failed: merged, see doctor (S-25)", LONG,
     ProbeEvidence(failures={"split": (6, 6), "merged": (0, 6)}), "merged", "measurement",
     ["every split request failed", "kvswitch doctor --mode split", "S-25"]),
    ("routing unverified: a caveat", SHORT, ProbeEvidence(0.5, 0.4, 0.6, routing_unverified=True), "split",
     "measurement", ["routing unverified"]),
    ("one GPU, split measured faster: says it needs a second instance group", Workload(gpus=1),
     ProbeEvidence(0.7, 0.6, 0.8), "split", "measurement", ["needs a second instance group", "S-27"]),
]


@pytest.mark.parametrize(("name", "workload", "evidence", "mode", "decided", "phrases"), PROBES,
                         ids=[p[0] for p in PROBES])
def test_probe_decides_only_when_the_interval_excludes_1(name: str, workload: Workload, evidence: ProbeEvidence,
                                                         mode: str, decided: str, phrases: list[str]) -> None:
    a = advise(workload, evidence)
    assert a.mode == mode, text(a)
    assert a.decided_by == decided
    body = text(a) + "\n" + (a.measurement or "")
    for phrase in phrases:
        assert phrase in body, (phrase, body)
    assert "probe" in sources(a)
    if decided == "measurement":
        assert a.reasons[0].text.startswith("Measured:")


def test_evidence_from_a_report() -> None:
    report = {
        "kvswitch_probe": 1, "time": "2026-01-02T03:04:05+0000", "settings": {"base_url": "http://h/v1"},
        "modes": {"merged": {"requests": 10, "failures": 0}, "split": {"requests": 10, "failures": 2}},
        "comparison": {"ttft_median_ratio": {"split/merged": 0.8, "ci95": [0.7, 0.9]}},
        "notes": ["routing unverified: both modes went to one URL …"],
    }
    ev = evidence_from_report(report)
    assert (ev.ratio, ev.low, ev.high, ev.verdict) == (0.8, 0.7, 0.9, "split")
    assert ev.failures == {"merged": (0, 10), "split": (2, 10)}
    assert ev.routing_unverified and ev.label == "the probe of 2026-01-02T03:04:05+0000 against http://h/v1"
    empty = evidence_from_report({"modes": {}})
    assert empty.ratio is None and empty.verdict is None


# -- the command line, with a real probe ----------------------------------------------------

def test_cli_from_a_probe_in_the_history_and_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kvswitch.testing.sse_server import SSEServer

    with SSEServer(ttft_ms=30, split_ttft_ms=90, itl_ms=1, tokens=2) as srv:
        assert main(["probe", "--base-url", srv.url, "--model", "test-model", "--runs", "6", "--warmup", "0",
                     "--max-tokens", "2", "--no-gpu", "--format", "json"]) == 0
    report = capsys.readouterr().out
    saved = tmp_path / "probe.json"
    saved.write_text(report)
    for spec in ("latest", str(saved)):
        assert main(["advise", "--prompt-tokens", "5000", "--gpus", "2", "--from-probe", spec, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["mode"] == "merged" and out["decided_by"] == "measurement"  # 90 ms / 30 ms: merged measured faster
        assert "interval excludes 1" in out["reasons"][0]["text"] and out["reasons"][0]["source"] == "probe"
        assert "the rules alone would say split" in out["reasons"][0]["text"]
        assert [r["n"] for r in out["reasons"]] == list(range(1, len(out["reasons"]) + 1))
    assert main(["advise", "--from-probe", "latest"]) == 0
    shown = capsys.readouterr().out
    assert "decided by      the measurement" in shown and " 1. Measured:" in shown and "[probe]" in shown


def test_cli_text_numbers_the_reasons_with_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--prompt-tokens", "300", "--concurrency", "64", "--gpus", "1"]) == 0
    out = capsys.readouterr().out
    assert "mode            merged" in out and "chunk_size      512" in out and "prefix cache    on" in out
    assert " 1. Short prompts (300 tokens) at high concurrency (64)" in out and "[S-30]" in out
    assert "kvswitch switch merged" in out


def test_cli_split_text_says_chunk_is_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--prompt-tokens", "6000", "--gpus", "2", "--workload", "agent"]) == 0
    out = capsys.readouterr().out
    assert "mode            split" in out and "– (ignored in split mode)" in out


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--prompt-tokens", "0"]) == 2
    assert main(["advise", "--workload", "gaming"]) == 2
    assert main(["advise", "--ttft-slo", "-5"]) == 2
    assert main(["advise", "--from-probe", "latest"]) == 2  # nothing in the history yet
    assert "run kvswitch probe first" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["advise", "--from-probe", str(bad)]) == 2
    assert main(["advise", "--from-probe", str(tmp_path / "missing.json")]) == 2
    assert "not a kvswitch probe result" in capsys.readouterr().err


def test_load_probe_reads_a_jsonl_history_file(tmp_path: Path) -> None:
    lines = [json.dumps({"modes": {}, "comparison": {}, "time": "a"}), json.dumps({"modes": {}, "time": "b"})]
    path = tmp_path / "probe.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert load_probe(str(path))["time"] == "b"
    with pytest.raises(ReadError):
        load_probe(str(tmp_path))
    assert os.environ["KVSWITCH_HOME"]  # the sandbox: "latest" reads only its own history
