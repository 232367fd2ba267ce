"""What a gateway runs with: its upstreams, its token and its bounds, from kvswitch's config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from kvswitch import urls
from kvswitch.literals import CacheMode

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.gateway.translating import Translate
    from kvswitch.models import Profile
    from kvswitch.models.kvswitch_config import AutoRoute

__all__ = ["DRAIN_TIMEOUT", "DefaultRoute", "GatewaySettings", "api_base", "settings_from_config"]

DefaultRoute = Literal["mode", "auto"]
DRAIN_TIMEOUT = 10.0
"""Seconds a stopping gateway lets in-flight streams finish."""


@dataclass(frozen=True)
class GatewaySettings:
    """One gateway's settings. ``merged`` and ``split`` are API bases: the URL that
    ``/chat/completions``, ``/messages``… follow (``http://host:port/v1``)."""

    merged: str
    split: str
    token: str = field(repr=False)
    upstream_key: str | None = field(default=None, repr=False)
    profile: str | None = None
    mode: CacheMode = "merged"
    listen: str = "127.0.0.1"
    port: int = 18090
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    max_in_flight: int = 64
    first_byte_timeout: float = 300.0
    idle_timeout: float = 120.0
    drain_timeout: float = DRAIN_TIMEOUT
    max_body: int = 32 * 1024 * 1024
    max_sse_line: int = 1 << 20
    default_route: DefaultRoute = "mode"
    """Requests that ask for nothing: the gateway's current mode, or ``auto`` (decided per request)."""
    auto: AutoRoute | None = None
    """The auto route's thresholds (the profile's; ``None``: the defaults)."""
    translate: Translate = "auto"
    """Messages and Responses requests over Chat Completions: where the upstream lacks them
    (``auto``), always, or never."""

    def base(self, mode: str) -> str:
        """The API base of ``mode``'s upstream."""
        return self.merged if mode == "merged" else self.split


def api_base(profile: Profile, mode: CacheMode) -> str:
    """The URL a mode's requests go under (``…/v1``), from the profile's URL convention."""
    return urls.api_base(profile.mode_url(mode), profile.url_convention)


def settings_from_config(
    config: Config,
    *,
    profile: str | None = None,
    port: int | None = None,
    listen: str | None = None,
    default_route: DefaultRoute | None = None,
    translate: Translate | None = None,
) -> GatewaySettings:
    """The settings of a gateway in front of ``profile`` (default: the active one), in the
    config's mode, with the local token (made the first time, in the keyring) and the
    profile's key."""
    from kvswitch.gateway.token import ensure_token
    from kvswitch.keys import resolve_key

    name, chosen = config.profile(profile)
    own = config.model.gateway
    return GatewaySettings(
        merged=api_base(chosen, "merged"),
        split=api_base(chosen, "split"),
        token=ensure_token(config),
        upstream_key=resolve_key(name, chosen.key),
        profile=name,
        mode=config.model.mode,
        listen=listen or own.listen,
        port=own.port if port is None else port,
        headers=MappingProxyType(dict(chosen.headers)),
        max_in_flight=own.max_in_flight,
        first_byte_timeout=own.first_byte_timeout,
        idle_timeout=own.idle_timeout,
        default_route=default_route or own.default_route,
        auto=chosen.auto,
        translate=translate or own.translate,
    )
