"""CC Switch's ``config.toml`` (S-15…S-17): ``[provider]``, ``[cache]``, ``[cache.split]``, ``[request]``."""

from __future__ import annotations

from pydantic import Field

from kvswitch.models.common import (
    CacheSettings,
    ProviderSettings,
    RequestOptions,
    SplitSettings,
    StrictModel,
)

__all__ = ["CCSwitchCache", "CCSwitchConfig"]


class CCSwitchCache(CacheSettings):
    """``[cache]`` with its ``[cache.split]`` sub-table."""

    split: SplitSettings | None = None


class CCSwitchConfig(StrictModel):
    """The whole ``config.toml``; other tables are the user's and are kept as they are."""

    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    cache: CCSwitchCache = Field(default_factory=CCSwitchCache)
    request: RequestOptions = Field(default_factory=RequestOptions)
