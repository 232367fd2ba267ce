"""The GPU checks: ``nvidia-smi`` runs (here, or through each instance's command prefix) and
``same-gpu``: prefill and decode report different GPU UUIDs."""

from __future__ import annotations

import shutil
import time

from kvswitch.addresses import is_loopback_url
from kvswitch.doctor.checks import KNOWN, Check, paren
from kvswitch.doctor.target import DoctorSettings, Target
from kvswitch.i18n import clauses, ntr, tr

__all__ = ["gpu_checks"]


def _prefix_smi_fix() -> str:
    return tr("check that the prefix command runs nvidia-smi on that instance (or pass --smi PATH)")


def gpu_checks(t: Target | None, s: DoctorSettings) -> list[Check]:
    """``nvidia-smi`` and ``same-gpu`` (those not skipped): GPU readings here or through each prefix."""
    from kvswitch.probe.gpu import GpuSampler

    want = [n for n in ("nvidia-smi", "same-gpu") if n not in s.skip]
    if not want:
        return []
    prefixes: dict[str, list[str]] = {}
    if s.prefill_prefix:
        prefixes["prefill"] = list(s.prefill_prefix)
    if s.decode_prefix:
        prefixes["decode"] = list(s.decode_prefix)
    if prefixes and len(prefixes) == 1:
        prefixes.setdefault("decode" if "prefill" in prefixes else "prefill", [])
    local_only = not prefixes
    if local_only:
        prefixes = {"local": []}
        if shutil.which(s.smi) is None and not _nvml_present():
            out = []
            if "nvidia-smi" in want:
                out.append(
                    Check(
                        "nvidia-smi",
                        "skip",
                        tr(
                            "{smi} is not on this machine's PATH and NVML is not available: GPU memory cannot be read "
                            "here "
                            "(kvswitch probe reports it as n/a)"
                        ).format(smi=s.smi),
                        tr(
                            "install the NVIDIA driver tools where the GPUs are, or reach each instance with "
                            "--prefill-prefix 'ssh HOST' --decode-prefix 'ssh HOST' (or --smi PATH)"
                        ),
                    )
                )
            if "same-gpu" in want:
                out.append(
                    Check(
                        "same-gpu",
                        "skip",
                        tr("no nvidia-smi: which GPU each instance uses cannot be read"),
                        tr("give --prefill-prefix and --decode-prefix"),
                        KNOWN,
                    )
                )
            return out
    sampler = GpuSampler(interval_ms=100, prefixes=prefixes, smi=s.smi)
    sampler.start()
    try:
        deadline = time.monotonic() + s.gpu_seconds
        while time.monotonic() < deadline and not sampler.unavailable:
            seen = {x.instance for x in list(sampler.samples)}
            if (sampler.source == "NVML" and sampler.samples) or all(i in seen for i in prefixes):
                break
            time.sleep(0.05)
    finally:
        sampler.stop()
    samples = list(sampler.samples)
    gpus: dict[str, list[str]] = {}
    for x in samples:
        gpus.setdefault(x.instance, [])
        if x.uuid not in gpus[x.instance]:
            gpus[x.instance].append(x.uuid)
    out = []
    missing = [i for i in prefixes if i not in gpus]
    if "nvidia-smi" in want:
        via = {i: (" ".join(p) if p else tr("this machine")) for i, p in prefixes.items()}
        if sampler.unavailable or missing == list(prefixes):
            why = sampler.unavailable or tr("no readable output")
            out.append(
                Check(
                    "nvidia-smi",
                    "skip" if local_only else "warn",
                    tr("no GPU readings ({reason})").format(reason=why),
                    _prefix_smi_fix() if not local_only else tr("install the NVIDIA driver tools where the GPUs are"),
                )
            )
        elif missing:
            read = ", ".join(
                ntr("{instance} via {via}: {count} GPU", "{instance} via {via}: {count} GPUs", len(gpus[i])).format(
                    instance=i, via=via[i], count=len(gpus[i])
                )
                for i in gpus
            )
            none = ", ".join(tr("{instance} via {via}").format(instance=i, via=via[i]) for i in missing)
            out.append(
                Check(
                    "nvidia-smi",
                    "warn",
                    tr("readings from {read}; none from {missing}").format(read=read, missing=none),
                    _prefix_smi_fix(),
                )
            )
        else:
            out.append(
                Check(
                    "nvidia-smi",
                    "pass",
                    f"{sampler.source}: "
                    + clauses(
                        [
                            tr("{instance} via {via}: {gpus}").format(instance=i, via=via[i], gpus=", ".join(gpus[i]))
                            for i in gpus
                        ]
                    ),
                )
            )
    if "same-gpu" in want:
        out.append(_same_gpu_check(t, s, gpus, sampler.shared_gpus(), local_only, missing))
    return out


def _nvml_present() -> bool:
    import importlib.util

    return importlib.util.find_spec("pynvml") is not None


def _same_gpu_check(
    t: Target | None,
    s: DoctorSettings,
    gpus: dict[str, list[str]],
    shared: list[str],
    local_only: bool,
    missing: list[str],
) -> Check:
    fix = tr(
        "put prefill and decode on different GPUs (e.g. CUDA_VISIBLE_DEVICES per instance) or nodes; with one "
        "GPU use merged: kvswitch switch merged"
    )
    if not local_only:
        if missing:
            return Check(
                "same-gpu",
                "skip",
                tr("no readings from {missing}, so the GPUs cannot be compared").format(missing=", ".join(missing)),
                tr("check the prefix commands"),
                KNOWN,
            )
        if shared:
            return Check(
                "same-gpu",
                "warn",
                tr(
                    "prefill and decode report the same GPU ({gpus}): they are only logically split, so scheduling "
                    "overhead adds memory instead of saving it"
                ).format(gpus=", ".join(shared)),
                fix,
                KNOWN,
            )
        return Check(
            "same-gpu",
            "pass",
            tr("prefill on {prefill}; decode on {decode}: different cards").format(
                prefill=", ".join(gpus.get("prefill", [])), decode=", ".join(gpus.get("decode", []))
            ),
            source=KNOWN,
        )
    if t is None:
        return Check("same-gpu", "skip", tr("no profile to check (see config)"), source=KNOWN)
    if t.mode != "split":
        return Check(
            "same-gpu",
            "skip",
            tr("mode is {mode}: one instance, nothing to compare").format(mode=t.mode),
            source=KNOWN,
        )
    local = gpus.get("local", [])
    both_here = is_loopback_url(t.prefill or t.base_url) and is_loopback_url(t.decode or t.base_url)
    if both_here and len(local) == 1:
        return Check(
            "same-gpu",
            "warn",
            tr("prefill and decode both run on this machine, which has one GPU ({gpu}): they share it").format(
                gpu=local[0]
            ),
            fix,
            KNOWN,
        )
    saw = tr("which GPU each instance uses cannot be told from here")
    if both_here:
        saw += paren(
            ntr("this machine has {count} GPU", "this machine has {count} GPUs", len(local)).format(count=len(local))
        )
    return Check(
        "same-gpu",
        "skip",
        saw,
        tr(
            "give --prefill-prefix and --decode-prefix: commands that run "
            "nvidia-smi on each instance, e.g. 'ssh prefill-host'"
        ),
        KNOWN,
    )
