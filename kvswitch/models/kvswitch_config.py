"""kvswitch's own config (kind ``kvswitch``): profiles, the active profile and mode, and the
registered client files. It never holds a plaintext key: a profile's ``key`` is a reference,
``keyring`` (the OS keyring, service ``kvswitch``) or ``env:NAME``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kvswitch.literals import CONFIG_VERSION, CacheMode, TransferProtocol
from kvswitch.models.common import RequestOptions, StrictModel

__all__ = [
    "CONFIG_VERSION",
    "ClientEntry",
    "KvswitchConfig",
    "MergedProfile",
    "Nudge",
    "Profile",
    "SharedCache",
    "SplitProfile",
    "UrlConvention",
]


UrlConvention = Literal["append-v1", "includes-v1"]
"""``append-v1``: the base is like ``https://host/api`` and ``/v1/chat/completions`` is
appended (S-07, S-21); ``includes-v1``: the base ends in ``/v1``."""


class MergedProfile(StrictModel):
    """Settings that only matter in merged mode."""

    chunk_size: int = Field(512, ge=1, description="Prefill chunk in tokens, a multiple of 64.")


class SplitProfile(StrictModel):
    """Settings that only matter in split mode."""

    prefill_base_url: str | None = None
    decode_base_url: str | None = None
    transfer_protocol: TransferProtocol = "layer-wise"
    max_transfer_concurrency: int = 4
    probe_url: str | None = Field(
        None, description="Router/proxy in front of the split pair, for the probe."
    )


class SharedCache(StrictModel):
    """Cache settings both modes share."""

    kv_cache_dtype: str = "auto"
    prefix_cache: bool = True


class Profile(StrictModel):
    """One backend: where, which model, which key, and both modes' settings."""

    provider: str = Field("custom", description="Provider or preset name.")
    base_url: str = Field(..., description="Bare http(s) address, no trailing slash.")
    url_convention: UrlConvention = "includes-v1"
    model: str = Field(..., description="Model id.")
    key: str = Field(
        "keyring", description="Key reference: 'keyring' or 'env:NAME'. Never a plaintext key."
    )
    merged: MergedProfile = Field(default_factory=MergedProfile)
    split: SplitProfile = Field(default_factory=SplitProfile)
    cache: SharedCache = Field(default_factory=SharedCache)
    request: RequestOptions = Field(default_factory=RequestOptions)


class Nudge(StrictModel):
    """How a client is told to reload after kvswitch writes its file (D-8)."""

    kind: Literal["none", "touch", "signal", "command"] = "none"
    pidfile: str | None = Field(None, description="signal: file holding the client's pid.")
    signal: str = Field("HUP", description="signal: name without SIG.")
    argv: list[str] = Field(default_factory=list, description="command: argv, run without a shell.")
    timeout_seconds: float = Field(10, gt=0)
    path: str | None = Field(None, description="touch: file to touch (default: the client file).")


class ClientEntry(StrictModel):
    """A client file kvswitch keeps in step with the active profile and mode."""

    path: str
    kind: Literal["cline", "ccswitch"]
    name: str | None = None
    write_key: bool = Field(True, description="Write the profile's key into this file.")
    allow_key_in_repo: bool = Field(
        False, description="Allow writing the key even inside a git work tree (D-7)."
    )
    nudge: Nudge = Field(default_factory=Nudge)


class KvswitchConfig(StrictModel):
    """The whole kvswitch config file."""

    version: int = CONFIG_VERSION
    active_profile: str | None = None
    mode: CacheMode = "merged"
    profiles: dict[str, Profile] = Field(default_factory=dict)
    clients: list[ClientEntry] = Field(default_factory=list)
    auto_fix: list[str] = Field(
        default_factory=lambda: ["KVS101", "KVS201"],
        description="Codes the watcher fixes by itself.",
    )
