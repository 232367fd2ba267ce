"""The command of what fronts the split side: vLLM's example proxy, or an existing router
(SGLang's or vLLM's) in PD or regular mode, listening on loopback unless the profile's split URL
names another host; its Prometheus metrics likewise."""

from __future__ import annotations

import ipaddress

from kvswitch.addresses import is_loopback_host
from kvswitch.engine_flags.build import Build
from kvswitch.engine_flags.model import ROUTER_METRICS_PORT, ROUTER_SPECS, VLLM_PROXY, Backend, Command, Flag, Route
from kvswitch.engine_flags.placement import side_port
from kvswitch.engine_flags.where import Where
from kvswitch.urls import show_origin

__all__ = ["router_command"]


def router_command(
    b: Build,
    route: Route,
    backend: Backend,
    router: Where,
    prefill: Where,
    decode: Where,
    bport: int,
    used: set[tuple[str, int]],
    http: set[tuple[str, int]],
) -> Command:
    """The command of the router in front of the two instances."""
    if route.name is None:  # vLLM's example proxy (PD only)
        rflags = [
            *b.address(router),
            Flag("--prefiller-hosts", (prefill.host,)),
            Flag("--prefiller-ports", (str(prefill.port),)),
            Flag("--decoder-hosts", (decode.host,)),
            Flag("--decoder-ports", (str(decode.port),)),
        ]
        return Command("router", router.url, VLLM_PROXY, tuple(rflags), (), (b.use("vllm-proxy"),))
    spec = ROUTER_SPECS[route.name]
    host = _router_host(router)
    port = b.address(router)[1]  # its caveats: a default or a moved port
    metrics = side_port(b, "--prometheus-port", route.metrics_port or ROUTER_METRICS_PORT, router.host, used, http)
    mcode = b.use("router-metrics", port=metrics)
    hcodes = () if is_loopback_host(router.host) else (b.use("router-host", url=router.profile_url, host=host),)
    flags = [
        Flag("--host", (host,), hcodes),
        port,
        Flag("--prometheus-host", (host,), (*hcodes, mcode)),
        Flag("--prometheus-port", (str(metrics),), (mcode,)),
    ]
    if route.mode == "regular":
        flags.append(Flag("--worker-urls", (_origin(prefill), _origin(decode)), (b.use("router-regular"),)))
    else:
        pd = b.use(f"{route.name}-router-pd", bport=bport)
        with_port = route.name == "sglang" or backend == "mooncake"
        flags += [
            Flag(spec.pd_flag, (), (pd,)),
            Flag("--prefill", (_origin(prefill), str(bport)) if with_port else (_origin(prefill),), (pd,)),
            Flag("--decode", (_origin(decode),)),
        ]
        if route.name == "vllm" and backend == "mooncake":
            flags.append(Flag("--kv-connector", ("mooncake",), (pd,)))
    flags.append(Flag("--policy", (route.policy,), (b.use("router-policy", policy=route.policy),)))
    return Command("router", router.url, spec.program, tuple(flags), (), (b.use(spec.caveat),))


def _router_host(w: Where) -> str:
    """Where a router listens: the profile's host; a loopback name (``localhost``) as 127.0.0.1."""
    if not is_loopback_host(w.host):
        return w.host
    try:
        ipaddress.ip_address(w.host)
    except ValueError:
        return "127.0.0.1"
    return w.host


def _origin(w: Where) -> str:
    """A worker as a router is told it: ``http://HOST:PORT`` (no path; IPv6 in brackets)."""
    return show_origin(("http", w.host, w.port))
