"""Shared field types and the common, snake_case view of any client file.

``ClientConfig`` is what :func:`kvswitch.load` returns whichever kind the file is. Its
parts (``ProviderSettings``, ``CacheSettings``, ``SplitSettings``, ``RequestOptions``) are
also the tables of CC Switch's ``config.toml`` and the parts of a kvswitch profile, so the
article's defaults (S-11, S-12, S-16) live in one place.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from kvswitch.literals import CacheMode, FileKind, TransferProtocol

__all__ = [
    "CacheMode",
    "CacheSettings",
    "ClientConfig",
    "FileKind",
    "ProviderSettings",
    "RequestOptions",
    "SplitSettings",
    "StrictModel",
    "TransferProtocol",
]


class StrictModel(BaseModel):
    """Base of every file model: strict types (no ``"512"`` for 512), unknown keys kept
    (lint reports them), and input values never echoed in error text (keys are secrets)."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        populate_by_name=True,
        hide_input_in_errors=True,
        validate_default=False,
        defer_build=True,  # built on first use: importing the models stays cheap
    )


class ProviderSettings(StrictModel):
    """Where requests go and who pays: CC Switch's ``[provider]``."""

    name: str | None = Field(None, description="Provider name, for people.")
    base_url: str | None = Field(
        None,
        description="Bare http(s) address: no trailing slash (clients would join it into '//'), no query string.",
        examples=["https://taotoken.net/api"],
    )
    api_key: SecretStr | None = Field(None, description="API key; better kept in the OS keyring (kvswitch key set).")
    model: str | None = Field(None, description="Model id as the provider lists it (another name fails with 404).")


class CacheSettings(StrictModel):
    """The strategy switch and the settings both modes share: CC Switch's ``[cache]``."""

    mode: CacheMode = Field(
        "merged",
        description="merged (chunked prefill and continuous batching on one instance) | split "
        "(prefill/decode disaggregation).",
    )
    chunk_size: int = Field(
        512,
        ge=1,
        description="Tokens per prefill chunk in merged mode; a multiple of 64, 512-1024 "
        "suits most 7B models. Ignored in split mode.",
    )
    kv_cache_dtype: str = Field("auto", description="KV cache data type; auto lets the backend choose.")
    prefix_cache: bool = Field(True, description="Reuse cached prefixes; on in both modes.")


class SplitSettings(StrictModel):
    """Prefill/decode endpoints and KV transfer: CC Switch's ``[cache.split]``."""

    prefill_base_url: str | None = Field(None, description="Prefill instance (http/https).")
    decode_base_url: str | None = Field(None, description="Decode instance (http/https).")
    transfer_protocol: TransferProtocol = Field("layer-wise", description="layer-wise overlaps transfer with compute.")
    max_transfer_concurrency: int = Field(4, description="KV layers transferred in parallel; 1-8, 4 is a stable start.")


class RequestOptions(StrictModel):
    """Request options the client sends: CC Switch's ``[request]``."""

    temperature: float = Field(0.2, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(2048, ge=1, description="Most tokens per answer; 128 for comparisons.")
    stream: bool = Field(True, description="Stream the answer (needed to see TTFT).")
    timeout_seconds: float = Field(120, gt=0, description="Request timeout.")


class ClientConfig(BaseModel):
    """The common view of one client file (or of kvswitch's active profile)."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True, defer_build=True)

    kind: FileKind = Field(..., description="The file's kind (kvswitch.kinds).")
    path: Path | None = None
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    split: SplitSettings | None = None
    request: RequestOptions = Field(default_factory=RequestOptions)

    @property
    def mode(self) -> CacheMode:
        """The strategy the file is set to."""
        return self.cache.mode
