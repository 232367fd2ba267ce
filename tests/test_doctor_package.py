"""kvswitch.doctor as a package: the public names are those the module had, each part imports
on its own (no cycle), and the seams hold what they say: the target (what is checked and where
the key may go) and the requests' verdicts. The checks themselves are tested through
run_doctor and the CLI in tests/test_doctor.py and tests/test_doctor_i18n.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kvswitch.doctor
from kvswitch.doctor.network import Answer, not_sent, refused, stalled
from kvswitch.doctor.target import DoctorSettings, Target, clean_key, key_has_whitespace, target_from_settings
from kvswitch.probe.client import RequestResult

PARTS = ["checks", "target", "network", "local", "server", "prefix", "gpu", "run"]


def test_the_public_names_are_unchanged() -> None:
    assert sorted(kvswitch.doctor.__all__) == sorted(
        [
            "CHECKS",
            "DOCS",
            "Check",
            "CheckStatus",
            "DoctorReport",
            "DoctorSettings",
            "Target",
            "Timing",
            "assess_prefix_cache",
            "run_doctor",
        ]
    )
    for name in kvswitch.doctor.__all__:
        assert getattr(kvswitch.doctor, name) is not None, name


@pytest.mark.parametrize("part", PARTS)
def test_each_part_imports_on_its_own(part: str) -> None:
    code = f"import kvswitch.doctor.{part}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_a_base_url_target_keeps_the_key_on_its_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVS_PKG_KEY", "sk-PKG-0123456789abcdef")
    s = DoctorSettings(base_url="http://H.example:80/v1", model="m", api_key_env="KVS_PKG_KEY")
    target, why = target_from_settings(s, None)
    assert why is None and target is not None
    assert target.allowed == frozenset({("http", "h.example", 80)})
    assert target.key == "sk-PKG-0123456789abcdef" and target.key_ref == "env:KVS_PKG_KEY"
    assert (target.prefill, target.decode, target.mode) == (s.base_url, s.base_url, "merged")


def test_a_base_url_without_a_key_variable_may_receive_no_key() -> None:
    target, _ = target_from_settings(DoctorSettings(base_url="http://127.0.0.1:9/v1", model="m"), None)
    assert target is not None and target.key is None and target.allowed == frozenset()
    assert target.key_note is not None and "--api-key-env" in target.key_note


def test_no_config_and_no_base_url_is_no_target() -> None:
    assert target_from_settings(DoctorSettings(), None) == (None, None)


def test_a_target_shows_no_credentials_in_its_urls() -> None:
    t = Target("x", None, "http://user:pw@h:8000/v1?token=1", "m", "split", prefill="http://h:8001#f")
    shown = t.as_dict()
    assert shown["base_url"] == "http://…@h:8000/v1?…"
    assert shown["prefill"] == "http://h:8001#…" and shown["decode"] is None
    assert "pw" not in str(shown) and "token" not in str(shown)


def test_keys_with_whitespace() -> None:
    assert key_has_whitespace("sk-a b") and key_has_whitespace("sk-ab\n")
    assert not key_has_whitespace("sk-ab") and not key_has_whitespace(None)
    assert clean_key(" sk-a\tb\r\n") == "sk-ab"


def test_the_verdicts_on_answers() -> None:
    assert stalled(RequestResult(mode="plain", error="stalled: no data for 4 s"))
    assert stalled(RequestResult(mode="plain", error="no complete answer within 8 s"))
    assert not stalled(RequestResult(mode="plain", error="HTTP 500"))
    assert not stalled(RequestResult(mode="plain"))
    assert refused(RequestResult(mode="plain", error=not_sent()))
    assert Answer(refused=True, error="refused").describe() == not_sent()
    assert Answer(404, {"error": {"message": "no such model"}}).describe() == "HTTP 404 (no such model)"
    assert Answer(200, {"data": [{"id": "a"}, {"id": "b"}, "junk"]}).models == ["a", "b"]
    assert Answer(401, {"data": [{"id": "a"}]}).models is None
