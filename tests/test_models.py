"""The pydantic models (D-3): the article's defaults, constraints, strict types, secrets,
and ``kvswitch.load`` giving one common view whichever kind the file is."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr, ValidationError

import kvswitch
from kvswitch.errors import (
    ConfigError,
    ConfigParseError,
    ConfigValidationError,
    ConfigVersionError,
    KvswitchError,
)
from kvswitch.linter import lint_text
from kvswitch.models import (
    CONFIG_VERSION,
    CacheSettings,
    CCSwitchConfig,
    ClientConfig,
    ClientEntry,
    ClineCacheStrategy,
    ClineRequestOptions,
    ClineSettings,
    KvswitchConfig,
    MergedProfile,
    Nudge,
    Profile,
    ProviderSettings,
    RequestOptions,
    SharedCache,
    SplitProfile,
    SplitSettings,
)

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "sk-live-0123456789abcdefSECRET"


# -- the article's defaults ------------------------------------------------------------


def test_cc_switch_defaults_are_the_articles_s16_s17() -> None:
    cache = CacheSettings()
    assert (cache.mode, cache.chunk_size, cache.kv_cache_dtype, cache.prefix_cache) == (
        "merged",
        512,
        "auto",
        True,
    )
    split = SplitSettings()
    assert (split.transfer_protocol, split.max_transfer_concurrency) == ("layer-wise", 4)
    assert (split.prefill_base_url, split.decode_base_url) == (None, None)
    req = RequestOptions()
    assert (req.temperature, req.max_tokens, req.stream, req.timeout_seconds) == (0.2, 2048, True, 120)
    cfg = CCSwitchConfig()
    assert cfg.cache.split is None
    assert cfg.provider == ProviderSettings()


def test_cline_defaults_are_the_articles_s10_s12() -> None:
    cs = ClineCacheStrategy()
    assert cs.mode == "merged"
    assert cs.chunk_size == 512
    assert cs.kv_cache_dtype == "auto"
    assert cs.enable_prefix_cache is True
    assert cs.kv_transfer_protocol == "layer-wise"
    ro = ClineRequestOptions()
    assert (ro.temperature, ro.max_tokens, ro.stream) == (0.2, 2048, True)
    assert ClineSettings().api_provider == "openai-compatible"


def test_kvswitch_profile_defaults_match_the_client_defaults() -> None:
    assert MergedProfile().chunk_size == CacheSettings().chunk_size == 512
    sp = SplitProfile()
    assert (sp.transfer_protocol, sp.max_transfer_concurrency) == ("layer-wise", 4)
    shared = SharedCache()
    assert (shared.kv_cache_dtype, shared.prefix_cache) == ("auto", True)
    prof = Profile(base_url="https://taotoken.net/api", model="m")
    assert prof.key == "keyring"
    assert prof.request == RequestOptions()
    cfg = KvswitchConfig()
    assert (cfg.version, cfg.mode, cfg.active_profile, cfg.profiles, cfg.clients) == (
        CONFIG_VERSION,
        "merged",
        None,
        {},
        [],
    )
    assert Nudge().kind == "none"
    assert ClientEntry(path="x", kind="cline").allow_key_in_repo is False


def test_the_articles_files_hold_exactly_the_defaults() -> None:
    """S-11 and S-16 written out equal the models' defaults."""
    data = tomllib.loads((FIXTURES / "ccswitch" / "article.toml").read_text())
    cfg = CCSwitchConfig.model_validate(data)
    assert CacheSettings.model_validate({k: v for k, v in data["cache"].items() if k != "split"}) == CacheSettings()
    assert cfg.request == RequestOptions()
    assert cfg.cache.split is not None
    assert cfg.cache.split.transfer_protocol == SplitSettings().transfer_protocol
    assert cfg.cache.split.max_transfer_concurrency == SplitSettings().max_transfer_concurrency

    cf, _ = lint_text((FIXTURES / "cline" / "article.json").read_bytes(), "cline", git=False)
    assert cf is not None
    cline = ClineSettings.model_validate({k: v for k, v in cf.data.items() if k.startswith("cline.")})
    assert cline.cache_strategy == ClineCacheStrategy()
    assert cline.request_options == ClineRequestOptions()


