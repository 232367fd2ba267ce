"""``kvswitch lint --format github|sarif`` and ``lint --fix --diff``; the reports in Chinese keep
codes and machine fields English."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvswitch.cli.reporters import github_report, sarif_report
from kvswitch.diagnostics import Diagnostic, Severity
from tests.clientenv import cli

CJK = re.compile(r"[\u4e00-\u9fff]")
KEY = "sk-LINTDIFF-0123456789abcdefXYZ"
BAD = """{
    "cline.openAiBaseUrl": "https://taotoken.net/api/",
    "cline.openAiModelId": "gpt-4o-mini",
    "cline.openAiApiKey": "KEY",
    "cline.cacheStrategy": {
        "mode": "both",
        "chunkSize": 500
    }
}
""".replace("KEY", KEY)


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "project" / "settings.json"
    path.parent.mkdir()
    path.write_text(BAD)
    return path


def zh(*argv: str) -> subprocess.CompletedProcess[str]:
    """``kvswitch ARGV`` in a subprocess, in Chinese."""
    env = {**os.environ, "KVSWITCH_LANG": "zh-CN"}
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *argv], env=env, capture_output=True, text=True, check=False
    )


# -- GitHub Actions ---------------------------------------------------------------------------


def test_github_format_is_one_workflow_command_per_finding(bad: Path) -> None:
    result = cli("lint", "--format", "github", "--kind", "article-cline", str(bad))
    assert result.rc == 1
    lines = result.out.splitlines()
    assert lines[0] == (
        f"::warning file={bad},line=2,col=28,title=KVS201::base URL ends with '/': clients join it "
        "into '//' and authentication breaks; it becomes 'https://taotoken.net/api'"
    )
    assert lines[1].startswith(f"::error file={bad},line=6,col=17,title=KVS002::cline.cacheStrategy.mode: ")
    assert lines[2].startswith(f"::warning file={bad},line=7,col=22,title=KVS101::chunk_size 500")
    assert len(lines) == 3  # no summary line: only annotations


def test_github_escaping_follows_the_workflow_command_rules() -> None:
    d = Diagnostic("KVS002", Severity.INFO, "100% sure\r\nsecond: line, yes", Path("dir,a/b:c.json"), 3, 4)
    assert github_report([d]) == (
        "::notice file=dir%2Ca/b%3Ac.json,line=3,col=4,title=KVS002::100%25 sure%0D%0Asecond: line, yes"
    )
    assert github_report([Diagnostic("KVS001", Severity.ERROR, "no place")]) == "::error title=KVS001::no place"


# -- SARIF ------------------------------------------------------------------------------------


def check_sarif(log: dict[str, Any]) -> None:
    """The fields SARIF 2.1.0 requires (no schema is available offline), and their types."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kvswitch" and isinstance(driver["version"], str)
    rule_ids = [r["id"] for r in driver["rules"]]
    assert rule_ids == sorted(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert rule["helpUri"].endswith("#" + rule["id"].lower())
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        for location in result.get("locations", []):
            physical = location["physicalLocation"]
            assert isinstance(physical["artifactLocation"]["uri"], str)
            region = physical["region"]
            assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1


def test_sarif_format_has_one_run_rules_for_the_codes_and_located_results(bad: Path) -> None:
    result = cli("lint", "--format", "sarif", "--kind", "article-cline", str(bad))
    assert result.rc == 1
    log = json.loads(result.out)
    check_sarif(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["KVS002", "KVS101", "KVS201"]
    first = next(r for r in run["results"] if r["ruleId"] == "KVS002")
    assert first["level"] == "error"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": bad.as_uri()},
        "region": {"startLine": 6, "startColumn": 17},
    }
    assert KEY not in result.out


def test_sarif_of_a_clean_file_has_no_results_and_relative_paths_stay_relative() -> None:
    assert sarif_report([])["runs"][0]["results"] == []
    log = sarif_report([Diagnostic("KVS201", Severity.WARNING, "m", Path("a dir/s.json"), 1, 2)])
    check_sarif(log)
    assert (
        log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a%20dir/s.json"
    )


def test_github_and_sarif_in_chinese_keep_codes_levels_and_fields(bad: Path) -> None:
    github = zh("lint", "--format", "github", "--kind", "article-cline", str(bad))
    assert github.returncode == 1
    first = github.stdout.splitlines()[0]
    assert first.startswith(f"::warning file={bad},line=2,col=28,title=KVS201::") and CJK.search(first)
    sarif = zh("lint", "--format", "sarif", "--kind", "article-cline", str(bad))
    log = json.loads(sarif.stdout)
    check_sarif(log)
    messages = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert all(CJK.search(m) for m in messages)
    assert {r["level"] for r in log["runs"][0]["results"]} == {"error", "warning"}


# -- --fix --diff -----------------------------------------------------------------------------


def test_fix_diff_shows_the_change_and_writes_nothing(bad: Path) -> None:
    before = bad.read_bytes(), bad.stat().st_mtime_ns
    result = cli("lint", "--fix", "--diff", "--kind", "article-cline", str(bad))
    assert result.rc == 1  # there would be changes
    assert (bad.read_bytes(), bad.stat().st_mtime_ns) == before
    assert f"--- {bad} (now)\n+++ {bad} (after)\n" in result.out
    assert '-    "cline.openAiBaseUrl": "https://taotoken.net/api/",\n' in result.out
    assert '+    "cline.openAiBaseUrl": "https://taotoken.net/api",\n' in result.out
    assert '-        "chunkSize": 500\n+        "chunkSize": 512\n' in result.out
    assert KEY not in result.out + result.err and KEY[-4:] in result.out  # the key's line is masked context
    assert "would fix 2 findings in 1 file" in result.err
    assert [p.name for p in bad.parent.iterdir()] == ["settings.json"]  # no temp file, no backup
    assert not Path(os.environ["KVSWITCH_HOME"]).exists()  # no state, no backups


def test_fix_diff_of_a_file_with_nothing_to_fix_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"cline.openAiBaseUrl": "https://taotoken.net/api", "cline.openAiModelId": "m"}\n')
    result = cli("lint", "--fix", "--diff", "--kind", "article-cline", str(path))
    assert result.rc == 0, result
    assert result.out == "" and "nothing to fix" in result.err


