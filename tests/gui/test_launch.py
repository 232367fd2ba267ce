"""``kvswitch-tray`` (``kvswitch_gui.launch:main``) without Qt for Python: it says how to
install it, in the user's language, and exits 1 with no traceback; ``--install`` works without
it. With Qt: ``--help`` needs no display, and the app runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

CJK = re.compile("[\u4e00-\u9fff]")

# PySide6 (and shiboken6) made unfindable: what a kvswitch installed without the gui extra sees
HIDE_QT = """
import importlib.machinery, sys

class HideQt(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in ("PySide6", "shiboken6"):
            return None
        return super().find_spec(name, path, target)

sys.meta_path = [HideQt if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""

# PySide6 there but broken (a system library its GUI modules need is missing): they fail to load
BREAK_QT = """
import importlib.abc, sys

class BreakQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("PySide6.QtGui", "PySide6.QtWidgets"):
            raise ImportError("libEGL.so.1: cannot open shared object file: No such file or directory", name=name)
        return None

sys.meta_path.insert(0, BreakQt())
"""

RUN = """
from kvswitch_gui.launch import main
rc = main({argv!r})
print("qt imported:", "PySide6" in sys.modules, "QtCore" in str(sorted(sys.modules)), file=sys.stderr)
sys.exit(rc)
"""


def _run(prelude: str, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", prelude + RUN.format(argv=argv)],
        env=full,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_pyside6_it_says_how_to_install_it() -> None:
    done = _run(HIDE_QT, [])
    assert done.returncode == 1
    assert "kvswitch-tray needs Qt for Python (PySide6)" in done.stderr
    assert "pip install 'kvswitch[gui]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert "qt imported: False" in done.stderr  # nothing tried to load it
    assert done.stdout == ""


def test_without_pyside6_in_chinese() -> None:
    done = _run(HIDE_QT, ["--no-watch"], KVSWITCH_LANG="zh-CN")
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert CJK.search(first) and "PySide6" in first, done.stderr
    assert "pip install 'kvswitch[gui]'" in done.stderr  # the command itself stays as it is
    assert "Traceback" not in done.stderr


def test_without_pyside6_install_and_uninstall_still_work(sandbox: Path) -> None:
    data = Path(os.environ["XDG_DATA_HOME"])
    done = _run(HIDE_QT, ["--install"])
    assert done.returncode == 0, done.stderr
    entry = data / "applications" / "kvswitch-tray.desktop"
    assert entry.is_file() and f"installed {entry}" in done.stdout
    assert (data / "icons/hicolor/scalable/apps/kvswitch.svg").is_file()
    assert "qt imported: False" in done.stderr
    done = _run(HIDE_QT, ["--uninstall"])
    assert done.returncode == 0 and f"removed {entry}" in done.stdout
    assert not entry.exists()


def test_a_broken_pyside6_is_named_not_a_traceback() -> None:
    done = _run(BREAK_QT, [])
    assert done.returncode == 1
    assert "cannot load Qt for Python (PySide6): libEGL.so.1" in done.stderr
    assert "Traceback" not in done.stderr


def test_help_needs_no_display_and_lists_the_options() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    done = subprocess.run(
        [sys.executable, "-m", "kvswitch_gui.launch", "--help"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for option in ("--tray-wait", "--install", "--uninstall", "--window", "--no-watch"):
        assert option in done.stdout
    assert done.stdout.startswith("usage: kvswitch-tray")


def test_with_pyside6_it_runs_the_app(kv_sandbox: dict[str, Path]) -> None:
    """The real entry point, offscreen: the window (no tray can come there), quit after it shows."""
    script = (
        "import sys\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from kvswitch_gui.launch import main\n"
        "app = QApplication([])\n"
        "def check():\n"
        "    shown = [w for w in QApplication.topLevelWidgets() if w.isVisible()]\n"
        "    print('shown', len(shown) > 0, app.desktopFileName())\n"
        "    app.quit()\n"
        "QTimer.singleShot(1500, check)\n"
        "sys.exit(main(['--no-watch']))\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "KVSWITCH_TRAY_NO_DETECT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "shown True kvswitch-tray" in done.stdout, done.stdout + done.stderr