# -- constraints -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (CacheSettings, {"chunk_size": 0}),
        (CacheSettings, {"chunk_size": -64}),
        (CacheSettings, {"mode": "both"}),
        (CacheSettings, {"mode": "Merged"}),
        (RequestOptions, {"temperature": -0.1}),
        (RequestOptions, {"temperature": 2.01}),
        (RequestOptions, {"max_tokens": 0}),
        (RequestOptions, {"timeout_seconds": 0}),
        (RequestOptions, {"timeout_seconds": -1}),
        (SplitSettings, {"transfer_protocol": "layerwise"}),
        (ClineCacheStrategy, {"chunkSize": 0}),
        (ClineCacheStrategy, {"mode": "both"}),
        (ClineCacheStrategy, {"kvTransferProtocol": "chunk-wise"}),
        (ClineRequestOptions, {"temperature": 3}),
        (ClineRequestOptions, {"maxTokens": 0}),
        (KvswitchConfig, {"mode": "both"}),
        (MergedProfile, {"chunk_size": 0}),
        (Nudge, {"kind": "email"}),
        (Nudge, {"timeout_seconds": 0}),
        (ClientEntry, {"path": "x", "kind": "kvswitch"}),
    ],
)
def test_constraints_reject(model: type[BaseModel], data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(data)


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (CacheSettings, {"chunk_size": 1}),
        (CacheSettings, {"mode": "split"}),
        (RequestOptions, {"temperature": 0}),
        (RequestOptions, {"temperature": 2}),
        (RequestOptions, {"temperature": 1.5, "max_tokens": 1, "timeout_seconds": 0.5}),
        (SplitSettings, {"transfer_protocol": "request-wise"}),
        (ClineCacheStrategy, {"mode": "split", "kvTransferProtocol": "request-wise"}),
        (ClineCacheStrategy, {"chunk_size": 768}),  # field names work too (populate_by_name)
    ],
)
def test_constraints_accept(model: type[BaseModel], data: dict[str, Any]) -> None:
    model.model_validate(data)


def test_alias_and_field_name_are_the_same_field() -> None:
    assert ClineCacheStrategy.model_validate({"chunkSize": 768}).chunk_size == 768
    assert ClineCacheStrategy.model_validate({"chunk_size": 768}).chunk_size == 768


