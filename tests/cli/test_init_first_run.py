"""A first ``kvswitch init`` that just works: on a terminal it asks (where the model is served,
the model, the key without echo), typed here on a real pseudo-terminal; without one it names
the flags; without a usable keyring it says so before any key is asked for, offers an
environment variable instead, and what it wrote keeps working."""

from __future__ import annotations

import os
import re
import select
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.clientenv import cli, cline_file, config_file

KEY = "sk-FIRSTRUN-0123456789abcdefWXYZ"
CJK = re.compile(r"[\u4e00-\u9fff]")
FILE_KEYRING = "keyrings.alt.file.PlaintextKeyring"  # chosen explicitly: kvswitch accepts it in tests
NO_KEYRING = "keyring.backends.fail.Keyring"


class Session:
    """``python -m kvswitch ARGV`` on a pseudo-terminal (stdin and stdout are TTYs)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.execvpe(sys.executable, [sys.executable, "-m", "kvswitch", *argv], env)
        self.transcript = ""
        self.mark = 0

    def _read(self, limit: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], limit)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # the child is gone
            return False
        self.transcript += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(chunk)

    def expect(self, text: str, limit: float = 120.0) -> None:
        """Read until ``text`` appears after the last answer (a bound, not a timing)."""
        end = time.monotonic() + limit
        while text not in self.transcript[self.mark :]:
            if time.monotonic() > end or not self._read(0.5):
                raise AssertionError(f"never asked {text!r}; the terminal showed: {self.transcript!r}")
        self.mark = self.transcript.index(text, self.mark) + len(text)

    def answer(self, text: str) -> None:
        os.write(self.fd, text.encode() + b"\n")

    def finish(self, limit: float = 120.0) -> int:
        """The exit code, once everything it printed is read."""
        end = time.monotonic() + limit
        while time.monotonic() < end and self._read(0.5):
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


def env_with(**extra: str) -> dict[str, str]:
    env = {**os.environ, "KVSWITCH_LANG": "en", "PYTHON_KEYRING_BACKEND": FILE_KEYRING}
    env.update(extra)
    return env


def config() -> dict[str, object]:
    return tomllib.loads(config_file().read_text(encoding="utf-8"))


# -- on a terminal ----------------------------------------------------------------------------


def test_init_on_a_terminal_asks_where_the_model_and_the_key_which_is_not_echoed() -> None:
    term = Session(["init"], env_with())
    term.expect("Where is your model served?")
    term.expect("vllm: vLLM on this machine (http://127.0.0.1:8000/v1)")
    term.expect("A number, a preset name or a URL: ")
    term.answer("vllm")
    term.expect("Model id (as your provider lists it): ")
    term.answer("qwen3-coder")
    term.expect("API key for vllm (not echoed; Enter: none now): ")
    term.answer(KEY)
    assert term.finish() == 0, term.transcript
    assert KEY not in term.transcript and KEY[3:-4] not in term.transcript  # hidden input
    assert "stored the key for vllm in the OS keyring" in term.transcript
    profile = config()["profiles"]["vllm"]  # type: ignore[index]
    assert profile["base_url"] == "http://127.0.0.1:8000/v1" and profile["model"] == "qwen3-coder"
    assert profile["key"] == "keyring"
    got = Session(["key", "get", "vllm"], env_with())
    assert got.finish() == 0
    assert KEY[-4:] in got.transcript and KEY not in got.transcript  # stored, shown masked


def test_init_on_a_terminal_offers_the_endpoint_a_client_here_already_uses() -> None:
    codex = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text(
        'model = "qwen3-coder"\nmodel_provider = "local"\n\n[model_providers.local]\n'
        'name = "local"\nbase_url = "http://127.0.0.1:8123/v1"\n'
    )
    term = Session(["init", "--no-key"], env_with())
    term.expect("1. 'http://127.0.0.1:8123/v1' (what Codex uses now)")
    term.expect("A number, a preset name or a URL: ")
    term.answer("1")
    term.expect("Model id [qwen3-coder]: ")
    term.answer("")  # Enter takes the model Codex uses
    assert term.finish() == 0, term.transcript
    assert "API key" not in term.transcript  # --no-key answered that question
    profile = config()["profiles"]["default"]  # type: ignore[index]
    assert (profile["base_url"], profile["url_convention"], profile["model"]) == (
        "http://127.0.0.1:8123/v1",
        "includes-v1",
        "qwen3-coder",
    )


def test_a_wrong_answer_is_asked_again_and_flags_answer_their_questions() -> None:
    term = Session(["init", "--model", "m", "--key-env", "MY_KEY"], env_with())
    term.expect("A number, a preset name or a URL: ")
    term.answer("nosuch")
    term.expect("'nosuch' is none of the numbers above, a preset or an http(s) URL")
    term.expect("A number, a preset name or a URL: ")
    term.answer("http://127.0.0.1:9999/v1")
    assert term.finish() == 0, term.transcript
    assert "Model id" not in term.transcript and "API key" not in term.transcript
    profile = config()["profiles"]["default"]  # type: ignore[index]
    assert (profile["base_url"], profile["model"], profile["key"]) == ("http://127.0.0.1:9999/v1", "m", "env:MY_KEY")


# -- without a terminal -----------------------------------------------------------------------


def test_bare_init_without_a_terminal_names_the_flags_and_writes_nothing() -> None:
    result = cli("init")
    assert result.rc == 2
    assert result.err.startswith("usage: kvswitch init ")
    message = result.err.splitlines()[-1]
    for flag in ("--preset NAME", "--base-url URL", "--model MODEL", "--key-stdin", "--key-env NAME", "--no-key"):
        assert flag in message
    assert not config_file().exists() and not cline_file().exists()


def test_bare_init_without_a_terminal_in_chinese() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "kvswitch", "init"],
        env={**os.environ, "KVSWITCH_LANG": "zh-CN"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert out.returncode == 2
    last = out.stderr.splitlines()[-1]
    assert CJK.search(last) and "--preset NAME" in last and "--model MODEL" in last and "--key-env NAME" in last


# -- no usable keyring ------------------------------------------------------------------------


def test_without_a_keyring_init_says_so_first_and_asks_for_a_variable_instead() -> None:
    term = Session(["init"], env_with(PYTHON_KEYRING_BACKEND=NO_KEYRING))
    term.expect("Note: no OS keyring is available.")
    term.expect("(--key-env NAME)")
    term.expect("Where is your model served?")  # the note came before the first question
    term.expect("A number, a preset name or a URL: ")
    term.answer("2")
    term.expect("Model id (as your provider lists it): ")
    term.answer("qwen")
    term.expect("Environment variable that will hold the key (Enter: no key now): ")
    term.answer("VLLM_KEY")
    assert term.finish() == 0, term.transcript
    assert "API key for" not in term.transcript
    assert config()["profiles"]["vllm"]["key"] == "env:VLLM_KEY"  # type: ignore[index]


def test_without_a_keyring_key_stdin_is_refused_before_the_key_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    from keyring.backends import fail

    monkeypatch.setattr(keyring, "get_keyring", lambda: fail.Keyring())
    result = cli("init", "--preset", "vllm", "--model", "m", "--key-stdin", stdin=KEY + "\n")
    assert result.rc == 1
    assert "--key-env NAME" in result.err and "no OS keyring is available" in result.err
    assert KEY not in result.out + result.err
    assert not config_file().exists()


def test_without_a_keyring_what_init_wrote_with_key_env_keeps_working() -> None:
    """init, switch, status, lint and a profile render: each its own process, no keyring at all."""
    import subprocess

    env = env_with(PYTHON_KEYRING_BACKEND=NO_KEYRING, MY_KEY=KEY)

    def kv(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kvswitch", *argv],
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    init = kv("init", "--preset", "vllm", "--model", "m", "--key-env", "MY_KEY")
    assert init.returncode == 0, init.stderr
    assert config()["profiles"]["vllm"]["key"] == "env:MY_KEY"  # type: ignore[index]
    for argv in (
        ["switch", "split"],
        ["status"],
        ["lint", str(config_file()), str(cline_file())],
        ["profile", "use", "vllm"],
        ["switch", "merged"],
    ):
        done = kv(*argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        assert KEY not in done.stdout + done.stderr
    assert config()["mode"] == "merged"
