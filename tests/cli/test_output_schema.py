"""Every command's ``--format json`` output is the one envelope and validates against
``schemas/kvswitch-output.schema.json``, whose per-command parts are tight: a real output with
one field broken (a wrong type, value or time, a required field missing) or a key where none
belongs is rejected. The schema allows fields it does not name (a new field is not a breaking
change), so real output is also checked with every object closed: the schema names every field
kvswitch writes. ``lint --format json`` is its list of diagnostics, and ``lint --format sarif``
names each rule with the code's meaning in the user's language.

The commands come from the parser (every sub-command with a ``--format`` option), so a command
that gains ``--format json`` is checked here as soon as it has an invocation below.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kvswitch.cli import build_parser
from kvswitch.testing.sse_server import SSEServer
from tests.clientenv import cli, cline_file
from tests.conftest import ROOT

SCHEMA = json.loads((ROOT / "schemas" / "kvswitch-output.schema.json").read_text(encoding="utf-8"))
KEY = "sk-SCHEMATEST-0123456789abcdef"
CJK = re.compile(r"[\u4e00-\u9fff]")

RUNS: dict[str, tuple[str, list[str]]] = {
    "switch": ("switch", ["switch", "split"]),
    "switch --dry-run": ("switch", ["switch", "split", "--dry-run"]),
    "status": ("status", ["status"]),
    "restore": ("restore --list", ["restore", "{cline}", "--list"]),
    "restore a backup": ("restore", ["restore", "{cline}"]),
    "profile list": ("profile list", ["profile", "list"]),
    "profile show": ("profile show", ["profile", "show"]),
    "client list": ("client list", ["client", "list"]),
    "client detect": ("client detect", ["client", "detect"]),
    "import": ("import", ["import", "--from", "cc-switch", "--db", "{db}", "--dry-run"]),
    "key get": ("key get", ["key", "get", "lab"]),
    "watch": ("watch", ["watch", "--once"]),
    "probe": (
        "probe",
        [
            "probe",
            "--base-url",
            "{url}",
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
        ],
    ),
    "doctor": ("doctor", ["doctor", "--skip", "nvidia-smi", "--skip", "same-gpu", "--timeout", "5"]),
    "advise": ("advise", ["advise", "--prompt-tokens", "4000", "--concurrency", "2"]),
    "lab up": ("lab up", ["lab", "up"]),
    "lab status": ("lab status", ["lab", "status"]),
    "gateway status": ("gateway status", ["gateway", "status"]),
    "engine-flags": ("engine-flags", ["engine-flags", "--engine", "vllm"]),
}
"""Each run: the command its envelope names, and how it is run here (``--format json`` is added;
``{…}`` are filled per test). The key of a plain run is the parser's name of the command."""

BEFORE: dict[str, list[list[str]]] = {"restore": [["switch", "split"]], "restore a backup": [["switch", "split"]]}
"""Commands run first, so that there is something to report (a backup to list or restore)."""

