"""kvswitch's ``kv_cache_dtype`` values and what each engine gets for them (``--kv-cache-dtype``
or a refusal), with the caveat that explains it."""

from __future__ import annotations

from dataclasses import dataclass

from kvswitch.engine_flags.model import Engine

__all__ = ["DTYPES", "LLAMA_CPP_TYPES", "DtypeRule", "dtype_rule"]


@dataclass(frozen=True)
class DtypeRule:
    """How one kvswitch ``kv_cache_dtype`` reaches an engine: the value passed (None: refused)."""

    value: str | None
    caveat: str


LLAMA_CPP_TYPES = ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
"""llama.cpp's KV cache types, which both engines refuse (named in the reference)."""

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
    """How ``dtype`` reaches ``engine``; a value kvswitch does not know is refused."""
    rule = DTYPES.get(dtype)
    return rule[engine] if rule else DtypeRule(None, f"{engine}-dtype-other")
