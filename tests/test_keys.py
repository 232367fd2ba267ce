"""kvswitch.keys: API keys in the OS keyring (namespaced in a sandbox), ``env:NAME`` references,
checks that never echo the key, and no plaintext fallback when there is no keyring (D-7, D-12)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from kvswitch.keys import (
    NO_BACKEND_HELP,
    InvalidKeyError,
    SecretStoreError,
    check_key,
    delete_key,
    get_key,
    resolve_key,
    service_name,
    set_key,
)

KEY = "sk-KEYSTEST-0123456789abcdef"


def files_containing(root: Path, needle: str) -> list[Path]:
    """Every regular file under ``root`` whose bytes contain ``needle``."""
    data = needle.encode()
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and data in p.read_bytes()]


def kvswitch_child(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env if env is not None else dict(os.environ),
        timeout=60,
        check=False,
    )


# --- service name --------------------------------------------------------------------------


def test_service_is_namespaced_under_kvswitch_home(tmp_path: Path) -> None:
    home = os.environ["KVSWITCH_HOME"]
    expected = "kvswitch@" + hashlib.sha256(str(Path(home).absolute()).encode()).hexdigest()[:8]
    assert service_name() == expected


def test_service_differs_per_sandbox_and_resolves_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = service_name()
    monkeypatch.setenv("KVSWITCH_HOME", str(tmp_path / "another"))
    second = service_name()
    assert first != second and second.startswith("kvswitch@") and len(second) == len("kvswitch@") + 8
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVSWITCH_HOME", "another")
    assert service_name() == second


def test_service_is_plain_kvswitch_without_kvswitch_home(
    monkeypatch: pytest.MonkeyPatch, memory_keyring: dict[tuple[str, str], str]
) -> None:
    monkeypatch.delenv("KVSWITCH_HOME")
    assert service_name() == "kvswitch"
    set_key("work", KEY)
    assert memory_keyring == {("kvswitch", "work"): KEY}


def test_a_sandbox_never_touches_the_users_real_entry(memory_keyring: dict[tuple[str, str], str]) -> None:
    memory_keyring[("kvswitch", "work")] = "sk-USERS-REAL-KEY-000000"
    set_key("work", KEY)
    assert memory_keyring[("kvswitch", "work")] == "sk-USERS-REAL-KEY-000000"
    assert memory_keyring[(service_name(), "work")] == KEY
    assert delete_key("work") is True
    assert memory_keyring == {("kvswitch", "work"): "sk-USERS-REAL-KEY-000000"}


# --- round trip ----------------------------------------------------------------------------


def test_set_get_delete_round_trip(memory_keyring: dict[tuple[str, str], str]) -> None:
    assert get_key("work") is None
    set_key("work", KEY)
    assert memory_keyring == {(service_name(), "work"): KEY}
    assert get_key("work") == KEY
    assert get_key("other") is None
    set_key("work", KEY + "X")  # overwrite
    assert get_key("work") == KEY + "X"
    assert delete_key("work") is True
    assert get_key("work") is None
    assert delete_key("work") is False
    assert memory_keyring == {}


def test_profiles_have_separate_entries(memory_keyring: dict[tuple[str, str], str]) -> None:
    set_key("a", KEY)
    set_key("b", KEY[::-1].replace(" ", ""))
    assert get_key("a") == KEY and get_key("b") == KEY[::-1]
    delete_key("a")
    assert get_key("b") == KEY[::-1]


# --- check_key -----------------------------------------------------------------------------

BAD_KEYS = {
    "empty": "",
    "leading space": " sk-abcdef0123456789",
    "trailing space": "sk-abcdef0123456789 ",
    "trailing newline": "sk-abcdef0123456789\n",
    "crlf": "sk-abcdef0123456789\r\n",
    "inner newline": "sk-abcdef01\n23456789",
    "inner carriage return": "sk-abcdef01\r23456789",
    "inner space": "sk-abcdef01 23456789",
    "inner tab": "sk-abcdef01\t23456789",
    "article placeholder": "sk-你的TaoToken Key",
    "article placeholder, no space": "sk-你的TaoTokenKey",
    "angle brackets": "<your-key>",
    "your-api-key": "your-api-key",
}


@pytest.mark.parametrize("key", list(BAD_KEYS.values()), ids=list(BAD_KEYS))
def test_check_key_rejects_without_echoing(key: str, memory_keyring: dict[tuple[str, str], str]) -> None:
    with pytest.raises(InvalidKeyError) as info:
        check_key(key)
    message = str(info.value)
    if key.strip():
        assert key not in message and key.strip() not in message
        for part in key.split():
            if len(part) >= 4:
                assert part not in message
    with pytest.raises(InvalidKeyError):
        set_key("work", key)
    assert memory_keyring == {}


@pytest.mark.parametrize(
    "key", [KEY, "sk-proj-AbC_123-xyz0987654321", "tt-0123456789abcdef", "eyJhbGciOi.eyJzdWIi.c2ln"]
)
def test_check_key_accepts_real_looking_keys(key: str) -> None:
    check_key(key)


def test_whitespace_and_placeholder_codes_are_named() -> None:
    with pytest.raises(InvalidKeyError, match="KVS210"):
        check_key(" sk-abcdef0123456789")
    with pytest.raises(InvalidKeyError, match="KVS211"):
        check_key("<your-key>")


def test_a_random_key_that_contains_xxx_is_not_a_placeholder() -> None:
    check_key("sk-proj-Q7vXxXm2Lk9pR4tW8zN1bC6dF3gH5jK0aB7cD9eF")


# --- resolve_key ---------------------------------------------------------------------------


def test_resolve_env_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVS_TEST_KEY", KEY)
    assert resolve_key("work", "env:KVS_TEST_KEY") == KEY
    monkeypatch.setenv("KVS_TEST_KEY", "")
    assert resolve_key("work", "env:KVS_TEST_KEY") is None
    monkeypatch.delenv("KVS_TEST_KEY")
    assert resolve_key("work", "env:KVS_TEST_KEY") is None


def test_resolve_env_reference_does_not_touch_the_keyring(memory_keyring: dict[tuple[str, str], str]) -> None:
    memory_keyring[(service_name(), "work")] = KEY
    keyring.set_keyring(fail.Keyring())  # an env reference works without any keyring
    assert resolve_key("work", "env:KVS_SURELY_UNSET_VAR") is None


def test_resolve_keyring_reference(memory_keyring: dict[tuple[str, str], str]) -> None:
    assert resolve_key("work", "keyring") is None
    set_key("work", KEY)
    assert resolve_key("work", "keyring") == KEY


@pytest.mark.parametrize("reference", [KEY, "env:", "env:1BAD", "env:A B", "KEYRING", "file:/etc/passwd"])
def test_resolve_rejects_other_references_without_echoing(reference: str) -> None:
    with pytest.raises(InvalidKeyError) as info:
        resolve_key("work", reference)
    if reference != "env:":  # the message itself names the env:NAME form
        assert reference not in str(info.value)


# --- no keyring backend --------------------------------------------------------------------


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """keyring's own "nothing available" backend, in process and in children."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    keyring.set_keyring(fail.Keyring())
    yield  # the memory_keyring fixture puts the previous backend back


