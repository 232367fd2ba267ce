"""GPU memory while the probe runs: NVML when it is importable and finds a GPU, else one
long-running ``nvidia-smi … -lms N`` process per instance (never a process per sample).

Samples are (time, GPU UUID, used MiB, total MiB). Per mode the report gives, for every
GPU UUID: the baseline before the probe, the peak while the mode ran and the delta.
``[N/A]``-style fields become ``None`` (unified memory, MIG, WDDM), and lines that do not
parse are counted, never fatal. No NVML and no nvidia-smi → "n/a: <reason>", and the probe
goes on. An instance may be reached through a command prefix (``ssh prefill-host``), and
instances that report the same GPU UUID are only logically split (S-27).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from kvswitch.i18n import tr

__all__ = ["QUERY", "GpuSample", "GpuSampler", "parse_smi_line"]

QUERY = ["--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader,nounits"]


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading of one GPU."""

    at: float
    instance: str
    uuid: str
    used_mib: float | None
    total_mib: float | None


def _number(field_: str) -> float | None:
    field_ = field_.strip()
    if field_.startswith("[") and field_.endswith("]"):
        return None  # [N/A], [Not Supported], [Unknown Error], [Insufficient Permissions]
    field_ = field_.removesuffix("MiB").strip()
    try:
        return float(field_)
    except ValueError:
        return None


