"""Telling a file's kind from its path and content together (kvswitch.kinds.detect_kind):
every real client's default path and realistic file, project files, the clients' own
variables (CODEX_HOME, CLAUDE_CONFIG_DIR), files copied where the path says nothing, and the
trap the issue names: Claude Code's settings.json holding cline.* keys is still Claude Code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvswitch.errors import UnknownKindError
from kvswitch.kinds import detect_kind, get_kind
from tests.clientenv import cli, config_data, init
from tests.kinds.kindenv import CLIENTS, clients_fixture, default_path, place, setup

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VSCODE_PLAIN = FIXTURES / "cline" / "plain-vscode.json"
VSCODE_CLINE = FIXTURES / "cline" / "vscode-user.json"
CCSWITCH = FIXTURES / "ccswitch" / "article.toml"
KVSWITCH = FIXTURES / "kvswitch" / "kvswitch.toml"


def _text(kind_id: str) -> str:
    return clients_fixture(CLIENTS[kind_id]).read_text(encoding="utf-8")


@pytest.mark.parametrize("kind_id", sorted(CLIENTS))
def test_default_path_and_realistic_file(kind_id: str) -> None:
    """Each real client's usual file, as the client's own defaults and docs show it."""
    path = default_path(kind_id)
    assert detect_kind(path, _text(kind_id)) == kind_id


@pytest.mark.parametrize("kind_id", sorted(CLIENTS))
def test_default_path_of_a_file_not_there_yet(kind_id: str) -> None:
    """client add of a real client's file that does not exist yet: the path alone tells."""
    assert detect_kind(default_path(kind_id), None) == kind_id


@pytest.mark.parametrize("kind_id", sorted(CLIENTS))
@pytest.mark.parametrize("where", ["/tmp/x", None])
def test_content_alone(kind_id: str, where: str | None) -> None:
    """A client's file copied where the path says nothing is told by its content."""
    suffix = ".toml" if get_kind(kind_id).format == "toml" else ".json"
    path = Path(where + suffix) if where else None
    assert detect_kind(path, _text(kind_id)) == kind_id


@pytest.mark.parametrize(
    ("rel", "fixture", "kind_id"),
    [
        (".claude/settings.json", "claude-project.json", "claude-code"),
        (".claude/settings.local.json", "claude-project.json", "claude-code"),
        (".qwen/settings.json", "qwen.json", "qwen-code"),
        ("opencode.json", "opencode.json", "opencode"),
    ],
)
def test_project_files(tmp_path: Path, rel: str, fixture: str, kind_id: str) -> None:
    root = tmp_path / "project"
    text = clients_fixture(fixture).read_text(encoding="utf-8")
    assert detect_kind(root / rel, text) == kind_id
    assert root / rel in get_kind(kind_id).project_paths(root) or rel.endswith("local.json")


def test_claude_project_file_by_content(tmp_path: Path) -> None:
    """A project's .claude/settings.json (permissions and hooks, no env block) copied away."""
    text = clients_fixture("claude-project.json").read_text(encoding="utf-8")
    assert detect_kind(tmp_path / "x.json", text) == "claude-code"


def test_claude_settings_with_cline_keys_is_claude_code() -> None:
    """The trap: ~/.claude/settings.json holding cline.* keys is Claude Code's file."""
    text = clients_fixture("claude-with-cline-keys.json").read_text(encoding="utf-8")
    assert detect_kind(default_path("claude-code"), text) == "claude-code"
    assert detect_kind(Path("app", ".claude", "settings.json"), text) == "claude-code"


def test_claude_and_cline_content_without_a_path_is_refused_not_guessed() -> None:
    """Claude Code's keys and cline.* keys in a file whose path says nothing: kvswitch asks
    which it is rather than guess (a guess of the article's shape would pollute the file)."""
    text = clients_fixture("claude-with-cline-keys.json").read_text(encoding="utf-8")
    with pytest.raises(UnknownKindError) as caught:
        detect_kind(Path("/tmp/x.json"), text)
    assert "article-cline, claude-code" in str(caught.value)
    assert "--kind" in str(caught.value)


