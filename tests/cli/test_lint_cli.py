"""``kvswitch lint``: reports, exit codes 0/1/2, --fix, --kind, --hook (D-6, D-12)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvswitch.cli import main
from tests.conftest import FIXTURES


def _settings(tmp_path: Path, body: str) -> Path:
    path = tmp_path / ".vscode" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


BAD = """{
    "cline.openAiBaseUrl": "https://taotoken.net/api/",
    "cline.openAiModelId": "gpt-4o-mini",
    "cline.cacheStrategy": {
        "mode": "both",
        "chunkSize": 500
    }
}
"""


def test_clean_files_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cline = shutil.copy(FIXTURES / "cline" / "article.json", tmp_path / "settings.json")
    assert main(["lint", str(cline)]) == 0
    assert "no problems in 1 file" in capsys.readouterr().out


def test_errors_exit_1_with_path_line_col(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _settings(tmp_path, BAD)
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{path}:2:28: KVS201 warning: base URL ends with '/'" in out[0]
    assert out[1].startswith(
        f"{path}:5:17: KVS002 error: cline.cacheStrategy.mode: Input should be 'merged' or 'split' (got 'both')"
    )
    assert out[2].startswith(f"{path}:6:22: KVS101 warning: chunk_size 500 is not a multiple of 64; it becomes 512")
    assert out[-1] == "1 error, 2 warnings in 1 file (2 fixable with --fix)"


def test_warnings_only_exit_0(tmp_path: Path) -> None:
    path = _settings(tmp_path, BAD.replace('"both"', '"merged"'))
    assert main(["lint", str(path)]) == 0


def test_json_report_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _settings(tmp_path, BAD)
    assert main(["lint", "--format", "json", str(path)]) == 1
    items = json.loads(capsys.readouterr().out)
    assert [i["code"] for i in items] == ["KVS201", "KVS002", "KVS101"]
    for item in items:
        assert {"path", "line", "column", "code", "severity", "message"} <= set(item)
        assert item["path"] == str(path)
    assert items[2] | {"message": ""} == {
        "path": str(path),
        "line": 6,
        "column": 22,
        "code": "KVS101",
        "severity": "warning",
        "message": "",
        "key": "cline.cacheStrategy.chunkSize",
        "fixable": True,
        "fixed": False,
    }


def test_parse_error_is_a_finding_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _settings(tmp_path, '{\n  "cline.openAiModelId": "x"\n  "a": 1\n}\n')
    assert main(["lint", str(path)]) == 1
    assert f"{path}:3:3: KVS001 error: expected ',' or '}}'" in capsys.readouterr().out


def test_fix_rewrites_then_exit_1_and_second_run_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _settings(tmp_path, BAD.replace('"both"', '"merged"'))
    assert main(["lint", "--fix", str(path)]) == 1
    text = path.read_text()
    assert '"chunkSize": 512' in text and '"https://taotoken.net/api",' in text
    assert text == BAD.replace('"both"', '"merged"').replace("500", "512").replace("api/", "api")
    out = capsys.readouterr().out
    assert "[fixed]" in out
    assert main(["lint", "--fix", str(path)]) == 0


def test_kind_override_and_detection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = tmp_path / "client.conf"
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", odd)
    assert main(["lint", str(odd)]) == 0  # detected by content: [provider] and [cache]
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello\n")
    assert main(["lint", str(unknown)]) == 2
    assert "cannot tell which kind of file" in capsys.readouterr().err
    assert main(["lint", "--kind", "ccswitch", str(unknown)]) == 1  # KVS001: not TOML


def test_unreadable_and_missing_paths_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(tmp_path / "nope" / "settings.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["lint", str(tmp_path)]) == 2


def test_several_files_exit_with_the_worst(tmp_path: Path) -> None:
    good = shutil.copy(FIXTURES / "cline" / "article.json", tmp_path / "settings.json")
    bad = _settings(tmp_path, BAD)
    assert main(["lint", str(good), str(bad)]) == 1
    assert main(["lint", str(good), str(bad), str(tmp_path / "missing.toml")]) == 2


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint"]) == 2
    assert main(["lint", "--format", "xml", "x"]) == 2
    assert main(["frobnicate"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_hook_mode_skips_unknown_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "random.toml"
    other.write_text("[tool.black]\nline-length = 100\n")
    assert main(["lint", "--hook", str(other)]) == 0
    assert "skipped" in capsys.readouterr().err


def test_hook_fix_never_writes_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    outside = _settings(tmp_path / "elsewhere", BAD.replace('"both"', '"merged"'))
    link = repo / ".vscode"
    link.mkdir()
    (link / "settings.json").symlink_to(outside)
    monkeypatch.chdir(repo)
    before = outside.read_bytes()
    assert main(["lint", "--hook", "--fix", ".vscode/settings.json"]) == 0  # warnings only, nothing written
    assert outside.read_bytes() == before


def test_python_dash_m_and_help(tmp_path: Path) -> None:
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-m", "kvswitch", "lint", "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "--fix" in out.stdout
    out = subprocess.run([sys.executable, "-m", "kvswitch", "--version"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.startswith("kvswitch ")


def test_json5_syntax_gets_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _settings(tmp_path, "{\n  'cline.openAiModelId': 'gpt-4o-mini',\n}\n")
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2:3: KVS001 error:" in out
    assert "valid JSON5, but VS Code's settings.json takes JSONC only" in out
