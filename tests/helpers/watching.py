"""Helpers for the watcher and nudge tests: a kvswitch sandbox, an event recorder, a spy on
every file kvswitch writes, polling with timeouts, and reading the mode each file is in."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import observe
from tests.helpers.observe import toml_data

DEBOUNCE = 0.1
"""The debounce the tests run the watcher with (seconds)."""

SETTLE = 4.0
"""How long a test waits for something the watcher should do within a debounce period or two
(generous: the CI machine has 2 shared cores)."""

CHANGING = ("adopted", "propagated", "fixed", "reverted")
"""Event kinds that say the watcher changed something."""


def wait_until(predicate: Callable[[], Any], timeout: float = SETTLE, interval: float = 0.02) -> Any:
    """:func:`tests.helpers.observe.wait_until`, with ``SETTLE`` as the default timeout."""
    return observe.wait_until(predicate, timeout, interval)


@dataclass(frozen=True)
class Sandbox:
    """kvswitch set up by ``kvswitch init --preset taotoken`` in the test's own HOME."""

    home: Path
    cline: Path
    toml: Path
    config: Path

    @property
    def files(self) -> tuple[Path, Path, Path]:
        return (self.cline, self.toml, self.config)

    def hashes(self) -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in self.files}


def kvswitch(*argv: str) -> tuple[int, str]:
    """Run ``kvswitch ARGV`` in this process; (exit code, stdout + stderr)."""
    import kvswitch.cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = kvswitch.cli.main(list(argv))
    return code, out.getvalue()


def init_sandbox(*extra: str) -> Sandbox:
    home = Path(os.environ["HOME"])
    code, out = kvswitch("init", "--preset", "taotoken", "--model", "gpt-4o-mini", *(extra or ("--no-key",)))
    assert code == 0, out
    from kvswitch.config import config_file

    sb = Sandbox(home, home / ".cline" / "settings.json", home / ".config" / "cc-switch" / "config.toml", config_file())
    for p in sb.files:
        assert p.is_file(), p
    return sb


# -- reading modes ---------------------------------------------------------------------------
def config_data() -> dict[str, Any]:
    from kvswitch.config import config_file

    return toml_data(config_file())


_STRATEGY = re.compile(r'"cline\.cacheStrategy": \{[^}]*\}')
_URL = "https://taotoken.net/api"


def cline_as(text: str, mode: str, chunk_size: int = 512) -> str:
    """The Cline file with its ``cline.cacheStrategy`` block rewritten by hand into the valid
    form of ``mode`` (split needs its endpoints, S-12)."""
    if mode == "merged":
        body = [
            ("mode", '"merged"'),
            ("chunkSize", str(chunk_size)),
            ("kvCacheDtype", '"auto"'),
            ("enablePrefixCache", "true"),
        ]
    else:
        body = [
            ("mode", f'"{mode}"'),
            ("prefillEndpoint", f'"{_URL}"'),
            ("decodeEndpoint", f'"{_URL}"'),
            ("kvTransferProtocol", '"layer-wise"'),
            ("kvCacheDtype", '"auto"'),
            ("enablePrefixCache", "true"),
        ]
    block = '"cline.cacheStrategy": {\n' + ",\n".join(f'        "{k}": {v}' for k, v in body) + "\n    }"
    new, n = _STRATEGY.subn(lambda _: block, text, count=1)
    assert n == 1, text
    return new


