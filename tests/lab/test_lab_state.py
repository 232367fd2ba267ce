"""``kvswitch lab up`` and the user's own things: a ``lab`` profile the user made is never
overwritten, and the lab's folders are private (0700) like the rest of kvswitch's state.

No llama.cpp is started here: the step that would start a server is replaced by one that
fails loudly, so a test that reaches it on purpose stops there, and one that must not reach
it fails fast.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.cli import main
from kvswitch.lab import manage


class Started(Exception):
    """A lab server would have been started."""


@pytest.fixture
def no_servers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []

    def start(role: str, *args: object) -> None:
        started.append(role)
        raise Started(role)

    monkeypatch.setattr(manage, "require_lab", lambda: None)
    monkeypatch.setattr(manage, "_ensure_model", lambda preset: (Path("unused.gguf"), False))
    monkeypatch.setattr(manage, "_start_server", start)
    return started


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _users_lab_profile() -> Path:
    from kvswitch.config import config_file
    from kvswitch.models import Profile
    from kvswitch.setup import init

    init(
        "lab",
        Profile(
            provider="custom",
            base_url="http://127.0.0.1:9999/v1",
            model="my-own-model",
            key="env:MY_KEY",
        ),
        [],
    )
    return config_file()


def test_up_refuses_a_lab_profile_the_user_made(no_servers: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """The user's own ``lab`` profile (provider ``custom``) was silently rewritten to the lab's
    URLs, model and key. Now ``up`` refuses before it starts anything, and says what to do."""
    config = _users_lab_profile()
    before = config.read_bytes()
    assert main(["lab", "up", "--port", str(free_port())]) == 1
    err = capsys.readouterr().err
    assert "profile named 'lab'" in err and "kvswitch profile rename lab" in err
    assert no_servers == []
    assert config.read_bytes() == before
    assert manage.status().empty


def test_registering_never_touches_a_users_lab_profile() -> None:
    """The same rule where the profile is written (a profile made while ``up`` started)."""
    config = _users_lab_profile()
    before = config.read_bytes()
    with pytest.raises(manage.LabError, match="did not make"):
        manage._register_profile(18080, "kvswitch-lab-tiny", 512, "http://127.0.0.1:1", "http://127.0.0.1:2")
    assert config.read_bytes() == before


def test_a_lab_profile_from_the_lab_preset_is_the_labs(no_servers: list[str]) -> None:
    """``kvswitch init --preset lab`` makes a profile the lab may keep up to date."""
    assert main(["init", "--preset", "lab", "--model", "kvswitch-lab-tiny", "--no-key"]) == 0
    from kvswitch.config import read_config

    assert read_config().model.profiles["lab"].provider == "lab"
    with pytest.raises(Started):
        manage.up(port=free_port())
    assert (
        manage._register_profile(18090, "kvswitch-lab-tiny", 256, "http://127.0.0.1:1", "http://127.0.0.1:2")[0]
        == "updated"
    )
    assert read_config().model.profiles["lab"].merged.chunk_size == 256


def test_up_creates_its_folders_private(no_servers: list[str], umask_022: None) -> None:
    """Every folder ``up`` creates (kvswitch's home, ``state/``, ``state/lab``, the slot
    folder) is 0700, whatever the umask; they were 0755 above ``lab/``."""
    from kvswitch import paths

    home = paths.home_override()
    assert home is not None and not home.exists()
    with pytest.raises(Started):
        manage.up(port=free_port())
    created = [home, paths.dirs().state, manage.lab_dir(), manage.slot_dir()]
    modes = {str(p.relative_to(home.parent)): oct(stat.S_IMODE(p.stat().st_mode)) for p in created}
    assert modes == dict.fromkeys(modes, "0o700")
