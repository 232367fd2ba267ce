"""Nudging a client to reload after kvswitch wrote its file (D-8).

Four ways, chosen per client: ``none`` (tell the user to restart it: S-35), ``touch`` (bump a
file's mtime, for clients that watch it), ``signal`` (send a signal to the pid in a pidfile,
after checking that pid is still the process that wrote it) and ``command`` (run an argv, no
shell, with a timeout). Every outcome is returned as data; nothing is raised for a client
that cannot be nudged.
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch.i18n import clauses, tr
from kvswitch.records import record

if TYPE_CHECKING:
    from kvswitch.models import ClientEntry

__all__ = ["NudgeResult", "nudge"]

_OUTPUT_LIMIT = 2000


@record(slots=True)
class NudgeResult:
    """What a nudge did: ``ok`` False when it could not (the message says why)."""

    client: Path
    kind: str
    ok: bool
    message: str
    restart_needed: bool = False


def nudge(entry: ClientEntry, path: Path) -> NudgeResult:
    """Nudge the client of ``entry`` (whose file is ``path``) by its registered method."""
    from kvswitch.kinds import get_kind

    n = entry.nudge
    kind = get_kind(entry.kind)
    who = entry.name or kind.product
    if n.kind == "none":  # most clients read their config only at start-up (S-35)
        return NudgeResult(path, "none", True, kind.apply_hint(entry.name), kind.takes_effect != "now")
    if n.kind == "touch":
        target = Path(n.path).expanduser() if n.path else path
        try:
            os.utime(target)
        except OSError as exc:
            return NudgeResult(
                path, "touch", False, tr("cannot touch {path}: {error}").format(path=target, error=exc.strerror)
            )
        return NudgeResult(path, "touch", True, tr("touched {path}").format(path=target))
    if n.kind == "signal":
        return _signal(path, n.pidfile, n.signal, n.process, who)
    return _command(path, n.argv, n.timeout_seconds, who)


def _signal(path: Path, pidfile: str | None, name: str, process: str | None, who: str) -> NudgeResult:
    if not pidfile:
        return NudgeResult(
            path, "signal", False, tr("no pidfile set for {client}; restart it to apply").format(client=who), True
        )
    pf = Path(pidfile).expanduser()
    try:
        text = pf.read_text(encoding="ascii", errors="replace").strip()
        written = pf.stat().st_mtime
    except OSError as exc:
        return NudgeResult(
            path,
            "signal",
            False,
            tr("pidfile {pidfile}: {error}; restart {client} to apply").format(
                pidfile=pf, error=exc.strerror, client=who
            ),
            True,
        )
    try:
        pid = int(text.split()[0])
    except (ValueError, IndexError):
        return NudgeResult(
            path,
            "signal",
            False,
            tr("pidfile {pidfile} holds no pid; restart {client} to apply").format(pidfile=pf, client=who),
            True,
        )
    try:
        sig = getattr(signals, "SIG" + name.upper().removeprefix("SIG"))
    except AttributeError:
        return NudgeResult(path, "signal", False, tr("unknown signal {name}").format(name=repr(name)))
    stale = _stale(pid, written, process)
    if stale:
        return NudgeResult(
            path,
            "signal",
            False,
            tr("stale pidfile {pidfile}: {reason}; not signalled; restart {client} to apply").format(
                pidfile=pf, reason=stale, client=who
            ),
            True,
        )
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return NudgeResult(
            path,
            "signal",
            False,
            tr("process {pid} is gone (stale pidfile {pidfile})").format(pid=pid, pidfile=pf),
            True,
        )
    except PermissionError:
        return NudgeResult(path, "signal", False, tr("not allowed to signal process {pid}").format(pid=pid))
    return NudgeResult(
        path,
        "signal",
        True,
        tr("sent {signal} to {client} (pid {pid})").format(
            signal="SIG" + name.upper().removeprefix("SIG"), client=who, pid=pid
        ),
    )


def _stale(pid: int, pidfile_written: float, process: str | None) -> str | None:
    """Why ``pid`` is not the process that wrote the pidfile, or None when it is (Linux /proc)."""
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return tr("no process {pid}").format(pid=pid)
    try:
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        started = time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return None  # not Linux /proc: trust the pid
    if started > pidfile_written + 1.0:
        return tr("process {pid} started after the pidfile was written (its pid was reused)").format(pid=pid)
    if process and process not in cmdline:
        return tr("process {pid} is not {process} (its command line: {cmdline})").format(
            pid=pid, process=repr(process), cmdline=repr(cmdline[:80])
        )
    return None


def _command(path: Path, argv: list[str], timeout: float, who: str) -> NudgeResult:
    if not argv:
        return NudgeResult(
            path, "command", False, tr("no command set for {client}; restart it to apply").format(client=who), True
        )
    import subprocess  # here: only the "command" method runs one

    try:
        # its own process group, so a timeout kills what it started too
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        return NudgeResult(path, "command", False, tr("command not found: {command}").format(command=argv[0]))
    except OSError as exc:
        return NudgeResult(
            path, "command", False, tr("cannot run {command}: {error}").format(command=argv[0], error=exc.strerror)
        )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signals.SIGKILL)
        out, err = proc.communicate()
        return NudgeResult(
            path,
            "command",
            False,
            tr("{command} did not finish within {seconds} s (killed)").format(command=argv[0], seconds=f"{timeout:g}")
            + _tail(out, err),
        )
    ok = proc.returncode == 0
    return NudgeResult(
        path,
        "command",
        ok,
        tr("{command} exited {code}").format(command=argv[0], code=proc.returncode) + _tail(out, err),
    )


def _tail(out: str | bytes | None, err: str | bytes | None) -> str:
    parts = []
    for label, text in (("stdout", out), ("stderr", err)):
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        if text and text.strip():
            parts.append(f"{label}: {text.strip()[-_OUTPUT_LIMIT:]}")
    return clauses(["", *parts]) if parts else ""
