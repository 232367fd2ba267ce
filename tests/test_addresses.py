"""kvswitch.addresses: one loopback test for lint (KVS213's plain-http rule), doctor, the probe's
spending guard and engine-flags."""

from __future__ import annotations

import pytest

from kvswitch.addresses import is_loopback_host, is_loopback_url


@pytest.mark.parametrize("host", ["localhost", "LocalHost", "127.0.0.1", "127.3.4.5", "::1", "[::1]"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", ["", "example.com", "10.0.0.1", "0.0.0.0", "::", "127.example.com", "localhost.evil"])
def test_other_hosts(host: str) -> None:
    assert not is_loopback_host(host)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost/v1", True),
        ("http://[::1]:9000", True),
        ("https://api.example.com/v1", False),
        ("http://10.1.2.3:8000", False),
        ("", False),
        (None, False),
        ("not a url", False),
    ],
)
def test_loopback_urls(url: str | None, expected: bool) -> None:
    assert is_loopback_url(url) is expected
