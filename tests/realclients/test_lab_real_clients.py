"""The real Chat Completions clients (Cline, OpenCode, Qwen Code) against the lab: after
``kvswitch switch split`` each one's next turn goes through the lab router's split path, the
prefill server hands its KV cache to the decode server (the router's hand-off counter moves),
and the merged server sees nothing.

One user, one HOME, the three clients registered with one kvswitch; the lab (``kvswitch lab
up``: three llama.cpp servers from xllamacpp and the router, a generated tiny model) runs
INSIDE the loopback-only namespace, started there with ``nsenter``; its ``lab`` profile
(``split.url`` = the router's split path) is the one ``profile use`` renders. Claude Code
(Anthropic Messages) and Codex (Responses) are not here: the lab router serves Chat
Completions only.

The tiny model has 4096 tokens per slot and never stops on its own, so the user tunes each
client the way it allows, in the file kvswitch wrote (``switch`` keeps these edits) or on its
command line: at most 16 output tokens (OpenCode ``limit.output``, Qwen Code
``samplingParams.max_tokens``) and a one-line system prompt where the built-in one is longer
than a slot (OpenCode's agent prompt, Qwen Code's ``QWEN_SYSTEM_MD``, Cline's ``-s``); Qwen
Code's bundled skills and background memory agents are off. One turn per client.

Cline sends no output limit at all (``maxTokens`` in its provider settings is not sent): its
answer runs until the slot is full, Cline takes that for a cut-off answer and asks again with
the answer in the prompt, which no longer fits (a 400 from the prefill server, before any
hand-off). That second request is the tiny model's limit, not kvswitch's: for Cline the test
needs the first turn handed off and its text printed, and accepts only that exit failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kvswitch.probe.metrics import parse_metrics
from tests.lab.conftest import require_lab
from tests.realclients.clients import Home
from tests.realclients.harness import Harness
from tests.realclients.kvsandbox import KvSwitch

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

CLIENTS = ("cline", "opencode", "qwen")
KEY = "sk-lab-e2e-8Hq3Wz6Nc1Tb5Yd0"
LAB_KEY_VAR = "KVSWITCH_LAB_KEY"  # the lab profile's key = env:KVSWITCH_LAB_KEY
LAB_MODEL = "kvswitch-lab-tiny"
ROUTER = "http://127.0.0.1:18080"  # the lab's default port: the namespace has it free
WRITES_KEY = {"cline": True, "opencode": False, "qwen": True}
MAX_TOKENS = 16
SHORT_PROMPT = "Answer in one word.\n"
HANDOFFS = "kvswitch_lab:kv_handoffs_total"
SPLIT = 'kvswitch_lab:requests_total{mode="split"}'
MERGED = 'kvswitch_lab:requests_total{mode="merged"}'


@dataclass
class Lab:
    harness: Harness
    homes: dict[str, Home]
    kv: KvSwitch
    env: dict[str, dict[str, str]]  # what each client's process gets besides its recipe

    def get(self, path: str) -> str:
        """GET ``ROUTER + path`` from inside the namespace (the lab is not reachable outside)."""
        code = (
            "import sys, urllib.request\n"
            "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
            "sys.stdout.write(opener.open(sys.argv[1], timeout=20).read().decode())\n"
        )
        done = subprocess.run(
            self.harness.ns.cmd([sys.executable, "-c", code, ROUTER + path]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def metrics(self) -> dict[str, float]:
        return parse_metrics(self.get("/metrics"))

    def handoffs(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = json.loads(self.get("/lab/handoffs"))["handoffs"]
        return records


def lab_cmd(harness: Harness, kv: KvSwitch, *argv: str) -> subprocess.CompletedProcess[str]:
    """``kvswitch lab ARGV`` inside the namespace (its servers outlive the command there)."""
    return subprocess.run(
        harness.ns.cmd([sys.executable, "-m", "kvswitch", "lab", *argv]),
        env=kv.env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def tune(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """The user edits a client's JSON file by hand."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def tune_opencode(data: dict[str, Any]) -> None:
    data["provider"]["kvswitch"]["models"][LAB_MODEL]["limit"] = {"context": 4096, "output": MAX_TOKENS}
    data["agent"] = {"build": {"prompt": SHORT_PROMPT.strip()}}


