"""The gateway as a process: the real ``python -m kvswitch gateway run`` in front of two test
upstreams, driven over its real control socket (status, stop, SIGTERM's drain, SIGKILL's
leftovers, a second gateway, a taken port, --detach)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch import procs
from kvswitch.cli import main
from kvswitch.gateway import control
from kvswitch.literals import CONFIG_VERSION
from kvswitch.testing.sse_server import SSEServer

TOKEN = "kvsgw-process-test-token-0123456789"
READY = "kvswitch gateway on "


def write_config(merged: SSEServer, split: SSEServer, *, extra: str = "", mode: str = "merged") -> Path:
    """A config whose active profile ``p`` has ``merged``'s and ``split``'s URLs, and whose
    gateway token is read from KVSWITCH_GATEWAY_TOKEN."""
    from kvswitch.config import config_file

    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'version = {CONFIG_VERSION}\nactive_profile = "p"\nmode = "{mode}"\n\n'
        f'[profiles.p]\nbase_url = "{merged.url}"\nmodel = "test-model"\nkey = "none"\n'
        f'[profiles.p.merged]\nurl = "{merged.url}"\n[profiles.p.split]\nurl = "{split.url}"\n\n'
        f'[gateway]\ntoken = "env:KVSWITCH_GATEWAY_TOKEN"\n{extra}'
    )
    return path


@pytest.fixture
def upstreams(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SSEServer, SSEServer]]:
    monkeypatch.setenv("KVSWITCH_GATEWAY_TOKEN", TOKEN)
    with SSEServer(ttft_ms=1, itl_ms=1, tokens=2) as merged, SSEServer(ttft_ms=1, itl_ms=1, tokens=2) as split:
        write_config(merged, split)
        yield merged, split


class Running:
    """``python -m kvswitch gateway run ARGS`` as a child, its ready line read."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kvswitch", "gateway", "run", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(READY):
            self.proc.kill()
            raise AssertionError(f"no ready line: {line!r} {self.proc.communicate()[1]}")
        self.line = line.strip()
        self.url = line[len(READY) :].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1])

    def finish(self, timeout: float = 20) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)


@pytest.fixture
def gateway(upstreams: tuple[SSEServer, SSEServer]) -> Iterator[Running]:
    g = Running()
    try:
        yield g
    finally:
        g.kill()


