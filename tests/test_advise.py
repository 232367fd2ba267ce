"""``kvswitch advise``: the rules (the source digest's S-19, S-30…S-32 and the engines reference
§7.3), table-driven, and how a probe result decides the mode only when its interval excludes 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
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
    (
        "nothing known: merged, the default",
        Workload(),
        {"mode": "merged", "chunk_size": 512, "prefix_cache": True, "kv_cache_dtype": "auto"},
        ["right default", "#when-merged-pays", "#chunk-size", "#two-strategies"],
    ),
    (
        "S-30 short prompts, high concurrency",
        Workload(prompt_tokens=300, concurrency=32),
        {"mode": "merged", "chunk_size": 512},
        ["#when-merged-pays", "no KV transfer", "smooth"],
    ),
    (
        "S-30 short prompts alone",
        Workload(prompt_tokens=500),
        {"mode": "merged"},
        ["#when-merged-pays", "steadier TTFT"],
    ),
    (
        "S-31 long context with two GPUs",
        Workload(prompt_tokens=4000, gpus=2),
        {"mode": "split", "chunk_size": None},
        ["#when-split-pays", "1–2k new prompt tokens", "2 GPUs", "ignored there", "proxy hop"],
    ),
    (
        "S-31 long context under load",
        Workload(prompt_tokens=4000, concurrency=16, gpus=4),
        {"mode": "split"},
        ["under load"],
    ),
    (
        "S-31 hard TTFT SLO under load",
        Workload(ttft_slo_ms=300, concurrency=16, gpus=2),
        {"mode": "split"},
        ["TTFT SLO", "#when-split-pays"],
    ),
    (
        "a TTFT SLO at low load: split's hop hurts",
        Workload(ttft_slo_ms=300, concurrency=1, gpus=2),
        {"mode": "merged", "chunk_size": 1024},
        ["usually make TTFT worse", "Low load"],
    ),
    (
        "S-32 coding: split with prefix cache",
        Workload(workload="coding", prompt_tokens=3000, gpus=2),
        {"mode": "split", "prefix_cache": True},
        ["Coding work", "long system prompt"],
    ),
    (
        "S-32 agent, GPUs unknown: says split needs a second instance group",
        Workload(workload="agent"),
        {"mode": "split", "prefix_cache": True},
        ["second instance group", "Agent work", "#split"],
    ),
    (
        "coding at low load: a tie goes to merged",
        Workload(workload="coding", concurrency=1),
        {"mode": "merged"},
        ["tie goes to merged"],
    ),
    ("chat is S-30", Workload(workload="chat"), {"mode": "merged"}, ["Chat", "#when-merged-pays"]),
    (
        "batch is throughput: merged, bigger chunk",
        Workload(workload="batch"),
        {"mode": "merged", "chunk_size": 1024},
        ["throughput", "does not raise throughput"],
    ),
    (
        "one GPU never gets split",
        Workload(prompt_tokens=8000, gpus=1, workload="agent", ttft_slo_ms=200, concurrency=8),
        {"mode": "merged", "chunk_size": 1024},
        ["needs a second instance group", "1 GPU"],
    ),
    (
        "one GPU, nothing for split",
        Workload(gpus=1, prompt_tokens=200),
        {"mode": "merged"},
        ["One GPU: merged", "second instance group"],
    ),
    (
        "long prompts with high reuse: count new tokens",
        Workload(prompt_tokens=3000, prefix_reuse="high", gpus=2),
        {"mode": "split", "prefix_cache": True},
        ["new (uncached) tokens"],
    ),
    ("low prefix reuse: cache off", Workload(prefix_reuse="low"), {"prefix_cache": False}, ["swing", "only helps"]),
    (
        "KV pressure: fp8, never plain int8",
        Workload(prompt_tokens=8000, concurrency=16, gpus=2),
        {"kv_cache_dtype": "fp8"},
        ["doubles KV capacity", "no plain int8", "calibrated"],
    ),
    (
        "S-19 merged chunk stays in 512–1024",
        Workload(prompt_tokens=3000, gpus=1),
        {"mode": "merged", "chunk_size": 1024},
        ["512–1024", "never below 256", "multiple of 64"],
    ),
]


@pytest.mark.parametrize(("name", "workload", "expected", "phrases"), RULES, ids=[r[0] for r in RULES])
def test_rules(name: str, workload: Workload, expected: dict[str, Any], phrases: list[str]) -> None:
    a = advise(workload)
    for field_, value in expected.items():
        assert getattr(a, field_) == value, (field_, text(a))
    for phrase in phrases:
        assert phrase in text(a), (phrase, text(a))
    assert a.decided_by == "rules" and a.measurement is None
    assert all(r.source.startswith("docs/background.md#") for r in a.reasons)  # every reason links its page
    assert not re.search(r"S-\d\d|§", text(a))  # and stands alone


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
    assert any("restart the clients" in s for s in a.next_steps) and any("--max-tokens 128" in s for s in a.next_steps)


# -- the measurement ------------------------------------------------------------------------

SHORT = Workload(prompt_tokens=300, concurrency=32)  # the rules say merged
LONG = Workload(prompt_tokens=4000, gpus=2)  # the rules say split

PROBES: list[tuple[str, Workload, ProbeEvidence, str, str, list[str]]] = [
    (
        "split faster, interval below 1: split although the rules say merged",
        SHORT,
        ProbeEvidence(0.62, 0.55, 0.70),
        "split",
        "measurement",
        ["interval excludes 1", "split is faster to first token", "the rules alone would say merged"],
    ),
    (
        "merged faster, interval above 1: merged although the rules say split",
        LONG,
        ProbeEvidence(1.45, 1.20, 1.70),
        "merged",
        "measurement",
        ["interval excludes 1", "merged is faster to first token", "the rules alone would say split"],
    ),
    (
        "interval includes 1: the rules decide",
        LONG,
        ProbeEvidence(0.98, 0.90, 1.07),
        "split",
        "rules",
        ["not decided by the measurement", "includes 1"],
    ),
    (
        "interval includes 1, rules merged",
        SHORT,
        ProbeEvidence(1.02, 0.95, 1.10),
        "merged",
        "rules",
        ["not decided by the measurement"],
    ),
    (
        "no comparison: the rules decide",
        LONG,
        ProbeEvidence(failures={"merged": (0, 5)}),
        "split",
        "rules",
        ["no split/merged TTFT comparison", "not decided by the measurement"],
    ),
    (
        "every split request failed: merged, see doctor (S-25)",
        LONG,
        ProbeEvidence(failures={"split": (6, 6), "merged": (0, 6)}),
        "merged",
        "measurement",
        ["every split request failed", "kvswitch doctor --mode split"],
    ),
    (
        "routing unverified: a caveat",
        SHORT,
        ProbeEvidence(0.5, 0.4, 0.6, routing_unverified=True),
        "split",
        "measurement",
        ["routing unverified"],
    ),
    (
        "one GPU, split measured faster: says it needs a second instance group",
        Workload(gpus=1),
        ProbeEvidence(0.7, 0.6, 0.8),
        "split",
        "measurement",
        ["needs a second instance group", "only logically split"],
    ),
]


@pytest.mark.parametrize(
    ("name", "workload", "evidence", "mode", "decided", "phrases"), PROBES, ids=[p[0] for p in PROBES]
)
def test_probe_decides_only_when_the_interval_excludes_1(
    name: str, workload: Workload, evidence: ProbeEvidence, mode: str, decided: str, phrases: list[str]
) -> None:
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
        "kvswitch_probe": 1,
        "time": "2026-01-02T03:04:05+0000",
        "settings": {"base_url": "http://h/v1"},
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
        assert (
            main(
                [
                    "probe",
                    "--base-url",
                    srv.url,
                    "--model",
                    "test-model",
                    "--runs",
                    "6",
                    "--warmup",
                    "0",
                    "--max-tokens",
                    "2",
                    "--no-gpu",
                    "--format",
                    "json",
                ]
            )
            == 0
        )
    report = capsys.readouterr().out
    saved = tmp_path / "probe.json"
    saved.write_text(report)
    for spec in ("latest", str(saved)):
        assert main(["advise", "--prompt-tokens", "5000", "--gpus", "2", "--from-probe", spec, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["command"] == "advise" and out["ok"] is True
        out = out["data"]
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
    assert " 1. Short prompts (300 tokens) at high concurrency (64)" in out
    assert "[docs/background.md#when-merged-pays]" in out
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


# -- Chinese, and the JSON envelope ---------------------------------------------------------

ADVISE_DATA: dict[str, Any] = {
    "type": "object",
    "required": [
        "mode",
        "chunk_size",
        "prefix_cache",
        "kv_cache_dtype",
        "decided_by",
        "measurement",
        "reasons",
        "next_steps",
        "workload",
        "scores",
    ],
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["merged", "split"]},
        "chunk_size": {"type": ["integer", "null"]},
        "prefix_cache": {"type": "boolean"},
        "kv_cache_dtype": {"enum": ["auto", "fp8"]},
        "decided_by": {"enum": ["rules", "measurement"]},
        "measurement": {"type": ["string", "null"]},
        "reasons": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["n", "text", "source"],
                "additionalProperties": False,
                "properties": {
                    "n": {"type": "integer", "minimum": 1},
                    "text": {"type": "string", "minLength": 1},
                    "source": {"type": "string", "pattern": r"^(probe|docs/background\.md#[a-z-]+)$"},
                },
            },
        },
        "next_steps": {"type": "array", "items": {"type": "string"}},
        "workload": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "prompt_tokens": {"type": ["integer", "null"]},
                "concurrency": {"type": ["integer", "null"]},
                "gpus": {"type": ["integer", "null"]},
                "ttft_slo_ms": {"type": ["number", "null"]},
                "prefix_reuse": {"enum": ["high", "low", None]},
                "workload": {"enum": ["chat", "coding", "agent", "batch", None]},
            },
        },
        "scores": {
            "type": "object",
            "required": ["merged", "split"],
            "additionalProperties": False,
            "properties": {"merged": {"type": "integer"}, "split": {"type": "integer"}},
        },
    },
}
"""The shape of ``data`` in ``kvswitch advise --format json`` (sent to the output schema's owner)."""
CJK = re.compile(r"[\u4e00-\u9fff]")
INTERNAL = re.compile(r"\bS-\d{2}\b|\bD-\d{1,2}\b|§|the article|DIGEST", re.IGNORECASE)


def _kvswitch_zh(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVSWITCH_LANG": "zh-CN"}
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _validate(document: dict[str, Any]) -> None:
    import jsonschema

    schema = json.loads(
        (Path(__file__).resolve().parent.parent / "schemas" / "kvswitch-output.schema.json").read_text(encoding="utf-8")
    )
    schema.pop("allOf", None)  # the envelope alone; the data is checked against ADVISE_DATA
    jsonschema.validate(document, schema, format_checker=jsonschema.FormatChecker())
    assert document["command"] == "advise" and document["ok"] is True
    jsonschema.validate(document["data"], ADVISE_DATA)


@pytest.mark.parametrize("workload", [w for _, w, _, _ in RULES[:6]] + [Workload(workload="agent", gpus=1)])
def test_every_reason_stands_alone_and_the_json_fits_its_shape(workload: Workload) -> None:
    import jsonschema

    data = advise(workload).as_dict()
    jsonschema.validate(json.loads(json.dumps(data)), ADVISE_DATA)
    assert not INTERNAL.search(json.dumps(data, ensure_ascii=False))


def test_advise_in_chinese_text_and_json() -> None:
    done = _kvswitch_zh("advise", "--prompt-tokens", "300", "--concurrency", "64", "--gpus", "1")
    assert done.returncode == 0, done
    out = done.stdout
    assert "kvswitch advise · 提示词 300 个 token · 并发 64 · 1 块 GPU" in out
    assert "前缀缓存" in out and "开启" in out and "理由：" in out and "下一步：" in out
    assert " 1. 高并发（64）下的短提示词（300 个 token）" in out and "合并模式（merged）" in out
    assert "[docs/background.md#when-merged-pays]" in out and "kvswitch switch merged" in out
    assert "chunk_size      512" in out and "kv_cache_dtype  auto" in out  # keys and values as they are
    assert not INTERNAL.search(out)
    done = _kvswitch_zh("advise", "--prompt-tokens", "6000", "--gpus", "2", "--format", "json")
    document = json.loads(done.stdout)
    _validate(document)
    data = document["data"]
    assert data["mode"] == "split" and data["chunk_size"] is None and data["decided_by"] == "rules"
    assert all(CJK.search(r["text"]) for r in data["reasons"]) and all(CJK.search(s) for s in data["next_steps"])


def test_advise_in_chinese_from_a_probe_result(tmp_path: Path) -> None:
    report = {
        "modes": {"merged": {"requests": 6, "failures": 0}, "split": {"requests": 6, "failures": 0}},
        "comparison": {"ttft_median_ratio": {"split/merged": 2.9, "ci95": [2.5, 3.3]}},
    }
    path = tmp_path / "probe.json"
    path.write_text(
        json.dumps(
            {
                "kvswitch": "0",
                "format": 1,
                "command": "probe",
                "ok": True,
                "generated_at": "2026-01-01T00:00:00Z",
                "data": report,
            }
        )
    )
    done = _kvswitch_zh("advise", "--prompt-tokens", "5000", "--gpus", "2", "--from-probe", str(path))
    assert done.returncode == 0, done
    assert "决定依据        测量结果" in done.stdout
    assert " 1. 实测：" in done.stdout and "区间不包含 1" in done.stdout and "[probe]" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    done = _kvswitch_zh("advise", "--from-probe", str(bad))
    assert done.returncode == 2 and "不是 kvswitch 的探测结果" in done.stderr
