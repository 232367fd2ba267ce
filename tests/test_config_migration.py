"""kvswitch.toml written by the previous kvswitch (config version 1): the article's kinds were
``cline``/``ccswitch`` and the split router ``split.probe_url``. Such a file loads, lints and
switches as it is, and the first write brings it to version 2 (``article-cline``,
``article-ccswitch``, ``split.url``) keeping the user's comments."""

from __future__ import annotations

import json
import tomllib

import pytest

from tests.clientenv import ccswitch_file, cli, cline_file, config_file, init

V1 = """\
# my kvswitch setup, edited by hand
version = 1
active_profile = "A"
mode = "merged"   # merged | split

[profiles.A]
provider = "taotoken"
base_url = "https://taotoken.net/api"
url_convention = "append-v1"
model = "gpt-4o-mini"
key = "none"

[profiles.A.split]
# the router in front of the prefill/decode pair
probe_url = "http://127.0.0.1:8102"  # router
transfer_protocol = "layer-wise"

[[clients]]
path = "~/.cline/settings.json"
kind = "cline"   # VS Code on this laptop

[[clients]]
path = "~/.config/cc-switch/config.toml"
kind = "ccswitch"
"""

COMMENTS = [
    "# my kvswitch setup, edited by hand",
    "# merged | split",
    "# the router in front of the prefill/decode pair",
    "# VS Code on this laptop",
]


@pytest.fixture
def v1() -> str:
    """The article's two files made by init, then kvswitch.toml replaced by a version-1 one."""
    init()
    config_file().write_text(V1, encoding="utf-8")
    return V1


def test_v1_loads_and_reading_it_changes_nothing(v1: str) -> None:
    result = cli("status")
    assert result.rc == 0, result
    assert result.out.count("mode merged") >= 2
    assert config_file().read_text(encoding="utf-8") == v1


def test_v1_lints_clean(v1: str) -> None:
    result = cli("lint", "--format", "json", str(config_file()))
    assert result.rc == 0, result
    assert [d for d in json.loads(result.out) if d["severity"] == "error"] == []


def test_v1_switches_and_the_first_write_migrates(v1: str) -> None:
    result = cli("switch", "split")
    assert result.rc == 0, result
    assert '"mode": "split"' in cline_file().read_text(encoding="utf-8")
    assert tomllib.loads(ccswitch_file().read_text(encoding="utf-8"))["cache"]["mode"] == "split"
    text = config_file().read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert data["version"] == 2
    assert data["mode"] == "split"
    assert [c["kind"] for c in data["clients"]] == ["article-cline", "article-ccswitch"]
    assert data["profiles"]["A"]["split"] == {
        "url": "http://127.0.0.1:8102",
        "transfer_protocol": "layer-wise",
    }
    assert "probe_url" not in text
    for comment in COMMENTS:
        assert comment in text, comment
    # and it goes on working as version 2
    assert cli("switch", "merged").rc == 0
    assert tomllib.loads(config_file().read_text(encoding="utf-8"))["version"] == 2


def test_the_comment_on_probe_url_moves_to_url(v1: str) -> None:
    assert cli("switch", "split").rc == 0
    assert 'url = "http://127.0.0.1:8102"  # router' in config_file().read_text(encoding="utf-8")


def test_v1_kinds_and_probe_url_are_read_as_new_ones(v1: str) -> None:
    from kvswitch.config import read_config

    config = read_config()
    assert [c.kind for c in config.model.clients] == ["article-cline", "article-ccswitch"]
    profile = config.model.profiles["A"]
    assert profile.mode_url("split") == "http://127.0.0.1:8102"
    assert profile.mode_url("merged") == "https://taotoken.net/api"
