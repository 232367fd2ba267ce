"""kvswitch's own config (kvswitch.config): render, read and validate, edit in place."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import pytest

from kvswitch.backups import list_backups
from kvswitch.config import (
    Config,
    client_path,
    config_file,
    edit_config,
    edited_text,
    new_config_text,
    profile_table,
    read_config,
)
from kvswitch.edits import Delete, Set
from kvswitch.errors import ConfigError, ConfigValidationError, ConfigVersionError
from kvswitch.literals import CONFIG_VERSION
from kvswitch.models import ClientEntry, Profile
from kvswitch.setup import init
from tests.clientenv import cli, cline_file
from tests.clientenv import init as cli_init
from tests.conftest import FIXTURES

PROFILE = Profile.model_validate(
    {
        "provider": "taotoken",
        "base_url": "https://taotoken.net/api",
        "url_convention": "append-v1",
        "model": "gpt-4o-mini",
        "split": {"prefill_base_url": "http://10.0.0.11:8100", "decode_base_url": "http://10.0.0.12:8200"},
    }
)
CLIENTS = [
    ClientEntry(path="~/.cline/settings.json", kind="cline"),
    ClientEntry.model_validate(
        {
            "path": "~/.config/cc-switch/config.toml",
            "kind": "ccswitch",
            "name": "CC Switch",
            "nudge": {"kind": "signal", "pidfile": "/run/user/1000/ccswitch.pid"},
        }
    ),
]


def write_config(text: str) -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_config_file_lives_under_kvswitch_home() -> None:
    assert config_file() == Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"


# -- render (new_config_text) -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["merged", "split"])
def test_new_config_text_reads_back_as_what_was_rendered(mode: str) -> None:
    text = new_config_text("tt", PROFILE, CLIENTS, mode)
    write_config(text)
    config = read_config()
    assert config.model.active_profile == "tt" and config.model.mode == mode
    assert config.model.profiles == {"tt": PROFILE}
    assert config.model.clients == CLIENTS
    assert config.profile() == ("tt", PROFILE)
    assert config.file.raw == text.encode() and config.path == config_file()


def test_new_config_text_is_commented_and_holds_no_key() -> None:
    text = new_config_text("tt", PROFILE, CLIENTS)
    assert text.startswith("# kvswitch config.")
    assert 'mode = "merged"   # merged | split\n' in text
    for table in ("merged", "split", "cache", "request"):
        header = f"[profiles.tt.{table}]\n# "
        assert header in text
    assert 'key = "keyring"' in text and "sk-" not in text
    assert 'nudge = { kind = "signal", pidfile = "/run/user/1000/ccswitch.pid" }' in text
    assert tomllib.loads(text)["clients"][1]["name"] == "CC Switch"


def test_profile_table_leaves_unset_endpoints_out() -> None:
    bare = Profile.model_validate({"base_url": "http://127.0.0.1:8000/v1", "model": "m"})
    table = profile_table(bare)
    assert "prefill_base_url" not in table["split"] and "probe_url" not in table["split"]
    assert table["split"]["transfer_protocol"] == "layer-wise"
    assert profile_table(PROFILE)["split"]["prefill_base_url"] == "http://10.0.0.11:8100"


# -- read and validate ----------------------------------------------------------------------


def test_a_missing_config_says_to_run_init() -> None:
    with pytest.raises(ConfigError) as info:
        read_config()
    assert "kvswitch init" in str(info.value) and str(config_file()) in str(info.value)
    result = cli("status")
    assert result.rc == 1 and "kvswitch init" in result.err, result


def test_the_fixture_config_reads_and_client_paths_follow_home(sandbox: Path) -> None:
    path = write_config((FIXTURES / "kvswitch" / "kvswitch.toml").read_text())
    config = read_config(path)
    assert sorted(config.model.profiles) == ["lab", "taotoken"]
    assert [client_path(c) for c in config.model.clients] == [
        sandbox / ".cline" / "settings.json",
        sandbox / ".config" / "cc-switch" / "config.toml",
    ]
    assert client_path(ClientEntry(path="/abs/settings.json", kind="cline")) == Path("/abs/settings.json")
    assert client_path(ClientEntry(path="~", kind="cline")) == sandbox


def test_a_newer_config_version_is_refused() -> None:
    write_config(new_config_text("tt", PROFILE, CLIENTS).replace(f"version = {CONFIG_VERSION}", "version = 99"))
    with pytest.raises(ConfigVersionError) as info:
        read_config()
    assert "newer kvswitch" in str(info.value) and "upgrade kvswitch" in str(info.value)
    assert info.value.location is not None and info.value.location.line == 4


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (('key = "keyring"', 'key = "sk-live-7f3kQ9zR2mX8vB1nL4aA"'), "KVS213"),
        (("chunk_size = 512", 'chunk_size = "512"'), "KVS002"),
        (('mode = "merged"', 'mode = "sideways"'), "KVS002"),
    ],
)
def test_an_invalid_config_is_refused_with_its_location(change: tuple[str, str], code: str) -> None:
    text = new_config_text("tt", PROFILE, CLIENTS)
    assert change[0] in text
    write_config(text.replace(change[0], change[1], 1))
    with pytest.raises(ConfigValidationError) as info:
        read_config()
    assert str(info.value).startswith(f"{config_file()}:")
    assert code in str(info.value)
    assert info.value.location is not None and info.value.location.line is not None
    assert "sk-live-7f3kQ9zR2mX8vB1nL4aA" not in str(info.value)


def test_profile_lookup() -> None:
    write_config(new_config_text("tt", PROFILE, CLIENTS))
    config = read_config()
    assert config.profile("tt")[1] is config.model.profiles["tt"]
    with pytest.raises(ConfigError, match=r"no profile 'nope' \(profiles: tt\)"):
        config.profile("nope")
    edit_config([Delete(("active_profile",))], config)
    with pytest.raises(ConfigError, match="no active profile"):
        read_config().profile()


# -- edit in place --------------------------------------------------------------------------


def _two_profiles() -> Config:
    text = new_config_text("A", PROFILE, CLIENTS)
    other = Profile.model_validate({"provider": "vllm", "base_url": "http://127.0.0.1:8000/v1", "model": "llama"})
    write_config(text)
    return edit_config([Set(("profiles", "B"), profile_table(other))])


def _lines_of(text: str, table_prefix: str) -> list[str]:
    """The raw lines of every table whose header starts with ``table_prefix``."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            inside = line.startswith(table_prefix)
        if inside:
            out.append(line)
    return out


