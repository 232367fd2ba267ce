"""run_probe + build_report (kvswitch.probe.runner/report) against the deterministic SSE test
server: interleaving, warm-up, concurrency, background load, routing, failures, GPU, metrics,
history and the key (D-9, D-12)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kvswitch.probe import report as report_mod
from kvswitch.probe.gpu import GpuSample, GpuSampler
from kvswitch.probe.metrics import (
    INTERESTING,
    MetricsSnapshot,
    deltas,
    metrics_url,
    parse_metrics,
    scrape,
)
from kvswitch.probe.runner import (
    ProbeSettings,
    chat_url,
    estimate,
    make_prompt,
    metric_deltas,
    resolve_routes,
    run_probe,
)
from kvswitch.testing.sse_server import SSEServer, Stamp
from tests.probe import fake_nvidia_smi

U0 = "GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf"


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=30, split_ttft_ms=60, itl_ms=2, tokens=3) as srv:
        yield srv


def settings(url: str, **kw: Any) -> ProbeSettings:
    base: dict[str, Any] = {
        "model": "test-model",
        "runs": 3,
        "warmup": 1,
        "max_tokens": 3,
        "prompt_tokens": 8,
        "gpu": False,
        "stall_timeout": 5.0,
        "request_timeout": 20.0,
    }
    return ProbeSettings(base_url=url, **{**base, **kw})


def probe(s: ProbeSettings, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    raw = asyncio.run(run_probe(s, **kw))
    return raw, report_mod.build_report(raw)


def by_arrival(srv: SSEServer) -> list[Stamp]:
    return sorted(srv.stamps, key=lambda st: st.received)


# -- order, warm-up, concurrency ------------------------------------------------------------------


def test_modes_are_interleaved(server: SSEServer) -> None:
    raw, rep = probe(settings(server.url, runs=4, warmup=1))
    modes = [st.mode for st in by_arrival(server)]
    # warm-up (merged, split), then each run starts with a different mode
    assert modes == ["merged", "split", "merged", "split", "split", "merged", "merged", "split", "split", "merged"]
    recorded = sorted(raw["results"], key=lambda r: r.started)
    assert [r.mode for r in recorded] == modes[2:]
    assert rep["modes"]["merged"]["requests"] == rep["modes"]["split"]["requests"] == 4


def test_warm_up_requests_are_not_in_the_stats(server: SSEServer) -> None:
    raw, rep = probe(settings(server.url, runs=3, warmup=2))
    assert server.requests == {"merged": 5, "split": 5}
    assert len(raw["results"]) == 6
    for mode in ("merged", "split"):
        assert rep["modes"][mode]["requests"] == 3
        assert rep["modes"][mode]["ttft_ms"]["count"] == 3 and len(rep["modes"][mode]["ttft_samples_ms"]) == 3
    warm = by_arrival(server)[:4]
    assert all(r.started > max(st.received for st in warm) for r in raw["results"])


def test_concurrency_sends_n_requests_at_once() -> None:
    with SSEServer(ttft_ms=150, itl_ms=1, tokens=2) as srv:
        raw, rep = probe(settings(srv.url, modes=("merged",), concurrency=4, runs=2, warmup=0))
    stamps = srv.stamps
    assert len(stamps) == 8

    def open_at(t: float) -> int:
        return sum(1 for st in stamps if st.received <= t < (st.first_content or 0))

    assert max(open_at(st.received) for st in stamps) == 4  # four at once, never more (batches)
    m = rep["modes"]["merged"]
    assert m["requests"] == 8 and m["failures"] == 0
    # the first batch opened connections, timed apart (one of the four reuses the /metrics scrape's)
    assert m["connect_ms"]["count"] >= 3
    # the requests of one batch started together
    starts = sorted(r.started for r in raw["results"])
    assert starts[3] - starts[0] < 0.1 and starts[4] - starts[3] > 0.1
    progress: list[tuple[int, int, str]] = []
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as srv:
        probe(
            settings(srv.url, modes=("merged",), concurrency=3, runs=2, warmup=1),
            progress=lambda d, t, m: progress.append((d, t, m)),
        )
    assert progress[-1] == (7, 7, "merged") and [p[0] for p in progress] == list(range(1, 8))


def test_background_decode_load_is_recorded_apart() -> None:
    with SSEServer(ttft_ms=30, itl_ms=4, tokens=60) as srv:
        raw, rep = probe(
            settings(srv.url, modes=("merged",), runs=2, warmup=0, max_tokens=3, background=1, background_max_tokens=60)
        )
    m = rep["modes"]["merged"]
    assert m["requests"] == 2 and m["ttft_ms"]["count"] == 2  # background requests are not in TTFT stats
    assert all(not r.background for r in raw["results"])
    assert srv.requests == {"merged": 4}  # 2 measured + 2 background streams
    assert raw["background_itl"]["merged"] and m["background_itl_ms"]["count"] == len(raw["background_itl"]["merged"])
    assert 1 <= m["background_itl_ms"]["median"] <= 60
    # the background streams were cut when their batch ended: only the measured ones finished
    assert len(srv.stamps) == 2
    assert m["output_tokens"] == 6


# -- the comparison ------------------------------------------------------------------------------


def test_ratio_of_split_to_merged_ttft() -> None:
    with SSEServer(ttft_ms=60, split_ttft_ms=120, itl_ms=1, tokens=2) as srv:
        _, rep = probe(settings(srv.url, runs=7, warmup=1, max_tokens=2))
    ratio = rep["comparison"]["ttft_median_ratio"]
    point, (lo, hi) = ratio["split/merged"], ratio["ci95"]
    assert lo <= point <= hi
    # 120 ms / 60 ms; a loaded machine adds about the same lateness to both, pulling it below 2
    assert 1.6 <= point <= 2.1
    assert lo >= 1.3 and hi <= 2.5
    assert rep["modes"]["merged"]["ttft_ms"]["median"] >= 60 - 2
    assert rep["modes"]["split"]["ttft_ms"]["median"] >= 120 - 2
    assert "itl_p99_ratio" in rep["comparison"]


# -- routing -------------------------------------------------------------------------------------


def test_header_routing_sends_x_cache_mode_and_says_routing_unverified(server: SSEServer) -> None:
    raw, rep = probe(settings(server.url, runs=2, warmup=0))
    assert server.requests == {"merged": 2, "split": 2}  # the server saw the header of each mode
    assert {st.mode for st in server.stamps} == {"merged", "split"}
    assert raw["routes"]["split"].headers["X-Cache-Mode"] == "split"
    assert "X-Cache-Mode" in rep["modes"]["split"]["routed_by"]
    assert rep["modes"]["merged"]["url"] == rep["modes"]["split"]["url"] == server.url + "/chat/completions"
    assert any(n.startswith("routing unverified") for n in rep["notes"])


def test_per_mode_endpoints_reach_two_servers_without_the_header() -> None:
    with SSEServer(ttft_ms=10, itl_ms=1, tokens=2) as a, SSEServer(ttft_ms=40, itl_ms=1, tokens=2) as b:
        raw, rep = probe(settings(a.url, runs=3, warmup=1, endpoints={"merged": a.url, "split": b.url}))
    # a request without X-Cache-Mode is counted as "merged" by the test server
    assert a.requests == {"merged": 4} and b.requests == {"merged": 4}
    assert all("X-Cache-Mode" not in r.headers for r in raw["routes"].values())
    assert rep["modes"]["split"]["url"] == b.url + "/chat/completions"
    assert rep["modes"]["split"]["routed_by"] == "per-mode endpoint"
    assert not any("routing unverified" in n for n in rep["notes"])
    assert rep["comparison"]["ttft_median_ratio"]["split/merged"] > 2


def test_failures_are_counted_with_their_causes() -> None:
    with SSEServer(ttft_ms=10, itl_ms=1, tokens=2) as ok, SSEServer(scenario="http-500") as bad:
        _, rep = probe(settings(ok.url, runs=3, warmup=1, endpoints={"merged": ok.url, "split": bad.url}))
    split, merged = rep["modes"]["split"], rep["modes"]["merged"]
    assert split["requests"] == 3 and split["failures"] == 3
    assert split["failure_causes"] == {"HTTP 500: test failure 500": 3}
    assert split["ttft_ms"]["count"] == 0 and split["ttft_samples_ms"] == []  # no failure counts as a time
    assert merged["failures"] == 0 and merged["ttft_ms"]["count"] == 3
    assert "ttft_median_ratio" not in rep["comparison"]


def test_split_without_a_split_deployment_stalls_and_fails() -> None:
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2, split_capable=False) as srv:
        _, rep = probe(settings(srv.url, runs=2, warmup=0, stall_timeout=0.3))
    assert rep["modes"]["split"]["failures"] == 2
    assert list(rep["modes"]["split"]["failure_causes"]) == ["stalled: no data for 0.3 s"]
    assert rep["modes"]["merged"]["failures"] == 0


def test_a_failing_background_request_does_not_stall_every_batch() -> None:
    # a background stream that fails at once must not make each batch wait stall_timeout for it
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as ok, SSEServer(scenario="http-500") as bad:
        s = settings(
            ok.url, runs=1, warmup=0, background=1, stall_timeout=1.5, endpoints={"merged": ok.url, "split": bad.url}
        )
        t = time.monotonic()
        probe(s)
        elapsed = time.monotonic() - t
    assert elapsed < 1.0, f"took {elapsed:.1f} s for two tiny batches"


# -- cancel --------------------------------------------------------------------------------------


class Flag:
    def __init__(self) -> None:
        self.flag = threading.Event()

    def is_set(self) -> bool:
        return self.flag.is_set()


def test_cancel_stops_early(server: SSEServer) -> None:
    cancel = Flag()

    def progress(done: int, total: int, mode: str) -> None:
        if done >= 3:
            cancel.flag.set()

    raw, rep = probe(settings(server.url, runs=10, warmup=1), cancel=cancel, progress=progress)
    assert raw["cancelled"] is True and rep["cancelled"] is True
    assert len(raw["results"]) == 1  # warm-up (2), one measured batch, then it stopped
    assert len(server.stamps) == 3


def test_cancel_before_anything_ran(server: SSEServer) -> None:
    cancel = Flag()
    cancel.flag.set()
    raw, rep = probe(settings(server.url), cancel=cancel)
    assert raw["cancelled"] and raw["results"] == [] and server.stamps == []
    assert rep["modes"]["merged"]["requests"] == 0 and rep["comparison"] == {}


# -- GPU ----------------------------------------------------------------------------------------


def test_gpu_na_without_nvidia_smi(server: SSEServer, tmp_path: Path) -> None:
    _, rep = probe(settings(server.url, runs=1, warmup=0, gpu=True, smi=str(tmp_path / "no" / "nvidia-smi")))
    assert rep["gpu_unavailable"] == "local: nvidia-smi not found" and rep["gpu_source"] is None
    for mode in ("merged", "split"):
        assert rep["modes"][mode]["gpu_memory"] == "n/a: local: nvidia-smi not found"
        assert rep["modes"][mode]["failures"] == 0  # the probe still ran
    assert rep["gpu_samples_per_s"] == 0


def test_gpu_turned_off(server: SSEServer) -> None:
    _, rep = probe(settings(server.url, runs=1, warmup=0, gpu=False))
    assert rep["modes"]["merged"]["gpu_memory"] == "n/a: GPU sampling turned off"


def test_gpu_numbers_with_the_stand_in(server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_SEQ", ",".join(str(1000 + 100 * i) for i in range(200)))  # a steady ramp
    smi = fake_nvidia_smi.install(tmp_path / "bin")
    _, rep = probe(settings(server.url, runs=3, warmup=1, gpu=True, smi=str(smi), gpu_interval_ms=25))
    assert rep["gpu_source"] == "nvidia-smi" and rep["gpu_unavailable"] is None
    assert rep["gpu_samples_per_s"] >= 10
    for mode in ("merged", "split"):
        mem = rep["modes"][mode]["gpu_memory"]
        assert isinstance(mem, dict) and list(mem) == [U0]
        row = mem[U0]
        assert row["instance"] == "local" and row["total_mib"] == 81559
        assert row["peak_mib"] > row["baseline_mib"] >= 1000
        assert row["delta_mib"] == row["peak_mib"] - row["baseline_mib"]
    assert report_mod.MEMORY_NOTE in rep["notes"]
    assert not any("same GPU" in n for n in rep["notes"])


def test_same_card_note_with_two_instances(server: SSEServer, tmp_path: Path) -> None:
    smi = fake_nvidia_smi.install(tmp_path / "bin")
    same = ["env", "FAKE_SMI_UUID=GPU-same"]
    _, rep = probe(
        settings(
            server.url,
            runs=1,
            warmup=0,
            gpu=True,
            smi=str(smi),
            gpu_interval_ms=25,
            gpu_prefixes={"prefill": same, "decode": same},
        )
    )
    assert any("report the same GPU (GPU-same)" in n and "only logically split" in n for n in rep["notes"])
    assert rep["modes"]["merged"]["gpu_memory"]["GPU-same"]["instance"] == "decode,prefill"


def _fake_raw(windows: dict[str, list[tuple[float, float]]], samples: list[tuple[float, float]]) -> dict[str, Any]:
    s = settings("http://127.0.0.1:9/v1", gpu=True)
    gpu = GpuSampler()
    gpu.source = "nvidia-smi"
    gpu.samples = [GpuSample(at, "local", U0, used, 80000.0) for at, used in samples]
    return {
        "settings": s,
        "routes": resolve_routes(s),
        "results": [],
        "windows": windows,
        "scraped": {m: [] for m in s.modes},
        "background_itl": {m: [] for m in s.modes},
        "gpu": gpu,
        "baseline_until": 0.0,
        "cancelled": False,
    }


def test_gpu_peak_of_a_mode_covers_only_its_own_batches() -> None:
    # with interleaved modes, [first window start, last window end] would cover the other mode too
    # merged ran in [1, 2] and [5, 6], split in [3, 4]; memory jumped only while split ran
    raw = _fake_raw(
        {"merged": [(1.0, 2.0), (5.0, 6.0)], "split": [(3.0, 4.0)]},
        [(-1.0, 1000), (1.5, 1000), (3.5, 9000), (5.5, 1000)],
    )
    rep = report_mod.build_report(raw)
    assert rep["modes"]["split"]["gpu_memory"][U0]["peak_mib"] == 9000
    assert rep["modes"]["merged"]["gpu_memory"][U0]["peak_mib"] == 1000


def test_gpu_no_samples_at_all() -> None:
    rep = report_mod.build_report(_fake_raw({"merged": [(1.0, 2.0)], "split": [(3.0, 4.0)]}, []))
    assert rep["modes"]["merged"]["gpu_memory"] == "n/a: no samples"


# -- /metrics ------------------------------------------------------------------------------------


def test_metrics_of_a_server_without_known_series(server: SSEServer) -> None:
    raw, rep = probe(settings(server.url, runs=2, warmup=0))
    assert rep["modes"]["merged"]["metrics"] == "n/a: the backend's /metrics has none of the series kvswitch knows"
    before, after = raw["scraped"]["split"][-1]
    assert before.error is None and after.values['kvswitch_test_requests_total{mode="split"}'] >= 2


def test_metrics_turned_off(server: SSEServer) -> None:
    _, rep = probe(settings(server.url, runs=1, warmup=0, metrics=False))
    assert rep["modes"]["split"]["metrics"] == "n/a: metrics turned off"


VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="m"}} {running}
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {usage}
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {queries}
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hits}
vllm:prefix_cache_hits_total{{engine="1",model_name="m"}} {hits}
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{engine="0",model_name="m"}} {prompt}
vllm:prompt_tokens_created{{engine="0",model_name="m"}} 1.7e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="m"}} {gen}
"""

