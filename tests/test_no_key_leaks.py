"""The issue's "No key leaks" acceptance (D-7, D-12 Keys).

A whole story is run twice, in process (capsys, caplog) and as child processes: init with a
distinctive key, status, switch both ways, dry runs, profile show/use, a second profile whose
key comes from an environment variable, restore, lint (KVS212 included), key get. Then:
- no printed line and no log record holds a key (raw, JSON-escaped, or its middle part);
- kvswitch's config never holds one, nor anything under KVSWITCH_HOME except backups of client
  files that hold the key by design (outside git); nothing in state/, logs/, history/;
- a git-tracked client file registered without allow_key_in_repo, and its backups, never do;
- the only files anywhere that hold a key are the keyring store, those client files and
  their backups (0600), and the file the test itself planted for KVS212.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import json5
import pytest

from kvswitch.cli import main
from tests.conftest import FIXTURES

KEY = "sk-LEAKCHECK-0123456789abcdef"
KEY2 = "sk-LEAKENV-fedcba9876543210zz"
KEYS = (KEY, KEY2)
ENV2 = "KVS_LEAK_SECOND_KEY"


def forms(key: str) -> set[str]:
    """Every way a key could show up in text: raw, JSON-escaped, its unmasked middle, and
    every 8-character piece of it (the mask ``sk-…abcd`` shows 3 + 4, never 8 in a row)."""
    pieces = {key[i : i + 8] for i in range(len(key) - 7)}
    return {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1], key[3:-4], *pieces}


def leaks(text: str) -> list[str]:
    return sorted(f for key in KEYS for f in forms(key) if f in text)


def holds_key(path: Path) -> bool:
    data = path.read_bytes()
    return any(f.encode() in data for key in KEYS for f in forms(key))


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


Runner = Callable[..., int]
"""``run(*argv, stdin="") -> exit code``; every output is appended to ``outputs``."""


def in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, outputs: list[str]) -> Runner:
    def run(*args: str, stdin: str = "") -> int:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        got = capsys.readouterr()
        outputs.append(f"$ kvswitch {' '.join(args)} -> {code}\n{got.out}{got.err}")
        return code

    return run


def in_children(outputs: list[str]) -> Runner:
    def run(*args: str, stdin: str = "") -> int:
        done = subprocess.run(
            [sys.executable, "-m", "kvswitch", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=60,
            check=False,
        )
        outputs.append(f"$ kvswitch {' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}")
        return done.returncode

    return run


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def story(run: Runner, tmp_path: Path, outputs: list[str], *, full: bool = True) -> dict[str, Path]:
    """The story; ``full=False`` (child processes, ~0.3 s each) leaves out the steps marked
    ``extra`` that only repeat, in another form, what the others print."""
    home = Path(os.environ["HOME"])
    cline = home / ".cline" / "settings.json"
    ccswitch = Path(os.environ["XDG_CONFIG_HOME"]) / "cc-switch" / "config.toml"
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    tracked = repo / ".vscode" / "settings.json"
    tracked.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", tracked)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "project settings")

    def ok(*args: str, stdin: str = "", codes: tuple[int, ...] = (0,), extra: bool = False) -> None:
        if extra and not full:
            return
        code = run(*args, stdin=stdin)
        assert code in codes, outputs[-1]

    ok("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n")
    # registered without allow_key_in_repo (`--nudge command --command true` works around the
    # known `client add` dest clash, see tests/cli/test_profile_cli.py)
    ok("client", "add", str(tracked), "--nudge", "command", "--command", "true")
    ok("client", "list", extra=True)
    ok("status", codes=(0, 1))
    ok("status", "--format", "json", codes=(0, 1))
    ok("profile", "use", "taotoken", "--dry-run", extra=True)
    ok("profile", "use", "taotoken")
    ok("status", extra=True)
    ok("switch", "split")
    ok("switch", "merged")
    ok("switch", "split", "--dry-run")
    ok("switch", "split", "--dry-run", str(cline), str(ccswitch), str(tracked), extra=True)
    ok("profile", "list", extra=True)
    ok("profile", "show")
    ok("profile", "show", "--format", "json", extra=True)
    ok("profile", "add", "second", "--preset", "vllm", "--model", "q", "--key", f"env:{ENV2}")
    ok("profile", "show", "second", extra=True)
    ok("profile", "use", "second", "--dry-run")
    ok("profile", "use", "second")
    assert json5.loads(cline.read_text())["cline.openAiApiKey"] == KEY2
    ok("status", "--format", "json", extra=True)
    ok("key", "get", "second")
    ok("profile", "use", "taotoken", "--dry-run")
    ok("profile", "use", "taotoken")
    ok("switch", "split", extra=True)
    ok("status", extra=True)
    for path in (cline, ccswitch, tracked):
        ok("restore", str(path), "--list", extra=path is not cline)
    ok("restore", str(ccswitch), extra=True)  # the newest backup that differs: profile "second"
    ok("restore", str(ccswitch), extra=True)  # and back again
    ok("lint", str(cline), str(ccswitch), str(tracked), codes=(0, 1))
    ok("lint", "--format", "json", str(cline), str(ccswitch), str(tracked), codes=(0, 1), extra=True)
    ok("lint", str(Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"), extra=True)
    # a key the user committed by mistake: KVS212 names the file, never the key
    planted = repo / "leaked" / "settings.json"
    planted.parent.mkdir()
    planted.write_text(cline.read_text())
    git(repo, "add", "leaked/settings.json")
    ok("lint", str(planted), codes=(1,))
    assert "KVS212" in outputs[-1]
    ok("lint", "--format", "json", str(planted), codes=(1,), extra=True)
    assert not full or '"KVS212"' in outputs[-1]
    ok("lint", "--kind", "cline", "--format", "json", str(planted), codes=(1,), extra=True)
    # a key with a stray space, fixed by lint --fix (outside git): no echo of the key either
    pasted = tmp_path / "pasted" / "settings.json"
    pasted.parent.mkdir()
    pasted.write_text(cline.read_text().replace(f'"{KEY}"', f'" {KEY}\\n"'))
    ok("lint", str(pasted), codes=(1,), extra=True)
    assert not full or "KVS210" in outputs[-1]
    ok("lint", "--fix", str(pasted), codes=(1,), extra=True)
    assert not full or json5.loads(pasted.read_text())["cline.openAiApiKey"] == KEY
    ok("key", "get", "taotoken")
    assert outputs[-1].endswith("\nsk-…cdef\n")
    ok("status")
    assert "key sk-…cdef" in outputs[-1]
    return {"cline": cline, "ccswitch": ccswitch, "tracked": tracked, "planted": planted, "pasted": pasted}


def check_no_leaks(tmp_path: Path, outputs: list[str], files: dict[str, Path]) -> None:
    from kvswitch.backups import backup_dir, list_backups

    # 1. nothing printed holds a key
    for text in outputs:
        assert leaks(text) == [], text
    assert any("sk-…cdef" in t for t in outputs) and any("sk-…10zz" in t for t in outputs)

    # 2. the client files hold the key by design (outside git, 0600); the tracked one never
    for name in ("cline", "ccswitch"):
        assert KEY in files[name].read_text(), name
        assert files[name].stat().st_mode & 0o777 == 0o600, name
    tracked = files["tracked"]
    assert not holds_key(tracked)
    tracked_backups = list_backups(tracked)
    assert tracked_backups, "the tracked file was rendered and switched, so it has backups"
    assert not any(holds_key(b.path) for b in tracked_backups)

    # 3. under KVSWITCH_HOME only backups of key-holding files outside git may hold a key
    kvhome = Path(os.environ["KVSWITCH_HOME"])
    allowed_dirs = {backup_dir(files[n]) for n in ("cline", "ccswitch", "pasted")}
    seen_key2_backup = False
    for path in files_under(kvhome):
        rel = path.relative_to(kvhome)
        if rel.parts[0] in ("config", "state", "logs", "history"):
            assert not holds_key(path), rel
        if holds_key(path):
            assert path.parent in allowed_dirs, rel
            assert path.stat().st_mode & 0o777 == 0o600, rel
            source = Path((path.parent / "source").read_text().strip())
            assert source.is_relative_to(tmp_path / "repo") is False, rel
            seen_key2_backup |= KEY2 in path.read_text()
    assert seen_key2_backup, "profile 'second' was rendered and then replaced: a backup holds its key"
    config = kvhome / "config" / "kvswitch.toml"
    assert not holds_key(config)
    assert 'key = "keyring"' in config.read_text() and f'key = "env:{ENV2}"' in config.read_text()

    # 4. anywhere else: only the keyring store and the test's own planted file
    keyring_store = Path(os.environ["XDG_DATA_HOME"]) / "python_keyring"
    expected = {files["cline"], files["ccswitch"], files["planted"], files["pasted"]}
    for path in files_under(tmp_path):
        if not holds_key(path) or path in expected or path.is_relative_to(kvhome):
            continue
        assert path.is_relative_to(keyring_store), path


@pytest.fixture
def second_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV2, KEY2)


@pytest.mark.usefixtures("second_key")
def test_no_key_leaks_in_process(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    memory_keyring: dict[tuple[str, str], str],
) -> None:
    caplog.set_level(logging.DEBUG)
    outputs: list[str] = []
    files = story(in_process(capsys, monkeypatch, outputs), tmp_path, outputs)
    check_no_leaks(tmp_path, outputs, files)
    assert leaks(caplog.text) == []
    assert list(memory_keyring.values()) == [KEY]


@pytest.mark.usefixtures("second_key")
def test_no_key_leaks_in_child_processes(tmp_path: Path) -> None:
    outputs: list[str] = []
    files = story(in_children(outputs), tmp_path, outputs, full=False)
    check_no_leaks(tmp_path, outputs, files)


# --- D-7 through symlinks: a dotfiles repository --------------------------------------------

# kvswitch.clients.in_git_work_tree() used to ask git in the link's directory only, while
# atomic_write resolves the link and writes its target: a key went into a tracked dotfile.


def _dotfiles(tmp_path: Path) -> Path:
    repo = tmp_path / "dotfiles"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def test_init_never_writes_the_key_through_a_symlink_into_a_git_work_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs: list[str] = []
    run = in_process(capsys, monkeypatch, outputs)
    target = _dotfiles(tmp_path) / "cline" / "settings.json"
    target.parent.mkdir()
    link = Path(os.environ["HOME"]) / ".cline" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)  # dangling until init creates the file
    assert run("init", "--preset", "taotoken", "--model", "m", "--key-stdin", "--no-ccswitch", stdin=KEY + "\n") == 0, (
        outputs[-1]
    )
    assert link.is_symlink() and target.exists()
    assert leaks(outputs[-1]) == []
    assert KEY not in target.read_text()


def test_profile_use_never_writes_the_key_through_a_symlink_into_a_git_work_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs: list[str] = []
    run = in_process(capsys, monkeypatch, outputs)
    repo = _dotfiles(tmp_path)
    target = repo / "cc-switch" / "config.toml"
    target.parent.mkdir()
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", target)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "dotfiles")
    link = Path(os.environ["XDG_CONFIG_HOME"]) / "cc-switch" / "config.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert run("init", "--preset", "taotoken", "--model", "m", "--key-stdin", "--no-cline", stdin=KEY + "\n") == 0, (
        outputs[-1]
    )
    assert run("profile", "use", "taotoken") == 0, outputs[-1]
    assert link.is_symlink()
    assert leaks("".join(outputs)) == []
    assert KEY not in target.read_text()


def test_a_key_pasted_without_quotes_is_not_echoed_by_the_parse_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs: list[str] = []
    run = in_process(capsys, monkeypatch, outputs)
    settings = tmp_path / "settings.json"
    settings.write_text(
        f'{{\n    "cline.openAiBaseUrl": "https://taotoken.net/api",\n    "cline.openAiApiKey": {KEY}\n}}\n'
    )
    assert run("lint", str(settings)) == 1
    assert "KVS001" in outputs[-1]
    assert run("lint", "--format", "json", str(settings)) == 1
    assert run("switch", "split", str(settings)) == 1
    for text in outputs:
        assert leaks(text) == [], text
