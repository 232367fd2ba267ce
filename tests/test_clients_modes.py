"""One client alone or every client (issue 12, point 3): ``ClientEntry.mode``, a client's
own mode, set by ``kvswitch switch MODE --client NAME`` and cleared by a switch of every
client; ``profile use``, ``status`` and the watcher hold each client in its own mode.

Real clients' realistic files (tests/fixtures/clients/) at their default paths in the
test's sandbox, profile A with one URL per mode (tests/kinds/kindenv.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvswitch.clients import find_client, status, switch_clients
from kvswitch.config import read_config
from kvswitch.errors import ConfigError
from tests.clientenv import KEY_A, cli, config_data, config_file
from tests.helpers.watching import Events, running_watcher, save_replace, wait_until
from tests.kinds.kindenv import MERGED_URL, SPLIT_URL, add, place, setup

CLAUDE_MERGED = MERGED_URL  # Claude Code takes the root URL
CLAUDE_SPLIT = SPLIT_URL


def _three() -> dict[str, Path]:
    """Claude Code, Codex and Qwen Code registered (no names) and rendered in merged mode."""
    setup()
    files = {kind: place(kind) for kind in ("claude-code", "codex", "qwen-code")}
    for path in files.values():
        add(path)
    _ok("profile", "use", "A")
    return files


def _ok(*argv: str) -> str:
    result = cli(*argv)
    assert result.rc == 0, result
    return result.out


def _snapshot(files: dict[str, Path]) -> dict[str, bytes]:
    return {**{k: p.read_bytes() for k, p in files.items()}, "config": config_file().read_bytes()}


def _by_path() -> dict[Path, Any]:
    return {c.path: c for c in status().clients}


def _entries() -> list[dict[str, Any]]:
    clients: list[dict[str, Any]] = config_data()["clients"]
    return clients


def _claude_env(path: Path) -> dict[str, str]:
    env: dict[str, str] = json.loads(path.read_text())["env"]
    return env


# -- switch MODE --client NAME -------------------------------------------------------------


def test_switching_one_client_alone_writes_only_its_file_and_records_its_own_mode() -> None:
    files = _three()
    before = _snapshot(files)
    out = _ok("switch", "split", "--client", "claude-code")
    assert "switched 1 file to split" in out
    after = _snapshot(files)
    assert after["codex"] == before["codex"] and after["qwen-code"] == before["qwen-code"]
    env = _claude_env(files["claude-code"])
    assert env["ANTHROPIC_BASE_URL"] == CLAUDE_SPLIT
    assert "X-Cache-Mode: split" in env["ANTHROPIC_CUSTOM_HEADERS"].splitlines()
    data = config_data()
    assert data["mode"] == "merged"  # the config's mode stays
    assert [e.get("mode") for e in data["clients"]] == ["split", None, None]
    st = _by_path()
    claude = st[files["claude-code"]]
    assert (claude.mode, claude.target, claude.own_mode, claude.in_sync) == ("split", "split", True, True)
    for kind in ("codex", "qwen-code"):
        other = st[files[kind]]
        assert (other.mode, other.target, other.own_mode, other.in_sync) == ("merged", "merged", False, True)


def test_switching_it_back_to_the_configs_mode_removes_its_own_mode() -> None:
    files = _three()
    before = _snapshot(files)
    _ok("switch", "split", "--client", "claude-code")
    _ok("switch", "merged", "--client", "claude-code")
    assert all("mode" not in e for e in _entries())
    assert _snapshot(files) == before  # kvswitch.toml and every file, byte for byte


def test_a_switch_of_every_client_clears_every_own_mode() -> None:
    _three()
    _ok("switch", "split", "--client", "claude-code", "--client", "qwen-code")
    assert [e.get("mode") for e in _entries()] == ["split", None, "split"]
    out = _ok("switch", "split")
    assert "switched 1 file to split" in out  # Codex: the other two are in split already
    data = config_data()
    assert data["mode"] == "split" and all("mode" not in e for e in data["clients"])
    assert all(c.mode == "split" and c.in_sync and not c.own_mode for c in status().clients)
    _ok("switch", "merged")
    assert all(c.mode == "merged" and c.in_sync for c in status().clients)


def test_switch_clients_only_in_the_library_returns_the_one_change() -> None:
    files = _three()
    changes = switch_clients("split", only=[str(files["codex"])])
    assert [(c.path, c.old_mode, c.new_mode, c.changed) for c in changes] == [(files["codex"], "merged", "split", True)]
    assert _entries()[1]["mode"] == "split"


def test_profile_use_renders_each_client_in_its_own_mode() -> None:
    files = _three()
    _ok("switch", "split", "--client", "claude-code")
    _ok("profile", "edit", "A", "--model", "coder-14b")
    out = _ok("profile", "use", "A")
    assert "profile A is active" in out
    env = _claude_env(files["claude-code"])
    assert env["ANTHROPIC_BASE_URL"] == CLAUDE_SPLIT and env["ANTHROPIC_MODEL"] == "coder-14b"
    assert "X-Cache-Mode: split" in env["ANTHROPIC_CUSTOM_HEADERS"]
    codex = files["codex"].read_text()
    assert f'base_url = "{MERGED_URL}/v1"' in codex and 'model = "coder-14b"' in codex
    assert [e.get("mode") for e in _entries()] == ["split", None, None]  # kept
    assert all(c.in_sync for c in status().clients), status().clients


def test_status_checks_each_client_against_its_own_mode_text_and_json() -> None:
    files = _three()
    _ok("switch", "split", "--client", "qwen-code")
    text = _ok("status")
    line = next(ln for ln in text.splitlines() if str(files["qwen-code"]) in ln)
    assert "mode split (its own mode: split) · in sync" in line
    assert text.count("in sync") == 3
    report = json.loads(_ok("status", "--format", "json"))["data"]
    by_kind = {c["kind"]: c for c in report["clients"]}
    assert by_kind["qwen-code"]["target"] == "split" and by_kind["qwen-code"]["own_mode"] is True
    assert by_kind["codex"]["target"] == "merged" and by_kind["codex"]["own_mode"] is False
    # its own mode set by hand in kvswitch.toml while the file is still merged: drifted
    text = config_file().read_text()
    config_file().write_text(text.replace('kind = "codex"\n', 'kind = "codex"\nmode = "split"\n', 1))
    codex = _by_path()[files["codex"]]
    assert (codex.target, codex.own_mode, codex.in_sync) == ("split", True, False)
    assert "cache.mode" in codex.drift


def test_client_list_shows_an_own_mode() -> None:
    files = _three()
    _ok("switch", "split", "--client", "codex")
    lines = _ok("client", "list").splitlines()
    codex = next(ln for ln in lines if str(files["codex"]) in ln)
    assert "own mode split" in codex
    assert not any("own mode" in ln for ln in lines if ln is not codex)


@pytest.mark.parametrize("spec", ["kind", "file", "name", "relative"])
def test_a_client_is_found_by_its_kind_file_or_name(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    setup()
    claude, codex = place("claude-code"), place("codex")
    add(claude, "--name", "laptop")
    add(codex)
    _ok("profile", "use", "A")
    monkeypatch.chdir(codex.parent)
    given = {"kind": "codex", "file": str(codex), "name": "laptop", "relative": f"./{codex.name}"}[spec]
    want = claude if spec == "name" else codex
    entry = find_client(read_config(), given)
    assert Path(entry.path) == want
    before = (claude if want == codex else codex).read_bytes()
    _ok("switch", "split", "--client", given)
    assert _by_path()[want].mode == "split"
    assert (claude if want == codex else codex).read_bytes() == before


# -- refusals: nothing written --------------------------------------------------------------


def _two_codex() -> dict[str, Path]:
    setup()
    files = {"codex": place("codex"), "other": place("codex", path=Path(os.environ["HOME"]) / "work" / "codex.toml")}
    add(files["codex"])
    add(files["other"], "--kind", "codex")
    _ok("profile", "use", "A")
    return files


def test_two_clients_of_one_kind_must_be_named_nothing_written() -> None:
    files = _two_codex()
    before = _snapshot(files)
    result = cli("switch", "split", "--client", "codex")
    assert result.rc == 1, result
    assert "no registered client 'codex' (2 clients are of that kind: name one)" in result.err
    assert str(files["codex"]) in result.err and str(files["other"]) in result.err
    assert _snapshot(files) == before
    # naming the file picks one
    _ok("switch", "split", "--client", str(files["other"]))
    assert _by_path()[files["other"]].mode == "split" and _by_path()[files["codex"]].mode == "merged"


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("nope", "'nope'"),
        ("\x1b[31mred", "'\\x1b[31mred'"),  # a terminal escape is shown escaped
        (KEY_A, "'sk-…"),  # a key pasted by mistake is masked
        ("/nowhere/settings.json", "'/nowhere/settings.json'"),
    ],
)
def test_a_client_naming_nothing_is_refused_and_nothing_written(spec: str, shown: str) -> None:
    files = _three()
    before = _snapshot(files)
    result = cli("switch", "split", "--client", "codex", "--client", spec)
    assert result.rc == 1, result
    assert f"no registered client {shown}" in result.err
    assert KEY_A not in result.err + result.out and "\x1b" not in result.err
    assert "Traceback" not in result.err
    assert _snapshot(files) == before  # not even the codex named first


def test_find_client_raises_a_located_config_error() -> None:
    _three()
    config = read_config()
    with pytest.raises(ConfigError) as caught:
        find_client(config, "nope")
    assert caught.value.location is not None and caught.value.location.path == config_file()
    with pytest.raises(ConfigError):
        find_client(config, "cline-providers")  # a kind no registered client is of


def test_paths_and_client_together_are_a_usage_error() -> None:
    files = _three()
    before = _snapshot(files)
    result = cli("switch", "split", str(files["codex"]), "--client", "codex")
    assert result.rc == 2 and "give PATHs or --client, not both" in result.err
    assert _snapshot(files) == before


def test_kind_without_paths_is_a_usage_error() -> None:
    """--kind names the kind of PATHs; a registered client's kind is in its entry."""
    files = _three()
    before = _snapshot(files)
    result = cli("switch", "split", "--kind", "codex")
    assert result.rc == 2 and "--kind goes with PATHs" in result.err
    assert _snapshot(files) == before


