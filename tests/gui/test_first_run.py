"""The tray's first run, offscreen, over real client files: a sandbox HOME holding Claude Code's
and Qwen Code's settings as users set them up by hand (a gateway URL, a model, a key in plain
text: tests/fixtures/import/), no kvswitch config. The tray's first start opens Detect; both
clients are registered; the tray then says there is no profile yet (and greys every switch);
a profile is made from Qwen Code's settings with its key stored in the keyring (the key shown
nowhere); Profile ▸ qwen-code renders it into both clients. A client file set up by CC Switch's
proxy is refused with the reason, and nothing is written."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QLabel, QMenu, QWidget

from kvswitch_gui import jobs
from kvswitch_gui.detect_dialog import MAKE_ANY, DetectDialog
from kvswitch_gui.tray import TrayController, plain_text
from tests.gui import test_tray
from tests.gui.test_tray import WAIT, _find, _open_menu, _shown, _titles, _wait_notice
from tests.gui.two_clients import npm_program

make = test_tray.make  # the tray tests' fixture: controllers made here are shut down after each test

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
QWEN_KEY = "sk-import-qwen-5e6f7a8b9c"  # tests/fixtures/import/qwen-settings.json's
CLAUDE_KEY = "sk-import-claude-7f3a9c2e5b8d"  # tests/fixtures/import/claude-settings.json's
PROXY_CLAUDE = (
    '{\n  "env": {\n    "ANTHROPIC_BASE_URL": "http://127.0.0.1:15721",\n'
    '    "ANTHROPIC_AUTH_TOKEN": "PROXY_MANAGED",\n    "ANTHROPIC_MODEL": "claude-sonnet-4-5"\n  }\n}\n'
)
"""Claude Code's file while CC Switch's local proxy has taken it over (its key a placeholder)."""


@pytest.fixture
def clients(sandbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Claude Code's and Qwen Code's files as their users set them up (URL, model, key), Qwen
    Code's program on PATH (npm's layout); no kvswitch config."""
    home = Path(os.environ["HOME"])
    files = {"claude": home / ".claude" / "settings.json", "qwen": home / ".qwen" / "settings.json"}
    for name, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / f"{name}-settings.json", path)
    bin_dir = npm_program(tmp_path / "npm", "qwen", "@qwen-code/qwen-code", "0.24.4")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return files


def _config() -> Path:
    return Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"


def _menu_texts(menu: QMenu) -> Iterator[str]:
    for a in menu.actions():
        yield a.text()
        yield a.toolTip()
        if a.menu() is not None:
            yield from _menu_texts(a.menu())


def _widget_texts(w: QWidget) -> Iterator[str]:
    for child in [w, *w.findChildren(QWidget)]:
        yield child.toolTip()
        if isinstance(child, QLabel | QAbstractButton):
            yield child.text()
    if isinstance(w, DetectDialog):
        for item in w.rows.values():
            for i in range(w.table.columnCount()):
                yield item.text(i)
                yield item.toolTip(i)


def _everything_shown(c: TrayController, dialog: DetectDialog) -> str:
    """Every label, tooltip, menu item and notice the user could see, and kvswitch's log."""
    from kvswitch import paths

    shown = [*_menu_texts(c.menu), *_widget_texts(dialog), c.tooltip(), *(f"{n.title}\n{n.text}" for n in c.notices)]
    if c.window is not None:
        shown += list(_widget_texts(c.window))
    logs = paths.dirs().logs
    if logs.is_dir():
        shown += [p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file()]
    return "\n".join(shown)


def _register_all(qtbot: Any, c: TrayController) -> DetectDialog:
    """The first start's offer: Detect opens by itself; register every client found."""
    _wait_notice(qtbot, c, "Clients found")
    dialog = c._detect
    assert isinstance(dialog, DetectDialog) and dialog.isVisible()
    assert [k for k, item in dialog.rows.items() if item.checkState(0) == Qt.CheckState.Checked] == [
        "claude-code",
        "qwen-code",
    ]
    with qtbot.waitSignal(dialog.registered, timeout=WAIT):
        dialog.register_button.click()
    qtbot.waitUntil(
        lambda: not dialog.busy and dialog.rows["qwen-code"].text(3) == "registered as qwen-code", timeout=WAIT
    )
    _wait_notice(qtbot, c, "Clients registered")
    qtbot.waitUntil(lambda: c.idle and len(c.snapshot.clients) == 2, timeout=WAIT)
    return dialog


def _select(dialog: DetectDialog, kind: str) -> None:
    dialog.table.clearSelection()
    dialog.rows[kind].setSelected(True)


