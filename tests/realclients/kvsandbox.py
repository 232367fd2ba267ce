"""kvswitch itself, run as a separate process beside a real client: the same HOME (and XDG
folders) as the client, its own ``KVSWITCH_HOME`` next to that HOME, a file keyring of its
own, and nothing else from the test process's environment.

The end-to-end tests drive kvswitch only through its command line here, as a user would:
``init``, ``client add``, ``profile use``, ``switch``. kvswitch runs outside the namespace (it
makes no network request on these paths); the clients run inside it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import kvswitch
from tests.realclients.clients import Home

__all__ = ["KvSwitch"]

RUN_S = 60.0


@dataclass
class KvSwitch:
    """kvswitch's command line in a client's HOME; ``home`` is kvswitch's own folder."""

    client_home: Home
    env: dict[str, str]

    @classmethod
    def beside(cls, h: Home, extra: Mapping[str, str] | None = None) -> KvSwitch:
        """kvswitch for ``h``: HOME and XDG folders are the client's, ``KVSWITCH_HOME`` a
        sibling of that HOME (removed with it). ``extra``: variables kvswitch reads (the
        variable a profile's ``env:NAME`` key names)."""
        home = h.home
        env = {
            "PATH": str(Path(sys.executable).parent) + ":/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(home.parent / "tmp"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "KVSWITCH_HOME": str(home.parent / "kvswitch-home"),
            # a key stored with `key set` goes to a file keyring inside this HOME, never the
            # machine's keyring
            "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
            "NO_COLOR": "1",
            # the kvswitch these tests import (a checkout under test, not only the installed one)
            "PYTHONPATH": str(Path(kvswitch.__file__).resolve().parents[1]),
        }
        env.update(extra or {})
        return cls(h, env)

    @property
    def home(self) -> Path:
        return Path(self.env["KVSWITCH_HOME"])

    def run(self, *argv: str, stdin: str | None = None, timeout: float = RUN_S) -> subprocess.CompletedProcess[str]:
        """``kvswitch ARGV``; its exit code and output (never raises on a nonzero exit)."""
        return subprocess.run(
            [sys.executable, "-m", "kvswitch", *argv],
            env=self.env,
            cwd=self.client_home.project,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *argv: str, stdin: str | None = None) -> str:
        """``kvswitch ARGV``, which must exit 0; its stdout and stderr together."""
        done = self.run(*argv, stdin=stdin)
        both = done.stdout + done.stderr
        assert done.returncode == 0, f"kvswitch {' '.join(argv)}: exit {done.returncode}\n{both}"
        return both

    def set_mode_urls(self, profile: str, merged: str, split: str) -> None:
        """Give ``profile`` one URL per mode (``profile edit --merged-url/--split-url``)."""
        self.ok("profile", "edit", profile, "--merged-url", merged, "--split-url", split)