def test_client_add_of_claude_settings_with_cline_keys_never_writes_cline_keys() -> None:
    """End to end: client add detects Claude Code, and switch writes the URL and the header
    into its env block, never cline.cacheStrategy."""
    setup()
    path = place("claude-code", "claude-with-cline-keys.json")
    result = cli("client", "add", str(path))
    assert result.rc == 0, result
    assert "Claude Code" in result.out
    assert [c["kind"] for c in config_data()["clients"]] == ["claude-code"]
    assert cli("profile", "use", "A").rc == 0
    assert cli("switch", "split").rc == 0
    text = path.read_text(encoding="utf-8")
    assert "cline.cacheStrategy" not in text
    assert "X-Cache-Mode: split" in text


@pytest.mark.parametrize("fixture", [VSCODE_PLAIN, VSCODE_CLINE])
@pytest.mark.parametrize("app", ["Code", "Code - Insiders", "VSCodium"])
def test_vscode_user_settings(fixture: Path, app: str) -> None:
    """VS Code's user settings.json, with and without cline.* keys: the article's shape."""
    path = Path.home() / ".config" / app / "User" / "settings.json"
    assert detect_kind(path, fixture.read_text(encoding="utf-8")) == "article-cline"


def test_vscode_settings_without_cline_keys_elsewhere_is_not_guessed() -> None:
    with pytest.raises(UnknownKindError):
        detect_kind(Path("/tmp/x.json"), VSCODE_PLAIN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", [None, "/tmp/x.toml", "~/.codex/config.toml"])
def test_codex_profiles_tables_are_not_kvswitch_profiles(path: str | None) -> None:
    """Codex's config.toml may hold [profiles.NAME] tables; that does not make it kvswitch's."""
    text = clients_fixture("codex.toml").read_text(encoding="utf-8")
    assert "[profiles.deep]" in text
    assert detect_kind(Path(path).expanduser() if path else None, text) == "codex"


def test_codex_profiles_only() -> None:
    """A Codex file with only a [profiles.NAME] table of Codex settings is still Codex's."""
    text = '[profiles.fast]\nmodel = "gpt-5-mini"\napproval_policy = "never"\n'
    assert detect_kind(Path("/tmp/x.toml"), text) == "codex"


def test_codex_home_and_claude_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clients' own variables move their files; detection follows them."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-work"))
    codex, claude = default_path("codex"), default_path("claude-code")
    assert codex == tmp_path / "codex-home" / "config.toml"
    assert claude == tmp_path / "claude-work" / "settings.json"
    assert detect_kind(codex, None) == "codex"
    assert detect_kind(claude, None) == "claude-code"
    assert detect_kind(codex, "") == "codex"  # an empty file, there


@pytest.mark.parametrize("where", ["~/.config/cc-switch/config.toml", "~/.cc-switch/config.toml", "/tmp/x.toml"])
def test_ccswitch_style_config(where: str) -> None:
    assert detect_kind(Path(where).expanduser(), CCSWITCH.read_text(encoding="utf-8")) == "article-ccswitch"


@pytest.mark.parametrize("where", ["~/.config/kvswitch/kvswitch.toml", "/tmp/x.toml", None])
def test_kvswitch_config(where: str | None) -> None:
    path = Path(where).expanduser() if where else None
    assert detect_kind(path, KVSWITCH.read_text(encoding="utf-8")) == "kvswitch"


def test_kvswitch_config_written_by_init() -> None:
    init("--no-cline", "--no-ccswitch")
    from tests.clientenv import config_file

    text = config_file().read_text(encoding="utf-8")
    assert detect_kind(config_file(), text) == "kvswitch"
    assert detect_kind(Path("/tmp/x.toml"), text) == "kvswitch"


def test_default_paths_follow_home_and_xdg() -> None:
    home, xdg = Path(os.environ["HOME"]), Path(os.environ["XDG_CONFIG_HOME"])
    assert default_path("claude-code") == home / ".claude" / "settings.json"
    assert default_path("codex") == home / ".codex" / "config.toml"
    assert default_path("cline-providers") == home / ".cline" / "data" / "settings" / "providers.json"
    assert default_path("opencode") == xdg / "opencode" / "opencode.json"
    assert default_path("qwen-code") == home / ".qwen" / "settings.json"
