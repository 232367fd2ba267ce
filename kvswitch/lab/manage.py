"""``kvswitch lab up|down|status``: the lab's four processes, their pidfiles and its profile.

``up`` generates the model (once) into ``<state>/lab/``, starts three llama.cpp servers —
*merged* (``n_batch = n_ubatch =`` the chunk size: chunked prefill and continuous batching on
one instance), *prefill* and *decode* (sharing ``<state>/lab/slots`` for slot files), each with
4 slots of 4096 tokens (room for a measured request beside a probe's background streams) —
and the lab router (:mod:`kvswitch.lab.router`) in front of them, each in a session of its own
so that they outlive the command. Where the machine has two cores or more, the
prefill server is pinned to one core and the decode server to another (the merged server may
use all). With ``answer_chars`` (``--answer-chars N``) the servers end every answer after at
most N characters with ``finish_reason: "stop"``, as a model that has finished its answer does
(a default grammar of at most N characters; llama.cpp then samples the end of the turn): the
tiny model never stops on its own, and coding clients (Claude Code, Codex) take an answer cut
off by a token limit for a failed turn. Every process gets a pidfile ``<state>/lab/<role>.pid``
(JSON: pid, start time in clock ticks since boot, port, URL, the settings it was started
with). Then kvswitch's config gets (or has updated) a ``lab`` profile, made active only when
no profile is active. A ``lab`` profile is the lab's when its provider is ``lab``; one the user
made (any other provider) is never touched: ``up`` refuses before it starts anything. The lab's
folders are 0700, its pidfiles and logs 0600.

``down`` stops exactly the processes in those pidfiles. A pid is trusted only when
``/proc/<pid>`` shows the recorded start time and a command line naming ``kvswitch.lab``: a
stale pidfile (the process is gone, or its pid now belongs to another process) is reported,
never obeyed. Then the slot files and the pidfiles are removed.

The lab is a learning and testing aid, not a production backend.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch import procs
from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.models import Profile

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_PORT",
    "KEY_REFERENCE",
    "MAX_ANSWER_CHARS",
    "PROFILE",
    "ROLES",
    "DownResult",
    "LabError",
    "LabProcess",
    "LabStatus",
    "LabUnavailableError",
    "UpResult",
    "answer_grammar",
    "down",
    "lab_dir",
    "model_alias",
    "require_lab",
    "slot_dir",
    "status",
    "up",
]

PROFILE = "lab"
ROLES = ("router", "merged", "prefill", "decode")
SERVERS = ("merged", "prefill", "decode")
DEFAULT_PORT = 18080
DEFAULT_CHUNK_SIZE = 512
KEY_REFERENCE = "env:KVSWITCH_LAB_KEY"
CTX_PER_SLOT = 4096
SLOTS = 4
MAX_ANSWER_CHARS = 2000
"""The most ``answer_chars`` may be: llama.cpp drops a grammar that repeats more often."""
MARK = "kvswitch.lab"
"""Text every lab process's command line holds (``python -m kvswitch.lab.llama|router``)."""

INSTALL_HINT = "pip install 'kvswitch[lab]'"

_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Processes this interpreter started (so that ``down`` in the same process can reap them)."""


class LabError(KvswitchError):
    """The lab cannot do what was asked (the message says why and what to do)."""


class LabUnavailableError(LabError):
    """The ``lab`` extra is not installed."""


# -- where things are ------------------------------------------------------------------------------
def lab_dir() -> Path:
    """``<state>/lab``: the model, pidfiles, logs and the slot-file directory."""
    from kvswitch import paths

    return paths.dirs().state / "lab"


def slot_dir() -> Path:
    """Where the split pair's slot files go (``--slot-save-path`` of both)."""
    return lab_dir() / "slots"


def answer_grammar(chars: int) -> str:
    """The GBNF grammar that ends an answer after at most ``chars`` characters (at least one)."""
    return f"root ::= [^\\x00]{{1,{chars}}}"


