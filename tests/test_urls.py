"""kvswitch.urls: one origin, one "same address", one display form and one set of convention
paths for lint, doctor, the probe, the lab and the gateway. The cases pin what each of the
copies these replaced did, and where they differed, the answer chosen."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvswitch.urls import (
    CONVENTIONS,
    api_base,
    api_paths,
    chat_url,
    guess_convention,
    origin,
    redact_url,
    same_address,
    same_origin,
    show_origin,
)

# -- origins ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://Example.ORG/v1", ("http", "example.org", 80)),
        ("HTTPS://example.org:443/api", ("https", "example.org", 443)),
        ("https://example.org/api", ("https", "example.org", 443)),
        ("http://user:pw@[::1]:8000/v1", ("http", "::1", 8000)),
        ("http://host.:8000", ("http", "host", 8000)),
        ("  http://h:81/x  ", ("http", "h", 81)),
    ],
)
def test_origin_fills_in_ports_and_lower_cases(url: str, expected: tuple[str, str, int]) -> None:
    assert origin(url) == expected


@pytest.mark.parametrize(
    "url", ["", None, "ftp://example.org", "file:///etc/passwd", "example.org/v1", "http://", "http://h:99999"]
)
def test_origin_of_anything_else_is_none(url: str | None) -> None:
    assert origin(url) is None


def test_show_origin_brackets_ipv6() -> None:
    assert show_origin(("http", "::1", 8000)) == "http://[::1]:8000"
    assert show_origin(("https", "example.org", 443)) == "https://example.org:443"


def test_key_scope_and_urls_share_one_origin() -> None:
    from kvswitch import key_scope

    assert key_scope.origin is origin and key_scope.show_origin is show_origin


# -- same origin, same address ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://h", "http://h:80"),  # the default port, written or not
        ("https://h/v1", "https://h:443/v1/"),  # ... and a trailing '/'
        ("http://H:8000/v1", "http://h:8000/v1"),  # host case
        ("HTTP://h:8000/v1", "http://h:8000/v1"),  # scheme case
        ("http://h.:8000/v1", "http://h:8000/v1"),  # the root dot
        ("http://[::1]:8000", "http://[::1]:8000/"),
    ],
)
def test_same_address(a: str, b: str) -> None:
    assert same_address(a, b) and same_address(b, a)
    assert same_origin(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://h:8000/v1", "http://h:8001/v1"),
        ("http://h:8000/v1", "https://h:8000/v1"),
        ("http://h:8000/v1", "http://h:8000/api"),
        ("http://h:8000/V1", "http://h:8000/v1"),  # paths are case-sensitive
        ("http://h:443", "https://h"),
        ("not a url", "not a url"),  # two equal non-URLs are no address at all
        ("http://h:99999", "http://h:99999"),  # nor are URLs with a bad port (no exception)
        ("ftp://h/x", "ftp://h/x"),
    ],
)
def test_different_addresses(a: str, b: str) -> None:
    assert not same_address(a, b)


def test_same_origin_ignores_the_path() -> None:
    assert same_origin("http://h:8000/a", "http://H:8000/b")
    assert not same_origin(None, None)
    assert not same_origin("http://h:8000", None)


# -- display -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://h/api", "https://h/api"),
        ("https://h/api?key=sk-1", "https://h/api?…"),
        ("https://h/api#frag", "https://h/api#…"),
        ("https://h/api?a#b", "https://h/api?…"),
        ("https://user:pw@h/api", "https://…@h/api"),
        ("https://a@b@h:1/x?y", "https://…@h:1/x?…"),
        ("http://h/p@q", "http://h/p@q"),  # an '@' in the path is no user info
        ("h:8000/v1?x", "h:8000/v1?…"),
        ("http://[::1/v1?x", "http://[::1/v1?…"),  # does not parse: still shown, never raises
        ("http://h/\tv1", "http://h/\tv1"),  # raw text: nothing dropped (the caller escapes it)
        ("", ""),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# -- conventions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "convention"),
    [
        ("http://h:8000/v1", "includes-v1"),
        ("http://h:8000/v1/", "includes-v1"),
        ("http://h:8000/api", "append-v1"),
        ("http://h:8000", "append-v1"),
        ("http://h:8000/v1beta", "append-v1"),
    ],
)
def test_guess_convention(base: str, convention: str) -> None:
    assert guess_convention(base) == convention
    assert convention in CONVENTIONS


def test_api_paths_and_bases() -> None:
    assert api_paths("includes-v1") == ("/models", "/chat/completions")
    assert api_paths("append-v1") == ("/v1/models", "/v1/chat/completions")
    assert api_base("http://h/v1/", "includes-v1") == "http://h/v1"
    assert api_base("http://h/api/", "append-v1") == "http://h/api/v1"
    for convention in CONVENTIONS:  # a base and its paths meet in one place
        assert api_base("http://h/x", convention) + "/chat/completions" == chat_url("http://h/x", convention)


@pytest.mark.parametrize(
    ("base", "convention", "url"),
    [
        ("http://h/api", None, "http://h/api/v1/chat/completions"),
        ("http://h/v1", None, "http://h/v1/chat/completions"),
        ("http://h/v1/", None, "http://h/v1/chat/completions"),
        ("http://h/v1", "append-v1", "http://h/v1/v1/chat/completions"),  # a given convention wins
        ("http://h/api/", "includes-v1", "http://h/api/chat/completions"),
    ],
)
def test_chat_url(base: str, convention: str | None, url: str) -> None:
    assert chat_url(base, convention) == url


def test_urls_is_stdlib_only() -> None:
    code = "import sys, kvswitch.urls; print(' '.join(m for m in sys.modules if m.startswith('kvswitch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert sorted(out) == ["kvswitch", "kvswitch.urls"]
