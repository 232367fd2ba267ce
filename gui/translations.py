"""The tray's language: English (the source text) or Simplified Chinese.

:func:`install_translator` runs right after the ``QApplication`` is made. It chooses the language
— the tray's own setting (Language ▸ in the menu) when one is saved, else the library's choice
(``KVSWITCH_LANG``, else the locale: :func:`kvswitch.i18n.language`) — tells the library
(:func:`kvswitch.i18n.set_language`, so its messages, diagnostics and notes match), and for
Chinese installs two Qt translators: the tray's own catalogue
(``resources/i18n/kvswitch_zh_CN.qm``, built by ``pyside6-lrelease`` from the ``.ts`` beside it)
and Qt's own (``qtbase_zh_CN.qm``: standard buttons, file dialogs), when Qt ships it.

The tray's setting lives in kvswitch's state directory (``tray.json``, beside the tray's lock and
its first-run marker), written through kvswitch's one writer; a change applies at the next start.

Maintainers regenerate the catalogue with :func:`update_catalogue` (``python -m
kvswitch_gui.translations``): ``pyside6-lupdate`` over ``gui/*.py`` into the ``.ts`` (translate
its new entries), then ``pyside6-lrelease`` into the ``.qm``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QTranslator

from kvswitch import i18n

__all__ = [
    "CHOICES",
    "QM_PATH",
    "QT_TRANSLATE_NOOP",
    "TS_PATH",
    "catalogue_sources",
    "install_translator",
    "installed_language",
    "save_language",
    "saved_language",
    "settings_path",
    "system_language",
    "update_catalogue",
]

_HERE: Final = Path(__file__).resolve().parent
TS_PATH: Final = _HERE / "resources" / "i18n" / "kvswitch_zh_CN.ts"
"""The Chinese translation's source (Qt Linguist's format; entries finished, none obsolete)."""
QM_PATH: Final = _HERE / "resources" / "i18n" / "kvswitch_zh_CN.qm"
"""The compiled catalogue the package ships."""
CHOICES: Final = (None, "en", "zh_CN")
"""The Language ▸ menu's choices: the system's (no setting saved), English, Simplified Chinese."""
SETTINGS_FILE: Final = "tray.json"

_installed: list[QTranslator] = []  # kept alive while installed (Qt holds only a pointer)
_language: str | None = None
_system: str | None = None


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Mark ``text`` for the catalogue under ``context`` without translating it yet (a module
    constant, made before the translator is installed): translate it where it is shown."""
    del context
    return text


def settings_path() -> Path:
    """The tray's settings file (in kvswitch's state directory, under ``KVSWITCH_HOME`` when set)."""
    from kvswitch import paths

    return paths.dirs().state / SETTINGS_FILE


def _settings() -> dict[str, object]:
    from kvswitch.io import read_optional

    try:
        data = read_optional(settings_path())
        value = json.loads(data) if data is not None else {}
    except (OSError, ValueError):  # unreadable or not JSON: as if nothing were saved
        return {}
    return value if isinstance(value, dict) else {}


def saved_language() -> str | None:
    """The language chosen in the tray (``"en"``, ``"zh_CN"``), or None: the system's."""
    value = _settings().get("language")
    return i18n.normalize(value) if isinstance(value, str) else None


def save_language(lang: str | None) -> None:
    """Save the tray's language (None: follow the system again); applies at the next start."""
    from kvswitch.io import write_private

    settings = _settings()
    if lang is None:
        settings.pop("language", None)
    else:
        chosen = i18n.normalize(lang)
        if chosen is None:
            raise ValueError(lang)
        settings["language"] = chosen
    write_private(settings_path(), (json.dumps(settings, indent=2, sort_keys=True) + "\n").encode())


def system_language() -> str:
    """The language the system asks for, without the tray's setting: ``KVSWITCH_LANG``, else the
    locale (as :func:`install_translator` last read them; the library's choice before it ran)."""
    return _system or i18n.language()


def installed_language() -> str:
    """The language :func:`install_translator` chose last (the library's until it ran)."""
    return _language or i18n.language()


def install_translator(app: QCoreApplication, lang: str | None = None) -> str:
    """Choose the language (``lang``, else the tray's setting, else the library's), set it for
    the library too, and install the Qt translators it needs on ``app``; returns ``"en"`` or
    ``"zh_CN"``. Calling it again replaces the translators it installed before."""
    global _language, _system
    _system = i18n.set_language(None)  # the environment's choice, read again
    chosen = i18n.normalize(lang) if lang else None
    chosen = chosen or saved_language() or _system
    i18n.set_language(chosen)
    while _installed:
        app.removeTranslator(_installed.pop())
    if chosen == "zh_CN":
        own = QTranslator(app)
        if own.load(str(QM_PATH)):
            app.installTranslator(own)
            _installed.append(own)
        base = QTranslator(app)
        if base.load("qtbase_zh_CN", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
            app.installTranslator(base)
            _installed.append(base)
    _language = chosen
    return chosen


def _tool(name: str) -> str:
    import shutil

    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed (it comes with PySide6)")
    return found


def catalogue_sources() -> list[Path]:
    """The modules whose texts are in the Qt catalogue: the package's, but for those that speak
    through the library's catalogue (``kvswitch.i18n.tr``: the launcher and what it uses, which
    run without Qt)."""
    return [p for p in sorted(_HERE.glob("*.py")) if "from kvswitch.i18n import" not in p.read_text(encoding="utf-8")]


def update_catalogue() -> None:
    """``pyside6-lupdate`` over :func:`catalogue_sources` into the ``.ts`` (new entries unfinished,
    gone ones dropped), then ``pyside6-lrelease`` into the ``.qm``."""
    import subprocess

    sources = [str(p) for p in catalogue_sources()]
    subprocess.run(
        [
            _tool("pyside6-lupdate"),
            *sources,
            "-no-obsolete",
            "-locations",
            "none",
            "-target-language",
            "zh_CN",
            "-ts",
            str(TS_PATH),
        ],
        check=True,
    )
    subprocess.run([_tool("pyside6-lrelease"), "-nounfinished", str(TS_PATH), "-qm", str(QM_PATH)], check=True)


if __name__ == "__main__":
    update_catalogue()