def model_alias(preset: str) -> str:
    """The model name the lab's servers report, e.g. ``kvswitch-lab-tiny``."""
    return f"kvswitch-lab-{preset}"


def require_lab() -> None:
    """Raise :class:`LabUnavailableError` unless the ``lab`` extra's packages are installed."""
    needed = ("xllamacpp", "gguf", "numpy", "aiohttp")
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise LabUnavailableError(
            tr("the lab needs the 'lab' extra ({missing} not installed): {install}").format(
                missing=", ".join(missing), install=INSTALL_HINT
            )
        )


# -- what is running ---------------------------------------------------------------------------------
@dataclass
class LabProcess:
    """One process a pidfile names, and what ``/proc`` says about it."""

    role: str
    pid: int | None
    state: str  # "running" | "gone" | "stale"
    reason: str | None = None
    port: int | None = None
    url: str | None = None
    start_time: int | None = None
    healthy: bool | None = None
    cpus: list[int] | None = None
    pidfile: Path | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "pid": self.pid,
            "state": self.state,
            "reason": self.reason,
            "port": self.port,
            "url": self.url,
            "healthy": self.healthy,
            "cpus": self.cpus,
            "pidfile": str(self.pidfile) if self.pidfile else None,
        }


@dataclass
class LabStatus:
    """The lab's processes (one per pidfile found) and its URLs."""

    processes: list[LabProcess]
    directory: Path
    preset: str | None = None
    chunk_size: int | None = None
    port: int | None = None
    answer_chars: int = 0
    """Answers end after at most this many characters (0: they run to ``max_tokens``)."""

    @property
    def running(self) -> bool:
        """All four processes run (their identity checked)."""
        states = {p.role: p.state for p in self.processes}
        return all(states.get(role) == "running" for role in ROLES)

    @property
    def healthy(self) -> bool:
        return self.running and all(p.healthy for p in self.processes)

    @property
    def empty(self) -> bool:
        return not self.processes

    def urls(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.port is not None:
            root = f"http://127.0.0.1:{self.port}"
            out.update(
                {
                    "base_url": f"{root}/v1",
                    "merged": f"{root}/merged/v1",
                    "split": f"{root}/split/v1",
                    "metrics": f"{root}/metrics",
                    "handoffs": f"{root}/lab/handoffs",
                }
            )
        for p in self.processes:
            if p.role in SERVERS and p.url:
                out[f"{p.role}_server"] = p.url
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "healthy": self.healthy,
            "directory": str(self.directory),
            "preset": self.preset,
            "chunk_size": self.chunk_size,
            "port": self.port,
            "answer_chars": self.answer_chars,
            "urls": self.urls(),
            "processes": [p.as_dict() for p in self.processes],
        }


def status(*, check_health: bool = True) -> LabStatus:
    """What the pidfiles say and whether those processes really run (and answer ``/health``)."""
    records = _read_pidfiles()
    processes = []
    for role in ROLES:
        if role not in records:
            continue
        rec = records[role]
        proc = _identify(role, rec)
        if proc.state == "running" and check_health and proc.url:
            proc.healthy = _healthy(proc.url)
        processes.append(proc)
    router = records.get("router", {})
    return LabStatus(
        processes,
        lab_dir(),
        preset=router.get("preset"),
        chunk_size=router.get("chunk_size"),
        port=router.get("port"),
        answer_chars=_whole(router.get("answer_chars")),
    )


