"""The domain's words as typing literals, and the config version; no pydantic here, so the
lint path can use them without importing the models."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "CLINE_MERGED_ONLY",
    "CLINE_SHARED",
    "CLINE_SPLIT_ONLY",
    "CONFIG_VERSION",
    "CacheMode",
    "FileKind",
    "TransferProtocol",
]

CacheMode = Literal["merged", "split"]
"""``merged``: chunked prefill on one instance; ``split``: prefill/decode disaggregation (S-13)."""

TransferProtocol = Literal["layer-wise", "request-wise"]
"""KV transfer granularity in split mode (S-14)."""

FileKind = str
"""The id of a kind of file (the registry in :mod:`kvswitch.kinds` knows them all)."""

CONFIG_VERSION = 2
"""The kvswitch.toml format this kvswitch writes; a newer one is refused."""

CLINE_MERGED_ONLY = ("chunkSize",)
"""Keys of ``cline.cacheStrategy`` that only the merged form has (S-11)."""
CLINE_SPLIT_ONLY = ("prefillEndpoint", "decodeEndpoint", "kvTransferProtocol")
"""Keys of ``cline.cacheStrategy`` that only the split form has (S-12)."""
CLINE_SHARED = ("enablePrefixCache", "kvCacheDtype")
"""Keys that stay in both forms."""
