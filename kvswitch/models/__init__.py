"""Pydantic models of the three kinds of file (D-3) and the common view."""

from __future__ import annotations

from kvswitch.models.ccswitch import CCSwitchCache, CCSwitchConfig
from kvswitch.models.cline import ClineCacheStrategy, ClineRequestOptions, ClineSettings
from kvswitch.models.common import (
    CacheMode,
    CacheSettings,
    ClientConfig,
    FileKind,
    ProviderSettings,
    RequestOptions,
    SplitSettings,
    TransferProtocol,
)
from kvswitch.models.kvswitch_config import (
    CONFIG_VERSION,
    AutoRoute,
    ClientEntry,
    ClientRoute,
    GatewayConfig,
    KvswitchConfig,
    MergedProfile,
    Nudge,
    Profile,
    SharedCache,
    SplitProfile,
)

__all__ = [
    "CONFIG_VERSION",
    "AutoRoute",
    "CCSwitchCache",
    "CCSwitchConfig",
    "CacheMode",
    "CacheSettings",
    "ClientConfig",
    "ClientEntry",
    "ClientRoute",
    "ClineCacheStrategy",
    "ClineRequestOptions",
    "ClineSettings",
    "FileKind",
    "GatewayConfig",
    "KvswitchConfig",
    "MergedProfile",
    "Nudge",
    "Profile",
    "ProviderSettings",
    "RequestOptions",
    "SharedCache",
    "SplitProfile",
    "SplitSettings",
    "TransferProtocol",
]
