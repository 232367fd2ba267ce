"""A key goes only to the origins its profile names (issue 10, point 2; D-12 Keys).

``kvswitch.key_scope`` is the one rule; probe and doctor both call it. Through the real CLI
against two local servers: ``probe --endpoint split=URL`` at another origin sends that URL no
key and says so in the report (a field and a line); the profile's own split probe URL does get
it; ``--base-url`` with ``--api-key-env`` keeps the key on that origin."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.cli import main
from kvswitch.key_scope import KeyScope, key_for, origin, show_origin
from kvswitch.testing.sse_server import SSEServer

KEY = "sk-SCOPE-0123456789abcdefXYZ"
ENV = "KVS_SCOPE_KEY"


def test_origin_fills_in_ports_and_lower_cases() -> None:
    assert origin("http://Example.ORG/v1") == ("http", "example.org", 80)
    assert origin("HTTPS://example.org:443/api") == ("https", "example.org", 443)
    assert origin("http://user:pw@[::1]:8000/v1") == ("http", "::1", 8000)
    assert origin("http://host.:8000") == ("http", "host", 8000)
    for bad in ("", None, "ftp://example.org", "file:///etc/passwd", "example.org/v1", "http://", "http://h:99999"):
        assert origin(bad) is None, bad
    assert show_origin(("http", "::1", 8000)) == "http://[::1]:8000"


def test_key_for_only_the_named_origins() -> None:
    scope = KeyScope.of(KEY, ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001", None])
    assert scope.key_for("http://127.0.0.1:8000/v1/chat/completions") == KEY
    assert scope.key_for("http://127.0.0.1:8001/metrics") == KEY
    for other in (
        "http://127.0.0.1:8002/v1",
        "https://127.0.0.1:8000/v1",
        "http://localhost:8000/v1",
        "http://127.0.0.1:8000@evil.example/v1",
        "not a url",
    ):
        assert scope.key_for(other) is None, other
        assert scope.headers(other) == {}
    assert scope.headers("http://127.0.0.1:8000/x") == {"Authorization": f"Bearer {KEY}"}
    assert scope.withheld("http://127.0.0.1:8002/v1") == (
        "no key sent to http://127.0.0.1:8002: it is not an address the profile names"
    )
    assert scope.withheld("http://127.0.0.1:8000/v1") is None
    assert KeyScope.of(None, ["http://127.0.0.1:8000"]).withheld("http://x:1") is None  # no key, nothing withheld
    assert key_for("http://a:1/v1", [("http", "a", 1)], KEY) == KEY and key_for("http://a:1", [], KEY) is None
    assert KEY not in repr(scope)


@pytest.fixture
def servers() -> Iterator[tuple[SSEServer, SSEServer]]:
    with (
        SSEServer(ttft_ms=5, itl_ms=1, tokens=2, api_key=KEY) as own,
        SSEServer(ttft_ms=5, itl_ms=1, tokens=2) as other,
    ):
        yield own, other


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, KEY)


def write_profile(base_url: str, split: dict[str, str] | None = None) -> None:
    lines = [
        "version = 1",
        'active_profile = "p"',
        'mode = "merged"',
        "",
        "[profiles.p]",
        f'base_url = "{base_url}"',
        'url_convention = "includes-v1"',
        'model = "test-model"',
        f'key = "env:{ENV}"',
        "",
        "[profiles.p.split]",
    ]
    lines += [f'{k} = "{v}"' for k, v in (split or {}).items()]
    path = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


PROBE = ["probe", "--runs", "1", "--warmup", "0", "--max-tokens", "2", "--no-gpu", "--no-history"]


def keys_sent(srv: SSEServer) -> set[str]:
    return {auth for _, auth in srv.auth_log}


def test_an_endpoint_the_profile_does_not_name_gets_no_key(
    servers: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    own, other = servers
    write_profile(own.url)
    assert main([*PROBE, "--endpoint", f"split={other.url}", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["data"]
    assert keys_sent(own) == {f"Bearer {KEY}"}
    assert other.auth_log and keys_sent(other) == {""}  # it was asked, without the key
    assert report["modes"]["merged"]["key"] == "sent"
    assert report["modes"]["split"]["key"] == (
        f"no key sent to http://127.0.0.1:{other.port}: it is not an address the profile names"
    )
    assert any(n.startswith(f"no key sent to http://127.0.0.1:{other.port}") for n in report["notes"])
    assert main([*PROBE, "--endpoint", f"split={other.url}"]) == 0
    assert f"  no key sent to http://127.0.0.1:{other.port}" in capsys.readouterr().out


def test_the_profiles_own_split_probe_url_gets_the_key(
    servers: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    own, other = servers
    write_profile(own.url, {"probe_url": other.url})
    assert main([*PROBE, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["data"]
    assert keys_sent(other) == {f"Bearer {KEY}"} and report["modes"]["split"]["key"] == "sent"


def test_base_url_with_api_key_env_keeps_the_key_on_that_origin(
    servers: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    own, other = servers
    assert (
        main(
            [
                *PROBE,
                "--base-url",
                own.url,
                "--model",
                "test-model",
                "--api-key-env",
                ENV,
                "--endpoint",
                f"split={other.url}",
            ]
        )
        == 0
    )
    assert keys_sent(own) == {f"Bearer {KEY}"} and keys_sent(other) == {""}
    assert "no key sent to" in capsys.readouterr().out


def test_an_endpoint_that_is_not_http_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    write_profile("http://127.0.0.1:9/v1")
    for bad in ("split=file:///etc/passwd", "split=javascript:alert(1)", "merged=127.0.0.1:8000"):
        assert main([*PROBE, "--endpoint", bad]) == 2
        assert "not an http(s) URL" in capsys.readouterr().err


def test_doctor_sends_the_key_to_the_profiles_split_endpoints_only(
    servers: tuple[SSEServer, SSEServer], capsys: pytest.CaptureFixture[str]
) -> None:
    own, other = servers
    write_profile(own.url, {"prefill_base_url": own.url, "decode_base_url": other.url})
    main(
        [
            "doctor",
            "--mode",
            "split",
            "--timeout",
            "3",
            "--skip",
            "nvidia-smi",
            "--skip",
            "same-gpu",
            "--skip",
            "prefix-cache",
        ]
    )
    capsys.readouterr()
    assert f"Bearer {KEY}" in keys_sent(own)  # (the plain reachability GET goes without a key)
    assert keys_sent(own) | keys_sent(other) <= {"", f"Bearer {KEY}"}
