"""The commands of a mode: merged is one instance; split is a prefill and a decode instance (or
two whole ones, in a router's regular mode) and what fronts them. Each engine's own flags come
from its module (:mod:`.vllm`, :mod:`.sglang`)."""

from __future__ import annotations

from typing import Protocol

from kvswitch.engine_flags import sglang, vllm
from kvswitch.engine_flags.build import Build, Side
from kvswitch.engine_flags.model import BOOTSTRAP_PORT, Backend, Command, Engine, EnvVar, Flag, Role, Route
from kvswitch.engine_flags.placement import place
from kvswitch.engine_flags.routers import router_command
from kvswitch.engine_flags.where import Where, host_key, where
from kvswitch.i18n import tr

__all__ = ["merged", "split"]


class _Engine(Protocol):
    """What an engine's module gives (:mod:`.vllm`, :mod:`.sglang`)."""

    def program(self, b: Build) -> tuple[str, ...]: ...

    def chunk_flags(self, b: Build) -> list[Flag]: ...

    def prefix_flags(self, b: Build, role: Role) -> list[Flag]: ...

    def disaggregated(
        self,
        b: Build,
        backend: Backend,
        prefill: Where,
        decode: Where,
        used: set[tuple[str, int]],
        http: set[tuple[str, int]],
        pside: Side,
        dside: Side,
    ) -> int: ...

    def shared_gpu(self, b: Build) -> Flag: ...

    def same_host_gpus(self, b: Build, host: str, who: str, regular: bool, pside: Side, dside: Side) -> None: ...


_ENGINES: dict[Engine, _Engine] = {"vllm": vllm, "sglang": sglang}


def _instance_flags(b: Build, w: Where) -> list[Flag]:
    """A whole instance's flags (it prefills and decodes): address, chunk, prefix cache, KV dtype."""
    engine = _ENGINES[b.engine]
    flags = b.address(w)
    flags += engine.chunk_flags(b)
    flags += engine.prefix_flags(b, "merged")
    flags += b.dtype(split=False)
    return flags


def merged(b: Build) -> list[Command]:
    """Merged mode: one instance on ``merged.url`` (else ``base_url``)."""
    own = b.profile.merged.url
    w = where("merged", own or b.profile.base_url, "merged.url" if own else "base_url", b.engine)
    b.hosted(w)
    b.chunk_notes(split=False)
    flags = _instance_flags(b, w)
    program = _ENGINES[b.engine].program(b)
    return [Command("merged", w.url, program, tuple(flags), (), (b.use("model-id", model=b.profile.model),))]


def split(b: Build, backend: Backend, shared_gpu: bool, route: Route) -> list[Command]:
    """Split mode: the prefill and the decode instance (or two workers), then the router."""
    engine = _ENGINES[b.engine]
    p = b.profile
    own = p.split.url or p.split.probe_url
    router_field = "split.url" if own else "base_url"
    router = where("router", own or p.base_url, router_field, b.engine)
    prefill = where(
        "prefill",
        p.split.prefill_base_url or p.base_url,
        "split.prefill_base_url" if p.split.prefill_base_url else "base_url",
        b.engine,
    )
    decode = where(
        "decode",
        p.split.decode_base_url or p.base_url,
        "split.decode_base_url" if p.split.decode_base_url else "base_url",
        b.engine,
    )
    for w in (router, prefill, decode):
        b.hosted(w)
    place(b, router, prefill, decode)
    http = {w.key for w in (router, prefill, decode)}
    used = set(http)
    regular = route.mode == "regular"
    b.chunk_notes(split=not regular)
    if not regular:
        b.note("split-no-throughput")
    b.note("split-router-url", url=router.url, field=router_field)

    penv: list[EnvVar] = []
    denv: list[EnvVar] = []
    bport = BOOTSTRAP_PORT
    if regular:  # two whole instances
        pf, df = _instance_flags(b, prefill), _instance_flags(b, decode)
    else:
        pf, df = b.address(prefill), b.address(decode)
        bport = engine.disaggregated(b, backend, prefill, decode, used, http, (pf, penv), (df, denv))
    _placement(b, shared_gpu, prefill, decode, regular, (pf, penv), (df, denv))
    if not regular:
        pf += engine.prefix_flags(b, "prefill")
        df += engine.prefix_flags(b, "decode")
        pf += b.dtype(split=True)
        df += b.dtype(split=True)

    model_code = b.use("model-id", model=p.model)
    program = engine.program(b)
    roles: tuple[Role, Role] = ("worker", "worker") if regular else ("prefill", "decode")
    return [
        Command(roles[0], prefill.url, program, tuple(pf), tuple(penv), (model_code,)),
        Command(roles[1], decode.url, program, tuple(df), tuple(denv), (model_code,)),
        router_command(b, route, backend, router, prefill, decode, bport, used, http),
    ]


def _placement(
    b: Build, shared_gpu: bool, first: Where, second: Where, regular: bool, pside: Side, dside: Side
) -> None:
    """Two instances on one host go on two GPUs, or share one (``shared_gpu``)."""
    engine = _ENGINES[b.engine]
    if shared_gpu:
        share = engine.shared_gpu(b)
        pside[0].append(share)
        dside[0].append(share)
    elif host_key(first.host) == host_key(second.host):
        who = tr("The two workers") if regular else tr("Prefill and decode")
        engine.same_host_gpus(b, first.host, who, regular, pside, dside)