DataPath = tuple[str | int, ...]
BROKEN: dict[str, list[tuple[DataPath, Any]]] = {
    "switch": [
        (("mode",), "both"),
        (("scope",), "some"),
        (("files", 0, "takes_effect"), "tomorrow"),
        (("files", 0, "nudge", "ok"), "yes"),
        (("gateway", "told"), "yes"),
        (("files", 0, "api_key"), "x"),
        (("warnings", 0), f"wrote {KEY}"),
    ],
    "switch --dry-run": [(("files", 0, "diff"), f'+  "cline.openAiApiKey": "{KEY}"'), (("dry_run",), "yes")],
    "status": [
        (("mode",), "both"),
        (("clients", 0, "key"), KEY),
        (("clients", 0, "route"), "tunnel"),
        (("clients", 0, "shadow"), 1),
        (("key_variables", 0), {"name": "KVSWITCH_KEY_LAB"}),
        (("clients", 0, "last_write"), "2026-12-03 14:05:09"),
    ],
    "restore": [
        (("backups", 0, "created"), "yesterday"),
        (("backups", 0, "size"), -1),
        (("backups", 0, "bytes"), "x"),
        (("path",), ""),
    ],
    "restore a backup": [
        (("restored", "created"), "2026-12-03T14:05:09+01:00"),
        (("replaced_backup",), 3),
        (("restored", "key"), KEY),
    ],
    "profile list": [
        (("profiles", 0, "key"), KEY),
        (("profiles", 0, "key"), "plaintext"),
        (("active",), 1),
        (("profiles", 0, "mode"), "split"),
    ],
    "profile show": [
        (("key",), KEY),
        (("split", "transfer_protocol"), "bulk"),
        (("merged", "chunk_size"), 0),
        (("api_key",), "x"),
        (("headers", "Authorization"), f"Bearer {KEY}"),
    ],
    "client list": [
        (("clients", 0, "nudge"), "poke"),
        (("clients", 0, "mode"), "both"),
        (("clients", 0, "key"), "keyring"),
    ],
    "client detect": [
        (("clients", 0, "found"), "no"),
        (("cc_switch", "exists"), None),
        (("clients", 0, "endpoint"), f"http://127.0.0.1:8080/?key={KEY}"),
        (("registered_now",), "all"),
    ],
    "import": [
        (("profiles", 0, "key"), KEY),
        (("profiles", 0, "url_convention"), "v2"),
        (("skipped", 0, "why"), "x"),
        (("dry_run",), None),
    ],
    "key get": [
        (("masked",), KEY),
        (("masked",), "sk-SCHEMAT…cdef"),
        (("stored_in",), "file"),
        (("reference",), "plaintext"),
    ],
    "watch": [
        (("events", 0, "kind"), "exploded"),
        (("events", 0, "time"), "now"),
        (("once",), False),
        (("events", 0, "message"), f"saw {KEY}"),
        (("problems",), -1),
    ],
    "probe": [
        (("kvswitch_probe",), 1),
        (("settings", "key"), KEY),
        (("modes", "merged", "ttft_ms", "count"), "two"),
        (("modes", "both"), {"requests": 0, "failures": 0, "ttft_ms": {"count": 0}, "ttft_samples_ms": []}),
        (("comparison", "ttft_median_ratio"), {"split/merged": 1.0, "ci95": [1.0]}),
        (("time",), 1700000000),
    ],
    "doctor": [
        (("checks", 0, "name"), "vibes"),
        (("checks", 0, "status"), "ok"),
        (("target", "key"), KEY),
        (("counts", "pass"), -1),
        (("checks", 0, "source"), "the article"),
    ],
    "advise": [
        (("mode",), "both"),
        (("reasons",), []),
        (("reasons", 0, "source"), "blog"),
        (("scores", "auto"), 1),
        (("kv_cache_dtype",), "int8"),
    ],
    "lab up": [(("profile",), "created"), (("status", "running"), "yes"), (("cleared", 0), {"role": "router"})],
    "lab status": [(("healthy",), None), (("urls", "router"), 1), (("processes", 0), {"role": "router"})],
    "gateway status": [(("running",), True), (("pid",), 4242), (("pinned",), "all")],
    "engine-flags": [
        (("engine",), "trt"),
        (("commands", 0, "role"), "worker2"),
        (("caveats", 0, "level"), "fatal"),
        (("commands", 0, "env", "OPENAI_API_KEY"), KEY),
        (("commands", 0, "argv", 0), 7),
    ],
}
"""Per run: changes to its real ``data`` (a path into it and the value put there), each of which
the schema must reject at that path or at the object that holds it."""


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


def json_commands() -> list[str]:
    """Every command whose ``--format`` offers json (lint included)."""
    out = []
    for name, parser in _leaves(build_parser()):
        fmt = next((a for a in parser._actions if "--format" in a.option_strings), None)
        if fmt is not None and fmt.choices is not None and "json" in fmt.choices:
            out.append(name)
    return out


COMMANDS = [c for c in json_commands() if c != "lint"]


