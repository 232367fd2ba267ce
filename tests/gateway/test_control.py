"""The control socket: modes of its file and folder, the peer's uid, the protocol's bounds, and
the client side (status, mode, reload, stop, stale files) against a real Gateway in-process."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kvswitch.gateway import control
from kvswitch.gateway.errors import GatewayError
from kvswitch.gateway.server import Gateway
from kvswitch.gateway.settings import GatewaySettings

SETTINGS = GatewaySettings(
    merged="http://127.0.0.1:9/v1",
    split="http://127.0.0.1:10/v1",
    token="kvsgw-test-token-0123456789abcdef",
    profile="p",
    port=0,
)


class Served:
    """A real Gateway and its ControlServer on an event loop in a thread."""

    def __init__(self, path: Path, reload: Callable[[], GatewaySettings] | None) -> None:
        self.loop = asyncio.new_event_loop()
        self.gateway: Gateway
        self.path = path
        self._reload = reload
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.call(self._start())

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _start(self) -> None:
        self.gateway = Gateway(SETTINGS)
        await self.gateway.start()
        self.ctl = control.ControlServer(self.gateway, self.path, self._reload)
        await self.ctl.start()

    async def _close(self) -> None:
        await self.ctl.close()
        await self.gateway.close(0)

    def close(self) -> None:
        self.call(self._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served(control.socket_path(), lambda: replace(SETTINGS, merged="http://127.0.0.1:11/v1", profile="q"))
    try:
        yield s
    finally:
        s.close()


def raw(path: Path, data: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(data)
        got = b""
        while not got.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    reply: dict[str, Any] = json.loads(got)
    return reply


def test_the_socket_is_0600_in_a_0700_folder(served: Served) -> None:
    path = control.socket_path()
    assert path.parent == control.runtime_dir()
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_status_mode_reload_and_stop_over_the_socket(served: Served) -> None:
    info = control.running()
    assert info is not None
    assert (info.pid, info.url, info.mode, info.profile) == (os.getpid(), served.gateway.url, "merged", "p")
    assert info.upstreams == {"merged": SETTINGS.merged, "split": SETTINGS.split}
    told = control.tell_mode("split")
    assert told is not None and told.mode == "split" and served.gateway.mode == "split"
    reloaded = control.reload()
    assert reloaded is not None and reloaded.profile == "q"
    assert served.gateway.settings.merged == "http://127.0.0.1:11/v1"
    assert reloaded.mode == "split"  # a reload keeps the mode
    assert not served.gateway.stopping.is_set()
    assert control.request({"op": "stop"}) is not None
    served.call(asyncio.wait_for(served.gateway.stopping.wait(), 5))


def test_bad_requests_get_an_error_and_change_nothing(served: Served) -> None:
    path = control.socket_path()
    with pytest.raises(GatewayError, match="merged or split"):
        control.tell_mode("sideways")
    assert served.gateway.mode == "merged"
    assert raw(path, b'{"op":"mode","mode":["split"]}\n')["ok"] is False
    unknown = raw(path, b'{"op":"explode"}\n')
    assert unknown == {"ok": False, "error": "unknown op 'explode' (status, mode, reload, stop)"}
    assert raw(path, b"not json\n")["ok"] is False
    assert raw(path, b"[1, 2]\n")["ok"] is False
    big = raw(path, b'{"op":"status","pad":"' + b"x" * (70 * 1024) + b'"}\n')
    assert big == {"ok": False, "error": "a control line is at most 64 KiB"}
    assert raw(path, b'{"op":"status","pad":"' + b"x" * 1000 + b'"}\n')["ok"] is True
    assert served.gateway.mode == "merged" and not served.gateway.stopping.is_set()


def test_a_refusal_reads_in_the_users_language(served: Served) -> None:
    from kvswitch import i18n

    i18n.set_language("zh_CN")
    with pytest.raises(GatewayError) as caught:
        control.tell_mode("sideways")
    assert str(caught.value) == "网关拒绝了请求：模式必须是 merged 或 split，而不是 'sideways'"
    assert served.gateway.mode == "merged"


def test_a_gateway_given_its_upstreams_outright_refuses_a_reload() -> None:
    s = Served(control.socket_path(), None)
    try:
        with pytest.raises(GatewayError, match="restart it"):
            control.reload()
        assert s.gateway.settings is SETTINGS
    finally:
        s.close()


def test_a_second_control_server_on_a_live_socket_is_refused(served: Served) -> None:
    other = control.ControlServer(served.gateway, control.socket_path(), None)
    with pytest.raises(GatewayError, match="another gateway answers"):
        served.call(other.start())
    assert control.running() is not None


def test_no_gateway_is_none_and_stale_files_are_removed(tmp_path: Path) -> None:
    assert control.running() is None and control.stop() is None
    folder = control.runtime_dir()
    control.private_folder(folder)
    control.write_record(
        control.Record(pid=999_999, start_time=1, url="http://127.0.0.1:1", port=1, socket=control.socket_path())
    )
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(control.socket_path()))
    leftover.close()  # a socket file nobody listens on: what a SIGKILLed gateway leaves
    assert control.running() is None
    assert not control.state_file().exists() and not control.socket_path().exists()
    assert control.tell_mode("split") is None and control.reload() is None


def test_a_socket_path_too_long_for_a_unix_socket_falls_back_to_a_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("KVSWITCH_HOME", str(deep))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = control.socket_path()
    assert len(os.fsencode(control.runtime_dir() / "gateway.sock")) > 107
    assert len(os.fsencode(path)) <= 107 and path.parent.parent == tmp_path
    monkeypatch.setenv("KVSWITCH_HOME", str(tmp_path / ("f" * 60) / ("g" * 60)))
    assert control.socket_path() != path  # one folder per state folder
    monkeypatch.setenv("KVSWITCH_HOME", str(deep))
    s = Served(path, None)
    try:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        info = control.running()
        assert info is not None and info.pid == os.getpid()
    finally:
        s.close()


def test_a_fallback_folder_someone_else_made_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVSWITCH_HOME", str(tmp_path / ("d" * 60) / ("e" * 60)))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = control.socket_path().parent
    folder.mkdir(mode=0o777)
    os.chown(folder, 65534, 65534)
    with pytest.raises(GatewayError, match="belongs to uid 65534"):
        control.private_folder(folder)
    folder.rmdir()
    folder.symlink_to(tmp_path)
    with pytest.raises(GatewayError, match="not a folder"):
        control.private_folder(folder)


_NOBODY_CLIENT = """
import json, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(10)
try:
    sock.connect(sys.argv[1])
