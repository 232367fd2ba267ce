"""Usage errors show the usage of the command they are about: bare ``kvswitch`` the top level's,
a sub-command's argparse error and a usage error its handler raises that sub-command's; all
exit 2, on stderr, in the user's language."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.clientenv import cli


def _usage_then_error(err: str, prog: str) -> str:
    """The message after ``PROG: error:``, once the usage of PROG came first."""
    lines = err.splitlines()
    assert lines[0].startswith(f"usage: {prog} "), err
    last = lines[-1]
    assert last.startswith(f"{prog}: error: "), err
    return last.removeprefix(f"{prog}: error: ")


def test_bare_kvswitch_prints_the_usage_on_stderr_and_exits_2() -> None:
    result = cli()
    assert result.rc == 2
    assert result.out == ""
    assert result.err.startswith("usage: kvswitch [-h] [--version] [--lang LANG] COMMAND ...")


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["profile", "use"], "kvswitch profile use", "the following arguments are required: name"),
        (["lint", "--format", "xml", "x.json"], "kvswitch lint", "argument --format: invalid choice"),
        (["lint", "--bogus", "x.json"], "kvswitch lint", "unrecognized arguments: --bogus"),
        (["key", "get"], "kvswitch key get", "the following arguments are required: profile"),
    ],
)
def test_an_argparse_error_shows_the_sub_commands_usage(argv: list[str], prog: str, message: str) -> None:
    result = cli(*argv)
    assert result.rc == 2
    assert _usage_then_error(result.err, prog).startswith(message)


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["init", "--preset", "nosuch", "--model", "m", "--no-key"], "kvswitch init", "no preset 'nosuch'"),
        (["lint", "--diff", "x.json"], "kvswitch lint", "--diff goes with --fix"),
        (["doctor", "--base-url", "http://127.0.0.1:9/v1"], "kvswitch doctor", "--base-url needs --model"),
        (["profile", "add", "p2"], "kvswitch profile add", "--base-url (base_url): required"),
    ],
)
def test_a_usage_error_from_the_handler_shows_the_sub_commands_usage(argv: list[str], prog: str, message: str) -> None:
    assert cli("init", "--preset", "vllm", "--model", "m", "--no-key").rc == 0
    result = cli(*argv)
    assert result.rc == 2, result
    assert _usage_then_error(result.err, prog).startswith(message)


def test_usage_errors_in_chinese_keep_options_and_codes() -> None:
    env = {**os.environ, "KVSWITCH_LANG": "zh-CN"}
    out = subprocess.run(
        [sys.executable, "-m", "kvswitch", "lint", "--diff", "x.json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert lines[0].startswith("用法：kvswitch lint ")  # the sub-command's usage, translated
    assert lines[-1].startswith("kvswitch lint：错误：") and "--diff" in lines[-1] and "--fix" in lines[-1]
    bare = subprocess.run([sys.executable, "-m", "kvswitch"], env=env, capture_output=True, text=True, check=False)
    assert bare.returncode == 2 and bare.stderr.startswith("用法：kvswitch ")


def test_the_lang_option_refuses_an_unknown_language() -> None:
    result = cli("--lang", "fr", "status")
    assert result.rc == 2
    assert "'fr'" in result.err and "en, zh-CN" in result.err
