"""``kvswitch client detect``: the clients' files at their usual places, their programs on
PATH and the programs' versions, read from their npm package (never by running them when a
package says it), and registration of what was found.

The end-to-end test with the real npm-installed clients is in tests/realclients/."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from kvswitch.installed import detect_clients, program_version, register_found
from tests.clientenv import cli, config_data, config_file

FIXTURES = Path(__file__).parent / "fixtures" / "import"


def npm_program(root: Path, package: str, version: str, program: str, *, marker: Path) -> Path:
    """A program installed the way npm does: ``bin/PROG`` → the package's script, whose
    package.json holds the version. Running it leaves ``marker`` (it must not be run)."""
    pkg = root / "lib" / "node_modules" / package
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": package, "version": version}))
    script = pkg / "cli.js"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho 0.0.0\n")
    script.chmod(0o755)
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / program).symlink_to(script)
    return bindir


def script_program(bindir: Path, name: str, body: str) -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def bare_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """PATH holding only an empty folder and the system's (no client programs)."""
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    return empty


def test_nothing_present(sandbox: Path, bare_path: Path) -> None:
    r = cli("client", "detect")
    assert r.rc == 0, r.err
    assert "no clients found" in r.out
    out = json.loads(cli("client", "detect", "--format", "json").out)["data"]  # kvswitch's JSON envelope
    assert [c["found"] for c in out["clients"]] == [False] * 5
    assert {c["kind"] for c in out["clients"]} == {"claude-code", "codex", "cline-providers", "opencode", "qwen-code"}
    assert out["cc_switch"]["exists"] is False
    assert not config_file().exists()  # detect alone writes nothing


def test_files_programs_and_versions(
    sandbox: Path, bare_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    npm = tmp_path / "npm"
    bindir = npm_program(npm, "@anthropic-ai/claude-code", "2.1.999", "claude", marker=marker)
    npm_program(npm, "@cline/cli-linux-x64", "3.0.99", "cline", marker=marker)
    monkeypatch.setenv("PATH", f"{bindir}:{bare_path}:/usr/bin:/bin")
    (sandbox / ".claude").mkdir()
    shutil.copyfile(FIXTURES / "claude-settings.json", sandbox / ".claude" / "settings.json")
    (sandbox / ".qwen").mkdir()
    shutil.copyfile(FIXTURES / "qwen-settings.json", sandbox / ".qwen" / "settings.json")
    found = {f.kind: f for f in detect_clients()}
    assert found["claude-code"].version == "2.1.999" and found["claude-code"].file_exists
    assert found["claude-code"].program == bindir / "claude"
    assert found["claude-code"].endpoint == "https://gateway.example.test/anthropic/"
    assert found["cline-providers"].version == "3.0.99" and not found["cline-providers"].file_exists
    assert found["qwen-code"].found and found["qwen-code"].program is None
    assert not found["codex"].found and not found["opencode"].found
    assert not marker.exists()  # versions were read, programs never run
    r = cli("client", "detect")
    assert "Claude Code" in r.out and "claude 2.1.999" in r.out and "Qwen Code" in r.out
    assert "sk-import" not in r.out


def test_a_program_outside_a_package_is_asked_its_version(sandbox: Path, bare_path: Path) -> None:
    script_program(bare_path, "qwen", 'echo "qwen-code 0.31.4 (linux)"')
    found = {f.kind: f for f in detect_clients()}
    assert found["qwen-code"].version == "0.31.4"


def test_a_program_that_hangs_is_given_up_on(sandbox: Path, bare_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setattr("kvswitch.installed.VERSION_TIMEOUT", 0.5)
    script_program(bare_path, "codex", "exec sleep 30")
    start = time.monotonic()
    found = {f.kind: f for f in detect_clients()}
    assert time.monotonic() - start < 10
    assert found["codex"].program is not None and found["codex"].version is None


@pytest.mark.parametrize(
    "manifest",
    [
        {"name": "not-claude", "version": "6.6.6"},  # another package's: not believed
        {"name": "@anthropic-ai/claude-code", "version": "1.0.0\x1b[31m"},  # not a version
        {"name": "@anthropic-ai/claude-code", "version": 7},
        ["not", "an", "object"],
    ],
)
def test_a_package_json_that_is_not_the_clients_is_not_believed(
    manifest: object, sandbox: Path, tmp_path: Path
) -> None:
    from kvswitch.kinds import get_kind

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "package.json").write_text(json.dumps(manifest))
    prog = script_program(pkg, "claude", "echo 'no version here'")
    assert program_version(prog, get_kind("claude-code")) is None


def test_a_huge_package_json_is_not_read(sandbox: Path, tmp_path: Path) -> None:
    from kvswitch.kinds import get_kind

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "package.json").write_text(
        json.dumps({"name": "@anthropic-ai/claude-code", "version": "1.2.3", "pad": "x" * (2 << 20)})
    )
    prog = script_program(pkg, "claude", "echo 4.5.6")
    assert program_version(prog, get_kind("claude-code")) == "4.5.6"  # asked instead


