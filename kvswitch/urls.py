"""URLs, one answer each: an address's origin, whether two addresses are the same, a URL shown
without what may be a credential, and the API paths of each URL convention.

Stdlib only and cheap to import: lint, doctor, the probe, the lab and the gateway all ask here.
Whether an address is this machine's own is :mod:`kvswitch.addresses`.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

__all__ = [
    "CONVENTIONS",
    "Convention",
    "Origin",
    "api_base",
    "api_paths",
    "chat_url",
    "guess_convention",
    "origin",
    "redact_url",
    "same_address",
    "same_origin",
    "show_origin",
]

Origin = tuple[str, str, int]
"""``(scheme, host, port)``: lower-case scheme and host, the port filled in (80 / 443)."""

Convention = Literal["append-v1", "includes-v1"]
"""How a base URL meets the API: ``append-v1`` clients add ``/v1/…``; an ``includes-v1`` base ends in ``/v1``."""

CONVENTIONS: tuple[Convention, Convention] = ("append-v1", "includes-v1")


# -- origins ------------------------------------------------------------------------------


def origin(url: str | None) -> Origin | None:
    """The origin of an http(s) URL, or ``None`` for anything else (no scheme, no host, a bad port).
    Default ports are filled in and a host's trailing ``.`` dropped, so ``http://H.:80`` is ``http://h``."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = parts.hostname
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    if scheme not in ("http", "https") or not host:
        return None
    return scheme, host.lower().rstrip("."), port


def show_origin(o: Origin) -> str:
    """``scheme://host:port`` of an origin (IPv6 hosts in brackets)."""
    scheme, host, port = o
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def same_origin(a: str | None, b: str | None) -> bool:
    """Whether two http(s) URLs have one origin; False when either is not an http(s) URL."""
    oa = origin(a)
    return oa is not None and oa == origin(b)


def same_address(a: str, b: str) -> bool:
    """Whether two http(s) URLs name one endpoint: one origin and one path, a trailing ``/`` aside."""
    if not same_origin(a, b):
        return False
    return urlsplit(a.strip()).path.rstrip("/") == urlsplit(b.strip()).path.rstrip("/")


# -- display ------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """``url`` without what may be a credential: user info, query and fragment become ``…``.
    Works on the raw text (no parsing that drops characters or fails), so a caller that escapes
    what it shows sees every character."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    base, tail = url[:cut], url[cut:]
    start = base.find("://") + 3 if "://" in base else 0
    end = base.find("/", start)
    end = len(base) if end < 0 else end
    if "@" in base[start:end]:
        base = base[:start] + "…@" + base[start:end].rsplit("@", 1)[1] + base[end:]
    return base + ("?…" if tail.startswith("?") else "#…" if tail else "")


# -- URL conventions ----------------------------------------------------------------------


def guess_convention(base_url: str) -> Convention:
    """``includes-v1`` for a base that ends in ``/v1`` (a trailing ``/`` aside), else ``append-v1``."""
    return "includes-v1" if base_url.rstrip("/").endswith("/v1") else "append-v1"


def api_paths(convention: str) -> tuple[str, str]:
    """(models path, chat path) that clients append to the base URL under ``convention``."""
    if convention == "includes-v1":
        return "/models", "/chat/completions"
    return "/v1/models", "/v1/chat/completions"


def api_base(url: str, convention: str) -> str:
    """The URL the API's paths go under (``…/v1``): ``url`` without a trailing ``/``, plus ``/v1``
    unless the convention is ``includes-v1``."""
    url = url.rstrip("/")
    return url if convention == "includes-v1" else f"{url}/v1"


def chat_url(base_url: str, convention: str | None = None) -> str:
    """The chat completions URL: ``…/api`` + ``/v1/chat/completions`` (append-v1) or a base
    that ends in ``/v1`` + ``/chat/completions`` (includes-v1); guessed when not given."""
    base = base_url.rstrip("/")
    return base + api_paths(guess_convention(base) if convention is None else convention)[1]
