"""The running commands' ``--format json``: kvswitch's one envelope around each command's data
(``probe``, ``engine-flags``, ``lab status``, ``lab up``, ``gateway status``, ``client detect``,
``import``), ``ok`` false exactly where the command exits nonzero, and every time inside as ISO
8601 in UTC."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kvswitch.testing.sse_server import SSEServer
from tests import ccswitch_db as ccs
from tests.clientenv import cli, init
from tests.conftest import ROOT

OUTPUT_SCHEMA = ROOT / "schemas" / "kvswitch-output.schema.json"
ENVELOPE = {
    "type": "object",
    "required": ["kvswitch", "format", "command", "ok", "generated_at", "data"],
    "additionalProperties": False,
    "properties": {
        "kvswitch": {"type": "string", "minLength": 1},
        "format": {"const": 1},
        "command": {"type": "string"},
        "ok": {"type": "boolean"},
        "generated_at": {"type": "string", "pattern": r"Z$"},
        "data": {},
    },
}
"""The envelope as kvswitch/cli/envelope.py writes it (the output schema checks the data too)."""


def utc(text: Any) -> datetime:
    """An ISO 8601 time in UTC (``…Z``), parsed."""
    assert isinstance(text, str) and text.endswith("Z"), text
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() == timedelta(0), text
    return moment


def envelope(out: str, command: str, *, ok: bool) -> Any:
    """The data of one ``--format json`` output, after checking the envelope around it."""
    doc = json.loads(out)
    jsonschema.validate(doc, ENVELOPE)
    if OUTPUT_SCHEMA.exists():  # the one schema of every command's output
        jsonschema.validate(doc, json.loads(OUTPUT_SCHEMA.read_text(encoding="utf-8")))
    assert (doc["command"], doc["ok"]) == (command, ok), (doc["command"], doc["ok"])
    utc(doc["generated_at"])
    return doc["data"]


def history() -> list[dict[str, Any]]:
    path = Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def server() -> Any:
    with SSEServer(ttft_ms=5, split_ttft_ms=10, itl_ms=1, tokens=2) as srv:
        yield srv


# -- probe ------------------------------------------------------------------------------------------


def test_probe_prints_its_report_in_the_envelope_and_keeps_a_bare_line(server: SSEServer) -> None:
    r = cli(
        "probe",
        "--base-url",
        server.url,
        "--model",
        "test-model",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--max-tokens",
        "2",
        "--no-gpu",
        "--format",
        "json",
    )
    assert r.rc == 0, r.err
    report = envelope(r.out, "probe", ok=True)
    assert set(report["modes"]) == {"merged", "split"} and report["kvswitch_probe"] == 2
    utc(report["time"])
    assert report["routing_verified"] is False  # both modes went to one URL
    (line,) = history()
    assert "data" not in line and line["time"] == report["time"]  # the history holds the report alone


def test_a_probe_with_failures_is_not_ok() -> None:
    with SSEServer(ttft_ms=5, tokens=2, scenario="http-429") as srv:
        r = cli(
            "probe",
            "--base-url",
            srv.url,
            "--model",
            "test-model",
            "--mode",
            "merged",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-gpu",
            "--no-history",
            "--format",
            "json",
        )
    assert r.rc == 1
    report = envelope(r.out, "probe", ok=False)
    assert report["modes"]["merged"]["failures"] == 1


def test_combine_reads_an_envelope_and_an_older_bare_report(server: SSEServer, tmp_path: Path) -> None:
    r = cli(
        "probe",
        "--base-url",
        server.url,
        "--model",
        "test-model",
        "--mode",
        "split",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--max-tokens",
        "2",
        "--no-gpu",
        "--no-history",
        "--format",
        "json",
    )
    assert r.rc == 0, r.err
    (tmp_path / "split.json").write_text(r.out, encoding="utf-8")
    old = {  # as kvswitch wrote it before the envelope: a bare report, local time with an offset
        "kvswitch_probe": 1,
        "time": "2026-01-02T03:04:05+0100",
        "settings": {"base_url": server.url, "model": "test-model", "modes": ["merged"], "runs": 3},
        "modes": {
            "merged": {"requests": 3, "failures": 0, "ttft_ms": {"median": 5.0}, "ttft_samples_ms": [5.0, 5.5, 6.0]}
        },
        "comparison": {},
        "notes": [],
    }
    (tmp_path / "merged.json").write_text(json.dumps(old), encoding="utf-8")
    r = cli("probe", "--combine", str(tmp_path / "merged.json"), str(tmp_path / "split.json"), "--format", "json")
    assert r.rc == 0, r.err
    report = envelope(r.out, "probe", ok=True)
    first, second = report["settings"]["combined_from"]
    assert first == "2026-01-02T02:04:05Z" and utc(second) > utc(first)
    assert set(report["modes"]) == {"merged", "split"} and "ttft_median_ratio" in report["comparison"]
    assert history()[-1]["settings"]["combined_from"] == [first, second]


# -- engine-flags ----------------------------------------------------------------------------------------


def test_engine_flags_json_and_a_refusal_that_is_not_ok() -> None:
    init(preset="vllm", model="Qwen/Qwen2.5-7B-Instruct", profile="lab")
    r = cli("engine-flags", "--engine", "sglang", "--mode", "split", "--format", "json")
    assert r.rc == 0, r.err
    data = envelope(r.out, "engine-flags", ok=True)
    assert (data["engine"], data["mode"], data["ok"]) == ("sglang", "split", True)
    assert [c["role"] for c in data["commands"]] == ["prefill", "decode", "router"]
    assert cli("profile", "edit", "lab", "--kv-cache-dtype", "int8").rc == 0
    r = cli("engine-flags", "--engine", "vllm", "--format", "json")
    assert r.rc == 1
    data = envelope(r.out, "engine-flags", ok=False)
    assert any(c["level"] == "refused" for c in data["caveats"])


# -- lab ---------------------------------------------------------------------------------------------


def test_lab_status_when_nothing_runs() -> None:
    r = cli("lab", "status", "--format", "json")
    assert r.rc == 1
    data = envelope(r.out, "lab status", ok=False)
    assert (data["running"], data["healthy"], data["processes"], data["urls"]) == (False, False, [], {})


def test_lab_status_gives_each_running_process_its_start_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvswitch import procs
    from kvswitch.lab import manage

    me = os.getpid()
    procs_now = [
        manage.LabProcess(
            "router",
            me,
            "running",
            port=18080,
            url="http://127.0.0.1:18080",
            healthy=True,
            start_time=procs.start_time(me),
        ),
        manage.LabProcess("merged", 999_999_999, "gone", reason="not running"),
    ]
    monkeypatch.setattr(manage, "status", lambda: manage.LabStatus(procs_now, Path("lab"), port=18080))
    r = cli("lab", "status", "--format", "json")
    data = envelope(r.out, "lab status", ok=False)
    router, merged = data["processes"]
    assert utc(router["started_at"]) <= datetime.now(UTC)
    assert merged["started_at"] is None and merged["state"] == "gone"


def test_lab_up_is_enveloped_and_a_profile_error_is_not_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvswitch.lab import manage

    def up(**_: Any) -> Any:
        return manage.UpResult(already_up=True, status=manage.LabStatus([], Path("lab")), profile_error=error)

    monkeypatch.setattr(manage, "up", up)
    error = None
    r = cli("lab", "up", "--format", "json")
    assert r.rc == 0, r.err
    data = envelope(r.out, "lab up", ok=True)
    assert data["already_up"] is True and data["status"]["processes"] == []
    error = "the config cannot be written"
    r = cli("lab", "up", "--format", "json")
    assert r.rc == 1 and "could not be registered" in r.err
    assert envelope(r.out, "lab up", ok=False)["profile_error"] == error


# -- gateway status -------------------------------------------------------------------------------------


def test_gateway_status_when_none_runs() -> None:
    r = cli("gateway", "status", "--format", "json")
    assert r.rc == 1
    assert envelope(r.out, "gateway status", ok=False) == {"running": False, "pinned": []}


def test_gateway_status_gives_its_start_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvswitch.gateway import control

    info = control.GatewayInfo(
        pid=4242,
        url="http://127.0.0.1:18090",
        mode="split",
        profile="p",
        started=1767225600.5,
        upstreams={"merged": "http://m/v1", "split": "http://s/v1"},
        requests={"split": 3},
    )
    monkeypatch.setattr(control, "running", lambda: info)
    r = cli("gateway", "status", "--format", "json")
    assert r.rc == 0, r.err
    data = envelope(r.out, "gateway status", ok=True)
    assert data["started"] == "2026-01-01T00:00:00.500Z"
    assert (data["running"], data["pid"], data["mode"], data["requests"]) == (True, 4242, "split", {"split": 3})


# -- client detect and import ------------------------------------------------------------------------------


def test_client_detect_json() -> None:
    r = cli("client", "detect", "--format", "json")
    assert r.rc == 0, r.err
    data = envelope(r.out, "client detect", ok=True)
    assert len(data["clients"]) == 5 and not any(c["found"] for c in data["clients"])
    assert data["registered_now"] == [] and data["cc_switch"]["exists"] is False


def test_import_json_and_nothing_imported_is_not_ok(sandbox: Path) -> None:
    db = ccs.build(sandbox / ".cc-switch" / "cc-switch.db")
    r = cli("import", "--from", "cc-switch", "--db", str(db), "--dry-run", "--format", "json")
    assert r.rc == 0, r.err
    data = envelope(r.out, "import", ok=True)
    assert data["dry_run"] is True and {p["name"] for p in data["profiles"]} >= {"local-vllm"}
    r = cli("import", "--from", "cc-switch", "--db", str(db), "--provider", "Relay", "--dry-run", "--format", "json")
    assert r.rc == 1
    data = envelope(r.out, "import", ok=False)
    assert data["profiles"] == [] and "--model" in data["skipped"][0]["reason"]
