"""SGLang's side of a command: ``sglang.launch_server``, its chunking and radix-cache flags, the
PD disaggregation flags of a prefill and a decode server, and its GPU placement."""

from __future__ import annotations

from kvswitch.engine_flags.build import Build, Side
from kvswitch.engine_flags.model import BOOTSTRAP_PORT, SGLANG_SERVE, SHARED_GPU_FRACTION, Backend, EnvVar, Flag, Role
from kvswitch.engine_flags.placement import side_port
from kvswitch.engine_flags.where import Where
from kvswitch.i18n import tr

__all__ = ["chunk_flags", "disaggregated", "prefix_flags", "program", "same_host_gpus", "shared_gpu"]


def program(b: Build) -> tuple[str, ...]:
    """``python -m sglang.launch_server --model-path MODEL``."""
    return (*SGLANG_SERVE, "--model-path", b.profile.model)


def chunk_flags(b: Build) -> list[Flag]:
    """The profile's chunk as the most tokens in one prefill chunk."""
    chunk = b.profile.merged.chunk_size
    return [Flag("--chunked-prefill-size", (str(chunk),), (b.use("sglang-chunk"),))]


def prefix_flags(b: Build, role: Role) -> list[Flag]:
    """The radix cache: on by default (no flag), off with a flag; a PD decode server asks for it."""
    on = b.profile.cache.prefix_cache
    if role == "decode":
        # in PD mode the decode side's radix cache is off unless asked for
        return [Flag("--disaggregation-decode-enable-radix-cache", (), (b.use("sglang-decode-radix"),))] if on else []
    if on:
        b.note("sglang-prefix-on")
        return []
    return [Flag("--disable-radix-cache", (), (b.use("sglang-prefix-off"),))]


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
    """The PD flags of a prefill and a decode server; returns the prefill's bootstrap port."""
    p = b.profile
    (pf, penv), (df, _) = pside, dside
    layer = p.split.transfer_protocol == "layer-wise"
    n = p.split.max_transfer_concurrency
    mode_code = b.use("sglang-disagg-mode")
    backend_code = b.use("sglang-backend", backend=backend)
    bport = side_port(b, "--disaggregation-bootstrap-port", BOOTSTRAP_PORT, prefill.host, used, http)
    pf += [
        Flag("--disaggregation-mode", ("prefill",), (mode_code,)),
        Flag("--disaggregation-transfer-backend", (backend,), (backend_code,)),
        Flag("--disaggregation-bootstrap-port", (str(bport),), (b.use("sglang-bootstrap"),)),
    ]
    df += [
        Flag("--disaggregation-mode", ("decode",), (mode_code,)),
        Flag("--disaggregation-transfer-backend", (backend,), (backend_code,)),
    ]
    if layer and backend == "mooncake":
        lp = b.use("sglang-lp")
        pf.append(Flag("--enable-disagg-layer-pipeline", (), (lp,)))
        df.append(Flag("--enable-disagg-layer-pipeline", (), (lp,)))
    elif layer:
        b.note("sglang-lp-nixl", profile=b.pname)
    queue = b.use("sglang-queue", n=n)
    penv.append(EnvVar("SGLANG_DISAGGREGATION_QUEUE_SIZE", str(n), (queue,)))
    if n > 4:
        penv.append(EnvVar("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE", str(n), (queue,)))
    return bport


def shared_gpu(b: Build) -> Flag:
    """Each server's share of one GPU (``--mem-fraction-static``)."""
    code = b.use("sglang-shared-gpu", frac=SHARED_GPU_FRACTION)
    return Flag("--mem-fraction-static", (SHARED_GPU_FRACTION,), (code,))


def same_host_gpus(b: Build, host: str, who: str, regular: bool, pside: Side, dside: Side) -> None:
    """Two servers on one host: the second starts at GPU 1 (``--base-gpu-id``)."""
    df = dside[0]
    how = (
        tr("the second worker gets {flag}, as in SGLang's single-node example")
        if regular
        else tr("the decode server gets {flag}, as in SGLang's single-node example")
    )
    how = how.format(flag="--base-gpu-id 1")
    code = b.use("same-host-gpus", host=host, how=how, who=who)
    df.append(Flag("--base-gpu-id", ("1",), (code,)))
