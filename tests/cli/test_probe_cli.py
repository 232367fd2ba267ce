"""``kvswitch probe`` from the command line, against the deterministic test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvswitch.cli import main
from kvswitch.testing.sse_server import SSEServer


@pytest.fixture
def server() -> SSEServer:
    with SSEServer(ttft_ms=40, split_ttft_ms=70, itl_ms=2, tokens=4) as srv:
        yield srv


def test_text_report_compares_the_modes(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "probe",
            "--base-url",
            server.url,
            "--model",
            "test-model",
            "--runs",
            "6",
            "--warmup",
            "1",
            "--max-tokens",
            "4",
            "--no-gpu",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "merged      6/6" in out and "split       6/6" in out
    import re

    ratio = re.search(r"TTFT median split/merged: (\d+\.\d\d) ", out)
    assert ratio is not None and 1.4 <= float(ratio.group(1)) <= 2.1, out  # 70 ms / 40 ms, give or take load
    assert "merged is faster to first token" in out
    assert "routing unverified" in out and "first streamed delta that carries a token" in out


def test_json_report_and_history(server: SSEServer, capsys: pytest.CaptureFixture[str], sandbox: Path) -> None:
    import os

    code = main(
        [
            "probe",
            "--base-url",
            server.url,
            "--model",
            "test-model",
            "--mode",
            "merged",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--format",
            "json",
            "--no-gpu",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["command"], printed["ok"]) == ("probe", True)
    report = printed["data"]
    assert list(report["modes"]) == ["merged"]
    assert report["modes"]["merged"]["ttft_ms"]["count"] == 3
    history = Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl"
    assert history.stat().st_mode & 0o777 == 0o600
    assert json.loads(history.read_text().splitlines()[-1])["settings"]["runs"] == 3


def test_failed_requests_exit_1_with_their_cause(capsys: pytest.CaptureFixture[str]) -> None:
    with SSEServer(ttft_ms=10, tokens=2, scenario="http-429") as srv:
        code = main(
            [
                "probe",
                "--base-url",
                srv.url,
                "--model",
                "test-model",
                "--mode",
                "merged",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--no-gpu",
                "--no-history",
            ]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "2 failed: HTTP 429: test failure 429" in out and "merged      0/2" in out


def test_a_remote_host_needs_yes_without_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code = main(
        [
            "probe",
            "--base-url",
            "http://192.0.2.10:8000/v1",
            "--model",
            "m",
            "--runs",
            "50",
            "--prompt-tokens",
            "1000",
            "--no-gpu",
        ]
    )
    assert code == 1
    assert "--yes" in capsys.readouterr().err  # nothing was sent: the guard comes first


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert main(["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--runs", "0"]) == 2
    assert main(["probe", "--endpoint", "nonsense", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 2
    capsys.readouterr()
    # a profile and a bare address at once: refused, not one of them silently ignored
    assert main(["probe", "--profile", "p", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 2
    assert "give --profile or --base-url, not both" in capsys.readouterr().err


def test_the_key_of_the_profile_goes_only_to_the_profile(
    server: SSEServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-probe-0123456789abcdefXYZ"
    monkeypatch.setenv("PROBE_KEY", key)
    server.api_key = key
    assert (
        main(
            [
                "init",
                "--base-url",
                server.url,
                "--model",
                "test-model",
                "--key-env",
                "PROBE_KEY",
                "--no-cline",
                "--no-ccswitch",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["probe", "--mode", "merged", "--runs", "2", "--warmup", "0", "--no-gpu", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert key not in out and json.loads(out)["data"]["settings"]["key"] == "set"