def test_a_dry_run_of_one_client_shows_its_diff_and_writes_nothing() -> None:
    files = _three()
    before = _snapshot(files)
    out = _ok("switch", "split", "--client", "claude-code", "--dry-run")
    assert f"--- {files['claude-code']} (now)" in out
    assert str(files["codex"]) not in out and str(files["qwen-code"]) not in out
    assert _snapshot(files) == before


@pytest.mark.parametrize(
    "value",
    [
        '"sk-live-7f3kQ9zR2mX8vB1nL4aA\\u001b[31m"',  # a key and a terminal escape
        '"Split"',
        '"both"',
        "1",
        "true",
        '{ evil = "x" }',
    ],
)
def test_a_hostile_mode_in_a_clients_entry_is_refused_with_its_place(value: str) -> None:
    files = _three()
    text = config_file().read_text()
    hostile = text.replace('kind = "codex"\n', f'kind = "codex"\nmode = {value}\n', 1)
    config_file().write_text(hostile)
    line = hostile.splitlines().index(f"mode = {value}") + 1
    before = _snapshot(files)
    for argv in (("status",), ("switch", "split"), ("switch", "split", "--client", "codex"), ("profile", "use", "A")):
        result = cli(*argv)
        assert result.rc == 1, (argv, result)
        assert f"{config_file()}:{line}:" in result.err, result.err
        assert "clients.1.mode" in result.err
        assert KEY_A not in result.err + result.out and "\x1b" not in result.err
        assert "Traceback" not in result.err
    assert _snapshot(files) == before


