"""``kvswitch lab up|down|status`` against the real thing: three llama.cpp servers and the router.

One lab per module (``lab`` fixture: ``manage.up(port=<free>, chunk_size=192, threads=1)`` in
a KVSWITCH_HOME of its own, ~1.5 s), torn down by ``manage.down()``. The tests that look at it
run in file order; ``test_down_leaves_nothing_behind`` comes last. Timing assertions compare
figures that differ by an order of magnitude (a KV hand-off against a cold prefill) and never
say which mode wins a probe (D-12).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvswitch.cli import main
from kvswitch.lab import manage
from kvswitch.lab.router import HANDOFF_PREFIX, Router, _relabel
from kvswitch.probe.client import RequestResult, chat_body, stream_chat
from kvswitch.probe.metrics import parse_metrics
from tests.lab import support
from tests.lab.conftest import require_lab

CHUNK = 192  # a chunk size no default would give: the merged server has it only from the lab
LONG_WORDS = 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    home: Path
    port: int
    up: manage.UpResult

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def server(self, role: str) -> str:
        url = next(p.url for p in self.up.status.processes if p.role == role)
        assert url is not None
        return url


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require_lab()
    home = tmp_path_factory.mktemp("lab-home") / "kvswitch-home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KVSWITCH_HOME", str(home))
        from kvswitch.models import Profile
        from kvswitch.setup import init

        # another profile is active already: the lab's must be added, not made active
        init("other", Profile(base_url="http://127.0.0.1:9/v1", model="m", key="env:OTHER_KEY"), [])
        port = free_port()
        result = manage.up(port=port, chunk_size=CHUNK, threads=1)
        try:
            yield Lab(home, port, result)
        finally:
            manage.down()


@pytest.fixture
def in_lab(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> Lab:
    """The lab, with KVSWITCH_HOME pointing at its home (the autouse sandbox moved it)."""
    monkeypatch.setenv("KVSWITCH_HOME", str(lab.home))
    return lab


def _cpus_of_every_thread(pid: int) -> set[str]:
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    out.add(line.split(":", 1)[1].strip())
    return out


def _stream(
    url: str,
    prompt: str,
    *,
    max_tokens: int = 8,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> RequestResult:
    async def run() -> RequestResult:
        async with support.fresh_client() as client:
            body = chat_body("kvswitch-lab-tiny", prompt, max_tokens, extra={"ignore_eos": True, **(extra or {})})
            return await stream_chat(
                client, url, body, headers or {}, mode="merged", stall_timeout=30, total_timeout=60
            )

    return asyncio.run(run())


def _metrics(lab: Lab) -> dict[str, float]:
    response = httpx.get(f"{lab.root}/metrics", timeout=10, trust_env=False)
    assert response.status_code == 200
    return parse_metrics(response.text)


def _handoffs(lab: Lab) -> list[dict[str, Any]]:
    response = httpx.get(f"{lab.root}/lab/handoffs", timeout=10, trust_env=False)
    assert response.status_code == 200
    result: list[dict[str, Any]] = response.json()["handoffs"]
    return result


def _long_prompt(seed: int) -> str:
    return f"[{support.nonce()}] " + support.words(LONG_WORDS, seed)


# -- up, status, profile --------------------------------------------------------------------------------
def test_up_starts_four_processes_and_registers_the_profile(in_lab: Lab) -> None:
    st = manage.status()
    assert st.running and st.healthy
    assert [p.role for p in st.processes] == ["router", "merged", "prefill", "decode"]
    pids = {p.role: p.pid for p in st.processes}
    assert len(set(pids.values())) == 4
    for p in st.processes:
        assert p.pid is not None and Path(f"/proc/{p.pid}").exists()
        assert "kvswitch.lab" in Path(f"/proc/{p.pid}/cmdline").read_bytes().decode(errors="replace")
        assert os.getsid(p.pid) == p.pid  # a session of its own: it outlives the command that started it
    assert st.port == in_lab.port and st.chunk_size == CHUNK and st.preset == "tiny"
    assert (in_lab.home / "state" / "lab" / "tiny.gguf").is_file() and in_lab.up.model_generated
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:  # prefill and decode on different cores, every thread of each
        prefill, decode = _cpus_of_every_thread(pids["prefill"]), _cpus_of_every_thread(pids["decode"])
        assert prefill == {str(cpus[0])} and decode == {str(cpus[1])}

    from kvswitch.config import read_config

    config = read_config()
    assert config.model.active_profile == "other"  # another profile was active: not taken over
    assert in_lab.up.profile == "added" and not in_lab.up.activated and not in_lab.up.profile_active
    profile = config.model.profiles["lab"]
    assert profile.base_url == f"{in_lab.root}/v1"
    assert profile.url_convention == "includes-v1"
    assert profile.model == "kvswitch-lab-tiny"
    assert profile.key == "env:KVSWITCH_LAB_KEY"
    assert profile.merged.chunk_size == CHUNK
    assert profile.split.prefill_base_url == f"{in_lab.server('prefill')}/v1"
    assert profile.split.decode_base_url == f"{in_lab.server('decode')}/v1"
    assert profile.split.url == f"{in_lab.root}/split/v1"
    assert profile.merged.url == f"{in_lab.root}/merged/v1"
    assert profile.split.prefill_base_url != profile.split.decode_base_url


def test_up_twice_is_a_no_op(in_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    config = in_lab.home / "config" / "kvswitch.toml"
    before = {p.role: (p.pid, p.start_time) for p in manage.status().processes}
    text = config.read_bytes()
    again = manage.up(port=in_lab.port, chunk_size=CHUNK)
    assert again.already_up and again.profile is None and not again.notes
    assert main(["lab", "up", "--port", str(in_lab.port)]) == 0
    assert "already up" in capsys.readouterr().out
    other = manage.up(port=in_lab.port + 1, chunk_size=256)  # different settings: reported, not applied
    assert other.already_up and "lab down first" in other.notes[0]
    assert {p.role: (p.pid, p.start_time) for p in manage.status().processes} == before
    assert config.read_bytes() == text


def envelope_data(out: str, command: str) -> dict[str, Any]:
    """The ``data`` of a command's ``--format json`` (kvswitch's JSON envelope)."""
    doc = json.loads(out)
    assert doc["command"] == command and doc["format"] == 1
    data: dict[str, Any] = doc["data"]
    return data


def test_status_command(in_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "status", "--format", "json"]) == 0
    data = envelope_data(capsys.readouterr().out, "lab status")
    assert data["running"] and data["healthy"]
    assert [(p["role"], p["state"], p["healthy"]) for p in data["processes"]] == [
        (r, "running", True) for r in ("router", "merged", "prefill", "decode")
    ]
    assert data["urls"]["base_url"] == f"{in_lab.root}/v1"
    assert data["urls"]["split"] == f"{in_lab.root}/split/v1"
    assert main(["lab", "status"]) == 0
    out = capsys.readouterr().out
    assert "router" in out and "healthy" in out and f"{in_lab.root}/merged/v1" in out


# -- the router ---------------------------------------------------------------------------------------------
def test_a_stream_in_each_mode(in_lab: Lab) -> None:
    """Header routing on the base URL and both path prefixes, through kvswitch's probe client."""
    routes = [
        (f"{in_lab.root}/v1/chat/completions", {}),
        (f"{in_lab.root}/v1/chat/completions", {"X-Cache-Mode": "merged"}),
        (f"{in_lab.root}/v1/chat/completions", {"X-Cache-Mode": "split"}),
        (f"{in_lab.root}/merged/v1/chat/completions", {}),
        (f"{in_lab.root}/split/v1/chat/completions", {}),
    ]
    for i, (url, headers) in enumerate(routes):
        r = _stream(url, f"[{support.nonce()}] " + support.words(48, i), max_tokens=8, headers=headers)
        assert r.ok, (url, headers, r.error)
        assert r.status == 200 and r.done and r.token_events == 8 and r.output_tokens == 8
        assert r.ttft is not None and r.first_event is not None and r.first_event <= r.ttft


