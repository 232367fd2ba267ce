"""The config's fast path (:mod:`kvswitch.config_check`, no pydantic) and the pydantic models
agree, over the fuzz corpus of kvswitch.toml inputs: the same accept or reject, the same
findings (codes, messages, key paths, positions), and for an accepted file the same values."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from kvswitch import config as config_module
from kvswitch.config_check import ModelView, fast_model
from kvswitch.errors import KvswitchError
from kvswitch.models import KvswitchConfig
from kvswitch.schema_check import check_schema
from tests.test_fuzz import _documents
from tests.test_fuzz_cli import _CONFIG_SLOTS, _scalar, _set_toml, _toml_value
from tests.test_schema_check import kvswitch_docs

CHECK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PATH = Path("kvswitch.toml")

BASE = """\
# a comment kept
version = 2
active_profile = "A"
mode = "merged"

[profiles.A]
provider = "lab"
base_url = "http://127.0.0.1:18080/v1"
model = "tiny"
key = "env:BENCH_KEY"

[profiles.A.merged]
chunk_size = 512

[profiles.A.split]
transfer_protocol = "layer-wise"
max_transfer_concurrency = 4

[profiles.A.request]
temperature = 0.2
timeout_seconds = 120

[profiles.A.auto]
split_from_tokens = 2000

[profiles.A.headers]
X-Team = "infra"

[gateway]
port = 18090

[[clients]]
path = "/nonexistent/kvswitch-test/settings.json"
kind = "cline"
name = "vscode"

[clients.nudge]
kind = "none"
"""

# the fuzz corpus's slots, and those of the models' own rules (patterns, validators, floats)
SLOTS = [
    *_CONFIG_SLOTS,
    "version",
    "gateway.token",
    "gateway.port",
    "gateway.idle_timeout",
    "gateway.default_route",
    "profiles.{p}.auto.split_from_tokens",
    "profiles.{p}.auto.busy_split_from_tokens",
    "profiles.{p}.headers.X-Team",
    "profiles.{p}.headers.x-team",
    "profiles.{p}.headers.Authorization",
    "profiles.{p}.mode_header",
    "profiles.{p}.request.max_tokens",
    "clients.0.kind",
    "clients.0.mode",
    "clients.0.route",
    "clients.0.write_key",
    "clients.0.nudge.timeout_seconds",
]
_extra = st.sampled_from(
    ["keyring", "env:X_1", "env:1X", "keyring\n", "cline", "article-ccswitch", "kvswitch", "gateway", "split", "mode"]
).map(lambda s: ("str", s)) | st.sampled_from([float("nan"), float("inf"), -0.0, 2.5, 3000, 10**400]).map(
    lambda v: ("num", v)
)
edits = st.lists(st.tuples(st.sampled_from(SLOTS), _scalar | _extra), min_size=1, max_size=3)


def _outcome(raw: bytes | str, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What validating ``raw`` gives: the model (or view), or the error's class, text, place and findings."""
    with monkeypatch.context() as m:
        if not fast:  # the reference: pydantic decides every file lint's checks pass
            m.setattr("kvswitch.config_check.fast_model", lambda data: None)
        try:
            cf = config_module._parse(raw, PATH)
            return config_module._validate(cf)
        except KvswitchError as exc:
            where = exc.location
            place = None if where is None else (where.path, where.line, where.column)
            found = [(d.code, d.key_path, d.line, d.column, d.message) for d in getattr(exc, "diagnostics", ())]
            return (type(exc).__name__, str(exc), place, found)


def _same_values(view: Any, model: Any, where: str = "") -> None:
    """Every field of ``model`` reads the same from ``view``: equal values of the same types."""
    if isinstance(model, BaseModel):
        assert isinstance(view, ModelView), where
        for name in type(model).model_fields:
            _same_values(getattr(view, name), getattr(model, name), f"{where}.{name}")
        if hasattr(model, "mode_url"):
            for mode in ("merged", "split"):
                assert view.mode_url(mode) == model.mode_url(mode), where
        return
    assert type(view) is type(model), (where, view, model)
    if isinstance(model, dict):
        assert list(view) == list(model), where
        for key in model:
            _same_values(view[key], model[key], f"{where}.{key}")
    elif isinstance(model, list):
        assert len(view) == len(model), where
        for i, (a, b) in enumerate(zip(view, model, strict=True)):
            _same_values(a, b, f"{where}[{i}]")
    elif isinstance(model, float) and math.isnan(model):
        assert math.isnan(view), where
    else:
        assert view == model, where