def tune_qwen(data: dict[str, Any]) -> None:
    data["model"].setdefault("generationConfig", {})["samplingParams"] = {"max_tokens": MAX_TOKENS}
    data["skills"] = {"disabledLevels": ["bundled"]}
    data["memory"] = {"enableManagedAutoMemory": False, "enableManagedAutoDream": False, "enableAutoSkill": False}


TUNE = {"opencode": tune_opencode, "qwen": tune_qwen}
ARGS = {"cline": ("-s", SHORT_PROMPT.strip(), "--retries", "1", "--compaction", "off")}
CLINE_OVERFLOW = "exceeds the available context size"


@pytest.fixture(scope="module")
def lab(harness: Harness) -> Iterator[Lab]:
    """The lab up inside the namespace, the three clients registered and tuned, then
    ``switch split``; ``lab down`` at the end."""
    require_lab()
    homes = harness.shared_home(*CLIENTS)
    kv = KvSwitch.beside(homes["cline"], {LAB_KEY_VAR: KEY})
    up = lab_cmd(harness, kv, "up", "--threads", "1", "--format", "json")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        report = json.loads(up.stdout)["data"]  # kvswitch's JSON envelope
        assert report["profile"] == "added" and report["status"]["healthy"], report
        for name, h in homes.items():
            kv.ok("client", "add", str(h.config), *(["--write-key"] if WRITES_KEY[name] else []))
        kv.ok("profile", "use", "lab")
        for name, change in TUNE.items():
            tune(homes[name].config, change)
        system_md = homes["qwen"].home / "system.md"
        system_md.write_text(SHORT_PROMPT, encoding="utf-8")
        env = {name: ({} if WRITES_KEY[name] else {LAB_KEY_VAR: KEY}) for name in CLIENTS}
        env["qwen"]["QWEN_SYSTEM_MD"] = str(system_md)
        out = kv.ok("switch", "split")
        assert "switched 3 files to split" in out and KEY not in out, out
        yield Lab(harness, homes, kv, env)
    finally:
        lab_cmd(harness, kv, "down")


@pytest.mark.parametrize("client", CLIENTS)
def test_client_reaches_the_split_pair(lab: Lab, client: str) -> None:
    h = lab.homes[client]
    text = h.config.read_text(encoding="utf-8")
    assert "/split/v1" in text and '"split"' in text, "the file is not in split mode"
    before, seen = lab.metrics(), len(lab.handoffs())
    lab.harness.mark()
    done = lab.harness.run(h, lab.env[client], args=ARGS.get(client, ()))
    context = f"{client}: exit {done.returncode}\nstdout:\n{done.stdout[-1500:]}\nstderr:\n{done.stderr[-1500:]}"
    if client == "cline" and done.returncode != 0:  # its retry overflows the slot (see above)
        assert CLINE_OVERFLOW in done.stderr, context
    else:
        assert done.returncode == 0, context
    assert done.stdout.strip(), context  # the lab's answer came back to the client
    after = lab.metrics()
    turns = after[SPLIT] - before[SPLIT]
    assert turns >= 1, f"{client}: no request on the lab's split path"
    assert after[MERGED] == before[MERGED], f"{client}: a request went to the merged server"
    records = lab.handoffs()[seen:]
    assert after[HANDOFFS] - before[HANDOFFS] == len([r for r in records if r["status"] == 200])
    assert records and records[0]["status"] == 200 and records[0]["error"] is None, records
    if client != "cline":
        assert len(records) == turns and all(r["status"] == 200 for r in records), records
    assert lab.harness.proxy.new() == [], f"{client} tried to go out"
    assert lab.harness.merged.new() == [] and lab.harness.split.new() == [], f"{client} reached a recorder, not the lab"


def test_lab_down_leaves_nothing_running(lab: Lab) -> None:
    done = lab_cmd(lab.harness, lab.kv, "down")
    assert done.returncode == 0, done.stdout + done.stderr
    assert lab.harness.leftovers() == []
