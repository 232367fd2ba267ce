"""Real Claude Code and real Codex, pinned to kvswitch's gateway, reach the lab's split pair
through the gateway's translation: their Anthropic Messages and Responses requests become Chat
Completions, the lab's prefill server hands its KV cache to the decode server, and the answer
comes back as a stream each client accepts (it exits 0 and prints the model's text).

One user, one HOME: ``kvswitch lab up`` INSIDE the loopback-only namespace (started there with
``nsenter``; its ``lab`` profile: merged = the router's ``/merged/v1``, split = its
``/split/v1``, both Chat Completions only), Claude Code and Codex registered with one kvswitch,
``profile use lab``, ``gateway pin`` for both, and ``kvswitch gateway run`` inside the
namespace. ``kvswitch switch`` runs outside and reaches the gateway over its control socket.
Per client: ``switch merged`` then one turn, ``switch split`` then one turn. Where each turn
went is read from the lab's own counters (``GET /metrics`` from inside the namespace): in
merged the router's merged count and the merged server's predicted tokens move and no hand-off
happens; in split the hand-off counter moves once per request, every hand-off succeeded, the
decode server predicted tokens and the merged server none. The gateway's log says it
translated each API; the recorders and the refusing proxy saw nothing.

The tiny model (4096 tokens per slot, never stopping on its own) shapes the run:

* Prompts: the clients' built-in prompts do not fit a slot (Claude Code ~52 KB with its tools,
  Codex ~41 KB; with the tiny model's vocabulary most of that is a token per character), and
  prefilling them would be slow anyway (measured, one thread: 4k tokens 3 s, 8k 13 s, 16k 34 s).
  The user shortens them with the clients' own options: Claude Code ``--system-prompt TEXT
  --tools ""`` (about 550 prompt tokens: its environment block stays), Codex ``-c
  model_instructions_file=FILE``, ``include_permissions_instructions=false``,
  ``include_environment_context=false``, ``web_search="disabled"``,
  ``skills.bundled.enabled=false`` and ``--disable`` of the goals, multi-agent, shell,
  skill-search and image-generation tools (about 35 prompt tokens: the two tools left are not
  rendered by the tiny model's template). Codex names any setting it ignores; none may be.
* Answers: both clients fail a turn whose answer a token limit cut off (Claude Code: "Claude's
  response exceeded the N output token maximum", after asking again three times with the
  cut-off answer in the prompt; Codex: "Incomplete response returned, reason:
  max_output_tokens"), and Codex sends no output limit at all. So the lab runs with
  ``--answer-chars 40``: its servers end every answer after at most 40 characters with
  ``finish_reason: "stop"``, which the gateway carries back as ``end_turn`` and ``completed``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.conftest import require_lab
from tests.realclients.clients import Home
from tests.realclients.harness import Harness
from tests.realclients.kvsandbox import KvSwitch
from tests.realclients.netns import stop
from tests.realclients.test_gateway_real_clients import stored_token
from tests.realclients.test_lab_real_clients import Lab as LabBase
from tests.realclients.test_lab_real_clients import lab_cmd

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

CLIENTS = ("claude", "codex")
API = {"claude": "messages", "codex": "responses"}
KEY = "sk-lab-xl-5Tq8Rz1Wm4Kd7Hb2"
LAB_KEY_VAR = "KVSWITCH_LAB_KEY"  # the lab profile's key = env:KVSWITCH_LAB_KEY
ROUTER = "http://127.0.0.1:18080"  # the lab's default port: the namespace has it free
GATEWAY = "http://127.0.0.1:18090"  # the gateway's default port
ANSWER_CHARS = 40
SHORT_PROMPT = "Answer in one word."
START_S = 30.0
HANDOFFS = "kvswitch_lab:kv_handoffs_total"
ROUTED = 'kvswitch_lab:requests_total{{mode="{}"}}'
PREDICTED = 'llamacpp:tokens_predicted_total{{instance="{}"}}'


@dataclass
class Lab(LabBase):
    """The lab, the gateway in front of it and the two pinned clients."""

    args: dict[str, tuple[str, ...]]  # each client's options before the prompt
    log: Path  # the gateway's output
    gateway: subprocess.Popen[Any]

    def post_status(self, path: str, body: dict[str, Any]) -> int:
        """The status of a POST of ``body`` to ``ROUTER + path``, from inside the namespace."""
        code = (
            "import json, sys, urllib.error, urllib.request\n"
            "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
            "request = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(),\n"
            "                                 headers={'Content-Type': 'application/json'})\n"
            "try:\n"
            "    print(opener.open(request, timeout=20).status)\n"
            "except urllib.error.HTTPError as exc:\n"
            "    print(exc.code)\n"
        )
        argv = [sys.executable, "-c", code, ROUTER + path, json.dumps(body)]
        done = subprocess.run(self.harness.ns.cmd(argv), capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return int(done.stdout)


def client_args(homes: dict[str, Home]) -> dict[str, tuple[str, ...]]:
    """The options that make each client's prompt fit a slot of the tiny model (see above)."""
    instructions = homes["codex"].home / "codex-instructions.md"
    instructions.write_text(SHORT_PROMPT + "\n", encoding="utf-8")
    codex_off = ("goals", "multi_agent", "shell_tool", "skill_search", "image_generation")
    return {
        # "--" ends --tools' list: the prompt that follows is not a tool's name
        "claude": ("--system-prompt", SHORT_PROMPT, "--tools", "", "--"),
        "codex": (
            "-c",
            f"model_instructions_file={json.dumps(str(instructions))}",
            "-c",
            "include_permissions_instructions=false",
            "-c",
            "include_environment_context=false",
            "-c",
            'web_search="disabled"',
            "-c",
            "skills.bundled.enabled=false",
            *(arg for feature in codex_off for arg in ("--disable", feature)),
        ),
    }