def closed(schema: Any) -> Any:
    """``schema`` with every object of ``$defs`` that names its fields closed to others (those
    marked ``"additionalProperties": true`` stay open: their other fields come from elsewhere)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


STRICT = {**SCHEMA, "$defs": closed(SCHEMA["$defs"])}


def validator(*, strict: bool = True) -> jsonschema.Draft202012Validator:
    """The schema as kvswitch's tests read it (every object closed), or as published."""
    return jsonschema.Draft202012Validator(STRICT if strict else SCHEMA, format_checker=jsonschema.FormatChecker())


def problems(doc: Any, *, strict: bool = True) -> list[str]:
    errors = sorted(validator(strict=strict).iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{list(e.absolute_path)}: {e.message}" for e in errors[:10]]


@pytest.fixture(scope="module")
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=3) as srv:
        yield srv


@pytest.fixture
def setup(server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A small real setup: a profile on the test server with its key in the keyring, the two
    skeleton clients, a CC Switch database; and a lab that is "up" without starting llama.cpp."""
    from kvswitch.lab import manage
    from tests.ccswitch_db import build

    assert (
        cli(
            "init",
            "--profile",
            "lab",
            "--base-url",
            server.url,
            "--model",
            "test-model",
            "--key-stdin",
            stdin=KEY + "\n",
        ).rc
        == 0
    )
    monkeypatch.setattr(manage, "up", lambda **_: manage.UpResult(True, manage.status(check_health=False)))
    return {"url": server.url, "cline": str(cline_file()), "db": str(build(tmp_path / "cc-switch.db"))}


def run_json(name: str, setup: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Run ``name`` (after what it needs first) with ``--format json``: its exit code and envelope."""
    for before in BEFORE.get(name, []):
        assert cli(*before).rc == 0
    argv = [a.format(**setup) for a in RUNS[name][1]]
    result = cli(*argv, "--format", "json")
    assert KEY not in result.out + result.err
    try:
        doc: dict[str, Any] = json.loads(result.out)
    except json.JSONDecodeError:
        pytest.fail(
            f"`kvswitch {' '.join(argv)} --format json` printed no JSON (exit {result.rc}): "
            f"{result.out[:300]!r} {result.err[:300]!r}"
        )
    return result.rc, doc


def put(data: Any, path: DataPath, value: Any) -> Any:
    """A copy of ``data`` with ``value`` at ``path`` (the last step may be a new key)."""
    changed = copy.deepcopy(data)
    here = changed
    for step in path[:-1]:
        here = here[step]
    if isinstance(here, list) and path[-1] == len(here):
        here.append(value)
    else:
        here[path[-1]] = value
    return changed


# -- the schema ---------------------------------------------------------------------------------


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(STRICT)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json.dumps(SCHEMA["$defs"]).count('"additionalProperties": false') == 0  # open to new fields
    assert json.dumps(STRICT["$defs"]).count('"additionalProperties": false') > 40


def test_every_json_command_has_an_invocation_here() -> None:
    assert "lint" in json_commands()
    missing = [c for c in COMMANDS if c not in RUNS]
    assert missing == [], f"add an invocation to RUNS for: {missing}"


def test_every_command_the_schema_knows_is_run_and_broken_here() -> None:
    known = SCHEMA["allOf"][0]["else"]["properties"]["command"]["enum"]
    assert sorted(known) == sorted({command for command, _ in RUNS.values()})
    parts = {
        rule["if"]["properties"]["command"]["const"]: rule["then"]["properties"]["data"]["$ref"]
        for rule in SCHEMA["allOf"][0]["else"]["allOf"]
    }
    assert sorted(parts) == sorted(known)
    assert all(ref.removeprefix("#/$defs/") in SCHEMA["$defs"] for ref in parts.values())
    assert sorted(BROKEN) == sorted(RUNS)


# -- real outputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(RUNS))
def test_json_output_is_the_envelope(name: str, setup: dict[str, str]) -> None:
    rc, doc = run_json(name, setup)
    assert problems(doc, strict=False) == []
    assert problems(doc) == []  # and the schema names every field of it
    assert doc["command"] == RUNS[name][0]
    assert doc["ok"] is (rc == 0), (rc, doc["ok"])
    assert datetime.fromisoformat(doc["generated_at"]).utcoffset() is not None
    assert "error" not in doc["data"]  # the real setup works: the tight part, not the failure, is checked


@pytest.mark.parametrize("name", list(BROKEN))
def test_the_tight_part_rejects_a_broken_real_output(name: str, setup: dict[str, str]) -> None:
    _, doc = run_json(name, setup)
    assert problems(doc) == []
    for path, value in BROKEN[name]:
        bad = put(doc, ("data", *path), value)
        errors = list(validator().iter_errors(bad))
        where = ["data", *path]
        at = [list(e.absolute_path) for e in errors]
        assert any(p[: len(where)] == where or p == where[:-1] for p in at), (path, value, at)


def test_a_new_field_is_not_a_breaking_change_but_a_key_in_it_is_rejected(setup: dict[str, str]) -> None:
    _, doc = run_json("status", setup)
    newer = put(put(doc, ("data", "clients", 0, "since"), "2026-12-03T14:05:09Z"), ("data", "uptime"), 3)
    assert problems(newer, strict=False) == []  # a reader's copy of the schema accepts newer output
    assert len(problems(newer)) == 2  # kvswitch's own tests make the schema name it
    assert problems(put(newer, ("data", "clients", 0, "since"), f"key {KEY}"), strict=False)
    assert problems(put(newer, ("data", KEY), 1), strict=False)  # not even as a field name


def test_a_failure_keeps_data_error_for_every_command(setup: dict[str, str]) -> None:
    result = cli("profile", "show", "nope", "--format", "json")
    doc = json.loads(result.out)
    assert result.rc != 0 and doc["ok"] is False and problems(doc) == []
    error = doc["data"]["error"]
    assert error["message"] and error["exit_code"] == result.rc
    for command in ("status", "doctor", "probe", "lab up", "no such command"):  # any command may fail
        assert problems({**doc, "command": command}) == []
    for path, value in [
        (("error", "message"), ""),
        (("error", "exit_code"), 7),
        (("error", "code"), "E1"),
        (("error", "where"), "x"),
        (("error", "message"), f"bad key {KEY}"),
    ]:
        assert problems(put(doc, ("data", *path), value)), (path, value)
    assert problems({**doc, "ok": True})


def test_a_running_lab_and_gateway_fit_their_parts(setup: dict[str, str]) -> None:
    """Nothing runs in the test setup: the running shapes, as the lab's pidfiles and the gateway's
    status give them, are checked here."""
    _, lab = run_json("lab status", setup)
    process = {
        "role": "router",
        "pid": 4242,
        "state": "running",
        "reason": None,
        "port": 18080,
        "url": "http://127.0.0.1:18080",
        "healthy": True,
        "cpus": [0, 1],
        "pidfile": "state/lab/router.pid",
        "started_at": "2026-12-03T14:05:09Z",
    }
    running = put(lab, ("data", "processes"), [process])
    assert problems(running) == []
    assert problems(put(running, ("data", "processes", 0, "state"), "zombie"))
    assert problems(put(running, ("data", "processes", 0, "started_at"), "today"))
    _, gateway = run_json("gateway status", setup)
    status = {
        "running": True,
        "pinned": ["cline"],
        "url": "http://127.0.0.1:18090",
        "pid": 4242,
        "mode": "split",
        "route": "auto",
        "profile": "lab",
        "upstreams": {"merged": "http://127.0.0.1:8080/v1", "split": "http://127.0.0.1:8081/v1"},
        "in_flight": 0,
        "requests": {"merged": 3, "split": 1},
        "started": "2026-12-03T14:05:09Z",
    }
    up = {**gateway, "ok": True, "data": status}
    assert problems(up) == []
    assert problems(put(up, ("data", "route"), "random"))
    assert problems(put(up, ("data", "upstreams", "both"), "http://127.0.0.1:8082/v1"))


# -- the envelope and lint ----------------------------------------------------------------------


def test_lint_json_is_the_list_of_diagnostics(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"cline.openAiBaseUrl": "https://taotoken.net/api/", "cline.cacheStrategy": {"mode": "both"}}')
    result = cli("lint", "--kind", "article-cline", "--format", "json", str(path))
    assert result.rc == 1
    items = json.loads(result.out)
    assert {i["code"] for i in items} >= {"KVS201", "KVS002"}
    lint_schema = {**SCHEMA["$defs"]["lint"], "$defs": SCHEMA["$defs"]}
    jsonschema.Draft202012Validator(lint_schema).validate(items)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(lint_schema).validate([{**items[0], "severity": "fatal"}])


GOOD_ADVICE: dict[str, Any] = {
    "mode": "split",
    "chunk_size": None,
    "prefix_cache": True,
    "kv_cache_dtype": "auto",
    "decided_by": "rules",
    "measurement": None,
    "reasons": [{"n": 1, "text": "Long prompts.", "source": "docs/background.md#when-split-pays"}],
    "next_steps": ["kvswitch switch split"],
    "workload": {
        "prompt_tokens": 4000,
        "concurrency": None,
        "gpus": 2,
        "ttft_slo_ms": None,
        "prefix_reuse": None,
        "workload": None,
    },
    "scores": {"merged": 0, "split": 2},
}


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"format": 2}, "format"),
        ({"generated_at": "2026-12-03 14:05:09"}, "generated_at"),
        ({"command": "Profile List"}, "command"),
        ({"command": "profile remove"}, "command"),
        ({"extra": 1}, "extra"),
        ({"ok": True, "data": {"error": "boom"}}, "ok"),
        ({"command": "status", "data": {"profile": None, "mode": "both", "clients": []}}, "mode"),
        ({"data": {**GOOD_ADVICE, "next_steps": [f"export KEY={KEY}"]}}, "next_steps"),
    ],
)
def test_the_schema_rejects_what_is_not_the_envelope(doc: dict[str, Any], problem: str) -> None:
    good = {
        "kvswitch": "0.1.0",
        "format": 1,
        "command": "advise",
        "ok": True,
        "generated_at": "2026-12-03T14:05:09Z",
        "data": GOOD_ADVICE,
    }
    assert list(validator().iter_errors(good)) == []
    errors = list(validator().iter_errors({**good, **doc}))
    assert errors, problem
    assert any(
        problem in (str(list(e.absolute_path)) + e.message) or problem in json.dumps(e.instance) for e in errors
    ), [e.message for e in errors]


