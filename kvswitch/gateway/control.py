"""The gateway's control socket: how ``kvswitch switch``, ``profile use``, ``gateway status|stop``
and the tray talk to a running gateway.

A unix socket, 0600 in a 0700 folder (``<state>/gateway/gateway.sock``; where that path is too
long for a unix socket, a 0700 folder of the user's own under ``$XDG_RUNTIME_DIR`` or the temp
folder, named by a hash of the state folder). A peer whose uid differs from the gateway's is
refused (``SO_PEERCRED``) even if the file modes were loosened. One JSON line each way, a line
of at most 64 KiB: ``{"op":"status"}``, ``{"op":"mode","mode":"split"}``, ``{"op":"reload"}``,
``{"op":"stop"}``; the answer is ``{"ok":true,"status":{…}}`` or ``{"ok":false,"error":"…"}``.

Beside the socket: ``gateway.json`` (pid, its start time, url, port, profile, started, socket),
and ``gateway.lock``, which the serving process holds (``flock``) for its whole life, so that
whether a gateway runs never rests on a pid alone: files left by a gateway that was killed are
stale exactly when nobody holds the lock, and are removed by the next look.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch import procs
from kvswitch.gateway.errors import GatewayError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    import asyncio
    import subprocess

    from kvswitch.gateway.server import Gateway
    from kvswitch.gateway.settings import GatewaySettings

__all__ = [
    "CHILDREN",
    "MAX_LINE",
    "ControlServer",
    "GatewayInfo",
    "Record",
    "clean_stale",
    "hold_lock",
    "lock_path",
    "private_folder",
    "read_record",
    "reload",
    "remove_files",
    "request",
    "running",
    "runtime_dir",
    "socket_path",
    "state_file",
    "stop",
    "tell_mode",
    "write_record",
]

CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Gateways this interpreter started (``process.detach``), reaped here when they end."""

MAX_LINE = 64 * 1024
"""The longest control line either way (bytes, newline included)."""

MARK = "kvswitch"
"""Text a gateway process's command line holds (``kvswitch gateway`` or ``-m kvswitch gateway``)."""

_SUN_PATH_MAX = 107
"""Longest unix socket path Linux takes (``sun_path`` is 108 bytes with its NUL)."""

_MODES = ("merged", "split")
_READ_TIMEOUT = 5.0
"""Seconds a peer has to send its one line."""


# -- where things are ---------------------------------------------------------------------------
def runtime_dir() -> Path:
    """``<state>/gateway``: gateway.json, gateway.lock and (usually) the control socket."""
    from kvswitch import paths

    return paths.dirs().state / "gateway"


def state_file() -> Path:
    """``gateway.json``: what the running gateway recorded about itself."""
    return runtime_dir() / "gateway.json"


def lock_path() -> Path:
    """``gateway.lock``: held by the serving process for as long as it runs."""
    return runtime_dir() / "gateway.lock"


def socket_path() -> Path:
    """Where this KVSWITCH_HOME's control socket lives: in :func:`runtime_dir` unless that path
    is too long for a unix socket, else in a folder named by a hash of the state folder."""
    usual = runtime_dir() / "gateway.sock"
    if len(os.fsencode(usual)) <= _SUN_PATH_MAX:
        return usual
    digest = hashlib.sha256(os.fsencode(runtime_dir())).hexdigest()[:16]
    base = os.environ.get("XDG_RUNTIME_DIR") or ""
    if not (base and Path(base).is_absolute() and Path(base).is_dir()):
        base = tempfile.gettempdir()
    return Path(base) / f"kvswitch-{os.getuid()}-{digest}" / "gateway.sock"


