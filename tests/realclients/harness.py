"""The real-client harness: one loopback-only namespace with two recording servers ("merged",
"split") and the refusing proxy, fresh HOMEs under one temporary folder, and checks that
nothing is left running. ``conftest.py`` makes one per test module (fixture ``harness``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realclients.clients import (
    CLIENTS,
    Client,
    Home,
    TmuxSession,
    missing,
    prepare_home,
    prepare_shared_home,
    run_once,
)
from tests.realclients.netns import (
    Namespace,
    Server,
    command_line,
    start_proxy,
    start_recorder,
    unavailable,
)

__all__ = ["MODEL", "Harness", "model_turns", "require_harness"]

MODEL = "kvswitch-test-model"
TURN_PATHS = {"anthropic": "/v1/messages", "responses": "/v1/responses", "chat": "/v1/chat/completions"}


def require_harness() -> None:
    """Skip when the harness cannot run here (not root, no ``unshare``/``ip``, clients not
    installed); under CI that is a failure, never a skip."""
    why = unavailable()
    gone = missing()
    if why is None and gone:
        why = f"real clients not installed: {', '.join(gone)} (run python3 tests/run.py)"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def model_turns(client: Client | str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests in ``entries`` that ask ``client``'s model for an answer (not probes)."""
    c = CLIENTS[client] if isinstance(client, str) else client
    path = TURN_PATHS[c.protocol]
    return [e for e in entries if e["method"] == "POST" and e["path"].rstrip("/") == path]


def shown(entries: list[dict[str, Any]], key: str) -> str:
    """Requests for a failure message, without their keys."""
    return (
        "\n".join(
            f"  {e['name']}: {e['method']} {e['path']} x-cache-mode={e['headers'].get('x-cache-mode')}"
            f" key-ok={e['headers'].get('authorization') == f'Bearer {key}'}"
            for e in entries
        )
        or "  (none)"
    )


def check_turn(client: str, turn: dict[str, Any], mode: str, key: str) -> None:
    """One model request: the key, the mode's header and the model are right."""
    headers = turn["headers"]
    assert headers.get("authorization") == f"Bearer {key}", f"{client}: not the right key"
    assert headers.get("x-cache-mode") == mode, shown([turn], key)
    assert isinstance(turn["body"], dict) and turn["body"].get("model") == MODEL, client


def landed(harness: Harness, client: str, mode: str, key: str) -> list[dict[str, Any]]:
    """The model requests of the last run: there are some, all on ``mode``'s server and right."""
    target: Server = getattr(harness, mode)
    other: Server = harness.split if mode == "merged" else harness.merged
    entries, elsewhere = target.new(), other.new()
    turns = model_turns(client, entries)
    assert turns, f"{client} sent no model request to {mode}:\n{shown(entries + elsewhere, key)}"
    assert not model_turns(client, elsewhere), (
        f"{client} reached {other.name} in {mode} mode:\n{shown(entries + elsewhere, key)}"
    )
    for turn in turns:
        check_turn(client, turn, mode, key)
    return turns


@dataclass
class Harness:
    """What one test module shares: the namespace, servers and a temporary folder."""

    ns: Namespace
    merged: Server
    split: Server
    proxy: Server
    root: Path

    @classmethod
    def start(cls) -> Harness:
        root = Path(tempfile.mkdtemp(prefix="kvswitch-realclients-"))
        ns = None
        try:
            ns = Namespace()
            servers = root / "servers"
            servers.mkdir()
            return cls(
                ns,
                start_recorder(ns, "merged", servers, MODEL),
                start_recorder(ns, "split", servers, MODEL),
                start_proxy(ns, servers),
                root,
            )
        except BaseException:
            if ns is not None:
                ns.close()
            shutil.rmtree(root, ignore_errors=True)
            raise

    def close(self) -> None:
        """Stop everything inside the namespace and remove every temporary file."""
        self.ns.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def home(self, client: Client | str) -> Home:
        """A fresh HOME with ``client``'s seed files (no config file yet)."""
        return prepare_home(client, self.root)

    def shared_home(self, *clients: str) -> dict[str, Home]:
        """One fresh HOME seeded for all of ``clients`` (their config files not written yet)."""
        return prepare_shared_home(list(clients), self.root)

    def mark(self) -> None:
        """Start counting requests afresh on both servers and the proxy."""
        self.merged.mark()
        self.split.mark()
        self.proxy.mark()

    def run(self, h: Home, env_extra: Mapping[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
        """One headless turn of ``h``'s client (see ``clients.run_once``)."""
        return run_once(self.ns, h, self.proxy, env_extra, **kw)

    def tmux(self, h: Home, env_extra: Mapping[str, str] | None = None) -> TmuxSession:
        """An interactive Claude Code session in tmux; close it when done."""
        return TmuxSession(self.ns, h, self.proxy, env_extra)

    def leftovers(self) -> list[str]:
        """Command lines of processes inside the namespace other than the holder and the
        servers: a client that left a daemon behind."""
        known = {self.ns.pid, self.merged.proc.pid, self.split.proc.pid, self.proxy.proc.pid}
        return sorted(command_line(pid) for pid in self.ns.pids() - known)
