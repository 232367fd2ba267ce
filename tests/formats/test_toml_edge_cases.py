"""TOML files a switch used to refuse or misreport: ``nan`` anywhere, a top-level dotted
``cache.mode``, and a syntax error in a file whose name does not tell its kind."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import kvswitch
from kvswitch.document import parse_config
from kvswitch.edits import Set
from kvswitch.errors import UnknownKindError
from kvswitch.formats.toml import TomlDocument
from tests.helpers.cli import Run

BASE = 'base_url = "http://127.0.0.1:8000/v1"'


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("special", ["nan", "+nan", "-nan", "inf", "-inf"])
def test_a_file_with_nan_or_inf_anywhere_switches_and_comes_back(tmp_path: Path, special: str) -> None:
    text = (
        f'[provider]\n{BASE}\n\n[cache]\nmode = "merged"\n\n[cache.split]\n'
        'prefill_base_url = "http://127.0.0.1:8001/v1"\ndecode_base_url = "http://127.0.0.1:8002/v1"\n\n'
        f"[windows]\nscale = {special}  # odd, but valid TOML\nlist = [1.0, {special}]\n"
    )
    path = _config(tmp_path, text)
    kvswitch.switch("split", [path])
    assert tomllib.loads(path.read_text())["cache"]["mode"] == "split"
    kvswitch.switch("merged", [path])
    assert path.read_text() == text


def test_same_values_takes_nan_as_itself_and_keeps_types_apart() -> None:
    from kvswitch.formats.toml import same_values

    nan = float("nan")
    assert same_values({"a": [nan, 1]}, {"a": [nan, 1]})
    assert not same_values({"a": 1}, {"a": 1.0})
    assert not same_values({"a": True}, {"a": 1})
    assert not same_values({"a": nan}, {"a": 1.0})


def test_the_tomlkit_path_verifies_nan_files_too() -> None:
    doc = TomlDocument("x = nan\nl = [1, 2]\n")
    assert "3" in doc.apply([Set(("l",), [1, 2, 3])])  # a list: made with tomlkit


def test_a_top_level_dotted_cache_mode_is_switched_in_its_own_style(tmp_path: Path) -> None:
    text = f'cache.mode = "merged" # here\ncache.chunk_size = 512\nprovider.{BASE}\n'
    path = _config(tmp_path, text)
    kvswitch.switch("split", [path])
    out = path.read_text()
    data = tomllib.loads(out)
    assert data["cache"]["mode"] == "split"
    assert data["cache"]["split"]["prefill_base_url"] == "http://127.0.0.1:8000/v1"
    assert out.startswith('cache.mode = "split" # here\ncache.chunk_size = 512\ncache.split.prefill_base_url = ')
    kvswitch.switch("merged", [path])
    back = path.read_text()
    assert back == out.replace('"split" # here', '"merged" # here')  # the split keys stay (decision 8)


def test_a_dotted_cache_under_a_header_is_switched(tmp_path: Path) -> None:
    text = f'[provider]\n{BASE}\ncache.mode = "merged"\n\n[request]\nstream = true\n'
    path = _config(tmp_path, text)
    # `provider.cache` is not the CC Switch `[cache]`: a switch adds the real one
    kvswitch.switch("split", [path])
    data = tomllib.loads(path.read_text())
    assert data["cache"]["mode"] == "split" and data["provider"]["cache"]["mode"] == "merged"


def test_an_inline_cache_table_is_switched(tmp_path: Path) -> None:
    path = _config(tmp_path, f'cache = {{ mode = "merged" }} # c\n[provider]\n{BASE}\n')
    kvswitch.switch("split", [path])
    data = tomllib.loads(path.read_text())
    assert data["cache"]["mode"] == "split" and data["cache"]["split"]["transfer_protocol"] == "layer-wise"


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("provider.toml", '[provider]\nname = "x"\nbase_url = \n', (3, 12)),
        ("config.toml", "[cache]\nmode = merged\n", (2, 8)),  # not in a cc-switch folder
        ("other.json", '{\n  "a": 1,,\n}\n', (2, 10)),
    ],
)
def test_a_syntax_error_in_a_file_of_no_known_name_says_where(
    tmp_path: Path,
    name: str,
    text: str,
    where: tuple[int, int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UnknownKindError) as caught:
        parse_config(path.read_bytes(), None, path)
    loc = caught.value.location
    assert loc is not None and (loc.line, loc.column) == where
    assert "not valid" in caught.value.message
    run = Run(capsys, monkeypatch)
    assert run("lint", str(path)) == 2
    assert f"{path}:{where[0]}:{where[1]}: not valid" in run.err


def test_a_valid_file_of_no_known_kind_is_still_unknown(tmp_path: Path) -> None:
    path = tmp_path / "other.toml"
    path.write_text("x = 1\n")
    with pytest.raises(UnknownKindError) as caught:
        parse_config(path.read_bytes(), None, path)
    assert caught.value.location is not None and caught.value.location.line is None
