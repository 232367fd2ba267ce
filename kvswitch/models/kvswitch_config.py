"""kvswitch's own config (kind ``kvswitch``): profiles, the active profile and mode, and the
registered client files. It never holds a plaintext key: a profile's ``key`` is a reference,
``keyring`` (the OS keyring, service ``kvswitch``), ``env:NAME`` or ``none`` (no key).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from kvswitch.advise import HIGH_CONCURRENCY, LONG_PROMPT, SHORT_PROMPT
from kvswitch.literals import CONFIG_VERSION, CacheMode, TransferProtocol
from kvswitch.models.common import RequestOptions, StrictModel

__all__ = [
    "CONFIG_VERSION",
    "AutoRoute",
    "ClientEntry",
    "ClientRoute",
    "GatewayConfig",
    "KvswitchConfig",
    "MergedProfile",
    "Nudge",
    "Profile",
    "SharedCache",
    "SplitProfile",
    "UrlConvention",
]


ClientRoute = Literal["direct", "gateway"]
"""``direct``: the client's file holds the mode's own URL; ``gateway``: it holds kvswitch's
local gateway, which picks the mode per request."""

UrlConvention = Literal["append-v1", "includes-v1"]
"""``append-v1``: the base is like ``https://host/api`` and ``/v1/chat/completions`` is
appended (S-07, S-21); ``includes-v1``: the base ends in ``/v1``."""


class MergedProfile(StrictModel):
    """Settings that only matter in merged mode."""

    url: str | None = Field(None, description="The merged instance: clients use it in merged mode (default: base_url).")
    chunk_size: int = Field(512, ge=1, description="Prefill chunk in tokens, a multiple of 64.")


class SplitProfile(StrictModel):
    """Settings that only matter in split mode."""

    url: str | None = Field(
        None,
        description="The router in front of the split pair: clients use it in split mode (default: base_url).",
    )
    prefill_base_url: str | None = Field(None, description="Prefill instance; default: the profile's base_url.")
    decode_base_url: str | None = Field(None, description="Decode instance; default: the profile's base_url.")
    transfer_protocol: TransferProtocol = Field("layer-wise", description="KV transfer granularity.")
    max_transfer_concurrency: int = Field(4, description="KV layers in flight at once, 1-8.")
    probe_url: str | None = Field(
        None, description="Config version 1's name of url; read as url, renamed on the next change."
    )


class SharedCache(StrictModel):
    """Cache settings both modes share."""

    kv_cache_dtype: str = Field("auto", description="KV cache data type; auto lets the backend choose.")
    prefix_cache: bool = Field(True, description="Prefix caching, recommended on in both modes.")


class AutoRoute(StrictModel):
    """The gateway's auto route: which requests go split. A request goes split when its new
    prompt tokens (those past the prefix its conversation already sent) reach
    ``split_from_tokens``, or ``busy_split_from_tokens`` while ``busy_in_flight`` requests are
    being served; else merged."""

    split_from_tokens: int = Field(LONG_PROMPT, ge=1, description="New prompt tokens from which a request goes split.")
    busy_in_flight: int = Field(
        HIGH_CONCURRENCY, ge=1, description="Requests in flight from which load counts as heavy."
    )
    busy_split_from_tokens: int = Field(
        SHORT_PROMPT,
        ge=1,
        description="New prompt tokens from which a request goes split under heavy load (at most split_from_tokens).",
    )
    sticky: bool = Field(
        True,
        description="A conversation keeps split once it has gone split (a flip loses the "
        "prefix cache), until the mode is switched.",
    )

    @model_validator(mode="after")
    def _busy_is_lower(self) -> AutoRoute:
        if self.busy_split_from_tokens > self.split_from_tokens:
            from kvswitch.i18n import tr

            message = tr(
                "busy_split_from_tokens ({busy}) is above split_from_tokens ({threshold}): under load "
                "the threshold only goes down"
            )
            raise ValueError(message.format(busy=self.busy_split_from_tokens, threshold=self.split_from_tokens))
        return self


class Profile(StrictModel):
    """One backend: where, which model, which key, and both modes' settings."""

    provider: str = Field("custom", description="Provider or preset name.")
    base_url: str = Field(..., description="Bare http(s) address, no trailing slash.")
    url_convention: UrlConvention = Field(
        "includes-v1",
        description="append-v1: clients call <base>/v1/chat/completions; includes-v1: the base ends in /v1.",
    )
    model: str = Field(..., description="Model id.")
    key: str = Field(
        "keyring",
        description="Key reference: 'keyring', 'env:NAME' or 'none' (send no key). Never a plaintext key.",
    )
    merged: MergedProfile = Field(default_factory=MergedProfile, description="Merged-mode settings.")
    split: SplitProfile = Field(default_factory=SplitProfile, description="Split-mode settings.")
    cache: SharedCache = Field(default_factory=SharedCache, description="Settings both modes share.")
    request: RequestOptions = Field(default_factory=RequestOptions, description="What clients send.")
    auto: AutoRoute = Field(
        default_factory=AutoRoute, description="When the gateway's auto route sends a request split."
    )
    mode_header: bool = Field(True, description="Clients that take extra headers send X-Cache-Mode: merged|split.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra headers the clients send (never a key: keys live in the keyring).",
    )

    @field_validator("headers")
    @classmethod
    def _plain_headers(cls, value: dict[str, str]) -> dict[str, str]:
        from kvswitch.i18n import tr
        from kvswitch.validate import HEADERS_MAX, header_problem

        if len(value) > HEADERS_MAX:
            raise ValueError(tr("{count} headers (at most {limit})").format(count=len(value), limit=HEADERS_MAX))
        seen: set[str] = set()
        for name, text in value.items():
            problem = header_problem(name, text)
            if problem is not None:
                raise ValueError(problem)
            if name.lower() in seen:  # HTTP header names are case-insensitive: one would be lost
                raise ValueError(tr("header {name} is given twice (header names ignore case)").format(name=name))
            seen.add(name.lower())
        return value

    def mode_url(self, mode: str) -> str:
        """The URL clients use in ``mode``: the mode's own, else ``base_url``."""
        own = self.merged.url if mode == "merged" else self.split.url or self.split.probe_url
        return own or self.base_url


