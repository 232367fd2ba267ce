"""``kvswitch lab up --answer-chars N``: the lab's servers end every answer after at most N
characters with ``finish_reason: "stop"``, as a model that has finished its answer does.

The tiny model never stops on its own, and coding clients (Claude Code, Codex) fail a turn whose
answer a token limit cut off; with this option they get answers they accept (the real clients
are run in tests/realclients/test_translation_real_clients.py). Here: the grammar really ends
a real llama.cpp server's answers (whole and streamed) where a token limit would have cut them,
``up`` hands it to every server and records it, a running lab with another value is reported,
and values llama.cpp would silently ignore are refused before anything starts.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from kvswitch.cli import main
from kvswitch.lab import llama, manage
from kvswitch.lab.llama import LlamaServer
from kvswitch.lab.manage import LabProcess, LabStatus
from tests.lab.conftest import THREADS

CHARS = 24


@pytest.fixture(scope="module")
def ending(tiny_model: Path, lab_dir: Path) -> Iterator[LlamaServer]:
    """A llama.cpp server started with the grammar ``up --answer-chars 24`` gives it."""
    server = LlamaServer(
        tiny_model,
        port=0,
        ctx_size=2048,
        parallel=1,
        threads=THREADS,
        log_path=lab_dir / "ending.log",
        grammar=manage.answer_grammar(CHARS),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _chat(url: str, max_tokens: int, *, stream: bool = False) -> httpx.Response:
    body = {
        "messages": [{"role": "user", "content": "say ok"}],
        "max_tokens": max_tokens,
        "stream": stream,
        "cache_prompt": False,
    }
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60, trust_env=False)
    assert response.status_code == 200, response.text
    return response


def test_answers_end_with_stop_after_at_most_n_characters(ending: LlamaServer) -> None:
    data = _chat(ending.url, 200).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert 0 < len(choice["message"]["content"]) <= CHARS
    assert data["usage"]["completion_tokens"] < 200  # the grammar ended it, not the limit


def test_a_streamed_answer_ends_with_stop_too(ending: LlamaServer) -> None:
    events = [
        json.loads(line[6:])
        for line in _chat(ending.url, 200, stream=True).text.splitlines()
        if line.startswith("data: {")
    ]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finishes[-1] == "stop" and 0 < len(text) <= CHARS


def test_a_token_limit_below_the_end_still_cuts_the_answer(ending: LlamaServer) -> None:
    """The request's own max_tokens still applies, and is reported as a cut (``length``)."""
    choice = _chat(ending.url, 2).json()["choices"][0]
    assert choice["finish_reason"] == "length"


def test_without_the_option_the_tiny_model_runs_to_the_limit(llama: LlamaServer) -> None:
    choice = _chat(llama.url, 64).json()["choices"][0]
    assert choice["finish_reason"] == "length" and len(choice["message"]["content"]) > CHARS


def test_the_server_process_gets_the_grammar_on_its_command_line(tiny_model: Path) -> None:
    grammar = manage.answer_grammar(7)
    assert grammar == "root ::= [^\\x00]{1,7}"
    cmd = LlamaServer(tiny_model, grammar=grammar).command()
    assert cmd[cmd.index("--grammar") + 1] == grammar
    assert "--grammar" not in LlamaServer(tiny_model).command()


