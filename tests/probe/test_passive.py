"""``kvswitch probe --passive`` (kvswitch.probe.passive): the gateway's own timings of the traffic
it carries, read from a real gateway (in this process, or ``kvswitch gateway run`` as a child)
in front of two deterministic test upstreams — a fast merged one and a slow split one."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import httpx
import pytest

from kvswitch.cli import main
from kvswitch.gateway.server import Gateway
from kvswitch.gateway.settings import GatewaySettings
from kvswitch.literals import CONFIG_VERSION
from kvswitch.probe.passive import (
    NoTrafficError,
    PassiveError,
    PassiveSettings,
    Watched,
    build_passive_report,
    run_passive,
    watch,
)
from kvswitch.probe.report import build_report
from kvswitch.probe.runner import ProbeSettings, run_probe
from kvswitch.testing.sse_server import SSEServer

T = TypeVar("T")
TOKEN = "kvsgw-passive-test-token-7c41d2e09b5a"
"""The gateway's local token in these tests (a test value)."""
MERGED_MS, SPLIT_MS = 40, 120


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)


class Loop:
    """An event loop in a thread of its own, for a gateway in this process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="passive-gateway", daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def upstreams(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SSEServer, SSEServer]]:
    """merged (40 ms to the first token) and split (120 ms), and a config whose gateway token is
    read from KVSWITCH_GATEWAY_TOKEN, as the CLI reads it."""
    monkeypatch.setenv("KVSWITCH_GATEWAY_TOKEN", TOKEN)
    with (
        SSEServer(ttft_ms=MERGED_MS, itl_ms=2, tokens=4) as merged,
        SSEServer(ttft_ms=SPLIT_MS, itl_ms=2, tokens=4) as split,
    ):
        write_config(merged, split)
        yield merged, split


def write_config(merged: SSEServer, split: SSEServer) -> None:
    from kvswitch.config import config_file

    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'version = {CONFIG_VERSION}\nactive_profile = "p"\nmode = "merged"\n\n'
        f'[profiles.p]\nbase_url = "{merged.url}"\nmodel = "test-model"\nkey = "none"\n'
        f'url_convention = "includes-v1"\n'
        f'[profiles.p.merged]\nurl = "{merged.url}"\n[profiles.p.split]\nurl = "{split.url}"\n\n'
        '[gateway]\ntoken = "env:KVSWITCH_GATEWAY_TOKEN"\n'
    )


@pytest.fixture
def gateway(upstreams: tuple[SSEServer, SSEServer]) -> Iterator[str]:
    """A real gateway in this process in front of the two upstreams; its URL."""
    merged, split = upstreams
    loop = Loop()

    async def start() -> Gateway:
        g = Gateway(GatewaySettings(merged=merged.url, split=split.url, token=TOKEN, port=0, drain_timeout=1.0))
        await g.start()
        return g

    g = loop.call(start())
    try:
        yield g.url
    finally:
        loop.call(g.close(0.5))
        loop.close()


def chat(url: str, n: int = 1, path: str = "/v1/chat/completions", **headers: str) -> None:
    """``n`` streamed chat requests through the gateway, read to their end."""
    body = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    with httpx.Client(trust_env=False, timeout=30) as client:
        for _ in range(n):
            r = client.post(url + path, json=body, headers={"Authorization": f"Bearer {TOKEN}", **headers})
            assert r.status_code == 200 and "[DONE]" in r.text, r.text


def passive(url: str, **kw: Any) -> PassiveSettings:
    return PassiveSettings(**{"gateway": url, "token": TOKEN, "poll": 0.05, **kw})


def clean(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """What the command printed, checked to hold no token."""
    out, err = capsys.readouterr()
    assert TOKEN not in out and TOKEN not in err
    assert TOKEN[6:20] not in out + err  # no piece of it either
    return out, err


# -- agreement with the active probe ------------------------------------------------------------


def test_the_passive_figures_agree_with_an_active_probe_of_the_same_requests(
    gateway: str, upstreams: tuple[SSEServer, SSEServer]
) -> None:
    """The active probe sends its requests through the gateway (/merged/v1 and /split/v1) while
    the passive probe watches the gateway: both measure the very same requests, one at the
    client and one inside the gateway, so a disagreement can only be the passive path's (the
    mode a sample is filed under, the gateway's clock, the statistics) — not two sets of
    requests that happened to differ. It also lets the order of the three clocks be checked
    exactly: per request, the upstream's own time to its first token ≤ the gateway's TTFT ≤ the
    client's TTFT, so the medians are in that order too."""
    runs = 8
    found: dict[str, Any] = {}
    ready = threading.Event()

    def watcher() -> None:
        found["report"] = run_passive(passive(gateway, window=120, requests=runs), progress=lambda w, left: ready.set())

    t = threading.Thread(target=watcher)
    t.start()
    assert ready.wait(30), "the passive probe never read the gateway"
    active = build_report(
        asyncio.run(
            run_probe(
                ProbeSettings(
                    base_url=gateway,
                    model="test-model",
                    api_key=TOKEN,
                    runs=runs,
                    warmup=0,
                    max_tokens=4,
                    prompt_tokens=8,
                    gpu=False,
                    metrics=False,
                    endpoints={"merged": f"{gateway}/merged/v1", "split": f"{gateway}/split/v1"},
                    stall_timeout=10,
                    request_timeout=30,
                )
            )
        )
    )
    t.join(60)
    rep = found["report"]
    merged, split = upstreams
    server = {
        m: [st.first_content - st.received for st in srv.stamps if st.first_content is not None]
        for m, srv in (("merged", merged), ("split", split))
    }
    assert len(server["merged"]) == len(server["split"]) == runs
    for mode in ("merged", "split"):
        p, a = rep["modes"][mode], active["modes"][mode]
        assert p["requests"] == a["requests"] == runs and p["failures"] == a["failures"] == 0
        assert p["routes"] == {"path": runs}
        assert list(p["apis"]) == ["chat"] and p["apis"]["chat"]["ttft_ms"]["count"] == runs
        low, mid, high = statistics.median(server[mode]) * 1000, p["ttft_ms"]["median"], a["ttft_ms"]["median"]
        assert low <= mid <= high, (mode, low, mid, high)
        # token events as the gateway read them (tokens that came in one read are one event)
        assert runs <= p["output_tokens"] <= runs * 4 and p["itl_ms"]["count"] == p["output_tokens"] - runs
    # the split/merged comparison: the same verdict, and the passive ratio inside the bounds the
    # two other clocks put on it
    pr, ar = rep["comparison"]["ttft_median_ratio"], active["comparison"]["ttft_median_ratio"]
    assert pr["ci95"][0] > 1 and ar["ci95"][0] > 1  # merged faster, both intervals say so
    s_low, m_low = statistics.median(server["split"]) * 1000, statistics.median(server["merged"]) * 1000
    s_high, m_high = active["modes"]["split"]["ttft_ms"]["median"], active["modes"]["merged"]["ttft_ms"]["median"]
    assert s_low / m_high <= pr["split/merged"] <= s_high / m_low
    assert pr["ci95"][0] <= pr["split/merged"] <= pr["ci95"][1]
    assert rep["settings"]["passive"] is True and rep["settings"]["requests_per_mode"] == runs
    assert rep["notes"][0].startswith("passive: these are the gateway's real requests, not a controlled experiment")
    assert TOKEN not in json.dumps(rep)