# -- the watcher ---------------------------------------------------------------------------


def _flip_claude(path: Path, to: str) -> str:
    frm = "split" if to == "merged" else "merged"
    urls = {"merged": CLAUDE_MERGED, "split": CLAUDE_SPLIT}
    text = path.read_text().replace(f'"{urls[frm]}"', f'"{urls[to]}"')
    text = text.replace(f"X-Cache-Mode: {frm}", f"X-Cache-Mode: {to}")
    save_replace(path, text)
    return text


def test_a_hand_flip_back_to_the_configs_mode_is_adopted_as_following_it(events: Events) -> None:
    files = _three()
    _ok("switch", "split", "--client", "claude-code")
    others = {k: files[k].read_bytes() for k in ("codex", "qwen-code")}
    with running_watcher(events):
        text = _flip_claude(files["claude-code"], "merged")
        assert wait_until(lambda: events.of("adopted")), events.describe()
        assert events.wait_quiet()
    assert all("mode" not in e for e in _entries()), _entries()  # its own mode is gone
    assert config_data()["mode"] == "merged"
    assert {k: files[k].read_bytes() for k in others} == others
    assert files["claude-code"].read_text() == text
    (adopted,) = events.of("adopted")
    assert "follows the config's mode again" in adopted.message
    assert not events.of("propagated", "reverted"), events.describe()
    assert all(c.in_sync and not c.own_mode for c in status().clients)


