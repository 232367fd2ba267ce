"""The lint path's schema checker and the pydantic models agree on where the errors are."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kvswitch.models import CCSwitchConfig, ClineSettings, KvswitchConfig
from kvswitch.schema_check import check_schema

MODELS = {"cline": ClineSettings, "ccswitch": CCSwitchConfig, "kvswitch": KvswitchConfig}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3000),
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from(
        [
            "merged",
            "split",
            "both",
            "layer-wise",
            "request-wise",
            "auto",
            "cline",
            "ccswitch",
            "keyring",
            "none",
            "signal",
            "http://127.0.0.1:8000",
            "512",
            "",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)

CCSWITCH_KEYS = {
    "provider": ["name", "base_url", "api_key", "model"],
    "cache": ["mode", "chunk_size", "kv_cache_dtype", "prefix_cache", "split"],
    "request": ["temperature", "max_tokens", "stream", "timeout_seconds"],
}
SPLIT_KEYS = ["prefill_base_url", "decode_base_url", "transfer_protocol", "max_transfer_concurrency"]
CLINE_KEYS = [
    "cline.apiProvider",
    "cline.openAiBaseUrl",
    "cline.openAiApiKey",
    "cline.openAiModelId",
    "cline.requestOptions",
    "cline.cacheStrategy",
    "cline.other",
]
CLINE_INNER = [
    "mode",
    "chunkSize",
    "kvCacheDtype",
    "enablePrefixCache",
    "prefillEndpoint",
    "decodeEndpoint",
    "kvTransferProtocol",
    "temperature",
    "maxTokens",
    "stream",
]
PROFILE_KEYS = ["provider", "base_url", "url_convention", "model", "key", "merged", "split", "cache", "request"]
PROFILE_INNER = [
    "chunk_size",
    "prefill_base_url",
    "decode_base_url",
    "transfer_protocol",
    "max_transfer_concurrency",
    "probe_url",
    "kv_cache_dtype",
    "prefix_cache",
    "temperature",
    "max_tokens",
    "stream",
    "timeout_seconds",
]


def table(keys: list[str], inner: st.SearchStrategy[Any] = values) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), inner, max_size=len(keys))


ccswitch_docs = st.fixed_dictionaries(
    {},
    optional={
        "provider": table(CCSWITCH_KEYS["provider"]) | values,
        "cache": table(CCSWITCH_KEYS["cache"], values | table(SPLIT_KEYS)),
        "request": table(CCSWITCH_KEYS["request"]),
    },
)
cline_docs = table(CLINE_KEYS, values | table(CLINE_INNER))
profiles = table(PROFILE_KEYS, values | table(PROFILE_INNER))
kvswitch_docs = st.fixed_dictionaries(
    {},
    optional={
        "version": values,
        "active_profile": values,
        "mode": values,
        "profiles": st.dictionaries(st.sampled_from(["a", "b"]), profiles, max_size=2) | values,
        "clients": st.lists(
            table(
                ["path", "kind", "name", "write_key", "allow_key_in_repo", "nudge"],
                values | table(["kind", "pidfile", "signal", "argv", "timeout_seconds", "path"]),
            ),
            max_size=2,
        )
        | values,
    },
)


def pydantic_locs(kind: str, data: Any) -> set[tuple[Any, ...]]:
    from pydantic import ValidationError

    try:
        MODELS[kind].model_validate(data)
    except ValidationError as exc:
        return {tuple(e["loc"]) for e in exc.errors()}
    return set()


def ours(kind: str, data: Any) -> set[tuple[Any, ...]]:
    return {e.loc for e in check_schema(data, kind)}


@settings(max_examples=400, deadline=None)
@given(ccswitch_docs)
def test_ccswitch_agrees(data: dict[str, Any]) -> None:
    assert ours("ccswitch", data) == pydantic_locs("ccswitch", data)


@settings(max_examples=400, deadline=None)
@given(cline_docs)
def test_cline_agrees(data: dict[str, Any]) -> None:
    assert ours("cline", data) == pydantic_locs("cline", data)


@settings(max_examples=400, deadline=None)
@given(kvswitch_docs)
def test_kvswitch_agrees(data: dict[str, Any]) -> None:
    assert ours("kvswitch", data) == pydantic_locs("kvswitch", data)


def test_messages_read_like_pydantic() -> None:
    [err] = check_schema({"cache": {"mode": "both"}}, "ccswitch")
    assert (err.loc, err.msg) == (("cache", "mode"), "Input should be 'merged' or 'split'")
    [err] = check_schema({"cache": {"chunk_size": 0}}, "ccswitch")
    assert err.msg == "Input should be greater than or equal to 1"
