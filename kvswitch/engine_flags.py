"""The server-side command lines that match a kvswitch profile, for vLLM and SGLang.

kvswitch flips *clients*; the engine behind them must be started to match. This module turns
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
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from kvswitch.addresses import is_loopback_host
from kvswitch.i18n import N_, tr

if TYPE_CHECKING:
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

Engine = Literal["vllm", "sglang"]
Backend = Literal["nixl", "mooncake"]
Level = Literal["refused", "warning", "note"]
Role = Literal["merged", "prefill", "decode", "worker", "router"]
Router = Literal["sglang", "vllm"]
RouterMode = Literal["pd", "regular"]
Policy = Literal["cache_aware", "round_robin", "power_of_two", "random"]

ENGINES: tuple[Engine, ...] = ("vllm", "sglang")
ENGINE_NAMES: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang"}
DEFAULT_BACKEND: dict[Engine, Backend] = {"vllm": "nixl", "sglang": "mooncake"}
"""vLLM: NixlConnector (the connector of vLLM's own disaggregation guide); SGLang: its default."""

_LEVEL_ORDER = {"refused": 0, "warning": 1, "note": 2}

# -- program lines ------------------------------------------------------------------------
VLLM_SERVE = ("vllm", "serve")
SGLANG_SERVE = ("python", "-m", "sglang.launch_server")
VLLM_PROXY = ("python", "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py")
SGLANG_ROUTER = ("python", "-m", "sglang_router.launch_router")
VLLM_ROUTER = ("vllm-router",)

# default ports: the engines' own examples (vLLM's disaggregation guide: P 8100, D 8200, its
# proxy 8000 by default; SGLang: server 30000, PD example P 30000 / D 30001, router 8000)
DEFAULT_PORTS: dict[Engine, dict[Role, int]] = {
    "vllm": {"merged": 8000, "prefill": 8100, "decode": 8200, "router": 8000},
    "sglang": {"merged": 30000, "prefill": 30000, "decode": 30001, "router": 8000},
}
ROUTER_METRICS_PORT = 29000
"""Both routers' own default ``--prometheus-port``."""
BOOTSTRAP_PORT = 8998
NIXL_SIDE_CHANNEL_PORT = 5600
SHARED_GPU_FRACTION = "0.45"


# -- existing routers in front of the split side -------------------------------------------
@dataclass(frozen=True)
class RouterSpec:
    """An existing router kvswitch gives commands for: its program and what sets it apart."""

    name: str
    """As docs/engines.md shows it (English)."""
    program: tuple[str, ...]
    install: str
    pd_flag: str
    pd_engine: Engine
    """The engine whose prefill and decode instances its PD mode drives."""
    caveat: str
    checked: str
    """How kvswitch knows the command works."""


ROUTER_SPECS: dict[Router, RouterSpec] = {
    "sglang": RouterSpec(
        "SGLang's router",
        SGLANG_ROUTER,
        "pip install sglang-router",
        "--pd-disaggregation",
        "sglang",
        "sglang-router",
        "run by kvswitch's tests (sglang-router 0.3.2, regular and PD mode over llama.cpp workers)",
    ),
    "vllm": RouterSpec(
        "vLLM's router",
        VLLM_ROUTER,
        "pip install vllm-router",
        "--vllm-pd-disaggregation",
        "vllm",
        "vllm-router",
        "from its README and command-line reference; not run by kvswitch's tests",
    ),
}
ROUTERS: tuple[Router, ...] = ("sglang", "vllm")
ROUTER_MODES: tuple[RouterMode, ...] = ("pd", "regular")
POLICIES: tuple[Policy, ...] = ("cache_aware", "round_robin", "power_of_two", "random")
"""The load-balancing policies both routers have (``--policy``)."""


# -- caveats: the catalogue ---------------------------------------------------------------
@dataclass(frozen=True)
class CaveatSpec:
    """One caveat of the catalogue; ``text`` may hold ``{placeholders}`` filled per profile."""

    code: str
    engine: Literal["vllm", "sglang", "both"]
    level: Level
    flags: tuple[str, ...]
    text: str
    versions: str
    source: str


def _specs(*items: CaveatSpec) -> dict[str, CaveatSpec]:
    return {c.code: c for c in items}


CAVEATS: dict[str, CaveatSpec] = _specs(
    # where the server listens, what it serves
    CaveatSpec(
        "listen-all",
        "both",
        "note",
        ("--host",),
        N_(
            "{url} is not a loopback address, so the server listens on all interfaces (0.0.0.0); "
            "on a shared network narrow it with --host ADDRESS."
        ),
        "",
        N_("vLLM and SGLang docs (--host/--port)"),
    ),
    CaveatSpec(
        "default-port",
        "both",
        "warning",
        ("--port",),
        N_(
            "{url} names no port, so the engine's usual port {port} is used; put it in the profile "
            "({field}) so clients call the server that runs."
        ),
        "",
        N_("vLLM and SGLang docs (--host/--port)"),
    ),
    CaveatSpec(
        "hosted",
        "both",
        "warning",
        (),
        N_(
            "{url} is https on a host that is not this machine: a hosted gateway, where no engine "
            "flags can be passed. These are the commands for a server you run yourself with the "
            "profile's settings."
        ),
        "",
        N_("kvswitch's provider presets"),
    ),
    CaveatSpec(
        "model-id",
        "both",
        "note",
        (),
        N_(
            "MODEL is the profile's model id ({model}); the engine must be able to load it (a "
            "Hugging Face id or a local path). If it is only an alias, load the weights by path and "
            "make the server answer to the alias (--served-model-name in vLLM and SGLang; check "
            "--help of your version)."
        ),
        "",
        N_("vLLM and SGLang docs (model, --served-model-name)"),
    ),
    # merged: chunking
    CaveatSpec(
        "vllm-chunked-prefill",
        "vllm",
        "note",
        ("--enable-chunked-prefill",),
        N_(
            "V1 engines always chunk prefill (enable_chunked_prefill defaults to True); the flag "
            "matters on V0, where chunking was conditional."
        ),
        N_("V0; a no-op default on V1"),
        N_("vLLM docs (engine arguments, chunked prefill)"),
    ),
    CaveatSpec(
        "vllm-chunk-budget",
        "vllm",
        "note",
        ("--max-num-batched-tokens",),
        N_(
            "chunk_size {chunk} becomes the per-step token budget shared by all running requests "
            "(each decode takes 1), as V0's chunked-prefill default of 512 was. Smaller → smoother "
            "ITL, slower TTFT; serve's default is 2048 (8192 on ≥70 GiB GPUs other than A100). To "
            "cap one request's chunk without shrinking the whole step, use "
            "--long-prefill-token-threshold {chunk} with a larger budget instead. vLLM has no "
            "'multiple of N' rule; multiples of the KV block size (16) keep prefix-cache blocks "
            "whole."
        ),
        N_("all; defaults as of V1"),
        N_("vLLM docs (engine arguments, chunked prefill)"),
    ),
    CaveatSpec(
        "vllm-max-num-seqs",
        "vllm",
        "warning",
        ("--max-num-seqs",),
        N_(
            "vLLM refuses to start when max_num_batched_tokens < max_num_seqs, and serve's default "
            "max_num_seqs is 1024 on ≥70 GiB GPUs other than A100 (256 elsewhere); a budget of "
            "{chunk} tokens can run at most {chunk} sequences per step anyway, so kvswitch sets "
            "--max-num-seqs {seqs} (never above 256, the smaller default)."
        ),
        N_("V1 defaults"),
        N_("vLLM docs (engine arguments)"),
    ),
    CaveatSpec(
        "sglang-chunk",
        "sglang",
        "note",
        ("--chunked-prefill-size",),
        N_(
            "The most tokens in one prefill chunk; it must be a multiple of --page-size (default 1, "
            "so any value); -1 disables chunking. The default depends on GPU memory: 2048 "
            "(<35 GiB), 8192 (<160 GiB), 16384 above. SGLang does not mix decode tokens into a "
            "chunked-prefill batch unless --enable-mixed-chunk is given (off by default), unlike "
            "vLLM V1."
        ),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "chunk-small",
        "both",
        "warning",
        (),
        N_(
            "chunk_size {chunk} is below 256: every chunk re-reads the weights and TTFT gets worse "
            "(the Sarathi-Serve paper found 64 harmful). See KVS102."
        ),
        "",
        N_("the Sarathi-Serve paper; KVS102"),
    ),
    CaveatSpec(
        "chunk-64",
        "both",
        "note",
        (),
        N_(
            "chunk_size {chunk} is not a multiple of 64 (kvswitch lint --fix makes it {rounded}, "
            "KVS101). Neither engine requires it — vLLM has no divisibility rule, SGLang wants a "
            "multiple of --page-size — the hard rule is TensorRT-LLM's (a multiple of "
            "tokens_per_block)."
        ),
        "",
        N_("TensorRT-LLM docs (tokens_per_block); KVS101"),
    ),
    CaveatSpec(
        "chunk-split",
        "both",
        "note",
        (),
        N_(
            "chunk_size ({chunk}) is a merged-mode setting: in split mode the prefill instance "
            "keeps its engine's own chunking. Tune it there if needed (vLLM "
            "--max-num-batched-tokens, SGLang --chunked-prefill-size)."
        ),
        "",
        N_("vLLM and SGLang docs (chunked prefill)"),
    ),
    # prefix cache
    CaveatSpec(
        "vllm-prefix-on",
        "vllm",
        "note",
        ("--enable-prefix-caching",),
        N_(
            "On by default in V1 (off in V0, hence explicit). Only full KV blocks (16 tokens by "
            "default) are cached, and prefix caching speeds prefill only, never decode."
        ),
        N_("V1 default on; V0 default off"),
        N_("vLLM docs (automatic prefix caching)"),
    ),
    CaveatSpec(
        "vllm-prefix-off",
        "vllm",
        "note",
        ("--no-enable-prefix-caching",),
        N_(
            "prefix_cache = false turns V1's default off — the steady choice for mode comparisons "
            "with prompts that all differ."
        ),
        N_("V1 default on; V0 default off"),
        N_("vLLM docs (automatic prefix caching)"),
    ),
    CaveatSpec(
        "sglang-prefix-on",
        "sglang",
        "note",
        (),
        N_("SGLang's radix (prefix) cache is on by default, so prefix_cache = true needs no flag."),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-prefix-off",
        "sglang",
        "note",
        ("--disable-radix-cache",),
        N_("prefix_cache = false: turns the radix cache off (it is on by default)."),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-decode-radix",
        "sglang",
        "warning",
        ("--disaggregation-decode-enable-radix-cache",),
        N_(
            "In PD mode the decode server's radix cache is off unless this flag is given. The flag "
            "is in SGLang's server-argument table, but its docs do not say from which release: an "
            "older SGLang rejects it (drop the flag there)."
        ),
        N_("newer SGLang (release not established)"),
        N_("SGLang docs (server arguments)"),
    ),
    # KV cache dtype, vLLM
    CaveatSpec(
        "vllm-dtype-auto",
        "vllm",
        "note",
        ("--kv-cache-dtype",),
        N_("auto = the model's dtype."),
        N_("all releases"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-fp8",
        "vllm",
        "note",
        ("--kv-cache-dtype",),
        N_(
            "fp8 (= fp8_e4m3 on CUDA) roughly doubles KV capacity (vLLM measured 83k → 167k "
            "tokens). Uncalibrated scales are 1.0 and can degrade output; calibrate "
            "(calculate_kv_scales or llm-compressor)."
        ),
        N_("fp8 from v0.4.2; fp8_e4m3/fp8_e5m2 from v0.5"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-bf16",
        "vllm",
        "note",
        ("--kv-cache-dtype",),
        N_("bfloat16 is a listed value from about v0.10; with a bf16 model, auto is the same."),
        N_("~v0.10 and later"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-fp16",
        "vllm",
        "warning",
        ("--kv-cache-dtype",),
        N_("float16 exists only in the newest vLLM builds; older ones reject it — with an fp16 model use auto there."),
        N_("newest builds (2026) only"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-nvfp4",
        "vllm",
        "warning",
        ("--kv-cache-dtype",),
        N_("nvfp4 exists only in the newest vLLM builds."),
        N_("newest builds (2026) only"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-fp8_inc",
        "vllm",
        "warning",
        ("--kv-cache-dtype",),
        N_("fp8_inc is for Intel Gaudi."),
        N_("~v0.10–v0.12 list"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-int8",
        "vllm",
        "refused",
        ("--kv-cache-dtype",),
        N_(
            "vLLM has no plain int8 KV cache (no release lists it). Use fp8: "
            "kvswitch profile edit {profile} --kv-cache-dtype fp8. The newest builds add "
            "int8_per_token_head, a different scheme (set it by hand if you mean it); int8 KV "
            "proper is LMDeploy's (quant_policy=8) and TensorRT-LLM's."
        ),
        N_("all releases"),
        N_("vLLM docs (quantized KV cache); KVS105"),
    ),
    CaveatSpec(
        "vllm-dtype-int4",
        "vllm",
        "refused",
        ("--kv-cache-dtype",),
        N_(
            "vLLM has no plain int4 KV cache (the newest builds add int4_per_token_head, a "
            "different scheme). Use fp8; int4 KV is LMDeploy's (quant_policy=4)."
        ),
        N_("all releases"),
        N_("vLLM and LMDeploy docs (quantized KV cache)"),
    ),
    CaveatSpec(
        "vllm-dtype-other",
        "vllm",
        "refused",
        ("--kv-cache-dtype",),
        N_(
            "{dtype} is not a --kv-cache-dtype value of any vLLM release kvswitch knows (auto, "
            "fp8, fp8_e4m3, fp8_e5m2, bfloat16, fp8_inc, fp8_ds_mla; newest: float16, nvfp4, …). "
            "Use auto or fp8."
        ),
        N_("all releases"),
        N_("vLLM docs (quantized KV cache)"),
    ),
    # KV cache dtype, SGLang
    CaveatSpec(
        "sglang-dtype-auto",
        "sglang",
        "note",
        ("--kv-cache-dtype",),
        N_("auto = the model's dtype."),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-dtype-fp8",
        "sglang",
        "note",
        ("--kv-cache-dtype",),
        N_(
            "SGLang has no plain fp8 value: fp8 becomes fp8_e4m3 (what fp8 means in vLLM on CUDA). "
            "Scales default to 1.0; --quantization-param-path loads calibrated ones."
        ),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-dtype-listed",
        "sglang",
        "note",
        ("--kv-cache-dtype",),
        N_(
            "{value} is one of SGLang's values as written. Scales default to 1.0 for fp8 variants; "
            "--quantization-param-path loads calibrated ones."
        ),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-dtype-int8",
        "sglang",
        "refused",
        ("--kv-cache-dtype",),
        N_(
            "SGLang has no int8 KV cache (its values: auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, "
            "fp4_e2m1). Use fp8, which kvswitch passes as fp8_e4m3: "
            "kvswitch profile edit {profile} --kv-cache-dtype fp8."
        ),
        "",
        N_("SGLang docs (server arguments); KVS105"),
    ),
    CaveatSpec(
        "sglang-dtype-fp16",
        "sglang",
        "refused",
        ("--kv-cache-dtype",),
        N_("SGLang has no fp16 KV value; with an fp16 model, auto keeps fp16."),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    CaveatSpec(
        "sglang-dtype-other",
        "sglang",
        "refused",
        ("--kv-cache-dtype",),
        N_(
            "{dtype} is not an SGLang --kv-cache-dtype value (auto, fp8_e5m2, fp8_e4m3, bf16, "
            "bfloat16, fp4_e2m1 — the last is MXFP4, not nvfp4). Use auto or fp8."
        ),
        "",
        N_("SGLang docs (server arguments)"),
    ),
    # split: both engines
    CaveatSpec(
        "split-same-dtype",
        "both",
        "note",
        ("--kv-cache-dtype",),
        N_(
            "Prefill and decode must use the same KV dtype, and both get the profile's {dtype}. A "
            "mismatch silently disables SGLang's layer pipeline; TensorRT-LLM requires homogeneous "
            "KV."
        ),
        "",
        N_("SGLang and TensorRT-LLM docs (PD disaggregation)"),
    ),
    CaveatSpec(
        "split-no-throughput",
        "both",
        "note",
        (),
        N_(
            "Disaggregated prefill does not raise throughput (vLLM's docs): it lets TTFT and ITL be "
            "tuned apart, and adds a proxy hop and a KV transfer to every TTFT — at low load TTFT "
            "is usually worse than merged."
        ),
        "",
        N_("vLLM docs (disaggregated prefilling)"),
    ),
    CaveatSpec(
        "split-router-url",
        "both",
        "note",
        (),
        N_("The router listens on {url} — the profile's {field}; kvswitch probe and doctor send split requests there."),
        "",
        N_("kvswitch's profile (split.url, else base_url)"),
    ),
    CaveatSpec(
        "port-moved",
        "both",
        "warning",
        ("--port",),
        N_(
            "In the profile {clash} ({addr}); two servers cannot listen on one port, so kvswitch "
            "uses {moved}. Put the ports in the profile so clients and the probe match: {fix}. A "
            "split with one address for prefill and decode is what times out (KVS111)."
        ),
        "",
        N_("KVS111"),
    ),
    CaveatSpec(
        "side-port-moved",
        "both",
        "warning",
        (),
        N_("{name} would be {port}, which an HTTP server here already uses; kvswitch uses {moved}."),
        "",
        N_("vLLM and SGLang docs (side-channel and bootstrap ports)"),
    ),
    CaveatSpec(
        "same-host-gpus",
        "both",
        "warning",
        (),
        N_(
            "{who} run on one host ({host}), so kvswitch puts them on different GPUs ({how}). On "
            "one GPU they are only logically split and memory goes up, not down; --shared-gpu "
            "gives commands that share one card."
        ),
        "",
        N_("vLLM and SGLang docs (PD disaggregation on one node)"),
    ),
    CaveatSpec(
        "vllm-shared-gpu",
        "vllm",
        "warning",
        ("--gpu-memory-utilization",),
        N_(
            "--shared-gpu: prefill and decode share one GPU, so each gets {frac} (together "
            "{total}, below ~0.95). The fraction is a per-instance limit (default 0.92; 0.9 in "
            "older releases); 1.0 can OOM. One card is only a logical split: memory will not "
            "drop."
        ),
        N_("default 0.92 current, 0.9 older"),
        N_("vLLM docs (--gpu-memory-utilization)"),
    ),
    CaveatSpec(
        "sglang-shared-gpu",
        "sglang",
        "warning",
        ("--mem-fraction-static",),
        N_(
            "--shared-gpu: prefill and decode share one GPU, so each gets {frac} of it for weights "
            "and KV pool (default: auto, fallback 0.88). The 'sum below ~0.95' rule is vLLM's, for "
            "its per-instance limit; kvswitch applies it here too — check free memory after the "
            "first start. One card is only a logical split: memory will not drop."
        ),
        "",
        N_("SGLang docs (--mem-fraction-static)"),
    ),
    CaveatSpec(
        "shared-gpu-merged",
        "both",
        "note",
        (),
        N_("--shared-gpu only matters in split mode; merged is one instance."),
        "",
        "—",
    ),
    # split: vLLM
    CaveatSpec(
        "vllm-nixl",
        "vllm",
        "note",
        ("--kv-transfer-config",),
        N_(
            "NixlConnector (in the V1 connector registry from the v0.10 era on; names must be "
            "exact). Its kv_role is a placeholder — the proxy decides who prefills — so both "
            "instances get kv_both, as in vLLM's guide (kv_producer/kv_consumer are accepted "
            "too). Needs the nixl package; transport is UCX (UCX_TLS, UCX_NET_DEVICES; NCCL "
            "variables do not apply)."
        ),
        N_("V1 (v0.10 era and later)"),
        N_("vLLM docs (NixlConnector usage)"),
    ),
    CaveatSpec(
        "vllm-nixl-port",
        "vllm",
        "note",
        ("VLLM_NIXL_SIDE_CHANNEL_PORT",),
        N_(
            "The NIXL handshake port, default 5600, must be unique per worker per host "
            "(data-parallel ranks add their index), so prefill and decode on one host get "
            "different ones. On two machines set VLLM_NIXL_SIDE_CHANNEL_HOST (default localhost) "
            "on each."
        ),
        "",
        N_("vLLM docs (NixlConnector usage)"),
    ),
    CaveatSpec(
        "vllm-nixl-concurrency",
        "vllm",
        "note",
        (),
        N_(
            "max_transfer_concurrency ({n}) has no NixlConnector equivalent and is not applied "
            "(NIXL reads the blocks asynchronously after prefill)."
        ),
        "",
        N_("vLLM docs (NixlConnector usage)"),
    ),
    CaveatSpec(
        "vllm-mooncake",
        "vllm",
        "note",
        ("--kv-transfer-config",),
        N_(
            "MooncakeConnector (in later vLLM docs; not in the v0.10 V1 registry): kv_producer on "
            "prefill, kv_consumer on decode. Needs mooncake-transfer-engine; its protocol defaults "
            "to rdma (kv_connector_extra_config.mooncake_protocol)."
        ),
        N_("later V1 releases"),
        N_("vLLM docs (MooncakeConnector)"),
    ),
    CaveatSpec(
        "vllm-mooncake-workers",
        "vllm",
        "note",
        ("--kv-transfer-config",),
        N_(
            "max_transfer_concurrency {n} → kv_connector_extra_config.num_workers, the "
            "prefiller's transfer thread pool per worker (vLLM's default 10, so this may lower "
            "it)."
        ),
        "",
        N_("vLLM docs (MooncakeConnector)"),
    ),
    CaveatSpec(
        "vllm-mooncake-port",
        "vllm",
        "note",
        ("VLLM_MOONCAKE_BOOTSTRAP_PORT",),
        N_(
            "The prefiller's bootstrap port, default 8998 — also SGLang's default "
            "--disaggregation-bootstrap-port: pick another if both run on one host."
        ),
        "",
        N_("vLLM docs (MooncakeConnector)"),
    ),
    CaveatSpec(
        "vllm-layerwise",
        "vllm",
        "warning",
        (),
        N_(
            "transfer_protocol = layer-wise: vLLM has no generic layer-wise/request-wise flag. "
            "{connector} moves the KV cache per request; layer-wise transfer exists only in "
            "specific connectors (LMCache use_layerwise, a Mooncake layerwise variant in newer "
            "trees), which kvswitch does not generate. Expect request-wise behaviour."
        ),
        "",
        N_("vLLM docs (KV connectors)"),
    ),
    CaveatSpec(
        "vllm-proxy",
        "vllm",
        "note",
        (),
        N_(
            "The proxy is tests/v1/kv_connector/nixl_integration/toy_proxy_server.py from a vLLM "
            "source checkout (pip does not install it): round-robin, it sends the prefill request "
            "with max_tokens 1 and stream false, then streams the decode answer with Content-Type "
            "application/json (the body is SSE). Older copies take the singular "
            "--prefiller-host/--prefiller-port (still accepted). Alternatives: "
            "vllm-project/router (--vllm-pd-disaggregation), the production-stack router "
            "(--enable-pd), and for Mooncake newer releases' mooncake_connector_proxy.py "
            "--prefill URL --decode URL."
        ),
        "",
        N_("vLLM docs (nixl_connector_usage.md)"),
    ),
    # split: SGLang
    CaveatSpec(
        "sglang-disagg-mode",
        "sglang",
        "note",
        ("--disaggregation-mode",),
        N_("Chosen at launch: a decode server cannot prefill, so a mode flip means restarting both servers."),
        "",
        N_("SGLang docs (PD disaggregation)"),
    ),
    CaveatSpec(
        "sglang-backend",
        "sglang",
        "note",
        ("--disaggregation-transfer-backend",),
        N_(
            "{backend} (mooncake is the default; nixl, ascend and fake exist). Mooncake detects "
            "the RDMA device itself; name it with --disaggregation-ib-device (e.g. mlx5_0) if it "
            "picks the wrong one. NIXL's own transport defaults to UCX "
            "(SGLANG_DISAGGREGATION_NIXL_BACKEND)."
        ),
        "",
        N_("SGLang docs (PD disaggregation)"),
    ),
    CaveatSpec(
        "sglang-bootstrap",
        "sglang",
        "note",
        ("--disaggregation-bootstrap-port",),
        N_(
            "On the prefill server, default 8998 — also vLLM Mooncake's default bootstrap port; "
            "the router is told it after the prefill URL."
        ),
        "",
        N_("SGLang docs (PD disaggregation)"),
    ),
    CaveatSpec(
        "sglang-queue",
        "sglang",
        "note",
        ("SGLANG_DISAGGREGATION_QUEUE_SIZE",),
        N_(
            "max_transfer_concurrency {n} → the prefill server's parallel transfer queues "
            "(SGLang's default 4, the one engine default that matches kvswitch's). SGLang asserts "
            "thread pool ≥ queue size and the default pool is 0.75 × CPUs / 8 clamped to 4…12, so "
            "above 4 kvswitch sets SGLANG_DISAGGREGATION_THREAD_POOL_SIZE too. No engine's docs "
            "give 8 as an upper limit."
        ),
        "",
        N_("SGLang docs (PD disaggregation environment variables)"),
    ),
    CaveatSpec(
        "sglang-lp",
        "sglang",
        "note",
        ("--enable-disagg-layer-pipeline",),
        N_(
            "layer-wise → SGLang's layer pipeline, on both prefill and decode (newer SGLang, "
            "Mooncake only). --disagg-layer-group-size (default 4 layers per RDMA group) must "
            "match on both sides or it silently falls back; prompts shorter than "
            "--disagg-layer-pipeline-min-prefill-len (default 2048) skip it. It hides 30–50 % of "
            "the transfer under compute in SGLang's measurement (1P2D, H200, RDMA)."
        ),
        N_("newer SGLang"),
        N_("SGLang docs (PD disaggregation)"),
    ),
    CaveatSpec(
        "sglang-lp-nixl",
        "sglang",
        "refused",
        ("--enable-disagg-layer-pipeline",),
        N_(
            "transfer_protocol = layer-wise with the nixl backend: SGLang's layer pipeline runs "
            "only on Mooncake (it is rejected with NIXL). Use --transfer-backend mooncake, or "
            "kvswitch profile edit {profile} --transfer-protocol request-wise."
        ),
        "",
        N_("SGLang docs (PD disaggregation)"),
    ),
    # existing routers
    CaveatSpec(
        "sglang-router",
        "both",
        "note",
        (),
        N_(
            "SGLang's router (pip install sglang-router: a Rust wheel, no torch needed); it is "
            "ready when GET /readiness answers 200. It rewrites request bodies: fields it does not "
            "know are dropped (llama.cpp's id_slot and cache_prompt among them), custom headers "
            "are not passed on, max_tokens becomes max_completion_tokens. It serves no "
            "/v1/messages (404). A worker that dies mid-stream ends the client's connection with "
            "no error event; a client that goes away aborts its request. It answers 429 when its "
            "queue is full and 408 on a queue timeout. The old python -m "
            "sglang.srt.disaggregation.mini_lb was removed around v0.5.9."
        ),
        N_("measured with 0.3.2; mini_lb: until ~v0.5.9"),
        N_("SGLang router docs; sglang_router.launch_router --help; measured"),
    ),
    CaveatSpec(
        "sglang-router-pd",
        "sglang",
        "note",
        ("--pd-disaggregation", "--prefill"),
        N_(
            "PD mode sends each request to the prefill and the decode server at once (with "
            "bootstrap_host, bootstrap_port and bootstrap_room added) and holds the decode stream "
            "back until the prefill server's answer has ended; the prefill URL is followed by its "
            "bootstrap port ({bport}). An SGLang prefill server answers after one token. A "
            "prefill worker that generates the whole answer delays the first event by that whole "
            "generation: kvswitch's lab puts a one-token shim (python -m "
            "kvswitch.lab.prefill_shim) in front of a llama.cpp prefill worker."
        ),
        N_("measured with 0.3.2"),
        N_("sglang_router.launch_router --help; measured"),
    ),
    CaveatSpec(
        "vllm-router",
        "both",
        "note",
        (),
        N_(
            "vLLM's router (pip install vllm-router), a fork of SGLang's router. These flags come "
            "from its README and command-line reference, not from a run: check vllm-router --help "
            "of your version. The Rust binary and the Python launcher both install a vllm-router "
            "program, and their options differ slightly (--log-level, queue settings)."
        ),
        N_("2026 releases"),
        N_("vllm-project/router README and docs/cli_reference.md"),
    ),
    CaveatSpec(
        "vllm-router-pd",
        "vllm",
        "note",
        ("--vllm-pd-disaggregation", "--prefill", "--kv-connector"),
        N_(
            "PD mode for vLLM instances with a KV connector. With NIXL (the router's default "
            "connector) the prefill URL stands alone; with Mooncake the router needs "
            "--kv-connector mooncake and the prefiller's bootstrap port after its URL ({bport}), "
            "where it learns each prefill engine's id. Its docs start the instances with "
            "kv_producer and kv_consumer; kv_both is accepted too."
        ),
        N_("--kv-connector: newer releases"),
        N_("vllm-project/router README and docs/cli_reference.md"),
    ),
    CaveatSpec(
        "router-regular",
        "both",
        "note",
        ("--worker-urls",),
        N_(
            "Regular mode: the router balances whole requests over two instances that each "
            "prefill and decode; nothing is disaggregated. Split then differs from merged by the "
            "router hop and the second instance, so comparing the modes measures those, not "
            "disaggregation."
        ),
        "",
        N_("the routers' docs (regular mode)"),
    ),
    CaveatSpec(
        "router-policy",
        "both",
        "note",
        ("--policy",),
        N_(
            "{policy} here. cache_aware (both routers' default) sends a request to the worker "
            "holding the longest matching prefix, so a conversation keeps hitting one prefix "
            "cache; under light load it may send different prompts all to one worker (measured: "
            "four prompts, one worker). round_robin alternates whatever the prefix; power_of_two "
            "takes the less loaded of two."
        ),
        "",
        N_("the routers' --help; measured with sglang-router 0.3.2"),
    ),
    CaveatSpec(
        "router-metrics",
        "both",
        "note",
        ("--prometheus-host", "--prometheus-port"),
        N_(
            "The router serves Prometheus metrics on a port of its own, {port} (29000 is both "
            "routers' default). SGLang's router binds itself and its metrics to 0.0.0.0 unless "
            "told otherwise, so kvswitch always names the host."
        ),
        "",
        N_("sglang_router.launch_router --help; vllm-project/router docs/cli_reference.md"),
    ),
    CaveatSpec(
        "router-host",
        "both",
        "warning",
        ("--host", "--prometheus-host"),
        N_(
            "{url} is not a loopback address, so the router and its metrics listen on {host}, the "
            "host it names (not on every interface). Anyone who can reach that address can use "
            "the router: it checks no key unless configured to. If {host} is a name the router "
            "does not accept, give the address it resolves to."
        ),
        "",
        N_("the routers' --help (--host)"),
    ),
    CaveatSpec(
        "router-merged", "both", "note", (), N_("A router only matters in split mode; merged is one instance."), "", "—"
    ),
)


# -- the results --------------------------------------------------------------------------
@dataclass(frozen=True)
class Caveat:
    """A caveat as it applies to one profile: the catalogue entry with its text filled in."""

    code: str
    level: Level
    flags: tuple[str, ...]
    text: str
    versions: str
    source: str
    n: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "code": self.code,
            "level": self.level,
            "flags": list(self.flags),
            "text": self.text,
            "versions": self.versions,
            "source": self.source,
        }


@dataclass(frozen=True)
class Flag:
    """One command-line option and its values (none for a switch)."""

    name: str
    values: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        return [self.name, *self.values]


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the command needs."""

    name: str
    value: str
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    """One process to start: the merged instance, a prefill or decode instance, or the router."""

    role: Role
    url: str
    program: tuple[str, ...]
    flags: tuple[Flag, ...]
    env: tuple[EnvVar, ...] = ()
    caveats: tuple[str, ...] = ()
    """Caveats about the command as a whole (codes)."""

    @property
    def argv(self) -> list[str]:
        return [*self.program, *(a for f in self.flags for a in f.argv)]

    def shell(self, *, multiline: bool = False) -> str:
        """The command as one shell line (``multiline``: one flag per line, ``\\`` continued)."""
        env = [f"{e.name}={shlex.quote(e.value)}" for e in self.env]
        head = " ".join([*env, shlex.join(self.program)])
        parts = [shlex.join(f.argv) for f in self.flags]
        if not multiline:
            return " ".join([head, *parts])
        return " \\\n    ".join([head, *parts])

    def codes(self) -> list[str]:
        """Every caveat code this command refers to, in order."""
        out = list(self.caveats)
        for e in self.env:
            out += e.caveats
        for f in self.flags:
            out += f.caveats
        return out


@dataclass(frozen=True)
class EngineFlags:
    """The commands for one profile, engine and mode, with their numbered caveats."""

    engine: Engine
    mode: str
    profile: str | None
    model: str
    transfer_backend: Backend | None
    commands: tuple[Command, ...]
    caveats: tuple[Caveat, ...]
    router: str | None = None
    """split: ``sglang`` or ``vllm`` (an existing router), ``proxy`` (vLLM's example proxy)."""
    router_mode: RouterMode | None = None

    @property
    def ok(self) -> bool:
        """False when a profile value was refused (the flag is left out of the commands)."""
        return not any(c.level == "refused" for c in self.caveats)

    @property
    def refused(self) -> tuple[Caveat, ...]:
        return tuple(c for c in self.caveats if c.level == "refused")

    def numbers(self, codes: Iterable[str]) -> list[int]:
        by_code = {c.code: c.n for c in self.caveats}
        return sorted({by_code[c] for c in codes if c in by_code})

    def as_dict(self) -> dict[str, Any]:
        def flag(f: Flag) -> dict[str, Any]:
            return {"flag": f.name, "values": list(f.values), "caveats": self.numbers(f.caveats)}

        return {
            "kvswitch_engine_flags": 1,
            "engine": self.engine,
            "mode": self.mode,
            "profile": self.profile,
            "model": self.model,
            "transfer_backend": self.transfer_backend,
            "router": self.router,
            "router_mode": self.router_mode,
            "ok": self.ok,
            "commands": [
                {
                    "role": c.role,
                    "url": c.url,
                    "program": list(c.program),
                    "env": {e.name: e.value for e in c.env},
                    "env_caveats": {e.name: self.numbers(e.caveats) for e in c.env if e.caveats},
                    "flags": [flag(f) for f in c.flags],
                    "argv": c.argv,
                    "shell": c.shell(),
                    "caveats": self.numbers(c.codes()),
                }
                for c in self.commands
            ],
            "caveats": [c.as_dict() for c in self.caveats],
        }


# -- KV cache dtypes ----------------------------------------------------------------------
@dataclass(frozen=True)
class DtypeRule:
    """How one kvswitch ``kv_cache_dtype`` reaches an engine: the value passed (None: refused)."""

    value: str | None
    caveat: str


_LLAMA_CPP_TYPES = ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")

DTYPES: dict[str, dict[Engine, DtypeRule]] = {
    "auto": {"vllm": DtypeRule("auto", "vllm-dtype-auto"), "sglang": DtypeRule("auto", "sglang-dtype-auto")},
    "fp8": {"vllm": DtypeRule("fp8", "vllm-dtype-fp8"), "sglang": DtypeRule("fp8_e4m3", "sglang-dtype-fp8")},
    "fp8_e4m3": {
        "vllm": DtypeRule("fp8_e4m3", "vllm-dtype-fp8"),
        "sglang": DtypeRule("fp8_e4m3", "sglang-dtype-listed"),
    },
    "fp8_e5m2": {
        "vllm": DtypeRule("fp8_e5m2", "vllm-dtype-fp8"),
        "sglang": DtypeRule("fp8_e5m2", "sglang-dtype-listed"),
    },
    "bf16": {"vllm": DtypeRule("bfloat16", "vllm-dtype-bf16"), "sglang": DtypeRule("bf16", "sglang-dtype-listed")},
    "bfloat16": {
        "vllm": DtypeRule("bfloat16", "vllm-dtype-bf16"),
        "sglang": DtypeRule("bfloat16", "sglang-dtype-listed"),
    },
    "fp16": {"vllm": DtypeRule("float16", "vllm-dtype-fp16"), "sglang": DtypeRule(None, "sglang-dtype-fp16")},
    "float16": {"vllm": DtypeRule("float16", "vllm-dtype-fp16"), "sglang": DtypeRule(None, "sglang-dtype-fp16")},
    "f16": {"vllm": DtypeRule("float16", "vllm-dtype-fp16"), "sglang": DtypeRule(None, "sglang-dtype-fp16")},
    "nvfp4": {"vllm": DtypeRule("nvfp4", "vllm-dtype-nvfp4"), "sglang": DtypeRule(None, "sglang-dtype-other")},
    "fp8_inc": {"vllm": DtypeRule("fp8_inc", "vllm-dtype-fp8_inc"), "sglang": DtypeRule(None, "sglang-dtype-other")},
    "int8": {"vllm": DtypeRule(None, "vllm-dtype-int8"), "sglang": DtypeRule(None, "sglang-dtype-int8")},
    "int4": {"vllm": DtypeRule(None, "vllm-dtype-int4"), "sglang": DtypeRule(None, "sglang-dtype-other")},
}
"""kvswitch's ``kv_cache_dtype`` values (lint's KVS104 list) → each engine. Anything else
(fp32, llama.cpp's q8_0 …) is refused with the ``*-dtype-other`` caveat."""


def dtype_rule(dtype: str, engine: Engine) -> DtypeRule:
    rule = DTYPES.get(dtype)
    return rule[engine] if rule else DtypeRule(None, f"{engine}-dtype-other")


# -- addresses ----------------------------------------------------------------------------
def _host_key(host: str) -> str:
    return "loopback" if is_loopback_host(host) else host.lower()


@dataclass
class _Where:
    role: Role
    profile_url: str
    field: str
    scheme: str
    host: str
    port: int
    path: str
    explicit_port: bool
    moved: bool = False

    @property
    def url(self) -> str:
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        return urlunsplit((self.scheme or "http", f"{netloc}:{self.port}", self.path, "", ""))

    @property
    def bind(self) -> str:
        return self.host if is_loopback_host(self.host) else "0.0.0.0"  # stated in the listen-all caveat

    @property
    def key(self) -> tuple[str, int]:
        return _host_key(self.host), self.port


def _where(role: Role, url: str, field_name: str, engine: Engine) -> _Where:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    try:
        port = parts.port
    except ValueError:
        port = None
    return _Where(
        role,
        url,
        field_name,
        parts.scheme,
        host,
        port or DEFAULT_PORTS[engine][role],
        parts.path.rstrip("/"),
        port is not None,
    )


def _rounded64(n: int) -> int:
    return max(64, ((n + 32) // 64) * 64)


# -- building -----------------------------------------------------------------------------
@dataclass
class _Build:
    engine: Engine
    profile: Profile
    profile_name: str | None
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Caveats not attached to a flag (code, params), and the params of every used code."""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def pname(self) -> str:
        return self.profile_name or "NAME"

    def use(self, code: str, **params: Any) -> str:
        """Register ``code`` (with its text's params) and return it, to attach to a flag."""
        if code not in CAVEATS:  # pragma: no cover - a typo in this module
            raise KeyError(code)
        self.params.setdefault(code, {}).update(params)
        return code

    def note(self, code: str, **params: Any) -> None:
        self.use(code, **params)
        self.notes.append((code, params))

    # flags shared by every engine instance
    def address(self, w: _Where) -> list[Flag]:
        host = Flag("--host", (w.bind,), (self.use("listen-all", url=w.profile_url),) if w.bind == "0.0.0.0" else ())
        codes: list[str] = []
        if not w.explicit_port:
            codes.append(self.use("default-port", url=w.profile_url, port=w.port, field=w.field))
        if w.moved:
            codes.append("port-moved")
        return [host, Flag("--port", (str(w.port),), tuple(codes))]

    def dtype(self, split: bool) -> list[Flag]:
        dtype = self.profile.cache.kv_cache_dtype
        rule = dtype_rule(dtype, self.engine)
        code = self.use(rule.caveat, dtype=dtype, value=rule.value or "", profile=self.pname)
        if rule.value is None:
            self.notes.append((code, {}))
            return []
        codes = [code]
        if split:
            codes.append(self.use("split-same-dtype", dtype=rule.value))
        return [Flag("--kv-cache-dtype", (rule.value,), tuple(codes))]

    def chunk_notes(self, split: bool) -> None:
        chunk = self.profile.merged.chunk_size
        if split:
            self.note("chunk-split", chunk=chunk)
            return
        if chunk < 256:
            self.note("chunk-small", chunk=chunk)
        if chunk % 64:
            self.note("chunk-64", chunk=chunk, rounded=_rounded64(chunk))

    def hosted(self, w: _Where) -> None:
        if w.scheme == "https" and not is_loopback_host(w.host):
            self.note("hosted", url=w.profile_url)

    def finish(
        self, mode: str, backend: Backend | None, commands: list[Command], route: _Route | None = None
    ) -> EngineFlags:
        order: list[str] = []
        for cmd in commands:
            for code in cmd.codes():
                if code not in order:
                    order.append(code)
        for code, _ in self.notes:
            if code not in order:
                order.append(code)
        order.sort(key=lambda c: _LEVEL_ORDER[CAVEATS[c].level])  # stable: first use within a level
        caveats = []
        for n, code in enumerate(order, 1):
            spec = CAVEATS[code]
            text = _shown(spec.text).format_map(_Params(self.params.get(code, {})))
            caveats.append(Caveat(code, spec.level, spec.flags, text, _shown(spec.versions), _shown(spec.source), n))
        return EngineFlags(
            self.engine,
            mode,
            self.profile_name,
            self.profile.model,
            backend,
            tuple(commands),
            tuple(caveats),
            route.shown if route else None,
            route.mode if route else None,
        )


def _shown(text: str) -> str:
    """A catalogue text (marked with ``N_`` above) in the user's language; ``""`` stays empty
    (gettext would answer it with the catalogue's header)."""
    from kvswitch import i18n

    return i18n.tr(text) if text else text


class _Params(dict[str, Any]):
    def __missing__(self, key: str) -> str:  # pragma: no cover - a placeholder without a value
        return "{" + key + "}"


def _prefix_flags(b: _Build, role: Role) -> list[Flag]:
    on = b.profile.cache.prefix_cache
    if b.engine == "vllm":
        if on:
            return [Flag("--enable-prefix-caching", (), (b.use("vllm-prefix-on"),))]
        return [Flag("--no-enable-prefix-caching", (), (b.use("vllm-prefix-off"),))]
    if role == "decode":
        # in PD mode the decode side's radix cache is off unless asked for
        return [Flag("--disaggregation-decode-enable-radix-cache", (), (b.use("sglang-decode-radix"),))] if on else []
    if on:
        b.note("sglang-prefix-on")
        return []
    return [Flag("--disable-radix-cache", (), (b.use("sglang-prefix-off"),))]


def _program(b: _Build) -> tuple[str, ...]:
    model = b.profile.model
    return (*VLLM_SERVE, model) if b.engine == "vllm" else (*SGLANG_SERVE, "--model-path", model)


def _instance_flags(b: _Build, w: _Where) -> list[Flag]:
    """A whole instance's flags (it prefills and decodes): address, chunk, prefix cache, KV dtype."""
    chunk = b.profile.merged.chunk_size
    flags = b.address(w)
    if b.engine == "vllm":
        flags += [
            Flag("--enable-chunked-prefill", (), (b.use("vllm-chunked-prefill"),)),
            Flag("--max-num-batched-tokens", (str(chunk),), (b.use("vllm-chunk-budget", chunk=chunk),)),
        ]
        if chunk < 1024:
            seqs = min(chunk, 256)
            flags.append(Flag("--max-num-seqs", (str(seqs),), (b.use("vllm-max-num-seqs", chunk=chunk, seqs=seqs),)))
    else:
        flags.append(Flag("--chunked-prefill-size", (str(chunk),), (b.use("sglang-chunk"),)))
    flags += _prefix_flags(b, "merged")
    flags += b.dtype(split=False)
    return flags


def _merged(b: _Build) -> list[Command]:
    own = b.profile.merged.url
    w = _where("merged", own or b.profile.base_url, "merged.url" if own else "base_url", b.engine)
    b.hosted(w)
    b.chunk_notes(split=False)
    flags = _instance_flags(b, w)
    return [Command("merged", w.url, _program(b), tuple(flags), (), (b.use("model-id", model=b.profile.model),))]


def _place(b: _Build, router: _Where, prefill: _Where, decode: _Where) -> None:
    """Give each of the three servers its own port (the router keeps the profile's)."""
    servers = (router, prefill, decode)
    groups: dict[tuple[str, int], list[_Where]] = {}
    for w in servers:
        groups.setdefault(w.key, []).append(w)
    taken = {router.key}
    moved: list[_Where] = []
    for w in (prefill, decode):
        if w.key in taken:
            port = DEFAULT_PORTS[b.engine][w.role]
            while (_host_key(w.host), port) in taken:
                port += 1
            w.port, w.moved = port, True
            moved.append(w)
        taken.add(w.key)
    if not moved:
        return
    clashes = [ws for ws in groups.values() if len(ws) > 1]
    said = [tr("{servers} are one address").format(servers=_and([_named(w) for w in ws])) for ws in clashes]
    clash = said[0]
    for more in said[1:]:
        clash = tr("{earlier}; {next_group}").format(earlier=clash, next_group=more)
    addr = ", ".join(f"{ws[0].host}:{ws[0].port}" for ws in clashes)  # the first of a group stays
    b.use(
        "port-moved",
        clash=clash,
        addr=addr,
        moved=_and([_moved_to(w) for w in moved]),
        fix=f"kvswitch profile edit {b.pname} " + " ".join(f"--{w.role}-base-url {w.url}" for w in moved),
    )


def _named(w: _Where) -> str:
    """``the prefill instance (split.prefill_base_url)``, in the user's language."""
    if w.role == "router":
        return tr("the router ({field})").format(field=w.field)
    if w.role == "prefill":
        return tr("the prefill instance ({field})").format(field=w.field)
    return tr("the decode instance ({field})").format(field=w.field)


def _moved_to(w: _Where) -> str:
    """``http://…:8100/v1 for the prefill instance``, in the user's language."""
    if w.role == "prefill":
        return tr("{url} for the prefill instance").format(url=w.url)
    return tr("{url} for the decode instance").format(url=w.url)


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (in the user's language)."""
    text = items[0]
    for item in items[1:-1]:
        text = tr("{earlier}, {next_item}").format(earlier=text, next_item=item)
    if len(items) > 1:
        text = tr("{earlier} and {last_item}").format(earlier=text, last_item=items[-1])
    return text


def _side_port(
    b: _Build, name: str, port: int, host: str, used: set[tuple[str, int]], http: set[tuple[str, int]]
) -> int:
    """``port``, or the next one free on ``host``; says so when an HTTP server took it."""
    start, clashed = port, False
    while (_host_key(host), port) in used:
        clashed = clashed or (_host_key(host), port) in http
        port += 1
    if clashed:
        b.note("side-port-moved", name=name, port=start, moved=port)
    used.add((_host_key(host), port))
    return port


@dataclass(frozen=True)
class _Route:
    """The router in front of the split side: ``name`` None is vLLM's example proxy."""

    name: Router | None
    mode: RouterMode
    policy: Policy
    metrics_port: int | None

    @property
    def shown(self) -> str:
        return self.name or "proxy"


def _split(b: _Build, backend: Backend, shared_gpu: bool, route: _Route) -> list[Command]:
    p = b.profile
    own = p.split.url or p.split.probe_url
    router_field = "split.url" if own else "base_url"
    router = _where("router", own or p.base_url, router_field, b.engine)
    prefill = _where(
        "prefill",
        p.split.prefill_base_url or p.base_url,
        "split.prefill_base_url" if p.split.prefill_base_url else "base_url",
        b.engine,
    )
    decode = _where(
        "decode",
        p.split.decode_base_url or p.base_url,
        "split.decode_base_url" if p.split.decode_base_url else "base_url",
        b.engine,
    )
    for w in (router, prefill, decode):
        b.hosted(w)
    _place(b, router, prefill, decode)
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
        bport = _disaggregated(b, backend, prefill, decode, used, http, (pf, penv), (df, denv))
    _placement(b, shared_gpu, prefill, decode, regular, (pf, penv), (df, denv))
    if not regular:
        pf += _prefix_flags(b, "prefill")
        df += _prefix_flags(b, "decode")
        pf += b.dtype(split=True)
        df += b.dtype(split=True)

    model_code = b.use("model-id", model=p.model)
    roles: tuple[Role, Role] = ("worker", "worker") if regular else ("prefill", "decode")
    return [
        Command(roles[0], prefill.url, _program(b), tuple(pf), tuple(penv), (model_code,)),
        Command(roles[1], decode.url, _program(b), tuple(df), tuple(denv), (model_code,)),
        _router(b, route, backend, router, prefill, decode, bport, used, http),
    ]


_Side = tuple[list[Flag], list[EnvVar]]


def _disaggregated(
    b: _Build,
    backend: Backend,
    prefill: _Where,
    decode: _Where,
    used: set[tuple[str, int]],
    http: set[tuple[str, int]],
    pside: _Side,
    dside: _Side,
) -> int:
    """The KV transfer flags of a prefill and a decode instance; returns the bootstrap port."""
    p = b.profile
    (pf, penv), (df, denv) = pside, dside
    bport = BOOTSTRAP_PORT
    layer = p.split.transfer_protocol == "layer-wise"
    n = p.split.max_transfer_concurrency
    if b.engine == "vllm":
        connector = "NixlConnector" if backend == "nixl" else "MooncakeConnector"
        if backend == "nixl":
            code = b.use("vllm-nixl")
            config = {"kv_connector": connector, "kv_role": "kv_both"}
            pf.append(Flag("--kv-transfer-config", (_json(config),), (code,)))
            df.append(Flag("--kv-transfer-config", (_json(config),), (code,)))
            pport = _side_port(b, "VLLM_NIXL_SIDE_CHANNEL_PORT", NIXL_SIDE_CHANNEL_PORT, prefill.host, used, http)
            dport = _side_port(b, "VLLM_NIXL_SIDE_CHANNEL_PORT", NIXL_SIDE_CHANNEL_PORT, decode.host, used, http)
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
            bport = _side_port(b, "VLLM_MOONCAKE_BOOTSTRAP_PORT", BOOTSTRAP_PORT, prefill.host, used, http)
            penv.append(EnvVar("VLLM_MOONCAKE_BOOTSTRAP_PORT", str(bport), (b.use("vllm-mooncake-port"),)))
        if layer:
            b.note("vllm-layerwise", connector=connector)
        return bport
    mode_code = b.use("sglang-disagg-mode")
    backend_code = b.use("sglang-backend", backend=backend)
    bport = _side_port(b, "--disaggregation-bootstrap-port", BOOTSTRAP_PORT, prefill.host, used, http)
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


def _placement(
    b: _Build, shared_gpu: bool, first: _Where, second: _Where, regular: bool, pside: _Side, dside: _Side
) -> None:
    """Two instances on one host go on two GPUs, or share one (``shared_gpu``)."""
    (pf, penv), (df, denv) = pside, dside
    if shared_gpu:
        if b.engine == "vllm":
            code = b.use("vllm-shared-gpu", frac=SHARED_GPU_FRACTION, total=_total())
            share = Flag("--gpu-memory-utilization", (SHARED_GPU_FRACTION,), (code,))
        else:
            code = b.use("sglang-shared-gpu", frac=SHARED_GPU_FRACTION)
            share = Flag("--mem-fraction-static", (SHARED_GPU_FRACTION,), (code,))
        pf.append(share)
        df.append(share)
    elif _host_key(first.host) == _host_key(second.host):
        who = tr("The two workers") if regular else tr("Prefill and decode")
        if b.engine == "vllm":
            how = tr("{variable}=0 and =1").format(variable="CUDA_VISIBLE_DEVICES")
            code = b.use("same-host-gpus", host=first.host, how=how, who=who)
            penv.insert(0, EnvVar("CUDA_VISIBLE_DEVICES", "0", (code,)))
            denv.insert(0, EnvVar("CUDA_VISIBLE_DEVICES", "1", (code,)))
        else:
            how = (
                tr("the second worker gets {flag}, as in SGLang's single-node example")
                if regular
                else tr("the decode server gets {flag}, as in SGLang's single-node example")
            )
            how = how.format(flag="--base-gpu-id 1")
            code = b.use("same-host-gpus", host=first.host, how=how, who=who)
            df.append(Flag("--base-gpu-id", ("1",), (code,)))


def _router(
    b: _Build,
    route: _Route,
    backend: Backend,
    router: _Where,
    prefill: _Where,
    decode: _Where,
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
    metrics = _side_port(b, "--prometheus-port", route.metrics_port or ROUTER_METRICS_PORT, router.host, used, http)
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


def _router_host(w: _Where) -> str:
    """Where a router listens: the profile's host; a loopback name (``localhost``) as 127.0.0.1."""
    if not is_loopback_host(w.host):
        return w.host
    try:
        ipaddress.ip_address(w.host)
    except ValueError:
        return "127.0.0.1"
    return w.host


def _origin(w: _Where) -> str:
    netloc = f"[{w.host}]" if ":" in w.host else w.host
    return f"http://{netloc}:{w.port}"


def _total() -> str:
    return f"{2 * float(SHARED_GPU_FRACTION):.2f}"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


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
    b = _Build(engine, profile, profile_name)
    if mode == "merged":
        if shared_gpu:
            b.note("shared-gpu-merged")
        if router is not None or router_mode != "pd":
            b.note("router-merged")
        return b.finish(mode, None, _merged(b))
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
    route = _Route(name, router_mode, policy, metrics_port)
    backend = transfer_backend or DEFAULT_BACKEND[engine]
    commands = _split(b, backend, shared_gpu, route)
    return b.finish(mode, None if router_mode == "regular" else backend, commands, route)


# -- the reference (docs/engines.md, generated) -------------------------------------------
MAPPING: tuple[tuple[str, str, str], ...] = (
    (
        "`merged.url` (else `base_url`)",
        f"`{' '.join(VLLM_SERVE)} MODEL --host H --port P` (host and port from the URL; not loopback → `0.0.0.0`)",
        f"`{' '.join(SGLANG_SERVE)} --model-path MODEL --host H --port P`",
    ),
    ("`model`", "`MODEL` (a Hugging Face id or a local path)", "`--model-path MODEL`"),
    (
        "`merged.chunk_size` N",
        "`--enable-chunked-prefill --max-num-batched-tokens N` (+ `--max-num-seqs min(N, 256)` when N < 1024); "
        "alternative: `--long-prefill-token-threshold N`",
        "`--chunked-prefill-size N`",
    ),
    (
        "`cache.prefix_cache`",
        "`--enable-prefix-caching` / `--no-enable-prefix-caching`",
        "on: no flag (default); off: `--disable-radix-cache`; split decode, on: "
        "`--disaggregation-decode-enable-radix-cache`",
    ),
    ("`cache.kv_cache_dtype`", "`--kv-cache-dtype V` (table below)", "`--kv-cache-dtype V` (table below)"),
    (
        "`split.prefill_base_url`",
        'the prefill instance: `--kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\'` '
        "(Mooncake: `MooncakeConnector`, `kv_producer`)",
        "the prefill instance: `--disaggregation-mode prefill --disaggregation-transfer-backend mooncake|nixl "
        f"--disaggregation-bootstrap-port {BOOTSTRAP_PORT}`",
    ),
    (
        "`split.decode_base_url`",
        "the decode instance: the same NIXL config (Mooncake: `kv_consumer`)",
        "the decode instance: `--disaggregation-mode decode --disaggregation-transfer-backend mooncake|nixl`",
    ),
    (
        "`split.transfer_protocol`",
        "no flag: NIXL and Mooncake move KV per request (layer-wise: a warning)",
        "`layer-wise` → `--enable-disagg-layer-pipeline` on both (Mooncake only; refused with NIXL); "
        "`request-wise` → no flag",
    ),
    (
        "`split.max_transfer_concurrency` N",
        "Mooncake: `kv_connector_extra_config.num_workers` N on prefill; NIXL: none",
        "`SGLANG_DISAGGREGATION_QUEUE_SIZE=N` on prefill (+ `SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=N` when N > 4)",
    ),
    (
        "`split.url` (else `base_url`)",
        f"the proxy: `{' '.join(VLLM_PROXY)} --host H --port P --prefiller-hosts … --prefiller-ports … "
        "--decoder-hosts … --decoder-ports …`",
        f"the router: `{' '.join(SGLANG_ROUTER)} --host H --port P --prometheus-host H --prometheus-port "
        f"{ROUTER_METRICS_PORT} --pd-disaggregation --prefill URL {BOOTSTRAP_PORT} --decode URL --policy cache_aware` "
        "(other routers: the table below)",
    ),
    (
        "prefill and decode on one host",
        "`CUDA_VISIBLE_DEVICES=0` / `=1`; `--shared-gpu`: `--gpu-memory-utilization 0.45` each",
        "decode `--base-gpu-id 1`; `--shared-gpu`: `--mem-fraction-static 0.45` each",
    ),
)
"""(profile field, vLLM, SGLang): the rows of the generated table."""

OTHER_ENGINES: tuple[tuple[str, str], ...] = (
    (
        "llama.cpp (llama-server)",
        "Merged is how llama.cpp's server works: `--parallel N` slots with continuous batching, each step made "
        "of one decode token per generating slot plus up to `n_batch` prompt tokens, so `--batch-size` "
        "(`n_batch`, with `--ubatch-size`) is the prefill chunk that maps from `chunk_size`; measured on CPU, a "
        "smaller `n_batch` bounds the decode stall at the cost of the new request's TTFT. Prefix reuse is the "
        "per-request `cache_prompt` (on by default). Its KV cache types are its own (`q8_0`, `q4_0` …, which "
        "kvswitch's lint knows). It has no prefill/decode disaggregation; the kvswitch lab emulates split by "
        "saving a slot's KV on one server and restoring it on another (`POST /slots/{id}?action=save|restore` "
        "with `--slot-save-path`; measured TTFT 22 ms on the decode server against 796 ms cold). "
        "Source: llama.cpp's server README; measured with kvswitch's lab.",
    ),
    (
        "TensorRT-LLM",
        "Chunked prefill is `enable_chunked_prefill=True` in the LLM API (`--enable_chunked_context` on older "
        "engine builds) with paged KV; `max_num_tokens` must be a multiple of the KV block size "
        "`tokens_per_block` (64 on the TRT-engine path, 32 by default on the PyTorch backend) — the one "
        "documented hard 'multiple of 64' rule. Split is `trtllm-serve disaggregated -c disagg_config.yaml` "
        "with `context_servers`/`generation_servers` and a per-server `cache_transceiver_config` (backend "
        "DEFAULT, UCX, NIXL, MPI; newer MOONCAKE); `TRTLLM_KVCACHE_SEND_MAX_CONCURRENCY_NUM` (default 1) is "
        "the closest knob to `max_transfer_concurrency`. Prefix reuse is `kv_cache_config.enable_block_reuse`. "
        "int8 and fp8 KV exist (`--kv_cache_dtype int8|fp8` at quantization/engine build, `fp8` in the PyTorch "
        "flow); disaggregation needs the same KV dtype on both sides. Connections are set up lazily: warm up "
        "before measuring. Source: TensorRT-LLM's docs (disaggregated serving, KV cache).",
    ),
    (
        "LMDeploy",
        "The chunk is `max_prefill_token_num` (default 8192); KV memory `cache_max_entry_count` (default 0.8); "
        "prefix caching `--enable-prefix-caching` (default off). It is the engine with online int8/int4 KV: "
        "`quant_policy=8` is int8, `4` is int4 — where kvswitch's `int8` has a real meaning. PD "
        "disaggregation (PyTorch backend only): `lmdeploy serve proxy --serving-strategy DistServe` in front of "
        "`lmdeploy serve api_server … --role Prefill|Decode --proxy-url … --backend pytorch` "
        "(`--migration-backend DLSlime|Mooncake`, `--migration-protocol RDMA|NVLink`); the newest tree moves "
        "the proxy to a Rust `lmdeploy-router`. Source: LMDeploy's docs (PD disaggregation, KV quantization).",
    ),
    (
        "NVIDIA Dynamo",
        "An orchestration layer over vLLM, SGLang and TensorRT-LLM workers with a KV-aware router and NIXL "
        "transfers. It disaggregates *conditionally*: a prefill goes remote only when it is longer than "
        "`max_local_prefill_length` (default 1000 tokens) and the decode side's prefix hit is low "
        "(`max_remote_prefill_cache_hit_ratio` 0.5) — a per-request choice that kvswitch's launch-time mode "
        "does not model. Its frontend exports client-side TTFT/ITL histograms "
        "(`dynamo_frontend_time_to_first_token_seconds`). Gateways route with internal headers "
        "(`x-dynamo-routing-mode`), not the `X-Cache-Mode` header kvswitch writes. Source: NVIDIA Dynamo's docs "
        "(disaggregated serving, KV router).",
    ),
)
"""One paragraph per engine kvswitch does not generate commands for."""


def _placeholders(text: str) -> str:
    return re.sub(r"\{(\w+)\}", r"‹\1›", text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def engines_reference() -> str:
    """The generated part of ``docs/engines.md`` (markdown), from the data above."""
    out = [
        "## How a profile maps onto vLLM and SGLang",
        "",
        "| profile | vLLM | SGLang |",
        "|---|---|---|",
    ]
    out += [f"| {_cell(a)} | {_cell(v)} | {_cell(s)} |" for a, v, s in MAPPING]
    out += [
        "",
        "## `kv_cache_dtype` per engine",
        "",
        "What `--kv-cache-dtype` gets; **refused** means the flag is left out, the caveat says what to "
        "use instead, and `kvswitch engine-flags` exits 1. Any other value (`fp32`, llama.cpp's "
        f"{', '.join(f'`{t}`' for t in _LLAMA_CPP_TYPES)} …) is refused by both.",
        "",
        "| profile | vLLM | SGLang |",
        "|---|---|---|",
    ]
    for dtype, rules in DTYPES.items():
        cells = []
        for engine in ENGINES:
            rule = rules[engine]
            spec = CAVEATS[rule.caveat]
            shown = f"`{rule.value}`" if rule.value else "**refused**"
            if spec.versions and spec.versions not in ("all releases", ""):
                shown += f" ({spec.versions})"
            cells.append(f"{shown} — `{rule.caveat}`")
        out.append(f"| `{dtype}` | {_cell(cells[0])} | {_cell(cells[1])} |")
    out += [
        "",
        "## The caveats",
        "",
        "Every caveat `kvswitch engine-flags` can attach, by code. Levels: **refused** (the profile asks for "
        "something the engine does not have; exit 1), **warning** (check before you rely on it), **note**. "
        "‹placeholders› are filled from the profile.",
        "",
        "| code | engine | level | flags | versions | caveat | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in CAVEATS.values():
        who = ENGINE_NAMES.get(spec.engine, spec.engine)
        flags = " ".join(f"`{f}`" for f in spec.flags) or "—"
        out.append(
            f"| `{spec.code}` | {who} | {spec.level} | {_cell(flags)} | {_cell(spec.versions or '—')} "
            f"| {_cell(_placeholders(spec.text))} | {_cell(spec.source)} |"
        )
    out += [
        "",
        "## Existing routers in front of the split side",
        "",
        "`--router sglang|vllm` puts an existing router on `split.url` (else `base_url`), listening on "
        "loopback unless that URL names another host (then that host, with a warning). `--router-mode pd` "
        "(the default) puts it in front of the prefill and the decode instance; `--router-mode regular` in "
        "front of two whole instances on `split.prefill_base_url` and `split.decode_base_url`. A router's PD "
        "mode drives its own engine's instances only.",
        "",
        "| router | install | regular mode | PD mode | checked |",
        "|---|---|---|---|---|",
    ]
    for rs in ROUTER_SPECS.values():
        head = f"{' '.join(rs.program)} --host H --port P --prometheus-host H --prometheus-port {ROUTER_METRICS_PORT}"
        pd = f"{rs.pd_flag} --prefill URL [BOOTSTRAP_PORT] --decode URL"
        out.append(
            f"| {rs.name} | `{rs.install}` | `{head} --worker-urls URL1 URL2 --policy P` "
            f"| `{head} {pd} --policy P` | {_cell(rs.checked)} |"
        )
    out += ["", "## Other engines", ""]
    for name, text in OTHER_ENGINES:
        out += [f"**{name}.** {text}", ""]
    return "\n".join(out).rstrip("\n") + "\n"