def test_edit_config_changes_one_line_and_keeps_every_comment() -> None:
    config = _two_profiles()
    text = config.file.text.replace("[profiles.A.request]\n", "[profiles.A.request]   # mine\n# my note\n")
    write_config(text)
    after = edit_config([Set(("profiles", "A", "model"), "gpt-4o")])
    assert after.file.text == text.replace('model = "gpt-4o-mini"', 'model = "gpt-4o"')
    assert after.model.profiles["A"].model == "gpt-4o"
    backup = list_backups(config_file())[0].path.read_text()
    assert backup == text  # the previous bytes were kept


def test_editing_one_profile_never_touches_another() -> None:
    config = _two_profiles()
    before_b = _lines_of(config.file.text, "[profiles.B")
    model_b = config.model.profiles["B"]
    for edits in (
        [Set(("profiles", "A", "model"), "X")],
        [Set(("profiles", "A", "merged", "chunk_size"), 1024)],
        [Set(("profiles", "A", "split", "probe_url"), "http://127.0.0.1:9000")],
        [Delete(("profiles", "A", "split", "prefill_base_url"))],
    ):
        config = edit_config(edits)
        assert config.model.profiles["B"] == model_b
        assert _lines_of(config.file.text, "[profiles.B") == before_b
    assert config.model.profiles["A"].model == "X" and config.model.profiles["A"].merged.chunk_size == 1024


def test_edit_config_reapplies_an_edit_over_a_change_made_meanwhile() -> None:
    config = _two_profiles()  # read...
    theirs = config.file.text.replace('model = "llama"', 'model = "llama"  # theirs') + "# added by hand\n"
    write_config(theirs)  # ...someone edits the file...
    after = edit_config([Set(("profiles", "A", "model"), "X")], config)  # ...and kvswitch writes
    assert after.file.text == theirs.replace('model = "gpt-4o-mini"', 'model = "X"')


def test_an_edit_that_breaks_the_config_is_refused_and_nothing_written() -> None:
    config = _two_profiles()
    before = config_file().read_bytes()
    nbackups = len(list_backups(config_file()))
    with pytest.raises(ConfigValidationError, match="KVS213"):
        edit_config([Set(("profiles", "B", "key"), "sk-live-7f3kQ9zR2mX8vB1nL4aA")], config)
    with pytest.raises(ConfigValidationError):
        edited_text(config, [Set(("profiles", "A", "request", "temperature"), 5.0)])
    assert config_file().read_bytes() == before
    assert len(list_backups(config_file())) == nbackups


# -- init into an existing config (kvswitch.setup) -----------------------------------------


def test_init_again_adds_a_profile_and_registers_existing_files_untouched(sandbox: Path) -> None:
    cli_init()
    text = config_file().read_text() + "# my own comment\n"
    write_config(text)
    cline_before = cline_file().read_bytes()
    other = Profile.model_validate({"provider": "vllm", "base_url": "http://127.0.0.1:8000/v1", "model": "llama"})
    extra = sandbox / "work" / "settings.json"
    extra.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", extra)
    extra_before = extra.read_bytes()
    result = init(
        "B", other, [ClientEntry(path=str(cline_file()), kind="cline"), ClientEntry(path=str(extra), kind="cline")]
    )
    assert result.config_written and result.created == []
    assert result.registered == [cline_file(), extra]
    config = read_config()
    assert config.model.active_profile == "A" and sorted(config.model.profiles) == ["A", "B"]
    assert [client_path(c) for c in config.model.clients][-1] == extra
    assert len(config.model.clients) == 3  # the known cline file is not registered twice
    assert config.file.text.startswith(text.removesuffix("# my own comment\n")[:200])
    assert "# my own comment\n" in config.file.text
    assert cline_file().read_bytes() == cline_before and extra.read_bytes() == extra_before


def test_an_empty_profile_name_is_a_name_not_the_active_profile() -> None:
    # `kvswitch profile rename '' x` took the active profile's values for '' and crashed (exit 3)
    from tests.clientenv import cli, init

    init()
    config = read_config()
    with pytest.raises(ConfigError, match="no profile ''"):
        config.profile("")
    assert config.profile(None)[0] == "A"
    result = cli("profile", "rename", "", "B")
    assert result.rc == 1 and "no profile ''" in result.err and "Traceback" not in result.err, result