def test_client_variables_are_followed(
    sandbox: Path, bare_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home, claude_dir = tmp_path / "codexhome", tmp_path / "claudedir"
    codex_home.mkdir()
    claude_dir.mkdir()
    shutil.copyfile(FIXTURES / "codex-config.toml", codex_home / "config.toml")
    (claude_dir / "settings.json").write_text("{}\n")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    found = {f.kind: f for f in detect_clients()}
    assert found["codex"].file == codex_home / "config.toml" and found["codex"].file_exists
    assert found["codex"].endpoint == "http://10.0.0.5:8000/v1"
    assert found["claude-code"].file == claude_dir / "settings.json" and found["claude-code"].file_exists


def test_register_found_without_a_config(sandbox: Path, bare_path: Path) -> None:
    script_program(bare_path, "opencode", "echo 1.18.0")
    (sandbox / ".qwen").mkdir()
    shutil.copyfile(FIXTURES / "qwen-settings.json", sandbox / ".qwen" / "settings.json")
    r = cli("client", "detect", "--register", "--format", "json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)["data"]
    assert sorted(out["registered_now"]) == ["opencode", "qwen-code"]
    assert {c["kind"]: c["registered"] for c in out["clients"] if c["found"]} == {"opencode": True, "qwen-code": True}
    data = config_data()
    assert "profiles" not in data or not data["profiles"]
    assert {c["kind"] for c in data["clients"]} == {"opencode", "qwen-code"}
    assert not (sandbox / ".config" / "opencode" / "opencode.json").exists()  # written by the first change only
    again = cli("client", "detect", "--register", "--format", "json")
    assert json.loads(again.out)["data"]["registered_now"] == []
    r = cli("import", "qwen-code")
    assert r.rc == 0, r.err
    assert config_data()["active_profile"] == "qwen-code"  # the clients-only config gets its profile


def test_register_keeps_names_distinct_and_spellings_apart(sandbox: Path, bare_path: Path) -> None:
    from tests.clientenv import init

    init()
    (sandbox / ".qwen").mkdir()
    real = sandbox / ".qwen" / "settings.json"
    shutil.copyfile(FIXTURES / "qwen-settings.json", real)
    other = sandbox / "elsewhere.json"
    shutil.copyfile(FIXTURES / "qwen-settings.json", other)
    assert cli("client", "add", str(other), "--kind", "qwen-code", "--name", "qwen-code").rc == 0
    found = detect_clients()
    assert register_found(found) == ["qwen-code-2"]
    link = sandbox / "link.json"
    link.symlink_to(real)
    assert cli("client", "add", str(link)).rc == 1  # the same file under another name
    assert register_found(detect_clients()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="uses a pseudo-terminal")
@pytest.mark.parametrize(
    ("answer", "registered"), [("2\n", ["qwen-code"]), ("a\n", ["claude-code", "qwen-code"]), ("\n", []), ("9\n", [])]
)
def test_on_a_terminal_detect_asks(answer: str, registered: list[str], sandbox: Path, bare_path: Path) -> None:
    import pty
    import subprocess

    (sandbox / ".claude").mkdir()
    shutil.copyfile(FIXTURES / "claude-settings.json", sandbox / ".claude" / "settings.json")
    (sandbox / ".qwen").mkdir()
    shutil.copyfile(FIXTURES / "qwen-settings.json", sandbox / ".qwen" / "settings.json")
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvswitch", "client", "detect"],
        stdin=child,
        stdout=child,
        stderr=child,
        env=dict(os.environ),
        close_fds=True,
    )
    os.close(child)
    out = b""
    while b"register which?" not in out:
        chunk = os.read(main, 4096)
        assert chunk, out
        out += chunk
    os.write(main, answer.encode())
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=30) == 0, out
    os.close(main)
    data = config_data() if config_file().exists() else {"clients": []}
    assert sorted(c["name"] for c in data.get("clients", [])) == registered
    assert b"sk-import" not in out


def test_a_fifo_at_a_clients_place_does_not_hang(sandbox: Path, bare_path: Path) -> None:
    (sandbox / ".qwen").mkdir()
    os.mkfifo(sandbox / ".qwen" / "settings.json")
    found = {f.kind: f for f in detect_clients()}
    assert not found["qwen-code"].file_exists


def test_an_unreadable_file_is_listed_with_its_problem(sandbox: Path, bare_path: Path) -> None:
    (sandbox / ".qwen").mkdir()
    (sandbox / ".qwen" / "settings.json").write_text('{"security": ')
    r = cli("client", "detect", "--format", "json")
    qwen = next(c for c in json.loads(r.out)["data"]["clients"] if c["kind"] == "qwen-code")
    assert qwen["file_exists"] and qwen["endpoint"] is None and qwen["problem"]


def test_an_endpoint_with_credentials_is_shown_redacted(sandbox: Path, bare_path: Path) -> None:
    (sandbox / ".qwen").mkdir()
    (sandbox / ".qwen" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"baseUrl": "http://bob:hunter2secret@h:1/v1?token=zz-secret"}}})
    )
    r = cli("client", "detect")
    assert "hunter2secret" not in r.out and "zz-secret" not in r.out
    assert "h:1/v1" in r.out


def test_status_without_a_profile_lists_the_registered_clients(sandbox: Path, bare_path: Path) -> None:
    """A config client detect wrote (clients only): status lists them, says how to get a
    profile, and exits 1 (nothing can be in sync yet); switch refuses clearly."""
    (sandbox / ".qwen").mkdir()
    shutil.copyfile(FIXTURES / "qwen-settings.json", sandbox / ".qwen" / "settings.json")
    assert cli("client", "detect", "--register").rc == 0
    r = cli("status")
    assert r.rc == 1, r.err
    assert "no active profile" in r.out and "kvswitch import CLIENT" in r.out
    assert "qwen" in r.out and "no profile to compare with" in r.out
    assert "sk-import-qwen-5e6f7a8b9c" not in r.out  # masked
    out = json.loads(cli("status", "--format", "json").out)["data"]
    assert out["profile"] is None and out["clients"][0]["drift"] == ["profile"]
    r = cli("switch", "split")
    assert r.rc == 1 and "kvswitch import CLIENT" in r.err
