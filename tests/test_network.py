"""Proxies and certificates: ``kvswitch probe`` and ``kvswitch doctor`` reach a server that is
not this machine through ``HTTP_PROXY`` / ``HTTPS_PROXY`` (minus ``NO_PROXY``), never send a
loopback request to a proxy, and trust the CA store ``SSL_CERT_FILE`` names — one policy
(:mod:`kvswitch.network`) for both.

Offline: the proxy is a real HTTP forward proxy and CONNECT tunnel on 127.0.0.1, written here,
that sends every name to 127.0.0.1; the target is named ``upstream.invalid``, which resolves
nowhere, so a request that reaches the server went through the proxy. The TLS server is a
127.0.0.1 front with a certificate signed by a CA made in the test."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from kvswitch.cli import main
from kvswitch.network import NetworkSettingsError, Proxy, bypasses, proxy_for, ssl_context
from kvswitch.testing.sse_server import SSEServer

NAME = "upstream.invalid"
PROXY_VARIABLES = (
    "https_proxy",
    "HTTPS_PROXY",
    "http_proxy",
    "HTTP_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "REQUEST_METHOD",
)
OFFLINE = ["--skip", "nvidia-smi", "--skip", "same-gpu", "--skip", "prefix-cache"]


# -- a background event loop, a proxy and a TLS front ---------------------------------------


class _Loop:
    """An asyncio loop in a thread, for the servers below."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(lambda loop, context: None)  # a refused TLS handshake is expected
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()


async def _splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    """Copy both ways until either side ends, then close both."""
    tasks = [asyncio.ensure_future(_pipe(a[0], b[1])), asyncio.ensure_future(_pipe(b[0], a[1]))]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
    for writer in (a[1], b[1]):
        writer.close()


class ForwardProxy:
    """An HTTP proxy on 127.0.0.1: forwards absolute-form requests and opens CONNECT tunnels,
    every host name resolving to 127.0.0.1. ``seen``: (method, target, Proxy-Authorization)."""

    def __init__(self, loop: _Loop, authorization: str | None = None) -> None:
        self.loop = loop
        self.authorization = authorization
        self.seen: list[tuple[str, str, str]] = []
        self.server = loop.run(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        first, *lines = [line for line in head.split("\r\n") if line]
        method, target, _ = first.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        given = headers.get("proxy-authorization", "")
        self.seen.append((method, target, given))
        if self.authorization is not None and given != self.authorization:
            writer.write(
                b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            writer.close()
            return
        if method == "CONNECT":
            upstream = await asyncio.open_connection("127.0.0.1", int(target.rsplit(":", 1)[1]))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            parts = urlsplit(target)
            upstream = await asyncio.open_connection("127.0.0.1", parts.port or 80)
            kept = [
                line
                for line in lines
                if line.split(":", 1)[0].strip().lower() not in ("proxy-authorization", "connection")
            ]
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            upstream[1].write(
                "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode("latin-1")
            )
        await _splice((reader, writer), upstream)

    def close(self) -> None:
        self.loop.run(_close(self.server))


async def _close(server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()


class TlsFront:
    """TLS on 127.0.0.1 in front of a plain server (``backend`` port), with ``context``'s certificate."""

    def __init__(self, loop: _Loop, backend: int, context: Any) -> None:
        self.loop = loop
        self.backend = backend
        self.server = loop.run(asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=context))
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _splice((reader, writer), await asyncio.open_connection("127.0.0.1", self.backend))

    def close(self) -> None:
        self.loop.run(_close(self.server))


def _certificates(tmp: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key): a CA made here and a server certificate
    it signed for 127.0.0.1, localhost and upstream.invalid."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kvswitch test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kvswitch test server")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.DNSName(NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp / "ca.pem", tmp / "server.pem", tmp / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def loop() -> Iterator[_Loop]:
    background = _Loop()
    yield background
    background.close()


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as srv:
        yield srv


@pytest.fixture
def proxy(loop: _Loop) -> Iterator[ForwardProxy]:
    p = ForwardProxy(loop)
    yield p
    p.close()


@pytest.fixture
def tls(loop: _Loop, server: SSEServer, tmp_path: Path) -> Iterator[tuple[TlsFront, Path]]:
    import ssl

    ca, cert, key = _certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    front = TlsFront(loop, _port(server), context)
    yield front, ca
    front.close()


def _port(server: SSEServer) -> int:
    port = urlsplit(server.url).port
    assert port is not None
    return port


def doctor(capsys: pytest.CaptureFixture[str], base_url: str) -> tuple[int, dict[str, dict[str, str]], str]:
    code = main(
        ["doctor", "--base-url", base_url, "--model", "test-model", "--timeout", "3", "--format", "json", *OFFLINE]
    )
    out = capsys.readouterr()
    data = json.loads(out.out)["data"]
    return code, {c["name"]: c for c in data["checks"]}, out.out + out.err


def probe(capsys: pytest.CaptureFixture[str], base_url: str) -> tuple[int, str]:
    code = main(
        [
            "probe",
            "--base-url",
            base_url,
            "--model",
            "test-model",
            "--mode",
            "merged",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--max-tokens",
            "2",
            "--no-gpu",
            "--no-metrics",
            "--no-history",
            "--yes",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr()
    return code, out.out + out.err


# -- the policy, as data --------------------------------------------------------------------


def test_the_scheme_picks_the_variable_and_lower_case_wins() -> None:
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "HTTP_PROXY": "http://plain:3"}
    assert proxy_for("https://api.example.com/v1", env) == Proxy("lower", 2, "https_proxy")
    assert proxy_for("http://api.example.com/v1", env) == Proxy("plain", 3, "HTTP_PROXY")
    assert proxy_for("http://api.example.com/v1", {"ALL_PROXY": "proxy.corp:8080"}) == Proxy(
        "proxy.corp", 8080, "ALL_PROXY"
    )
    assert proxy_for("https://api.example.com/v1", {"HTTP_PROXY": "http://plain:3"}) is None
    assert proxy_for("http://api.example.com/v1", {"HTTP_PROXY": "http://plain:3", "REQUEST_METHOD": "GET"}) is None


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "https://[::1]:8443/v1", "http://127.1.2.3/v1"]
)
def test_a_loopback_target_never_goes_through_a_proxy(url: str) -> None:
    env = {"HTTP_PROXY": "http://proxy:3128", "HTTPS_PROXY": "http://proxy:3128", "ALL_PROXY": "http://proxy:3128"}
    assert proxy_for(url, env) is None


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "direct"),
    [
        ("api.corp.example", 443, "corp.example", True),
        ("api.corp.example", 443, ".corp.example", True),
        ("api.corp.example", 443, "*.corp.example", True),
        ("corp.example", 443, ".corp.example", True),
        ("notcorp.example", 443, "corp.example", False),
        ("api.example.com", 443, "*", True),
        ("10.1.2.3", 80, "10.0.0.0/8", True),
        ("11.1.2.3", 80, "10.0.0.0/8", False),
        ("192.168.1.5", 80, "192.168.1.5", True),
        ("fd00::5", 80, "fd00::/8", True),
        ("api.example.com", 8443, "api.example.com:8443", True),
        ("api.example.com", 443, "api.example.com:8443", False),
        ("api.example.com", 443, "  other.example , API.EXAMPLE.COM ", True),
        ("api.example.com", 443, "", False),
    ],
)
def test_no_proxy_entries(host: str, port: int, no_proxy: str, direct: bool) -> None:
    assert bypasses(host, port, no_proxy) is direct


