"""The probe and doctor trust no server (issue 10, points 1 and 8).

A hostile server (tests/probe/hostile.py) drives the real probe code — runner, client,
transport, SSE parser — and the real CLI in process:
- keys it echoes back (401 bodies, error events, unparseable events, headers, a broken status
  line; raw, JSON-escaped, URL-encoded, base64) reach no output: text, ``--format json``,
  history, doctor's report;
- endless lines, events, header blocks and bodies, bad Content-Length, bad chunk sizes, slow
  and silent servers each fail the request with a reason, within the timeouts, with the memory
  the probe holds bounded (tracemalloc peak), and never exit 3;
- NaN and Infinity from a server never reach ``--format json`` or the history.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from kvswitch.cli import main
from kvswitch.probe import report as report_mod
from kvswitch.probe.runner import ProbeSettings, run_probe
from tests.probe.hostile import ECHO_FORMS, HostileServer
from tests.test_redact import assert_masked

KEY = "sk-HOSTILE/0123456789+abcdefXYZ"
ENV = "KVS_HOSTILE_KEY"
MEMORY_CAP = 24 * 1024 * 1024
"""The most the probe may hold (tracemalloc peak) whatever the server sends; it sends 40 MiB."""


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, KEY)


def history() -> str:
    path = Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def strict_json(text: str) -> Any:
    """JSON as RFC 8259 has it: a bare NaN or Infinity is an error."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def probe_cli(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(
        [
            "probe",
            "--base-url",
            url,
            "--model",
            "m",
            "--api-key-env",
            ENV,
            "--mode",
            "merged",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-gpu",
            "--no-metrics",
            "--stall-timeout",
            "1",
            "--timeout",
            "2",
            *extra,
        ]
    )
    got = capsys.readouterr()
    return code, got.out + got.err


# -- keys echoed back ------------------------------------------------------------------------------

ECHOES = [("echo-401", form) for form in ECHO_FORMS] + [
    (scenario, form)
    for scenario in (
        "echo-text-401",
        "sse-error",
        "sse-unparseable",
        "status-line-echo",
        "header-echo",
        "bad-header-line",
    )
    for form in ("raw", "json-unicode", "json-mixed", "percent", "basic")
]


