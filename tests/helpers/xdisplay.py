"""A real X display for the tray: Xvfb with a tray host (trayer), the tray app as a process of
its own, and what a user does and sees — xdotool clicks and keys, the window tree
(``xwininfo``), pixels and screenshots (ImageMagick ``import``).

Used by ``tests/gui/test_real_tray.py``, ``docs/screenshots.py`` and ``bench/tray_speed.py``;
no pytest and no Qt here. Every process started here is stopped by its pid.

Debian packages: ``xvfb trayer xdotool imagemagick x11-utils`` and the xcb plugin's libraries
(``tests/run.py`` installs them).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.observe import wait_until

__all__ = [
    "TOOLS",
    "TrayApp",
    "Window",
    "XSession",
    "make_sandbox",
    "png_size",
    "sandbox_env",
    "stop_process",
]

TOOLS = ("Xvfb", "trayer", "xdotool", "import", "xwininfo")
"""The executables this module runs (Debian: xvfb, trayer, xdotool, imagemagick, x11-utils)."""

ROOT = Path(__file__).resolve().parents[2]

# the icon's fill colours (kvswitch_gui.icons): merged blue, split teal, unknown grey
MODE_COLOURS = {"merged": (0x25, 0x63, 0xEB), "split": (0x0D, 0x94, 0x88), None: (0x6B, 0x72, 0x80)}


def stop_process(proc: subprocess.Popen[Any], first: int = signal.SIGTERM, grace: float = 10.0) -> int | None:
    """Stop one process by its pid: ``first`` (SIGTERM, or SIGINT for a clean Qt quit), then
    SIGKILL after ``grace`` seconds. Returns its exit status."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, first)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(grace)
    return proc.returncode


# -- the window tree ----------------------------------------------------------------------------

_TREE_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<id>0x[0-9a-f]+) (?:\"(?P<name>.*)\"|\(has no name\)): \((?P<cls>[^)]*)\)\s+"
    r"(?P<w>\d+)x(?P<h>\d+)[+-]-?\d+[+-]-?\d+\s+\+(?P<x>-?\d+)\+(?P<y>-?\d+)"
)


@dataclass(frozen=True)
class Window:
    """One X window as ``xwininfo -root -tree`` lists it (position absolute, on the root)."""

    id: int
    name: str | None
    wm_class: tuple[str, ...]
    x: int
    y: int
    width: int
    height: int
    path: tuple[int, ...]  # ancestors, the root's child first

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    @property
    def hex(self) -> str:
        return hex(self.id)


def parse_tree(text: str) -> list[Window]:
    """Every window below the root, with its ancestors (from the indentation)."""
    out: list[Window] = []
    stack: list[tuple[int, int]] = []  # (indent, id)
    for line in text.splitlines():
        m = _TREE_LINE.match(line)
        if m is None:
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        wid = int(m["id"], 16)
        cls = tuple(re.findall(r'"([^"]*)"', m["cls"]))
        out.append(
            Window(wid, m["name"], cls, int(m["x"]), int(m["y"]), int(m["w"]), int(m["h"]), tuple(i for _, i in stack))
        )
        stack.append((indent, wid))
    return out


# -- the display --------------------------------------------------------------------------------


