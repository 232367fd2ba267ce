"""The real OS keyring (D-10): gnome-keyring's Secret Service under ``dbus-run-session``,
with a fresh keyring directory, and ``keyring`` choosing its backend by itself.

Recipe and failure modes: reference/python-libraries.md §6 (``--unlock`` or the collection
cannot be created; a fresh ``XDG_DATA_HOME`` or a second run with another password is locked).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kvswitch.keys import service_name
from tests.conftest import require_tool

KEY = "sk-REALKEYRING-0123456789abcdef"

# Each step prints "@@ NAME rc=N" after its output, so the test can split the transcript.
SCRIPT = r"""
set -u
echo -n pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null
step() { name=$1; shift; "$@"; echo "@@ $name rc=$?"; }
backend() {
  "$PY" -c 'import keyring
kr = keyring.get_keyring()
chain = getattr(kr, "backends", None)
used = chain[0] if chain else kr
print(type(kr).__module__ + "." + type(kr).__name__)
print(type(used).__module__ + "." + type(used).__name__)'
}
lookup() { secret-tool lookup service "$KVS_SERVICE" username taotoken; rc=$?; echo; return $rc; }
step backend backend
printf '%s\n' "$KVS_TEST_KEY" | step init "$PY" -m kvswitch init --preset taotoken --model m --key-stdin
step get "$PY" -m kvswitch key get taotoken
step reveal "$PY" -m kvswitch key get taotoken --reveal
step lookup lookup
step delete "$PY" -m kvswitch key delete taotoken
step get-after-delete "$PY" -m kvswitch key get taotoken
step lookup-after-delete lookup
"""


def _steps(transcript: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    text = ""
    for line in transcript.splitlines(keepends=True):
        m = re.fullmatch(r"@@ (\S+) rc=(\d+)\n?", line)
        if m:
            out[m.group(1)] = (text, int(m.group(2)))
            text = ""
        else:
            text += line
    return out


def test_keys_in_gnome_keyring_under_dbus(tmp_path: Path) -> None:
    require_tool("dbus-run-session")
    require_tool("gnome-keyring-daemon")
    require_tool("secret-tool")
    data = tmp_path / "keyring-data"  # a fresh keyring directory: the password "pw" creates it
    data.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHON_KEYRING_BACKEND", "DBUS_SESSION_BUS_ADDRESS", "KEYRING_PROPERTY_BACKEND")
    }
    env.update(XDG_DATA_HOME=str(data), PY=sys.executable, KVS_TEST_KEY=KEY, KVS_SERVICE=service_name())
    script = tmp_path / "session.sh"
    script.write_text(SCRIPT)
    done = subprocess.run(
        ["dbus-run-session", "--", "sh", str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    steps = _steps(done.stdout)
    context = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0 and "lookup-after-delete" in steps, context

    chosen, used = steps["backend"][0].split()
    assert chosen in ("keyring.backends.SecretService.Keyring", "keyring.backends.chainer.ChainerBackend"), context
    assert used == "keyring.backends.SecretService.Keyring", context

    text, rc = steps["init"]
    assert rc == 0, context
    assert "stored the key for taotoken in the OS keyring" in text
    assert steps["get"] == ("sk-…cdef\n", 0), context
    assert steps["reveal"] == (KEY + "\n", 0), context
    # the entry is in the Secret Service itself, under the sandbox's namespaced service
    assert steps["lookup"] == (KEY + "\n", 0), context
    assert service_name().startswith("kvswitch@")

    text, rc = steps["delete"]
    assert rc == 0 and "deleted the key of taotoken" in text, context
    assert steps["get-after-delete"][1] == 1, context
    assert "no key for taotoken" in done.stderr
    assert steps["lookup-after-delete"] == ("\n", 1), context

    # no plaintext anywhere: not keyrings.alt's file, not kvswitch's config, not the gnome-keyring
    # files (encrypted); only the two client files init created (outside git, 0600) hold it
    assert not (data / "python_keyring").exists()
    assert (data / "keyrings").is_dir()
    home = Path(os.environ["HOME"])
    clients = {home / ".cline" / "settings.json", home / ".config" / "cc-switch" / "config.toml"}
    holding = {p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()}
    assert holding == clients
    for path in clients:
        assert path.stat().st_mode & 0o777 == 0o600
    assert KEY not in done.stderr
