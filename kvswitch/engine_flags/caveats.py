"""The caveats catalogue as data: every caveat ``kvswitch engine-flags`` can attach, by code.

Each entry names the flags it attaches to, its level (``refused``: the engine does not have what
the profile asks for, the flag is left out; ``warning``; ``note``), the engine versions it
applies to and the public document it rests on. Texts are English msgids marked with ``N_``
(translated when a result is built); ``{placeholders}`` are filled per profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvswitch.i18n import N_

__all__ = ["CAVEATS", "LEVEL_ORDER", "CaveatSpec", "Level"]

Level = Literal["refused", "warning", "note"]

LEVEL_ORDER = {"refused": 0, "warning": 1, "note": 2}
"""How caveats are numbered: refusals first, then warnings, then notes."""


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