def test_non_streamed_requests_and_other_routes(in_lab: Lab) -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": support.words(20, 3)}],
        "max_tokens": 4,
        "ignore_eos": True,
    }
    with httpx.Client(trust_env=False, timeout=30) as client:
        for mode in ("merged", "split"):
            r = client.post(f"{in_lab.root}/{mode}/v1/chat/completions", json=body)
            assert r.status_code == 200, r.text
            assert r.json()["usage"]["completion_tokens"] == 4
        models = client.get(f"{in_lab.root}/v1/models")
        assert models.status_code == 200 and "kvswitch-lab-tiny" in models.text
        health = client.get(f"{in_lab.root}/health")
        assert health.status_code == 200 and health.json()["upstreams"] == dict.fromkeys(
            ("merged", "prefill", "decode"), "ok"
        )
        bad = client.post(f"{in_lab.root}/v1/chat/completions", json=body, headers={"X-Cache-Mode": "both"})
        assert bad.status_code == 400 and "X-Cache-Mode" in bad.json()["error"]["message"]
        assert client.get(f"{in_lab.root}/nowhere").status_code == 404


def _read_response(sock: socket.socket) -> tuple[str, dict[str, str], bytes]:
    """One HTTP/1.1 response off ``sock`` (Content-Length, chunked, or until EOF)."""
    reader = sock.makefile("rb")
    status = reader.readline().decode().strip()
    headers = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while (size := int(reader.readline().strip(), 16)) > 0:
            body += reader.read(size)
            reader.readline()
        reader.readline()
    elif "content-length" in headers:
        body = reader.read(int(headers["content-length"]))
    else:
        body = reader.read()
    return status, headers, body


