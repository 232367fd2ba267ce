"""The app: the fallback window when there is no system tray, its options, one instance per
kvswitch home, and the thin-GUI rule (views and controllers do no file, network or process I/O themselves)."""

from __future__ import annotations

import ast
import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from kvswitch_gui.app import SingleInstance, main
from kvswitch_gui.main_window import MainWindow

GUI = Path(__file__).resolve().parents[2] / "gui"


def _run_main(argv: list[str], check: Callable[[], bool], timeout_ms: int = 8000) -> tuple[int, list[Any]]:
    """Run ``main(argv)``; quit once ``check()`` holds (or after the timeout); what it saw."""
    seen: list[Any] = []
    waited = [0]

    def poll() -> None:
        waited[0] += 50
        if check() or waited[0] >= timeout_ms:
            seen.append(check())
            timer.stop()
            QApplication.quit()

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(50)
    rc = main(argv)
    timer.stop()
    return rc, seen


def _window() -> MainWindow | None:
    found = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
    return found[0] if found else None


def test_no_tray_means_the_fallback_window(
    qapp: QApplication, kv_sandbox: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert not QSystemTrayIcon.isSystemTrayAvailable()  # offscreen
    before = qapp.quitOnLastWindowClosed()
    state: dict[str, Any] = {}

    def ready() -> bool:
        w = _window()
        if w is None or not w.merged_button.isChecked():
            return False
        state.update(
            header=w.header.text(),
            quits=qapp.quitOnLastWindowClosed(),
            status=w.status_title.text(),
            clients=[w.clients.topLevelItem(i).text(1) for i in range(w.clients.topLevelItemCount())],
            watch=w.watch_check.isChecked(),
            desktop=qapp.desktopFileName(),
            icon=qapp.windowIcon().isNull(),
        )
        return True

    rc, seen = _run_main(["--no-watch"], ready)
    assert rc == 0 and seen == [True]
    assert state["desktop"] == "kvswitch-tray"  # the menu entry's name: desktops match windows to it
    assert state["icon"] is False  # kvswitch's own icon on its windows
    assert "waiting" not in capsys.readouterr().err  # offscreen Qt never has a tray: no wait for one
    assert state["header"] == "taotoken · merged"
    assert state["clients"] == ["merged, in sync", "merged, in sync"]
    assert state["quits"] is True  # closing the window quits when it is all there is
    assert state["status"] == "No system tray"
    assert state["watch"] is False  # --no-watch
    assert qapp.quitOnLastWindowClosed() == before
    assert _window() is None


@pytest.mark.parametrize("value", ["-1", "soon", "inf", "nan"])
def test_tray_wait_takes_seconds(
    qapp: QApplication, kv_sandbox: dict[str, Path], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--tray-wait", value])
    assert exit_.value.code == 2
    assert "expected a number of seconds (0 or more)" in capsys.readouterr().err


def test_help_lists_the_desktop_options(qapp: QApplication, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for option in ("--tray-wait SECONDS", "--install", "--uninstall", "--window", "--no-watch"):
        assert option in out
    assert "default: 30" in out


def test_fallback_window_buttons_switch(qtbot: Any, kv_sandbox: dict[str, Path]) -> None:
    from kvswitch_gui.tray import TrayController

    c = TrayController(use_tray=False, watch=False)
    c.start()
    try:
        w = c.window
        qtbot.waitUntil(lambda: c.loaded and c.idle, timeout=8000)
        w.split_button.click()
        qtbot.waitUntil(lambda: c.idle and w.split_button.isChecked() and c.icon_key == ("split", False), timeout=8000)
        assert 'mode = "split"' in kv_sandbox["ccswitch"].read_text()
        assert w.status_title.text() == "Switched to split" and "restart Cline (settings.json)" in w.status.text()
        w.clients.setCurrentItem(w.clients.topLevelItem(0))
        assert w.open_file_button.isEnabled()
        w.restore_menu.aboutToShow.emit()
        (backup,) = w.restore_menu.actions()
        backup.trigger()
        qtbot.waitUntil(lambda: c.idle and '"mode": "merged"' in kv_sandbox["cline"].read_text(), timeout=8000)
        assert w.clients.topLevelItem(0).text(1).startswith("merged, drifted")
    finally:
        c.shutdown()
        c.deleteLater()


def test_one_instance_per_kvswitch_home(
    qtbot: Any, kv_sandbox: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    first = SingleInstance()
    assert first.acquire()
    try:
        assert not SingleInstance().acquire()
        with qtbot.waitSignal(first.raise_requested, timeout=5000), contextlib.redirect_stdout(io.StringIO()):
            assert main(["--no-watch"]) == 1
        err = capsys.readouterr().err
        assert "kvswitch-tray is already running" in err and "brought it to the front" in err
    finally:
        first.release()
    again = SingleInstance()
    assert again.acquire()  # free once the first let go
    again.release()


def test_present_brings_the_window_back(qtbot: Any, kv_sandbox: dict[str, Path]) -> None:
    from kvswitch_gui.tray import TrayController

    c = TrayController(use_tray=False, watch=False)
    c.start()
    try:
        c.window.hide()
        c.present()
        assert c.window.isVisible()
        qtbot.waitUntil(lambda: c.idle, timeout=8000)
    finally:
        c.shutdown()
        c.deleteLater()


# -- the thin-GUI rule -------------------------------------------------------------------------------

VIEWS = sorted([*GUI.glob("*_dialog.py"), GUI / "actions.py", GUI / "main_window.py", GUI / "tray.py"])
BANNED_MODULES = {"httpx", "subprocess", "socket", "requests", "urllib", "shutil", "tempfile", "io", "http"}
BANNED_ATTRS = {
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "open",
    "mkdir",
    "unlink",
    "touch",
    "rmdir",
    "iterdir",
    "glob",
    "rglob",
    "exists",
    "stat",
    "is_file",
    "is_dir",
    "resolve",
}
# what the views may use from the library at run time: pure values and exception classes
LIBRARY_ALLOWED = {"WatcherBusyError", "KvswitchError", "check_key", "show_name"}  # pure: no I/O
# worker functions the views may call directly because they do no I/O
JOBS_PURE = {"probe_summary", "Snapshot"}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skip |= {id(n) for n in ast.walk(node)}
    return skip


@pytest.mark.parametrize("path", VIEWS, ids=lambda p: p.name)
def test_views_do_no_io_of_their_own(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_nodes(tree)
    problems = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in BANNED_MODULES or top == "kvswitch":
                    problems.append(f"{where} imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in BANNED_MODULES:
                problems.append(f"{where} imports from {node.module}")
            if top == "kvswitch":
                extra = {a.name for a in node.names} - LIBRARY_ALLOWED
                if extra:
                    problems.append(
                        f"{where} imports {sorted(extra)} from {node.module} (run library calls "
                        "through kvswitch_gui.jobs in run_in_thread)"
                    )
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("open", "exec", "eval", "__import__"):
                problems.append(f"{where} calls {f.id}()")
            elif isinstance(f, ast.Attribute):
                if f.attr in BANNED_ATTRS:
                    problems.append(f"{where} calls .{f.attr}()")
                if isinstance(f.value, ast.Name) and f.value.id == "jobs" and f.attr not in JOBS_PURE:
                    problems.append(f"{where} calls jobs.{f.attr}() on the GUI thread (pass it to run_in_thread)")
                if isinstance(f.value, ast.Name) and f.value.id == "os":
                    problems.append(f"{where} calls os.{f.attr}()")
                if (
                    isinstance(f.value, ast.Attribute)
                    and isinstance(f.value.value, ast.Name)
                    and f.value.value.id == "os"
                    and f.value.attr != "environ"
                ):
                    problems.append(f"{where} calls os.{f.value.attr}.{f.attr}()")
    assert not problems, "\n".join(problems)


def test_the_rule_covers_the_views() -> None:
    assert {p.name for p in VIEWS} >= {"settings_dialog.py", "key_dialog.py", "main_window.py", "tray.py"}
    # and it would catch a direct read
    bad = ast.parse("from pathlib import Path\nPath('x').read_text()\n")
    assert any(isinstance(n, ast.Attribute) and n.attr in BANNED_ATTRS for n in ast.walk(bad))
