"""The ``cline.*`` keys of a Cline-style VS Code ``settings.json`` (S-09…S-13).

Only these keys are kvswitch's; every other key in the file belongs to the user (or to
other extensions) and is never touched. Keys are flat and dotted, as VS Code writes them.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from kvswitch.literals import (
    CLINE_MERGED_ONLY,
    CLINE_SHARED,
    CLINE_SPLIT_ONLY,
    CacheMode,
    TransferProtocol,
)
from kvswitch.models.common import StrictModel

__all__ = ["MERGED_ONLY", "SHARED", "SPLIT_ONLY", "ClineCacheStrategy", "ClineRequestOptions", "ClineSettings"]

MERGED_ONLY = CLINE_MERGED_ONLY
SPLIT_ONLY = CLINE_SPLIT_ONLY
SHARED = CLINE_SHARED


class ClineCacheStrategy(StrictModel):
    """``cline.cacheStrategy``: the merged form (chunkSize) or the split form (prefillEndpoint,
    decodeEndpoint, kvTransferProtocol)."""

    mode: CacheMode = Field(
        "merged",
        description="merged (chunked prefill and continuous batching on one instance) | split "
        "(prefill/decode disaggregation).",
    )
    chunk_size: int = Field(
        512, alias="chunkSize", ge=1, description="Merged only: tokens per prefill chunk (multiple of 64)."
    )
    kv_cache_dtype: str = Field("auto", alias="kvCacheDtype", description="auto lets the backend choose.")
    enable_prefix_cache: bool = Field(True, alias="enablePrefixCache")
    prefill_endpoint: str | None = Field(None, alias="prefillEndpoint", description="Split only.")
    decode_endpoint: str | None = Field(None, alias="decodeEndpoint", description="Split only.")
    kv_transfer_protocol: TransferProtocol = Field(
        "layer-wise", alias="kvTransferProtocol", description="Split only; layer-wise overlaps transfer with compute."
    )


class ClineRequestOptions(StrictModel):
    """``cline.requestOptions``: what the client sends with each request."""

    temperature: float = Field(0.2, ge=0, le=2)
    max_tokens: int = Field(2048, alias="maxTokens", ge=1)
    stream: bool = True


class ClineSettings(StrictModel):
    """The ``cline.*`` subset of ``settings.json``."""

    api_provider: str = Field("openai-compatible", alias="cline.apiProvider")
    open_ai_base_url: str | None = Field(
        None,
        alias="cline.openAiBaseUrl",
        description="Bare address, no trailing slash (clients would join it into '//').",
    )
    open_ai_api_key: SecretStr | None = Field(None, alias="cline.openAiApiKey")
    open_ai_model_id: str | None = Field(None, alias="cline.openAiModelId")
    request_options: ClineRequestOptions | None = Field(None, alias="cline.requestOptions")
    cache_strategy: ClineCacheStrategy | None = Field(None, alias="cline.cacheStrategy")