def parse_smi_line(line: str, at: float, instance: str) -> GpuSample | None:
    """A sample from one ``index, uuid, memory.used, memory.total`` line, or ``None``."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4 or not parts[0].isdigit():
        return None
    uuid = parts[1]
    if not uuid.startswith(("GPU-", "MIG-")):
        return None
    return GpuSample(at, instance, uuid, _number(parts[2]), _number(parts[3]))


@dataclass
class _Reader:
    instance: str
    proc: subprocess.Popen[str]
    thread: threading.Thread
    bad_lines: int = 0


@dataclass
class GpuSampler:
    """Start before the probe, ``mark`` phases, ``stop`` after; read ``samples``."""

    interval_ms: int = 100
    prefixes: dict[str, list[str]] = field(default_factory=lambda: {"local": []})
    smi: str = "nvidia-smi"
    samples: list[GpuSample] = field(default_factory=list)
    unavailable: str | None = None
    source: str = ""
    bad_lines: int = 0
    _readers: list[_Reader] = field(default_factory=list)
    _nvml_thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        """Start sampling (NVML for a local-only sampler, else nvidia-smi)."""
        if list(self.prefixes) == ["local"] and not self.prefixes["local"] and self._start_nvml():
            return
        reasons = []
        for instance, prefix in self.prefixes.items():
            cmd = [*prefix, self.smi, *QUERY, "-lms", str(self.interval_ms)]
            if not prefix and shutil.which(self.smi) is None:
                reasons.append(tr("{instance}: nvidia-smi not found").format(instance=instance))
                continue
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    bufsize=1,
                )
            except OSError as exc:
                reasons.append(
                    tr("{instance}: cannot run {program} ({reason})").format(
                        instance=instance, program=cmd[0], reason=exc.strerror
                    )
                )
                continue
            reader = _Reader(instance, proc, threading.Thread(target=lambda: None))
            reader.thread = threading.Thread(target=self._read, args=(reader,), daemon=True)
            reader.thread.start()
            self._readers.append(reader)
        if self._readers:
            self.source = "nvidia-smi"
        else:
            self.unavailable = "; ".join(reasons) or tr("no GPU instance to sample")

    def _read(self, reader: _Reader) -> None:
        assert reader.proc.stdout is not None
        for line in reader.proc.stdout:
            if self._stop.is_set():
                break
            sample = parse_smi_line(line, time.perf_counter(), reader.instance)
            with self._lock:
                if sample is None:
                    if line.strip():
                        reader.bad_lines += 1
                        self.bad_lines += 1
                else:
                    self.samples.append(sample)

    def _start_nvml(self) -> bool:
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
        except Exception:  # noqa: BLE001 - no NVML library, no driver or no GPU: fall back to nvidia-smi
            return False
        if count == 0:
            with contextlib.suppress(Exception):
                pynvml.nvmlShutdown()
            return False
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]

        def loop() -> None:
            while not self._stop.wait(self.interval_ms / 1000):
                now = time.perf_counter()
                for h in handles:
                    try:
                        uuid = pynvml.nvmlDeviceGetUUID(h)
                        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
                        sample = GpuSample(now, "local", str(uuid), mem.used / 2**20, mem.total / 2**20)
                    except Exception:  # noqa: BLE001 - a GPU that cannot be read this time
                        continue
                    with self._lock:
                        self.samples.append(sample)

        self.source = "NVML"
        self._nvml_thread = threading.Thread(target=loop, daemon=True)
        self._nvml_thread.start()
        return True

    def stop(self) -> None:
        """Stop the sampler processes and threads."""
        self._stop.set()
        for r in self._readers:
            with contextlib.suppress(OSError):
                r.proc.terminate()
            try:
                r.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                r.proc.kill()
                r.proc.wait(timeout=2)
            r.thread.join(timeout=2)
            if r.proc.stdout is not None:
                r.proc.stdout.close()
        if self._nvml_thread is not None:
            self._nvml_thread.join(timeout=2)
            with contextlib.suppress(Exception):
                import pynvml

                pynvml.nvmlShutdown()

    def window(self, start: float, end: float) -> list[GpuSample]:
        with self._lock:
            return [s for s in self.samples if start <= s.at <= end]

    def memory(
        self, baseline_until: float, windows: Sequence[tuple[float, float]]
    ) -> dict[str, dict[str, float | str | None]]:
        """Per GPU UUID: baseline (last reading before ``baseline_until``), peak and delta over
        the ``windows`` (a mode's own batches), and the instance that saw it."""
        with self._lock:
            samples = list(self.samples)
        out: dict[str, dict[str, float | str | None]] = {}
        for uuid in sorted({s.uuid for s in samples}):
            mine = [s for s in samples if s.uuid == uuid and s.used_mib is not None]
            before = [s.used_mib for s in mine if s.at <= baseline_until]
            during = [s.used_mib for s in mine if any(a <= s.at <= b for a, b in windows)]
            base = before[-1] if before else (mine[0].used_mib if mine else None)
            peak = max((d for d in during if d is not None), default=None)
            total = next((s.total_mib for s in samples if s.uuid == uuid and s.total_mib is not None), None)
            instances = sorted({s.instance for s in samples if s.uuid == uuid})
            out[uuid] = {
                "instance": ",".join(instances),
                "baseline_mib": base,
                "peak_mib": peak,
                "delta_mib": (peak - base) if peak is not None and base is not None else None,
                "total_mib": total,
            }
        return out

    def shared_gpus(self) -> list[str]:
        """GPU UUIDs seen by more than one instance (prefill and decode on one card, S-27)."""
        with self._lock:
            seen: dict[str, set[str]] = {}
            for s in self.samples:
                seen.setdefault(s.uuid, set()).add(s.instance)
        return sorted(u for u, inst in seen.items() if len(inst) > 1)

    def rate(self) -> float:
        """Samples per second per GPU over the whole run."""
        with self._lock:
            if len(self.samples) < 2:
                return 0.0
            span = self.samples[-1].at - self.samples[0].at
            gpus = len({(s.instance, s.uuid) for s in self.samples})
            return (len(self.samples) / max(gpus, 1)) / span if span > 0 else 0.0


def per_process(smi: str = "nvidia-smi", prefix: Sequence[str] = ()) -> list[dict[str, object]] | str:
    """Per-process GPU memory (``--query-compute-apps``), or a sentence saying why not."""
    cmd = [*prefix, smi, "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return tr("n/a: {reason}").format(reason=exc)
    if out.returncode != 0:
        return tr("n/a: {reason}").format(
            reason=tr("{program} exited {code}").format(program=cmd[len(prefix)], code=out.returncode)
        )
    rows = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[1].isdigit():
            rows.append({"uuid": parts[0], "pid": int(parts[1]), "used_mib": _number(parts[2])})
    return rows
