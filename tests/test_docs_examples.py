"""Every ``kvswitch …`` command line the docs show parses with the real parser: the commands and
options a page names exist, and take the values it gives them.

Looked at: fenced code blocks with no info string or ``sh``, ``bash``, ``shell``, ``console``, in
README.md, README.zh-CN.md and docs/**/*.md. In a block whose lines start with ``$ `` only those
lines are commands (the rest is output); ``$(kvswitch …)`` inside another command counts too.
A synopsis (``[--mode merged|split]``) is read with every optional part present and the first
choice of each alternative; placeholders (``NAME``, ``PATH``, ``<…>``) get a sensible value."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from kvswitch.errors import UsageError  # what the parser raises on a usage error
from tests.conftest import ROOT

SHELL_BLOCKS = {"", "sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
COMMAND = re.compile(r"^(?:\$\s+)?(?:[\w./-]*/)?(?:kvswitch|python3? -m kvswitch)(?=\s)(.*)$")
SUBSTITUTION = re.compile(r"\$\((?:[\w./-]*/)?kvswitch\s([^)]*)\)")

PLACEHOLDERS = {
    "MODE": "split",
    "NAME": "work",
    "NEW": "work2",
    "NEW-NAME": "work2",
    "OLD": "work",
    "PROFILE": "work",
    "PATH": "settings.json",
    "FILE": "report.json",
    "DIR": "schemas",
    "CLIENT": "codex",
    "KIND": "codex",
    "K": "codex",
    "P": "vllm",
    "M": "split",
    "ID": "20261203T152405Z-000",
    "URL": "http://127.0.0.1:8000/v1",
    "N": "4",
    "MS": "150",
    "PORT": "8000",
    "SHELL": "bash",
    "LANG": "zh-CN",
    "ENGINE": "vllm",
    "KEY": "X-Team",
    "VALUE": "infra",
    "HEADER": "X-Team=infra",
    "S": "10",
    "CMD": "ssh p-host",
    "CHECK": "auth",
}


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted(ROOT.glob("README.*.md")), *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if p.is_file()]


def _joined(body: str) -> list[str]:
    """The block's lines, with backslash continuations joined."""
    lines: list[str] = []
    carry = ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            carry += line.rstrip()[:-1] + " "
            continue
        if lines and not carry and line[:1].isspace() and line.lstrip().startswith("[--"):
            lines[-1] += " " + line.strip()  # a synopsis continued on an indented line
            continue
        lines.append(carry + line)
        carry = ""
    if carry:
        lines.append(carry)
    return lines


def command_lines(markdown: str) -> list[str]:
    """The argument part (after ``kvswitch``) of every command line in the page's shell blocks."""
    found: list[str] = []
    for m in FENCE.finditer(markdown):
        if m.group(2).lower() not in SHELL_BLOCKS:
            continue
        lines = _joined(m.group(3))
        prompted = any(line.startswith("$ ") for line in lines)
        for line in lines:
            text = line.strip()
            if prompted and not line.startswith("$ "):
                continue
            for sub in SUBSTITUTION.finditer(text):
                found.append(sub.group(1))
            c = COMMAND.match(text)
            if c:
                found.append(c.group(1))
    return found


def _first_choice(text: str) -> str:
    """``a|b`` → ``a`` and ``x | y`` → ``x``, outside quotes."""
    parts = re.split(r"\s*\|\s*", text)
    return parts[0]


def _expand_synopsis(args: str) -> str:
    """``[--mode merged|split]`` → ``--mode merged``; ``[a | b]`` → ``a``; innermost first."""
    inner = re.compile(r"\[([^\[\]]*)\]")
    while True:
        new = inner.sub(lambda m: " " + _first_choice(m.group(1)) + " ", args)
        if new == args:
            break
        args = new
    return args