def start_gateway(harness: Harness, kv: KvSwitch, log: Path, cwd: Path) -> subprocess.Popen[Any]:
    """``kvswitch gateway run`` inside the namespace with kvswitch's environment (the lab
    profile's key variable included), its output in ``log``; once it listens."""
    with log.open("w") as out:
        proc = harness.ns.spawn(
            [sys.executable, "-m", "kvswitch", "gateway", "run"],
            env=kv.env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + START_S
    while "kvswitch gateway on" not in log.read_text():
        assert proc.poll() is None, f"the gateway exited {proc.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"the gateway did not start:\n{log.read_text()}"
        time.sleep(0.05)
    assert f"kvswitch gateway on {GATEWAY} (profile lab, mode merged)" in log.read_text()
    return proc


@pytest.fixture(scope="module")
def lab(harness: Harness) -> Iterator[Lab]:
    """The lab up inside the namespace (answers ending after 40 characters), Claude Code and
    Codex registered, ``profile use lab``, both pinned, the gateway running; whatever is left
    is stopped at the end."""
    require_lab()
    homes = harness.shared_home(*CLIENTS)
    kv = KvSwitch.beside(homes["claude"], {LAB_KEY_VAR: KEY})
    up = lab_cmd(harness, kv, "up", "--threads", "1", "--answer-chars", str(ANSWER_CHARS), "--format", "json")
    proc = None
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        report = json.loads(up.stdout)["data"]  # kvswitch's JSON envelope
        assert report["profile"] == "added" and report["status"]["healthy"], report
        assert report["status"]["answer_chars"] == ANSWER_CHARS, report["status"]
        kv.ok("client", "add", str(homes["claude"].config), "--write-key")
        kv.ok("client", "add", str(homes["codex"].config))  # its key: the profile's variable
        kv.ok("profile", "use", "lab")
        said = kv.ok("gateway", "pin", *(str(h.config) for h in homes.values()))
        assert "pinned 2 clients" in said, said
        for name, h in homes.items():
            text = h.config.read_text(encoding="utf-8")
            alone = GATEWAY in text and ROUTER not in text
            assert alone, f"{name}: the pinned file does not name the gateway alone"
        variable, token = stored_token(kv)
        env = {"claude": {}, "codex": {variable: token}}  # Codex reads the token from a variable
        log = kv.home.parent / "gateway.out"
        proc = start_gateway(harness, kv, log, homes["claude"].project)
        yield Lab(harness, homes, kv, env, client_args(homes), log, proc)
    finally:
        if proc is not None:
            stop(proc)
        lab_cmd(harness, kv, "down")


def turn(lab: Lab, client: str, mode: str) -> tuple[dict[str, float], list[dict[str, Any]], str]:
    """``kvswitch switch MODE``, then one headless turn of ``client``, which must exit 0 and
    print the lab's answer (at most ANSWER_CHARS characters). The lab's counters' moves, the
    hand-offs of the turn and the answer."""
    said = lab.kv.ok("switch", mode)
    assert f"gateway: now {mode} for pinned clients and new requests" in said, said
    before, seen = lab.metrics(), len(lab.handoffs())
    lab.harness.mark()
    done = lab.harness.run(lab.homes[client], lab.env[client], args=lab.args[client])
    context = (
        f"{client} in {mode}: exit {done.returncode}\nstdout:\n{done.stdout[-1500:]}\n"
        f"stderr:\n{done.stderr[-2500:]}\ngateway:\n{lab.log.read_text()[-1500:]}"
    )
    assert done.returncode == 0, context
    answer = done.stdout.strip()
    assert 0 < len(answer) <= ANSWER_CHARS, context  # the lab's answer, ended by the lab
    assert "unrecognized configuration" not in done.stderr, context  # every tuning was obeyed
    after = lab.metrics()
    keys = [
        HANDOFFS,
        *(ROUTED.format(m) for m in ("merged", "split")),
        *(PREDICTED.format(s) for s in ("merged", "prefill", "decode")),
    ]
    moved = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in keys}
    assert lab.harness.proxy.new() == [], f"{client} tried to go out"
    assert lab.harness.merged.new() == [] and lab.harness.split.new() == [], f"{client} reached a recorder, not the lab"
    return moved, lab.handoffs()[seen:], answer


