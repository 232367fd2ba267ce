"""Pinning clients to the gateway (issue 13, point 3): a pinned file holds the gateway's root
URL, no X-Cache-Mode and the local token (or the variable's name), written through its kind,
backed up, all or nothing with kvswitch.toml; a switch never writes it again; unpin gives it
back the direct form ``profile use`` writes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kvswitch.clients import status
from kvswitch.config import edit_config, read_config
from kvswitch.document import parse_config
from kvswitch.edits import Set
from kvswitch.errors import KvswitchError
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.pinning import gateway_url, pin, unpin
from kvswitch.gateway.token import TOKEN_ACCOUNT, TOKEN_VARIABLE, ensure_token
from kvswitch.key_variables import key_variables
from kvswitch.keys import service_name
from kvswitch.kinds import get_kind, get_path
from kvswitch.kinds.real import RealKind
from tests.clientenv import cli, config_data
from tests.kinds.kindenv import CLIENTS, MERGED_URL, SPLIT_URL, add, mask_updated_at, place, setup

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "gateway"
REGEN = os.environ.get("KVSWITCH_REGEN_GOLDEN") == "1"
REAL = sorted(CLIENTS)
GATEWAY = "http://127.0.0.1:18090"
IN_FILE = {"claude-code", "cline-providers", "qwen-code"}  # keep the key in their file
TOKEN_SHAPE = re.compile(r"kvsgw-[A-Za-z0-9_-]{20,}")


def _ok(*argv: str) -> str:
    result = cli(*argv)
    assert result.rc == 0, result
    return result.out


def _kind(kind_id: str) -> RealKind:
    kind = get_kind(kind_id)
    assert isinstance(kind, RealKind)
    return kind


def _data(kind_id: str, path: Path) -> Any:
    return parse_config(path.read_bytes(), kind_id, path).data


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _comparable(kind_id: str, text: str) -> str:
    return mask_updated_at(text) if kind_id == "cline-providers" else text


def _all_real() -> dict[str, Path]:
    """Profile A (one URL per mode), the five real clients at their usual files, rendered."""
    setup()
    paths = {k: place(k) for k in REAL}
    for path in paths.values():
        add(path)
    _ok("profile", "use", "A")
    return paths


def _routes() -> dict[str, str]:
    return {c["path"]: c.get("route", "direct") for c in config_data()["clients"]}


# -- what a pinned file holds -------------------------------------------------------------


@pytest.mark.parametrize("kind_id", REAL)
def test_pin_writes_the_gateway_form(kind_id: str) -> None:
    """Golden file per kind (token and Cline's updatedAt masked), checked by hand: the
    gateway's root URL (/v1 for all but Claude Code), no X-Cache-Mode, the token in the file
    for Claude Code, Cline and Qwen Code, the variable's name for Codex and OpenCode, and the
    user's comments, other providers and other headers as they were."""
    setup()
    path = place(kind_id)
    add(path)
    _ok("profile", "use", "A")
    before = path.read_text(encoding="utf-8")
    changes = pin([kind_id])
    token = ensure_token(read_config())
    text = path.read_text(encoding="utf-8")
    (change,) = changes
    assert change.changed and change.backup is not None and change.backup.read_bytes() == before.encode()
    kind, data = _kind(kind_id), _data(kind_id, path)
    want = GATEWAY if kind_id == "claude-code" else f"{GATEWAY}/v1"
    assert get_path(data, kind.url_path(data)) == want
    assert kind.header(data) is None and "X-Cache-Mode" not in text
    assert MERGED_URL not in text and SPLIT_URL not in text
    if kind_id in IN_FILE:
        key_path = kind.key_write_path(data)
        assert key_path is not None and get_path(data, key_path) == token
        assert change.key_written and path.stat().st_mode & 0o077 == 0  # a file with a key: 0600
    else:
        assert token not in text and TOKEN_VARIABLE in text
    golden = GOLDEN / f"{kind_id}.pinned"
    shown = _comparable(kind_id, text.replace(token, "<token>"))
    if REGEN:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(shown, encoding="utf-8", newline="")
    assert shown == golden.read_text(encoding="utf-8"), f"differs from {golden.name}"
    assert _routes()[str(path)] == "gateway"


def test_pin_every_real_client_and_the_article_shapes_are_refused() -> None:
    """No names: every real client is pinned, the article's shapes (registered too) are left
    alone; naming one of those is refused with the reason, and nothing is written."""
    paths = _all_real()
    article = Path(os.environ["HOME"]) / "article" / "settings.json"
    article.parent.mkdir()
    article.write_text("{}\n")
    _ok("client", "add", str(article), "--kind", "article-cline", "--name", "vscode")
    _ok("profile", "use", "A")
    article_bytes = article.read_bytes()
    config_before = read_config().file.raw
    with pytest.raises(GatewayError, match=r"both modes' endpoints.*nothing to pin"):
        pin(["claude-code", "vscode"])
    assert read_config().file.raw == config_before
    assert all("18090" not in p.read_text() for p in paths.values())
    changed = pin()
    assert sorted(c.kind for c in changed) == REAL and all(c.changed for c in changed)
    assert article.read_bytes() == article_bytes
    routes = _routes()
    assert all(routes[str(p)] == "gateway" for p in paths.values())
    assert routes[str(article)] == "direct"


def test_pin_with_no_client_registered_is_refused() -> None:
    setup()
    with pytest.raises(GatewayError, match="no registered client to pin"):
        pin()


# -- a switch never writes a pinned file --------------------------------------------------


def test_ten_switches_leave_every_pinned_file_byte_for_byte() -> None:
    """Five pinned clients and one direct twin: ten rounds of switch split / switch merged
    leave each pinned file's sha256 as it was, while the direct one flips every time."""
    paths = _all_real()
    direct = Path(os.environ["HOME"]) / "direct" / ".codex" / "config.toml"
    place("codex", path=direct)
    _ok("client", "add", str(direct), "--kind", "codex", "--name", "codex-direct")
    _ok("profile", "use", "A")
    pin([str(p) for p in paths.values()])
    pinned = {k: _sha(p) for k, p in paths.items()}
    seen = set()
    for _ in range(10):
        for mode, url in (("split", SPLIT_URL), ("merged", MERGED_URL)):
            said = _ok("switch", mode)
            assert {k: _sha(p) for k, p in paths.items()} == pinned, mode
            assert all(f"{p}: pinned to the gateway, unchanged" in said for p in paths.values()), said
            assert f"{direct}: " in said and "already" not in said
            assert f'base_url = "{url}/v1"' in direct.read_text()
            seen.add(_sha(direct))
            assert config_data()["mode"] == mode
    assert len(seen) == 2  # the direct twin really flipped, back and forth


def test_profile_use_keeps_pinned_clients_pinned() -> None:
    paths = _all_real()
    pin(REAL)
    before = {k: _sha(p) for k, p in paths.items()}
    _ok("switch", "split")
    _ok("profile", "use", "A")
    assert {k: _sha(p) for k, p in paths.items()} == before
    # another model: the pinned files take it, still through the gateway
    edit_config([Set(("profiles", "A", "model"), "coder-14b")], read_config())
    _ok("profile", "use", "A")
    for kind_id, path in paths.items():
        data = _data(kind_id, path)
        kind = _kind(kind_id)
        assert str(get_path(data, kind.model_path(data) or ())).endswith("coder-14b"), kind_id
        assert get_path(data, kind.url_path(data)).startswith(GATEWAY), kind_id
        assert kind.header(data) is None


def test_switch_of_a_pinned_client_alone_is_refused() -> None:
    paths = _all_real()
    pin(["codex"])
    before = {k: p.read_bytes() for k, p in paths.items()}
    config_before = read_config().file.raw
    result = cli("switch", "split", "--client", "codex")
    assert result.rc == 1, result
    assert "pinned to the gateway, which chooses the mode per request" in result.err
    assert "kvswitch gateway unpin" in result.err and "X-Cache-Mode" in result.err
    assert {k: p.read_bytes() for k, p in paths.items()} == before
    assert read_config().file.raw == config_before
    _ok("switch", "split", "--client", "qwen-code")  # a direct client alone still switches


# -- unpin --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind_id", REAL)
def test_unpin_gives_the_bytes_profile_use_writes(kind_id: str) -> None:
    """A twin of the same file, never pinned, after profile use; the pinned one after unpin
    holds the same bytes (Cline: updatedAt masked), in the config's mode: the token is gone."""
    setup()
    path = place(kind_id)
    add(path)
    twin = Path(os.environ["HOME"]) / "twin" / path.name
    place(kind_id, path=twin)
    _ok("client", "add", str(twin), "--kind", kind_id, "--name", "twin")
    _ok("profile", "use", "A")
    pin([str(path)])
    pin([str(path)])  # again: unpin still starts from the file before the first pin
    token = ensure_token(read_config())
    _ok("switch", "split")  # the twin follows; the pinned one is not written
    assert token in path.read_text() or kind_id not in IN_FILE
    (change,) = unpin([str(path)])
    assert change.changed and change.new_mode == "split"
    assert token not in change.diff
    text = path.read_text(encoding="utf-8")
    assert token not in text and TOKEN_VARIABLE not in text
    assert _comparable(kind_id, text) == _comparable(kind_id, twin.read_text(encoding="utf-8"))
    assert _routes()[str(path)] == "direct"
    _ok("switch", "merged")  # unpinned: switches write it again
    assert _comparable(kind_id, path.read_text()) == _comparable(kind_id, twin.read_text())


def test_unpin_keeps_a_written_profile_key_in_place_of_the_token() -> None:
    """A client whose entry writes the profile's key gets that key back, not the token."""
    from tests.clientenv import KEY_A

    setup()
    path = place("qwen-code")
    add(path, "--write-key")
    _ok("profile", "use", "A")
    assert get_path(_data("qwen-code", path), ("security", "auth", "apiKey")) == KEY_A
    pin()
    token = ensure_token(read_config())
    assert get_path(_data("qwen-code", path), ("security", "auth", "apiKey")) == token
    unpin()
    assert get_path(_data("qwen-code", path), ("security", "auth", "apiKey")) == KEY_A


def test_unpin_puts_back_the_key_the_pin_replaced() -> None:
    """A Claude Code file that keeps its own key in ANTHROPIC_API_KEY: the pin writes the
    token there (a key written beside it would be sent twice); unpin puts the user's key back."""
    setup()
    path = place("claude-code")
    data = json.loads(path.read_text())
    data["env"]["ANTHROPIC_API_KEY"] = "sk-ant-own-0123456789abcdef"
    path.write_text(json.dumps(data, indent=2) + "\n")
    add(path)
    _ok("profile", "use", "A")
    pin()
    token = ensure_token(read_config())
    env = json.loads(path.read_text())["env"]
    assert env["ANTHROPIC_API_KEY"] == token and "ANTHROPIC_AUTH_TOKEN" not in env
    (change,) = unpin()
    assert "sk-ant-own-0123456789abcdef" not in change.diff and token not in change.diff
    env = json.loads(path.read_text())["env"]
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-own-0123456789abcdef"
    assert env["ANTHROPIC_BASE_URL"] == MERGED_URL


def test_unpin_of_a_file_edited_while_pinned_keeps_the_edit() -> None:
    """Edited by hand while pinned: unpin renders over the file as it is (the edit stays),
    and the token still leaves."""
    setup()
    path = place("qwen-code")
    add(path)
    _ok("profile", "use", "A")
    pin()
    token = ensure_token(read_config())
    path.write_text(path.read_text().replace('"vimMode": false', '"vimMode": true'))
    unpin()
    text = path.read_text()
    assert '"vimMode": true' in text and token not in text
    data = _data("qwen-code", path)
    assert data["security"]["auth"]["baseUrl"] == f"{MERGED_URL}/v1" and "apiKey" not in data["security"]["auth"]


# -- dry run ------------------------------------------------------------------------------


def test_dry_run_writes_nothing_and_never_shows_the_token(memory_keyring: dict[tuple[str, str], str]) -> None:
    paths = _all_real()
    before = {k: p.read_bytes() for k, p in paths.items()}
    config_before = read_config().file.raw
    changes = pin(dry_run=True)  # no token yet: one is made for the diff, stored nowhere
    assert all(c.changed and c.diff and c.backup is None for c in changes)
    assert (service_name(), TOKEN_ACCOUNT) not in memory_keyring
    assert not any(TOKEN_SHAPE.search(c.diff) for c in changes)
    token = ensure_token(read_config())
    changes = pin(dry_run=True)
    diffs = "".join(c.diff for c in changes)
    assert token not in diffs and "ANTHROPIC_AUTH_TOKEN" in diffs and "18090" in diffs
    result = cli("gateway", "pin", "--dry-run")  # the command prints the same diffs
    assert result.rc == 0, result
    assert token not in result.out + result.err and "18090" in result.out
    assert {k: p.read_bytes() for k, p in paths.items()} == before
    assert read_config().file.raw == config_before
    pin()
    changes = unpin(dry_run=True)
    assert changes and token not in "".join(c.diff for c in changes)
    assert all(_routes()[str(p)] == "gateway" for p in paths.values())


# -- the git rule and the env: token ------------------------------------------------------


def test_a_file_in_a_git_work_tree_gets_no_token_unless_allowed() -> None:
    setup()
    repo = Path(os.environ["HOME"]) / "project"
    (repo / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    inside = place("claude-code", "claude-project.json", repo / ".claude" / "settings.json")
    _ok("client", "add", str(inside), "--name", "project")
    pin(["project"])
    token = ensure_token(read_config())
    env = json.loads(inside.read_text())["env"]
    assert env["ANTHROPIC_BASE_URL"] == GATEWAY and token not in inside.read_text()
    edit_config([Set(("clients", 0, "allow_key_in_repo"), True)], read_config())
    pin(["project"])
    assert json.loads(inside.read_text())["env"]["ANTHROPIC_AUTH_TOKEN"] == token


def test_an_env_token_names_its_variable_and_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _all_real()
    edit_config([Set(("gateway", "token"), "env:TEAM_GW"), Set(("gateway", "port"), 18123)], read_config())
    monkeypatch.delenv("TEAM_GW", raising=False)
    before = {k: p.read_bytes() for k, p in paths.items()}
    with pytest.raises(GatewayError, match=r"\$TEAM_GW is not set"):
        pin()
    assert {k: p.read_bytes() for k, p in paths.items()} == before
    monkeypatch.setenv("TEAM_GW", "gw-token-0123456789abcdef")
    pin()
    codex = tomllib.loads(paths["codex"].read_text())
    assert codex["model_providers"]["kvswitch"]["env_key"] == "TEAM_GW"
    assert codex["model_providers"]["kvswitch"]["base_url"] == "http://127.0.0.1:18123/v1"
    assert json.loads(paths["claude-code"].read_text())["env"]["ANTHROPIC_AUTH_TOKEN"] == "gw-token-0123456789abcdef"
    assert gateway_url(read_config()) == "http://127.0.0.1:18123"


# -- status and the token variable --------------------------------------------------------


def test_status_of_pinned_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _all_real()
    pin(["claude-code", "codex"])
    _ok("switch", "split")
    by_path = {c.path: c for c in status().clients}
    for kind_id in ("claude-code", "codex"):
        c = by_path[paths[kind_id]]
        assert c.route == "gateway" and c.in_sync and c.drift == [] and c.problem is None, c
        assert c.mode is None and c.gateway_running is False  # no gateway answers here
    direct = by_path[paths["qwen-code"]]
    assert direct.route == "direct" and direct.mode == "split" and direct.in_sync
    assert direct.gateway_running is None
    # a pinned file put back to a direct URL by hand is out of sync
    text = paths["claude-code"].read_text().replace(GATEWAY, SPLIT_URL)
    paths["claude-code"].write_text(text)
    c = next(c for c in status().clients if c.path == paths["claude-code"])
    assert not c.in_sync and "provider.base_url" in c.drift


def test_key_variables_name_the_token_variable_for_pinned_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _all_real()
    pin(["codex", "opencode"])
    token = ensure_token(read_config())
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    found = {v.name: v for v in key_variables(read_config())}
    assert set(found) == {TOKEN_VARIABLE}  # no direct client reads KVSWITCH_KEY_A now
    v = found[TOKEN_VARIABLE]
    assert v.token and v.state == "unset" and v.clients == ("Codex", "OpenCode")
    assert v.export is not None and v.export.startswith(f"export {TOKEN_VARIABLE}=")
    assert token not in json.dumps(v.as_dict()) and token not in " ".join(v.describe())
    monkeypatch.setenv(TOKEN_VARIABLE, token)
    assert {v.name: v.state for v in key_variables(read_config())} == {TOKEN_VARIABLE: "ok"}
    monkeypatch.setenv(TOKEN_VARIABLE, "something-else-0123456789")
    assert {v.name: v.state for v in key_variables(read_config())} == {TOKEN_VARIABLE: "differs"}
    unpin(["codex"])
    names = {v.name for v in key_variables(read_config())}
    assert names == {TOKEN_VARIABLE, "KVSWITCH_KEY_A"}
    out = _ok("status")
    assert token not in out and f"export {TOKEN_VARIABLE}=" in out
    assert paths["codex"].exists()


# -- the watcher ----------------------------------------------------------------------------


def test_the_watcher_keeps_pinned_clients_in_the_gateway_form(sb: Any, events: Any) -> None:
    """A mode change in kvswitch.toml reaches the article's shapes, not the pinned file; a
    pinned file edited by hand to a mode's own URL and header is reported, never adopted as
    a mode (the config keeps its mode) and never rewritten."""
    from tests.helpers.watching import running_watcher, save_replace, wait_until

    merged, split = "http://127.0.0.1:18001/api", "http://127.0.0.1:18002/api"
    edit_config(
        [Set(("profiles", "taotoken", "merged", "url"), merged), Set(("profiles", "taotoken", "split", "url"), split)],
        read_config(),
    )
    claude = sb.home / ".claude" / "settings.json"
    _ok("client", "add", str(claude))
    _ok("profile", "use", "taotoken")
    pin(["claude-code"])
    pinned_bytes = claude.read_bytes()
    with running_watcher(events):
        edit_config([Set(("mode",), "split")], read_config())
        assert wait_until(lambda: events.of("propagated")), events.describe()
        assert events.wait_quiet()
        assert claude.read_bytes() == pinned_bytes
        mark = len(events)
        text = (
            claude.read_text()
            .replace(GATEWAY, merged)
            .replace('"ANTHROPIC_MODEL"', '"ANTHROPIC_CUSTOM_HEADERS": "X-Cache-Mode: merged",\n    "ANTHROPIC_MODEL"')
        )
        save_replace(claude, text)
        assert wait_until(lambda: events.of("drift", since=mark)), events.describe()
        assert events.wait_quiet()
    assert not events.of("adopted", "reverted", since=mark), events.describe()
    assert config_data()["mode"] == "split"
    assert claude.read_text() == text


def test_a_client_file_turned_into_a_fifo_fails_the_pin_whole_naming_it() -> None:
    """A special file where a client's settings were: pin neither blocks on it nor writes any
    other client or kvswitch.toml (all or nothing); the error names the path."""
    paths = _all_real()
    victim = paths["codex"]
    victim.unlink()
    os.mkfifo(victim)
    before = {k: _sha(p) for k, p in paths.items() if p != victim}
    config_before = config_data()
    with pytest.raises(KvswitchError, match=re.escape(str(victim))) as caught:
        pin()
    assert "FIFO" in str(caught.value) or "named pipe" in str(caught.value)
    assert {k: _sha(p) for k, p in paths.items() if p != victim} == before
    assert config_data() == config_before and set(_routes().values()) == {"direct"}