class XSession:
    """Xvfb on a free display (``-displayfd``: the server picks the number) and, unless
    ``tray=False``, trayer docked top right. ``white``: a white root window instead of black
    (for screenshots). A context manager; ``close()`` stops both."""

    def __init__(
        self,
        workdir: Path,
        *,
        width: int = 1024,
        height: int = 768,
        tray: bool = True,
        tray_width: int = 120,
        tray_height: int = 24,
        white: bool = False,
        timeout: float = 30.0,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.size = (width, height)
        self.tray = tray
        self.tray_size = (tray_width, tray_height)
        self.white = white
        self.timeout = timeout
        self.display = ""
        self.xvfb: subprocess.Popen[bytes] | None = None
        self.trayer: subprocess.Popen[bytes] | None = None
        self.panel: Window | None = None

    def __enter__(self) -> XSession:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            with (self.workdir / "xvfb.log").open("wb") as log:
                self.xvfb = subprocess.Popen(
                    [
                        "Xvfb",
                        "-displayfd",
                        str(write_fd),
                        "-screen",
                        "0",
                        f"{self.size[0]}x{self.size[1]}x24",
                        "-nolisten",
                        "tcp",
                        "-noreset",
                        *(["-wr"] if self.white else []),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(write_fd,),
                )
            os.close(write_fd)
            write_fd = -1
            number = b""
            deadline = time.monotonic() + self.timeout
            while not number.endswith(b"\n"):
                left = deadline - time.monotonic()
                ready, _, _ = select.select([read_fd], [], [], max(left, 0))
                chunk = os.read(read_fd, 64) if ready else b""
                if not chunk:
                    raise RuntimeError(f"Xvfb did not start: {self.log('xvfb.log')}")
                number += chunk
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.display = f":{int(number)}"
        if self.tray:
            self.start_tray()

    def start_tray(self) -> None:
        w, h = self.tray_size
        with (self.workdir / "trayer.log").open("wb") as log:
            self.trayer = subprocess.Popen(
                [
                    "trayer",
                    "--edge",
                    "top",
                    "--align",
                    "right",
                    "--widthtype",
                    "pixel",
                    "--width",
                    str(w),
                    "--heighttype",
                    "pixel",
                    "--height",
                    str(h),
                ],
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        # docked: at the top right, where --edge/--align put it (trayer maps the panel first and
        # moves it there after, a while later on a busy machine)
        self.panel = wait_until(
            lambda: next(
                (
                    win
                    for win in self.tree()
                    if win.name == "panel"
                    and "trayer" in win.wm_class
                    and not win.path
                    and win.y == 0
                    and win.x + win.width == self.size[0]
                ),
                None,
            ),
            self.timeout,
        )
        if self.panel is None:
            raise RuntimeError(
                f"trayer's panel did not dock at the top right: {self.log('trayer.log')}; "
                f"top-level windows: {[w for w in self.tree() if not w.path]}"
            )

    def close(self) -> None:
        for proc in (self.trayer, self.xvfb):
            if proc is not None:
                stop_process(proc)
        self.trayer = self.xvfb = None

    def log(self, name: str) -> str:
        path = self.workdir / name
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"

    def env(self, base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
        """An environment for a process on this display: Qt on xcb, and no D-Bus session bus
        (one would make Qt prefer a StatusNotifierItem host over the XEmbed tray, and libdbus
        would otherwise autolaunch a session bus that outlives the test)."""
        env = dict(os.environ if base is None else base)
        env.update(
            DISPLAY=self.display,
            QT_QPA_PLATFORM="xcb",
            DBUS_SESSION_BUS_ADDRESS=f"unix:path={self.workdir / 'no-session-bus'}",
        )
        env.pop("WAYLAND_DISPLAY", None)
        env.update(extra)
        return env

    # -- looking ----------------------------------------------------------------------------
    def run(self, *argv: str, timeout: float = 20.0, binary: bool = False) -> Any:
        done = subprocess.run(
            list(argv), env=self.env(), capture_output=True, timeout=timeout, check=False, text=not binary
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr!r}")
        return done.stdout

    def tree(self) -> list[Window]:
        return parse_tree(self.run("xwininfo", "-root", "-tree"))

    def tray_icons(
        self, name: str | None = None, *, laid_out: bool = False, tree: list[Window] | None = None
    ) -> list[Window]:
        """The windows embedded in trayer's panel (``name``: only those so named). ``laid_out``:
        only those wholly inside the panel — just after embedding an icon sits a pixel off, at
        y = -1, for a moment, before trayer places it. ``tree``: a listing already made."""
        if self.panel is None:
            return []
        tree = self.tree() if tree is None else tree
        # the panel as it is now (its geometry from this same listing)
        panel = next((w for w in tree if w.id == self.panel.id), self.panel)
        found = [
            w for w in tree if panel.id in w.path and w.width > 1 and w.height > 1 and (name is None or w.name == name)
        ]
        if laid_out:
            found = [
                w
                for w in found
                if panel.x <= w.x
                and w.x + w.width <= panel.x + panel.width
                and panel.y <= w.y
                and w.y + w.height <= panel.y + panel.height
            ]
        return found

    def shown_windows(self, name: str) -> list[Window]:
        """Top-level windows named ``name`` that are on screen as windows of their own: mapped
        and not override-redirect (a menu, tooltip or balloon is not one; neither is a window Qt
        made and keeps hidden)."""
        found = []
        for win in self.tree():
            if win.path or win.name != name:
                continue
            try:
                info = self.run("xwininfo", "-id", hex(win.id))
            except RuntimeError:
                continue  # gone meanwhile
            if "Map State: IsViewable" in info and "Override Redirect State: no" in info:
                found.append(win)
        return found

    def popups(self) -> list[Window]:
        """Mapped override-redirect windows on the root (menus, tooltips), largest first."""
        by_id = {w.id: w for w in self.tree() if not w.path}
        found = []
        for wid, win in by_id.items():
            if win.width < 20 or win.height < 20:
                continue
            try:
                info = self.run("xwininfo", "-id", hex(wid))
            except RuntimeError:
                continue  # gone meanwhile
            if "Map State: IsViewable" in info and "Override Redirect State: yes" in info:
                found.append(win)
        return sorted(found, key=lambda w: -w.width * w.height)

    def pixels(self, window: Window | int) -> tuple[int, int, bytes]:
        """A window's pixels as (width, height, RGB bytes)."""
        wid = window.id if isinstance(window, Window) else window
        raw: bytes = self.run(
            "import", "-display", self.display, "-window", hex(wid), "-depth", "8", "rgb:-", binary=True
        )
        win = window if isinstance(window, Window) else None
        if win is not None and len(raw) == win.width * win.height * 3:
            return win.width, win.height, raw
        side = int((len(raw) // 3) ** 0.5)
        return side, side, raw

    def icon_mode(self, icon: Window) -> str | None:
        """Which mode the tray icon shows, by the colour of its left half (the icon's shape puts
        the fill there in both modes; unknown is an outline in grey); ``""`` when unsure."""
        w, h, raw = self.pixels(icon)
        x, y = max(1, w // 4), h // 2
        r, g, b = raw[(y * w + x) * 3 : (y * w + x) * 3 + 3]
        for mode, (cr, cg, cb) in MODE_COLOURS.items():
            if abs(r - cr) + abs(g - cg) + abs(b - cb) < 40:
                return mode
        return ""

    def screenshot(self, path: Path, crop: tuple[int, int, int, int] | None = None) -> Path:
        """The whole screen (or ``crop`` = x, y, width, height of it) as a PNG."""
        argv = ["import", "-display", self.display, "-window", "root"]
        if crop is not None:
            x, y, w, h = crop
            argv += ["-crop", f"{w}x{h}+{x}+{y}", "+repage"]
        self.run(*argv, str(path))
        return path

    # -- doing ------------------------------------------------------------------------------
    def click(self, x: int, y: int, button: int = 1) -> None:
        self.run("xdotool", "mousemove", "--sync", str(x), str(y))
        time.sleep(0.05)
        self.run("xdotool", "click", str(button))

    def key(self, *keys: str, delay_ms: int = 120) -> None:
        for k in keys:
            self.run("xdotool", "key", "--delay", str(delay_ms), k)
            time.sleep(delay_ms / 1000)


# -- the app ----------------------------------------------------------------------------------


class TrayApp:
    """``python -m kvswitch_gui`` on the display, as its own process (a context manager).
    ``started`` is its ``time.perf_counter()`` at launch; ``close()`` quits it with SIGINT
    (the app's Ctrl-C: a clean Quit), then SIGKILL."""

    def __init__(
        self,
        x: XSession,
        *args: str,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
        name: str = "kvswitch",
    ) -> None:
        self.x = x
        self.args = args
        self.base_env = env
        self.log_path = log or x.workdir / "app.log"
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def __enter__(self) -> TrayApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.started = time.perf_counter()
            # PYTHONFAULTHANDLER: a crash, or the SIGABRT wait_icon sends a hung app, leaves
            # every thread's Python stack in the log
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kvswitch_gui", *self.args],
                env=self.x.env(self.base_env, PYTHONFAULTHANDLER="1"),
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self, limit: int = 3000) -> str:
        """The end of the app's output (stdout and stderr), ``limit`` characters at most."""
        return self.log_path.read_text(errors="replace")[-limit:] if self.log_path.exists() else ""

    def icon(self, tree: list[Window] | None = None) -> Window | None:
        """The app's icon once trayer has laid it out in its panel."""
        found = self.x.tray_icons(self.name, laid_out=True, tree=tree)
        return found[0] if found else None

    def wait_icon(self, timeout: float = 60.0, interval: float = 0.1) -> Window:
        """The laid-out icon, polled every ``interval`` s (each poll runs xwininfo: on a busy
        machine a tight poll takes the CPU the app needs to start; the bench polls tighter)."""
        seen: list[str] = []  # what changed, when: the story of a failure

        def look() -> Window | str | None:
            if not self.alive():
                return "dead"
            tree = self.x.tree()  # one listing per look
            mine = [w for w in tree if w.name == self.name]
            state = (
                ", ".join(
                    f"{'in the panel' if self.x.panel and self.x.panel.id in w.path else 'top-level'} "
                    f"{w.width}x{w.height}+{w.x}+{w.y}"
                    for w in mine
                )
                or "no window"
            )
            if not seen or not seen[-1].endswith(state):
                seen.append(f"{time.perf_counter() - self.started:6.2f} s: {state}")
            return self.icon(tree)

        icon = wait_until(look, timeout, interval=interval)
        if not isinstance(icon, Window):
            if self.alive():  # hung: faulthandler writes its threads' stacks to the log
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGABRT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(10)  # type: ignore[union-attr]
            raise RuntimeError(
                f"the tray icon did not appear ({'exited' if icon == 'dead' else 'timeout'}); "
                f"the app's windows named {self.name!r}: {seen}; panel now: {self.x.tray_icons()}; "
                f"app log:\n{self.log(20_000)}"
            )
        return icon

    def wait_mode(self, mode: str, timeout: float = 60.0) -> Window:
        """The icon once it shows ``mode``, looked up afresh on every poll (the panel may lay it
        out again, under a new window, after the first look); an AssertionError that tells the
        colours and windows seen, and the app's log, when it does not within ``timeout`` s."""
        seen: list[str] = []

        def look() -> Window | None:
            icon = self.icon()
            if icon is None:
                state = "no icon in the panel"
            else:
                try:
                    shown = self.x.icon_mode(icon)
                except (RuntimeError, ValueError) as exc:  # the window went away, or drew nothing yet
                    shown = f"unreadable ({type(exc).__name__})"
                if shown == mode:
                    return icon
                state = f"{icon.id:#x} {icon.width}x{icon.height}+{icon.x}+{icon.y} shows {shown!r}"
            if not seen or not seen[-1].endswith(state):
                seen.append(f"{time.perf_counter() - self.started:6.2f} s: {state}")
            return None

        found = wait_until(look, timeout)
        assert isinstance(found, Window), (
            f"the icon never showed {mode!r}: {seen}; app alive: {self.alive()}; app log:\n{self.log(20_000)}"
        )
        return found

    def close(self) -> int | None:
        if self.proc is None:
            return None
        code = stop_process(self.proc, signal.SIGINT)
        return code


# -- a kvswitch sandbox -------------------------------------------------------------------------


def sandbox_env(root: Path) -> dict[str, str]:
    """HOME, the XDG dirs and KVSWITCH_HOME under ``root``; keys in a plaintext file keyring
    there (never the user's own)."""
    home = root / "home"
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "KVSWITCH_HOME": str(root / "kvswitch-home"),
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
    }


def make_sandbox(root: Path) -> dict[str, Path]:
    """``kvswitch init --preset taotoken --model gpt-4o-mini --no-key`` in a process of its own
    under ``root``; the client files and the config by name."""
    env = {**os.environ, **sandbox_env(root)}
    (root / "home").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch", "init", "--preset", "taotoken", "--model", "gpt-4o-mini", "--no-key"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kvswitch init failed: {done.stdout}{done.stderr}")
    home = root / "home"
    return {
        "cline": home / ".cline" / "settings.json",
        "ccswitch": home / ".config" / "cc-switch" / "config.toml",
        "config": root / "kvswitch-home" / "config" / "kvswitch.toml",
    }


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file; ValueError when it is not one."""
    head = path.read_bytes()[:33]
    if len(head) < 33 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return width, height
