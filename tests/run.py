#!/usr/bin/env python3
"""Set up everything the test suite needs, then run it: ``python3 tests/run.py [pytest args]``.

Needs only python3 and pip. Idempotent: a second run reuses what the first installed.
1. a virtual environment in ``.venv`` with kvswitch (editable) and its `test` dependency group;
2. Debian packages the real-peer tests use (as root: apt-get; otherwise the exact
   ``apt-get install`` line is printed and those tests skip — they fail under CI=true);
3. VS Code's JSONC parser (npm ``jsonc-parser``) in ``tests/peer`` for the peer test;
4. the real coding clients (Claude Code, Codex, Cline, OpenCode, Qwen Code, pinned) in
   ``tests/clients`` for ``tests/realclients`` (npm's cache in ``~/.npm`` makes a rerun fast; a
   stamp file skips the step when the versions match and every program is there);
5. pytest (exit 5, "no tests collected", counts as a failure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
PEER = ROOT / "tests" / "peer"
JSONC_PARSER = "jsonc-parser@3.3.1"
# the real clients tests/realclients runs (pinned: their file shapes and wire formats are what
# the tests check); OpenCode npm-installs its plugin package on every run, so it is installed
# once into a folder of its own and copied into each test HOME
CLIENTS = ROOT / "tests" / "clients"
CLIENT_PACKAGES = (
    "@anthropic-ai/claude-code@2.1.332",
    "@openai/codex@0.171.0",
    "cline@3.0.65",
    "opencode-ai@1.18.33",
    "@qwen-code/qwen-code@0.24.4",
)
CLIENT_BINS = ("claude", "codex", "cline", "opencode", "qwen")
OPENCODE_PLUGIN = "@opencode-ai/plugin@1.18.33"
# Debian package -> a command it provides (checked before installing anything); None for a
# library without one, checked with ``dpkg -s``
DEBIAN: dict[str, str | None] = {
    "git": "git",
    "nodejs": "node",
    "npm": "npm",
    "util-linux": "setpriv",
    "vim": "vim",
    # the real-keyring test (tests/test_keys_real_keyring.py): gnome-keyring under dbus-run-session
    "gnome-keyring": "gnome-keyring-daemon",
    "dbus-x11": "dbus-launch",
    "libsecret-tools": "secret-tool",
    "dbus-daemon": "dbus-run-session",
    # the real tray (tests/gui/test_real_tray.py, docs/screenshots.py, bench/tray_speed.py): an X
    # server, a tray host, clicks and keys, the window tree, screenshots
    "xvfb": "Xvfb",
    "xauth": "xauth",
    "trayer": "trayer",
    "xdotool": "xdotool",
    "imagemagick": "import",
    "x11-utils": "xwininfo",
    # Chinese text on screen (the tray's zh-CN screenshots and the missing-glyph test)
    "fonts-wqy-zenhei": None,
    # the desktop entry's validator, and a real StatusNotifierItem watcher and host (what GNOME's
    # AppIndicator extension and KDE speak; Debian 12 has no snixembed)
    "desktop-file-utils": "desktop-file-validate",
    "gtk-update-icon-cache": "gtk-update-icon-cache",
    "haskell-status-notifier-item-utils": "status-notifier-watcher",
    "haskell-gtk-sni-tray-utils": "gtk-sni-tray-standalone",
    # shell completion is loaded by the real shells
    "zsh": "zsh",
    "fish": "fish",
    # the real coding clients (tests/realclients): a loopback-only network namespace needs `ip`
    # to bring lo up; Claude Code's live-session test runs it in tmux
    "iproute2": "ip",
    "tmux": "tmux",
    # what Qt's xcb platform plugin (PySide6's plugins/platforms/libqxcb.so) loads, directly or
    # through libQt6XcbQpa/libQt6Gui (Debian 12: `ldd … | grep 'not found'` names the missing)
    "libxcb-cursor0": None,
    "libxcb-icccm4": None,
    "libxcb-keysyms1": None,
    "libxcb-image0": None,
    "libxcb-render-util0": None,
    "libxcb-shape0": None,
    "libxcb-randr0": None,
    "libxcb-xkb1": None,
    "libxkbcommon-x11-0": None,
    "libegl1": None,
    "libgl1": None,
    "libfontconfig1": None,
    "libdbus-1-3": None,
}
# Debian package -> a shared library it provides (the lab's llama.cpp wheel links libgomp)
DEBIAN_LIBS = {"libgomp1": "gomp"}


def say(message: str) -> None:
    print(f"[tests/run.py] {message}", flush=True)


def run(cmd: list[str], **kw: object) -> None:
    say("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def dpkg_has(pkg: str) -> bool:
    """``dpkg -s PKG`` says it is installed (True where there is no dpkg: nothing to tell)."""
    if shutil.which("dpkg") is None:
        return True
    done = subprocess.run(["dpkg", "-s", pkg], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "Status: install ok installed" in done.stdout


def ensure_debian() -> None:
    from ctypes.util import find_library

    missing = [pkg for pkg, cmd in DEBIAN.items() if (shutil.which(cmd) is None if cmd else not dpkg_has(pkg))]
    missing += [pkg for pkg, lib in DEBIAN_LIBS.items() if find_library(lib) is None]
    if not missing:
        say("Debian packages: all present")
        return
    line = "apt-get install -y --no-install-recommends " + " ".join(missing)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-q"], env=env)
        run(line.split(), env=env)
    else:
        say(f"missing Debian packages; as root run: {line}  (tests that need them will skip)")


def ensure_venv(extras: str = "test") -> None:
    """``.venv`` with kvswitch installed (editable) and ``extras`` ("test": the `test` dependency
    group, which holds the lab's packages too, so either command reuses what the other installed)."""
    if not PY.exists():
        run([sys.executable, "-m", "venv", str(VENV)])
    stamp = VENV / ".kvswitch-installed"
    pyproject = ROOT / "pyproject.toml"
    if stamp.exists() and stamp.stat().st_mtime >= pyproject.stat().st_mtime:
        have = set(stamp.read_text().split())
        if extras in have or "test" in have:
            say(f"virtual environment: up to date ({', '.join(sorted(have))})")
            return
    run([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    if extras == "test":  # a dependency group (development tools are not published extras)
        run([str(PY), "-m", "pip", "install", "-q", "-e", str(ROOT), "--group", f"{ROOT / 'pyproject.toml'}:test"])
    else:
        run([str(PY), "-m", "pip", "install", "-q", "-e", f"{ROOT}[{extras}]"])
    old = set(stamp.read_text().split()) if stamp.exists() else set()
    stamp.write_text(" ".join(sorted(old | {extras})) + "\n")


def ensure_peer() -> None:
    if (PEER / "node_modules" / "jsonc-parser").exists():
        say("npm jsonc-parser: present")
        return
    if shutil.which("npm") is None:
        say("npm is missing: the JSONC peer test will skip (install nodejs and npm)")
        return
    run(["npm", "install", "--no-package-lock", "--no-save", "--no-audit", "--no-fund", JSONC_PARSER], cwd=PEER)


def ensure_clients() -> None:
    """The pinned real clients in ``tests/clients`` (and OpenCode's plugin package in
    ``tests/clients/opencode-plugin``); skipped when the stamp matches and every program exists.
    npm warns that install scripts were not run: the clients work without them."""
    stamp = CLIENTS / ".kvswitch-clients"
    wanted = " ".join((*CLIENT_PACKAGES, OPENCODE_PLUGIN)) + "\n"
    bins = [CLIENTS / "node_modules" / ".bin" / name for name in CLIENT_BINS]
    plugin = CLIENTS / "opencode-plugin" / "node_modules" / "@opencode-ai" / "plugin"
    present = all(b.exists() for b in bins) and plugin.is_dir()
    if present and stamp.exists() and stamp.read_text() == wanted:
        say("real clients: present")
        return
    if shutil.which("npm") is None:
        say("npm is missing: the real-client tests will skip, or fail under CI (install npm)")
        return
    npm = ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--save-exact"]
    for folder in (CLIENTS, CLIENTS / "opencode-plugin"):
        folder.mkdir(parents=True, exist_ok=True)
        # a package.json of its own, so npm installs here and not in a folder above
        if not (folder / "package.json").exists():
            (folder / "package.json").write_text('{"private": true}\n')
    run([*npm, *CLIENT_PACKAGES], cwd=CLIENTS)
    run([*npm, OPENCODE_PLUGIN], cwd=CLIENTS / "opencode-plugin")
    stamp.write_text(wanted)


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    ensure_debian()
    ensure_venv()
    ensure_peer()
    ensure_clients()
    cmd = [str(PY), "-m", "pytest", *(argv or ["-q"])]
    say("$ " + " ".join(cmd))
    code = subprocess.call(cmd)
    if code == 5:
        say("pytest collected no tests: that is a failure")
        return 1
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
