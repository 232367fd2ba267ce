"""Where each server listens: its address parsed from the profile's URL, with the engine's usual
port when the URL names none."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from kvswitch.addresses import is_loopback_host
from kvswitch.engine_flags.model import DEFAULT_PORTS, Engine, Role

__all__ = ["Where", "host_key", "where"]


def host_key(host: str) -> str:
    """``host`` as a key of the ports taken on it: every loopback name is one host."""
    return "loopback" if is_loopback_host(host) else host.lower()


@dataclass
class Where:
    """Where one server listens (``port`` and ``moved`` change when its port is taken)."""

    role: Role
    profile_url: str
    field: str
    scheme: str
    host: str
    port: int
    path: str
    explicit_port: bool
    moved: bool = False

    @property
    def url(self) -> str:
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        return urlunsplit((self.scheme or "http", f"{netloc}:{self.port}", self.path, "", ""))

    @property
    def bind(self) -> str:
        return self.host if is_loopback_host(self.host) else "0.0.0.0"  # stated in the listen-all caveat

    @property
    def key(self) -> tuple[str, int]:
        return host_key(self.host), self.port


def where(role: Role, url: str, field_name: str, engine: Engine) -> Where:
    """The server of ``role`` at the profile's ``url`` (from ``field_name``)."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    try:
        port = parts.port
    except ValueError:
        port = None
    return Where(
        role,
        url,
        field_name,
        parts.scheme,
        host,
        port or DEFAULT_PORTS[engine][role],
        parts.path.rstrip("/"),
        port is not None,
    )