def chat(port: int, *, headers: dict[str, str] | None = None, path: str = "/v1/chat/completions") -> tuple[int, str]:
    """One streamed chat request with the token; (status, the X-KVSwitch-Mode header)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        body = json.dumps({"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
        conn.request(
            "POST",
            path,
            body,
            {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **(headers or {})},
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status, resp.getheader("X-KVSwitch-Mode") or ""
    finally:
        conn.close()


def hits(server: SSEServer) -> int:
    return sum(1 for p, _ in server.auth_log if p.endswith("/chat/completions"))


def test_run_status_and_stop_over_the_real_socket(gateway: Running, capsys: pytest.CaptureFixture[str]) -> None:
    assert gateway.line == f"kvswitch gateway on {gateway.url} (profile p, mode merged); Ctrl-C stops it"
    path = control.socket_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(control.state_file().read_text())
    assert record["pid"] == gateway.proc.pid and record["url"] == gateway.url
    assert stat.S_IMODE(control.state_file().stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["gateway", "status", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["command"], doc["ok"]) == ("gateway status", True)  # kvswitch's JSON envelope
    st = doc["data"]
    assert (st["running"], st["pid"], st["url"], st["mode"], st["profile"]) == (
        True,
        gateway.proc.pid,
        gateway.url,
        "merged",
        "p",
    )
    assert st["in_flight"] == 0 and st["pinned"] == []
    assert main(["gateway", "status"]) == 0
    text = capsys.readouterr().out
    assert f"kvswitch gateway on {gateway.url} (pid {gateway.proc.pid})" in text and "mode      merged" in text
    assert main(["gateway", "stop"]) == 0
    assert capsys.readouterr().out == f"stopped the gateway at {gateway.url} (pid {gateway.proc.pid})\n"
    code, out, _ = gateway.finish()
    assert code == 0 and out.strip() == "kvswitch gateway stopped"
    assert not control.state_file().exists() and not path.exists()
    assert main(["gateway", "status"]) == 1
    assert "the gateway is not running" in capsys.readouterr().out
    assert main(["gateway", "stop"]) == 0
    assert capsys.readouterr().out == "the gateway is not running\n"


def test_switch_tells_the_running_gateway_at_once(
    gateway: Running, upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    merged, split = upstreams
    assert chat(gateway.port) == (200, "merged; reason=default")
    assert (hits(merged), hits(split)) == (1, 0)
    capsys.readouterr()
    assert main(["switch", "split"]) == 0
    assert "gateway: now split for pinned clients and new requests" in capsys.readouterr().out
    info = control.running()
    assert info is not None and info.mode == "split"
    assert chat(gateway.port) == (200, "split; reason=default")  # no header: the new mode
    assert (hits(merged), hits(split)) == (1, 1)
    assert main(["switch", "merged"]) == 0
    assert "gateway: now merged for pinned clients and new requests" in capsys.readouterr().out
    assert chat(gateway.port) == (200, "merged; reason=default")
    assert (hits(merged), hits(split)) == (2, 1)


def test_profile_use_reloads_the_running_gateway(
    gateway: Running, upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    merged, split = upstreams
    from kvswitch.config import config_file

    with config_file().open("a") as f:  # q: both modes on the split server
        f.write(f'\n[profiles.q]\nbase_url = "{split.url}"\nmodel = "test-model"\nkey = "none"\n')
    capsys.readouterr()
    assert main(["profile", "use", "q"]) == 0
    assert "gateway: now serving profile q for new requests" in capsys.readouterr().out
    info = control.running()
    assert info is not None and info.profile == "q" and info.upstreams["merged"] == split.url
    assert chat(gateway.port) == (200, "merged; reason=default")
    assert (hits(merged), hits(split)) == (0, 1)


def test_sigterm_drains_a_stream_in_flight_then_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVSWITCH_GATEWAY_TOKEN", TOKEN)
    with SSEServer(ttft_ms=300, itl_ms=100, tokens=6) as slow:
        write_config(slow, slow)
        g = Running()
        try:
            result: list[tuple[int, str]] = []
            t = threading.Thread(target=lambda: result.append(chat(g.port)))
            t.start()
            while not [s for s in slow.stamps if s.received]:  # the request reached the upstream
                threading.Event().wait(0.02)
            g.proc.send_signal(signal.SIGTERM)
            t.join(20)
            assert result == [(200, "merged; reason=default")]  # finished, not cut
            code, _, _ = g.finish()
            assert code == 0
            assert not control.state_file().exists()
        finally:
            g.kill()


def test_sigint_stops_it_with_exit_0(gateway: Running) -> None:
    gateway.proc.send_signal(signal.SIGINT)
    code, out, err = gateway.finish()
    assert code == 0 and "kvswitch gateway stopped" in out and "Traceback" not in err


def test_files_left_by_a_killed_gateway_are_stale_and_cleaned(
    gateway: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway.proc.send_signal(signal.SIGKILL)
    gateway.proc.wait(10)
    assert control.state_file().exists() and control.socket_path().exists()  # what SIGKILL leaves
    assert main(["gateway", "status"]) == 1
    assert not control.state_file().exists() and not control.socket_path().exists()
    again = Running()  # and a new gateway starts where it was
    try:
        assert control.running() is not None
    finally:
        again.kill()


def test_a_second_gateway_for_the_same_home_is_refused(gateway: Running) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "kvswitch", "gateway", "run", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 1
    assert f"a gateway already runs for this kvswitch home: {gateway.url} (pid {gateway.proc.pid})" in second.stderr
    info = control.running()
    assert info is not None and info.pid == gateway.proc.pid  # the first one is untouched


def test_a_taken_port_is_refused_naming_it(
    upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["gateway", "run", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use" in err
    assert not control.state_file().exists() and control.running() is None


def test_detach_status_stop_round_trip(
    upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    from kvswitch.gateway.process import log_path

    assert main(["gateway", "--detach", "--port", "0"]) == 0
    out = capsys.readouterr().out
    info = control.running()
    assert info is not None
    assert out.startswith(f"kvswitch gateway on {info.url} (pid {info.pid}, profile p, mode merged)")
    assert info.pid != os.getpid()
    try:
        assert chat(int(info.url.rsplit(":", 1)[1]))[0] == 200
        assert main(["gateway", "status"]) == 0
        assert main(["gateway", "--detach", "--port", "0"]) == 1  # one per home
        assert "a gateway already runs" in capsys.readouterr().err
        log = log_path()
        assert stat.S_IMODE(log.stat().st_mode) == 0o600 and READY in log.read_text()
    finally:
        assert main(["gateway", "stop"]) == 0
    assert control.running() is None
    assert not Path(f"/proc/{info.pid}").exists() or Path(f"/proc/{info.pid}/stat").read_text().split()[2] == "Z"


def test_a_non_loopback_listen_address_warns(
    upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:  # refused after the warning: nothing listens wider in a test
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        taken.listen()
        assert main(["gateway", "run", "--listen", "0.0.0.0", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert "warning: listening on 0.0.0.0: other machines can reach the gateway" in err
    assert "the local token is then the only guard" in err


def test_stop_falls_back_to_sigterm_when_the_socket_does_not_answer(
    gateway: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    control.socket_path().unlink()  # the control socket is gone; the process still serves
    assert main(["gateway", "stop"]) == 0
    assert f"stopped the gateway at {gateway.url} (pid {gateway.proc.pid})" in capsys.readouterr().out
    code, _, _ = gateway.finish()
    assert code == 0 and not control.state_file().exists()


def test_stop_never_signals_a_pid_that_is_not_the_gateway(upstreams: tuple[SSEServer, SSEServer]) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        record = control.Record(
            pid=bystander.pid,
            start_time=procs.start_time(bystander.pid),
            url="http://127.0.0.1:1",
            port=1,
            socket=control.socket_path(),
        )
        control.write_record(record)
        assert control.stop(timeout=1) is None  # nobody holds the lock: stale, removed
        assert bystander.poll() is None and not control.state_file().exists()
        control.write_record(record)
        fd = control.hold_lock()  # something holds the lock, but the pid is not a gateway
        assert fd is not None
        try:
            assert control.stop(timeout=1) is None
        finally:
            os.close(fd)
        assert bystander.poll() is None  # never signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_status_and_the_state_files_never_hold_the_upstream_key_or_the_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The running gateway knows the profile's key and its own token; its status (text, JSON,
    the control socket's raw reply), its record file and its own output carry neither."""
    key = "sk-upstream-never-shown-0123456789abcdef"
    monkeypatch.setenv("KVSWITCH_GATEWAY_TOKEN", TOKEN)
    monkeypatch.setenv("UPSTREAM_KEY", key)
    with SSEServer(ttft_ms=1, itl_ms=1, tokens=2) as merged, SSEServer(ttft_ms=1, itl_ms=1, tokens=2) as split:
        path = write_config(merged, split)
        path.write_text(path.read_text().replace('key = "none"', 'key = "env:UPSTREAM_KEY"'))
        g = Running()
        try:
            assert chat(g.port)[0] == 200
            assert any(key in auth for _, auth in merged.auth_log)  # it is sent upstream
            capsys.readouterr()
            assert main(["gateway", "status", "--format", "json"]) == 0
            assert main(["gateway", "status"]) == 0
            shown = capsys.readouterr()
            raw = json.dumps(control.request({"op": "status"}))
            record = control.state_file().read_text()
            assert main(["gateway", "stop"]) == 0
            code, out, err = g.finish()
        finally:
            g.kill()
    assert code == 0
    for where, text in {
        "status": shown.out + shown.err,
        "control reply": raw,
        "record": record,
        "gateway output": out + err,
    }.items():
        assert key not in text and TOKEN not in text, where
