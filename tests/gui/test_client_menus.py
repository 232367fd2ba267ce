"""The tray's per-client submenus and "Detect clients…", offscreen, over real client files:
Claude Code's and Qwen Code's user files in a sandbox HOME, registered, with a profile whose
modes have URLs of their own (``two_clients``). A client switched from its submenu changes its
file alone (the other's bytes stay), keeps its mode as its own until "Follow all"; an edit made
outside kvswitch shows; the detect dialog lists the sandbox's clients and registers the checked
one; the first start offers it once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu

from kvswitch_gui import jobs
from kvswitch_gui.detect_dialog import DetectDialog
from kvswitch_gui.tray import TrayController, plain_text
from tests.gui import test_tray
from tests.gui.test_tray import WAIT, _find, _open_menu, _shown, _titles, _wait_notice
from tests.gui.two_clients import file_mode, make_two_clients, npm_program, seed_files

make = test_tray.make  # the tray tests' fixture: controllers made here are shut down after each test


@pytest.fixture
def two(sandbox: Path) -> dict[str, Path]:
    return make_two_clients(os.environ)


def _client_menu(menu: QMenu, label: str) -> QMenu:
    sub = _find(menu, "Clients", label).menu()
    assert sub is not None
    return sub


def _client_config(config: Path) -> str:
    """kvswitch.toml's [[clients]] part."""
    text = config.read_text()
    return text[text.index("[[clients]]") :]


# -- switching one client ---------------------------------------------------------------------------