def private_folder(directory: Path) -> None:
    """Make ``directory`` (and missing parents) 0700; refuse one that is a link, not a folder,
    or someone else's (a folder in a shared temp dir could have been made by another user)."""
    from kvswitch.errors import Location
    from kvswitch.io import _private_dir

    _private_dir(directory)
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise GatewayError(
            tr("cannot use the gateway's folder: {reason}").format(reason=exc.strerror), Location(directory)
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise GatewayError(tr("the gateway's folder is not a folder (a link?); remove it"), Location(directory))
    if st.st_uid != os.getuid():
        raise GatewayError(
            tr("the gateway's folder belongs to uid {uid}, not to you; remove it").format(uid=st.st_uid),
            Location(directory),
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        directory.chmod(0o700)


# -- what a running gateway says --------------------------------------------------------------------
@dataclass(frozen=True)
class GatewayInfo:
    """A running gateway, as it describes itself over the control socket."""

    pid: int
    url: str
    mode: str
    profile: str | None = None
    in_flight: int = 0
    started: float | None = None
    upstreams: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    route: str = "mode"
    """Requests that ask for no mode: ``mode`` (the gateway's current one) or ``auto``."""
    status: dict[str, Any] = field(default_factory=dict)
    """Everything the gateway's status holds (JSON-able)."""

    @classmethod
    def from_status(cls, data: dict[str, Any]) -> GatewayInfo:
        upstreams = data.get("upstreams")
        requests = data.get("requests")
        if isinstance(requests, dict) and isinstance(requests.get("by_mode"), dict):
            requests = requests["by_mode"]
        return cls(
            pid=int(data.get("pid") or 0),
            url=str(data.get("url") or ""),
            mode=str(data.get("mode") or ""),
            profile=data.get("profile") if isinstance(data.get("profile"), str) else None,
            in_flight=int(data.get("in_flight") or 0),
            started=float(data["started"]) if isinstance(data.get("started"), int | float) else None,
            upstreams={str(k): str(v) for k, v in upstreams.items()} if isinstance(upstreams, dict) else {},
            requests={str(k): int(v) for k, v in requests.items() if isinstance(v, int | float)}
            if isinstance(requests, dict)
            else {},
            route="auto" if data.get("route") == "auto" else "mode",
            status=data,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.status,
            "pid": self.pid,
            "url": self.url,
            "mode": self.mode,
            "profile": self.profile,
            "in_flight": self.in_flight,
            "started": self.started,
            "upstreams": self.upstreams,
            "requests": self.requests,
            "route": self.route,
        }


@dataclass(frozen=True)
class Record:
    """``gateway.json``: what the serving process wrote about itself when it started."""

    pid: int
    start_time: int | None
    url: str
    port: int
    socket: Path
    profile: str | None = None
    started: float | None = None


def read_record() -> Record | None:
    """``gateway.json``, or ``None`` when it is missing or not a gateway record."""
    try:
        data = json.loads(state_file().read_bytes())
        return Record(
            pid=int(data["pid"]),
            start_time=data.get("start_time"),
            url=str(data["url"]),
            port=int(data["port"]),
            socket=Path(data["socket"]),
            profile=data.get("profile"),
            started=data.get("started"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_record(record: Record) -> None:
    """Write ``gateway.json`` (0600 in the 0700 folder)."""
    from kvswitch.io import write_private

    data = {
        "pid": record.pid,
        "start_time": record.start_time,
        "url": record.url,
        "port": record.port,
        "socket": str(record.socket),
        "profile": record.profile,
        "started": record.started,
    }
    write_private(state_file(), (json.dumps(data, indent=1) + "\n").encode())


# -- the lock: whether a gateway runs ------------------------------------------------------------------
def _open_lock() -> int:
    private_folder(runtime_dir())
    return os.open(lock_path(), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


@contextlib.contextmanager
def _lock_fd() -> Iterator[int]:
    fd = _open_lock()
    try:
        yield fd
    finally:
        os.close(fd)


def hold_lock(wait: float = 1.0) -> int | None:
    """Take the gateway lock for this process's life (the descriptor, to keep open); ``None``
    when another process holds it within ``wait`` seconds (a gateway runs)."""
    import fcntl

    fd = _open_lock()
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.02)


def _nobody_holds_lock() -> bool:
    """Whether no process holds the gateway lock right now (then the files are stale)."""
    import fcntl

    if not runtime_dir().is_dir():
        return True
    with _lock_fd() as fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True


def remove_files(record: Record | None = None) -> list[Path]:
    """Remove ``gateway.json`` and the control socket (call only while no gateway runs, or as the
    gateway itself at its end); returns what was removed."""
    removed = []
    sockets = {socket_path()} | ({record.socket} if record is not None else set())
    for path in (state_file(), *sockets):
        with contextlib.suppress(FileNotFoundError):
            if path != state_file() and not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue  # only ever a socket where the socket was
            path.unlink()
            removed.append(path)
    for path in sockets:
        if path.parent != runtime_dir():
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # the fallback folder, when empty
    return removed


def clean_stale() -> list[Path]:
    """Remove the files of a gateway that no longer runs (nobody holds the lock); the paths."""
    if not _nobody_holds_lock():
        return []
    return remove_files(read_record())


# -- the client side ------------------------------------------------------------------------------------
def request(message: dict[str, Any], *, timeout: float = 10.0) -> dict[str, Any] | None:
    """Send one control line and return the gateway's answer (``status``), or ``None`` when no
    gateway answers (its stale files are removed). An error answer raises :class:`GatewayError`."""
    record = read_record()
    path = record.socket if record is not None else socket_path()
    try:
        reply = _exchange(path, message, timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        clean_stale()
        return None
    except PermissionError:
        raise GatewayError(tr("not allowed to reach the gateway's control socket {path}").format(path=path)) from None
    except TimeoutError:
        raise GatewayError(
            tr("the gateway did not answer on {path} within {seconds} s").format(path=path, seconds=f"{timeout:g}")
        ) from None
    except OSError as exc:
        raise GatewayError(
            tr("cannot talk to the gateway on {path}: {reason}").format(path=path, reason=exc.strerror or exc)
        ) from None
    if not reply.get("ok"):
        if not reply.get("error"):
            raise GatewayError(tr("the gateway refused, giving no reason"))
        raise GatewayError(tr("the gateway refused: {reason}").format(reason=reply["error"]))
    status = reply.get("status")
    return status if isinstance(status, dict) else {}


def _exchange(path: Path, message: dict[str, Any], timeout: float) -> dict[str, Any]:
    line = json.dumps(message).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(os.fspath(path))
        sock.sendall(line)
        data = b""
        while not data.endswith(b"\n") and len(data) <= MAX_LINE:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    try:
        reply = json.loads(data)
    except ValueError:
        raise GatewayError(tr("the gateway's control socket {path} gave no answer").format(path=path)) from None
    if not isinstance(reply, dict):
        raise GatewayError(tr("the gateway's control socket {path} gave no answer").format(path=path))
    return reply


def _info(status: dict[str, Any] | None) -> GatewayInfo | None:
    return None if status is None else GatewayInfo.from_status(status)


def running() -> GatewayInfo | None:
    """The running gateway, or ``None`` (stale files of one that died are removed)."""
    return _info(request({"op": "status"}))


def tell_mode(mode: str) -> GatewayInfo | None:
    """Give a running gateway its new default mode (new requests take it, in-flight ones finish
    where they began); ``None`` when none runs."""
    return _info(request({"op": "mode", "mode": mode}))


def reload() -> GatewayInfo | None:
    """Have a running gateway read its upstreams and keys from the config again (for new
    requests); ``None`` when none runs."""
    return _info(request({"op": "reload"}, timeout=30.0))


def stop(timeout: float = 15.0) -> GatewayInfo | None:
    """Stop the running gateway and wait for its end (it drains in-flight streams first).

    Asked over the control socket; if that does not answer or the process outlives ``timeout``,
    the recorded pid gets SIGTERM (then SIGKILL) — only while it holds the gateway lock, its
    start time is the recorded one and its command line is kvswitch's. ``None``: none ran."""
    record = read_record()
    status = None
    with contextlib.suppress(GatewayError):
        status = request({"op": "stop"})
    info = _info(status)
    pid = info.pid if info is not None else (record.pid if record is not None else None)
    if info is None and (record is None or _nobody_holds_lock() or not _ours(record.pid, record.start_time)):
        clean_stale()
        return None
    assert pid is not None
    start_time = record.start_time if record is not None and record.pid == pid else procs.start_time(pid)
    if info is None:
        assert record is not None
        info = GatewayInfo(pid=record.pid, url=record.url, mode="", profile=record.profile, started=record.started)
        _signal(pid, start_time, signal.SIGTERM)
    if not _wait_gone(pid, start_time, timeout):
        _signal(pid, start_time, signal.SIGTERM)
        if not _wait_gone(pid, start_time, 5.0):
            _signal(pid, start_time, signal.SIGKILL)
            if not _wait_gone(pid, start_time, 5.0):
                raise GatewayError(tr("the gateway (pid {pid}) could not be stopped").format(pid=pid))
    clean_stale()
    return info


# -- /proc ----------------------------------------------------------------------------------------------
def _ours(pid: int, start_time: int | None) -> bool:
    """Whether ``pid`` is the gateway process recorded (alive, same start time, kvswitch's
    command line naming ``gateway``)."""
    st = procs.stat(pid)
    if pid <= 0 or st is None or st[0] in ("Z", "X"):
        return False
    if start_time is not None and st[1] != start_time:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [w.decode(errors="replace") for w in cmdline]
    return any(MARK in w for w in words) and "gateway" in words


def _signal(pid: int, start_time: int | None, sig: int) -> None:
    if _ours(pid, start_time):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _wait_gone(pid: int, start_time: int | None, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        st = procs.stat(pid)
        if st is None or st[0] in ("Z", "X") or (start_time is not None and st[1] != start_time):
            _reap(pid)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _reap(pid: int) -> None:
    """Collect an ended gateway this process started (``process.detach``), so no zombie stays."""
    child = CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(Exception):
            child.wait(1.0)


# -- the server side ------------------------------------------------------------------------------------
class ControlServer:
    """Answers control lines for one :class:`~kvswitch.gateway.server.Gateway`.

    ``reload``: how to build fresh settings (the config read again); ``None`` when the gateway's
    upstreams were given outright, and a reload is refused."""

    def __init__(self, gateway: Gateway, path: Path, reload: Callable[[], GatewaySettings] | None = None) -> None:
        self.gateway = gateway
        self.path = Path(path)
        self._reload = reload
        self._server: asyncio.AbstractServer | None = None
        self._uid = os.getuid()

    async def start(self) -> None:
        """Bind the socket (0600, in a 0700 folder of this user's); a stale socket file is
        replaced, a live one refused."""
        import asyncio

        private_folder(self.path.parent)
        if os.path.lexists(self.path):
            try:
                _, writer = await asyncio.wait_for(asyncio.open_unix_connection(os.fspath(self.path)), 2.0)
            except (ConnectionRefusedError, FileNotFoundError):
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()  # a socket file nobody listens on: left by a killed gateway
            except (OSError, TimeoutError) as exc:
                raise GatewayError(
                    tr("cannot use the control socket {path}: {reason}").format(path=self.path, reason=exc)
                ) from None
            else:
                writer.close()
                raise GatewayError(tr("another gateway answers on {path}").format(path=self.path))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(os.fspath(self.path))
            self.path.chmod(0o600)
            sock.listen(16)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._server = await asyncio.start_unix_server(self._client, sock=sock, limit=MAX_LINE)

    async def close(self) -> None:
        """Stop answering and remove the socket file."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        try:
            sock = writer.get_extra_info("socket")
            uid = None
            with contextlib.suppress(OSError, AttributeError):
                raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                uid = struct.unpack("3i", raw)[1]
            if uid != self._uid:
                reply: dict[str, Any] = {"ok": False, "error": tr("refused: the peer runs as another user")}
            else:
                try:
                    line = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT)
                except ValueError:
                    reply = {
                        "ok": False,
                        "error": tr("a control line is at most {size} KiB").format(size=MAX_LINE // 1024),
                    }
                except TimeoutError:
                    reply = {
                        "ok": False,
                        "error": tr("no request line within {seconds} s").format(seconds=f"{_READ_TIMEOUT:g}"),
                    }
                else:
                    try:
                        reply = await self._answer(line)
                    except Exception as exc:  # noqa: BLE001 - a bug: the peer still gets an answer
                        reply = {
                            "ok": False,
                            "error": tr("internal error in the gateway: {kind}").format(kind=type(exc).__name__),
                        }
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, line: bytes) -> dict[str, Any]:
        import asyncio

        from kvswitch.errors import KvswitchError

        try:
            message = json.loads(line)
        except ValueError:
            return {"ok": False, "error": tr("a control line is one JSON object")}
        if not isinstance(message, dict):
            return {"ok": False, "error": tr("a control line is one JSON object")}
        op = message.get("op")
        if op == "status":
            return {"ok": True, "status": self.gateway.status()}
        if op == "mode":
            mode = message.get("mode")
            if mode not in _MODES:
                return {
                    "ok": False,
                    "error": tr("mode must be merged or split, not {value}").format(value=repr(mode))[:300],
                }
            self.gateway.set_mode(mode)
            return {"ok": True, "status": self.gateway.status()}
        if op == "reload":
            if self._reload is None:
                return {"ok": False, "error": tr("this gateway was given its upstreams outright; restart it instead")}
            try:
                settings = await asyncio.get_running_loop().run_in_executor(None, self._reload)
            except KvswitchError as exc:
                return {"ok": False, "error": tr("the config could not be read again: {error}").format(error=exc)}
            self.gateway.reload(settings)
            return {"ok": True, "status": self.gateway.status()}
        if op == "stop":
            status = self.gateway.status()
            asyncio.get_running_loop().call_soon(self.gateway.request_stop)
            return {"ok": True, "status": status}
        return {"ok": False, "error": tr("unknown op {op} (status, mode, reload, stop)").format(op=repr(str(op)[:100]))}