# -- saving like an editor -----------------------------------------------------------------
def save_in_place(path: Path, text: str) -> None:
    """Truncate and write (printf > file, nano, vim under /tmp)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


_counter = 0


def save_replace(path: Path, text: str) -> None:
    """Write a temp file beside it and rename it over the file (VS Code, our writer)."""
    global _counter
    _counter += 1
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{_counter}.edit")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def sed_i(path: Path, expression: str) -> None:
    """GNU ``sed -i`` (writes a temp file and renames it over ``path``)."""
    subprocess.run(["sed", "-i", expression, str(path)], check=True, capture_output=True, timeout=30)


# -- recording -------------------------------------------------------------------------------
class Events:
    """The ``on_event`` callback: records every WatchEvent (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Any] = []

    def __call__(self, event: Any) -> None:
        with self._lock:
            self._events.append(event)

    @property
    def all(self) -> list[Any]:
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def since(self, mark: int) -> list[Any]:
        return self.all[mark:]

    def of(self, *kinds: str, since: int = 0) -> list[Any]:
        return [e for e in self.since(since) if e.kind in kinds]

    def wait(self, predicate: Callable[[Any], bool], since: int = 0, timeout: float = SETTLE) -> Any:
        """The first event (from ``since``) that matches, waiting up to ``timeout``."""
        return wait_until(lambda: next((e for e in self.since(since) if predicate(e)), None), timeout)

    def wait_kind(self, kind: str, since: int = 0, timeout: float = SETTLE) -> Any:
        return self.wait(lambda e: e.kind == kind, since, timeout)

    def wait_quiet(self, quiet: float = 0.5, timeout: float = 10.0) -> bool:
        """Wait until no event arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        count, last = len(self), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = len(self)
            if now != count:
                count, last = now, time.monotonic()
            elif time.monotonic() - last >= quiet:
                return True
        return False

    def describe(self, since: int = 0) -> str:
        return "\n".join(str(e) for e in self.since(since)) or "(no events)"


@dataclass(frozen=True)
class Write:
    at: float
    path: Path
    main_thread: bool


class WriteSpy:
    """Every config file kvswitch renames into place (the one rename in :mod:`kvswitch.io`),
    with whether it came from the test's own thread (a CLI command) or a watcher thread.
    kvswitch's private bookkeeping (state, backups, history, logs) is left out."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kvswitch.io import PreparedWrite
        from kvswitch.paths import dirs

        d = dirs()
        private = tuple(str(p) + os.sep for p in (d.state, d.backups, d.history, d.logs))

        self._lock = threading.Lock()
        self.writes: list[Write] = []
        real = PreparedWrite.commit
        spy = self

        def commit(prepared: PreparedWrite) -> None:
            real(prepared)
            if str(prepared.target).startswith(private):
                return
            with spy._lock:
                spy.writes.append(
                    Write(
                        time.monotonic(), Path(prepared.target), threading.current_thread() is threading.main_thread()
                    )
                )

        monkeypatch.setattr(PreparedWrite, "commit", commit)

    def by_watcher(self, since: float = 0.0) -> list[Write]:
        with self._lock:
            return [w for w in self.writes if not w.main_thread and w.at >= since]


@contextlib.contextmanager
def running_watcher(events: Events | None = None, **kw: Any) -> Iterator[Any]:
    """A started Watcher (debounce :data:`DEBOUNCE` unless given), stopped on the way out."""
    from kvswitch.watch import Watcher

    kw.setdefault("debounce", DEBOUNCE)
    watcher = Watcher(events, **kw)
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.stop()


# -- real processes for nudges -----------------------------------------------------------------
RECORDER = r"""
import os, signal, sys, time
pidfile, log = sys.argv[1], sys.argv[2]
def hup(signum, frame):
    with open(log, "a") as fh:
        fh.write(f"{signum}\n")
signal.signal(signal.SIGHUP, hup)
if pidfile != "-":
    tmp = pidfile + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{os.getpid()}\n")
    os.replace(tmp, pidfile)
open(log, "a").close()
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    time.sleep(0.05)
"""


class Recorder:
    """A small process that writes its pid to a pidfile and logs every SIGHUP it receives."""

    def __init__(self, directory: Path, pidfile: Path | None) -> None:
        self.pidfile = pidfile
        self.log = directory / f"sighup-{time.monotonic_ns()}.log"
        self.script = directory / "recorder.py"
        self.script.write_text(RECORDER)
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), str(pidfile) if pidfile else "-", str(self.log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ready = wait_until(lambda: self.log.exists() and (pidfile is None or pidfile.exists()), timeout=15)
        assert ready, "the recorder process did not start"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def hups(self) -> int:
        return len(self.log.read_text().split()) if self.log.exists() else 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