def test_credentials_become_a_header_and_are_never_shown() -> None:
    found = proxy_for("https://api.example.com", {"HTTPS_PROXY": "http://me:p%40ss@proxy.corp:3128"})
    assert found is not None and found.authorization == "Basic " + base64.b64encode(b"me:p@ss").decode()
    assert found.shown == "http://proxy.corp:3128"
    assert "p@ss" not in repr(found) and "cDBzcw" not in repr(found)


@pytest.mark.parametrize("value", ["socks5://proxy:1080", "https://proxy:3128"])
def test_a_proxy_kvswitch_cannot_speak_to_is_an_error_not_a_bypass(value: str) -> None:
    with pytest.raises(NetworkSettingsError, match="HTTPS_PROXY"):
        proxy_for("https://api.example.com", {"HTTPS_PROXY": value})


def test_a_missing_ca_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(NetworkSettingsError, match="SSL_CERT_FILE"):
        ssl_context({"SSL_CERT_FILE": str(tmp_path / "missing.pem")})
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    with pytest.raises(NetworkSettingsError, match="REQUESTS_CA_BUNDLE"):
        ssl_context({"REQUESTS_CA_BUNDLE": str(bad)})


# -- doctor and probe through a real proxy ----------------------------------------------------


def test_doctor_reaches_a_named_server_only_through_the_proxy(
    server: SSEServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://{NAME}:{_port(server)}/v1"
    code, checks, out = doctor(capsys, url)  # no proxy: the name resolves nowhere
    assert code == 1 and checks["reachable"]["status"] == "fail" and "cannot connect" in checks["reachable"]["saw"]
    assert proxy.seen == []

    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    code, checks, out = doctor(capsys, url)
    assert code == 0, out
    assert {checks[n]["status"] for n in ("reachable", "auth", "model")} == {"pass"}
    assert f"through the proxy {proxy.url} from HTTP_PROXY" in checks["reachable"]["saw"]
    targets = [target for _, target, _ in proxy.seen]
    assert f"http://{NAME}:{_port(server)}/v1" in targets  # absolute-form: the proxy forwards it
    assert f"http://{NAME}:{_port(server)}/v1/chat/completions" in targets  # the streamed chat request too

    proxy.seen.clear()
    monkeypatch.setenv("NO_PROXY", "localhost,.invalid")
    code, checks, _ = doctor(capsys, url)
    assert code == 1 and checks["reachable"]["status"] == "fail"
    assert proxy.seen == []  # NO_PROXY covered the name: straight to it, which fails


def test_probe_reaches_a_named_server_only_through_the_proxy(
    server: SSEServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://{NAME}:{_port(server)}/v1"
    code, out = probe(capsys, url)
    assert code == 1 and proxy.seen == []  # every request failed: no such host
    monkeypatch.setenv("http_proxy", proxy.url)
    code, out = probe(capsys, url)
    assert code == 0, out
    assert sum(target.endswith("/v1/chat/completions") for _, target, _ in proxy.seen) == 2
    proxy.seen.clear()
    monkeypatch.setenv("no_proxy", NAME)
    code, out = probe(capsys, url)
    assert code == 1 and proxy.seen == []


def test_loopback_targets_never_go_through_the_proxy(
    server: SSEServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy.url)
    code, checks, out = doctor(capsys, server.url)
    assert code == 0, out
    assert "through the proxy" not in checks["reachable"]["saw"]
    code, out = probe(capsys, server.url)
    assert code == 0, out
    assert proxy.seen == []


def test_the_proxy_gets_its_credentials_and_output_never_shows_them(
    server: SSEServer, loop: _Loop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = "Basic " + base64.b64encode(b"kv:s3cr%et").decode()
    guarded = ForwardProxy(loop, authorization=wanted)
    try:
        url = f"http://{NAME}:{_port(server)}/v1"
        monkeypatch.setenv("HTTP_PROXY", f"http://kv:s3cr%25et@127.0.0.1:{guarded.port}")
        code, checks, out = doctor(capsys, url)
        assert code == 0, out
        assert {auth for _, _, auth in guarded.seen} == {wanted}
        assert "s3cr" not in out and wanted.split()[1] not in out
        monkeypatch.setenv("HTTP_PROXY", f"http://kv:wrong@127.0.0.1:{guarded.port}")
        code, checks, out = doctor(capsys, url)
        assert code == 1 and "HTTP 407" in checks["reachable"]["saw"]
        assert "wrong" not in out
    finally:
        guarded.close()


def test_an_unusable_proxy_fails_the_request_and_says_why(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    code, checks, _ = doctor(capsys, f"http://{NAME}:{_port(server)}/v1")
    assert code == 1 and "socks5:// proxy is not supported" in checks["reachable"]["saw"]
    code, checks, _ = doctor(capsys, server.url)  # a loopback target is not affected
    assert code == 0


# -- one CA store for both -------------------------------------------------------------------


def test_probe_and_doctor_trust_the_ca_in_ssl_cert_file_and_refuse_without_it(
    tls: tuple[TlsFront, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    front, ca = tls
    url = f"https://127.0.0.1:{front.port}/v1"
    code, checks, out = doctor(capsys, url)
    assert code == 1 and "certificate verify failed" in checks["reachable"]["saw"].lower(), out
    code, out = probe(capsys, url)
    assert code == 1 and "certificate verify failed" in out.lower()

    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    code, checks, out = doctor(capsys, url)
    assert code == 0, out
    assert {checks[n]["status"] for n in ("reachable", "auth", "model")} == {"pass"}
    code, out = probe(capsys, url)
    assert code == 0, out

    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("SSL_CERT_DIR", str(ca.parent / "empty"))
    (ca.parent / "empty").mkdir()
    code, checks, _ = doctor(capsys, url)
    assert code == 1  # a directory without the CA: the default store is replaced, not added to


def test_https_through_a_connect_tunnel(
    tls: tuple[TlsFront, Path], proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    front, ca = tls
    url = f"https://{NAME}:{front.port}/v1"
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    code, checks, out = doctor(capsys, url)
    assert code == 0, out
    assert {method for method, _, _ in proxy.seen} == {"CONNECT"}
    assert {target for _, target, _ in proxy.seen} == {f"{NAME}:{front.port}"}  # the proxy sees no path
    code, out = probe(capsys, url)
    assert code == 0, out
    monkeypatch.delenv("SSL_CERT_FILE")
    code, checks, _ = doctor(capsys, url)  # the tunnel does not change whom the certificate must satisfy
    assert code == 1 and "certificate verify failed" in checks["reachable"]["saw"].lower()


def test_read_capped_stops_past_the_cap_and_returns_what_fits() -> None:
    import asyncio

    from kvswitch.network import read_capped

    class Streamed:
        def __init__(self, chunks: list[bytes]) -> None:
            self.chunks = chunks
            self.read = 0

        async def aiter_bytes(self):  # type: ignore[no-untyped-def]
            for chunk in self.chunks:
                self.read += 1
                yield chunk

    whole = Streamed([b"ab", b"cd"])
    assert asyncio.run(read_capped(whole, 4)) == b"abcd"
    endless = Streamed([b"x" * 3] * 1000)
    assert asyncio.run(read_capped(endless, 10)) is None
    assert endless.read == 4  # stopped at the first chunk past the cap, not at the end