# -- up: validation, every server, the pidfiles, a running lab ----------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("value", [-1, manage.MAX_ANSWER_CHARS + 1])
def test_values_llama_cpp_would_not_honour_are_refused(
    value: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama.cpp drops a grammar repeating more than 2000 times without a word: refused here."""
    started: list[str] = []
    monkeypatch.setattr(manage, "_start_server", lambda role, *a: started.append(role))
    with pytest.raises(manage.LabError, match="--answer-chars must be 0"):
        manage.up(port=free_port(), answer_chars=value)
    assert main(["lab", "up", "--port", str(free_port()), "--answer-chars", str(value)]) == 1
    assert "--answer-chars must be 0 (answers run to max_tokens) to 2000" in capsys.readouterr().err
    assert started == [] and manage.status().empty


def test_refusals_and_reasons_read_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lang", "zh-CN", "lab", "up", "--port", str(free_port()), "--answer-chars", "9999"]) == 1
    err = capsys.readouterr().err
    assert "--answer-chars 必须在 0（回答一直生成到 max_tokens）到 2000 之间" in err  # option and numbers kept
    assert manage._check(0, None) == ("stale", "pid 0 不是有效的进程号")
    assert manage._check(2**22 + 1, None) == ("gone", f"没有进程 {2**22 + 1}")
    assert manage.status().empty


class _Server:
    """Stands in for LlamaServer: records what it was given, runs a real ``sleep``."""

    given: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, model: Path, **kw: Any) -> None:
        self.kw = kw
        _Server.given.append(kw)
        self.url = f"http://127.0.0.1:{40000 + len(_Server.given)}"

    def start(self) -> _Server:
        return self

    def detach(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "60"])


@pytest.fixture
def fake_servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """``up`` with stand-ins for the servers and the router (real ``sleep`` processes, so that
    pidfiles are written); every one is stopped afterwards."""
    _Server.given = []
    procs: list[subprocess.Popen[bytes]] = []

    def router(port: int, urls: dict[str, str], timeout: float) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sleep", "60"])
        procs.append(proc)
        return proc

    monkeypatch.setattr(manage, "require_lab", lambda: None)
    monkeypatch.setattr(manage, "_ensure_model", lambda preset: (Path("unused.gguf"), False))
    monkeypatch.setattr(llama, "LlamaServer", _Server)
    monkeypatch.setattr(manage, "_start_router", router)
    try:
        yield _Server.given
    finally:
        for proc in [*procs, *manage._CHILDREN.values()]:
            proc.kill()
            proc.wait()
        manage._CHILDREN.clear()


def test_up_gives_every_server_the_grammar_and_records_it(fake_servers: list[dict[str, Any]]) -> None:
    result = manage.up(port=free_port(), answer_chars=40)
    assert [kw["grammar"] for kw in fake_servers] == [manage.answer_grammar(40)] * 3
    records = {role: json.loads((manage.lab_dir() / f"{role}.pid").read_text()) for role in manage.ROLES}
    assert {role: r["answer_chars"] for role, r in records.items()} == dict.fromkeys(manage.ROLES, 40)
    assert manage.status(check_health=False).answer_chars == 40
    assert result.status.as_dict()["answer_chars"] == 40


def test_up_without_the_option_gives_no_grammar(fake_servers: list[dict[str, Any]]) -> None:
    manage.up(port=free_port())
    assert [kw["grammar"] for kw in fake_servers] == [None] * 3
    assert manage.status(check_health=False).answer_chars == 0


NOTE = "the running lab has answer chars 40; run kvswitch lab down first to change it"


def _running(answer_chars: int, port: int) -> LabStatus:
    processes = [LabProcess(role, 1000 + i, "running", healthy=True) for i, role in enumerate(manage.ROLES)]
    return LabStatus(processes, manage.lab_dir(), preset="tiny", chunk_size=512, port=port, answer_chars=answer_chars)


@pytest.mark.parametrize(
    ("asked", "note"),
    [
        (None, None),
        (40, None),
        (0, NOTE),
        (20, NOTE),
    ],
)
def test_a_running_lab_with_another_value_is_reported_not_changed(
    asked: int | None, note: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manage, "status", lambda **kw: _running(40, 18080))
    monkeypatch.setattr(manage, "_start_server", lambda *a: pytest.fail("a server was started"))
    result = manage.up(port=18080, answer_chars=asked)
    assert result.already_up
    assert result.notes == ([note] if note else [])


def test_status_text_says_where_answers_end(capsys: pytest.CaptureFixture[str]) -> None:
    from kvswitch.cli.lab import _print_status

    _print_status(_running(40, 18080))
    assert "merged chunk size 512 · answers end after 40 characters ·" in capsys.readouterr().out
    _print_status(_running(0, 18080))
    assert "answers end" not in capsys.readouterr().out
