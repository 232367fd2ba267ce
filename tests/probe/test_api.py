"""The probe's front door (kvswitch.probe.api): settings from a profile and from a URL, the key
only to the profile's origins, what a run would spend, a run against the deterministic SSE
server, the history; and the verdict a report's comparison gives."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import kvswitch.probe
from kvswitch.probe import api
from kvswitch.probe.comparison import Verdict, compare, faster, ttft_verdict, verdict
from kvswitch.probe.report import load_history
from kvswitch.probe.runner import resolve_routes
from kvswitch.testing.sse_server import SSEServer

KEY = "sk-front-door-0123456789abcdefXYZ"
QUICK = {"runs": 2, "warmup": 0, "max_tokens": 3, "prompt_tokens": 8, "gpu": False, "metrics": False}


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=20, split_ttft_ms=60, itl_ms=2, tokens=3) as srv:
        yield srv


def write_config(text: str) -> None:
    import os

    path = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


PROFILE = """version = 2
active_profile = "p"

[profiles.p]
base_url = "http://127.0.0.1:8000/v1"
model = "m"
key = "env:FRONT_DOOR_KEY"

[profiles.p.merged]
url = "http://127.0.0.1:8100/v1"

[profiles.p.split]
url = "http://127.0.0.1:8200/v1"

