"""Shell completion: ``kvswitch completion bash|zsh|fish`` prints a script; loaded in the real
shell, it completes commands, profile names and client names from the sandbox's config. The
lint hook's start-up does not pay for it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.clientenv import cli, cline_file, config_data
from tests.conftest import FIXTURES, require_tool

BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Two profiles (vllm, llamacpp) and three clients (two skeletons, and a Claude Code file
    registered as "work"); the environment a shell runs ``kvswitch`` in."""
    if not (BIN / "kvswitch").exists():
        pytest.skip("the kvswitch entry point is not installed next to this Python (pip install -e .)")
    assert cli("init", "--preset", "vllm", "--model", "m", "--no-key").rc == 0
    assert cli("init", "--preset", "llamacpp", "--model", "q", "--no-key").rc == 0
    claude = tmp_path / "claude.json"
    shutil.copy(FIXTURES / "clients" / "claude-user.json", claude)
    assert cli("client", "add", str(claude), "--kind", "claude-code", "--name", "work").rc == 0
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "KVSWITCH_LANG": "en"}


def script(shell: str) -> str:
    result = cli("completion", shell)
    assert result.rc == 0, result
    return result.out


def test_each_script_is_argcompletes_for_kvswitch() -> None:
    assert "complete -o nospace -o default -o bashdefault -F _python_argcomplete kvswitch" in script("bash")
    assert script("zsh").startswith("#compdef kvswitch")
    assert "complete --command kvswitch" in script("fish")
    assert cli("completion", "tcsh").rc == 2


# -- bash -------------------------------------------------------------------------------------

BASH_ASK = r"""
source "$1"
line="$2"
COMP_LINE="$line"; COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_python_argcomplete kvswitch
printf '%s\n' "${COMPREPLY[@]}"
"""


def bash_complete(env: dict[str, str], tmp_path: Path, line: str) -> list[str]:
    path = tmp_path / "kvswitch.bash"
    path.write_text(script("bash"))
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", BASH_ASK, "bash", str(path), line],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [w.strip() for w in out.stdout.splitlines() if w.strip()]


def test_bash_completes_commands_profiles_and_clients(env: dict[str, str], tmp_path: Path) -> None:
    require_tool("bash")
    assert bash_complete(env, tmp_path, "kvswitch sw") == ["switch"]
    assert sorted(bash_complete(env, tmp_path, "kvswitch profile use ")) == ["llamacpp", "vllm"]
    assert sorted(bash_complete(env, tmp_path, "kvswitch key get ")) == ["llamacpp", "vllm"]
    assert sorted(bash_complete(env, tmp_path, "kvswitch switch --client ")) == [
        "article-ccswitch",
        "article-cline",
        "work",
    ]
    assert str(cline_file()) in bash_complete(env, tmp_path, "kvswitch client remove ")
    assert "claude-code" in bash_complete(env, tmp_path, "kvswitch client add --kind cl")


# -- fish -------------------------------------------------------------------------------------


def fish_complete(env: dict[str, str], tmp_path: Path, line: str) -> list[str]:
    path = tmp_path / "kvswitch.fish"
    path.write_text(script("fish"))
    out = subprocess.run(
        ["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [w.split("\t")[0] for w in out.stdout.splitlines() if w.strip()]


def test_fish_completes_commands_profiles_and_clients(env: dict[str, str], tmp_path: Path) -> None:
    require_tool("fish")
    assert fish_complete(env, tmp_path, "kvswitch sw") == ["switch"]
    assert sorted(fish_complete(env, tmp_path, "kvswitch profile use ")) == ["llamacpp", "vllm"]
    assert "work" in fish_complete(env, tmp_path, "kvswitch gateway pin ")


# -- zsh: typed on a terminal -----------------------------------------------------------------


class Terminal:
    """An interactive zsh on a pseudo-terminal."""

    def __init__(self, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.execvpe("zsh", ["zsh", "-f", "-i"], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.seen = ""

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, pattern: str, limit: float = 120.0) -> re.Match[str]:
        """Read until ``pattern`` is in the screen's text (escapes removed); a bound, not a timing."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                self.seen += ANSI.sub("", chunk.decode("utf-8", "replace"))
                found = re.search(pattern, self.seen)
                if found:
                    return found
        raise AssertionError(f"zsh never showed {pattern!r}; it showed: {self.seen[-2000:]!r}")

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def zsh_complete(env: dict[str, str], tmp_path: Path, line: str) -> tuple[str, str]:
    """(what zsh listed, the command line after TAB) for ``line`` typed and TAB pressed."""
    path = tmp_path / "_kvswitch"
    path.write_text(script("zsh"))
    term = Terminal(env)
    try:
        term.send(
            f"PS1='> '; autoload -U compinit; compinit -u -D; source {path}; "
            "show-buffer() { zle -M \"BUF<$BUFFER>\" }; zle -N show-buffer; bindkey '^X^P' show-buffer; "
            "echo READY''NOW\n"
        )
        term.expect(r"READYNOW")
        term.seen = ""
        term.send(line + "\t\x18\x10")  # TAB, then Ctrl-X Ctrl-P shows the line
        found = term.expect(r"BUF<([^>]*)>")
        return term.seen[: found.start()], found.group(1)
    finally:
        term.close()


def test_zsh_completes_commands_profiles_and_clients(env: dict[str, str], tmp_path: Path) -> None:
    require_tool("zsh")
    assert zsh_complete(env, tmp_path, "kvswitch sw")[1] == "kvswitch switch "
    listed, _ = zsh_complete(env, tmp_path, "kvswitch profile use ")
    assert "vllm" in listed and "llamacpp" in listed
    listed, _ = zsh_complete(env, tmp_path, "kvswitch switch --client ")
    assert "work" in listed and "article-cline" in listed


# -- what completion costs the rest ------------------------------------------------------------


def test_lint_does_not_load_completion_or_other_commands(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"cline.openAiModelId": "m"}')
    code = (
        "import sys; from kvswitch.cli import main; rc = main(['lint', '--kind', 'article-cline', sys.argv[1]]); "
        "print(sorted(m for m in sys.modules if m.startswith(('argcomplete', 'kvswitch.cli.', 'pydantic'))))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    loaded = out.stdout.splitlines()[-1]
    assert "argcomplete" not in loaded and "pydantic" not in loaded
    assert "kvswitch.cli.lint" in loaded and "kvswitch.cli.profile" not in loaded


def test_completing_never_runs_the_command(env: dict[str, str], tmp_path: Path) -> None:
    answer = tmp_path / "answer"
    line = "kvswitch switch split"
    out = subprocess.run(
        [str(BIN / "kvswitch"), "switch", "split"],
        env={
            **env,
            "_ARGCOMPLETE": "1",
            "_ARGCOMPLETE_SHELL": "bash",
            "COMP_LINE": line,
            "COMP_POINT": str(len(line)),
            "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "split" in answer.read_text()
    assert config_data()["mode"] == "merged"  # nothing was switched