# -- strict types ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (CacheSettings, {"chunk_size": "512"}),
        (CacheSettings, {"chunk_size": True}),
        (CacheSettings, {"chunk_size": 512.0}),
        (CacheSettings, {"prefix_cache": "true"}),
        (CacheSettings, {"prefix_cache": 1}),
        (CacheSettings, {"kv_cache_dtype": 8}),
        (RequestOptions, {"max_tokens": "2048"}),
        (RequestOptions, {"max_tokens": False}),
        (RequestOptions, {"temperature": "0.2"}),
        (RequestOptions, {"temperature": True}),
        (RequestOptions, {"stream": "yes"}),
        (SplitSettings, {"max_transfer_concurrency": "4"}),
        (SplitSettings, {"max_transfer_concurrency": True}),
        (ProviderSettings, {"base_url": 8080}),
        (ProviderSettings, {"model": ["m"]}),
        (ClineCacheStrategy, {"chunkSize": "512"}),
        (ClineCacheStrategy, {"enablePrefixCache": "true"}),
        (ClineRequestOptions, {"maxTokens": 2048.0}),
        (KvswitchConfig, {"version": "1"}),
        (KvswitchConfig, {"version": True}),
    ],
)
def test_strict_types(model: type[BaseModel], data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(data)


def test_an_int_is_a_valid_float() -> None:
    """TOML's ``temperature = 1`` is an integer; a float field takes it."""
    assert RequestOptions.model_validate({"temperature": 1, "timeout_seconds": 30}).temperature == 1.0


# -- unknown keys ----------------------------------------------------------------------


def test_unknown_keys_are_kept_by_the_model_and_reported_by_lint(tmp_path: Path) -> None:
    data = {"cache": {"mode": "merged", "chunk_sise": 512, "prefetch": 2}}
    cfg = CCSwitchConfig.model_validate(data)
    assert cfg.cache.model_extra == {"chunk_sise": 512, "prefetch": 2}

    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir()
    path.write_text('[provider]\nmodel = "m"\n[cache]\nmode = "merged"\nchunk_sise = 512\nprefetch = 2\n')
    diags = [d for d in kvswitch.lint(path, git=False).diagnostics if d.code == "KVS003"]
    assert [(d.line, d.column) for d in diags] == [(5, 1), (6, 1)]
    assert "did you mean 'chunk_size'" in diags[0].message
    assert "did you mean" not in diags[1].message


# -- secrets ---------------------------------------------------------------------------


def test_secret_str_is_never_shown() -> None:
    p = ProviderSettings(api_key=SECRET)
    assert isinstance(p.api_key, SecretStr)
    assert p.api_key.get_secret_value() == SECRET
    for shown in (repr(p), str(p), p.model_dump_json(), repr(p.model_dump())):
        assert SECRET not in shown
    cline = ClineSettings.model_validate({"cline.openAiApiKey": SECRET})
    assert SECRET not in repr(cline) and SECRET not in cline.model_dump_json(by_alias=True)
    view = ClientConfig(kind="ccswitch", provider=p)
    assert SECRET not in repr(view)


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (ProviderSettings, {"api_key": [SECRET]}),
        (ProviderSettings, {"api_key": {"v": SECRET}}),
        (CCSwitchConfig, {"provider": {"api_key": 12345, "name": SECRET}, "cache": {"mode": SECRET}}),
        (ClineSettings, {"cline.openAiApiKey": [SECRET], "cline.cacheStrategy": {"mode": SECRET}}),
        (Profile, {"base_url": SECRET, "model": 1, "key": [SECRET]}),
        (ClientConfig, {"kind": "cline", "provider": {"api_key": [SECRET]}, "cache": {"mode": SECRET}}),
    ],
)
def test_validation_errors_never_echo_input(model: type[BaseModel], data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    assert SECRET not in str(exc.value)
    assert SECRET not in repr(exc.value)


# -- kvswitch.load: one common view ----------------------------------------------------


def test_load_gives_the_same_view_for_the_articles_two_files() -> None:
    cline = kvswitch.load(FIXTURES / "cline" / "article.json", kind="cline")
    cc = kvswitch.load(FIXTURES / "ccswitch" / "article.toml", kind="ccswitch")
    assert isinstance(cline, ClientConfig) and isinstance(cc, ClientConfig)
    assert (cline.kind, cc.kind) == ("article-cline", "article-ccswitch")  # old ids read as aliases
    for view in (cline, cc):
        assert view.provider.base_url == "https://taotoken.net/api"
        assert view.provider.model == "gpt-4o-mini"
        assert view.mode == view.cache.mode == "merged"
    assert cline.cache == cc.cache
    assert cline.cache.chunk_size == cc.cache.chunk_size == 512
    assert cline.cache.prefix_cache is cc.cache.prefix_cache is True
    assert cline.request.temperature == cc.request.temperature == 0.2
    assert cline.request.max_tokens == cc.request.max_tokens == 2048


def test_load_split_forms_agree() -> None:
    cline = kvswitch.load(FIXTURES / "cline" / "article-split.json", kind="cline")
    assert cline.mode == "split"
    assert cline.split is not None
    assert cline.split.prefill_base_url == "http://10.0.0.11:8100"
    assert cline.split.decode_base_url == "http://10.0.0.12:8200"
    assert cline.split.transfer_protocol == "layer-wise"
    cc = kvswitch.load(FIXTURES / "ccswitch" / "article.toml", kind="ccswitch")
    assert cc.split is not None
    assert (cc.split.prefill_base_url, cc.split.decode_base_url) == (
        cline.split.prefill_base_url,
        cline.split.decode_base_url,
    )


def test_load_detects_the_kind_from_the_name(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes((FIXTURES / "cline" / "article.json").read_bytes())
    cfg = tmp_path / "cc-switch" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_bytes((FIXTURES / "ccswitch" / "article.toml").read_bytes())
    assert kvswitch.load(settings).kind == "article-cline"
    assert kvswitch.load(str(cfg)).kind == "article-ccswitch"
    assert kvswitch.load(settings).path == settings


def test_load_kvswitch_config_returns_the_active_profile(tmp_path: Path) -> None:
    src = (FIXTURES / "kvswitch" / "kvswitch.toml").read_text()
    path = tmp_path / "kvswitch.toml"
    path.write_text(src)
    view = kvswitch.load(path)
    assert view.kind == "kvswitch"
    assert view.provider.name == "taotoken"
    assert view.provider.base_url == "https://taotoken.net/api"
    assert view.provider.model == "gpt-4o-mini"
    assert view.provider.api_key is None  # a key reference is not a key
    assert view.cache.chunk_size == 512
    assert view.split is not None and view.split.max_transfer_concurrency == 4

    path.write_text(src.replace('active_profile = "taotoken"', 'active_profile = "lab"'))
    lab = kvswitch.load(path)
    assert (lab.provider.name, lab.provider.model) == ("kvswitch-lab", "tiny")
    assert lab.provider.base_url == "http://127.0.0.1:18080/v1"

    path.write_text(src.replace('mode = "merged"', 'mode = "split"', 1))
    assert kvswitch.load(path).mode == "split"


def test_load_kvswitch_config_without_active_profile(tmp_path: Path) -> None:
    path = tmp_path / "kvswitch.toml"
    path.write_text('version = 1\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n')
    with pytest.raises(ConfigError, match="no active profile"):
        kvswitch.load(path)


def test_load_wrong_types_raises_validation_error_with_every_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir()
    path.write_text('[provider]\nmodel = "m"\napi_key = 12345\n[cache]\nmode = "both"\nchunk_size = "512"\n')
    with pytest.raises(ConfigValidationError) as exc:
        kvswitch.load(path)
    diags = exc.value.diagnostics
    assert {d.code for d in diags} == {"KVS002"}
    assert [(d.line, d.column) for d in diags] == [(3, 11), (5, 8), (6, 14)]
    assert "got 'both'" in diags[1].message
    assert "12345" not in diags[0].message  # a key's input is never shown
    assert str(exc.value).startswith(f"{path}:3:11: KVS002")
    assert "(and 2 more)" in str(exc.value)
    assert isinstance(exc.value, KvswitchError)


def test_load_newer_config_version_raises_version_error(tmp_path: Path) -> None:
    path = tmp_path / "kvswitch.toml"
    path.write_text((FIXTURES / "kvswitch" / "kvswitch.toml").read_text().replace("version = 1", "version = 99"))
    with pytest.raises(ConfigVersionError, match="newer kvswitch") as exc:
        kvswitch.load(path)
    assert str(exc.value).startswith(f"{path}:1:11:")


@pytest.mark.parametrize(
    ("name", "text", "line", "col"),
    [
        ("cc-switch/config.toml", '[cache]\nmode = "merged\n', 2, 15),
        ("kvswitch.toml", "version = 1\nactive_profile = = 1\n", 2, 18),
        ("settings.json", '{\n  "cline.openAiModelId": "m",\n  oops\n}\n', 3, 3),
    ],
)
def test_parse_error_str_starts_with_path_line_col(tmp_path: Path, name: str, text: str, line: int, col: int) -> None:
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    with pytest.raises(ConfigParseError) as exc:
        kvswitch.load(path)
    assert str(exc.value).startswith(f"{path}:{line}:{col}: ")
    assert exc.value.location is not None
    assert (exc.value.location.line, exc.value.location.column) == (line, col)


def test_client_config_is_frozen() -> None:
    view = ClientConfig(kind="cline")
    with pytest.raises(ValidationError):
        view.kind = "ccswitch"  # type: ignore[misc]
