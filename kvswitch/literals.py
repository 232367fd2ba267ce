"""The domain's words as typing literals, and the config version; no pydantic here, so the
lint path can use them without importing the models."""

from __future__ import annotations

from typing import Literal

__all__ = ["CONFIG_VERSION", "CacheMode", "FileKind", "TransferProtocol"]

CacheMode = Literal["merged", "split"]
"""``merged``: chunked prefill on one instance; ``split``: prefill/decode disaggregation (S-13)."""

TransferProtocol = Literal["layer-wise", "request-wise"]
"""KV transfer granularity in split mode (S-14)."""

FileKind = Literal["cline", "ccswitch", "kvswitch"]
"""The three kinds of file kvswitch reads (D-3)."""

CONFIG_VERSION = 1
"""The kvswitch.toml format this kvswitch writes; a newer one is refused."""
