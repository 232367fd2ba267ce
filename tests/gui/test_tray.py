"""The tray controller, driven directly (offscreen Qt, no tray host): its menu after
aboutToShow, every action, switches through the library in a worker (both files written, or
none), notices on success and failure, drift in the clients' titles, restore, the watcher."""

from __future__ import annotations

import contextlib
import io
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QMenu, QWidget

from kvswitch.cli import main as cli
from kvswitch.watch import Watcher
from kvswitch_gui.tray import TrayController, plain_text

WAIT = 8000  # ms; the waits return as soon as the condition holds


def _run_cli(*argv: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli(list(argv)) == 0


@pytest.fixture
def make(qtbot: Any) -> Iterator[Callable[..., TrayController]]:
    """``make(start=True, **kwargs)``: a TrayController (no tray, no watcher unless given),
    started and loaded unless ``start=False``; each one made is shut down after the test."""
    made: list[TrayController] = []

    def _make(start: bool = True, **kwargs: Any) -> TrayController:
        c = TrayController(**{"use_tray": False, "watch": False, **kwargs})
        made.append(c)
        if start:
            c.start()
            qtbot.waitUntil(lambda: c.loaded and c.idle, timeout=WAIT)
        return c

    yield _make
    for c in made:
        c.shutdown()
        c.deleteLater()


@pytest.fixture
def controller(make: Callable[..., TrayController], kv_sandbox: dict[str, Path]) -> TrayController:
    return make()


def _open_menu(qtbot: Any, c: TrayController) -> QMenu:
    c.menu.aboutToShow.emit()
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    return c.menu


def _find(menu: QMenu, *labels: str) -> QAction:
    """The action at a path of labels; a submenu matches by the start of its title."""
    action: QAction | None = None
    for label in labels:
        if action is not None:
            sub = action.menu()
            assert sub is not None, f"{action.text()!r} has no submenu"
            menu = sub
        found = [
            a
            for a in menu.actions()
            if plain_text(a.text()) == label or (a.menu() is not None and plain_text(a.text()).startswith(label))
        ]
        assert found, f"no {label!r} in {[plain_text(a.text()) for a in menu.actions()]}"
        action = found[0]
    assert action is not None
    return action


def _titles(menu: QMenu) -> list[str]:
    """The clients' submenu titles."""
    clients = _find(menu, "Clients").menu()
    return [plain_text(a.text()) for a in clients.actions() if a.menu() is not None]


def _shown(menu: QMenu) -> list[str]:
    """The texts of a menu's visible items (no separators)."""
    return [plain_text(a.text()) for a in menu.actions() if a.isVisible() and not a.isSeparator()]


def _last(c: TrayController) -> Any:
    assert c.notices, "no notice"
    return c.notices[-1]


def _wait_notice(qtbot: Any, c: TrayController, title_part: str) -> Any:
    qtbot.waitUntil(lambda: any(title_part in n.title for n in c.notices), timeout=WAIT)
    return next(n for n in reversed(c.notices) if title_part in n.title)


# -- the menu -------------------------------------------------------------------------------


def test_menu_shows_state_with_check_marks(qtbot: Any, controller: TrayController) -> None:
    menu = _open_menu(qtbot, controller)
    texts = [plain_text(a.text()) for a in menu.actions() if not a.isSeparator() and a.isVisible()]
    assert texts[:10] == [
        "taotoken · merged",
        "Mode — merged",
        "Profile — taotoken",
        "Clients — all in sync",
        "Gateway — off",
        "Run probe…",
        "Settings…",
        "API key…",
        "Watch files",
        "Open log",
    ]
    assert texts[10:] in (["Language", "Launch at login", "Quit"], ["Language", "Quit"])  # autostart: if installed
    assert not menu.actions()[0].isEnabled()
    merged, split = _find(menu, "Mode", "Merged"), _find(menu, "Mode", "Split")
    assert merged.isCheckable() and merged.isChecked() and not split.isChecked()
    assert merged.actionGroup() is split.actionGroup() and merged.actionGroup().isExclusive()
    assert _find(menu, "Profile", "taotoken").isChecked()
    assert _titles(menu) == ["Cline (settings.json) — merged, in sync", "CC Switch (config.toml) — merged, in sync"]
    assert _shown(_find(menu, "Clients").menu())[-1] == "Detect clients…"
    sub = _find(menu, "Clients", "Cline (settings.json)").menu()
    assert _shown(sub) == ["merged, in sync", "Merged", "Split", "Open file", "Open folder", "Restore a backup"]
    assert [plain_text(a.text()) for a in _find(menu, "Clients", "Cline", "Restore a backup").menu().actions()] == [
        "no backups yet"
    ]
    watch = _find(menu, "Watch files")
    assert watch.isCheckable() and not watch.isChecked()
    assert controller.icon_key == ("merged", False)
    assert "taotoken · merged" in controller.tooltip() and "no probe run yet" in controller.tooltip()


def test_labels_update_in_place_when_fresh_state_arrives(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    menu = _open_menu(qtbot, controller)
    header, clients = menu.actions()[0], _find(menu, "Clients").menu()
    ccswitch = kv_sandbox["ccswitch"]
    ccswitch.write_text(ccswitch.read_text().replace("chunk_size = 512", "chunk_size = 768"))
    controller.refresh()  # what arrives while the menu is open
    qtbot.waitUntil(lambda: controller.idle, timeout=WAIT)
    assert menu.actions()[0] is header and _find(menu, "Clients").menu() is clients  # same items
    assert _titles(menu)[1] == "CC Switch (config.toml) — merged, drifted: cache.chunk_size · changed outside"
    assert plain_text(_find(menu, "Clients").text()) == "Clients — 1 needs attention"
    assert controller.icon_key == ("merged", True)


# -- switching ----------------------------------------------------------------------------------


def test_mode_switch_writes_both_files_and_notifies(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    menu = _open_menu(qtbot, controller)
    _find(menu, "Mode", "Split").trigger()
    qtbot.waitUntil(
        lambda: (
            '"mode": "split"' in kv_sandbox["cline"].read_text()
            and 'mode = "split"' in kv_sandbox["ccswitch"].read_text()
        ),
        timeout=WAIT,
    )
    notice = _wait_notice(qtbot, controller, "Switched to split")
    assert not notice.error
    assert "Cline (settings.json): merged → split" in notice.text
    assert "CC Switch (config.toml): merged → split" in notice.text
    assert (
        "restart Cline (settings.json) to apply" in notice.text
        and "restart CC Switch (config.toml) to apply" in notice.text
    )
    assert 'mode = "split"' in kv_sandbox["config"].read_text()
    qtbot.waitUntil(lambda: controller.idle and controller.icon_key == ("split", False), timeout=WAIT)
    menu = _open_menu(qtbot, controller)
    assert _find(menu, "Mode", "Split").isChecked() and not _find(menu, "Mode", "Merged").isChecked()
    assert menu.actions()[0].text() == "taotoken · split"
    assert _titles(menu) == ["Cline (settings.json) — split, in sync", "CC Switch (config.toml) — split, in sync"]


def test_a_failing_switch_writes_nothing_and_says_why(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    kv_sandbox["ccswitch"].write_text('[cache\nmode = "merged"\n')  # does not parse
    before = {k: p.read_bytes() for k, p in kv_sandbox.items()}
    controller.switch_mode("split")
    notice = _wait_notice(qtbot, controller, "Switch to split failed")
    assert notice.error and "config.toml" in notice.text and "Nothing was changed" in notice.text
    qtbot.waitUntil(lambda: controller.idle, timeout=WAIT)
    assert {k: p.read_bytes() for k, p in kv_sandbox.items()} == before
    assert controller.icon_key == ("merged", True)
    assert controller.window.status_title.text() == "Switch to split failed"  # the fallback's status line
    menu = _open_menu(qtbot, controller)
    assert _find(menu, "Mode", "Merged").isChecked()  # the check mark went back
    assert _titles(menu)[1].startswith("CC Switch (config.toml) — invalid: ")


def test_second_switch_while_one_runs_is_refused(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    controller.switch_mode("split")
    controller.switch_mode("merged")
    assert controller.notices[-1].title == "Please wait" and controller.notices[-1].error
    _wait_notice(qtbot, controller, "Switched to split")
    qtbot.waitUntil(lambda: controller.idle, timeout=WAIT)
    assert 'mode = "split"' in kv_sandbox["config"].read_text()


def test_profile_switch_renders_the_profile(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    _run_cli("profile", "add", "local", "--preset", "llamacpp", "--model", "tiny")
    menu = _open_menu(qtbot, controller)
    assert [plain_text(a.text()) for a in _find(menu, "Profile").menu().actions()] == ["taotoken", "local"]
    _find(menu, "Profile", "local").trigger()
    notice = _wait_notice(qtbot, controller, "Profile local applied")
    assert not notice.error
    assert '"cline.openAiBaseUrl": "http://127.0.0.1:8080/v1"' in kv_sandbox["cline"].read_text()
    assert 'base_url = "http://127.0.0.1:8080/v1"' in kv_sandbox["ccswitch"].read_text()
    assert 'active_profile = "local"' in kv_sandbox["config"].read_text()
    menu = _open_menu(qtbot, controller)
    assert _find(menu, "Profile", "local").isChecked() and menu.actions()[0].text() == "local · merged"


def test_clients_titles_show_drift_after_an_outside_edit(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]
) -> None:
    cline = kv_sandbox["cline"]
    cline.write_text(cline.read_text().replace('"chunkSize": 512', '"chunkSize": 1024'))
    menu = _open_menu(qtbot, controller)
    assert _titles(menu) == [
        "Cline (settings.json) — merged, drifted: cache.chunk_size · changed outside",
        "CC Switch (config.toml) — merged, in sync",
    ]
    assert controller.icon_key == ("merged", True)
    assert "Cline (settings.json): merged, drifted: cache.chunk_size" in controller.tooltip()


def test_restore_a_backup_from_the_menu(qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]) -> None:
    original = kv_sandbox["cline"].read_bytes()
    _run_cli("switch", "split")
    menu = _open_menu(qtbot, controller)
    restore = _find(menu, "Clients", "Cline", "Restore a backup").menu()
    (backup,) = restore.actions()
    assert backup.data() and backup.isEnabled()
    backup.trigger()
    notice = _wait_notice(qtbot, controller, "Restored settings.json")
    assert not notice.error and "the version it replaced is backup" in notice.text
    assert kv_sandbox["cline"].read_bytes() == original
    qtbot.waitUntil(lambda: controller.idle, timeout=WAIT)
    menu = _open_menu(qtbot, controller)
    assert _titles(menu)[0].startswith("Cline (settings.json) — merged, drifted")  # config still says split
    assert len(_find(menu, "Clients", "Cline", "Restore a backup").menu().actions()) == 2


# -- the other actions -----------------------------------------------------------------------------


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def fake(url: Any) -> bool:
        urls.append(url.toLocalFile())
        return True

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(fake))
    return urls


def test_open_file_folder_and_log(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path], opened: list[str]
) -> None:
    menu = _open_menu(qtbot, controller)
    _find(menu, "Clients", "CC Switch", "Open file").trigger()
    _find(menu, "Clients", "CC Switch", "Open folder").trigger()
    assert opened == [str(kv_sandbox["ccswitch"]), str(kv_sandbox["ccswitch"].parent)]
    _find(menu, "Open log").trigger()
    assert _last(controller).title == "No log yet" and len(opened) == 2
    controller.set_watch(True)  # the watcher writes its log
    qtbot.waitUntil(lambda: controller.watching and controller.idle, timeout=WAIT)
    menu = _open_menu(qtbot, controller)
    _find(menu, "Open log").trigger()
    assert opened[-1].endswith("logs/watch.log")


def test_open_failure_is_a_notice(qtbot: Any, controller: TrayController, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: False))
    menu = _open_menu(qtbot, controller)
    _find(menu, "Clients", "Cline", "Open file").trigger()
    assert _last(controller).error and _last(controller).title == "Cannot open the file"


def test_quit_action_asks_to_quit(qtbot: Any, controller: TrayController) -> None:
    menu = _open_menu(qtbot, controller)
    with qtbot.waitSignal(controller.quit_requested, timeout=1000):
        _find(menu, "Quit").trigger()


def test_run_probe_without_the_probe_window_is_an_error_notice(
    qtbot: Any, controller: TrayController, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "kvswitch_gui.probe_window", None)  # not importable
    menu = _open_menu(qtbot, controller)
    _find(menu, "Run probe…").trigger()
    notice = _last(controller)
    assert notice.error and notice.title == "The probe is not available"


class _FakeProbeWindow(QWidget):
    report_ready = Signal(dict)
    made: ClassVar[list[_FakeProbeWindow]] = []

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.made.append(self)


def test_run_probe_opens_the_window_and_shows_its_report(
    qtbot: Any, controller: TrayController, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("kvswitch_gui.probe_window")
    module.ProbeWindow = _FakeProbeWindow  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kvswitch_gui.probe_window", module)
    _FakeProbeWindow.made.clear()
    menu = _open_menu(qtbot, controller)
    _find(menu, "Run probe…").trigger()
    _find(menu, "Run probe…").trigger()  # the same window comes to the front again
    (window,) = _FakeProbeWindow.made
    assert window.isVisible()
    report = {
        "time": "2026-12-02T15:03:56+0000",
        "modes": {"merged": {"ttft_ms": {"median": 30.4}}, "split": {"ttft_ms": {"median": 45.0}}},
    }
    window.report_ready.emit(report)
    notice = _wait_notice(qtbot, controller, "Probe finished")
    assert "merged 30 ms · split 45 ms" in notice.text
    assert "TTFT median merged 30 ms · split 45 ms" in controller.tooltip()
    assert "TTFT median merged 30 ms" in controller.tray.toolTip()
    window.close()


def test_settings_action_saves_and_applies(qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path]) -> None:
    menu = _open_menu(qtbot, controller)
    _find(menu, "Settings…").trigger()
    dialog = controller._settings
    assert dialog is not None and dialog.isVisible()
    qtbot.waitUntil(lambda: dialog.config is not None and not dialog.busy, timeout=WAIT)
    dialog.chunk_size.setValue(768)
    qtbot.waitUntil(lambda: dialog.can_save, timeout=WAIT)
    dialog.save()
    _wait_notice(qtbot, controller, "Profile taotoken applied")
    assert '"chunkSize": 768' in kv_sandbox["cline"].read_text()
    assert "chunk_size = 768" in kv_sandbox["ccswitch"].read_text()
    dialog.close()


def test_key_action_stores_the_key_and_writes_it(
    qtbot: Any, controller: TrayController, kv_sandbox: dict[str, Path], memory_keyring: dict[tuple[str, str], str]
) -> None:
    menu = _open_menu(qtbot, controller)
    _find(menu, "API key…").trigger()
    dialog = controller._key
    assert dialog is not None
    qtbot.waitUntil(lambda: dialog.info is not None, timeout=WAIT)
    dialog.key_edit.setText("sk-live-7f3kQ9zR2mX8vB1nL4aA")
    dialog.save()
    _wait_notice(qtbot, controller, "Profile taotoken applied")
    assert "sk-live-7f3kQ9zR2mX8vB1nL4aA" in memory_keyring.values()
    assert '"cline.openAiApiKey": "sk-live-7f3kQ9zR2mX8vB1nL4aA"' in kv_sandbox["cline"].read_text()
    assert all("7f3kQ9zR2mX8vB1nL4aA" not in n.text for n in controller.notices)
    dialog.close()


def test_notices_go_to_the_tray_when_there_is_one(
    make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    c = make(start=False, use_tray=True)
    shown: list[tuple[Any, ...]] = []
    c.tray.showMessage = lambda *args: shown.append(args)  # type: ignore[method-assign]
    assert c.window is None and c.tray.contextMenu() is c.menu
    c.notify("Switched to split", "two files", error=False)
    c.notify("Switch to split failed", "why", error=True)
    assert [s[:2] for s in shown] == [("Switched to split", "two files"), ("Switch to split failed", "why")]
    assert [n.error for n in c.notices] == [False, True]


# -- the watcher -----------------------------------------------------------------------------------


def test_watcher_picks_up_an_outside_edit_and_updates_the_icon(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    c = make(watch=True)
    qtbot.waitUntil(lambda: c.watching, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert _find(menu, "Watch files").isChecked() and c.window.watch_check.isChecked()
    cline = kv_sandbox["cline"]
    cline.write_text(cline.read_text().replace('"mode": "merged"', '"mode": "split"'))
    qtbot.waitUntil(
        lambda: c.icon_key == ("split", False), timeout=5000
    )  # "within a couple of seconds", with slack for a loaded machine
    assert 'mode = "split"' in kv_sandbox["ccswitch"].read_text()  # propagated
    notice = _wait_notice(qtbot, c, "Took an outside edit")
    assert "settings.json" in notice.text
    menu = _open_menu(qtbot, c)
    assert _find(menu, "Mode", "Split").isChecked()
    _find(menu, "Watch files").trigger()  # off
    qtbot.waitUntil(lambda: not c.watching and c.idle, timeout=WAIT)
    assert not c.window.watch_check.isChecked()


def test_another_watcher_running_unchecks_the_toggle(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    with Watcher():
        c = make(watch=True)
        notice = _wait_notice(qtbot, c, "Not watching files")
        assert notice.error and "another watcher is running" in notice.text
        qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
        assert not c.watching and not c.watch_wanted
        menu = _open_menu(qtbot, c)
        assert not _find(menu, "Watch files").isChecked() and not c.window.watch_check.isChecked()


def test_no_config_yet_shows_the_reason(qtbot: Any, make: Callable[..., TrayController]) -> None:
    c = make()
    menu = _open_menu(qtbot, c)
    assert menu.actions()[0].text() == "kvswitch — not ready"
    assert "kvswitch init" in menu.actions()[1].text()
    assert c.icon_key == (None, True)
    c.switch_mode("split")
    notice = _wait_notice(qtbot, c, "Switch to split failed")
    assert "kvswitch init" in notice.text


def test_the_real_probe_window_opens_from_the_menu(qtbot: Any, controller: TrayController) -> None:
    from kvswitch_gui.probe_window import ProbeWindow

    menu = _open_menu(qtbot, controller)
    _find(menu, "Run probe…").trigger()
    assert isinstance(controller._probe, ProbeWindow) and controller._probe.isVisible()
    assert not any(n.error for n in controller.notices)


def test_last_probe_from_history_is_in_the_tooltip(qtbot: Any, controller: TrayController) -> None:
    from kvswitch.probe.report import save_history

    save_history({"time": "2026-12-02T15:03:56+0000", "modes": {"merged": {"ttft_ms": {"median": 31.0}}}})
    controller.refresh()
    qtbot.waitUntil(lambda: "TTFT median merged 31 ms" in controller.tray.toolTip(), timeout=WAIT)


def test_no_watch_environment_variable(
    make: Callable[..., TrayController], kv_sandbox: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KVSWITCH_TRAY_NO_WATCH", "1")
    c = make(start=False, watch=None)  # the environment decides
    assert not c.watch_wanted


def test_watcher_reports_an_invalid_outside_edit(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path]
) -> None:
    c = make(watch=True)
    qtbot.waitUntil(lambda: c.watching, timeout=WAIT)
    kv_sandbox["ccswitch"].write_text('[cache]\nmode = "both"\n')
    notice = _wait_notice(qtbot, c, "A client file is invalid")
    assert notice.error and "config.toml" in notice.text and "nothing written" in notice.text
    qtbot.waitUntil(lambda: c.idle and c.icon_key == ("merged", True), timeout=WAIT)
    assert '"mode": "merged"' in kv_sandbox["cline"].read_text()  # nothing propagated
