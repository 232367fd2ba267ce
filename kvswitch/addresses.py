"""Whether an address is this machine's own (loopback): one answer for lint, doctor, the probe
and engine-flags."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "is_loopback_url"]


def is_loopback_host(host: str) -> bool:
    """``localhost`` (any case), 127.0.0.0/8 or ``::1`` (brackets allowed)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str | None) -> bool:
    """The URL's host is loopback; False for None or a URL without a host."""
    if not url:
        return False
    return is_loopback_host(urlsplit(url).hostname or "")
