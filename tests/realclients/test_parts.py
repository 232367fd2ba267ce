"""The harness's parts that need neither root nor the clients: the recording server's answers
(each protocol, streamed or not, any path prefix), the refusing proxy, the install step in
``tests/run.py`` and the rule that under CI a missing client fails instead of skipping."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.realclients import harness as harness_mod
from tests.realclients import proxy, recorder
from tests.realclients.clients import CLIENTS
from tests.realclients.samples import render

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    log = tmp_path / "rec.jsonl"
    server = recorder.serve("merged", log, model="fallback-model")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1], log
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def ask(
    port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type") or "", resp.read().decode()
    finally:
        conn.close()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """(event, data) pairs of an SSE body; ``[DONE]`` stays a string."""
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = fields["data"]
        out.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return out


@pytest.mark.parametrize("prefix", ["", "/api", "/gateway/x"])
def test_recorder_answers_each_protocol_on_any_prefix(rec: tuple[int, Path], prefix: str) -> None:
    port, log = rec
    # Anthropic Messages, streamed: the six events, text "ok"
    status, ctype, body = ask(
        port, "POST", f"{prefix}/v1/messages?beta=true", {"model": "m1", "stream": True}, {"X-Cache-Mode": "split"}
    )
    events = sse(body)
    assert (status, ctype) == (200, "text/event-stream")
    assert [e for e, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0][1]["message"]["model"] == "m1"
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "ok"}
    status, _, body = ask(port, "POST", f"{prefix}/v1/messages", {"model": "m1"})
    assert json.loads(body)["content"] == [{"type": "text", "text": "ok"}]
    assert json.loads(ask(port, "POST", f"{prefix}/v1/messages/count_tokens", {})[2]) == {"input_tokens": 3}
    # OpenAI Responses: created … completed, the text in a delta and in the finished item
    events = sse(ask(port, "POST", f"{prefix}/v1/responses", {"model": "m2", "stream": True})[2])
    assert [e for e, _ in events] == [
        "response.created",
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
        "response.completed",
    ]
    assert all(d["type"] == e for e, d in events)
    assert events[2][1]["delta"] == "ok"
    assert events[4][1]["response"]["output"][0]["content"][0]["text"] == "ok"
    assert events[4][1]["response"]["usage"]["total_tokens"] == 4
    # Chat Completions, streamed and not
    events = sse(ask(port, "POST", f"{prefix}/v1/chat/completions", {"model": "m3", "stream": True})[2])
    assert events[-1] == (None, "[DONE]")
    text = "".join(d["choices"][0]["delta"].get("content", "") for _, d in events[:-1] if d["choices"])
    assert text == "ok" and events[-2][1]["usage"]["total_tokens"] == 4
    whole = json.loads(ask(port, "POST", f"{prefix}/chat/completions", {"model": "m3"})[2])
    assert whole["choices"][0]["message"]["content"] == "ok" and whole["usage"]
    # models lists the last model asked for; probes get {}; other POSTs 404
    models = json.loads(ask(port, "GET", f"{prefix}/v1/models")[2])
    assert [m["id"] for m in models["data"]] == ["m3"]
    assert ask(port, "GET", f"{prefix}/")[:1] == (200,)
    assert ask(port, "HEAD", f"{prefix}/v1")[0] == 200
    assert ask(port, "POST", f"{prefix}/v1/embeddings", {})[0] == 404

    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) == 10
    first = entries[0]
    assert first["name"] == "merged" and first["method"] == "POST"
    assert (first["path"], first["query"]) == (f"{prefix}/v1/messages", "beta=true")
    assert first["headers"]["x-cache-mode"] == "split"  # names lower-cased
    assert first["body"] == {"model": "m1", "stream": True}


def test_recorder_keeps_a_repeated_header_line(rec: tuple[int, Path]) -> None:
    """``headers`` keeps one value per name; ``header_lines`` shows every line as sent (a key
    sent twice upstream, one of them the wrong one, must be visible to the tests)."""
    port, log = rec
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", "/v1/models")
        conn.putheader("Authorization", "Bearer first")
        conn.putheader("authorization", "Bearer second")
        conn.endheaders()
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    entry = json.loads(log.read_text().splitlines()[-1])
    lines = [v for n, v in entry["header_lines"] if n == "authorization"]
    assert lines == ["Bearer first", "Bearer second"]
    assert entry["headers"]["authorization"] in lines


def test_recorder_lists_its_default_model_before_any_request(rec: tuple[int, Path]) -> None:
    models = json.loads(ask(rec[0], "GET", "/v1/models")[2])
    assert [m["id"] for m in models["data"]] == ["fallback-model"]


def test_proxy_refuses_and_records_everything(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    server = proxy.serve(log)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.set_tunnel("api.example.invalid", 443)
        with pytest.raises(OSError, match="403"):
            conn.connect()
        conn.close()
        status, _, _ = ask(
            port, "GET", "http://updates.example.invalid/latest", headers={"Host": "updates.example.invalid"}
        )
        assert status == 403
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["method"], e["target"]) for e in entries] == [
        ("CONNECT", "api.example.invalid:443"),
        ("GET", "http://updates.example.invalid/latest"),
    ]
    assert entries[1]["host"] == "updates.example.invalid"


def test_samples_name_the_endpoint_key_and_header_of_every_client() -> None:
    for name in CLIENTS:
        text = render(name, "http://127.0.0.1:9", "sk-sample", "m", "split")
        assert "127.0.0.1:9" in text and "split" in text, name
        # Codex and OpenCode read the key from a variable; the others keep it in the file
        assert ("sk-sample" in text) == (not CLIENTS[name].key_env), name


def load_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tests_run_script", ROOT / "tests" / "run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE_NPM = """#!/bin/sh
# records its arguments, then makes what the real npm would: the programs, the plugin
echo "$PWD $*" >> "$NPM_CALLS"
mkdir -p node_modules/.bin node_modules/@opencode-ai/plugin
for b in claude codex cline opencode qwen; do : > node_modules/.bin/$b; done
"""


def test_install_step_installs_the_pinned_clients_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_run()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "npm").write_text(FAKE_NPM)
    (fake / "npm").chmod(stat.S_IRWXU)
    calls = tmp_path / "calls"
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NPM_CALLS", str(calls))
    clients = tmp_path / "tests" / "clients"
    monkeypatch.setattr(run, "CLIENTS", clients)

    run.ensure_clients()
    lines = calls.read_text().splitlines()
    assert len(lines) == 2
    where, args = lines[0].split(" ", 1)
    assert where == str(clients)
    assert args.split() == [
        "install",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--save-exact",
        "@anthropic-ai/claude-code@2.1.332",
        "@openai/codex@0.171.0",
        "cline@3.0.65",
        "opencode-ai@1.18.33",
        "@qwen-code/qwen-code@0.24.4",
    ]
    assert lines[1] == (
        f"{clients / 'opencode-plugin'} install --no-audit --no-fund "
        "--prefer-offline --save-exact @opencode-ai/plugin@1.18.33"
    )
    assert json.loads((clients / "package.json").read_text()) == {"private": True}

    run.ensure_clients()  # stamp matches, programs there: npm is not run again
    assert len(calls.read_text().splitlines()) == 2
    (clients / "node_modules" / ".bin" / "qwen").unlink()  # a program gone: install again
    run.ensure_clients()
    assert len(calls.read_text().splitlines()) == 4


def test_install_step_pins_what_the_harness_runs() -> None:
    run = load_run()
    assert tuple(CLIENTS) == run.CLIENT_BINS
    assert run.DEBIAN["tmux"] == "tmux" and run.DEBIAN["iproute2"] == "ip"


@pytest.mark.parametrize("ci", ["", "true"])
def test_missing_clients_skip_locally_and_fail_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setattr(harness_mod, "unavailable", lambda: None)
    monkeypatch.setattr(harness_mod, "missing", lambda: ["codex"])
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="codex"):
        harness_mod.require_harness()
