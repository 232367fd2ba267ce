"""GPU memory sampling (kvswitch.probe.gpu) through the real code path, with a stand-in
``nvidia-smi`` that prints the documented CSV formats (D-10, reference §5.5)."""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kvswitch.probe.gpu import QUERY, GpuSample, GpuSampler, parse_smi_line, per_process
from tests.probe import fake_nvidia_smi

U0 = "GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf"
U2 = "GPU-f7c1496c-b7f5-b1d2-78ea-68826f778059"


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML must not win over the stand-in on a machine that has it."""
    monkeypatch.setitem(sys.modules, "pynvml", None)


@pytest.fixture
def pidfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "smi-pids"
    monkeypatch.setenv("FAKE_SMI_PIDFILE", str(path))
    return path


@pytest.fixture
def smi(tmp_path: Path, pidfile: Path) -> str:
    """``<tmp>/bin/nvidia-smi``: runs the stand-in with this interpreter (``exec``, so the
    sampler's process is the stand-in itself)."""
    return str(fake_nvidia_smi.install(tmp_path / "bin"))


def started(pidfile: Path) -> list[str]:
    return pidfile.read_text().split() if pidfile.exists() else []


def wait_for(pred: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


@contextmanager
def sampling(**kw: object) -> Iterator[GpuSampler]:
    sampler = GpuSampler(**kw)  # type: ignore[arg-type]
    sampler.start()
    try:
        yield sampler
    finally:
        sampler.stop()


# -- parse_smi_line: every documented form -------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "used", "total"),
    [
        (f"0, {U0}, 529, 81559", 529.0, 81559.0),  # noheader,nounits (what the sampler asks for)
        (f"0, {U0}, 529 MiB, 81559 MiB", 529.0, 81559.0),  # units kept
        (f"2, {U2}, 74767, 81559\n", 74767.0, 81559.0),  # with its line end
        (f"0, {U0}, 529, 81559\r\n", 529.0, 81559.0),
        (f"0,{U0},12.5,100", 12.5, 100.0),  # no spaces
        (f"0, {U0}, [N/A], [N/A]", None, None),  # unified memory (GB10)
        (f"0, {U0}, [Not Supported], 81559", None, 81559.0),
        (f"0, {U0}, [Unknown Error], [Insufficient Permissions]", None, None),
        ("0, MIG-5c4c0e3a-2b0e-5d7c-9a1e-0f7e6d5c4b3a, 1024, 20096", 1024.0, 20096.0),  # a MIG instance
        (f"0, MIG-{U0}/1/0, [N/A], [N/A]", None, None),  # very old drivers' MIG naming
    ],
)
def test_parse_smi_line_documented_forms(line: str, used: float | None, total: float | None) -> None:
    sample = parse_smi_line(line, 1.5, "local")
    assert sample is not None
    assert sample.used_mib == used and sample.total_mib == total
    assert sample.uuid.startswith(("GPU-", "MIG-")) and sample.at == 1.5 and sample.instance == "local"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "\n",
        "index, uuid, memory.used [MiB], memory.total [MiB]",  # a header
        "memory.used [MiB], memory.total [MiB], uuid",
        f"74698, 81559, {U0}",  # another field order
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "No devices were found",
        "0, not-a-uuid, 1, 2",
        f"0, {U0}, 5",  # too few fields
        f"0, {U0}, 5, 6, 7",  # too many
        f"x, {U0}, 1, 2",  # index not a number
        f"-1, {U0}, 1, 2",
    ],
)
def test_parse_smi_line_rejects_other_lines(line: str) -> None:
    assert parse_smi_line(line, 0.0, "local") is None


def test_a_non_number_memory_field_is_none() -> None:
    sample = parse_smi_line(f"0, {U0}, lots, 81559", 0.0, "x")
    assert sample == GpuSample(0.0, "x", U0, None, 81559.0)


# -- the sampler: one long-running process ---------------------------------------------------