except PermissionError:
    print("EACCES")
    raise SystemExit(0)
try:
    sock.sendall(json.dumps({"op": "mode", "mode": "split"}).encode() + b"\\n")
except BrokenPipeError:
    pass  # refused before the line was read: the answer waits in the socket
print(sock.recv(65536).decode().strip())
"""


@pytest.mark.usefixtures("public_sandbox")
def test_another_user_is_refused_even_where_the_modes_let_it_in() -> None:
    from tests.unprivileged import run_child

    s = Served(control.socket_path(), None)
    try:
        path = control.socket_path()
        out = run_child(_NOBODY_CLIENT, str(path), as_nobody=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "EACCES"  # the 0700 folder keeps it out
        for folder in (path.parent, *path.parent.parents):  # now loosen every mode on the way
            if str(folder) == "/tmp" or folder == Path("/"):
                break
            folder.chmod(0o755)
        path.chmod(0o666)
        out = run_child(_NOBODY_CLIENT, str(path), as_nobody=True)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"ok": False, "error": "refused: the peer runs as another user"}
        assert s.gateway.mode == "merged"  # SO_PEERCRED refused it: nothing changed
    finally:
        s.close()


def test_a_peer_that_sends_nothing_is_answered_and_dropped(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "_READ_TIMEOUT", 0.2)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(control.socket_path()))
        reply = json.loads(sock.recv(65536))
        assert reply == {"ok": False, "error": "no request line within 0.2 s"}
        assert sock.recv(1) == b""  # and the connection is closed
    assert control.running() is not None  # the gateway still answers others
