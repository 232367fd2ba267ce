"""The tray in Chinese and English: the Qt catalogue (``gui/resources/i18n/kvswitch_zh_CN.ts``)
is complete, current and compiled; every text goes through ``tr`` with literal text; the
language comes from the tray's setting, else the system's; choosing one in the menu saves it for
the next start; and the tray, its windows and the library's messages read in Chinese."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QLibraryInfo
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from kvswitch import i18n
from kvswitch_gui import translations
from kvswitch_gui.tray import TrayController, mnemonic_of, plain_text
from tests.gui import test_tray
from tests.gui.chinese import CJK, actionable, chinese, menus
from tests.gui.test_tray import WAIT, _find, _open_menu, _wait_notice

make = test_tray.make  # controllers made here are shut down after each test
__all__ = ["chinese", "make"]  # fixtures, used by name

ROOT = Path(__file__).resolve().parents[2]
GUI = ROOT / "gui"
TS = translations.TS_PATH
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[vmn1-9]")
WORD = re.compile(r"[A-Za-z]{2,}")
CJK_OR_FULL_WIDTH = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def _messages(path: Path = TS) -> list[tuple[str, str, ET.Element]]:
    """(context, source, translation element) of every message of a .ts file."""
    root = ET.parse(path).getroot()
    return [
        (ctx.findtext("name") or "", m.findtext("source") or "", m.find("translation"))  # type: ignore[misc]
        for ctx in root.iter("context")
        for m in ctx.iter("message")
    ]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (it comes with PySide6)")
    return found


# -- the catalogue ------------------------------------------------------------------------------


def test_every_message_has_a_finished_chinese_translation_with_the_same_placeholders_and_key() -> None:
    found = _messages()
    assert len(found) > 300  # the tray's texts, not a stub
    problems = []
    for context, source, translation in found:
        text = translation.text or ""
        where = f"{context}: {source!r} -> {text!r}"
        if translation.get("type") is not None:
            problems.append(f"{translation.get('type')}: {where}")
        elif not text:
            problems.append(f"empty: {where}")
        elif WORD.search(PLACEHOLDER.sub("", source)) and not CJK_OR_FULL_WIDTH.search(text):
            problems.append(f"not Chinese: {where}")
        elif sorted(PLACEHOLDER.findall(text)) != sorted(PLACEHOLDER.findall(source)):
            problems.append(f"placeholders differ: {where}")
        elif mnemonic_of(source) != mnemonic_of(text):
            problems.append(f"mnemonic differs: {where}")
        elif mnemonic_of(source) and CJK.search(text) and not re.search(r"\(&[A-Za-z0-9]\)", text):
            problems.append(f"a Chinese label's mnemonic goes in (&X): {where}")
    assert problems == [], "\n".join(problems)


def test_the_catalogue_lists_every_message_of_the_code_and_the_qm_is_built_from_it(tmp_path: Path) -> None:
    """``pyside6-lupdate`` over gui/*.py finds nothing new and nothing gone, and ``pyside6-lrelease``
    makes the shipped .qm byte for byte (``python -m kvswitch_gui.translations`` redoes both)."""
    fresh = tmp_path / "fresh.ts"
    shutil.copyfile(TS, fresh)
    sources = [str(p) for p in translations.catalogue_sources()]
    assert len(sources) > 10 and all("launch.py" not in p for p in sources)  # the launcher uses kvswitch's own
    done = subprocess.run(
        [
            _tool("pyside6-lupdate"),
            *sources,
            "-no-obsolete",
            "-locations",
            "none",
            "-target-language",
            "zh_CN",
            "-ts",
            str(fresh),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ours = {(c, s) for c, s, _ in _messages()}
    code = {(c, s) for c, s, _ in _messages(fresh)}
    assert code - ours == set(), "in the code, not in the catalogue: run python -m kvswitch_gui.translations"
    assert ours - code == set(), "in the catalogue, no longer in the code"
    qm = tmp_path / "fresh.qm"
    subprocess.run(
        [_tool("pyside6-lrelease"), "-nounfinished", str(TS), "-qm", str(qm)],
        capture_output=True,
        timeout=300,
        check=True,
    )
    assert qm.read_bytes() == translations.QM_PATH.read_bytes(), "the .qm is stale: run pyside6-lrelease"


_TRANSLATING = {"tr", "translate", "QT_TRANSLATE_NOOP"}
_SHOWING = {
    "setText",
    "setToolTip",
    "addAction",
    "setTitle",
    "setWindowTitle",
    "setPlaceholderText",
    "notify",
    "QLabel",
    "QPushButton",
    "QCheckBox",
    "QRadioButton",
    "QGroupBox",
    "addRow",
    "QMenu",
    "setSuffix",
    "setFormat",
    "showMessage",
    "_say",
    "_finish_idle",
    "setHeaderLabels",
    "QMessageBox",
}
_NOT_WORDS = {"kvswitch", "&English", "m&erged", "&split", "http://127.0.0.1:8000/v1"}
"""Shown as they are: the program's name, a language's own name, the modes' names, an example URL."""


def _gui_modules() -> Iterator[tuple[Path, ast.AST]]:
    mine = sorted(p for p in GUI.glob("*.py") if p.name not in {"app.py", "launch.py", "desktop.py", "autostart.py"})
    for path in mine:
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def test_translated_text_is_literal() -> None:
    """``self.tr(f"…")`` or ``tr(a + b)`` cannot be in the catalogue: it would stay English. The text
    argument is a literal, or a variable holding text marked with QT_TRANSLATE_NOOP."""
    bad = []
    for path, tree in _gui_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node) in _TRANSLATING:
                at = 0 if _name(node) == "tr" else 1
                args = node.args[at : at + 1]
                if not args or not (
                    isinstance(args[0], ast.Name)
                    or (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str))
                ):
                    bad.append(f"{path.name}:{node.lineno}")
    assert bad == []


def test_no_english_text_is_shown_without_translation() -> None:
    """Literal text handed to a label, button, menu or notice goes through ``tr`` first."""
    bad = []
    for path, tree in _gui_modules():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _name(node) in _SHOWING):
                continue
            for arg in node.args:
                texts = [arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else []
                if isinstance(arg, ast.JoinedStr):
                    texts = [v.value for v in arg.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
                for text in texts:
                    if text not in _NOT_WORDS and WORD.search(text):
                        bad.append(f"{path.name}:{node.lineno}: {text!r}")
    assert bad == [], "\n".join(bad)


# -- choosing the language ------------------------------------------------------------------------


@pytest.fixture
def english_after(qapp: QApplication) -> Iterator[QApplication]:
    try:
        yield qapp
    finally:
        translations.install_translator(qapp, "en")


def test_chinese_installs_the_trays_and_qts_catalogues_and_sets_the_librarys_language(
    english_after: QApplication, sandbox: Path
) -> None:
    assert translations.install_translator(english_after, "zh-CN") == "zh_CN"
    assert i18n.language() == "zh_CN" and translations.installed_language() == "zh_CN"
    assert QCoreApplication.translate("TrayController", "&Quit") == "退出(&Q)"
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)  # Qt's own words: qtbase_zh_CN.qm
    if (Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)) / "qtbase_zh_CN.qm").exists():
        assert box.button(QDialogButtonBox.StandardButton.Cancel).text() == "取消"
    # every message of the catalogue is in the .qm (none falls back to English)
    same = [(c, s) for c, s, t in _messages() if QCoreApplication.translate(c, s) != t.text]
    assert same == []
    # and English again: the translators are gone
    assert translations.install_translator(english_after, "en") == "en"
    assert QCoreApplication.translate("TrayController", "&Quit") == "&Quit" and i18n.language() == "en"
    again = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    assert again.button(QDialogButtonBox.StandardButton.Cancel).text() in ("Cancel", "&Cancel")


def test_the_trays_setting_outranks_the_system_and_an_argument_outranks_both(
    english_after: QApplication, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KVSWITCH_LANG", "zh-CN")
    assert translations.saved_language() is None
    assert translations.install_translator(english_after) == "zh_CN"  # the system's (KVSWITCH_LANG)
    assert translations.system_language() == "zh_CN"
    translations.save_language("en")
    saved = json.loads(translations.settings_path().read_text())
    assert saved == {"language": "en"} and translations.settings_path().stat().st_mode & 0o777 == 0o600
    assert translations.install_translator(english_after) == "en"  # the tray's setting
    assert translations.install_translator(english_after, "zh") == "zh_CN"  # an explicit choice
    translations.save_language(None)
    assert translations.saved_language() is None and json.loads(translations.settings_path().read_text()) == {}
    with pytest.raises(ValueError):
        translations.save_language("klingon")
    monkeypatch.delenv("KVSWITCH_LANG")
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    assert translations.install_translator(english_after) == "zh_CN"  # the locale


def test_a_broken_settings_file_counts_as_no_setting(english_after: QApplication, sandbox: Path) -> None:
    path = translations.settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert translations.saved_language() is None
    assert translations.install_translator(english_after) == "en"
    path.write_text('{"language": "tlh"}')
    assert translations.saved_language() is None


def test_language_menu_saves_the_choice_for_the_next_start(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], english_after: QApplication
) -> None:
    translations.install_translator(english_after, "en")
    c = make()
    menu = _open_menu(qtbot, c)
    language = _find(menu, "Language").menu()
    assert [plain_text(a.text()) for a in actionable(language)] == ["System default", "English", "简体中文"]
    assert _find(menu, "Language", "System default").isChecked()
    _find(menu, "Language", "简体中文").trigger()
    notice = _wait_notice(qtbot, c, "Language saved")
    assert "next start" in notice.text and not notice.error
    qtbot.waitUntil(lambda: c.idle, timeout=WAIT)
    assert json.loads(translations.settings_path().read_text()) == {"language": "zh_CN"}
    menu = _open_menu(qtbot, c)
    assert _find(menu, "Language", "简体中文").isChecked()
    assert "restart kvswitch-tray to apply" in [a.text() for a in _find(menu, "Language").menu().actions()]
    assert translations.install_translator(english_after) == "zh_CN"  # what the next start does
    translations.install_translator(english_after, "en")
    _find(menu, "Language", "System default").trigger()
    qtbot.waitUntil(lambda: c.idle and json.loads(translations.settings_path().read_text()) == {}, timeout=WAIT)


# -- the tray in Chinese ----------------------------------------------------------------------------


def test_the_tray_reads_in_chinese_codes_and_values_unchanged(
    qtbot: Any, make: Callable[..., TrayController], kv_sandbox: dict[str, Path], chinese: str
) -> None:
    assert chinese == "zh_CN"
    c = make()
    menu = _open_menu(qtbot, c)
    top = [plain_text(a.text()) for a in actionable(menu)]
    assert top[:4] == ["模式 — merged", "配置方案 — taotoken", "客户端 — 全部已同步", "网关 — 已关闭"]
    assert {"运行探测…", "设置…", "API 密钥…", "监视文件", "打开日志", "语言", "退出"} <= set(top)
    assert [plain_text(a.text()) for a in actionable(_find(menu, "模式").menu())] == [
        "合并模式（merged）",
        "分离模式（split）",
    ]
    # every item a user can choose reads in Chinese, but for names (profiles, clients, languages)
    names = {"taotoken", "English"}
    for sub in menus(menu):
        for action in actionable(sub):
            text = plain_text(action.text())
            assert CJK.search(text) or text in names or " — " in text, text  # a client's title: name — state
    assert "2 个客户端已同步" in c.tooltip() and "尚未运行过探测" in c.tooltip()
    # a switch's notice in Chinese, the mode's value as typed
    _find(menu, "模式", "分离模式（split）").trigger()
    notice = _wait_notice(qtbot, c, "已切换到 split")
    assert not notice.error and "merged → split" in notice.text


def test_the_settings_dialog_reads_in_chinese_with_the_librarys_codes(
    qtbot: Any, kv_sandbox: dict[str, Path], chinese: str
) -> None:
    from PySide6.QtTest import QTest

    from kvswitch_gui.settings_dialog import SettingsDialog

    d = SettingsDialog()
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.check is not None and not d.busy, timeout=WAIT)
    assert d.windowTitle() == "kvswitch — 配置方案设置"
    assert "配置方案 taotoken" in d.title.text() and "merged 模式" in d.title.text()
    assert d.save_button.text() == "保存(&S)"
    editor = d.chunk_size.lineEdit()
    editor.selectAll()
    QTest.keyClicks(editor, "500")
    qtbot.waitUntil(lambda: "KVS101" in d.messages["cache.chunk_size"].text() and not d.busy, timeout=WAIT)
    assert "KVS101 警告" in d.messages["cache.chunk_size"].text()  # the code as it is, the severity in words
    qtbot.waitUntil(lambda: not d.busy, timeout=WAIT)


def test_a_process_started_under_a_chinese_locale_reads_chinese(tmp_path: Path) -> None:
    """``install_translator`` with no setting and no argument follows the locale, as the app does."""
    code = (
        "from PySide6.QtCore import QCoreApplication\n"
        "app = QCoreApplication([])\n"
        "from kvswitch_gui.translations import install_translator\n"
        "print(install_translator(app), QCoreApplication.translate('TrayController', '&Settings…'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES"}}
    env.update(LANG="zh_CN.UTF-8", KVSWITCH_HOME=str(tmp_path / "kv"), QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["zh_CN", "设置(&S)…"]
