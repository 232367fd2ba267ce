"""The generated part of ``docs/engines.md`` (markdown, English: the source text), rendered from
the same data the commands come from: how a profile maps onto vLLM and SGLang, the
``kv_cache_dtype`` table, every caveat, the existing routers and the engines kvswitch gives no
commands for."""

from __future__ import annotations

import re

from kvswitch.engine_flags.caveats import CAVEATS
from kvswitch.engine_flags.dtypes import DTYPES, LLAMA_CPP_TYPES
from kvswitch.engine_flags.model import (
    BOOTSTRAP_PORT,
    ENGINE_NAMES,
    ENGINES,
    ROUTER_METRICS_PORT,
    ROUTER_SPECS,
    SGLANG_ROUTER,
    SGLANG_SERVE,
    VLLM_PROXY,
    VLLM_SERVE,
)

__all__ = ["MAPPING", "OTHER_ENGINES", "engines_reference"]


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
    """The generated part of ``docs/engines.md`` (markdown), from the engine-flags data."""
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
        f"{', '.join(f'`{t}`' for t in LLAMA_CPP_TYPES)} …) is refused by both.",
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