def to_argv(args: str) -> list[str]:
    """The argument vector a page's command line stands for."""
    args = re.sub(r"<[^<>\s][^<>]*>", "x", args)  # <your value>
    args = _expand_synopsis(args).replace("…", " ").replace("...", " ")  # "PATH..." repeats, elisions
    args = args.split(" > ", 1)[0].split(" | ", 1)[0].split(" && ", 1)[0]  # output redirect, pipe, chain
    argv = shlex.split(args, comments=True)
    out: list[str] = []
    for word in argv:
        if "|" in word and not word.startswith(("http", "/")) and "=" not in word:
            word = word.split("|", 1)[0]
        out.append(PLACEHOLDERS.get(word, word))
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    """What ``kvswitch.cli.main`` does before it runs a command: ``--lang`` taken out, the
    parser built, paths after the options taken too; a usage error raises."""
    from kvswitch.cli import build_parser

    rest: list[str] = []
    it = iter(argv)
    for word in it:
        if word == "--lang":
            assert next(it, None) in ("en", "zh-CN")
        elif word.startswith("--lang="):
            assert word.partition("=")[2] in ("en", "zh-CN")
        else:
            rest.append(word)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(rest)
    except SystemExit as exc:  # --help
        assert exc.code == 0
        return argparse.Namespace(command="help")
    if extra and (getattr(args, "paths", None) is None or any(e.startswith("-") for e in extra)):
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
    return args


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_line_in_the_page_parses(page: Path) -> None:
    bad: list[str] = []
    for args in command_lines(page.read_text(encoding="utf-8")):
        try:
            argv = to_argv(args)
            ns = parse(argv)
            assert argv == [] or ns.command is not None or "--version" in argv, "no command"
        except (AssertionError, ValueError, UsageError) as exc:
            bad.append(f"kvswitch{args}\n    → {type(exc).__name__}: {exc}")
    assert not bad, f"{page.relative_to(ROOT)}: command lines the parser refuses:\n" + "\n".join(bad)


def test_the_docs_show_many_commands() -> None:
    total = sum(len(command_lines(p.read_text(encoding="utf-8"))) for p in pages())
    assert total > 100, total


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("kvswitch switch split --client codex   # one client", ["switch", "split", "--client", "codex"]),
        ("$ kvswitch lint ~/.cline/settings.json", ["lint", "~/.cline/settings.json"]),
        ("kvswitch lab up [--port 18080] [--preset tiny|medium]", ["lab", "up", "--port", "18080", "--preset", "tiny"]),
        (
            "kvswitch schema [--kind K] [--write DIR | --check DIR | --reference]",
            ["schema", "--kind", "codex", "--write", "schemas"],
        ),
        ("kvswitch restore PATH [--list | --id ID]", ["restore", "settings.json", "--list"]),
        (
            "kvswitch advise [--gpus N]\n               [--workload chat|coding]",
            ["advise", "--gpus", "4", "--workload", "chat"],
        ),
        ("kvswitch profile edit NAME --base-url <without the slash>", ["profile", "edit", "work", "--base-url", "x"]),
    ],
)
def test_a_line_becomes_the_argv_it_stands_for(line: str, argv: list[str]) -> None:
    (args,) = command_lines(f"```sh\n{line}\n```\n")
    assert to_argv(args) == argv


def test_output_lines_and_other_blocks_are_not_commands() -> None:
    text = (
        "```console\n$ kvswitch status\nkvswitch engine-flags · vLLM\n```\n"
        "```toml\nkvswitch = 1\n```\n"
        '```sh\nexport K="$(kvswitch key get work --reveal)"\nkvswitch-tray\n```\n'
    )
    assert command_lines(text) == [" status", "key get work --reveal"]


def test_a_wrong_option_is_caught() -> None:
    with pytest.raises(UsageError, match="no-such-option"):
        parse(to_argv(" switch split --no-such-option"))
    with pytest.raises(UsageError, match="invalid choice"):
        parse(to_argv(" no-such-command"))
    with pytest.raises(UsageError, match="merged"):
        parse(to_argv(" switch sideways"))
