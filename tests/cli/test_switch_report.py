"""What ``kvswitch switch`` and ``kvswitch profile use`` tell the user (issue 11, point 5):
one line per file and, under each changed client, when the change takes effect (Claude Code
now, Cline the next session, Codex, OpenCode and Qwen Code the next start) with what to do,
or what its nudge did, once; a warning while Cline runs (it may write its old settings back);
and a real client's file switched by path takes the active profile's URL for the mode."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.kinds import get_kind
from tests.clientenv import KEY_A, cli, config_file, init

SPLIT_URL = "http://127.0.0.1:9300"  # the taotoken preset: clients append /v1
MERGED_URL = "http://127.0.0.1:9200"
REAL = {  # kind id → its default file under the test's HOME / XDG_CONFIG_HOME
    "claude-code": (".claude", "settings.json"),
    "codex": (".codex", "config.toml"),
    "cline-providers": (".cline", "data", "settings", "providers.json"),
    "opencode": (".config", "opencode", "opencode.json"),
    "qwen-code": (".qwen", "settings.json"),
}
WHEN = {
    "claude-code": "Claude Code: takes effect now (its next request)",
    "codex": "Codex: takes effect next start: restart Codex to apply",
    "cline-providers": "Cline: takes effect next session: start a new Cline session to apply",
    "opencode": "OpenCode: takes effect next start: restart OpenCode to apply",
    "qwen-code": "Qwen Code: takes effect next start: restart Qwen Code to apply",
}


def home() -> Path:
    return Path(os.environ["HOME"])


def real_file(kind: str) -> Path:
    return home().joinpath(*REAL[kind])


def setup_real(*kinds: str, key: str | None = None, nudge: tuple[str, ...] = ()) -> None:
    """init, the profile given both mode URLs, the real clients registered and rendered."""
    init(key=key)
    assert cli("profile", "edit", "A", "--merged-url", MERGED_URL, "--split-url", SPLIT_URL).rc == 0
    for kind in kinds:
        added = cli("client", "add", str(real_file(kind)), "--kind", kind, *nudge)
        assert added.rc == 0, added
    used = cli("profile", "use", "A")
    assert used.rc == 0, used


def block(out: str, path: Path) -> list[str]:
    """The line about ``path`` and the indented lines under it."""
    lines = out.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(f"{path}: "))
    j = i + 1
    while j < len(lines) and lines[j].startswith("  "):
        j += 1
    return lines[i:j]


def test_each_changed_client_says_once_when_the_switch_takes_effect() -> None:
    setup_real(*REAL)
    result = cli("switch", "split")
    assert result.rc == 0, result
    for kind, when in WHEN.items():
        lines = block(result.out, real_file(kind))
        assert lines[0].startswith(f"{real_file(kind)}: merged → split (backup "), lines
        assert len(lines) == 2 and lines[1].startswith(f"  {when}"), lines
    assert result.out.count("to apply") == 6  # the four real clients that need it and the article's two
    assert "picks the change up" not in result.out  # Claude Code's line says it once
    assert "S-35" not in result.out and "S-" not in result.err
    assert result.out.rstrip().endswith("switched 7 files to split")
    again = cli("switch", "split")
    assert "takes effect" not in again.out  # nothing changed, nothing to apply


def test_a_nudged_client_says_what_its_nudge_did_instead() -> None:
    setup_real("codex", nudge=("--nudge", "touch"))
    result = cli("switch", "split")
    assert result.rc == 0, result
    assert block(result.out, real_file("codex"))[1:] == [f"  Codex: touched {real_file('codex')}"]


def test_profile_use_says_it_too() -> None:
    init()
    assert cli("client", "add", str(real_file("claude-code"))).rc == 0
    result = cli("profile", "use", "A")
    assert result.rc == 0, result
    assert block(result.out, real_file("claude-code"))[1:] == [f"  {WHEN['claude-code']}"]


# -- explicit paths ---------------------------------------------------------------------------


def codex_file(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('# mine\nmodel = "gpt-5"\n', encoding="utf-8")
    return path


def test_a_real_clients_file_switched_by_path_takes_the_active_profiles_url(tmp_path: Path) -> None:
    init()
    assert cli("profile", "edit", "A", "--split-url", SPLIT_URL).rc == 0
    path = codex_file(tmp_path)
    result = cli("switch", "split", str(path))
    assert result.rc == 0, result
    text = path.read_text(encoding="utf-8")
    assert f'base_url = "{SPLIT_URL}/v1"' in text and text.startswith('# mine\nmodel = "gpt-5"\n')
    assert block(result.out, path)[1:] == [f"  {WHEN['codex']} (it reads its config at start-up)"]
    assert "S-35" not in result.out and "most read them" not in result.out


def test_without_a_config_a_real_clients_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = codex_file(tmp_path)
    before = path.read_bytes()
    result = cli("switch", "split", str(path))
    assert result.rc != 0 and result.rc != 3, result
    assert "needs the profile's URL for split mode" in result.err
    assert "there is no kvswitch config yet (kvswitch init sets one up)" in result.err
    assert path.read_bytes() == before
    assert not config_file().exists()


# -- Cline running ----------------------------------------------------------------------------


@pytest.fixture
def fake_cline(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose argv[0] is named ``cline`` (a copy of sleep)."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    exe = tmp_path / "bin" / "cline"
    exe.parent.mkdir()
    shutil.copy(sleep, exe)
    proc = subprocess.Popen([str(exe), "60"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


WARNING = (
    "kvswitch: warning: Cline is running: it may write its old settings back; start a new Cline "
    "session (or quit Cline) to use {mode}"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Cline.running() reads /proc")
def test_switch_warns_while_cline_runs(fake_cline: subprocess.Popen[bytes]) -> None:
    setup_real("cline-providers", "codex")
    result = cli("switch", "split")
    assert result.rc == 0, result
    assert WARNING.format(mode="split") in result.err
    assert result.err.count("Cline is running") == 1
    used = cli("profile", "use", "A")  # nothing changed: nothing Cline could undo
    assert "Cline is running" not in used.err
    assert cli("switch", "merged").rc == 0
    assert cli("profile", "edit", "A", "--merged-url", "http://127.0.0.1:9201").rc == 0
    used = cli("profile", "use", "A")
    assert WARNING.format(mode="merged") in used.err
    fake_cline.kill()
    fake_cline.wait()
    if not get_kind("cline-providers").running():  # (no other cline of this user meanwhile)
        assert "Cline is running" not in cli("switch", "split").err


def test_no_warning_when_cline_is_not_among_the_changed_clients(
    fake_cline: subprocess.Popen[bytes],
) -> None:
    setup_real("codex")
    result = cli("switch", "split")
    assert result.rc == 0 and "Cline is running" not in result.err, result


def test_the_key_never_shows_in_the_report() -> None:
    setup_real(*REAL, key=KEY_A)
    result = cli("switch", "split")
    assert result.rc == 0 and KEY_A not in result.out + result.err