def test_first_run_registers_makes_a_profile_and_renders_it(
    qtbot: Any,
    make: Callable[..., TrayController],
    clients: dict[str, Path],
    memory_keyring: dict[tuple[str, str], str],
) -> None:
    c = make(first_run=True)
    before = {k: p.read_bytes() for k, p in clients.items()}
    dialog = _register_all(qtbot, c)

    # registered, no profile: the tray says so and greys every switch (a switch needs a profile)
    menu = _open_menu(qtbot, c)
    assert menu.actions()[0].text() == "kvswitch — no profile yet"
    assert c.icon_key == (None, True)  # hollow (not set up yet), warning corner
    assert c.tooltip().startswith("kvswitch — no profile yet\n2 clients registered, waiting for a profile")
    assert _titles(menu) == ["Claude Code — no profile yet", "Qwen Code — no profile yet"]
    assert "None" not in "\n".join(_menu_texts(menu))
    for label in ("Claude Code", "Qwen Code"):
        assert _shown(_find(menu, "Clients", label).menu())[:3] == ["no profile yet", "Merged", "Split"]
        assert not _find(menu, "Clients", label, "Merged").isEnabled()
        assert not _find(menu, "Clients", label, "Split").isEnabled()
    assert plain_text(_find(menu, "Clients").text()) == "Clients — no profile yet"
    assert plain_text(_find(menu, "Mode").text()) == "Mode"
    assert not _find(menu, "Mode", "Merged").isEnabled() and not _find(menu, "Mode", "Split").isEnabled()
    assert plain_text(_find(menu, "Profile").text()) == "Profile — none yet"
    assert _shown(_find(menu, "Profile").menu()) == ["no profiles", "Make a profile from a client…"]
    assert not _find(menu, "Settings…").isEnabled() and not _find(menu, "API key…").isEnabled()
    assert not c.window.merged_button.isEnabled() and not c.window.split_button.isEnabled()
    assert c.window.header.text() == "kvswitch — no profile yet"

    # Profile ▸ Make a profile from a client… brings up Detect
    dialog.close()
    _find(menu, "Profile", "Make a profile from a client…").trigger()
    dialog = c._detect
    assert isinstance(dialog, DetectDialog) and dialog.isVisible()
    qtbot.waitUntil(lambda: dialog.detected is not None and not dialog.busy, timeout=WAIT)
    assert not dialog.make_button.isEnabled() and dialog.make_button.text() == MAKE_ANY  # nothing chosen
    assert "select it, then Make a profile" in dialog.message.text()
    assert not dialog.store_key_check.isChecked()  # off by default
    _select(dialog, "qwen-code")
    assert dialog.make_button.isEnabled() and plain_text(dialog.make_button.text()) == "Make a profile from Qwen Code"
    dialog.store_key_check.setChecked(True)
    with qtbot.waitSignal(dialog.profile_made, timeout=WAIT) as got:
        dialog.make_button.click()
    made = got.args[0]
    assert (made.name, made.activated, made.key_stored) == ("qwen-code", True, True)
    text = _config().read_text()
    assert 'active_profile = "qwen-code"' in text and "[profiles.qwen-code]" in text
    assert 'base_url = "http://192.168.1.20:30000/v1"' in text and 'key = "keyring"' in text
    [((service, user), key)] = memory_keyring.items()  # kvswitch's service (per kvswitch home)
    assert service.startswith("kvswitch") and (user, key) == ("qwen-code", QWEN_KEY)
    assert {k: p.read_bytes() for k, p in clients.items()} == before  # an import only reads them
    assert dialog.message.text().startswith("Made profile qwen-code from Qwen Code's settings")
    assert "Render it into your clients with Profile ▸ qwen-code." in dialog.message.text()
    notice = _wait_notice(qtbot, c, "Profile qwen-code made from Qwen Code")
    assert not notice.error and "qwen-code is the active profile now." in notice.text
    assert "stored in the OS keyring" in notice.text
    assert notice.text.endswith("Render it into your clients with Profile ▸ qwen-code.")

    # the tray is ready: the profile's header; the clients are not rendered yet
    qtbot.waitUntil(lambda: c.idle and c.snapshot.profile == "qwen-code", timeout=WAIT)
    menu = _open_menu(qtbot, c)
    assert menu.actions()[0].text() == "qwen-code · merged"
    assert plain_text(_find(menu, "Profile").text()) == "Profile — qwen-code"
    assert _find(menu, "Mode", "Merged").isEnabled() and _find(menu, "Clients", "Qwen Code", "Split").isEnabled()
    assert _find(menu, "Settings…").isEnabled() and _find(menu, "API key…").isEnabled()
    assert {k: p.read_bytes() for k, p in clients.items()} == before
    shown = _everything_shown(c, dialog)
    assert QWEN_KEY not in shown and CLAUDE_KEY not in shown
    assert QWEN_KEY not in _config().read_text()

    # Profile ▸ qwen-code renders it into both clients
    _find(menu, "Profile", "qwen-code").trigger()
    notice = _wait_notice(qtbot, c, "Profile qwen-code applied")
    assert not notice.error
    qtbot.waitUntil(lambda: c.idle and c.busy is None and all(v.ok for v in c.snapshot.clients), timeout=WAIT)
    after = {k: p.read_bytes() for k, p in clients.items()}
    assert after["claude"] != before["claude"] and after["qwen"] != before["qwen"]
    assert b"http://192.168.1.20:30000" in after["claude"]  # Qwen Code's endpoint, now Claude Code's too
    menu = _open_menu(qtbot, c)
    assert _titles(menu) == ["Claude Code — merged, in sync", "Qwen Code — merged, in sync"]
    assert c.icon_key == ("merged", False)
    shown = _everything_shown(c, dialog)
    assert QWEN_KEY not in shown and CLAUDE_KEY not in shown