@pytest.mark.parametrize(("scenario", "form"), ECHOES)
def test_an_echoed_key_reaches_no_probe_output(scenario: str, form: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer(scenario, form) as srv:
        code_text, text = probe_cli(srv.url, capsys)
        code_json, out = probe_cli(srv.url, capsys, "--format", "json")
    assert srv.seen and all(auth == f"Bearer {KEY}" for _, auth in srv.seen)  # the key went to its own address
    assert srv.sent  # and the server echoed it
    assert code_text == code_json == 1  # a failure, not a crash (3)
    report = strict_json(out)["data"]
    causes = report["modes"]["merged"]["failure_causes"]
    assert sum(causes.values()) == 1 and all(cause for cause in causes), causes
    for output in (text, out, history()):
        assert_masked(output, KEY)


@pytest.mark.parametrize(
    ("scenario", "form"),
    [("echo-401", f) for f in ("raw", "json-mixed", "percent-plus", "basic")]
    + [("sse-error", "json-unicode"), ("sse-unparseable", "raw"), ("header-echo", "percent")],
)
def test_an_echoed_key_reaches_no_doctor_output(scenario: str, form: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer(scenario, form) as srv:
        outputs = []
        for fmt in ("text", "json"):
            code = main(
                [
                    "doctor",
                    "--base-url",
                    srv.url,
                    "--model",
                    "m",
                    "--api-key-env",
                    ENV,
                    "--format",
                    fmt,
                    "--timeout",
                    "2",
                    "--skip",
                    "nvidia-smi",
                    "--skip",
                    "same-gpu",
                    "--skip",
                    "prefix-cache",
                ]
            )
            got = capsys.readouterr()
            assert code in (0, 1), got
            outputs.append(got.out + got.err)
    assert srv.sent
    for output in outputs:
        assert_masked(output, KEY)
    strict_json(outputs[1])


def test_a_redirect_never_takes_the_key_to_another_server(capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer("echo-401") as elsewhere, HostileServer("redirect") as srv:
        srv.location = elsewhere.url + "/models"
        code, out = probe_cli(srv.url, capsys)
        main(
            [
                "doctor",
                "--base-url",
                srv.url,
                "--model",
                "m",
                "--api-key-env",
                ENV,
                "--timeout",
                "2",
                "--skip",
                "nvidia-smi",
                "--skip",
                "same-gpu",
            ]
        )
        out += capsys.readouterr().out
    assert code == 1 and srv.seen
    assert elsewhere.seen == []  # nothing followed the redirect, so no key went there
    assert_masked(out, KEY)


# -- broken and endless responses -------------------------------------------------------------------

BROKEN = {
    "endless-line": "bad stream: a line longer than",
    "endless-event": "bad stream: an event longer than",
    "endless-tokens": "token events for max_tokens",
    "endless-body": "bad stream: a line longer than",
    "huge-header": "header block is over",
    "bad-content-length": "bad Content-Length 'abc'",
    "negative-content-length": "bad Content-Length '-5'",
    "two-content-lengths": "more than one Content-Length",
    "chunk-bad-size": "bad chunk size",
    "chunk-negative-size": "bad chunk size",
    "chunk-overlong": "a chunk is longer than its size says",
    "chunk-endless-size": "a chunk header is longer than",
    "endless-comments": "no complete answer within 2 s",
    "trickle": "no complete answer within 2 s",
    "slow-head": "stalled: no complete response head within 1 s",
    "silent": "stalled: no data for 1 s",
}


def run_library_probe(url: str) -> tuple[dict[str, Any], int, float]:
    """(report, tracemalloc peak in bytes, seconds) of one request through the real runner."""
    s = ProbeSettings(
        base_url=url,
        model="m",
        api_key=KEY,
        modes=("merged",),
        runs=1,
        warmup=0,
        max_tokens=4,
        gpu=False,
        metrics=False,
        stall_timeout=1.0,
        request_timeout=2.0,
    )
    tracemalloc.start()
    started = time.perf_counter()
    try:
        raw = asyncio.run(run_probe(s))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return report_mod.build_report(raw), peak, time.perf_counter() - started


@pytest.mark.parametrize("scenario", sorted(BROKEN))
def test_a_broken_response_is_a_failure_with_a_reason_and_bounded_memory(scenario: str) -> None:
    with HostileServer(scenario) as srv:
        report, peak, took = run_library_probe(srv.url)
    merged = report["modes"]["merged"]
    assert merged["failures"] == 1, merged
    (cause,) = merged["failure_causes"]
    assert BROKEN[scenario] in cause
    assert peak < MEMORY_CAP, f"{scenario}: the probe held {peak / 2**20:.1f} MiB"
    assert took < 10
    assert merged["ttft_ms"]["count"] == 0  # a failure is never a time


@pytest.mark.parametrize("scenario", ["bad-content-length", "huge-header", "chunk-bad-size", "endless-event"])
def test_the_cli_reports_a_broken_response_and_exits_1_not_3(scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer(scenario) as srv:
        code, out = probe_cli(srv.url, capsys)
    assert code == 1, out
    assert "1 failed: bad " in out and BROKEN[scenario].split(":")[-1].strip() in out


def test_doctor_survives_endless_and_broken_answers(capsys: pytest.CaptureFixture[str]) -> None:
    for scenario in ("endless-body", "bad-content-length", "huge-header", "endless-line"):
        with HostileServer(scenario) as srv:
            tracemalloc.start()
            try:
                code = main(
                    [
                        "doctor",
                        "--base-url",
                        srv.url,
                        "--model",
                        "m",
                        "--api-key-env",
                        ENV,
                        "--timeout",
                        "2",
                        "--skip",
                        "nvidia-smi",
                        "--skip",
                        "same-gpu",
                        "--skip",
                        "prefix-cache",
                    ]
                )
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        out = capsys.readouterr().out
        assert code in (0, 1), out
        assert peak < MEMORY_CAP, f"{scenario}: doctor held {peak / 2**20:.1f} MiB"


# -- NaN and Infinity -------------------------------------------------------------------------------


def test_nan_and_infinity_never_reach_json_or_history(capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer("nan") as srv:
        code = main(
            [
                "probe",
                "--base-url",
                srv.url,
                "--model",
                "m",
                "--mode",
                "merged",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--no-gpu",
                "--format",
                "json",
                "--stall-timeout",
                "2",
            ]
        )
        out = capsys.readouterr().out
    assert code == 0, out
    report = strict_json(out)["data"]
    merged = report["modes"]["merged"]
    assert merged["server_prompt_ms"]["count"] == 0  # NaN is no time
    assert isinstance(merged["metrics"], dict | str)
    if isinstance(merged["metrics"], dict):
        assert "kv_cache_usage" not in merged["metrics"] and "prompt_tokens" not in merged["metrics"]
    for line in history().splitlines():
        strict_json(line)
    assert "NaN" not in out and "Infinity" not in out and "NaN" not in history()


def test_export_and_history_refuse_to_write_nan(tmp_path: Path) -> None:
    report = {"modes": {"merged": {"ttft_ms": {"median": float("nan"), "p90": float("inf")}}}, "x": [float("-inf")]}
    report_mod.save_history(report)
    report_mod.export_report(report, tmp_path / "r.json")
    for text in (history(), (tmp_path / "r.json").read_text()):
        data = strict_json(text)
        assert data["modes"]["merged"]["ttft_ms"] == {"median": None, "p90": None} and data["x"] == [None]


# -- framing rules of the transport (RFC 9112) -------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12", (200, 12, False, True)),
        (b"HTTP/1.1 200\r\nTransfer-Encoding: chunked", (200, None, True, True)),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5", (200, None, True, False)),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked", (200, None, True, True)),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip", (200, None, False, False)),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 7, 7", (200, 7, False, True)),
        (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1", (200, 1, False, False)),
        (b"HTTP/1.0 200 OK", (200, None, False, False)),
        (b"HTTP/1.1 204 No Content", (204, 0, False, False)),
    ],
)
def test_response_heads_are_framed_as_rfc_9112_says(head: bytes, expected: tuple[Any, ...]) -> None:
    from kvswitch.probe.transport import _head

    status, _, length, chunked, keep = _head(head)
    assert (status, length, chunked, keep) == expected


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b"HTTP/2 200 OK", "not an HTTP response"),
        (b"HTTP/1.1 2000 OK", "not an HTTP response"),
        (b"ICY 200 OK", "not an HTTP response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length : 5", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nno colon here", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6", "more than one Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: +5", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0x10", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999", "bad Content-Length"),
    ],
)
def test_malformed_heads_are_refused_with_a_reason(head: bytes, why: str) -> None:
    from kvswitch.probe.transport import _head

    with pytest.raises(ValueError, match=why):
        _head(head)