# -- the command line, against a gateway started as kvswitch starts it ---------------------------


def test_the_running_gateway_is_found_and_its_traffic_shown(
    upstreams: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvswitch", "gateway", "run", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kvswitch gateway on "), line
        url = line.split()[3]
        chat(url, 3)  # the gateway's mode: merged, by default
        chat(url, 2, "/split/v1/chat/completions")
        chat(url, 1, **{"X-Cache-Mode": "split"})
        assert main(["probe", "--passive", "--past", "--window", "600"]) == 0
        out, err = clean(capsys)
        assert main(["probe", "--passive", "--past", "--window", "600", "--format", "json"]) == 0
        rep = json.loads(clean(capsys)[0])["data"]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    merged, split = upstreams
    assert out.startswith(f"kvswitch probe --passive · the gateway at {url} · looking back 600 s (")
    assert "all APIs" in out.splitlines()[0]
    assert "merged      3/3" in out and "split       3/3" in out
    assert "merged is faster to first token on this traffic (not a controlled experiment: see the notes)" in out
    assert f"merged: routed by the gateway (default 3) → {merged.url}" in out
    assert f"split: routed by the gateway (path 2, header 1) → {split.url}" in out
    assert "  chat             3/3 ok · TTFT median" in out
    assert "· passive: these are the gateway's real requests, not a controlled experiment" in out
    assert "nothing busts the prefix cache" in out and err == ""
    assert rep["modes"]["split"]["routes"] == {"path": 2, "header": 1}
    assert rep["modes"]["merged"]["ttft_ms"]["median"] >= MERGED_MS
    assert rep["modes"]["split"]["ttft_ms"]["median"] >= SPLIT_MS
    assert rep["settings"]["gateway"] == url and rep["settings"]["look"] == "past"
    assert not (Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl").exists()  # never kept


def test_a_window_without_traffic_says_so_and_exits_1(gateway: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--passive", "--gateway", gateway, "--window", "0.2"]) == 1
    out, err = clean(capsys)
    assert out == ""
    assert err == (
        f"kvswitch: no requests passed through the gateway at '{gateway}' during the 0.2 s window: "
        "nothing to measure. Send traffic through it (clients pinned with kvswitch gateway pin), "
        "or widen --window\n"
    )
    chat(gateway, 2)
    assert (
        main(
            [
                "probe",
                "--passive",
                "--gateway",
                gateway,
                "--past",
                "--window",
                "600",
                "--mode",
                "split",
                "--format",
                "json",
            ]
        )
        == 1
    )
    out, err = clean(capsys)
    assert out == "" and "no requests in split mode passed through the gateway" in err
    assert "in the last 600 s (2 of other modes or APIs did)" in err


def test_a_mode_without_samples_shows_as_such(gateway: str, capsys: pytest.CaptureFixture[str]) -> None:
    chat(gateway, 3, "/merged/v1/chat/completions")
    assert main(["probe", "--passive", "--gateway", gateway, "--past", "--window", "600"]) == 0
    out, _ = clean(capsys)
    assert "merged      3/3" in out and "split       0/0          –          –          –" in out
    assert "split: routed by the gateway (no requests in the window)" in out
    assert "· split: no requests in the window, so nothing to show or compare for it" in out
    assert "TTFT median split/merged" not in out
    assert main(["probe", "--passive", "--gateway", gateway, "--past", "--window", "600", "--format", "json"]) == 0
    rep = json.loads(clean(capsys)[0])["data"]
    split = rep["modes"]["split"]
    assert (split["requests"], split["ttft_ms"]["count"], split["ttft_samples_ms"], split["apis"]) == (0, 0, [], {})
    assert rep["comparison"] == {} and rep["modes"]["merged"]["ttft_ms"]["count"] == 3


def test_requests_end_the_window_once_each_mode_has_them(gateway: str, capsys: pytest.CaptureFixture[str]) -> None:
    chat(gateway, 2)  # before the window: not counted
    sender = threading.Timer(0.3, lambda: chat(gateway, 3, "/split/v1/chat/completions"))
    sender.start()
    try:
        code = main(
            [
                "probe",
                "--passive",
                "--gateway",
                gateway,
                "--requests",
                "3",
                "--mode",
                "split",
                "--api",
                "chat",
                "--format",
                "json",
            ]
        )
    finally:
        sender.join()
    assert code == 0
    rep = json.loads(clean(capsys)[0])["data"]
    assert list(rep["modes"]) == ["split"] and rep["modes"]["split"]["requests"] == 3
    assert rep["settings"]["window_s"] is None and rep["settings"]["apis"] == ["chat"]


def test_cancel_ends_the_window_early_with_what_came(gateway: str) -> None:
    chat(gateway, 1)
    cancel = threading.Event()

    def progress(w: Watched, left: float | None) -> None:
        if not cancel.is_set():
            chat(gateway, 2)  # arrives before the last read
            cancel.set()

    rep = run_passive(passive(gateway, window=600), cancel=cancel, progress=progress)
    assert rep["cancelled"] is True and rep["modes"]["merged"]["requests"] == 2
    assert any(n.startswith("the window was ended early, after ") for n in rep["notes"])


# -- refusals and errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--passive", "--runs", "5", "--no-gpu"],
            "--passive sends no request of its own, so --no-gpu, --runs do not go with it",
        ),
        (["--passive", "--base-url", "http://127.0.0.1:1/v1"], "so --base-url does not go with it"),
        (["--passive", "--combine", "a.json"], "so --combine does not go with it"),
        (["--window", "5"], "--window goes with --passive"),
        (["--gateway", "http://127.0.0.1:1", "--api", "chat"], "--gateway, --api go with --passive"),
        (["--passive", "--past", "--requests", "3"], "--past reads what the gateway kept at once"),
        (["--passive", "--window", "-1"], "--window takes a number of seconds"),
        (["--passive", "--requests", "0"], "--requests must be at least 1"),
        (["--passive", "--gateway", "http://192.0.2.7:18090"], "is not on this machine: the gateway's token is sent"),
        (["--passive", "--gateway", "ftp://127.0.0.1:1"], "--gateway 'ftp://127.0.0.1:1' is not an http(s) URL"),
    ],
)
def test_usage_errors(argv: list[str], message: str, upstreams: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", *argv]) == 2
    _, err = clean(capsys)
    assert message in err


def test_no_running_gateway_a_wrong_token_or_not_a_gateway(
    gateway: str,
    upstreams: tuple[SSEServer, SSEServer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["probe", "--passive"]) == 1
    assert "kvswitch: the gateway is not running (kvswitch gateway --detach starts it" in clean(capsys)[1]
    assert main(["probe", "--passive", "--gateway", upstreams[0].root, "--past"]) == 1
    assert f"the server at '{upstreams[0].root}' has no /samples route" in clean(capsys)[1]
    monkeypatch.setenv("KVSWITCH_GATEWAY_TOKEN", "kvsgw-another-token-0123456789abcdef")
    assert main(["probe", "--passive", "--gateway", gateway, "--past"]) == 1
    _, err = clean(capsys)
    assert f"the gateway at '{gateway}' refused the token (HTTP 401)" in err and "0123456789abcdef" not in err
    with pytest.raises(PassiveError, match=r"no gateway answers at 'http://127\.0\.0\.1:9'"):
        watch(passive("http://127.0.0.1:9", window=1))


# -- what the gateway's answers may hold -------------------------------------------------------


class Scripted(BaseHTTPRequestHandler):
    """A stand-in for /samples whose answers a test scripts: a gateway restarting, samples lost
    to the gateway's bound, entries that are not samples. (The real gateway cannot be made to do
    these on cue; everything else here runs against the real one.)"""

    answers: ClassVar[list[dict[str, Any]]] = []
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = json.dumps(self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def sample(seq: int, mode: str = "merged", **kw: Any) -> dict[str, Any]:
    return {
        "seq": seq,
        "time": time.time(),
        "mode": mode,
        "route": "default",
        "api": "chat",
        "ttft": 0.05,
        "itl": [0.01, 0.01],
        "tokens": 3,
        "outcome": "ok",
        "status": 200,
        **kw,
    }


def scripted(answers: list[dict[str, Any]]) -> tuple[str, Callable[[], None]]:
    """A :class:`Scripted` server: its URL, and how to stop it."""
    Scripted.answers, Scripted.seen = answers, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}", stop


def test_a_restart_lost_samples_and_entries_that_are_not_samples_are_noted() -> None:
    url, stop = scripted(
        [
            {"seq": 5, "started": 100.0, "samples": []},  # where the window begins
            {
                "seq": 10,
                "started": 100.0,
                "samples": [
                    sample(7, ttft=-1),
                    sample(8),
                    sample(9, "split"),
                    {"seq": "x"},
                    sample(10, api="chat\x1b[2J"),
                ],
            },  # seq 6 no longer kept
            {"seq": 2, "started": 200.0, "samples": []},  # a new gateway: its sequence starts again
            {"seq": 2, "started": 200.0, "samples": [sample(1), sample(2, outcome="client_disconnect", ttft=None)]},
            {"seq": 2, "started": 200.0, "samples": []},
        ]
    )
    try:
        w = watch(passive(url, window=0.3))
    finally:
        stop()
    assert Scripted.seen[0].endswith("since=4611686018427387904") and Scripted.seen[1].endswith("since=5")
    assert "/samples?since=0" in Scripted.seen
    assert w.lost == 1 and w.restarts == 1 and w.malformed == 3
    assert [x["seq"] for x in w.samples] == [8, 9, 1, 2]
    rep = build_passive_report(w, passive("http://127.0.0.1:1", window=0.3))
    merged = rep["modes"]["merged"]
    assert merged["requests"] == 3 and merged["failures"] == 1
    assert merged["failure_causes"] == {"the client closed the connection before the answer ended": 1}
    assert merged["ttft_ms"]["count"] == 2
    notes = "\n".join(rep["notes"])
    assert "up to 1 answer that ended in the window was no longer kept" in notes
    assert "the gateway restarted during the window (1×)" in notes
    assert "3 entries of the gateway's answer were not samples" in notes


def test_figures_are_grouped_by_api_and_the_token_never_appears() -> None:
    w = Watched(
        began=0.0,
        ended=10.0,
        samples=[
            sample(1, api="chat", ttft=0.040),
            sample(7, api="chat", ttft=0.5, itl=[], stream=False),
            sample(2, api="messages", ttft=0.080, itl=[0.02]),
            sample(3, api="messages", ttft=0.090, itl=[0.03]),
            sample(4, "split", api="responses", ttft=0.2),
            sample(5, "split", api="responses", outcome="upstream_error", ttft=0.3, itl=[]),
            sample(6, "split", api="responses", outcome="inband_error", error=TOKEN),
        ],
    )
    rep = build_passive_report(w, passive("http://127.0.0.1:18090", window=10, apis=("chat", "messages", "responses")))
    merged, split = rep["modes"]["merged"], rep["modes"]["split"]
    assert sorted(merged["apis"]) == ["chat", "messages"]
    assert merged["apis"]["messages"]["ttft_ms"]["median"] == pytest.approx(85.0)
    assert merged["apis"]["messages"]["itl_ms"]["count"] == 2 and merged["apis"]["chat"]["requests"] == 2
    # an answer that was not streamed is counted, but its time is no first token's
    assert merged["apis"]["chat"]["ttft_ms"]["count"] == 1 and 500.0 not in merged["ttft_samples_ms"]
    assert "1 answer was not streamed: counted, but not in TTFT" in "\n".join(rep["notes"])
    assert merged["tpot_ms"]["count"] == 3 and merged["e2e_ms"]["min"] == pytest.approx(60.0)
    assert split["apis"]["responses"]["requests"] == 3 and split["apis"]["responses"]["failures"] == 2
    assert split["ttft_samples_ms"] == [pytest.approx(200.0)]  # a failed answer never counts as a time
    assert set(split["failure_causes"]) == {"the upstream broke the stream", "an error event inside the answer"}
    assert rep["settings"]["apis"] == ["chat", "messages", "responses"]
    assert TOKEN not in json.dumps(rep)
    from kvswitch.cli.probe import render_text

    text = render_text(rep)
    assert "  messages         2/2 ok · TTFT median 85.0 ms" in text
    assert "  responses        1/3 ok · TTFT median 200.0 ms" in text
    assert "1 failed: the upstream broke the stream" in text


def test_nothing_but_its_own_answers_counts(gateway: str) -> None:
    """Errors the gateway answers itself (a refused token, an unknown route) are no samples."""
    with httpx.Client(trust_env=False, timeout=10) as client:
        assert client.post(gateway + "/v1/chat/completions", json={}).status_code == 401
        assert client.get(gateway + "/nowhere", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
    with pytest.raises(NoTrafficError, match="no requests passed through the gateway"):
        run_passive(passive(gateway, window=600, past=True))


def test_the_first_ctrl_c_ends_the_window_and_shows_what_came(upstreams: Any) -> None:
    import signal

    url, stop = scripted(
        [{"seq": 0, "started": 1.0, "samples": []}, {"seq": 1, "started": 1.0, "samples": [sample(1)]}]
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvswitch", "probe", "--passive", "--gateway", url, "--window", "600"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while len(Scripted.seen) < 3:  # the window is being watched: Ctrl-C is its to take
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        stop()
    assert proc.returncode == 0, err
    assert "merged      1/1" in out and "· the window was ended early, after " in out
    assert TOKEN not in out + err


def test_a_long_answer_whose_gaps_the_gateway_thinned_keeps_its_length() -> None:
    w = Watched(
        began=0.0,
        ended=1.0,
        samples=[sample(1, ttft=0.05, itl=[0.01, 0.03], itl_count=10), sample(2, ttft=0.05, itl=[0.01, 0.03])],
    )
    e2e = build_passive_report(w, passive("http://127.0.0.1:1", window=1))["modes"]["merged"]["e2e_ms"]
    # 50 + 10 + 30 ms for the whole answer; 50 + 20 ms (the kept gaps' mean) × 10 gaps for the thinned one
    assert e2e["count"] == 2 and e2e["min"] == pytest.approx(90.0) and e2e["median"] == pytest.approx(170.0)