def test_switch_one_client_alone_then_follow_all(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make()
    menu = _open_menu(qtbot, c)
    # titled by name (qwen) or product (Claude Code), never the bare file name
    assert _titles(menu) == ["Claude Code — merged, in sync", "qwen — merged, in sync"]
    assert _shown(_client_menu(menu, "Claude Code")) == [
        "merged, in sync",
        "Merged",
        "Split",
        "Open file",
        "Open folder",
        "Restore a backup",
    ]
    assert _find(menu, "Clients", "Claude Code", "Merged").isChecked()
    assert not _find(menu, "Clients", "Claude Code", "Split").isChecked()
    assert [plain_text(a.text()) for a in _find(menu, "Mode").menu().actions()] == ["Merged", "Split"]
    qwen_before = two["qwen"].read_bytes()

    _find(menu, "Clients", "Claude Code", "Split").trigger()
    notice = _wait_notice(qtbot, c, "Claude Code switched to split")
    assert not notice.error and "Claude Code: merged → split" in notice.text
    assert "the other clients stay as they are" in notice.text
    assert file_mode(two) == ("split", "merged")
    assert "X-Cache-Mode: split" in two["claude"].read_text()
    assert two["qwen"].read_bytes() == qwen_before  # the other client's file: not one byte
    assert 'mode = "merged"' in two["config"].read_text()  # every client's mode stays
    assert 'mode = "split"' in _client_config(two["config"])  # Claude Code's own

    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert _titles(menu) == ["Claude Code — split, in sync", "qwen — merged, in sync"]
    claude = _client_menu(menu, "Claude Code")
    assert _find(menu, "Clients", "Claude Code", "Split").isChecked()  # the check mark moved
    assert not _find(menu, "Clients", "Claude Code", "Merged").isChecked()
    assert _shown(claude)[:4] == ["split, in sync · its own mode", "Merged", "Split", "Follow all (merged)"]
    assert "Follow all (merged)" not in _shown(_client_menu(menu, "qwen"))
    assert _find(menu, "Clients", "qwen", "Merged").isChecked()
    # the global menu now says what it does: every client, Claude Code's own mode too
    assert [plain_text(a.text()) for a in _find(menu, "Mode").menu().actions()] == [
        "Switch all to Merged",
        "Switch all to Split",
    ]
    assert _find(menu, "Mode", "Switch all to Merged").isChecked()
    assert c.icon_key == ("merged", False)  # each client is where it should be

    _find(menu, "Clients", "Claude Code", "Follow all (merged)").trigger()
    notice = _wait_notice(qtbot, c, "Claude Code follows all again (merged)")
    assert not notice.error and "Claude Code: split → merged" in notice.text
    assert file_mode(two) == ("merged", "merged")
    assert two["qwen"].read_bytes() == qwen_before
    assert 'mode = "split"' not in _client_config(two["config"])  # its own mode is gone
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert _titles(menu) == ["Claude Code — merged, in sync", "qwen — merged, in sync"]
    assert "Follow all (merged)" not in _shown(_client_menu(menu, "Claude Code"))
    assert [plain_text(a.text()) for a in _find(menu, "Mode").menu().actions()] == ["Merged", "Split"]


def test_switch_all_after_one_alone_brings_everyone_along(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make()
    c.switch_client(two["qwen"], "split")
    _wait_notice(qtbot, c, "qwen switched to split")
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert file_mode(two) == ("merged", "split")
    menu = _open_menu(qtbot, c)
    _find(menu, "Mode", "Switch all to Split").trigger()
    notice = _wait_notice(qtbot, c, "Switched to split")
    assert "Claude Code: merged → split" in notice.text and "qwen:" not in notice.text  # already split
    assert file_mode(two) == ("split", "split")
    assert 'mode = "split"' not in _client_config(two["config"])  # no own modes left
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert [plain_text(a.text()) for a in _find(menu, "Mode").menu().actions()] == ["Merged", "Split"]
    assert "Follow all (split)" not in _shown(_client_menu(menu, "qwen"))


def test_switching_a_client_that_is_already_there_writes_nothing(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make()
    before = {k: p.read_bytes() for k, p in two.items()}
    menu = _open_menu(qtbot, c)
    _find(menu, "Clients", "qwen", "Merged").trigger()
    notice = _wait_notice(qtbot, c, "qwen already merged")
    assert not notice.error and "nothing written" in notice.text
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert {k: p.read_bytes() for k, p in two.items()} == before


def test_a_failing_client_switch_says_why_and_writes_nothing(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make()
    two["claude"].write_text('{"env": {"ANTHROPIC_BASE_URL": ')  # cut off: does not parse
    before = {k: p.read_bytes() for k, p in two.items()}
    menu = _open_menu(qtbot, c)
    _find(menu, "Clients", "Claude Code", "Split").trigger()
    notice = _wait_notice(qtbot, c, "Switch of Claude Code to split failed")
    assert notice.error and "settings.json" in notice.text and "Nothing was changed" in notice.text
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert {k: p.read_bytes() for k, p in two.items()} == before
    assert c.icon_key == ("merged", True)
    menu = _open_menu(qtbot, c)
    assert _titles(menu)[0].startswith("Claude Code — invalid: ")
    assert not _find(menu, "Clients", "Claude Code", "Split").isChecked()


def test_busy_while_a_client_switch_runs(qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]) -> None:
    c = make()
    c.switch_client(two["claude"], "split")
    assert c.busy == "the switch of Claude Code to split"
    assert not c.mode_actions["split"].isEnabled()
    assert not c.client_items[two["claude"]].modes["merged"].isEnabled()
    c.switch_mode("split")
    assert c.notices[-1].title == "Please wait" and c.notices[-1].error
    _wait_notice(qtbot, c, "Claude Code switched to split")
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert file_mode(two) == ("split", "merged")


def test_an_edit_outside_kvswitch_shows(qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]) -> None:
    c = make()
    menu = _open_menu(qtbot, c)
    assert "changed outside kvswitch" not in _shown(_client_menu(menu, "qwen"))
    sub = _client_menu(menu, "qwen")
    qwen = two["qwen"]
    qwen.write_text(qwen.read_text().replace('"privacy": {', '"ui": {"theme": "dark"}, "privacy": {', 1))
    c.refresh()  # fresh state while the menu is open: its items change in place
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert _client_menu(menu, "qwen") is sub
    assert _shown(sub)[:2] == ["merged, in sync", "changed outside kvswitch"]
    assert _titles(menu) == ["Claude Code — merged, in sync", "qwen — merged, in sync · changed outside"]
    menu = _open_menu(qtbot, c)
    assert _shown(_client_menu(menu, "qwen"))[:2] == ["merged, in sync", "changed outside kvswitch"]
    assert "changed outside kvswitch" not in _shown(_client_menu(menu, "Claude Code"))
    # switched by kvswitch again: no longer changed outside
    c.switch_client(qwen, "split")
    _wait_notice(qtbot, c, "qwen switched to split")
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert '"theme": "dark"' in qwen.read_text()  # the user's edit is kept
    menu = _open_menu(qtbot, c)
    assert _titles(menu)[1] == "qwen — split, in sync"


def test_the_fallback_window_switches_one_client_too(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make()  # no tray here: the window
    w = c.window
    qwen_before = two["qwen"].read_bytes()
    assert not w.client_mode_button.isEnabled()  # no client chosen yet
    w.clients.setCurrentItem(w.clients.topLevelItem(0))
    assert w.clients.topLevelItem(0).text(0) == "Claude Code" and w.client_mode_button.isEnabled()
    w.client_mode_menu.aboutToShow.emit()
    texts = [plain_text(a.text()) for a in w.client_mode_menu.actions()]
    assert texts == ["Merged (this client alone)", "Split (this client alone)"]
    assert w.client_mode_menu.actions()[0].isChecked()
    w.client_mode_menu.actions()[1].trigger()
    _wait_notice(qtbot, c, "Claude Code switched to split")
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert file_mode(two) == ("split", "merged") and two["qwen"].read_bytes() == qwen_before
    assert w.clients.topLevelItem(0).text(1) == "split, in sync · its own mode"
    w.clients.setCurrentItem(w.clients.topLevelItem(0))
    w.client_mode_menu.aboutToShow.emit()
    follow = w.client_mode_menu.actions()[-1]
    assert plain_text(follow.text()) == "Follow all (merged)"
    follow.trigger()
    _wait_notice(qtbot, c, "Claude Code follows all again")
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=WAIT)
    assert file_mode(two) == ("merged", "merged")
    w.detect_button.click()
    assert isinstance(c._detect, DetectDialog) and c._detect.isVisible()
    qtbot.waitUntil(lambda: not c._detect.busy, timeout=WAIT)
    c._detect.close()


def test_labels_of_two_clients_of_one_product_name_their_folders(tmp_path: Path) -> None:
    a, b = tmp_path / "work" / ".claude" / "settings.json", tmp_path / "play" / ".claude" / "settings.json"
    assert jobs._labels([(a, None, "Claude Code"), (b, None, "Claude Code"), (b, "mine", "Qwen Code")]) == [
        "Claude Code (work/.claude)",
        "Claude Code (play/.claude)",
        "mine",
    ]


# -- Detect clients… --------------------------------------------------------------------------------


@pytest.fixture
def installed(sandbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Claude Code's and Qwen Code's files in the sandbox HOME, Qwen Code's program on PATH
    (npm's layout, version 0.24.4); nothing registered, no kvswitch config."""
    files = seed_files(Path(os.environ["HOME"]))
    bin_dir = npm_program(tmp_path / "npm", "qwen", "@qwen-code/qwen-code", "0.24.4")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return files


def _row(dialog: DetectDialog, kind: str) -> list[str]:
    item = dialog.rows[kind]
    return [item.text(i) for i in range(4)]


def test_detect_dialog_lists_the_clients_and_registers_the_checked_one(
    qtbot: Any, make: Callable[..., TrayController], installed: dict[str, Path]
) -> None:
    c = make()
    before = {k: p.read_bytes() for k, p in installed.items()}
    menu = _open_menu(qtbot, c)
    assert _find(menu, "Clients", "Detect clients…").isEnabled()
    _find(menu, "Clients", "Detect clients…").trigger()
    dialog = c._detect
    assert isinstance(dialog, DetectDialog) and dialog.isVisible()
    qtbot.waitUntil(lambda: dialog.detected is not None and not dialog.busy, timeout=WAIT)
    assert _row(dialog, "claude-code")[:2] == ["Claude Code", str(installed["claude"])]
    assert _row(dialog, "claude-code")[3] == "register"
    assert _row(dialog, "qwen-code") == ["Qwen Code", str(installed["qwen"]), "qwen 0.24.4", "register"]
    claude, qwen = dialog.rows["claude-code"], dialog.rows["qwen-code"]
    assert claude.checkState(0) == Qt.CheckState.Checked and qwen.checkState(0) == Qt.CheckState.Checked
    absent = [k for k, item in dialog.rows.items() if item.text(3) == "not found"]
    assert absent and all(dialog.rows[k].isDisabled() for k in absent)
    assert all(dialog.rows[k].text(1).endswith("(not there yet)") for k in absent)

    claude.setCheckState(0, Qt.CheckState.Unchecked)
    assert [i.kind for i in dialog.selected()] == ["qwen-code"] and dialog.register_button.isEnabled()
    with qtbot.waitSignal(dialog.registered, timeout=WAIT) as got:
        dialog.register_button.click()
    assert got.args == [["qwen-code"]]
    qtbot.waitUntil(
        lambda: not dialog.busy and dialog.rows["qwen-code"].text(3) == "registered as qwen-code", timeout=WAIT
    )
    assert dialog.rows["claude-code"].text(3) == "register"  # still offered
    assert dialog.message.text().startswith("Registered qwen-code.")
    config = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    text = config.read_text()
    assert str(installed["qwen"]) in text and str(installed["claude"]) not in text
    assert {k: p.read_bytes() for k, p in installed.items()} == before  # no client file written
    notice = _wait_notice(qtbot, c, "Clients registered")
    assert not notice.error and "qwen-code" in notice.text
    dialog.close()


def test_detect_dialog_with_no_clients_here(
    qtbot: Any, sandbox: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    dialog = DetectDialog()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.detected is not None and not dialog.busy, timeout=WAIT)
    assert dialog.message.text().startswith("No clients found (looked for: Claude Code")
    assert not dialog.register_button.isEnabled()
    assert all(item.isDisabled() for item in dialog.rows.values())


def test_first_start_offers_detect_once(
    qtbot: Any, make: Callable[..., TrayController], installed: dict[str, Path]
) -> None:
    c = make(first_run=True)
    notice = _wait_notice(qtbot, c, "Clients found")
    assert "2 clients" in notice.text and "Detect clients…" in notice.text
    assert isinstance(c._detect, DetectDialog) and c._detect.isVisible()
    assert c._detect.rows["qwen-code"].checkState(0) == Qt.CheckState.Checked
    assert (Path(os.environ["KVSWITCH_HOME"]) / "state" / jobs.DETECT_OFFERED).is_file()
    again = make(first_run=True)
    qtbot.waitUntil(lambda: again.idle, timeout=WAIT)
    qtbot.wait(100)
    assert again._detect is None and not any(n.title == "Clients found" for n in again.notices)


def test_first_start_offers_nothing_when_clients_are_registered(
    qtbot: Any, make: Callable[..., TrayController], two: dict[str, Path]
) -> None:
    c = make(first_run=True)
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    qtbot.wait(100)
    assert c._detect is None and not any(n.title == "Clients found" for n in c.notices)
    assert not (Path(os.environ["KVSWITCH_HOME"]) / "state" / jobs.DETECT_OFFERED).exists()


def test_first_start_is_off_unless_asked(
    qtbot: Any, make: Callable[..., TrayController], installed: dict[str, Path]
) -> None:
    c = make()  # the tests' default, and KVSWITCH_TRAY_NO_DETECT=1 for the app
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    qtbot.wait(100)
    assert c._detect is None


def test_a_client_named_after_its_kind_is_titled_by_its_product(installed: dict[str, Path]) -> None:
    """client detect registers clients under their kind ids; the tray names the product."""
    from kvswitch.installed import detect_clients, register_found
    from tests.clientenv import init

    init("--no-cline", "--no-ccswitch")
    assert sorted(register_found(detect_clients())) == ["claude-code", "qwen-code"]
    labels = {v.kind: v.label for v in jobs.snapshot().clients}
    assert labels == {"claude-code": "Claude Code", "qwen-code": "Qwen Code"}