@pytest.mark.parametrize("client", CLIENTS)
def test_pinned_client_reaches_the_split_pair_through_translation(lab: Lab, client: str) -> None:
    moved, records, _ = turn(lab, client, "merged")
    turns = moved[ROUTED.format("merged")]
    assert turns >= 1 and moved[PREDICTED.format("merged")] >= 1, moved
    assert moved[HANDOFFS] == 0 and moved[ROUTED.format("split")] == 0 and records == [], moved

    moved, records, answer = turn(lab, client, "split")
    turns = moved[ROUTED.format("split")]
    assert turns >= 1, f"{client}: no request on the lab's split path: {moved}"
    assert moved[HANDOFFS] == turns == len(records), (moved, records)
    assert all(r["status"] == 200 and r["error"] is None for r in records), records
    assert moved[PREDICTED.format("decode")] >= 1, moved  # the decode server answered
    assert moved[ROUTED.format("merged")] == 0 and moved[PREDICTED.format("merged")] == 0, (
        f"{client}: a request went to the merged server: {moved}"
    )
    # the split path serves Chat Completions only: the client's own API reached it translated
    native = {
        "model": "kvswitch-lab-tiny",
        "max_tokens": 1,
        "stream": False,
        "messages" if client == "claude" else "input": [{"role": "user", "content": "hi"}],
    }
    assert lab.post_status(f"/split/v1/{API[client]}", native) == 404
    log = lab.log.read_text()  # the first request of each API told (once per distinct list)
    assert f"{API[client]} request translated to Chat Completions for the" in log, log
    print(
        f"\n{client} in split: {turns:g} request(s), answer {answer!r}, prompt tokens "
        f"{[r['prefill_prompt_n'] for r in records]}"
    )


def test_gateway_stop_and_lab_down_leave_nothing_running(lab: Lab) -> None:
    said = lab.kv.ok("gateway", "stop")
    assert f"stopped the gateway at {GATEWAY} (pid {lab.gateway.pid})" in said, said
    assert lab.gateway.wait(15) == 0, lab.log.read_text()
    done = lab_cmd(lab.harness, lab.kv, "down")
    assert done.returncode == 0, done.stdout + done.stderr
    assert lab.harness.leftovers() == [], "the clients, the gateway or the lab left processes"
