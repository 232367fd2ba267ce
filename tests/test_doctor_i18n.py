"""``kvswitch doctor`` speaks Chinese and English and prints one JSON envelope: under
``KVSWITCH_LANG=zh-CN`` (or a Chinese locale) its checks, findings and fixes are Chinese while
check names, statuses, codes, options and field names stay as they are; ``--format json`` is the
envelope (``command: doctor``) with the report in ``data``; no text cites internal numbering."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvswitch.doctor import CHECKS
from kvswitch.testing.sse_server import SSEServer

ROOT = Path(__file__).resolve().parent.parent
CJK = re.compile(r"[\u4e00-\u9fff]")
INTERNAL = re.compile(r"\bS-\d{2}\b|\bD-\d{1,2}\b|§|the article|DIGEST", re.IGNORECASE)
OFFLINE = ("--skip", "nvidia-smi", "--skip", "same-gpu", "--skip", "prefix-cache", "--timeout", "2")

DOCTOR_DATA: dict[str, Any] = {
    "type": "object",
    "required": ["target", "checks", "counts"],
    "additionalProperties": False,
    "properties": {
        "target": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": [
                        "label",
                        "profile",
                        "base_url",
                        "model",
                        "mode",
                        "url_convention",
                        "prefill",
                        "decode",
                        "key",
                    ],
                    "additionalProperties": False,
                    "properties": {
                        "label": {"type": "string"},
                        "profile": {"type": ["string", "null"]},
                        "base_url": {"type": "string"},
                        "model": {"type": "string"},
                        "mode": {"enum": ["merged", "split"]},
                        "url_convention": {"enum": ["append-v1", "includes-v1", None]},
                        "prefill": {"type": ["string", "null"]},
                        "decode": {"type": ["string", "null"]},
                        "key": {"type": ["string", "null"]},
                    },
                },
            ],
        },
        "checks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "status", "saw", "fix", "source"],
                "additionalProperties": False,
                "properties": {
                    "name": {"enum": list(CHECKS)},
                    "status": {"enum": ["pass", "warn", "fail", "skip"]},
                    "saw": {"type": "string"},
                    "fix": {"type": "string"},
                    "source": {"type": "string", "pattern": r"^(docs/background\.md#[a-z-]+)?$"},
                },
            },
        },
        "counts": {
            "type": "object",
            "required": ["pass", "warn", "fail", "skip"],
            "additionalProperties": False,
            "properties": {s: {"type": "integer", "minimum": 0} for s in ("pass", "warn", "fail", "skip")},
        },
    },
}
"""The shape of ``data`` in ``kvswitch doctor --format json`` (sent to the output schema's owner)."""


def envelope_schema() -> dict[str, Any]:
    """The output schema's envelope: the committed file without its per-command rules."""
    schema = json.loads((ROOT / "schemas" / "kvswitch-output.schema.json").read_text(encoding="utf-8"))
    schema.pop("allOf", None)
    return dict(schema)


def validate(document: dict[str, Any], command: str, data_schema: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.validate(document, envelope_schema(), format_checker=jsonschema.FormatChecker())
    assert document["command"] == command
    jsonschema.validate(document["data"], data_schema)


def kvswitch(*args: str, lang: str | None = "zh-CN", locale: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in {"KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}
    }
    if lang:
        env["KVSWITCH_LANG"] = lang
    if locale:
        env["LANG"] = locale
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as srv:
        yield srv


def test_doctor_text_in_chinese_keeps_names_codes_and_options(server: SSEServer) -> None:
    done = kvswitch("doctor", "--base-url", server.url + "/", "--model", "test-model", *OFFLINE)
    assert done.returncode == 1, done  # the trailing slash: auth fails
    out = done.stdout
    assert CJK.search(out)
    assert "kvswitch doctor · --base-url · 模式 merged" in out and "无密钥" in out
    assert re.search(r"^通过  reachable ", out, re.MULTILINE)
    assert re.search(r"^失败  auth ", out, re.MULTILINE)
    assert "基础 URL 以 '/' 结尾" in out and "KVS201" in out  # the finding in Chinese, the code as it is
    assert f"--base-url {server.url}" in out  # the fix's command, untranslated
    assert "修复：" in out and "详见：docs/background.md#known-errors" in out
    assert re.search(r"\d+ 项失败", out)
    assert not INTERNAL.search(out)


def test_doctor_json_in_chinese_is_the_envelope_with_english_fields(server: SSEServer) -> None:
    done = kvswitch("doctor", "--base-url", server.url, "--model", "test-model", "--format", "json", *OFFLINE)
    assert done.returncode == 0, done
    document = json.loads(done.stdout)
    validate(document, "doctor", DOCTOR_DATA)
    assert document["ok"] is True
    data = document["data"]
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["reachable"]["status"] == "pass" and CJK.search(checks["reachable"]["saw"])
    assert checks["config"]["status"] == "skip" and "--base-url" in checks["config"]["saw"]
    assert data["counts"]["fail"] == 0 and data["counts"]["pass"] >= 3
    assert data["target"]["mode"] == "merged"  # a value, not translated
    assert not INTERNAL.search(done.stdout)


def test_a_chinese_locale_is_enough(server: SSEServer) -> None:
    done = kvswitch(
        "doctor", "--base-url", server.url, "--model", "test-model", *OFFLINE, lang=None, locale="zh_CN.UTF-8"
    )
    assert done.returncode == 0, done
    assert "通过  auth" in done.stdout


def test_doctor_json_in_english_fails_with_ok_false(capsys: pytest.CaptureFixture[str]) -> None:
    from kvswitch.cli import main

    assert main(["doctor", "--format", "json", *OFFLINE]) == 1  # not set up
    document = json.loads(capsys.readouterr().out)
    validate(document, "doctor", DOCTOR_DATA)
    assert document["ok"] is False and document["data"]["target"] is None
    assert document["data"]["checks"][0]["status"] == "fail" and "kvswitch init" in document["data"]["checks"][0]["fix"]


def test_doctor_help_in_chinese_names_the_proxy_variables_and_every_check() -> None:
    done = kvswitch("doctor", "--help")
    assert done.returncode == 0
    assert CJK.search(done.stdout) and "HTTPS_PROXY" in done.stdout
    flat = " ".join(done.stdout.split())
    assert all(name in flat for name in CHECKS)  # --skip's help lists every check
    assert not INTERNAL.search(done.stdout)


def test_no_check_text_cites_internal_numbering(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Every English finding of a run that fails and warns stands alone (the library's texts)."""
    from kvswitch.doctor import DoctorSettings, run_doctor

    report = run_doctor(
        DoctorSettings(
            base_url=server.url + "/", model="nope", mode="split", skip=frozenset({"nvidia-smi", "same-gpu"}), timeout=2
        )
    )
    text = json.dumps(report.as_dict())
    assert report.exit_code == 1
    assert not INTERNAL.search(text), INTERNAL.findall(text)
