"""The message catalogue: every message has a Chinese translation with the same placeholders,
the compiled catalogue is fresh, ``tr`` calls carry literal text, and the language is chosen
from ``--lang``, ``KVSWITCH_LANG`` and the locale, in that order."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvswitch import i18n

ROOT = Path(__file__).resolve().parent.parent
CJK = "\u4e00-\u9fff"


def _tool():  # .ci/i18n.py, the catalogue's maintenance script
    spec = importlib.util.spec_from_file_location("kvswitch_i18n_tool", ROOT / ".ci" / "i18n.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_message_has_a_chinese_translation_and_the_compiled_catalogue_is_fresh() -> None:
    tool = _tool()
    messages = tool.code_messages()
    assert len(messages) > 50  # the extraction found the code's messages
    found = tool.problems(messages, tool.argparse_messages())
    assert found == [], (
        "\n".join(found[:60]) + f"\n… {len(found)} problem(s): fix the .po files, then `python .ci/i18n.py compile`"
    )


def test_the_check_catches_a_missing_an_english_and_a_misplaced_placeholder_entry(tmp_path: Path) -> None:
    tool = _tool()
    good = tool.Message("the file {path} changed", "x.py:1")
    po = tmp_path / "zh_CN"
    po.mkdir()
    (po / "t.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "the file {path} changed"\nmsgstr "the file {path} changed"\n\n'
        'msgid "{count} left"\nmsgstr "还剩 {n} 个"\n',
        encoding="utf-8",
    )
    tool.LOCALE = po
    tool.MO = po / "LC_MESSAGES" / "kvswitch.mo"
    found = tool.problems([good, tool.Message("{count} left", "x.py:2"), tool.Message("gone", "x.py:3")], [])
    assert any(f.startswith("not Chinese") and "{path}" in f for f in found)
    assert any(f.startswith("placeholders differ") and "{count} left" in f for f in found)
    assert any(f.startswith("missing") and "'gone'" in f for f in found)
    assert any("is missing" in f for f in found)  # the .mo


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"tr", "ntr", "N_"}:
            yield node


def test_tr_is_called_with_literal_text_only() -> None:
    """``tr(f"…")``, ``tr(a + b)`` or ``tr("…".format(x))`` cannot be in the catalogue: it would show
    in English. ``N_`` and ``ntr`` take literals only; ``tr`` also takes a name, an attribute or an
    item (a constant marked with ``N_`` where it is defined)."""
    bad: list[str] = []
    sources = [
        *sorted((ROOT / "kvswitch").rglob("*.py")),
        ROOT / "gui" / "launch.py",
        ROOT / "gui" / "desktop.py",
        ROOT / "gui" / "autostart.py",
    ]
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = list(_calls(tree))
        for call in calls:
            name = call.func.id  # type: ignore[attr-defined]
            args = call.args[: 2 if name == "ntr" else 1]
            literal = len(args) == (2 if name == "ntr" else 1) and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args
            )
            named = name == "tr" and len(args) == 1 and isinstance(args[0], ast.Name | ast.Attribute | ast.Subscript)
            if not (literal or named):
                bad.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert bad == []


def test_the_language_comes_from_kvswitch_lang_then_the_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    try:
        i18n.set_language(None)
        assert i18n.language() == "en"
        monkeypatch.setenv("LANG", "zh_CN.UTF-8")
        assert i18n.set_language(None) == "zh_CN"
        monkeypatch.setenv("LC_ALL", "en_US.UTF-8")  # LC_ALL outranks LANG
        assert i18n.set_language(None) == "en"
        monkeypatch.setenv("KVSWITCH_LANG", "zh-CN")  # and kvswitch's own variable outranks both
        assert i18n.set_language(None) == "zh_CN"
        assert i18n.set_language("en") == "en"  # --lang outranks everything
        with pytest.raises(ValueError):
            i18n.set_language("klingon")
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("zh_CN.UTF-8", "zh_CN"),
        ("zh-CN", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh_TW.UTF-8", "zh_CN"),
        ("en_GB.UTF-8", "en"),
        ("C", "en"),
        ("POSIX", "en"),
        ("C.UTF-8", "en"),
        ("de_DE", None),
        ("", None),
    ],
)
def test_locale_names_normalize(value: str, expected: str | None) -> None:
    assert i18n.normalize(value) == expected


def _kvswitch(*args: str, lang: str | None = None, kv_lang: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in {"KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}
    }
    if lang:
        env["LANG"] = lang
    if kv_lang:
        env["KVSWITCH_LANG"] = kv_lang
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_help_under_a_chinese_locale_is_chinese_argparse_words_included() -> None:
    import re

    done = _kvswitch("--help", lang="zh_CN.UTF-8")
    assert done.returncode == 0
    assert done.stdout.startswith("用法：kvswitch")  # argparse's own "usage: "
    assert re.search(f"[{CJK}]", done.stdout.split("\n", 3)[-1])  # the description and options too
    english = _kvswitch("--help", lang="en_US.UTF-8")
    assert english.stdout.startswith("usage: kvswitch")


def test_lang_outranks_the_locale_and_a_wrong_lang_is_a_usage_error() -> None:
    assert _kvswitch("--lang", "en", "--help", lang="zh_CN.UTF-8").stdout.startswith("usage:")
    assert _kvswitch("--help", "--lang=zh-CN", lang="en_US.UTF-8").stdout.startswith("用法：")
    bad = _kvswitch("--lang", "klingon", "status")
    assert bad.returncode == 2 and "klingon" in bad.stderr


def test_a_usage_error_in_chinese_names_the_subcommand_and_keeps_the_values() -> None:
    done = _kvswitch("switch", "sideways", lang="zh_CN.UTF-8")
    assert done.returncode == 2
    assert "用法：kvswitch switch" in done.stderr  # the subcommand's own usage
    assert "'merged', 'split'" in done.stderr  # values are never translated
    assert "错误" in done.stderr


def test_bare_kvswitch_prints_usage_on_stderr_and_exits_2() -> None:
    done = _kvswitch()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: kvswitch")


def test_the_english_path_loads_no_catalogue() -> None:
    """English is the source text: choosing it reads no .mo and imports no gettext."""
    code = (
        "import sys; from kvswitch.i18n import tr, set_language; set_language('en'); tr('x'); "
        "print('gettext' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"
