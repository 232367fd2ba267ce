"""The gateway as a process: served in the foreground (``kvswitch gateway run``) or started in
the background (``--detach``).

:func:`serve` takes the gateway lock for its whole life (one gateway per KVSWITCH_HOME),
binds the HTTP port and the control socket, writes ``gateway.json``, and on SIGTERM or SIGINT
(or a ``stop`` over the control socket) stops accepting, lets in-flight streams finish for up to
the drain time (10 s) and removes its files. :func:`detach` starts ``python -m kvswitch gateway
run …`` in a session of its own, its output appended to ``<logs>/gateway.log``, and returns once
it answers on its control socket.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch import procs
from kvswitch.gateway import control
from kvswitch.gateway.control import CHILDREN, GatewayInfo
from kvswitch.gateway.errors import GatewayError
from kvswitch.i18n import language, tr

if TYPE_CHECKING:
    from kvswitch.gateway.settings import GatewaySettings

__all__ = ["CHILDREN", "detach", "log_path", "serve"]

START_TIMEOUT = 30.0
"""Seconds a detached gateway has to answer on its control socket."""
LOG_LIMIT = 8 * 1024 * 1024
"""Bytes past which a detached start moves gateway.log to gateway.log.1."""


def log_path() -> Path:
    """``<logs>/gateway.log``: a detached gateway's output."""
    from kvswitch import paths

    return paths.dirs().logs / "gateway.log"


def _already(info: GatewayInfo | None, record: control.Record | None) -> GatewayError:
    if info is not None:
        return GatewayError(
            tr(
                "a gateway already runs for this kvswitch home: {url} (pid {pid}); kvswitch gateway stop stops it"
            ).format(url=info.url, pid=info.pid)
        )
    if record is not None:
        return GatewayError(
            tr(
                "a gateway already runs for this kvswitch home: {url} (pid {pid}), though it does not "
                "answer yet; kvswitch gateway stop stops it"
            ).format(url=record.url, pid=record.pid)
        )
    return GatewayError(tr("a gateway is starting for this kvswitch home; kvswitch gateway status shows it"))


def serve(
    settings_fn: Callable[[], GatewaySettings], *, on_ready: Callable[[GatewayInfo], None], reloadable: bool = True
) -> None:
    """Serve a gateway in this process until SIGTERM, SIGINT or a ``stop`` (see the module).

    ``settings_fn`` builds the settings (called again on each ``reload`` when ``reloadable``);
    ``on_ready`` gets the gateway's description once it answers. Refuses (GatewayError) when a
    gateway already runs for this KVSWITCH_HOME or the port is taken."""

    fd = control.hold_lock()
    if fd is None:
        raise _already(_running_quietly(), control.read_record())
    try:
        control.remove_files(control.read_record())  # a killed gateway's leftovers (we hold the lock)
        settings = settings_fn()
        from kvswitch.gateway.server import run_loop

        run_loop(_serve(settings, settings_fn if reloadable else None, on_ready))
    finally:
        os.close(fd)  # releases the lock, after the files are gone


def _running_quietly() -> GatewayInfo | None:
    try:
        return control.running()
    except GatewayError:
        return None


async def _serve(
    settings: GatewaySettings, reload: Callable[[], GatewaySettings] | None, on_ready: Callable[[GatewayInfo], None]
) -> None:
    import asyncio

    from kvswitch.gateway.server import Gateway

    gateway = Gateway(settings)
    try:
        await gateway.start()
    except (OSError, GatewayError) as exc:
        cause = exc if isinstance(exc, OSError) else exc.__cause__
        if not isinstance(cause, OSError):
            raise
        raise _bind_error(settings, cause) from None
    path = control.socket_path()
    ctl = control.ControlServer(gateway, path, reload)
    loop = asyncio.get_running_loop()
    try:
        await ctl.start()
        started = time.time()
        control.write_record(
            control.Record(
                pid=os.getpid(),
                start_time=procs.start_time(os.getpid()),
                url=gateway.url,
                port=int(gateway.url.rsplit(":", 1)[1]),
                socket=path,
                profile=settings.profile,
                started=started,
            )
        )
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, gateway.request_stop)
        on_ready(GatewayInfo.from_status(gateway.status()))
        await gateway.stopping.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await ctl.close()
        try:
            await gateway.close()
        finally:
            control.remove_files(control.read_record())


def _bind_error(settings: GatewaySettings, exc: OSError) -> GatewayError:
    where = {"port": settings.port, "host": settings.listen}
    if exc.errno == errno.EADDRINUSE:
        return GatewayError(
            tr("port {port} on {host} is in use; choose another with --port (or stop what holds it)").format(**where)
        )
    if exc.errno == errno.EACCES:
        return GatewayError(
            tr("not allowed to listen on port {port} on {host}; choose a port above 1023 with --port").format(**where)
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return GatewayError(tr("{host} is not an address of this machine (--listen)").format(host=settings.listen))
    return GatewayError(
        tr("cannot listen on port {port} on {host}: {reason}").format(**where, reason=exc.strerror or exc)
    )


def detach(argv: Sequence[str], *, timeout: float = START_TIMEOUT) -> GatewayInfo:
    """Start ``python -m kvswitch gateway run ARGV`` in the background (a new session, output
    appended to :func:`log_path`) and return once it answers on its control socket."""
    from kvswitch.io import _private_dir

    info = control.running()
    if info is not None:
        raise _already(info, None)
    log = log_path()
    _private_dir(log.parent)
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_LIMIT:  # one older log kept, so it never grows without bound
            log.replace(log.with_name(log.name + ".1"))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    start = os.lseek(fd, 0, os.SEEK_END)
    cmd = [sys.executable, "-m", "kvswitch", "gateway", "run", *argv]
    try:
        # the gateway's messages (its log, its control answers) in the language of the command that started it
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "KVSWITCH_LANG": language()}
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, start_new_session=True, env=env, cwd="/"
        )
    finally:
        os.close(fd)
    CHILDREN[proc.pid] = proc
    deadline = time.monotonic() + timeout
    while True:
        code = proc.poll()
        if code is not None:
            CHILDREN.pop(proc.pid, None)
            raise GatewayError(
                tr("the gateway exited (status {status}) while starting").format(status=code) + _tail(log, start)
            )
        with contextlib.suppress(GatewayError):
            info = control.running()
            if info is not None and info.pid == proc.pid:
                return info
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
    CHILDREN.pop(proc.pid, None)
    raise GatewayError(
        tr("the gateway did not answer within {seconds} s").format(seconds=f"{timeout:g}") + _tail(log, start)
    )


def _tail(path: Path, start: int, limit: int = 2000) -> str:
    """What the child wrote to its log (from ``start``), for an error message."""
    try:
        with path.open("rb") as f:
            f.seek(start)
            text = f.read()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if text:
        return tr("; its log ({path}) says:").format(path=path) + f"\n{text}"
    return tr("; see {path}").format(path=path)
