"""The harness itself, with hand-written config files: each real client, run headless in the
loopback-only namespace, sends its model request where its file says, with the file's key
and ``X-Cache-Mode`` header, and nothing else (the refusing proxy's log stays empty, nothing
is left running); rewriting the file moves the next run to the other server. Claude Code in a
running tmux session follows the rewrite without a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.helpers.observe import wait_until
from tests.realclients import netns
from tests.realclients.clients import CLIENTS, Client, Home, client_env, run_once
from tests.realclients.harness import MODEL, Harness, check_turn, landed, model_turns, shown
from tests.realclients.samples import KEY_VAR, write_config

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

KEYS = {"merged": "sk-test-merged-0123456789", "split": "sk-test-split-9876543210"}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_follows_its_config_file(harness: Harness, client: str) -> None:
    h = harness.home(client)
    for mode in ("merged", "split"):
        write_config(h, getattr(harness, mode).url, KEYS[mode], MODEL, mode)
        harness.mark()
        done = harness.run(h, {KEY_VAR: KEYS[mode]})
        context = f"{client} exit {done.returncode}\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
        assert done.returncode == 0, context
        assert "ok" in done.stdout.lower(), context
        for turn in landed(harness, client, mode, KEYS[mode]):
            assert "x-api-key" not in turn["headers"], client
        assert harness.proxy.new() == [], f"{client} tried to go out: {harness.proxy.new()}"
        assert harness.leftovers() == [], f"{client} left processes running"


def test_claude_code_session_follows_a_rewrite_live(harness: Harness) -> None:
    require_tool("tmux")
    h = harness.home("claude")
    write_config(h, harness.merged.url, KEYS["merged"], MODEL, "merged")
    harness.mark()
    session = harness.tmux(h)
    try:
        pid = session.pane_pid()
        turn = session.prompt("say ok", harness.merged)
        check_turn("claude", turn, "merged", KEYS["merged"])
        assert "x-api-key" not in turn["headers"]
        before = session.reloads()
        write_config(h, harness.split.url, KEYS["split"], MODEL, "split")  # atomic, as kvswitch
        session.wait_reload(before)
        harness.mark()
        turn = session.prompt("say ok again", harness.split)
        check_turn("claude", turn, "split", KEYS["split"])
        assert "x-api-key" not in turn["headers"]
        assert not model_turns("claude", harness.merged.new()), shown(harness.merged.new(), KEYS["merged"])
        assert session.pane_pid() == pid, "Claude Code was restarted"
    finally:
        session.close()
    assert harness.proxy.new() == []
    assert harness.leftovers() == []


def test_namespace_has_only_its_own_loopback(harness: Harness) -> None:
    """A client that ignored the proxy and dialled out directly would fail at once."""
    probe = (
        "import socket\n"
        "for host in ('192.0.2.1', '10.0.0.1'):\n"
        "    try:\n"
        "        socket.create_connection((host, 80), timeout=3)\n"
        "    except OSError as e:\n"
        "        print(host, e.errno)\n"
    )
    done = subprocess.run(
        harness.ns.cmd([sys.executable, "-c", probe]), capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["192.0.2.1", "101", "10.0.0.1", "101"]  # ENETUNREACH


def test_proxy_sees_what_honours_the_client_environment(harness: Harness) -> None:
    """The environment every client gets routes an outside request to the refusing proxy,
    which records it: an empty log in the client tests means no attempt was made."""
    h = harness.home("qwen")
    fetch = (
        "import urllib.request\ntry:\n"
        "    urllib.request.urlopen('https://api.example.invalid/v1', timeout=10)\n"
        "except OSError as e:\n    print('refused', e)\n"
    )
    harness.mark()
    done = subprocess.run(
        harness.ns.cmd([sys.executable, "-c", fetch]),
        env=client_env(h, harness.proxy),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert "refused" in done.stdout and "403" in done.stdout, done.stdout + done.stderr
    assert [(e["method"], e["target"]) for e in harness.proxy.new()] == [("CONNECT", "api.example.invalid:443")]


def test_leftover_processes_are_found(harness: Harness) -> None:
    """A daemon a client leaves behind (in a session of its own) is seen and named."""
    subprocess.run(harness.ns.cmd(["sh", "-c", "setsid sleep 321 >/dev/null 2>&1 &"]), timeout=30, check=True)
    try:
        # setsid forks, then execs sleep: until the exec the child's command line is setsid's
        assert wait_until(lambda: harness.leftovers() == ["sleep 321"], 10.0), harness.leftovers()
    finally:
        for pid in harness.ns.pids():
            if "sleep 321" in netns.command_line(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_hung_client_is_killed_with_its_process_group(harness: Harness, tmp_path: Path) -> None:
    hung = Client("hung", "a hung client", "unused", "chat", ("-c", "sleep 301 & sleep 302"), path=Path("/bin/sh"))
    h = Home(hung, tmp_path, tmp_path)
    (tmp_path.parent / "tmp").mkdir(exist_ok=True)
    done = run_once(harness.ns, h, harness.proxy, timeout=1)
    assert done.returncode == -9 and "timed out after 1 s" in done.stderr
    assert harness.leftovers() == []
