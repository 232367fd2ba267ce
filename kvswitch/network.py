"""How kvswitch reaches a server that is not this machine: the proxy and the CA store, one policy.

``kvswitch probe`` and ``kvswitch doctor`` both talk through
:func:`kvswitch.probe.transport.async_client` (kvswitch's own HTTP/1.1 transport,
:class:`~kvswitch.probe.transport.StampedTransport`), which asks this module, per request, whether
to go through a proxy (:func:`proxy_for`) and, for ``https``, which certificates to trust
(:func:`ssl_context`).

Proxies, as curl and most HTTP libraries read them (lower-case names first)::

    https_proxy / HTTPS_PROXY    for https:// targets (a CONNECT tunnel through the proxy)
    http_proxy  / HTTP_PROXY     for http:// targets (the request forwarded by the proxy)
    all_proxy   / ALL_PROXY      for either, when the scheme's own variable is not set
    no_proxy    / NO_PROXY       hosts reached directly: names (a name covers its subdomains,
                                 ``.corp`` and ``*.corp`` too), IP addresses, CIDR blocks
                                 (``10.0.0.0/8``), ``host:port``, or ``*`` for every host

A loopback target (``localhost``, 127.0.0.0/8, ``::1``) never goes through a proxy, whatever
the environment says. A proxy is an ``http://`` URL (``user:password@`` in it becomes a
``Proxy-Authorization: Basic`` header and is never shown); other proxy schemes (``https://``,
``socks5://``) are refused with a message rather than bypassed. Upper-case ``HTTP_PROXY`` is
ignored when ``REQUEST_METHOD`` is set (a CGI environment, where a request header can set it).

Certificates: ``SSL_CERT_FILE`` (a PEM bundle) and/or ``SSL_CERT_DIR`` (a hashed directory)
replace the default store; else ``REQUESTS_CA_BUNDLE`` (a file or directory); else the system's
store, with certifi's bundle where the system has none. Either way probe and doctor trust the
same certificates.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from kvswitch.addresses import is_loopback_host
from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

__all__ = [
    "CA_VARIABLES",
    "PROXY_VARIABLES",
    "NetworkSettingsError",
    "Proxy",
    "bypasses",
    "proxy_for",
    "read_capped",
    "ssl_context",
]

PROXY_VARIABLES = (
    "https_proxy",
    "HTTPS_PROXY",
    "http_proxy",
    "HTTP_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
)
"""The environment variables that choose a proxy."""
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")
"""The environment variables that choose the trusted certificates."""


class NetworkSettingsError(KvswitchError):
    """A proxy or certificate setting in the environment that cannot be used."""


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy: where it is, the variable that named it, and its credentials (never shown)."""

    host: str
    port: int
    variable: str
    authorization: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """``http://host:port``: the proxy without its credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _get(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(variable, value) of ``name`` in lower case, else upper case; None when neither is set."""
    for variable in (name.lower(), name.upper()):
        if variable == "HTTP_PROXY" and "REQUEST_METHOD" in env:
            continue  # CGI: a client's "Proxy:" header arrives as HTTP_PROXY
        value = env.get(variable, "").strip()
        if value:
            return variable, value
    return None


def _parse_proxy(variable: str, value: str) -> Proxy:
    text = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise NetworkSettingsError(
            tr("{variable} is not a proxy URL (http://host:port)").format(variable=variable)
        ) from None
    if parts.scheme.lower() != "http":
        raise NetworkSettingsError(
            tr(
                "{variable}: a {scheme}:// proxy is not supported; kvswitch speaks to http:// "
                "proxies only (an https target goes through them in a tunnel)"
            ).format(variable=variable, scheme=parts.scheme.lower())
        )
    if not parts.hostname:
        raise NetworkSettingsError(tr("{variable} is not a proxy URL (http://host:port)").format(variable=variable))
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Proxy(parts.hostname, port or 80, variable, authorization)


def _no_proxy_entry(entry: str) -> tuple[str, int | None]:
    """(host or network, port) of one ``NO_PROXY`` entry."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None


def bypasses(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``NO_PROXY``'s value ``no_proxy`` sends ``host:port`` directly."""
    host = host.strip("[]").lower().rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, entry_port = _no_proxy_entry(entry)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = name.removeprefix("*").removeprefix(".").rstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def proxy_for(url: str, environ: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy a request to ``url`` goes through, or None (direct).

    None for a loopback host, a host ``NO_PROXY`` covers, or no proxy variable for the scheme.
    Raises :class:`NetworkSettingsError` for a proxy value that cannot be used."""
    env = os.environ if environ is None else environ
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    if scheme not in ("http", "https") or not host or is_loopback_host(host):
        return None
    chosen = _get(env, f"{scheme}_proxy") or _get(env, "all_proxy")
    if chosen is None:
        return None
    no_proxy = _get(env, "no_proxy")
    if no_proxy is not None and bypasses(host, port, no_proxy[1]):
        return None
    return _parse_proxy(*chosen)


def _certifi_bundle() -> str | None:
    try:
        import certifi
    except ImportError:
        return None
    return str(certifi.where())


def _ca_sources(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, path) of the certificate locations the environment names, in the order used."""
    named = [(name, env.get(name, "").strip()) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")]
    sources = [(name, path) for name, path in named if path]
    if not sources and (bundle := env.get("REQUESTS_CA_BUNDLE", "").strip()):
        sources = [("REQUESTS_CA_BUNDLE", bundle)]
    return sources


def ssl_context(environ: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """The one TLS client context probe and doctor use: certificates verified, host names checked,
    against the store the environment names (see the module's text).

    Raises :class:`NetworkSettingsError` when a file or directory named there cannot be used."""
    env = os.environ if environ is None else environ
    sources = _ca_sources(env)
    if sources:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # create_default_context's, without the default store
        for variable, path in sources:
            if not os.path.exists(path):
                raise NetworkSettingsError(
                    tr("{variable} names {path}, which does not exist").format(variable=variable, path=path)
                )
            try:
                if os.path.isdir(path):
                    context.load_verify_locations(capath=path)
                else:
                    context.load_verify_locations(cafile=path)
            except (ssl.SSLError, OSError) as exc:
                raise NetworkSettingsError(
                    tr("{variable}: cannot load the certificates in {path} ({reason})").format(
                        variable=variable, path=path, reason=getattr(exc, "reason", None) or exc
                    )
                ) from None
        return context
    context = ssl.create_default_context()
    if not context.cert_store_stats().get("x509_ca") and not ssl.get_default_verify_paths().capath:
        bundle = _certifi_bundle()  # a system without a CA store of its own (some macOS Pythons)
        if bundle:
            context.load_verify_locations(cafile=bundle)
    return context


async def read_capped(response: Any, cap: int) -> bytes | None:
    """The body of a streamed httpx answer, or None once it grows past ``cap`` bytes. The bytes
    are counted decoded, so a compressed answer that inflates past the cap stops there too."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)