def _agree(raw: bytes | str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _outcome(raw, fast=True, monkeypatch=monkeypatch)
    reference = _outcome(raw, fast=False, monkeypatch=monkeypatch)
    if isinstance(reference, tuple) or isinstance(fast, tuple):
        assert fast == reference
        return
    assert isinstance(reference, KvswitchConfig)
    assert isinstance(fast, ModelView)  # a valid file never needs pydantic
    _same_values(fast, reference)


def _pydantic_errors(data: Any) -> list[dict[str, Any]]:
    try:
        KvswitchConfig.model_validate(data)
    except ValidationError as exc:
        return list(exc.errors(include_url=False))
    return []


@CHECK
@given(edits=edits)
@example(edits=[("profiles.{p}.request.temperature", ("num", float("nan")))])
@example(edits=[("profiles.{p}.request.timeout_seconds", ("num", 10**400))])
@example(edits=[("gateway.token", ("str", "keyring\n"))])
@example(edits=[("profiles.{p}.auto.busy_split_from_tokens", ("num", 3000))])
@example(edits=[("profiles.{p}.headers.x-team", ("str", "dup"))])
@example(edits=[("profiles.{p}.headers.Authorization", ("str", "Bearer sk-abcdefghijklmnop"))])
@example(edits=[("clients.0.kind", ("str", "kvswitch"))])
@example(edits=[("version", ("num", 1))])
def test_hostile_config_values_get_the_same_verdict(edits: list[tuple[str, tuple[str, object]]]) -> None:
    text = BASE
    for slot, value in edits:
        text = _set_toml(text, slot.replace("{p}", "A"), _toml_value(value))
    with pytest.MonkeyPatch.context() as mp:
        _agree(text.encode("utf-8", "surrogateescape"), mp)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=_documents)
def test_random_documents_get_the_same_verdict(raw: bytes | str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        _agree(raw, mp)


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3000),
    st.sampled_from([float("nan"), float("inf"), -1.5, 0.5, 10**400, 2**70]),
    st.sampled_from(["merged", "split", "keyring", "env:X", "env:", "cline", "article-cline", "direct", "gateway"]),
)
_gateway = st.dictionaries(st.sampled_from(["token", "port", "idle_timeout", "translate", "x"]), _values, max_size=3)
_auto = st.dictionaries(st.sampled_from(["split_from_tokens", "busy_split_from_tokens", "sticky"]), _values)
_headers = st.dictionaries(st.sampled_from(["X-A", "x-a", "X-Cache-Mode", "Authorization", ""]), _values)


@st.composite
def _documents_data(draw: st.DrawFn) -> dict[str, Any]:
    data = draw(kvswitch_docs)
    if draw(st.booleans()):
        data["gateway"] = draw(_gateway | _values)
    profiles = data.get("profiles")
    if isinstance(profiles, dict):
        for table in profiles.values():
            if isinstance(table, dict) and draw(st.booleans()):
                table["auto"] = draw(_auto)
                table["headers"] = draw(_headers)
    return data


@CHECK
@given(data=_documents_data())
@example(data={"profiles": {"a": {"base_url": "u", "model": "m", "request": {"temperature": float("nan")}}}})
@example(data={"gateway": {"token": "env:1"}})
@example(data={"gateway": {"idle_timeout": 10**400}})
def test_the_fast_validator_and_pydantic_agree(data: dict[str, Any]) -> None:
    """Accepted by one exactly when by the other; the type and value findings at the same key
    paths with the same error types (the models' own validators are the fast path's reason to
    hand over, so they are left out of the comparison)."""
    errors = _pydantic_errors(data)
    assert (fast_model(data) is None) == bool(errors)
    typed = {(tuple(e["loc"]), e["type"]) for e in errors if e["type"] != "value_error"}
    assert {(e.loc, e.type) for e in check_schema(data, "kvswitch", exact=True)} == typed


def test_a_valid_config_reads_as_the_model_without_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    view = fast_model(config_module._parse(BASE, PATH).data)
    assert isinstance(view, ModelView)
    reference = KvswitchConfig.model_validate(config_module._parse(BASE, PATH).data)
    _same_values(view, reference)
    assert view.clients[0].kind == "article-cline"  # an old id reads as its kind
    assert view.profiles["A"].request.timeout_seconds == 120.0
    assert view.auto_fix == ["KVS101", "KVS201"]  # a default only the model knows
    assert view == reference and view.profiles["A"] == reference.profiles["A"]
    assert view.clients is view.clients  # one list: entries compared by identity stay themselves