def _whole(value: Any) -> int:
    """A pidfile's count, 0 where it holds none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# -- up ------------------------------------------------------------------------------------------------
@dataclass
class UpResult:
    """What ``up`` did (``already_up``: nothing)."""

    already_up: bool
    status: LabStatus
    model: Path | None = None
    model_generated: bool = False
    profile: str | None = None  # "added" | "updated" | "unchanged"
    profile_active: bool = False
    activated: bool = False
    profile_error: str | None = None
    cleared: list[LabProcess] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def up(
    port: int = DEFAULT_PORT,
    preset: str = "tiny",
    chunk_size: int | None = None,
    threads: int = 1,
    *,
    answer_chars: int | None = None,
    startup_timeout: float = 60.0,
) -> UpResult:
    """Start the lab (see the module's docstring); a lab already up is reported, not touched.

    ``chunk_size``: the merged server's ``n_batch = n_ubatch``; default the ``lab`` profile's
    ``merged.chunk_size``, else 512. ``answer_chars``: every answer ends (``stop``) after at
    most this many characters, 1 to :data:`MAX_ANSWER_CHARS`; ``None`` or 0: answers run until
    the request's ``max_tokens`` or a full slot."""
    from kvswitch.lab.model import PRESETS

    if preset not in PRESETS:
        raise LabError(
            tr("unknown preset {preset} (known: {known})").format(preset=repr(preset), known=", ".join(sorted(PRESETS)))
        )
    if not 0 < port < 65536:
        raise LabError(tr("port {port} is not a TCP port").format(port=port))
    if threads < 1:
        raise LabError(tr("{option} must be at least 1").format(option="--threads"))
    if chunk_size is not None and chunk_size < 1:
        raise LabError(tr("{option} must be at least 1").format(option="--chunk-size"))
    if answer_chars is not None and not 0 <= answer_chars <= MAX_ANSWER_CHARS:
        raise LabError(
            tr("--answer-chars must be 0 (answers run to max_tokens) to {most}").format(most=MAX_ANSWER_CHARS)
        )
    current = status()
    if current.running:
        result = UpResult(True, current)
        wanted = {"port": port, "preset": preset, "chunk size": chunk_size, "answer chars": answer_chars}
        have = {
            "port": current.port,
            "preset": current.preset,
            "chunk size": current.chunk_size,
            "answer chars": current.answer_chars,
        }
        differ = [k for k, v in wanted.items() if v is not None and v != have[k]]
        if differ:
            result.notes.append(
                tr("the running lab has {settings}; run kvswitch lab down first to change it").format(
                    settings=_listed([_setting(k, have[k]) for k in differ])
                )
            )
        return result
    alive = [p for p in current.processes if p.state == "running"]
    if alive:
        names = describe(alive)
        missing = ", ".join(r for r in ROLES if r not in {p.role for p in alive})
        raise LabError(
            tr("the lab is partly up: {running} run, {missing} do not; run kvswitch lab down first").format(
                running=names, missing=missing
            )
        )
    require_lab()
    cleared = list(current.processes)  # pidfiles of processes that are gone or not ours
    for p in cleared:
        if p.pidfile is not None:
            with contextlib.suppress(FileNotFoundError):
                p.pidfile.unlink()
    profile = _lab_profile()
    if profile is not None and profile.provider != PROFILE:  # the user's own: never touched
        raise LabError(_foreign_profile(profile.provider))
    own_chunk = profile.merged.chunk_size if profile is not None else None
    chunk = chunk_size or own_chunk or DEFAULT_CHUNK_SIZE
    answers = answer_chars or 0
    _check_port_free(port)

    from kvswitch.io import _private_dir

    _private_dir(slot_dir())  # 0700, and so is every missing folder above it (state/, lab/)
    _remove_slot_files()
    model, generated = _ensure_model(preset)
    pins = _pins(threads)
    started: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        urls: dict[str, str] = {}
        for role in SERVERS:
            proc, url = _start_server(role, model, preset, chunk, threads, pins.get(role), startup_timeout, answers)
            started.append((role, proc))
            urls[role] = url
            _write_pidfile(role, proc.pid, url=url, preset=preset, chunk_size=chunk, answer_chars=answers)
        proc = _start_router(port, urls, startup_timeout)
        started.append(("router", proc))
        _write_pidfile(
            "router",
            proc.pid,
            url=f"http://127.0.0.1:{port}",
            preset=preset,
            chunk_size=chunk,
            port=port,
            answer_chars=answers,
        )
    except BaseException:
        for _role, proc in reversed(started):
            _stop_child(proc)
        for role in ROLES:
            with contextlib.suppress(FileNotFoundError):
                _pidfile(role).unlink()
        raise
    result = UpResult(False, status(), model=model, model_generated=generated, cleared=cleared)
    try:
        result.profile, result.profile_active, result.activated = _register_profile(
            port, model_alias(preset), chunk, urls["prefill"], urls["decode"]
        )
    except KvswitchError as exc:
        result.profile_error = str(exc)
    if len(pins) < 2:
        result.notes.append(tr("fewer than 2 CPUs available: the prefill and decode servers share them"))
    return result


def _setting(name: str, value: Any) -> str:
    """``port 18080``, ``chunk size 512`` … in the user's language."""
    if name == "port":
        return tr("port {lab_port}").format(lab_port=value)
    if name == "preset":
        return tr("preset {lab_preset}").format(lab_preset=value)
    if name == "chunk size":
        return tr("chunk size {lab_chunk_size}").format(lab_chunk_size=value)
    return tr("answer chars {lab_answer_chars}").format(lab_answer_chars=value)


def _listed(items: list[str]) -> str:
    """``a, b, c`` with the user's language's separator."""
    text = items[0]
    for item in items[1:]:
        text = tr("{earlier}, {next_item}").format(earlier=text, next_item=item)
    return text


def _lab_profile() -> Profile | None:
    """The config's ``lab`` profile, read once before anything starts. It is the lab's when its
    provider is ``lab`` (what ``lab up`` and ``kvswitch init --preset lab`` write); any other is
    the user's own, and ``up`` refuses."""
    from kvswitch.config import config_file, read_config

    if not config_file().exists():
        return None
    try:
        return read_config().model.profiles.get(PROFILE)
    except KvswitchError:  # a config that does not load is reported when the profile is registered
        return None


def _foreign_profile(provider: str) -> str:
    return tr(
        "a profile named '{name}' exists that the lab did not make (its provider is {provider}, the "
        "lab's is '{name}'); the lab leaves it alone and starts nothing. Rename it (kvswitch profile "
        'rename {name} NEW-NAME) and run kvswitch lab up again, or set provider = "{name}" in it to '
        "let the lab keep its URLs, model and key reference up to date"
    ).format(name=PROFILE, provider=repr(provider))


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise LabError(
                tr("port {port} on 127.0.0.1 is in use ({reason}); choose another with --port").format(
                    port=port, reason=exc.strerror
                )
            ) from None


def _ensure_model(preset: str) -> tuple[Path, bool]:
    from kvswitch.lab.model import make_model

    path = lab_dir() / f"{preset}.gguf"
    if path.is_file():
        return path, False
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        make_model(partial, preset=preset)
        partial.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    return path, True


def _pins(threads: int) -> dict[str, list[int]]:
    """CPUs per role: prefill and decode on different cores where there are two or more."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return {}
    if len(cpus) < 2:
        return {}
    k = max(1, min(threads, len(cpus) // 2))
    return {"prefill": cpus[:k], "decode": cpus[k : 2 * k], "merged": cpus}


def _start_server(
    role: str,
    model: Path,
    preset: str,
    chunk: int,
    threads: int,
    cpus: list[int] | None,
    timeout: float,
    answer_chars: int = 0,
) -> tuple[subprocess.Popen[bytes], str]:
    from kvswitch.lab.llama import LlamaServer, LlamaServerError

    batch = chunk if role == "merged" else max(512, chunk)
    server = LlamaServer(
        model,
        port=0,
        ctx_size=CTX_PER_SLOT * SLOTS,
        n_batch=batch,
        n_ubatch=batch,
        parallel=SLOTS,
        threads=threads,
        metrics=True,
        slot_save_path=slot_dir() if role != "merged" else None,
        alias=model_alias(preset),
        log_path=lab_dir() / f"{role}.log",
        startup_timeout=timeout,
        cpus=cpus,
        start_new_session=True,
        grammar=answer_grammar(answer_chars) if answer_chars else None,
    )
    try:
        server.start()
    except LlamaServerError as exc:
        if "libgomp" in str(exc):
            text = tr(
                "the {role} server did not start (install the system's OpenMP runtime: "
                "apt-get install libgomp1): {error}"
            )
        else:
            text = tr("the {role} server did not start: {error}")
        raise LabError(text.format(role=role, error=exc)) from None
    url = server.url
    proc = server.detach()
    _CHILDREN[proc.pid] = proc
    return proc, url


def _start_router(port: int, urls: dict[str, str], timeout: float) -> subprocess.Popen[bytes]:
    log = lab_dir() / "router.log"
    cmd = [
        sys.executable,
        "-m",
        "kvswitch.lab.router",
        "--port",
        str(port),
        "--merged",
        urls["merged"],
        "--prefill",
        urls["prefill"],
        "--decode",
        urls["decode"],
        "--slot-dir",
        str(slot_dir()),
    ]
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        os.close(fd)
    _CHILDREN[proc.pid] = proc
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(
                tr("the router exited (status {status}) while starting").format(status=proc.returncode) + _tail(log)
            )
        if _healthy(url, timeout=2.0):
            return proc
        time.sleep(0.05)
    _stop_child(proc)
    raise LabError(
        tr("the router at {url} was not healthy within {seconds} s").format(url=url, seconds=f"{timeout:g}")
        + _tail(log)
    )


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return "\n" + tr("--- end of {name} ---").format(name=path.name) + f"\n{text}" if text else ""


def _stop_child(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    from kvswitch.lab.llama import terminate

    terminate(proc, timeout)
    _CHILDREN.pop(proc.pid, None)


def _register_profile(port: int, alias: str, chunk: int, prefill: str, decode: str) -> tuple[str, bool, bool]:
    """Add or update the ``lab`` profile; returns (what happened, whether it is the active
    profile, whether ``up`` made it so — only when no profile was active)."""
    from kvswitch.config import (
        config_file,
        edit_config,
        new_config_text,
        profile_table,
        read_config,
    )
    from kvswitch.edits import Set
    from kvswitch.io import read_optional, write_private
    from kvswitch.models import Profile

    root = f"http://127.0.0.1:{port}"
    owned: dict[tuple[str, ...], Any] = {
        ("base_url",): f"{root}/v1",
        ("url_convention",): "includes-v1",
        ("model",): alias,
        ("key",): KEY_REFERENCE,
        ("merged", "chunk_size"): chunk,
        ("split", "prefill_base_url"): f"{prefill}/v1",
        ("split", "decode_base_url"): f"{decode}/v1",
        ("merged", "url"): f"{root}/merged/v1",
        ("split", "url"): f"{root}/split/v1",
    }
    path = config_file()
    if read_optional(path) is None:
        table: dict[str, Any] = {"provider": PROFILE}
        for key_path, value in owned.items():
            target = table
            for part in key_path[:-1]:
                target = target.setdefault(part, {})
            target[key_path[-1]] = value
        profile = Profile.model_validate(table)
        write_private(path, new_config_text(PROFILE, profile, [], "merged").encode("utf-8"))
        return "added", True, True
    config = read_config(path)
    edits: list[Any] = []
    existing = config.model.profiles.get(PROFILE)
    if existing is None:
        data = {"provider": PROFILE, "base_url": owned[("base_url",)], "model": alias}
        profile = Profile.model_validate(data)
        table = profile_table(profile)
        for key_path, value in owned.items():
            target = table
            for part in key_path[:-1]:
                target = target.setdefault(part, {})
            target[key_path[-1]] = value
        edits.append(Set(("profiles", PROFILE), table))
        action = "added"
    elif existing.provider != PROFILE:  # the user's own (made since up's first look): never touched
        raise LabError(_foreign_profile(existing.provider))
    else:
        current = existing.model_dump(mode="python")
        for key_path, value in owned.items():
            have: Any = current
            for part in key_path:
                have = have.get(part) if isinstance(have, dict) else None
            if have != value:
                edits.append(Set(("profiles", PROFILE, *key_path), value))
        action = "updated" if edits else "unchanged"
    activated = config.model.active_profile is None
    if activated:
        edits.append(Set(("active_profile",), PROFILE))
    if edits:
        config = edit_config(edits, config)
    return action, config.model.active_profile == PROFILE, activated


# -- down ----------------------------------------------------------------------------------------------
@dataclass
class DownResult:
    """What ``down`` did."""

    was_up: bool
    stopped: list[LabProcess] = field(default_factory=list)
    killed: list[LabProcess] = field(default_factory=list)  # needed SIGKILL
    gone: list[LabProcess] = field(default_factory=list)  # pidfile of a process that had ended
    stale: list[LabProcess] = field(default_factory=list)  # pid now someone else's: not signalled
    failed: list[LabProcess] = field(default_factory=list)  # could not be stopped
    slot_files_removed: int = 0


def down(timeout: float = 10.0) -> DownResult:
    """Stop exactly the processes in the lab's pidfiles (identity checked), delete the slot
    files and the pidfiles."""
    status_now = status(check_health=False)
    result = DownResult(was_up=any(p.state == "running" for p in status_now.processes))
    targets: list[tuple[LabProcess, dict[str, Any]]] = []
    records = _read_pidfiles()
    for proc in status_now.processes:  # router first: no new requests reach the servers
        if proc.state == "stale":
            result.stale.append(proc)
        elif proc.state == "gone":
            _reap(proc.pid)
            result.gone.append(proc)
        else:
            assert proc.pid is not None
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                result.gone.append(proc)
                continue
            except PermissionError:
                proc.reason = tr("not allowed to signal it")
                result.failed.append(proc)
                continue
            targets.append((proc, records[proc.role]))
    deadline = time.monotonic() + timeout
    waiting = list(targets)
    while waiting and time.monotonic() < deadline:
        waiting = [(p, rec) for p, rec in waiting if not _ended(p.pid, rec)]
        if waiting:
            time.sleep(0.05)
    late = {id(p) for p, _ in waiting}
    for proc, rec in targets:
        if id(proc) not in late:
            result.stopped.append(proc)
            continue
        if _identify(proc.role, rec).state == "running":  # still ours: SIGKILL
            with contextlib.suppress(ProcessLookupError):
                assert proc.pid is not None
                os.kill(proc.pid, signal.SIGKILL)
            end = time.monotonic() + 5
            while not _ended(proc.pid, rec) and time.monotonic() < end:
                time.sleep(0.05)
        (result.killed if _ended(proc.pid, rec) else result.failed).append(proc)
    result.slot_files_removed = _remove_slot_files()
    for proc in status_now.processes:
        if proc in result.failed:
            continue
        if proc.pidfile is not None:
            with contextlib.suppress(FileNotFoundError):
                proc.pidfile.unlink()
    for path in _stray_pidfiles():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return result


def _remove_slot_files() -> int:
    directory = slot_dir()
    removed = 0
    if directory.is_dir():
        for path in directory.iterdir():
            if path.is_file() or path.is_symlink():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
    return removed


# -- pidfiles and /proc ----------------------------------------------------------------------------------
def _pidfile(role: str) -> Path:
    return lab_dir() / f"{role}.pid"


def _write_pidfile(role: str, pid: int, **info: Any) -> None:
    from kvswitch.io import write_private

    record = {
        "role": role,
        "pid": pid,
        "start_time": procs.start_time(pid),
        "cmdline_mark": MARK,
        "written": time.time(),
        **info,
    }
    write_private(_pidfile(role), (json.dumps(record, indent=1) + "\n").encode())


def _read_pidfiles() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        path = _pidfile(role)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            out[role] = {
                "_error": tr("cannot read the pidfile {path}: {reason}").format(path=path, reason=exc.strerror)
            }
            continue
        try:
            rec = json.loads(text)
            if not isinstance(rec, dict) or not isinstance(rec.get("pid"), int):
                raise ValueError
        except ValueError:
            out[role] = {"_error": tr("{path} holds no lab pidfile record").format(path=path)}
            continue
        out[role] = rec
    return out


def _stray_pidfiles() -> list[Path]:
    """Leftover ``*.pid`` files of roles this version does not know."""
    directory = lab_dir()
    if not directory.is_dir():
        return []
    return [p for p in directory.glob("*.pid") if p.stem not in ROLES]


def _identify(role: str, rec: dict[str, Any]) -> LabProcess:
    path = _pidfile(role)
    if "_error" in rec:
        return LabProcess(role, None, "stale", rec["_error"], pidfile=path)
    pid = int(rec["pid"])
    proc = LabProcess(
        role, pid, "running", port=rec.get("port"), url=rec.get("url"), start_time=rec.get("start_time"), pidfile=path
    )
    if proc.port is None and proc.url:
        with contextlib.suppress(ValueError):
            proc.port = int(str(proc.url).rsplit(":", 1)[1])
    state, reason = _check(pid, rec.get("start_time"))
    proc.state, proc.reason = state, reason
    if state == "running":
        with contextlib.suppress(AttributeError, OSError):
            proc.cpus = sorted(os.sched_getaffinity(pid))
    return proc


def _check(pid: int, start_time: Any) -> tuple[str, str | None]:
    """("running", None) when ``pid`` is the lab process that was recorded; ("gone", why) when
    no such process runs; ("stale", why) when the pid belongs to another process."""
    if pid <= 0:
        return "stale", tr("pid {pid} is not a process id").format(pid=pid)
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():
        return "stale", tr("no /proc here: the pid cannot be verified, so it is not signalled")
    stat = procs.stat(pid)
    if stat is None:
        return "gone", tr("no process {pid}").format(pid=pid)
    state, started = stat
    if state in ("Z", "X"):
        return "gone", tr("process {pid} has exited").format(pid=pid)
    if not isinstance(start_time, int) or started != start_time:
        return "stale", tr(
            "pid {pid} now belongs to another process (its start time differs from the recorded one)"
        ).format(pid=pid)
    try:
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone", tr("no process {pid}").format(pid=pid)
    if MARK not in cmdline:
        return "stale", tr("pid {pid} is not a kvswitch lab process (its command line: {cmdline})").format(
            pid=pid, cmdline=repr(cmdline[:80])
        )
    return "running", None


def _reap(pid: int | None) -> None:
    """Collect an ended process that this interpreter started (so it leaves no zombie
    behind); anyone else's child is left to its parent."""
    child = _CHILDREN.get(pid) if pid is not None else None
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(1.0)  # only called once it has ended (or is a zombie)
            _CHILDREN.pop(child.pid, None)


def _ended(pid: int | None, rec: dict[str, Any]) -> bool:
    if pid is None:
        return True
    state, _ = _check(pid, rec.get("start_time"))
    if state == "running":
        return False
    _reap(pid)
    return True


def _healthy(url: str, timeout: float = 2.0) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        return response.status == 200
    except OSError:
        return False
    finally:
        conn.close()


def describe(processes: Sequence[LabProcess]) -> str:
    """``router (pid 12), merged (pid 13)`` for messages."""
    return ", ".join(f"{p.role} (pid {p.pid})" for p in processes)