# -- SARIF's rule texts -------------------------------------------------------------------------


def _sarif(path: Path, lang: str) -> dict[str, Any]:
    env = {**os.environ, "KVSWITCH_LANG": lang}
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch", "lint", "--kind", "article-cline", "--format", "sarif", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    log: dict[str, Any] = json.loads(done.stdout)
    return log


def _rules(log: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}


def test_sarif_rule_texts_follow_the_language_and_keep_the_rule_ids(tmp_path: Path) -> None:
    from kvswitch.diagnostics import CODES

    path = tmp_path / "settings.json"
    path.write_text('{"cline.openAiBaseUrl": "https://taotoken.net/api/", "cline.cacheStrategy": {"mode": "both"}}')
    english, chinese = _rules(_sarif(path, "en")), _rules(_sarif(path, "zh-CN"))
    assert list(chinese) == list(english) and {"KVS002", "KVS201"} <= set(english)
    for code, rule in english.items():
        assert rule["shortDescription"]["text"] == rule["fullDescription"]["text"] == CODES[code][1]
        zh = chinese[code]
        assert CJK.search(zh["shortDescription"]["text"]) and zh["fullDescription"] == zh["shortDescription"]
        assert {k: v for k, v in zh.items() if not k.endswith("Description")} == {
            k: v for k, v in rule.items() if not k.endswith("Description")
        }  # id, level and help stay


def test_every_code_meaning_has_a_chinese_translation() -> None:
    from kvswitch.diagnostics import CODES
    from kvswitch.i18n import set_language, tr

    set_language("zh_CN")
    for code, (_, meaning) in CODES.items():
        text = tr(meaning)
        assert text != meaning and CJK.search(text), code
        assert re.findall(r"[a-z_]+_[a-z_]+|[0-9]+", meaning) == re.findall(r"[a-z_]+_[a-z_]+|[0-9]+", text), code