class Nudge(StrictModel):
    """How a client is told to reload after kvswitch writes its file."""

    kind: Literal["none", "touch", "signal", "command"] = Field(
        "none", description="none: tell the user to restart the client; touch; signal; command."
    )
    pidfile: str | None = Field(None, description="signal: file holding the client's pid.")
    signal: str = Field("HUP", description="signal: name without SIG.")
    process: str | None = Field(
        None, description="signal: text the target's command line must contain (checked in /proc)."
    )
    argv: list[str] = Field(default_factory=list, description="command: argv, run without a shell.")
    timeout_seconds: float = Field(10, gt=0, description="command: how long it may run.")
    path: str | None = Field(None, description="touch: file to touch (default: the client file).")


class ClientEntry(StrictModel):
    """A client file kvswitch keeps in step with the active profile and mode."""

    path: str = Field(..., description="The client file; ~ is your home directory.")
    kind: str = Field(..., description="Which client the file belongs to (kvswitch client add --help lists them).")
    name: str | None = Field(
        None, description="How messages call the client (e.g. 'vscode'): letters, digits, '.', '_', '-'."
    )
    write_key: bool | None = Field(
        None,
        description="Write the profile's key into this file (default: on for the Cline-style settings.json "
        "and the CC Switch-style config.toml, off for real clients).",
    )
    allow_key_in_repo: bool = Field(
        False, description="Allow writing the key even inside a git work tree (where it could be committed)."
    )
    nudge: Nudge = Field(default_factory=Nudge, description="How the client is told to reload.")
    mode: CacheMode | None = Field(
        None,
        description="This client's own mode, set by a switch of this client alone; a switch of "
        "every client clears it (none: the config's mode).",
    )
    route: ClientRoute = Field(
        "direct",
        description="direct: the file holds the mode's URL; gateway: the file holds kvswitch's "
        "local gateway, which flips the mode live (kvswitch gateway pin).",
    )

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        from kvswitch.kinds import client_kind

        return client_kind(value).id  # an old id reads as its kind; an unknown one is an error


class GatewayConfig(StrictModel):
    """kvswitch's local gateway: one address for pinned clients, the mode chosen per request."""

    listen: str = Field("127.0.0.1", description="Address it listens on; loopback unless you mean otherwise.")
    port: int = Field(18090, ge=1, le=65535, description="Port it listens on.")
    token: str = Field(
        "keyring",
        pattern=r"^(keyring|env:[A-Za-z_][A-Za-z0-9_]*)$",
        description="The local token pinned clients send: 'keyring' (made at the first pin) or 'env:NAME'.",
    )
    max_in_flight: int = Field(64, ge=1, le=4096, description="Requests served at once; more get a 429.")
    first_byte_timeout: float = Field(
        300, gt=0, description="Seconds the upstream may take to its first byte (then a 504)."
    )
    idle_timeout: float = Field(
        120, gt=0, description="Seconds a stream may stay silent, upstream or towards a slow client."
    )
    default_route: Literal["mode", "auto"] = Field(
        "mode", description="Requests that ask for no mode: the current mode, or auto (decided per request)."
    )
    translate: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Messages and Responses requests over Chat Completions: where the upstream lacks them "
        "(auto), always, or never.",
    )


class KvswitchConfig(StrictModel):
    """The whole kvswitch config file."""

    version: int = Field(CONFIG_VERSION, description="Config format; a newer one is refused.")
    active_profile: str | None = Field(None, description="The profile the clients follow.")
    mode: CacheMode = Field("merged", description="The mode the clients are in: merged | split.")
    profiles: dict[str, Profile] = Field(default_factory=dict, description="Profiles by name.")
    clients: list[ClientEntry] = Field(default_factory=list, description="Registered client files.")
    gateway: GatewayConfig = Field(default_factory=GatewayConfig, description="The local gateway.")
    auto_fix: list[str] = Field(
        default_factory=lambda: ["KVS101", "KVS201"],
        description="Codes the watcher fixes by itself.",
    )
