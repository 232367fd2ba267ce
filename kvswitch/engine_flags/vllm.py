"""vLLM's side of a command: ``vllm serve``, its chunking and prefix-cache flags, the KV
connector of a prefill and a decode instance (NIXL or Mooncake), and its GPU placement."""

from __future__ import annotations

from typing import Any

from kvswitch.engine_flags.build import Build, Side
from kvswitch.engine_flags.model import (
    BOOTSTRAP_PORT,
    NIXL_SIDE_CHANNEL_PORT,
    SHARED_GPU_FRACTION,
    VLLM_SERVE,
    Backend,
    EnvVar,
    Flag,
    Role,
)
from kvswitch.engine_flags.placement import side_port
from kvswitch.engine_flags.where import Where
from kvswitch.i18n import tr

__all__ = ["chunk_flags", "disaggregated", "prefix_flags", "program", "same_host_gpus", "shared_gpu"]


def program(b: Build) -> tuple[str, ...]:
    """``vllm serve MODEL``."""
    return (*VLLM_SERVE, b.profile.model)


def chunk_flags(b: Build) -> list[Flag]:
    """Chunked prefill with the profile's chunk as the per-step token budget."""
    chunk = b.profile.merged.chunk_size
    flags = [
        Flag("--enable-chunked-prefill", (), (b.use("vllm-chunked-prefill"),)),
        Flag("--max-num-batched-tokens", (str(chunk),), (b.use("vllm-chunk-budget", chunk=chunk),)),
    ]
    if chunk < 1024:
        seqs = min(chunk, 256)
        flags.append(Flag("--max-num-seqs", (str(seqs),), (b.use("vllm-max-num-seqs", chunk=chunk, seqs=seqs),)))
    return flags


def prefix_flags(b: Build, role: Role) -> list[Flag]:
    """Prefix caching on or off, the same for every role."""
    if b.profile.cache.prefix_cache:
        return [Flag("--enable-prefix-caching", (), (b.use("vllm-prefix-on"),))]
    return [Flag("--no-enable-prefix-caching", (), (b.use("vllm-prefix-off"),))]


def disaggregated(
    b: Build,
    backend: Backend,
    prefill: Where,
    decode: Where,
    used: set[tuple[str, int]],
    http: set[tuple[str, int]],
    pside: Side,
    dside: Side,
) -> int:
    """The KV connector of a prefill and a decode instance; returns the bootstrap port."""
    p = b.profile
    (pf, penv), (df, denv) = pside, dside
    bport = BOOTSTRAP_PORT
    layer = p.split.transfer_protocol == "layer-wise"
    n = p.split.max_transfer_concurrency
    connector = "NixlConnector" if backend == "nixl" else "MooncakeConnector"
    if backend == "nixl":
        code = b.use("vllm-nixl")
        config = {"kv_connector": connector, "kv_role": "kv_both"}
        pf.append(Flag("--kv-transfer-config", (_json(config),), (code,)))
        df.append(Flag("--kv-transfer-config", (_json(config),), (code,)))
        pport = side_port(b, "VLLM_NIXL_SIDE_CHANNEL_PORT", NIXL_SIDE_CHANNEL_PORT, prefill.host, used, http)
        dport = side_port(b, "VLLM_NIXL_SIDE_CHANNEL_PORT", NIXL_SIDE_CHANNEL_PORT, decode.host, used, http)
        penv.append(EnvVar("VLLM_NIXL_SIDE_CHANNEL_PORT", str(pport), (b.use("vllm-nixl-port"),)))
        denv.append(EnvVar("VLLM_NIXL_SIDE_CHANNEL_PORT", str(dport), (b.use("vllm-nixl-port"),)))
        b.note("vllm-nixl-concurrency", n=n)
    else:
        code = b.use("vllm-mooncake")
        workers = b.use("vllm-mooncake-workers", n=n)
        pconf = {
            "kv_connector": connector,
            "kv_role": "kv_producer",
            "kv_connector_extra_config": {"num_workers": n},
        }
        dconf = {"kv_connector": connector, "kv_role": "kv_consumer"}
        pf.append(Flag("--kv-transfer-config", (_json(pconf),), (code, workers)))
        df.append(Flag("--kv-transfer-config", (_json(dconf),), (code,)))
        bport = side_port(b, "VLLM_MOONCAKE_BOOTSTRAP_PORT", BOOTSTRAP_PORT, prefill.host, used, http)
        penv.append(EnvVar("VLLM_MOONCAKE_BOOTSTRAP_PORT", str(bport), (b.use("vllm-mooncake-port"),)))
    if layer:
        b.note("vllm-layerwise", connector=connector)
    return bport


def shared_gpu(b: Build) -> Flag:
    """Each instance's share of one GPU (``--gpu-memory-utilization``)."""
    code = b.use("vllm-shared-gpu", frac=SHARED_GPU_FRACTION, total=_total())
    return Flag("--gpu-memory-utilization", (SHARED_GPU_FRACTION,), (code,))


def same_host_gpus(b: Build, host: str, who: str, regular: bool, pside: Side, dside: Side) -> None:
    """Two instances on one host: GPU 0 and GPU 1 (``CUDA_VISIBLE_DEVICES``)."""
    penv, denv = pside[1], dside[1]
    how = tr("{variable}=0 and =1").format(variable="CUDA_VISIBLE_DEVICES")
    code = b.use("same-host-gpus", host=host, how=how, who=who)
    penv.insert(0, EnvVar("CUDA_VISIBLE_DEVICES", "0", (code,)))
    denv.insert(0, EnvVar("CUDA_VISIBLE_DEVICES", "1", (code,)))


def _total() -> str:
    return f"{2 * float(SHARED_GPU_FRACTION):.2f}"


def _json(value: Any) -> str:
    import json  # here, not at import: only a split's connector config needs it

    return json.dumps(value, separators=(",", ":"))