LLAMACPP = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total {prompt}
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total {gen}
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio {usage}
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing {running}
"""


def test_parse_metrics_and_deltas_on_vllm_text() -> None:
    a = MetricsSnapshot(parse_metrics(VLLM.format(running=0, usage=0.1, queries=100, hits=10, prompt=500, gen=50)))
    b = MetricsSnapshot(parse_metrics(VLLM.format(running=2, usage=0.35, queries=400, hits=60, prompt=800, gen=90)))
    assert a.values['vllm:kv_cache_usage_perc{engine="0",model_name="m"}'] == 0.1
    assert a.pick("prefix_cache_hits") == 20  # summed over label sets
    d = deltas(a, b)
    assert d["kv_cache_usage"] == 0.35 and d["requests_running"] == 2  # gauges: the value after
    assert d["prefix_cache_hits"] == 100 and d["prefix_cache_queries"] == 300  # counters: after − before
    assert d["prompt_tokens"] == 300 and d["generation_tokens"] == 40
    assert d["split_transfers"] is None and d["sglang_cache_hit_rate"] is None
    assert set(d) == set(INTERESTING)
    total = metric_deltas([(a, b), (b, b)])
    assert total == {
        "kv_cache_usage": 0.35,
        "requests_running": 2,
        "prefix_cache_hits": 100,
        "prefix_cache_queries": 300,
        "prompt_tokens": 300,
        "generation_tokens": 40,
    }


def test_parse_metrics_and_deltas_on_llamacpp_text() -> None:
    a = MetricsSnapshot(parse_metrics(LLAMACPP.format(prompt=10, gen=5, usage=0.0, running=0)))
    b = MetricsSnapshot(parse_metrics(LLAMACPP.format(prompt=74, gen=21, usage=0.25, running=1)))
    d = deltas(a, b)
    assert d["prompt_tokens"] == 64 and d["generation_tokens"] == 16
    assert d["kv_cache_usage"] == 0.25 and d["requests_running"] == 1


def test_metric_deltas_errors() -> None:
    bad = MetricsSnapshot(error="http://x/metrics: HTTP 404")
    good = MetricsSnapshot(parse_metrics(LLAMACPP.format(prompt=1, gen=1, usage=0.0, running=0)))
    assert metric_deltas([]) == "no batches"
    assert metric_deltas([(bad, bad), (good, bad)]) == "n/a: http://x/metrics: HTTP 404"
    assert metric_deltas([(bad, bad), (good, good)])["prompt_tokens"] == 0  # type: ignore[index]


def test_metrics_url_and_scrape(server: SSEServer) -> None:
    assert metrics_url("http://h:8000/v1") == "http://h:8000/metrics"
    assert metrics_url("https://taotoken.net/api") == "https://taotoken.net/metrics"

    async def go() -> list[MetricsSnapshot]:
        async with httpx.AsyncClient(trust_env=False) as c:
            good = await scrape(c, server.url, {})
            refused = await scrape(c, "http://127.0.0.1:9/v1", {}, timeout=2)
        junk = httpx.MockTransport(lambda req: httpx.Response(200, text="not prometheus {{{"))
        gone = httpx.MockTransport(lambda req: httpx.Response(404, text="no"))
        async with httpx.AsyncClient(transport=junk) as c:
            not_text = await scrape(c, "http://127.0.0.1:1/v1", {})
        async with httpx.AsyncClient(transport=gone) as c:
            missing = await scrape(c, "http://127.0.0.1:1/v1", {})
        return [good, refused, not_text, missing]

    good, refused, not_text, missing = asyncio.run(go())
    assert good.error is None and "kvswitch_test_requests_total" not in good.values  # no requests yet
    assert refused.error == "http://127.0.0.1:9/metrics: ConnectError"
    assert not_text.error is not None and "not Prometheus text" in not_text.error
    assert missing.error == "http://127.0.0.1:1/metrics: HTTP 404"


def test_routing_verified_by_a_split_transfer_counter(server: SSEServer) -> None:
    raw, _ = probe(settings(server.url, runs=2, warmup=0))

    def snap(n: int) -> MetricsSnapshot:
        return MetricsSnapshot(
            parse_metrics(f"# TYPE kvswitch_lab:kv_handoffs_total counter\nkvswitch_lab:kv_handoffs_total {n}\n")
        )

    raw["scraped"] = {"merged": [(snap(5), snap(5))] * 2, "split": [(snap(5), snap(6)), (snap(6), snap(7))]}
    rep = report_mod.build_report(raw)
    assert rep["modes"]["split"]["metrics"]["split_transfers"] == 2
    assert any(n.startswith("routing verified") for n in rep["notes"])
    assert not any("routing unverified" in n for n in rep["notes"])


# -- history, the key ----------------------------------------------------------------------------


def test_history_round_trip_is_private(server: SSEServer) -> None:
    _, rep = probe(settings(server.url, runs=1, warmup=0))
    assert report_mod.load_history() == []
    report_mod.save_history(rep)
    report_mod.save_history({**rep, "cancelled": True})
    path = report_mod.history_path()
    assert path == Path(os.environ["KVSWITCH_HOME"]) / "history" / "probe.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    loaded = report_mod.load_history()
    assert loaded == [json.loads(json.dumps(rep)), json.loads(json.dumps({**rep, "cancelled": True}))]
    assert report_mod.load_history(limit=1)[0]["cancelled"] is True
    with path.open("a", encoding="utf-8") as f:
        f.write("{broken\n")
    assert len(report_mod.load_history()) == 2  # a damaged line is skipped


def test_the_api_key_never_appears_in_the_report() -> None:
    key = "sk-probe-SECRET-0123456789abcdef"
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2, api_key=key) as srv:
        raw, rep = probe(settings(srv.url, runs=2, warmup=1, api_key=key))
        _, wrong = probe(settings(srv.url, runs=1, warmup=0, api_key="sk-wrong"))
    assert rep["modes"]["merged"]["failures"] == 0 and rep["modes"]["split"]["failures"] == 0  # the key was sent
    text = json.dumps(rep, ensure_ascii=False)
    assert key not in text and "SECRET" not in text
    assert rep["settings"]["key"] == "set"
    assert raw["routes"]["merged"].headers["Authorization"] == f"Bearer {key}"
    assert wrong["modes"]["merged"]["failure_causes"] == {"HTTP 401: invalid api key": 1}
    report_mod.save_history(rep)
    assert key not in report_mod.history_path().read_text()


# -- small pieces ---------------------------------------------------------------------------------


def test_chat_url_conventions_and_routes() -> None:
    assert chat_url("http://h:8000/v1") == "http://h:8000/v1/chat/completions"
    assert chat_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_url("https://taotoken.net/api") == "https://taotoken.net/api/v1/chat/completions"
    assert chat_url("https://x/api", "includes-v1") == "https://x/api/chat/completions"
    s = ProbeSettings(base_url="http://h/v1", model="m", endpoints={"split": "http://router/v1"})
    routes = resolve_routes(s)
    assert routes["merged"].headers == {"X-Cache-Mode": "merged"} and routes["split"].headers == {}
    assert routes["split"].url == "http://router/v1/chat/completions"


def test_prompt_nonce_at_the_start() -> None:
    s = ProbeSettings(base_url="http://h/v1", model="m", prompt_tokens=5)
    assert make_prompt(s, "abc").startswith("[abc] ")
    assert len(make_prompt(s, None).split()) == 5


def test_estimate_counts_requests_and_remote_hosts() -> None:
    s = ProbeSettings(
        base_url="http://192.0.2.10:8000/v1",
        model="m",
        runs=10,
        warmup=2,
        concurrency=2,
        background=1,
        prompt_tokens=100,
        max_tokens=10,
        background_max_tokens=50,
    )
    requests, tokens, remote = estimate(s)
    assert requests == (2 + 20) * 2 + 1 * 10 * 2
    assert tokens == 22 * 2 * 110 + 10 * 2 * 150
    assert remote == ["192.0.2.10"]
    assert estimate(ProbeSettings(base_url="http://localhost:1/v1", model="m"))[2] == []
