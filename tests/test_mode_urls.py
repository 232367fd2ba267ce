"""One URL per mode (issue 11, point 5): a profile's ``merged.url`` and ``split.url`` are
where clients, the probe and doctor send each mode's requests; ``X-Cache-Mode`` goes only
where both modes share one URL and the profile sends the header (``mode_header``).

Through the real CLI against local recording servers: the probe and doctor pick the mode's
URL and the key follows it; engine-flags puts the merged instance and the router on those
URLs; ``profile add/edit`` take ``--merged-url``, ``--split-url`` (``--probe-url`` still
works), ``--mode-header/--no-mode-header``, and a bad URL is refused with lint's code."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kvswitch.testing.sse_server import SSEServer
from tests.clientenv import cli, config_data, config_file

KEY = "sk-MODEURL-0123456789abcdefXYZ"
ENV = "KVS_MODE_URL_KEY"
PROBE = [
    "probe",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--max-tokens",
    "2",
    "--no-gpu",
    "--no-history",
    "--no-metrics",
    "--format",
    "json",
]
DOCTOR = [
    "doctor",
    "--format",
    "json",
    "--timeout",
    "3",
    "--skip",
    "nvidia-smi",
    "--skip",
    "same-gpu",
    "--skip",
    "prefix-cache",
]


@dataclass
class Recorder(SSEServer):
    """Records every request: (path, X-Cache-Mode header, Authorization header)."""

    seen: list[tuple[str, str | None, str]] = field(default_factory=list)

    async def _route(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: Any,
        received: float,
    ) -> bool:
        self.seen.append((target, headers.get("x-cache-mode"), headers.get("authorization", "")))
        return await super()._route(method, target, headers, body, writer, received)

    def chats(self) -> list[tuple[str | None, str]]:
        """(X-Cache-Mode, Authorization) of each chat request."""
        return [(mode, auth) for path, mode, auth in self.seen if path.endswith("/chat/completions")]


@pytest.fixture
def three() -> Iterator[tuple[Recorder, Recorder, Recorder]]:
    """The base URL, the merged instance and the split router."""
    with (
        Recorder(ttft_ms=5, itl_ms=1, tokens=2, api_key=KEY) as base,
        Recorder(ttft_ms=5, itl_ms=1, tokens=2, api_key=KEY) as merged,
        Recorder(ttft_ms=5, itl_ms=1, tokens=2, api_key=KEY) as split,
    ):
        yield base, merged, split


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, KEY)


def write_profile(
    base_url: str,
    *,
    merged: str | None = None,
    split: str | None = None,
    mode_header: bool | None = None,
    mode: str = "merged",
    extra_split: str = "",
) -> None:
    """A version-2 config whose one profile ``p`` has the given URLs."""
    lines = [
        "version = 2",
        'active_profile = "p"',
        f'mode = "{mode}"',
        "",
        "[profiles.p]",
        f'base_url = "{base_url}"',
        'url_convention = "includes-v1"',
        'model = "test-model"',
        f'key = "env:{ENV}"',
    ]
    if mode_header is not None:
        lines.append(f"mode_header = {'true' if mode_header else 'false'}")
    if merged:
        lines += ["", "[profiles.p.merged]", f'url = "{merged}"']
    lines += ["", "[profiles.p.split]", *([f'url = "{split}"'] if split else []), extra_split]
    path = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def probe(*extra: str) -> dict[str, Any]:
    result = cli(*PROBE, *extra)
    assert result.rc == 0, result
    report: dict[str, Any] = json.loads(result.out)["data"]
    return report


# -- the probe ----------------------------------------------------------------------------


def test_probe_sends_each_mode_to_its_own_url_with_the_key_and_no_header(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, merged, split = three
    write_profile(base.url, merged=merged.url, split=split.url)
    report = probe()
    assert base.chats() == []
    assert merged.chats() == [(None, f"Bearer {KEY}")]
    assert split.chats() == [(None, f"Bearer {KEY}")]
    assert report["modes"]["merged"]["key"] == report["modes"]["split"]["key"] == "sent"


def test_probe_with_only_a_split_url_sends_merged_to_the_base_url(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, _, split = three
    write_profile(base.url, split=split.url)
    probe()
    assert base.chats() == [(None, f"Bearer {KEY}")]
    assert split.chats() == [(None, f"Bearer {KEY}")]


def test_probe_with_one_url_routes_by_the_header_unless_the_profile_sends_none(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, _, _ = three
    write_profile(base.url)  # neither URL: as before, the header on the one base URL
    probe()
    assert sorted(m or "" for m, _ in base.chats()) == ["merged", "split"]
    base.seen.clear()
    write_profile(base.url, mode_header=False)
    probe()
    assert [m for m, _ in base.chats()] == [None, None]


def test_an_endpoint_option_still_wins_over_the_profiles_url(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, merged, split = three
    write_profile(base.url, merged=merged.url, split=base.url)
    result = cli(*PROBE, "--endpoint", f"split={split.url}")
    assert result.rc == 1  # the split server wants the key, which it did not get:
    assert split.chats() == [(None, "")]  # not an address the profile names
    assert json.loads(result.out)["data"]["modes"]["split"]["key"].startswith("no key sent to")
    assert merged.chats() == [(None, f"Bearer {KEY}")]


# -- doctor -------------------------------------------------------------------------------


def doctor_checks(*extra: str) -> dict[str, dict[str, Any]]:
    result = cli(*DOCTOR, *extra)
    return {c["name"]: c for c in json.loads(result.out)["data"]["checks"]}


def test_doctor_sends_the_split_request_to_split_url_without_the_header(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, merged, split = three
    write_profile(base.url, merged=merged.url, split=split.url, mode="split")
    checks = doctor_checks()
    # prefill and decode default to the base URL: one address for both (KVS111) is a warning
    assert checks["split"]["status"] == "warn", checks["split"]
    assert "a split request to the profile's split URL answered" in checks["split"]["saw"]
    assert split.chats() == [(None, f"Bearer {KEY}")]
    assert merged.chats() and all(m is None for m, _ in merged.chats())  # auth and model checks
    assert base.chats() == []


def test_doctor_with_one_url_sends_the_split_header_only_when_the_profile_does(
    three: tuple[Recorder, Recorder, Recorder],
) -> None:
    base, _, _ = three
    write_profile(base.url, mode="split")
    checks = doctor_checks()
    assert checks["split"]["status"] == "warn"  # one address for everything (KVS111)
    assert "split" in [m for m, _ in base.chats()]
    base.seen.clear()
    write_profile(base.url, mode="split", mode_header=False)
    doctor_checks()
    assert base.chats() and all(m is None for m, _ in base.chats())


# -- engine-flags -------------------------------------------------------------------------


def test_engine_flags_put_the_instance_and_router_on_the_mode_urls() -> None:
    write_profile(
        "http://127.0.0.1:8000/v1",
        merged="http://127.0.0.1:8100/v1",
        split="http://127.0.0.1:8200/v1",
        extra_split='prefill_base_url = "http://127.0.0.1:8001/v1"\ndecode_base_url = "http://127.0.0.1:8002/v1"',
    )
    merged = cli("engine-flags", "--engine", "vllm", "--mode", "merged")
    assert merged.rc == 0, merged
    assert "--port 8100" in merged.out and "--port 8000" not in merged.out
    split = cli("engine-flags", "--engine", "vllm", "--mode", "split")
    assert split.rc == 0, split
    assert "--port 8200" in split.out and "split.url" in split.out


# -- profile options ----------------------------------------------------------------------


def test_profile_add_and_edit_take_the_mode_urls_and_the_header_switch() -> None:
    write_profile("http://127.0.0.1:8000/v1")
    added = cli(
        "profile",
        "add",
        "q",
        "--base-url",
        "http://127.0.0.1:8000/v1",
        "--model",
        "m",
        "--key",
        "none",
        "--merged-url",
        "http://127.0.0.1:8100/v1/",
        "--split-url",
        "http://127.0.0.1:8200/v1",
        "--no-mode-header",
    )
    assert added.rc == 0, added
    q = config_data()["profiles"]["q"]
    assert q["merged"]["url"] == "http://127.0.0.1:8100/v1"  # normalised: no trailing slash
    assert q["split"]["url"] == "http://127.0.0.1:8200/v1" and q["mode_header"] is False
    edited = cli("profile", "edit", "q", "--probe-url", "http://127.0.0.1:8300/v1", "--mode-header")
    assert edited.rc == 0, edited
    q = config_data()["profiles"]["q"]
    assert q["split"]["url"] == "http://127.0.0.1:8300/v1" and "probe_url" not in q["split"]
    assert q["mode_header"] is True
    shown = cli("profile", "show", "q")
    assert 'split.url = "http://127.0.0.1:8300/v1"' in shown.out and "probe_url" not in shown.out
    assert "mode_header = true" in shown.out
    listed = cli("profile", "list")
    assert "merged=http://127.0.0.1:8100/v1  split=http://127.0.0.1:8300/v1" in listed.out
    both = cli(
        "profile",
        "edit",
        "q",
        "--probe-url",
        "http://127.0.0.1:1/v1",
        "--split-url",
        "http://127.0.0.1:2/v1",
    )
    assert both.rc == 2 and "not both" in both.err


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--merged-url", "ftp://127.0.0.1/v1"),
        ("--split-url", "http://127.0.0.1:0/v1"),
        ("--probe-url", "javascript:alert(1)"),
    ],
)
def test_a_bad_mode_url_is_refused_with_lints_code_and_nothing_written(option: str, value: str) -> None:
    write_profile("http://127.0.0.1:8000/v1")
    before = config_file().read_bytes()
    result = cli("profile", "edit", "p", option, value)
    assert result.rc == 2 and "KVS202" in result.err and option in result.err, result
    assert config_file().read_bytes() == before


def test_the_library_normalises_the_mode_urls_of_a_new_profile() -> None:
    from kvswitch.models import Profile
    from kvswitch.profile_input import check_profile_input
    from kvswitch.validate import InvalidValueError

    p = Profile.model_validate(
        {
            "base_url": "http://h:1/v1",
            "model": "m",
            "merged": {"url": "http://h:2/v1/"},
            "split": {"url": "http://h:3/v1/"},
        }
    )
    checked = check_profile_input("p", p)
    assert (checked.merged.url, checked.split.url) == ("http://h:2/v1", "http://h:3/v1")
    bad = Profile.model_validate({"base_url": "http://h:1/v1", "model": "m", "split": {"url": "file:///x"}})
    with pytest.raises(InvalidValueError) as info:
        check_profile_input("p", bad)
    assert info.value.code == "KVS202"