[profiles.other]
base_url = "http://127.0.0.1:9000/v1"
model = "o"
key = "none"
"""


# -- settings ----------------------------------------------------------------------------------


def test_settings_from_a_url_send_its_key_to_that_origin_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONT_DOOR_KEY", KEY)
    s = api.settings_for(
        base_url="http://127.0.0.1:8000/v1",
        model="m",
        api_key_env="FRONT_DOOR_KEY",
        endpoints={"split": "http://127.0.0.1:8300/v1"},
        runs=3,
    )
    assert (s.base_url, s.model, s.api_key, s.runs, tuple(s.modes)) == (
        "http://127.0.0.1:8000/v1",
        "m",
        KEY,
        3,
        ("merged", "split"),
    )
    assert s.key_origins == frozenset({("http", "127.0.0.1", 8000)})
    routes = resolve_routes(s)
    assert routes["merged"].key == "sent" and "Authorization" in routes["merged"].headers
    assert routes["split"].key not in ("sent", "none") and "Authorization" not in routes["split"].headers
    assert KEY not in repr(s)


def test_settings_from_the_active_profile_send_its_key_to_the_addresses_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FRONT_DOOR_KEY", KEY)
    write_config(PROFILE)
    s = api.settings_for(endpoints={"split": "http://127.0.0.1:8999/v1"})
    assert (s.base_url, s.model, s.api_key) == ("http://127.0.0.1:8000/v1", "m", KEY)
    assert s.key_origins == frozenset({("http", "127.0.0.1", port) for port in (8000, 8100, 8200)})
    # the profile's merged URL fills in; the split endpoint given stays, and gets no key
    assert s.endpoints == {"split": "http://127.0.0.1:8999/v1", "merged": "http://127.0.0.1:8100/v1"}
    routes = resolve_routes(s)
    assert routes["merged"].key == "sent" and routes["split"].key not in ("sent", "none")


def test_settings_for_another_profile_and_its_model_override() -> None:
    write_config(PROFILE)
    s = api.settings_for(profile="other", model="override")
    assert (s.base_url, s.model, s.api_key) == ("http://127.0.0.1:9000/v1", "override", None)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "http://127.0.0.1:9/v1"}, "--base-url needs --model"),
        ({"base_url": "http://127.0.0.1:9/v1", "model": "m", "profile": "p"}, "give --profile or --base-url"),
        ({"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "FRONT_DOOR_UNSET"}, "is not set"),
        ({"base_url": "http://127.0.0.1:9/v1", "model": "m", "runs": 0}, "must be at least 1"),
        ({"base_url": "http://127.0.0.1:9/v1", "model": "m", "warmup": -1}, "must be at least 1"),
    ],
)
def test_settings_that_do_not_go_together_are_refused(kwargs: dict[str, object], message: str) -> None:
    from kvswitch.errors import KvswitchError

    with pytest.raises(api.ProbeSettingsError, match=message) as caught:
        api.settings_for(**kwargs)  # type: ignore[arg-type]
    assert isinstance(caught.value, KvswitchError)


def test_the_mode_urls_of_a_profile_with_the_header_on_one_url_are_none() -> None:
    class Profile:
        mode_header = True

        def mode_url(self, mode: str) -> str:
            return "http://127.0.0.1:8000/v1"

    assert api.mode_endpoints(Profile()) == {}
    Profile.mode_header = False
    assert api.mode_endpoints(Profile()) == {"merged": "http://127.0.0.1:8000/v1", "split": "http://127.0.0.1:8000/v1"}


def test_a_big_probe_of_a_remote_host_asks_first_and_loopback_never() -> None:
    big = {"runs": 50, "prompt_tokens": 1000, "gpu": False}
    remote = api.spend(api.settings_for(base_url="http://192.0.2.10:8000/v1", model="m", **big))
    assert remote.remote == ["192.0.2.10"] and remote.tokens > api.ASK_ABOVE_TOKENS and remote.asks_first
    local = api.spend(api.settings_for(base_url="http://127.0.0.1:8000/v1", model="m", **big))
    assert local.remote == [] and local.tokens == remote.tokens and not local.asks_first
    small = api.spend(api.settings_for(base_url="http://192.0.2.10:8000/v1", model="m", runs=1, warmup=0))
    assert small.remote and not small.asks_first
    requests, tokens, hosts = small  # still unpacks as the runner's estimate did
    assert (requests, hosts) == (2, ["192.0.2.10"]) and tokens == small.tokens


# -- a run -------------------------------------------------------------------------------------


def test_a_run_gives_a_typed_report_and_record_keeps_it(server: SSEServer) -> None:
    seen: list[tuple[int, int, str]] = []
    s = api.settings_for(base_url=server.url, model="test-model", **QUICK)  # type: ignore[arg-type]
    report = api.run(s, on_progress=lambda done, total, mode: seen.append((done, total, mode)))
    assert list(report["modes"]) == ["merged", "split"] and not report["cancelled"]
    for m in report["modes"].values():
        assert (m["requests"], m["failures"]) == (2, 0) and m["key"] == "none"
    assert seen and seen[-1][0] == seen[-1][1] == 4
    v = ttft_verdict(report)
    assert v is not None and v.ratio > 1  # split answers 60 ms after merged's 20 ms
    assert load_history() == []
    api.record(report)
    assert load_history()[-1]["modes"]["split"]["ttft_samples_ms"] == report["modes"]["split"]["ttft_samples_ms"]


def test_a_run_with_the_key_sends_it_only_where_the_scope_allows(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONT_DOOR_KEY", KEY)
    server.api_key = KEY
    with SSEServer(ttft_ms=5, itl_ms=1, tokens=3) as elsewhere:  # another origin, named by no one
        s = api.settings_for(
            base_url=server.url,
            model="test-model",
            api_key_env="FRONT_DOOR_KEY",
            endpoints={"merged": server.url, "split": elsewhere.url},
            **QUICK,  # type: ignore[arg-type]
        )
        report = api.run(s)
    merged, split = report["modes"]["merged"], report["modes"]["split"]
    assert (merged["failures"], merged["key"]) == (0, "sent")
    assert split["failures"] == 0 and split["key"].startswith("no key sent to http://127.0.0.1:")
    assert {auth for _path, auth in server.auth_log} == {f"Bearer {KEY}"}
    assert elsewhere.auth_log and {auth for _path, auth in elsewhere.auth_log} == {""}
    assert KEY not in repr(report)


def test_switch_routing_flips_the_clients_before_each_modes_runs(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvswitch.clients

    flipped: list[str] = []
    monkeypatch.setattr(kvswitch.clients, "switch_clients", lambda mode, **kw: flipped.append(mode) or [])
    s = api.settings_for(base_url=server.url, model="test-model", routing="switch", **QUICK)  # type: ignore[arg-type]
    report = api.run(s)
    assert set(flipped) == {"merged", "split"} and all(m["failures"] == 0 for m in report["modes"].values())
    flipped.clear()
    api.run(s, switcher=lambda mode: None)  # a caller's own switcher instead
    assert flipped == []


def test_a_cancelled_run_says_so(server: SSEServer) -> None:
    cancel = threading.Event()
    cancel.set()
    s = api.settings_for(base_url=server.url, model="test-model", **QUICK)  # type: ignore[arg-type]
    report = api.run(s, cancel=cancel)
    assert report["cancelled"] is True


def test_the_package_exports_the_front_door() -> None:
    assert kvswitch.probe.settings_for is api.settings_for and kvswitch.probe.run is api.run
    assert kvswitch.probe.verdict is verdict and kvswitch.probe.ASK_ABOVE_TOKENS == 20_000
    assert sorted(dir(kvswitch.probe)) == sorted(kvswitch.probe.__all__)
    with pytest.raises(AttributeError):
        kvswitch.probe.nothing_here  # noqa: B018


# -- the verdict ---------------------------------------------------------------------------------


def test_the_verdict_of_an_interval() -> None:
    assert verdict({"split/merged": 0.5, "ci95": [0.4, 0.6]}) == Verdict(0.5, 0.4, 0.6, "split")
    assert verdict({"split/merged": 2, "ci95": [1.5, 3]}) == Verdict(2.0, 1.5, 3.0, "merged")
    assert verdict({"split/merged": 1.0, "ci95": [0.9, 1.1]}) == Verdict(1.0, 0.9, 1.1, None)
    assert faster(0.9, 1.1) is None and faster(0.1, 0.99) == "split" and faster(1.01, 2) == "merged"


@pytest.mark.parametrize(
    "ratio",
    [None, {}, "x", {"split/merged": 1.0}, {"split/merged": "1", "ci95": [0, 2]}, {"split/merged": 1.0, "ci95": [0]}],
)
def test_a_ratio_that_is_not_one_has_no_verdict(ratio: object) -> None:
    assert verdict(ratio) is None
    assert ttft_verdict({"comparison": {"ttft_median_ratio": ratio}}) is None  # type: ignore[typeddict-item]


def test_compare_gives_the_ratios_both_modes_allow() -> None:
    assert compare([], [10.0]) == {}
    both = compare([20.0, 22.0, 21.0], [10.0, 11.0, 10.5], [2.0, 2.0], [1.0, 1.0])
    assert list(both) == ["ttft_median_ratio", "itl_p99_ratio"]
    v = verdict(both["ttft_median_ratio"])
    assert v is not None and v.faster == "merged" and v.ratio == pytest.approx(21.0 / 10.5)
    assert list(compare([20.0], [10.0], [2.0], [0.0])) == ["ttft_median_ratio"]  # no ITL ratio over 0