def test_fix_diff_with_errors_left_still_exits_1_and_a_missing_file_2(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"cline.cacheStrategy": {"mode": "both"}}\n')  # an error, nothing fixable
    assert cli("lint", "--fix", "--diff", "--kind", "article-cline", str(path)).rc == 1
    assert cli("lint", "--fix", "--diff", str(tmp_path / "missing.json")).rc == 2


@pytest.mark.parametrize("argv", [["--diff"], ["--fix", "--diff", "--format", "json"]])
def test_diff_needs_fix_and_the_text_format(bad: Path, argv: list[str]) -> None:
    before = bad.read_bytes()
    result = cli("lint", *argv, str(bad))
    assert result.rc == 2
    assert result.err.startswith("usage: kvswitch lint ")
    assert bad.read_bytes() == before


# -- text in Chinese --------------------------------------------------------------------------


def test_text_report_in_chinese_translates_severities_and_summary_not_codes(bad: Path) -> None:
    out = zh("lint", "--kind", "article-cline", str(bad))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{bad}:2:28: KVS201 警告：") and lines[0].endswith("[可自动修复]")
    assert lines[1].startswith(f"{bad}:6:17: KVS002 错误：")
    assert lines[-1] == "1 个文件中：1 个错误，2 个警告（其中 2 个可用 --fix 自动修复）"
    diff = zh("lint", "--fix", "--diff", "--kind", "article-cline", str(bad))
    assert diff.returncode == 1 and "将在 1 个文件中修复 2 个问题" in diff.stderr
