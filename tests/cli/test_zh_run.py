"""The running commands in Simplified Chinese: ``engine-flags``, ``client detect``, ``gateway
status`` and ``lab status`` (nothing running) and the probe's side-by-side table speak Chinese,
while command lines, codes, modes, numbers, units and JSON field names stay as they are."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from kvswitch.testing.sse_server import SSEServer
from tests.clientenv import cli, init

CJK = re.compile(r"[\u4e00-\u9fff]")
LANG_VARS = ("KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def kvswitch(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m kvswitch ARGS`` in this test's sandbox, in the language ``env`` chooses."""
    base = {k: v for k, v in os.environ.items() if k not in LANG_VARS}
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=120,
        check=False,
    )


def zh(*args: str) -> subprocess.CompletedProcess[str]:
    return kvswitch(*args, KVSWITCH_LANG="zh-CN")


def commands(text: str) -> list[str]:
    """The shell command blocks of ``engine-flags``' text (what a user copies)."""
    return [block.split("\n", 1)[1] for block in text.split("\n\n") if block.startswith("# ")]


@pytest.mark.parametrize(
    "argv",
    [
        ("--engine", "vllm"),
        ("--engine", "sglang", "--mode", "split"),
        ("--engine", "vllm", "--mode", "split", "--router", "sglang", "--router-mode", "regular"),
    ],
)
def test_engine_flags_in_chinese_keeps_the_command_lines(argv: tuple[str, ...]) -> None:
    init(preset="vllm", model="Qwen/Qwen2.5-7B-Instruct", profile="lab")
    english, chinese = kvswitch("engine-flags", *argv, KVSWITCH_LANG="en"), zh("engine-flags", *argv)
    assert english.returncode == chinese.returncode == 0, chinese.stderr
    assert CJK.search(chinese.stdout) and "注意事项：" in chinese.stdout and "配置方案 lab" in chinese.stdout
    assert not CJK.search(english.stdout)
    assert commands(chinese.stdout) == commands(english.stdout) and commands(english.stdout)
    doc = json.loads(zh("engine-flags", *argv, "--format", "json").stdout)
    assert doc["command"] == "engine-flags" and set(doc["data"]) >= {"engine", "mode", "commands", "caveats"}
    assert {c["level"] for c in doc["data"]["caveats"]} <= {"refused", "warning", "note"}


def test_client_detect_in_chinese() -> None:
    done = zh("client", "detect")
    assert done.returncode == 0, done.stderr
    assert "没有找到客户端" in done.stdout and "Claude Code" in done.stdout
    doc = json.loads(zh("client", "detect", "--format", "json").stdout)
    assert doc["command"] == "client detect" and {"kind", "found", "registered"} <= set(doc["data"]["clients"][0])


def test_gateway_status_in_chinese_when_none_runs() -> None:
    done = zh("gateway", "status")
    assert done.returncode == 1
    assert CJK.search(done.stdout) and "kvswitch gateway --detach" in done.stdout
    doc = json.loads(zh("gateway", "status", "--format", "json").stdout)
    assert (doc["command"], doc["ok"], doc["data"]) == ("gateway status", False, {"running": False, "pinned": []})


def test_lab_status_in_chinese_when_nothing_runs_from_the_locale_too() -> None:
    done = zh("lab", "status")
    assert done.returncode == 1
    assert "实验环境" in done.stdout and "kvswitch lab up" in done.stdout
    by_locale = kvswitch("lab", "status", LANG="zh_CN.UTF-8")  # no KVSWITCH_LANG: the locale decides
    assert by_locale.stdout == done.stdout
    assert not CJK.search(kvswitch("lab", "status", LANG="en_US.UTF-8").stdout)


def test_help_of_the_running_commands_in_chinese() -> None:
    for command in (
        ("probe",),
        ("engine-flags",),
        ("lab", "up"),
        ("gateway", "status"),
        ("client", "detect"),
        ("import",),
        ("schema",),
    ):
        done = zh(*command, "--help")
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith(f"用法：kvswitch {' '.join(command)}"), command
        assert len(CJK.findall(done.stdout)) > 20, (command, done.stdout)
        assert "--format" in done.stdout or command == ("schema",)


def test_the_probe_table_in_chinese_keeps_modes_numbers_and_units() -> None:
    with SSEServer(ttft_ms=5, split_ttft_ms=10, itl_ms=1, tokens=2) as srv:
        text = cli(
            "--lang",
            "zh-CN",
            "probe",
            "--base-url",
            srv.url,
            "--model",
            "test-model",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--max-tokens",
            "2",
            "--no-gpu",
            "--no-history",
        )
        assert text.rc == 0, text.err
        js = cli(
            "--lang",
            "zh-CN",
            "probe",
            "--base-url",
            srv.url,
            "--model",
            "test-model",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--max-tokens",
            "2",
            "--no-gpu",
            "--no-history",
            "--format",
            "json",
        )
    lines = text.out.splitlines()
    heading = next(line for line in lines if line.startswith("模式"))
    assert "成功/总数" in heading and "TTFT 中位" in heading and "p90" in heading and "ITL p99" in heading
    merged = next(line for line in lines if line.startswith("merged "))
    assert "2/2" in merged and " ms" in merged
    assert any(line.startswith("TTFT 中位数 split/merged：") for line in lines)
    assert "每种模式 2 轮" in lines[0]
    doc: dict[str, Any] = json.loads(js.out)
    report = doc["data"]
    assert set(report["modes"]) == {"merged", "split"} and report["settings"]["key"] == "none"
    assert all(CJK.search(note) for note in report["notes"])  # messages translated, fields not
    assert report["modes"]["merged"]["routed_by"].startswith("X-Cache-Mode 请求头")


def test_the_cli_reference_is_english_unless_asked_whatever_the_locale() -> None:
    from kvswitch.cli.reference import cli_reference
    from kvswitch.i18n import language

    chinese = cli_reference("zh-CN")
    assert "| 选项 | 取值 | 默认值 | 说明 |" in chinese and "测量 TTFT、ITL 和 GPU 显存" in chinese
    assert "`--format`" in chinese and "### `kvswitch probe`" in chinese  # options and commands as they are
    assert language() == "en"  # the language in use is put back
    env = {**{k: v for k, v in os.environ.items() if k not in LANG_VARS}, "LANG": "zh_CN.UTF-8"}
    english = subprocess.run(
        [sys.executable, "-m", "kvswitch.cli.reference"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert english.returncode == 0 and english.stdout == cli_reference() and not CJK.search(english.stdout)