def _assert_no_backend(exc: SecretStoreError) -> None:
    assert exc.message == NO_BACKEND_HELP
    assert "gnome-keyring" in NO_BACKEND_HELP.lower() and "kwallet" in NO_BACKEND_HELP.lower()
    assert "env:" in NO_BACKEND_HELP
    assert KEY not in str(exc)


def test_no_backend_every_operation_raises_the_help(no_backend: None, tmp_path: Path) -> None:
    for call in (
        lambda: set_key("work", KEY),
        lambda: get_key("work"),
        lambda: delete_key("work"),
        lambda: resolve_key("work", "keyring"),
    ):
        with pytest.raises(SecretStoreError) as info:
            call()
        _assert_no_backend(info.value)
    assert files_containing(tmp_path, KEY) == []


def test_an_empty_chain_is_no_backend_either(monkeypatch: pytest.MonkeyPatch) -> None:
    from keyring import backend
    from keyring.backends.chainer import ChainerBackend

    monkeypatch.setattr(backend, "_limit", lambda kr: False)
    chain = ChainerBackend()
    assert list(chain.backends) == []
    keyring.set_keyring(chain)
    with pytest.raises(SecretStoreError) as info:
        set_key("work", KEY)
    _assert_no_backend(info.value)


def test_keyring_errors_become_secret_store_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from keyring import errors

    from tests.memkeyring import MemoryKeyring

    class Locked(MemoryKeyring):
        def set_password(self, service: str, username: str, password: str) -> None:
            raise errors.KeyringLocked("locked")

        def get_password(self, service: str, username: str) -> str | None:
            raise errors.NoKeyringError("none")

    keyring.set_keyring(Locked())
    with pytest.raises(SecretStoreError, match="locked") as info:
        set_key("work", KEY)
    assert KEY not in str(info.value)
    with pytest.raises(SecretStoreError) as info2:
        get_key("work")
    assert info2.value.message == NO_BACKEND_HELP


