"""The real clients pinned to kvswitch's gateway once, then the mode flipped again and again:
no client file changes, and every request lands at the upstream of the mode asked for.

Per client: a fresh HOME, kvswitch beside it (its own KVSWITCH_HOME, a file keyring) with a
profile whose ``merged.url`` is the "merged" recorder and ``split.url`` the "split" recorder,
the client registered and written by ``profile use``, then ``kvswitch gateway pin CLIENT``. The
gateway itself (``python -m kvswitch gateway run``, the user's command) runs INSIDE the
loopback-only namespace, started there with ``nsenter`` and kvswitch's environment (its
KVSWITCH_HOME, HOME, keyring and the profile's key variable); ``kvswitch switch`` runs outside
and reaches it over the control socket (a unix socket: a path, shared by both namespaces).

Then ``switch split`` / ``switch merged`` alternately, 10 flips for every client (FLIPS), one
headless turn of the client after each:
every model request reached the recorder of the mode asked for, none the other; upstream it
carried the profile's key (one key header line), never the local token (the token is in no
recorded byte) and no ``X-Cache-Mode`` line. No switch changed the pinned file: its sha256 is
the same before and after each switch, and at the end it is what it was after the first turn
(clients reformat their own file on their first run; Cline also sets its ``updatedAt`` on
every run, which the end comparison leaves aside). Codex and OpenCode read the token from the
variable ``kvswitch status`` names in its ``export`` line; the test reads the token from the
sandbox's keyring through kvswitch's library and gives the client that variable only (not the
profile's key variable).

Claude Code also runs live in tmux: one interactive session, pinned once; ``switch split``
sends its next prompt to split, ``switch merged`` back to merged, the same process, no file
change and no settings reload between. The refusing proxy saw nothing; after ``kvswitch
gateway stop`` no process is left in the namespace.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import require_tool
from tests.realclients.clients import CLIENTS, Home
from tests.realclients.harness import MODEL, Harness, model_turns
from tests.realclients.kvsandbox import KvSwitch
from tests.realclients.netns import stop
from tests.realclients.test_switch_real_clients import (
    KEY,
    PROFILE,
    setup_kvswitch,
    without_updated_at,
)

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

FLIPS = dict.fromkeys(("claude", "codex", "cline", "opencode", "qwen"), 10)
"""Mode flips per client, one headless turn after each (a turn takes 0.3-7 s: the file takes
about three minutes on a quiet machine)."""
GATEWAY = "http://127.0.0.1:18090"
"""Where the gateway listens (the config's default port: the namespace has it free)."""
START_S = 30.0
TOKEN_HEADERS = ("authorization", "x-api-key")


@dataclass
class Pinned:
    """One client pinned to a gateway running in the namespace."""

    harness: Harness
    h: Home
    kv: KvSwitch
    proc: subprocess.Popen[Any]
    token: str
    env: dict[str, str]  # what the client's process gets besides its recipe

    def sha(self) -> str:
        return hashlib.sha256(self.h.config.read_bytes()).hexdigest()

    def status(self) -> dict[str, Any]:
        """``kvswitch gateway status --format json`` (asked from outside the namespace)."""
        done = self.kv.run("gateway", "status", "--format", "json")
        assert done.returncode == 0, f"gateway status: exit {done.returncode}\n{done.stdout}{done.stderr}"
        data: dict[str, Any] = json.loads(done.stdout)["data"]  # kvswitch's JSON envelope
        return data


def library(kv: KvSwitch, code: str) -> str:
    """Run ``code`` with kvswitch's library in the sandbox's environment (its KVSWITCH_HOME and
    file keyring); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], env=kv.env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def stored_token(kv: KvSwitch) -> tuple[str, str]:
    """(the variable pinned clients read the token from, the token in the sandbox's keyring),
    read through kvswitch.gateway.token."""
    out = library(
        kv,
        "from kvswitch.config import read_config\n"
        "from kvswitch.gateway.token import load_token, token_variable\n"
        "c = read_config()\n"
        "print(token_variable(c)); print(load_token(c) or '')\n",
    )
    name, token = out.splitlines()
    assert token, "gateway pin left no token in the keyring"
    return name, token


def token_variable_status(kv: KvSwitch, token: str, extra: dict[str, str]) -> dict[str, Any]:
    """What ``kvswitch status --format json`` says of the token's variable, run with ``extra``
    in kvswitch's environment; it never shows the token."""
    done = KvSwitch(kv.client_home, {**kv.env, **extra}).run("status", "--format", "json")
    shows = token in done.stdout + done.stderr
    assert not shows, "kvswitch status showed the token"
    found = [v for v in json.loads(done.stdout)["data"]["key_variables"] if v.get("token")]
    assert len(found) == 1, [v.get("name") for v in found]
    entry: dict[str, Any] = found[0]
    return entry


def export_variable(kv: KvSwitch, token: str) -> str:
    """The variable ``kvswitch status`` tells the user to export for a pinned client that reads
    the token from one (its ``export NAME=…`` line, the token masked); with that variable set to
    the token, ``status`` says it is right."""
    unset = token_variable_status(kv, token, {})
    name = str(unset["name"])
    right = token_variable_status(kv, token, {name: token})
    assert unset["state"] == "unset" and right["state"] == "ok", (unset["state"], right["state"])
    export = str(unset["export"] or "")
    assert export.startswith(f"export {name}="), "status gave no export line"
    return name


@contextmanager
def gateway(harness: Harness, kv: KvSwitch) -> Iterator[subprocess.Popen[Any]]:
    """``kvswitch gateway run`` inside the namespace with kvswitch's environment; stopped with
    ``kvswitch gateway stop`` (from outside) at the end, which must end the process."""
    log = kv.home.parent / "gateway.out"
    with log.open("w") as out:
        proc = harness.ns.spawn(
            [sys.executable, "-m", "kvswitch", "gateway", "run"],
            env=kv.env,
            cwd=kv.client_home.project,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_S
        while "kvswitch gateway on" not in log.read_text():
            assert proc.poll() is None, f"the gateway exited {proc.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the gateway did not start:\n{log.read_text()}"
            time.sleep(0.05)
        assert f"kvswitch gateway on {GATEWAY} (profile {PROFILE}, mode merged)" in log.read_text()
        yield proc
        said = kv.ok("gateway", "stop")
        assert f"stopped the gateway at {GATEWAY} (pid {proc.pid})" in said, said
        assert proc.wait(15) == 0, log.read_text()
    finally:
        stop(proc)


@contextmanager
def pinned(harness: Harness, client: str) -> Iterator[Pinned]:
    """``client`` set up with kvswitch as in the direct-route test, ``profile use``, then
    ``gateway pin CLIENT``, and the gateway running."""
    h = harness.home(client)
    kv = setup_kvswitch(harness, h)
    kv.ok("profile", "use", PROFILE)
    direct = h.config.read_text(encoding="utf-8")
    assert harness.merged.url in direct, "profile use did not write the direct form"
    said = kv.ok("gateway", "pin", str(h.config))
    assert "pinned 1 client" in said, said
    text = h.config.read_text(encoding="utf-8")
    # (bools first: an assertion's explanation must not print a key or the file holding one)
    alone = GATEWAY in text and harness.merged.url not in text and harness.split.url not in text
    assert alone, f"{client}: the pinned file does not name the gateway alone"
    no_header = "x-cache-mode" not in text.lower()
    assert no_header, f"{client}: the pinned file still sends X-Cache-Mode"
    no_key = KEY not in text
    assert no_key, f"{client}: the profile's key is in the pinned file"
    name, token = stored_token(kv)
    shows = token in said
    assert not shows, "gateway pin showed the token"
    env: dict[str, str] = {}
    holds_token = token in text
    if CLIENTS[client].key_env:
        assert not holds_token, f"{client} reads the token from a variable, yet it is in the file"
        variable = export_variable(kv, token)
        assert variable == name, (variable, name)
        names_it = f"{{env:{name}}}" in text or f'"{name}"' in text
        assert names_it, f"{client}: the pinned file does not name {name}"
        env[variable] = token
    else:
        assert holds_token, f"{client}: the pinned file does not hold the local token"
        assert (h.config.stat().st_mode & 0o077) == 0, "a file holding the token is not 0600"
    with gateway(harness, kv) as proc:
        yield Pinned(harness, h, kv, proc, token, env)


def shown(entries: list[dict[str, Any]]) -> str:
    """Requests for a failure message (header names only: the values may hold keys)."""
    return (
        "\n".join(
            f"  {e['name']}: {e['method']} {e['path']} headers={[n for n, _ in e['header_lines']]}" for e in entries
        )
        or "  (none)"
    )


def upstream_lines(entry: dict[str, Any], name: str) -> list[str]:
    """The values of every ``name`` header line the recorder got (a repeated one too)."""
    return [v for n, v in entry["header_lines"] if n == name]


def upstream_keys(entry: dict[str, Any]) -> list[str]:
    """Every ``Authorization`` and ``x-api-key`` line the recorder got."""
    return [v for n in TOKEN_HEADERS for v in upstream_lines(entry, n)]


def run_and_land(p: Pinned, mode: str) -> float:
    """One headless turn; every model request reached ``mode``'s recorder with the profile's key
    and no mode header, and the local token reached no recorder. The turn's seconds."""
    harness, client = p.harness, p.h.client.name
    harness.mark()
    t0 = time.monotonic()
    done = harness.run(p.h, p.env)
    seconds = time.monotonic() - t0
    context = (
        f"{client} in {mode}: exit {done.returncode}\nstdout:\n{done.stdout[-1500:]}\nstderr:\n{done.stderr[-1500:]}"
    )
    assert done.returncode == 0, context
    target, other = harness.merged, harness.split
    if mode == "split":
        target, other = other, target
    entries, elsewhere = target.new(), other.new()
    turns = model_turns(client, entries)
    assert turns, f"{client} sent no model request to {mode}:\n{shown(entries + elsewhere)}"
    assert not model_turns(client, elsewhere), (
        f"{client} reached {other.name} in {mode} mode:\n{shown(entries + elsewhere)}"
    )
    for turn in turns:
        profile_key = upstream_keys(turn) in ([KEY], [f"Bearer {KEY}"])  # no key in messages
        assert profile_key, f"{client}: the key sent upstream is not the profile's alone:\n{shown([turn])}"
        assert isinstance(turn["body"], dict) and turn["body"].get("model") == MODEL, client
    for e in entries + elsewhere:
        assert not upstream_lines(e, "x-cache-mode"), f"X-Cache-Mode went upstream:\n{shown([e])}"
        leaked = p.token in json.dumps(e)
        assert not leaked, f"the local token reached {e['name']}:\n{shown([e])}"
    assert harness.proxy.new() == [], f"{client} tried to go out: {harness.proxy.new()}"
    return seconds


def flip(p: Pinned, mode: str) -> None:
    """``kvswitch switch MODE``: it tells the gateway and writes no pinned file."""
    before = p.sha()
    said = p.kv.ok("switch", mode)
    assert f"gateway: now {mode} for pinned clients and new requests" in said, said
    shows = KEY in said or p.token in said
    assert not shows, "kvswitch switch showed a key"
    assert p.sha() == before, f"kvswitch switch {mode} changed the pinned file"


@pytest.mark.parametrize("client", list(CLIENTS))
def test_pinned_client_follows_flips_through_the_gateway(harness: Harness, client: str) -> None:
    flips = FLIPS[client]
    with pinned(harness, client) as p:
        seconds = [run_and_land(p, "merged")]
        # the file as the client left it after its first run (some reformat their own file once)
        baseline = p.sha()
        baseline_text = p.h.config.read_text(encoding="utf-8")
        mode = "merged"
        for _ in range(flips):
            mode = "split" if mode == "merged" else "merged"
            flip(p, mode)
            assert p.status()["mode"] == mode
            seconds.append(run_and_land(p, mode))
        # every switch left the file alone (checked around each); over the whole run only Cline's
        # own "updatedAt", which it sets on every run, may move
        after = p.h.config.read_text(encoding="utf-8")
        assert without_updated_at(client, after) == without_updated_at(client, baseline_text), (
            f"{client}: the pinned file changed over {flips} flips"
        )
        if client != "cline":
            assert p.sha() == baseline
        by_mode = p.status()["requests"]
        # the gateway counted them in the same modes (at least the model turns)
        assert by_mode.get("merged", 0) >= flips // 2 + 1, by_mode
        assert by_mode.get("split", 0) >= flips // 2, by_mode
    assert harness.leftovers() == [], f"{client} or the gateway left processes running"
    print(
        f"\n{client}: {flips} flips, {len(seconds)} turns, median turn "
        f"{sorted(seconds)[len(seconds) // 2]:.2f} s, total {sum(seconds):.1f} s"
    )


def test_live_claude_code_session_follows_the_gateway(harness: Harness) -> None:
    """One interactive Claude Code, pinned once: its next prompt follows each switch at once
    (the gateway flips, no file changes, no settings reload), same process."""
    require_tool("tmux")
    with pinned(harness, "claude") as p:
        harness.mark()
        session = harness.tmux(p.h)
        try:
            pid = session.pane_pid()
            first = session.prompt("say ok", harness.merged)
            leaked = p.token in json.dumps(first)
            assert not upstream_lines(first, "x-cache-mode") and not leaked, shown([first])
            baseline, reloads = p.sha(), session.reloads()
            for mode in ("split", "merged"):
                other = harness.merged if mode == "split" else harness.split
                flip(p, mode)
                harness.mark()
                turn = session.prompt(f"say ok in {mode}", getattr(harness, mode))
                profile_key = upstream_keys(turn) == [f"Bearer {KEY}"]
                assert profile_key, f"the key sent upstream is not the profile's alone:\n{shown([turn])}"
                assert not upstream_lines(turn, "x-cache-mode"), shown([turn])
                leaked = p.token in json.dumps(turn)
                assert not leaked, "the local token went upstream"
                assert not model_turns("claude", other.new()), shown(other.new())
                assert session.pane_pid() == pid, "Claude Code was restarted"
            assert p.sha() == baseline, "the pinned settings file changed"
            assert session.reloads() == reloads, "Claude Code re-read its settings: a file changed"
        finally:
            session.close()
    assert harness.proxy.new() == []
    assert harness.leftovers() == [], "the session or the gateway left processes running"
