"""A profile edited as a form (kvswitch.profile_check): edits, findings, an atomic save."""

from __future__ import annotations

import tomllib

import pytest

from kvswitch.config import Config, config_file, read_config
from kvswitch.edits import Delete, Set
from kvswitch.errors import ConfigValidationError
from kvswitch.profile_check import FIELDS, check_profile, profile_values, save_profile
from tests.clientenv import cli


@pytest.fixture
def config() -> Config:
    assert cli("init", "--preset", "taotoken", "--model", "gpt-4o-mini", "--no-key").rc == 0
    return read_config()


def test_values_round_trip_without_edits(config: Config) -> None:
    values = profile_values(config)
    assert set(values) == set(FIELDS)
    assert values["cache.chunk_size"] == 512 and values["split.prefill_base_url"] is None
    result = check_profile(config, "taotoken", values)
    assert not result.changed and not result.errors
    assert result.text == config.file.text


def test_chunk_size_500_says_it_becomes_512(config: Config) -> None:
    # the value lint would fix is saved fixed (one validation with the command line), and the
    # finding stays as the field's note; 512 is what the profile holds already: no edit
    result = check_profile(config, "taotoken", {"cache.chunk_size": 500})
    assert result.edits == ()
    (d,) = result.for_field("cache.chunk_size")
    assert d.code == "KVS101" and "becomes 512" in d.message
    assert not result.errors  # a warning: saving is allowed


def test_a_chunk_size_off_the_grid_is_saved_as_lint_would_fix_it(config: Config) -> None:
    result = check_profile(config, "taotoken", {"cache.chunk_size": 700})
    assert result.edits == (Set(("profiles", "taotoken", "merged", "chunk_size"), 704),)
    assert [d.code for d in result.for_field("cache.chunk_size")] == ["KVS101"]
    saved = save_profile("taotoken", {"cache.chunk_size": 700})
    assert saved.profile()[1].merged.chunk_size == 704
    assert tomllib.loads(config_file().read_text())["profiles"]["taotoken"]["merged"]["chunk_size"] == 704


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("file:///etc/passwd", "only http:// and https://"),
        ("javascript:alert(1)", "only http:// and https://"),
        ("http://127.0.0.1:99999", "port"),
        ("http://127.0.0.1:8000/v1\r\nX-Evil: 1", "U+000D"),
        ("http://127.0.0.1:8000/v1?a=1", "query string"),
        ("http://user:pw@127.0.0.1:8000", "user name or password"),
        ("http://127.0.0.1\u200b:8000", "U+200B"),
    ],
)
def test_a_bad_endpoint_is_an_error_in_any_mode_and_never_saved(config: Config, url: str, says: str) -> None:
    before = config_file().read_bytes()
    result = check_profile(config, "taotoken", {"split.prefill_base_url": url})
    (d,) = result.errors
    assert (d.code, result.field_of(d)) == ("KVS110", "split.prefill_base_url")
    assert says in d.message and "\r" not in d.message and "pw" not in d.message
    assert result.edits == ()
    with pytest.raises(ConfigValidationError, match="KVS110"):
        save_profile("taotoken", {"split.prefill_base_url": url})
    assert config_file().read_bytes() == before


def test_an_endpoint_with_a_trailing_slash_is_saved_without_it(config: Config) -> None:
    result = check_profile(config, "taotoken", {"split.decode_base_url": "http://127.0.0.1:8200/v1/"})
    assert result.edits == (Set(("profiles", "taotoken", "split", "decode_base_url"), "http://127.0.0.1:8200/v1"),)
    assert [d.code for d in result.for_field("split.decode_base_url")] == ["KVS201"]
    assert not result.errors


def test_errors_block_the_save_and_nothing_is_written(config: Config) -> None:
    before = config_file().read_bytes()
    result = check_profile(config, "taotoken", {"split.max_transfer_concurrency": 0})
    assert [d.code for d in result.errors] == ["KVS112"]
    assert result.field_of(result.errors[0]) == "split.max_transfer_concurrency"
    with pytest.raises(ConfigValidationError, match="KVS112"):
        save_profile("taotoken", {"split.max_transfer_concurrency": 0})
    assert config_file().read_bytes() == before


def test_save_keeps_comments_and_blank_endpoint_unsets(config: Config) -> None:
    path = config_file()
    saved = save_profile("taotoken", {"cache.chunk_size": 768, "split.prefill_base_url": "http://127.0.0.1:8100"})
    text = path.read_text()
    assert "# merged mode: chunked prefill on one instance" in text
    assert saved.profile()[1].merged.chunk_size == 768
    assert tomllib.loads(text)["profiles"]["taotoken"]["split"]["prefill_base_url"] == "http://127.0.0.1:8100"
    again = check_profile(saved, "taotoken", {"split.prefill_base_url": "  "})
    assert again.edits == (Delete(("profiles", "taotoken", "split", "prefill_base_url")),)


def test_unknown_field_is_refused(config: Config) -> None:
    with pytest.raises(ValueError, match="base_url"):
        check_profile(config, "taotoken", {"base_url": "x"})