def test_no_backend_cli_children_fail_clearly_and_write_nothing(no_backend: None, tmp_path: Path) -> None:
    init = kvswitch_child("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n")
    assert init.returncode == 1, init.stderr
    assert NO_BACKEND_HELP in init.stderr
    assert KEY not in init.stdout + init.stderr
    # nothing at all was set up: the key check and the store come before any file
    assert not (tmp_path / "kvswitch-home" / "config" / "kvswitch.toml").exists()
    assert not (Path(os.environ["HOME"]) / ".cline" / "settings.json").exists()

    assert kvswitch_child("init", "--preset", "taotoken", "--model", "m", "--no-key").returncode == 0
    # without a keyring init leaves key = "none" (the profile sends no key), so that profile use,
    # rename and probe work; key get says so, key set and delete need the keyring
    for args, says in (
        (("key", "set", "taotoken"), NO_BACKEND_HELP),
        (("key", "get", "taotoken"), "sends no key"),
        (("key", "get", "taotoken", "--reveal"), "sends no key"),
        (("key", "delete", "taotoken"), NO_BACKEND_HELP),
    ):
        out = kvswitch_child(*args, stdin=KEY + "\n")
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert says in out.stderr, args
        assert KEY not in out.stdout + out.stderr
    assert files_containing(tmp_path, KEY) == []
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "python_keyring").exists()


def _no_choice_env() -> dict[str, str]:
    """The environment with no keyring backend named and no Secret Service reachable."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHON_KEYRING_BACKEND", "DBUS_SESSION_BUS_ADDRESS")}


def test_no_silent_plaintext_fallback_when_no_backend_was_chosen(tmp_path: Path) -> None:
    """With keyrings.alt installed (a test dependency; users may have it too) and no Secret
    Service, keyring picks PlaintextKeyring (priority 0.5) by itself: kvswitch must refuse it,
    not store the key base64-encoded in $XDG_DATA_HOME/python_keyring/keyring_pass.cfg (D-7)."""
    env = _no_choice_env()
    out = kvswitch_child(
        "init",
        "--preset",
        "taotoken",
        "--model",
        "m",
        "--key-stdin",
        "--no-cline",
        "--no-ccswitch",
        stdin=KEY + "\n",
        env=env,
    )
    assert not (Path(env["XDG_DATA_HOME"]) / "python_keyring").exists()
    assert out.returncode == 1 and NO_BACKEND_HELP in out.stderr, out
    assert files_containing(tmp_path, KEY) == []


def test_a_plaintext_backend_the_user_named_in_keyringrc_is_used(tmp_path: Path) -> None:
    """Naming the backend is a choice, not a silent fallback (the tests' children rely on it)."""
    env = _no_choice_env()
    rc = Path(env["XDG_CONFIG_HOME"]) / "python_keyring" / "keyringrc.cfg"
    rc.parent.mkdir(parents=True)
    rc.write_text("[backend]\ndefault-keyring=keyrings.alt.file.PlaintextKeyring\n")
    out = kvswitch_child(
        "init",
        "--preset",
        "taotoken",
        "--model",
        "m",
        "--key-stdin",
        "--no-cline",
        "--no-ccswitch",
        stdin=KEY + "\n",
        env=env,
    )
    assert out.returncode == 0, out
    get = kvswitch_child("key", "get", "taotoken", env=env)
    assert (get.returncode, get.stdout) == (0, "sk-…cdef\n")
