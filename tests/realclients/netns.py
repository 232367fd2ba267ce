"""A loopback-only network namespace for the real-client tests, and the servers inside it.

A holder process (``unshare -n sh -c 'ip link set lo up; …; exec sleep infinity'``) keeps the
namespace alive; every process that must be inside (the recording servers, the refusing proxy,
the clients) starts under ``nsenter -t <holder> -n``. Inside, only ``lo`` exists: a client
that ignored its proxy settings and dialled another host directly would fail at once. Files
are shared with the host (only the network is separate), so the tests read the logs directly.

Needs root (CI runs as root); callers skip, or fail under ``CI``, when :func:`unavailable`
says why it cannot work here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Namespace", "Server", "start_proxy", "start_recorder", "stop", "unavailable"]

ROOT = Path(__file__).resolve().parents[2]
START_S = 20.0


def unavailable() -> str | None:
    """Why a namespace cannot be made here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the real-client tests need root for a network namespace (unshare -n)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (tests/run.py installs it)"
    return None


def stop(proc: subprocess.Popen[Any], grace: float = 3.0) -> None:
    """End ``proc`` and its process group (it was started in a session of its own)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(grace)


class Namespace:
    """A loopback-only network namespace, held open until :meth:`close`."""

    def __init__(self) -> None:
        self.holder = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && echo ready && exec sleep infinity"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.holder.stdout is not None
        line = self.holder.stdout.readline()  # "ready", or EOF when unshare/ip failed
        if line.strip() != "ready":
            stop(self.holder)
            err = self.holder.stderr.read() if self.holder.stderr else ""
            raise RuntimeError(f"could not make a network namespace: {err.strip()}")
        self.pid = self.holder.pid
        self.inode = os.stat(f"/proc/{self.pid}/ns/net").st_ino
        self.spawned: list[subprocess.Popen[Any]] = []

    def cmd(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        return ["nsenter", "-t", str(self.pid), "-n", "--", *argv]

    def spawn(self, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside, in a session of its own (so :func:`stop` ends all of it)."""
        proc = subprocess.Popen(self.cmd(argv), start_new_session=True, **kw)
        self.spawned.append(proc)
        return proc

    def pids(self) -> set[int]:
        """Every live process now inside this namespace, the holder included (zombies,
        already dead and waiting to be reaped, are not counted)."""
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}/ns/net").st_ino != self.inode:
                    continue
                state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state not in ("Z", "X"):
                found.add(int(entry))
        return found

    def close(self) -> None:
        """Stop what :meth:`spawn` started, kill any other process left inside, then the
        holder."""
        for proc in self.spawned:
            stop(proc)
        for pid in self.pids() - {self.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stop(self.holder)
        for stream in (self.holder.stdout, self.holder.stderr):
            if stream:
                stream.close()


def command_line(pid: int) -> str:
    """The command line of ``pid`` (for messages about leftovers)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


@dataclass
class Server:
    """A recording server (or the refusing proxy) running inside the namespace."""

    name: str
    proc: subprocess.Popen[Any]
    port: int
    log: Path
    _seen: int = field(default=0, repr=False)

    @property
    def url(self) -> str:
        """The root URL (no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def entries(self) -> list[dict[str, Any]]:
        """Every request logged so far."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def mark(self) -> None:
        """Forget what came before: :meth:`new` returns what arrives after this."""
        self._seen = len(self.entries())

    def new(self) -> list[dict[str, Any]]:
        """Requests logged since the last :meth:`mark`."""
        return self.entries()[self._seen :]


def _start(ns: Namespace, name: str, module: str, args: list[str], folder: Path) -> Server:
    log = folder / f"{name}.jsonl"
    port_file = folder / f"{name}.port"
    log.touch()
    with (folder / f"{name}.stderr").open("w") as err:
        proc = ns.spawn(
            [sys.executable, "-m", module, "--log", str(log), "--port-file", str(port_file), *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + START_S
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            said = (folder / f"{name}.stderr").read_text()
            raise RuntimeError(f"{name} did not start: {said.strip()}")
        time.sleep(0.02)
    return Server(name, proc, int(port_file.read_text()), log)


def start_recorder(ns: Namespace, name: str, folder: Path, model: str = "test-model") -> Server:
    """A recording model server called ``name`` inside ``ns``; its files go in ``folder``."""
    return _start(ns, name, "tests.realclients.recorder", ["--name", name, "--model", model], folder)


def start_proxy(ns: Namespace, folder: Path) -> Server:
    """The refusing proxy inside ``ns``; its log must stay empty."""
    return _start(ns, "proxy", "tests.realclients.proxy", [], folder)
