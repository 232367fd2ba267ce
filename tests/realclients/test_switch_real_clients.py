"""kvswitch switches the real clients: each client, installed from npm and run headless in the
loopback-only namespace, sends its next model request where kvswitch's last write points it.

Per client: a fresh HOME (with the seed files that keep the client offline; Codex and Qwen Code
keep those in the same file kvswitch edits), kvswitch beside it (same HOME, its own
KVSWITCH_HOME) with a profile whose ``merged.url`` is the "merged" recorder and ``split.url``
the "split" recorder (its ``base_url`` is a dead port: only the mode URLs may be used), the
client's file registered with ``client add`` and written by ``profile use``. Then: run → the
merged recorder got the turn with ``X-Cache-Mode: merged`` and the key; ``switch split`` → run →
split recorder, ``X-Cache-Mode: split``, the same key; ``switch merged`` → merged again, and the
file is byte for byte what ``profile use`` wrote (Cline's ``updatedAt`` aside). The refusing
proxy saw nothing; no process is left. Claude Code also follows a switch inside a running
interactive session (tmux), without a restart.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import require_tool
from tests.realclients.clients import CLIENTS, CODEX_SEED, QWEN_SEED, Home
from tests.realclients.harness import MODEL, Harness, check_turn, landed, model_turns, shown
from tests.realclients.kvsandbox import KvSwitch

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

PROFILE = "e2e"
KEY = "sk-e2e-live-4Jd8Qm2Zp7Vx1Rk9"
KEY_VAR = "KVSWITCH_E2E_KEY"
DEAD_URL = "http://127.0.0.1:9"  # the profile's base_url: no client may use it
# clients that keep the key in their own file get it written (client add --write-key); Codex
# and OpenCode read it from the variable the profile names, set in the client's environment
WRITES_KEY = {"claude": True, "codex": False, "cline": True, "opencode": False, "qwen": True}


def setup_kvswitch(harness: Harness, h: Home) -> KvSwitch:
    """kvswitch beside ``h`` with the profile and the client registered, before ``profile use``."""
    kv = KvSwitch.beside(h, {KEY_VAR: KEY})
    kv.ok(
        "init",
        "--no-cline",
        "--no-ccswitch",
        "--profile",
        PROFILE,
        "--base-url",
        DEAD_URL,
        "--url-convention",
        "append-v1",
        "--model",
        MODEL,
        "--key-env",
        KEY_VAR,
    )
    kv.set_mode_urls(PROFILE, harness.merged.url, harness.split.url)
    add = ["client", "add", str(h.config)]
    if WRITES_KEY[h.client.name]:
        add.append("--write-key")
    out = kv.ok(*add)
    assert h.client.product in out, out  # detected as the real client, named by product
    return kv


def client_env(h: Home) -> dict[str, str]:
    """What the client's process gets besides the recipe: the key variable, only for the
    clients that read the key from one (the others must find it in their file)."""
    return {} if WRITES_KEY[h.client.name] else {KEY_VAR: KEY}


def run_and_land(harness: Harness, h: Home, mode: str) -> None:
    """One headless turn; every model request of it reached ``mode``'s recorder, right."""
    client = h.client.name
    harness.mark()
    done = harness.run(h, client_env(h))
    context = (
        f"{client} in {mode}: exit {done.returncode}\nstdout:\n{done.stdout[-1500:]}\nstderr:\n{done.stderr[-1500:]}"
    )
    assert done.returncode == 0, context
    landed(harness, client, mode, KEY)
    assert harness.proxy.new() == [], f"{client} tried to go out: {harness.proxy.new()}"


def without_updated_at(client: str, text: str) -> str:
    """The file's text for a byte comparison: Cline's ``updatedAt`` is set on every write."""
    if client != "cline":
        return text
    return re.sub(r'("updatedAt":\s*)"[^"]*"', r'\1"…"', text)


def check_kept_seed(h: Home, text: str) -> None:
    """The seed settings of the file kvswitch edited are still there, untouched."""
    if h.client.name == "codex":
        for line in CODEX_SEED.splitlines():
            assert line in text.splitlines(), f"Codex seed line lost: {line!r}"
    elif h.client.name == "qwen":
        data = json.loads(text)
        for key, value in QWEN_SEED.items():
            assert data[key] == value, f"Qwen Code seed setting {key} changed"


@pytest.mark.parametrize("client", list(CLIENTS))
def test_switch_moves_the_real_client(harness: Harness, client: str) -> None:
    h = harness.home(client)
    kv = setup_kvswitch(harness, h)
    outputs = [kv.ok("profile", "use", PROFILE)]
    assert h.config.is_file(), f"profile use did not write {h.config}"
    written = h.config.read_text(encoding="utf-8")
    check_kept_seed(h, written)
    if WRITES_KEY[client]:
        assert KEY in written and (h.config.stat().st_mode & 0o077) == 0, "key file not 0600"
    else:
        assert KEY not in written, f"{client}: the key was written though it reads a variable"
    run_and_land(harness, h, "merged")
    # Claude Code, OpenCode and Qwen Code rewrite their file on a run (their own formatting,
    # "$schema", "$version"): the round trip starts from the file as the client left it
    before = h.config.read_text(encoding="utf-8")

    outputs.append(kv.ok("switch", "split"))
    assert h.client.product in outputs[-1], outputs[-1]  # "restart Codex to apply", …
    split_text = h.config.read_text(encoding="utf-8")
    check_kept_seed(h, split_text)
    run_and_land(harness, h, "split")

    outputs.append(kv.ok("switch", "merged"))
    back = h.config.read_text(encoding="utf-8")
    assert without_updated_at(client, back) == without_updated_at(client, before), (
        f"{client}: switch split then merged did not give the file back byte for byte"
    )
    run_and_land(harness, h, "merged")

    # the client's own rewrites of its file leave kvswitch's view of it intact
    outputs.append(kv.ok("lint", str(h.config)))
    outputs.append(kv.ok("status"))
    line = next(x for x in outputs[-1].splitlines() if str(h.config) in x)
    assert "mode merged" in line and "in sync" in line, outputs[-1]
    assert not any(KEY in out for out in outputs), "kvswitch showed the key"
    assert harness.leftovers() == [], f"{client} left processes running"


def test_claude_code_session_follows_a_switch_live(harness: Harness) -> None:
    """A running interactive Claude Code (tmux) re-reads its settings after ``kvswitch switch``
    and sends its next prompt to the other mode's URL with the other header; same process."""
    require_tool("tmux")
    h = harness.home("claude")
    kv = setup_kvswitch(harness, h)
    kv.ok("profile", "use", PROFILE)
    harness.mark()
    session = harness.tmux(h)
    try:
        pid = session.pane_pid()
        check_turn("claude", session.prompt("say ok", harness.merged), "merged", KEY)
        for mode, other in (("split", harness.merged), ("merged", harness.split)):
            before = session.reloads()
            out = kv.ok("switch", mode)
            assert "Claude Code" in out and KEY not in out, out
            session.wait_reload(before)
            harness.mark()
            check_turn("claude", session.prompt(f"say ok in {mode}", getattr(harness, mode)), mode, KEY)
            assert not model_turns("claude", other.new()), shown(other.new(), KEY)
            assert session.pane_pid() == pid, "Claude Code was restarted"
    finally:
        session.close()
    assert harness.proxy.new() == []
    assert harness.leftovers() == []