def test_one_process_for_the_whole_run_and_at_least_10_samples_per_s(smi: str, pidfile: Path) -> None:
    with sampling(interval_ms=50, smi=smi) as s:
        assert s.source == "nvidia-smi" and s.unavailable is None
        assert wait_for(lambda: len(s.samples) >= 2 and s.samples[-1].at - s.samples[0].at >= 1.0, timeout=2.8)
        assert started(pidfile) and len(started(pidfile)) == 1  # one process, not one per sample
        rate = s.rate()
    assert rate >= 10, rate
    assert len(started(pidfile)) == 1
    assert {x.uuid for x in s.samples} == {U0}


def test_the_command_line_asks_for_the_csv_loop(smi: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = tmp_path / "args"
    fake_nvidia_smi.install(Path(smi).parent, record_args=args)
    with sampling(interval_ms=70, smi=smi) as s:
        assert wait_for(lambda: bool(s.samples))
    assert args.read_text().split() == [*QUERY, "-lms", "70"]


def test_the_process_is_gone_after_stop(smi: str, pidfile: Path) -> None:
    with sampling(interval_ms=50, smi=smi) as s:
        assert wait_for(lambda: bool(s.samples))
    pid = int(started(pidfile)[0])
    assert wait_for(lambda: not _alive(pid), timeout=2)
    n = len(s.samples)
    time.sleep(0.15)
    assert len(s.samples) == n  # nothing more arrives


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_baseline_peak_and_delta_per_uuid_with_a_ramp(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_SEQ", "1000,1000,1000,5000,9000,9000,3000")
    monkeypatch.setenv("FAKE_SMI_COUNT", "7")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: len(s.samples) == 7)
    at = [x.at for x in s.samples]
    assert [x.used_mib for x in s.samples] == [1000, 1000, 1000, 5000, 9000, 9000, 3000]
    assert at == sorted(at)
    mem = s.memory(at[2], [(at[3], at[5])])
    assert mem == {
        U0: {"instance": "local", "baseline_mib": 1000.0, "peak_mib": 9000.0, "delta_mib": 8000.0, "total_mib": 81559.0}
    }
    later = s.memory(at[5], [(at[6], at[6] + 1)])[U0]
    assert later["baseline_mib"] == 9000 and later["peak_mib"] == 3000 and later["delta_mib"] == -6000
    # no reading before the baseline time: the first reading is the baseline
    first = s.memory(at[0] - 1, [(at[0], at[6])])[U0]
    assert first["baseline_mib"] == 1000 and first["peak_mib"] == 9000
    # an empty window: no peak, no delta
    empty = s.memory(at[0], [(at[6] + 10, at[6] + 20)])[U0]
    assert empty["peak_mib"] is None and empty["delta_mib"] is None
    assert len(s.window(at[3], at[5])) == 3
    # a mode's own batches only: the 9000 MiB readings between its two windows do not count
    own = s.memory(at[2], [(at[3], at[3]), (at[6], at[6])])[U0]
    assert own["peak_mib"] == 5000 and own["delta_mib"] == 4000
    assert s.memory(at[2], [])[U0]["peak_mib"] is None


def test_eight_gpus_each_tracked(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", "eight")
    monkeypatch.setenv("FAKE_SMI_SEQ", "100,600")
    monkeypatch.setenv("FAKE_SMI_COUNT", "3")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: len(s.samples) == 24)
    at = [x.at for x in s.samples]
    mem = s.memory(at[0], [(at[8], at[-1])])
    assert len(mem) == 8
    for uuid, row in mem.items():
        i = [x.uuid for x in s.samples[:8]].index(uuid)
        assert row["baseline_mib"] == 100 + 1000 * i
        assert row["peak_mib"] == 600 + 1000 * i and row["delta_mib"] == 500
    assert s.bad_lines == 0


@pytest.mark.parametrize("mode", ["na", "mig-rows"])
def test_bracketed_fields_become_none_without_a_crash(smi: str, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", mode)
    monkeypatch.setenv("FAKE_SMI_COUNT", "2")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: len(s.samples) >= 2)
    assert s.bad_lines == 0
    assert all(x.used_mib is None for x in s.samples)
    at = s.samples[-1].at
    mem = s.memory(0.0, [(0.0, at)])
    for row in mem.values():
        assert row["baseline_mib"] is None and row["peak_mib"] is None and row["delta_mib"] is None
    if mode == "mig-rows":
        assert sorted(mem) == ["MIG-5c4c0e3a-2b0e-5d7c-9a1e-0f7e6d5c4b3a", f"MIG-{U0}/1/0"]
        assert mem[f"MIG-{U0}/1/0"]["total_mib"] == 20096


def test_mig_parent_row_is_read(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", "mig")
    monkeypatch.setenv("FAKE_SMI_COUNT", "1")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: len(s.samples) == 1)
    assert s.samples[0].uuid == U0 and s.samples[0].used_mib == 1000


def test_garbage_lines_are_counted(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", "garbage")
    monkeypatch.setenv("FAKE_SMI_COUNT", "3")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: len(s.samples) == 3 and s.bad_lines == 12)  # 4 non-blank bad lines a sample
        assert s._readers[0].bad_lines == 12
    assert [x.uuid for x in s.samples] == [U0] * 3


def test_a_hanging_nvidia_smi_gives_no_samples_and_still_stops(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", "hang")
    s = GpuSampler(interval_ms=20, smi=smi)
    s.start()
    time.sleep(0.3)
    t = time.monotonic()
    s.stop()
    assert time.monotonic() - t < 2.5
    assert s.samples == [] and s.rate() == 0.0
    assert s.memory(0.0, [(0.0, 1e12)]) == {}


def test_stop_closes_the_pipes(smi: str) -> None:
    # an open pipe leaks an fd per instance per probe (and is a ResourceWarning, an error here)
    s = GpuSampler(interval_ms=20, smi=smi, prefixes={"a": [], "b": []})
    s.start()
    try:
        assert wait_for(lambda: len({x.instance for x in s.samples}) == 2)
    finally:
        s.stop()
    assert all(r.proc.stdout is not None and r.proc.stdout.closed for r in s._readers)
    assert all(r.proc.returncode is not None for r in s._readers)


def test_a_failing_nvidia_smi(smi: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_MODE", "fail")
    with sampling(interval_ms=20, smi=smi) as s:
        assert wait_for(lambda: s.bad_lines == 1)  # its error message
    assert s.samples == []


def test_no_nvidia_smi_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with sampling(smi=str(tmp_path / "nowhere" / "nvidia-smi")) as s:
        pass
    assert s.unavailable is not None and "nvidia-smi not found" in s.unavailable
    assert s.samples == [] and s.source == ""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with sampling() as s:
        pass
    assert s.unavailable == "local: nvidia-smi not found"


def test_a_prefix_command_that_cannot_run(smi: str) -> None:
    with sampling(smi=smi, prefixes={"prefill": ["/nonexistent/ssh", "host"]}) as s:
        pass
    assert s.unavailable is not None
    assert s.unavailable.startswith("prefill: cannot run /nonexistent/ssh")


def test_no_instances(smi: str) -> None:
    with sampling(smi=smi, prefixes={}) as s:
        pass
    assert s.unavailable == "no GPU instance to sample"


# -- two instances: the S-27 same-card check -------------------------------------------------------


def test_two_instances_on_one_card_are_shared(smi: str, pidfile: Path) -> None:
    same = ["env", "FAKE_SMI_UUID=GPU-same"]
    with sampling(interval_ms=30, smi=smi, prefixes={"prefill": same, "decode": same}) as s:
        assert wait_for(lambda: {x.instance for x in s.samples} == {"prefill", "decode"})
        assert len(started(pidfile)) == 2  # one process per instance
    assert s.shared_gpus() == ["GPU-same"]
    at = s.samples[-1].at
    assert s.memory(0.0, [(0.0, at)])["GPU-same"]["instance"] == "decode,prefill"


def test_two_instances_on_different_cards(smi: str, pidfile: Path) -> None:
    prefixes = {"prefill": ["env", "FAKE_SMI_UUID=GPU-aaa"], "decode": ["env", "FAKE_SMI_UUID=GPU-bbb"]}
    with sampling(interval_ms=30, smi=smi, prefixes=prefixes) as s:
        assert wait_for(lambda: {x.instance for x in s.samples} == {"prefill", "decode"})
    assert s.shared_gpus() == []
    assert {(x.instance, x.uuid) for x in s.samples} == {("prefill", "GPU-aaa"), ("decode", "GPU-bbb")}
    assert len(started(pidfile)) == 2


# -- per-process rows -----------------------------------------------------------------------------


def test_per_process_rows(smi: str) -> None:
    assert per_process(smi) == [
        {"uuid": U0, "pid": 1912379, "used_mib": 518.0},
        {"uuid": U2, "pid": 3891903, "used_mib": 74698.0},
    ]


def test_per_process_na_and_none_and_through_a_prefix(smi: str) -> None:
    assert per_process(smi, ["env", "FAKE_SMI_APPS=na"]) == [{"uuid": U0, "pid": 1584, "used_mib": None}]
    assert per_process(smi, ["env", "FAKE_SMI_APPS=none"]) == []


def test_per_process_na_paths(smi: str, tmp_path: Path) -> None:
    failed = per_process(smi, ["env", "FAKE_SMI_APPS=fail"])
    assert isinstance(failed, str) and failed.startswith("n/a:") and "exited 9" in failed
    missing = per_process(str(tmp_path / "nowhere" / "nvidia-smi"))
    assert isinstance(missing, str) and missing.startswith("n/a:")


# -- NVML, through a stand-in module ---------------------------------------------------------------


class _Mem:
    def __init__(self, used: int, total: int) -> None:
        self.used, self.total, self.free = used, total, total - used


def _fake_pynvml(count: int, fail_init: bool = False) -> types.ModuleType:
    mod = types.ModuleType("pynvml")
    calls: list[str] = []

    def init() -> None:
        calls.append("init")
        if fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    mod.nvmlInit = init  # type: ignore[attr-defined]
    mod.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    mod.nvmlDeviceGetCount = lambda: count  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    mod.nvmlDeviceGetUUID = lambda h: f"GPU-nvml-{h}"  # type: ignore[attr-defined]
    mod.nvmlDeviceGetMemoryInfo = lambda h: _Mem((h + 1) * 2**30, 80 * 2**30)  # type: ignore[attr-defined]
    mod.calls = calls  # type: ignore[attr-defined]
    return mod


def test_nvml_is_preferred_when_it_finds_a_gpu(monkeypatch: pytest.MonkeyPatch, smi: str, pidfile: Path) -> None:
    fake = _fake_pynvml(2)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with sampling(interval_ms=20, smi=smi) as s:
        assert s.source == "NVML"
        assert wait_for(lambda: len(s.samples) >= 4)
    assert {(x.uuid, x.used_mib, x.total_mib) for x in s.samples} == {
        ("GPU-nvml-0", 1024.0, 81920.0),
        ("GPU-nvml-1", 2048.0, 81920.0),
    }
    assert fake.calls[0] == "init" and fake.calls[-1] == "shutdown"  # type: ignore[attr-defined]
    assert started(pidfile) == []  # no nvidia-smi process


@pytest.mark.parametrize(("count", "fail_init"), [(0, False), (1, True)])
def test_nvml_without_a_gpu_falls_back_to_nvidia_smi(
    monkeypatch: pytest.MonkeyPatch, smi: str, count: int, fail_init: bool
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(count, fail_init))
    with sampling(interval_ms=20, smi=smi) as s:
        assert s.source == "nvidia-smi"
        assert wait_for(lambda: bool(s.samples))


def test_the_stand_in_prints_headers_and_units_like_the_real_tool(smi: str) -> None:
    import subprocess

    env = {**os.environ, "FAKE_SMI_MODE": "na"}
    out = subprocess.run(
        [smi, "--query-gpu=name,memory.used,memory.total,utilization.gpu", "--format=csv"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert out == ("name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\nNVIDIA GB10, [N/A], [N/A], 0 %\n")
    out = subprocess.run(
        [smi, "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[0] == "gpu_uuid, pid, used_gpu_memory [MiB]"
    assert out.splitlines()[1] == f"{U0}, 1912379, 518 MiB"
