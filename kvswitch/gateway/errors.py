"""The gateway's errors (kvswitch's one error root)."""

from __future__ import annotations

from kvswitch.errors import KvswitchError

__all__ = ["GatewayError", "GatewayNotRunning"]


class GatewayError(KvswitchError):
    """The gateway cannot do what was asked (no token, no upstream, a port taken…)."""


class GatewayNotRunning(GatewayError):
    """No gateway answers on this machine's control socket."""