def test_plain_http_clients(in_lab: Lab) -> None:
    """Two streamed requests on one kept-alive connection (the second with a chunked body and
    ``Expect: 100-continue``), then an HTTP/1.0 client: its stream ends with the connection."""
    payload = json.dumps(
        {
            "messages": [{"role": "user", "content": support.words(16, 5)}],
            "max_tokens": 3,
            "stream": True,
            "ignore_eos": True,
        }
    ).encode()
    with socket.create_connection(("127.0.0.1", in_lab.port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: lab\r\nX-Cache-Mode: split\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (len(payload), payload)
        )
        status, headers, body = _read_response(sock)
        assert status == "HTTP/1.1 200 OK" and headers.get("connection", "keep-alive") == "keep-alive"
        assert headers["content-type"].startswith("text/event-stream") and body.count(b"data: ") == 6
        assert body.rstrip().endswith(b"data: [DONE]")
        sock.sendall(
            b"POST /merged/v1/chat/completions HTTP/1.1\r\nHost: lab\r\nExpect: 100-continue\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        assert sock.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        half = len(payload) // 2
        sock.sendall(b"%x\r\n%b\r\n%x\r\n%b\r\n0\r\n\r\n" % (half, payload[:half], len(payload) - half, payload[half:]))
        status, headers, body = _read_response(sock)
        assert status == "HTTP/1.1 200 OK" and headers["connection"] == "close" and body.count(b"data: ") == 6
    with socket.create_connection(("127.0.0.1", in_lab.port), timeout=30) as sock:
        sock.sendall(
            b"POST /split/v1/chat/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%b" % (len(payload), payload)
        )
        status, headers, body = _read_response(sock)
        # aiohttp answers an HTTP/1.0 request in HTTP/1.0 (RFC 9110 §2.5 allows it)
        assert status in ("HTTP/1.0 200 OK", "HTTP/1.1 200 OK") and "transfer-encoding" not in headers
        assert body.count(b"data: ") == 6 and body.rstrip().endswith(b"data: [DONE]")


def test_upstream_errors_are_passed_on_with_their_status(in_lab: Lab) -> None:
    """A prompt longer than a slot's context: llama.cpp's 400 reaches the client in both modes
    (in split, from the prefill server, before anything is handed over)."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": support.words(4500, 4)}],
        "max_tokens": 4,
        "stream": True,
    }
    before = _metrics(in_lab)["kvswitch_lab:kv_handoffs_total"]
    with httpx.Client(trust_env=False, timeout=60) as client:
        for mode in ("merged", "split"):
            r = client.post(f"{in_lab.root}/v1/chat/completions", json=body, headers={"X-Cache-Mode": mode})
            assert r.status_code == 400, (mode, r.text)
            assert r.json()["error"]["type"] == "exceed_context_size_error"
    after = _metrics(in_lab)
    assert after["kvswitch_lab:kv_handoffs_total"] == before
    assert after['kvswitch_lab:request_errors_total{mode="split"}'] >= 1
    assert not list((in_lab.home / "state" / "lab" / "slots").iterdir())


def test_handoff_counter_moves_only_in_split(in_lab: Lab) -> None:
    """What lets the probe say "routing verified"."""
    url = f"{in_lab.root}/v1/chat/completions"
    m0 = _metrics(in_lab)
    for i in range(2):
        assert _stream(url, f"[{support.nonce()}] " + support.words(64, i), headers={"X-Cache-Mode": "merged"}).ok
    m1 = _metrics(in_lab)
    assert m1["kvswitch_lab:kv_handoffs_total"] == m0["kvswitch_lab:kv_handoffs_total"]
    assert m1['kvswitch_lab:requests_total{mode="merged"}'] == m0['kvswitch_lab:requests_total{mode="merged"}'] + 2
    for i in range(3):
        assert _stream(url, f"[{support.nonce()}] " + support.words(64, i), headers={"X-Cache-Mode": "split"}).ok
    m2 = _metrics(in_lab)
    assert m2["kvswitch_lab:kv_handoffs_total"] == m1["kvswitch_lab:kv_handoffs_total"] + 3
    assert m2['kvswitch_lab:requests_total{mode="split"}'] == m1['kvswitch_lab:requests_total{mode="split"}'] + 3
    # every server's own series, labelled by instance; the split pair did the split work
    for instance in ("merged", "prefill", "decode"):
        assert f'llamacpp:prompt_tokens_total{{instance="{instance}"}}' in m2
    grew = {
        i: m2[f'llamacpp:prompt_tokens_total{{instance="{i}"}}'] - m1[f'llamacpp:prompt_tokens_total{{instance="{i}"}}']
        for i in ("merged", "prefill", "decode")
    }
    assert grew["merged"] == 0 and grew["prefill"] >= 3 * 64 and grew["decode"] <= 3 * 2
    assert not list((in_lab.home / "state" / "lab" / "slots").iterdir())  # slot files deleted after use


def test_concurrent_split_requests_share_the_slots(in_lab: Lab) -> None:
    """More split streams at once than the servers have slots: each slot serves one request at
    a time (the others wait for a free one), every request gets its own hand-off, all complete."""
    before = _metrics(in_lab)["kvswitch_lab:kv_handoffs_total"]
    seen = len(_handoffs(in_lab))

    async def run() -> list[RequestResult]:
        async with support.fresh_client() as client:

            async def one(i: int) -> RequestResult:
                body = chat_body(
                    "m", f"[{support.nonce()}] " + support.words(200, 40 + i), 16, extra={"ignore_eos": True}
                )
                return await stream_chat(
                    client,
                    f"{in_lab.root}/split/v1/chat/completions",
                    body,
                    {},
                    mode="split",
                    stall_timeout=30,
                    total_timeout=60,
                )

            return list(await asyncio.gather(*(one(i) for i in range(manage.SLOTS + 2))))

    results = support.ok(asyncio.run(run()))
    assert all(r.token_events == 16 for r in results)
    assert _metrics(in_lab)["kvswitch_lab:kv_handoffs_total"] == before + manage.SLOTS + 2
    records = _handoffs(in_lab)[seen:]
    assert len(records) == manage.SLOTS + 2 and all(r["decode_prompt_n"] <= 2 for r in records)
    for key in ("prefill_slot", "decode_slot"):  # the slots were shared out, never one used twice at once
        assert 2 <= len({r[key] for r in records}) <= manage.SLOTS
    assert not list((in_lab.home / "state" / "lab" / "slots").iterdir())


def test_the_split_pair_really_hands_the_kv_cache_over(in_lab: Lab) -> None:
    """~1000-token prompts (cache-busted): on the decode server a cold request prefills them all;
    after the router's hand-off the decode server evaluates about one token, and its time to
    first token is a fraction of the cold prefill's."""
    decode = in_lab.server("decode")
    cold = [_stream(f"{decode}/v1/chat/completions", _long_prompt(10 + i), max_tokens=4) for i in range(3)]
    support.ok(cold)
    assert all(r.prompt_tokens is not None and r.prompt_tokens >= LONG_WORDS for r in cold)
    cold_ms = support.median_ms([r.ttft for r in cold])
    seen = len(_handoffs(in_lab))
    split = [_stream(f"{in_lab.root}/split/v1/chat/completions", _long_prompt(20 + i), max_tokens=4) for i in range(3)]
    support.ok(split)
    records = _handoffs(in_lab)[seen:]
    assert len(records) == 3
    for rec in records:
        assert rec["status"] == 200 and rec["error"] is None
        assert rec["prefill_prompt_n"] >= LONG_WORDS - 50  # the prefill server did the prefill
        assert rec["n_saved"] == rec["n_restored"] >= LONG_WORDS
        assert rec["bytes"] > 0
        assert rec["decode_prompt_n"] <= 2  # the decode server had the prompt in its KV cache
        assert rec["decode_cache_n"] >= LONG_WORDS
    handoff_ms = statistics.median(rec["decode_ttft_ms"] for rec in records)
    assert handoff_ms < cold_ms / 3, f"decode TTFT after the hand-off {handoff_ms:.1f} ms, cold {cold_ms:.1f} ms"
    m = _metrics(in_lab)
    assert m["kvswitch_lab:decode_ttft_seconds_count"] >= 3
    assert m["kvswitch_lab:slot_restore_seconds_count"] == m["kvswitch_lab:kv_handoffs_total"]
    assert not [p for p in (in_lab.home / "state" / "lab" / "slots").iterdir() if p.name.startswith(HANDOFF_PREFIX)]


def test_the_merged_server_prefills_in_chunks_of_the_profiles_size(in_lab: Lab) -> None:
    """llama.cpp's ``return_progress`` reports each prefill step: on the merged instance the
    steps are the lab profile's chunk size (n_batch = n_ubatch = 192)."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": _long_prompt(30)}],
        "max_tokens": 2,
        "stream": True,
        "return_progress": True,
        "ignore_eos": True,
    }
    processed = []
    with (
        httpx.Client(trust_env=False, timeout=60) as client,
        client.stream("POST", f"{in_lab.root}/merged/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:") and "prompt_progress" in line:
                progress = json.loads(line[5:])["prompt_progress"]
                processed.append(progress["processed"])
                total = progress["total"]
    steps = [b - a for a, b in itertools.pairwise(processed) if b > a]
    assert total >= LONG_WORDS and len(steps) >= 5
    assert set(steps[:-1]) == {CHUNK} and 0 < steps[-1] <= CHUNK


# -- the probe against the lab --------------------------------------------------------------------------------
def _probe(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(
        [
            "probe",
            "--profile",
            "lab",
            "--runs",
            "3",
            "--warmup",
            "1",
            "--prompt-tokens",
            "256",
            "--max-tokens",
            "8",
            "--no-gpu",
            "--format",
            "json",
            *extra,
        ]
    )
    report = envelope_data(capsys.readouterr().out, "probe")
    assert code == 0, report
    return report


def test_probe_measures_both_modes_of_the_lab(in_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """``kvswitch probe --profile lab``: both modes succeed, the hand-off counter moved in split
    only, so the report says "routing verified" — with each mode's own URL (``merged.url``,
    ``split.url``) and with the header on the one base URL. Which mode is faster is not
    asserted."""
    report = _probe(capsys)
    for mode in ("merged", "split"):
        m = report["modes"][mode]
        assert m["requests"] == 3 and m["failures"] == 0 and m["ttft_ms"]["median"] > 0
    assert report["modes"]["merged"]["metrics"]["split_transfers"] == 0
    assert report["modes"]["split"]["metrics"]["split_transfers"] == 3
    assert any(note.startswith("routing verified") for note in report["notes"]), report["notes"]

    report = _probe(capsys, "--routing", "header")
    assert all(report["modes"][m]["failures"] == 0 for m in ("merged", "split"))
    assert any(note.startswith("routing verified") for note in report["notes"]), report["notes"]


# -- down (last: it ends the module's lab) -------------------------------------------------------------------------
def test_down_leaves_nothing_behind(in_lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab_state = in_lab.home / "state" / "lab"
    pids = [p.pid for p in manage.status().processes]
    assert len(pids) == 4
    (lab_state / "slots" / f"{HANDOFF_PREFIX}left-over.bin").write_bytes(b"x")
    assert main(["lab", "down"]) == 0
    assert "stopped router" in capsys.readouterr().out
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"pid {pid} is still there"
    assert not list((lab_state / "slots").iterdir())
    assert not list(lab_state.glob("*.pid"))
    assert manage.status().empty
    assert main(["lab", "down"]) == 0
    assert "not running" in capsys.readouterr().out
    assert main(["lab", "status"]) == 1
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{in_lab.root}/health", trust_env=False, timeout=2)


# -- pidfiles that must not be obeyed (no servers needed) -----------------------------------------------------------
def _sleeper(*marks: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", *marks],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _pidfile(role: str, pid: int, start_time: int | None, port: int = 1) -> None:
    path = manage.lab_dir() / f"{role}.pid"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {"role": role, "pid": pid, "start_time": start_time, "url": f"http://127.0.0.1:{port}", "port": port}
        )
    )


def _start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def test_a_stale_pidfile_is_reported_never_obeyed(capsys: pytest.CaptureFixture[str]) -> None:
    other = _sleeper()  # a pid reused by a process that is not the lab's
    reused = _sleeper("kvswitch.lab.router")  # names the lab, but started after the pidfile's process
    ours = _sleeper("kvswitch.lab.llama")  # the one the pidfiles really recorded
    try:
        for _ in range(100):  # wait for the interpreters to have exec'd (their command lines)
            if all(b"time.sleep(60)" in Path(f"/proc/{p.pid}/cmdline").read_bytes() for p in (other, reused, ours)):
                break
            time.sleep(0.02)
        _pidfile("router", reused.pid, _start_ticks(reused.pid) - 100)
        _pidfile("merged", other.pid, _start_ticks(other.pid))
        _pidfile("prefill", ours.pid, _start_ticks(ours.pid))
        _pidfile("decode", 2**22 + 12345, 1)  # no such process
        (manage.slot_dir()).mkdir(parents=True, exist_ok=True)
        (manage.slot_dir() / f"{HANDOFF_PREFIX}abc.bin").write_bytes(b"kv")

        st = manage.status(check_health=False)
        assert {p.role: p.state for p in st.processes} == {
            "router": "stale",
            "merged": "stale",
            "prefill": "running",
            "decode": "gone",
        }
        assert not st.running
        with pytest.raises(manage.LabError, match="partly up"):
            manage.up(port=free_port())

        assert main(["lab", "down"]) == 0
        out = capsys.readouterr().out
        assert "router: stale pidfile, not obeyed" in out and "merged: stale pidfile, not obeyed" in out
        assert "stopped prefill" in out and "decode: no process" in out
        assert other.poll() is None and reused.poll() is None  # never signalled
        assert ours.wait(10) == -signal.SIGTERM  # the recorded process, and only it
        assert not list(manage.lab_dir().glob("*.pid"))
        assert not list(manage.slot_dir().iterdir())
    finally:
        for p in (other, reused, ours):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_without_the_lab_extra_up_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a, **k: None if name == "xllamacpp" else real(name, *a, **k)
    )
    assert main(["lab", "up", "--port", str(free_port())]) == 1
    err = capsys.readouterr().err
    assert "pip install 'kvswitch[lab]'" in err and "xllamacpp" in err
    assert main(["lab", "status"]) == 1  # status and down need no extra
    assert main(["lab", "down"]) == 0


def test_the_lab_profile_is_registered_and_updated() -> None:
    """No config yet: the lab's profile is written and made active (no profile was). Again
    with other URLs: updated, the user's other settings in it kept."""
    from kvswitch.config import edit_config, read_config
    from kvswitch.edits import Set

    action, active, activated = manage._register_profile(
        18080, "kvswitch-lab-tiny", 512, "http://127.0.0.1:1", "http://127.0.0.1:2"
    )
    assert (action, active, activated) == ("added", True, True)
    config = read_config()
    assert config.model.active_profile == "lab"
    lab = config.model.profiles["lab"]
    assert lab.split.url == "http://127.0.0.1:18080/split/v1" and lab.split.probe_url is None
    assert lab.merged.url == "http://127.0.0.1:18080/merged/v1"
    assert "probe_url" not in config.path.read_text(encoding="utf-8")
    edit_config([Set(("profiles", "lab", "request", "max_tokens"), 99)])
    assert manage._register_profile(18080, "kvswitch-lab-tiny", 512, "http://127.0.0.1:1", "http://127.0.0.1:2") == (
        "unchanged",
        True,
        False,
    )
    assert manage._register_profile(18090, "kvswitch-lab-medium", 256, "http://127.0.0.1:3", "http://127.0.0.1:4") == (
        "updated",
        True,
        False,
    )
    profile = read_config().model.profiles["lab"]
    assert profile.base_url == "http://127.0.0.1:18090/v1" and profile.model == "kvswitch-lab-medium"
    assert profile.merged.chunk_size == 256 and profile.split.decode_base_url == "http://127.0.0.1:4/v1"
    assert profile.request.max_tokens == 99


# -- router pieces without servers ---------------------------------------------------------------------------------
def test_metrics_of_several_servers_merge_into_one_valid_text() -> None:
    text = (
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 7\n"
        "# HELP x_seconds A histogram.\n# TYPE x_seconds histogram\n"
        'x_seconds_bucket{le="1"} 1\nx_seconds_bucket{le="+Inf"} 2\nx_seconds_sum 1.5\nx_seconds_count 2\n'
    )
    lines = _relabel([("merged", text), ("decode", text.replace(" 7", " 9"))])
    out = "\n".join(lines) + "\n"
    assert out.count("# TYPE llamacpp:prompt_tokens_total") == 1 and out.count("# TYPE x_seconds") == 1
    values = parse_metrics(out)
    assert values['llamacpp:prompt_tokens_total{instance="merged"}'] == 7
    assert values['llamacpp:prompt_tokens_total{instance="decode"}'] == 9
    assert values['x_seconds_bucket{instance="decode",le="+Inf"}'] == 2


def test_an_unreachable_server_is_a_502(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"

    async def run() -> list[httpx.Response]:
        router = Router(dead, dead, dead, tmp_path, prefill_slots=1, decode_slots=1)
        await router.start()
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
                body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
                return [
                    await client.post(f"{router.url}/v1/chat/completions", json=body, headers={"X-Cache-Mode": m})
                    for m in ("merged", "split")
                ] + [await client.get(f"{router.url}/health"), await client.get(f"{router.url}/metrics")]
        finally:
            await router.close()

    merged, split, health, metrics = asyncio.run(run())
    assert merged.status_code == 502 and "merged server" in merged.json()["error"]["message"]
    assert split.status_code == 502 and "prefill server" in split.json()["error"]["message"]
    assert health.status_code == 503
    values = parse_metrics(metrics.text)
    assert values['kvswitch_lab:upstream_up{instance="merged"}'] == 0
    assert values['kvswitch_lab:request_errors_total{mode="split"}'] == 1


# -- the command line, as a user runs it ------------------------------------------------------------------------------
def _ended_or_zombie(pid: int, timeout: float = 10.0) -> bool:
    """Gone from /proc, or a zombie waiting for init to reap it (its parent, the CLI, exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_lab_outlives_the_command_that_started_it() -> None:
    """``kvswitch lab up`` in a process of its own returns, the lab keeps serving; with no
    profile active before, the lab's becomes the active one; ``kvswitch lab down`` ends it."""
    require_lab()
    port = free_port()
    cmd = [sys.executable, "-m", "kvswitch", "lab"]
    out = subprocess.run(
        [*cmd, "up", "--port", str(port), "--format", "json"], capture_output=True, text=True, timeout=120
    )
    pids: list[int] = []
    try:
        assert out.returncode == 0, out.stderr
        data = envelope_data(out.stdout, "lab up")
        assert not data["already_up"] and data["profile"] == "added" and data["activated"]
        pids = [p["pid"] for p in data["status"]["processes"]]
        st = manage.status()
        assert st.running and st.healthy and [p.pid for p in st.processes] == pids
        r = _stream(
            f"http://127.0.0.1:{port}/v1/chat/completions", support.words(32, 1), headers={"X-Cache-Mode": "split"}
        )
        assert r.ok, r.error
        from kvswitch.config import read_config

        assert read_config().model.active_profile == "lab"
    finally:
        down = subprocess.run([*cmd, "down"], capture_output=True, text=True, timeout=60)
    assert down.returncode == 0 and "stopped router" in down.stdout, down.stdout + down.stderr
    assert len(pids) == 4 and all(_ended_or_zombie(pid) for pid in pids)
    assert manage.status().empty


def test_up_refuses_a_port_in_use() -> None:
    require_lab()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(manage.LabError, match="in use"):
            manage.up(port=busy.getsockname()[1])
    assert manage.status().empty


def test_a_failed_up_stops_what_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """The router cannot bind (the port was taken after the check): the servers already
    started are stopped, no pidfile stays, and the error quotes the router's log."""
    require_lab()
    started: list[int] = []
    real = manage._write_pidfile

    def record(role: str, pid: int, **info: Any) -> None:
        started.append(pid)
        real(role, pid, **info)

    monkeypatch.setattr(manage, "_check_port_free", lambda port: None)
    monkeypatch.setattr(manage, "_write_pidfile", record)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(manage.LabError, match="router exited") as info:
            manage.up(port=busy.getsockname()[1])
    assert "address already in use" in str(info.value).lower()
    assert len(started) == 3 and all(not Path(f"/proc/{pid}").exists() for pid in started)
    assert not list(manage.lab_dir().glob("*.pid"))
    assert manage.status().empty
