"""Test sandbox: every test gets its own HOME, XDG dirs and KVSWITCH_HOME, no network
beyond 127.0.0.1, and a git identity of its own."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.helpers.watching import Events, Sandbox

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def require_tool(name: str) -> str:
    """The path of an executable; skip when missing, but fail under CI (CI must install it)."""
    found = shutil.which(name)
    if found is None:
        message = f"{name} is not installed (tests/run.py installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("KVSWITCH_HOME", str(tmp_path / "kvswitch-home"))
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = kvswitch tests\n\temail = tests@kvswitch.invalid\n[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("PRE_COMMIT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    # English unless a test asks for Chinese (KVSWITCH_LANG=zh-CN, --lang zh-CN), whatever the
    # machine's locale; the in-process choice is reset after every test
    monkeypatch.setenv("KVSWITCH_LANG", "en")
    from kvswitch import i18n

    i18n.set_language("en")
    yield home
    i18n.set_language("en")


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests reach nothing but 127.0.0.1."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0] if isinstance(address, tuple) else address
            if host not in _LOOPBACK:
                raise ConnectionRefusedError(f"tests may only connect to 127.0.0.1, not {host!r}")
        real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def bystander() -> Iterator[tuple[socket.socket, int]]:
    """A listener on 127.0.0.1 that is none of the server's upstreams: it must receive nothing
    (``tests.rawhttp.accepted`` counts what reached it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    try:
        yield sock, sock.getsockname()[1]
    finally:
        sock.close()


@pytest.fixture(autouse=True)
def memory_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[tuple[str, str], str]]:
    """In-process: an in-memory keyring; child processes: keyrings.alt's file keyring inside
    the test's own XDG_DATA_HOME. No test touches a real keyring unless it starts one."""
    import keyring

    from tests.memkeyring import MemoryKeyring

    MemoryKeyring.store = {}
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    yield MemoryKeyring.store
    keyring.set_keyring(previous)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def sb() -> Sandbox:
    """The watcher tests' sandbox: ``kvswitch init --preset taotoken`` in the test's HOME."""
    from tests.helpers.watching import init_sandbox

    return init_sandbox()


@pytest.fixture
def events() -> Events:
    """The watcher tests' recorder of every WatchEvent."""
    from tests.helpers.watching import Events

    return Events()


@pytest.fixture
def public_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME, XDG_CONFIG_HOME and KVSWITCH_HOME in a directory uid 65534 can reach (pytest's
    tmp_path is under a 0700 root directory)."""
    top = Path(tempfile.mkdtemp(prefix="kvswitch-sandbox-"))
    top.chmod(0o755)
    home = top / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("KVSWITCH_HOME", str(top / "kvswitch-home"))
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)
