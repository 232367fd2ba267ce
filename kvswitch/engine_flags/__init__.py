"""The server-side command lines that match a kvswitch profile, for vLLM and SGLang.

kvswitch flips *clients*; the engine behind them must be started to match. This package turns
a profile and a mode into the commands that start it — one instance for merged mode; a prefill
instance, a decode instance and the router/proxy in front of them for split mode — and
attaches to each flag the caveats the engines reference gives for it (version windows,
defaults, constraints, values an engine does not have). Pure data and functions: nothing is
run, nothing is printed.

Every flag and value here comes from kvswitch's engines reference (the maintainers' notes on
each engine's docs and sources) or from the engine's own docs where named (``--host``/``--port``,
the proxy's arguments, SGLang's ``--base-gpu-id``); each caveat's ``source`` names the public
document it rests on, never internal numbering. A profile
value an engine cannot express is *refused* (a caveat of level ``refused``; the flag is left
out): ``kv_cache_dtype = "int8"`` in vLLM or SGLang, layer-wise transfer on SGLang with NIXL.

The split side's router can also be an existing one (``router=``): SGLang's router
(``sglang_router.launch_router``) or vLLM's (``vllm-router``), in PD mode (in front of a prefill
and a decode instance) or in regular mode (balancing whole requests over two instances that each
prefill and decode). Their flags come from each router's own ``--help`` and docs
(``ROUTER_SPECS``). A router listens on loopback unless the profile's split URL names another
host, and so do its Prometheus metrics (SGLang's router would bind both to 0.0.0.0).

``engines_reference()`` renders the same data as the generated part of ``docs/engines.md``
(English, the source text). The caveats :func:`engine_flags` returns are in the user's language
(:mod:`kvswitch.i18n`): their text, versions and source; command lines, flags, values, engine
names and URLs are never translated.

The package, from the bottom up: :mod:`.caveats` (the catalogue, as data), :mod:`.model` (the
words, constants and result types), :mod:`.dtypes` and :mod:`.where` (the KV dtype table; where a
server listens), :mod:`.build` (one build's caveats and shared flags), :mod:`.placement` (ports),
:mod:`.vllm`, :mod:`.sglang` and :mod:`.routers` (each one's flags), :mod:`.commands` (a mode's
commands) and :mod:`.reference` (``docs/engines.md``). Names here load on first use, so importing
the package costs next to nothing until a command is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.engine_flags.caveats import CAVEATS, CaveatSpec
    from kvswitch.engine_flags.dtypes import DTYPES
    from kvswitch.engine_flags.model import ENGINE_NAMES as ENGINE_NAMES
    from kvswitch.engine_flags.model import (
        ENGINES,
        POLICIES,
        ROUTER_MODES,
        ROUTER_SPECS,
        ROUTERS,
        Backend,
        Caveat,
        Command,
        Engine,
        EngineFlags,
        EnvVar,
        Flag,
        Policy,
        Router,
        RouterMode,
        RouterSpec,
    )
    from kvswitch.engine_flags.reference import MAPPING, OTHER_ENGINES, engines_reference
    from kvswitch.models import Profile

__all__ = [
    "CAVEATS",
    "DTYPES",
    "ENGINES",
    "MAPPING",
    "OTHER_ENGINES",
    "POLICIES",
    "ROUTERS",
    "ROUTER_MODES",
    "ROUTER_SPECS",
    "Backend",
    "Caveat",
    "CaveatSpec",
    "Command",
    "Engine",
    "EngineFlags",
    "EnvVar",
    "Flag",
    "Policy",
    "Router",
    "RouterMode",
    "RouterSpec",
    "engine_flags",
    "engines_reference",
]

_WHERE = {
    **dict.fromkeys(("CAVEATS", "CaveatSpec"), "kvswitch.engine_flags.caveats"),
    "DTYPES": "kvswitch.engine_flags.dtypes",
    **dict.fromkeys(
        (
            "ENGINES",
            "ENGINE_NAMES",
            "POLICIES",
            "ROUTERS",
            "ROUTER_MODES",
            "ROUTER_SPECS",
            "Backend",
            "Caveat",
            "Command",
            "Engine",
            "EngineFlags",
            "EnvVar",
            "Flag",
            "Policy",
            "Router",
            "RouterMode",
            "RouterSpec",
        ),
        "kvswitch.engine_flags.model",
    ),
    **dict.fromkeys(("MAPPING", "OTHER_ENGINES", "engines_reference"), "kvswitch.engine_flags.reference"),
}
"""Where each name lives (``ENGINE_NAMES`` too, for the CLI's headings)."""


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kvswitch.engine_flags' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def engine_flags(
    profile: Profile,
    engine: Engine,
    mode: str,
    *,
    profile_name: str | None = None,
    transfer_backend: Backend | None = None,
    shared_gpu: bool = False,
    router: Router | None = None,
    router_mode: RouterMode = "pd",
    policy: Policy = "cache_aware",
    metrics_port: int | None = None,
) -> EngineFlags:
    """The commands that start ``engine`` to match ``profile`` in ``mode`` (merged | split).

    ``transfer_backend`` (split only): ``nixl`` or ``mooncake``; default vLLM → nixl
    (NixlConnector), SGLang → mooncake (its default). ``shared_gpu``: prefill and decode share
    one GPU (memory fractions are set); otherwise, on one host they are put on GPUs 0 and 1.

    ``router`` (split only): the router in front, ``sglang`` or ``vllm`` (default: SGLang's
    router for SGLang, vLLM's example proxy for vLLM). ``router_mode``: ``pd`` (a prefill and
    a decode instance; a router's PD mode drives its own engine's instances only) or
    ``regular`` (two whole instances; the router defaults to the engine's own). ``policy``
    and ``metrics_port`` (default 29000, moved off any port taken) apply to those routers.
    A combination that cannot work is a ``ValueError``.
    """
    from kvswitch.engine_flags.build import Build
    from kvswitch.engine_flags.commands import merged, split
    from kvswitch.engine_flags.model import (
        DEFAULT_BACKEND,
        ENGINE_NAMES,
        ENGINES,
        POLICIES,
        ROUTER_MODES,
        ROUTER_SPECS,
        ROUTERS,
        Route,
    )

    if engine not in ENGINES:
        raise ValueError(
            tr("engine must be one of {choices}, not {value}").format(choices=", ".join(ENGINES), value=repr(engine))
        )
    if mode not in ("merged", "split"):
        raise ValueError(tr("mode must be merged or split, not {value}").format(value=repr(mode)))
    if router is not None and router not in ROUTERS:
        raise ValueError(
            tr("router must be one of {choices}, not {value}").format(choices=", ".join(ROUTERS), value=repr(router))
        )
    if router_mode not in ROUTER_MODES:
        raise ValueError(
            tr("router mode must be one of {choices}, not {value}").format(
                choices=", ".join(ROUTER_MODES), value=repr(router_mode)
            )
        )
    if policy not in POLICIES:
        raise ValueError(
            tr("policy must be one of {choices}, not {value}").format(choices=", ".join(POLICIES), value=repr(policy))
        )
    if metrics_port is not None and not 0 < metrics_port < 65536:
        raise ValueError(tr("the metrics port must be 1…65535, not {port}").format(port=metrics_port))
    b = Build(engine, profile, profile_name)
    if mode == "merged":
        if shared_gpu:
            b.note("shared-gpu-merged")
        if router is not None or router_mode != "pd":
            b.note("router-merged")
        return b.finish(mode, None, merged(b))
    if router_mode == "pd" and router is not None and ROUTER_SPECS[router].pd_engine != engine:
        spec = ROUTER_SPECS[router]
        raise ValueError(
            tr(
                "{router} in PD mode drives {engine} prefill and decode instances (their KV hand-off is "
                "{engine}'s own), not {other} ones: use the router {name} for {other}, or the regular mode"
            ).format(
                router=tr("{owner}'s router").format(owner=ENGINE_NAMES[spec.pd_engine]),
                engine=ENGINE_NAMES[spec.pd_engine],
                other=ENGINE_NAMES[engine],
                name=repr(engine),
            )
        )
    name: Router | None = router or (engine if router_mode == "regular" or engine == "sglang" else None)
    route = Route(name, router_mode, policy, metrics_port)
    backend = transfer_backend or DEFAULT_BACKEND[engine]
    commands = split(b, backend, shared_gpu, route)
    return b.finish(mode, None if router_mode == "regular" else backend, commands, route)