def test_without_the_key_box_the_key_stays_out(
    qtbot: Any,
    make: Callable[..., TrayController],
    clients: dict[str, Path],
    memory_keyring: dict[tuple[str, str], str],
) -> None:
    c = make(first_run=True)
    dialog = _register_all(qtbot, c)
    _select(dialog, "claude-code")
    assert plain_text(dialog.make_button.text()) == "Make a profile from Claude Code"
    with qtbot.waitSignal(dialog.profile_made, timeout=WAIT) as got:
        dialog.make_button.click()
    assert (got.args[0].key_stored, got.args[0].key_left) == (False, True)
    assert memory_keyring == {}
    text = _config().read_text()
    assert "[profiles.claude-code]" in text and 'key = "none"' in text and CLAUDE_KEY not in text
    notice = _wait_notice(qtbot, c, "Profile claude-code made from Claude Code")
    assert "was not stored: the profile sends none" in notice.text
    assert CLAUDE_KEY not in _everything_shown(c, dialog)
    # a second profile from the same client gets a name of its own, not a refusal
    with qtbot.waitSignal(dialog.profile_made, timeout=WAIT) as got:
        dialog.make_button.click()
    assert (got.args[0].name, got.args[0].activated) == ("claude-code-2", False)
    assert 'active_profile = "claude-code"' in _config().read_text()


@pytest.mark.parametrize("registered", [False, True], ids=["no-config", "registered"])
def test_a_client_set_up_by_cc_switch_s_proxy_is_refused_and_nothing_is_written(
    qtbot: Any,
    make: Callable[..., TrayController],
    clients: dict[str, Path],
    memory_keyring: dict[tuple[str, str], str],
    registered: bool,
) -> None:
    clients["claude"].write_text(PROXY_CLAUDE, encoding="utf-8")
    c = make(first_run=True)
    if registered:
        dialog = _register_all(qtbot, c)
    else:
        _wait_notice(qtbot, c, "Clients found")
        dialog = c._detect
    before = {k: p.read_bytes() for k, p in clients.items()}
    config = _config().read_bytes() if registered else None
    _select(dialog, "claude-code")
    assert dialog.make_button.isEnabled()
    dialog.store_key_check.setChecked(True)
    with qtbot.waitSignal(dialog.failed, timeout=WAIT), qtbot.assertNotEmitted(dialog.profile_made):
        dialog.make_button.click()
    message = dialog.message.text()
    assert message.startswith("No profile made from Claude Code: ")
    assert "CC Switch's local proxy" in message and "Traceback" not in message
    assert (_config().read_bytes() if registered else _config().exists()) == (config if registered else False)
    assert {k: p.read_bytes() for k, p in clients.items()} == before
    assert memory_keyring == {}
    assert not any("made from" in n.title for n in c.notices)
    assert dialog.make_button.isEnabled() and not dialog.busy  # another try is possible
    if registered:
        qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
        assert _open_menu(qtbot, c).actions()[0].text() == "kvswitch — no profile yet"


def test_a_client_with_no_endpoint_of_its_own_cannot_be_chosen(
    qtbot: Any, sandbox: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Claude Code's first-run file (no base URL: Anthropic's own service) has nothing to import."""
    from tests.gui.two_clients import seed_files

    seed_files(Path(os.environ["HOME"]))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    dialog = DetectDialog()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.detected is not None and not dialog.busy, timeout=WAIT)
    _select(dialog, "claude-code")
    assert dialog.chosen() is not None and dialog.chosen().kind == "claude-code"
    assert not dialog.make_button.isEnabled() and dialog.make_button.text() == MAKE_ANY
    assert "names an endpoint" in dialog.make_button.toolTip()


def test_the_snapshot_without_a_profile(clients: dict[str, Path]) -> None:
    """What the tray reads: no active profile is its own state, not ``None · merged``."""
    from kvswitch.installed import detect_clients, register_found

    register_found(detect_clients())
    snap = jobs.snapshot()
    assert snap.error is None and snap.profile is None and snap.no_profile and snap.warning
    assert [v.state for v in snap.clients] == ["no profile yet", "no profile yet"]
    assert all(v.no_profile and not v.ok for v in snap.clients)