def test_a_hand_flip_of_a_client_with_its_own_mode_stays_its_own(events: Events) -> None:
    """Codex flipped by hand: the config's mode follows and the others are brought to it,
    but Claude Code keeps its own; Claude Code flipped by hand next: that is its own mode,
    and nothing else moves."""
    files = _three()
    _ok("switch", "split", "--client", "claude-code")
    with running_watcher(events):
        codex = files["codex"]
        save_replace(
            codex,
            codex.read_text()
            .replace(f"{MERGED_URL}/v1", f"{SPLIT_URL}/v1")
            .replace('X-Cache-Mode = "merged"', 'X-Cache-Mode = "split"'),
        )
        assert wait_until(lambda: config_data()["mode"] == "split"), events.describe()
        assert wait_until(lambda: _by_path()[files["qwen-code"]].mode == "split"), events.describe()
        assert events.wait_quiet()
        assert _entries()[0].get("mode") == "split"  # the same as the config's now, still its own
        mark = len(events)
        qwen, codex_bytes = files["qwen-code"].read_bytes(), codex.read_bytes()
        _flip_claude(files["claude-code"], "merged")
        assert wait_until(lambda: events.of("adopted", since=mark)), events.describe(mark)
        assert events.wait_quiet()
    assert _entries()[0]["mode"] == "merged" and config_data()["mode"] == "split"
    assert files["qwen-code"].read_bytes() == qwen and codex.read_bytes() == codex_bytes
    (adopted,) = events.of("adopted", since=mark)
    assert "its own mode is merged now" in adopted.message
    assert not events.of("propagated", since=mark), events.describe(mark)
    assert all(c.in_sync for c in status().clients)


def test_revert_puts_a_client_back_in_its_own_mode(events: Events) -> None:
    files = _three()
    _ok("switch", "split", "--client", "claude-code")
    split_text = files["claude-code"].read_text()
    others = {k: files[k].read_bytes() for k in ("codex", "qwen-code")}
    config_before = config_file().read_bytes()
    with running_watcher(events, policy="revert"):
        _flip_claude(files["claude-code"], "merged")
        assert wait_until(lambda: events.of("reverted")), events.describe()
        assert events.wait_quiet()
    assert files["claude-code"].read_text() == split_text
    assert "in mode split" in events.of("reverted")[0].message
    assert config_file().read_bytes() == config_before
    assert {k: files[k].read_bytes() for k in others} == others


def test_an_unrelated_edit_of_a_client_in_its_own_mode_moves_no_mode(events: Events) -> None:
    files = _three()
    _ok("switch", "split", "--client", "claude-code")
    config_before = config_file().read_bytes()
    others = {k: files[k].read_bytes() for k in ("codex", "qwen-code")}
    with running_watcher(events):
        path = files["claude-code"]
        text = path.read_text().replace('"cleanupPeriodDays": 20', '"cleanupPeriodDays": 30')
        save_replace(path, text)
        assert events.wait_quiet()
    assert not events.of("adopted", "propagated", "reverted", "drift"), events.describe()
    assert path.read_text() == text and config_file().read_bytes() == config_before
    assert {k: files[k].read_bytes() for k in others} == others


def test_an_own_mode_written_into_kvswitch_toml_by_hand_is_carried_to_that_client(events: Events) -> None:
    files = _three()
    others = {k: files[k].read_bytes() for k in ("claude-code", "qwen-code")}
    with running_watcher(events):
        text = config_file().read_text()
        save_replace(config_file(), text.replace('kind = "codex"\n', 'kind = "codex"\nmode = "split"\n', 1))
        assert wait_until(lambda: _by_path()[files["codex"]].mode == "split"), events.describe()
        assert events.wait_quiet()
    assert {k: files[k].read_bytes() for k in others} == others
    assert config_data()["mode"] == "merged"
    assert all(c.in_sync for c in status().clients)


# -- a switch of one client racing a switch of every client -----------------------------------


@pytest.mark.slow
def test_a_switch_of_one_client_racing_a_switch_of_all_ends_consistent() -> None:
    """Parallel processes, some switching Claude Code alone, some every client: each ends in
    a whole outcome (the switch lock), every client is in sync with its target, and no client
    keeps an own mode equal to the config's."""
    files = _three()
    rng = random.Random(12)
    for _round in range(2):
        argvs = []
        for _ in range(4):
            mode = rng.choice(["merged", "split"])
            alone = rng.random() < 0.5
            argvs.append(["switch", mode, *(["--client", "claude-code"] if alone else [])])
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "kvswitch", *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for a in argvs
        ]
        for argv, p in zip(argvs, procs, strict=True):
            _out, err = p.communicate(timeout=120)
            assert p.returncode == 0 or (p.returncode == 1 and "another kvswitch is switching" in err), (argv, err)
            assert "Traceback" not in err
        data = config_data()
        st = status()
        assert all(c.in_sync and c.problem is None for c in st.clients), st.clients
        for entry in data["clients"]:
            assert entry.get("mode") in (None, "split" if data["mode"] == "merged" else "merged"), data
        assert _by_path()[files["codex"]].mode == data["mode"]
