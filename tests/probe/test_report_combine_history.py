"""``kvswitch probe --combine`` (issue 10, point 11): the combined report goes into the history,
so ``kvswitch advise --from-probe latest`` after the quickstart's flow (probe merged → probe
split → combine) finds the split/merged comparison; files that are not probe reports are a
usage error (exit 2) that names the file, never a crash."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.cli import main
from kvswitch.testing.sse_server import SSEServer


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=15, split_ttft_ms=60, itl_ms=1, tokens=2) as srv:
        yield srv


def history_lines() -> list[str]:
    path = Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def test_a_combined_report_is_what_advise_finds_latest(
    server: SSEServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for mode in ("merged", "split"):
        assert (
            main(
                [
                    "probe",
                    "--base-url",
                    server.url,
                    "--model",
                    "test-model",
                    "--mode",
                    mode,
                    "--runs",
                    "5",
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
        path = tmp_path / f"{mode}.json"
        path.write_text(capsys.readouterr().out)
        files.append(str(path))
    assert main(["probe", "--combine", *files]) == 0
    assert "TTFT median split/merged" in capsys.readouterr().out
    latest = json.loads(history_lines()[-1])
    assert set(latest["modes"]) == {"merged", "split"} and "ttft_median_ratio" in latest["comparison"]
    assert main(["advise", "--from-probe", "latest", "--format", "json"]) == 0
    advice = json.loads(capsys.readouterr().out)["data"]
    assert advice["decided_by"] == "measurement" and advice["mode"] == "merged", advice


def test_combine_with_no_history_leaves_the_history_alone(
    server: SSEServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "probe",
                "--base-url",
                server.url,
                "--model",
                "test-model",
                "--mode",
                "merged",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--max-tokens",
                "2",
                "--no-gpu",
                "--format",
                "json",
                "--no-history",
            ]
        )
        == 0
    )
    path = tmp_path / "merged.json"
    path.write_text(capsys.readouterr().out)
    assert main(["probe", "--combine", str(path), "--no-history"]) == 0
    assert history_lines() == []


@pytest.mark.parametrize(
    "content",
    [
        "",
        "[1, 2]",
        '{"modes": 3}',
        '{"modes": {"merged": {}}, "settings": {}}',
        '{"modes": {"merged": {"ttft_samples_ms": ["x"]}}, "settings": {}}',
        "not json",
        '{"modes": {"merged": {"ttft_samples_ms": [1, NaN]}}}',
    ],
)
def test_a_file_that_is_not_a_probe_report_is_a_usage_error(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["probe", "--combine", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err or "report 1" in err, err
    assert history_lines() == []


def test_combine_of_a_directory_or_a_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", "--combine", str(tmp_path)]) == 2
    assert main(["probe", "--combine", str(tmp_path / "missing.json")]) == 2
    assert str(tmp_path) in capsys.readouterr().err


def test_combined_text_of_a_sparse_report_does_not_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sparse.json"
    path.write_text(
        json.dumps(
            {
                "settings": {},
                "modes": {"merged": {"ttft_samples_ms": [1.0, 2.0]}, "split": {"ttft_samples_ms": [2.0, 4.0]}},
            }
        )
    )
    assert main(["probe", "--combine", str(path), "--no-history"]) == 0
    assert "merged" in capsys.readouterr().out
