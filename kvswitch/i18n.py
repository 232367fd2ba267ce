"""The user's language: English or Simplified Chinese, chosen once per process.

Every text kvswitch shows a person goes through :func:`tr` (or :func:`ntr` where a count
decides the wording)::

    from kvswitch.i18n import tr
    raise LabError(tr("the lab is not running (start it with `kvswitch lab up`)"))
    note = tr("{count} client(s) switched to {mode}").format(count=n, mode=mode)

Placeholders are ``str.format`` fields, filled *after* translation, so a translation may move
them. Module-level constants are marked with :func:`N_` (which only marks them for the
catalogue) and translated where they are shown: ``tr(HINT)``.

The language comes from ``--lang`` / :func:`set_language`, else ``KVSWITCH_LANG``, else the
locale (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``, the first one set, as gettext
reads them). Any Chinese locale (``zh``, ``zh_CN``, ``zh_SG``, ``zh_TW``…) gets Simplified
Chinese; everything else gets English. English is the source text, so the English path loads
nothing: the catalogue (a gettext ``.mo`` file built from the ``.po`` sources beside it) is read
on the first Chinese lookup only.

Diagnostic codes, JSON field names, file keys, commands and option names are never translated.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import gettext
    from collections.abc import Iterable
    from pathlib import Path

__all__ = [
    "LANGUAGES",
    "N_",
    "catalogue_path",
    "clauses",
    "language",
    "normalize",
    "ntr",
    "set_language",
    "tr",
]

LANGUAGES: Final = ("en", "zh_CN")
"""The languages kvswitch speaks: English (the source text) and Simplified Chinese."""

DOMAIN: Final = "kvswitch"
_ENV_ORDER: Final = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

_chosen: str | None = None
_catalogue: gettext.GNUTranslations | None = None


def normalize(value: str) -> str | None:
    """``"zh-CN"``, ``"zh_CN.UTF-8"``, ``"zh"`` → ``"zh_CN"``; ``"en_US"``, ``"C"``, ``"POSIX"``
    → ``"en"``; an empty or unknown value → None (the caller looks further)."""
    text = value.strip().split(":")[0].split(".")[0].split("@")[0].replace("-", "_").lower()
    if not text:
        return None
    if text == "zh" or text.startswith("zh_"):
        return "zh_CN"
    if text in {"en", "c", "posix"} or text.startswith("en_"):
        return "en"
    return None


def _from_environment() -> str:
    explicit = os.environ.get("KVSWITCH_LANG", "")
    if explicit and (lang := normalize(explicit)):
        return lang
    for name in _ENV_ORDER:
        value = os.environ.get(name, "")
        if value:
            # gettext stops at the first variable set; an unknown language there means English
            return normalize(value) or "en"
    return "en"


def language() -> str:
    """The language in use: ``"en"`` or ``"zh_CN"``."""
    global _chosen
    if _chosen is None:
        _chosen = _from_environment()
    return _chosen


def set_language(value: str | None) -> str:
    """Choose the language for the rest of the process (None: from the environment again).

    Accepts ``en``, ``zh-CN``, ``zh_CN``, ``zh`` and locale names such as ``zh_CN.UTF-8``;
    raises ValueError for anything else. Returns the language chosen."""
    global _chosen
    if value is None:
        _chosen = None
        return language()
    lang = normalize(value)
    if lang is None:
        raise ValueError(value)
    _chosen = lang
    return lang


def catalogue_path(lang: str = "zh_CN") -> Path:
    """The compiled catalogue of ``lang`` (shipped in the package)."""
    from pathlib import Path

    return Path(__file__).parent / "locale" / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def _translations() -> gettext.GNUTranslations | None:
    global _catalogue
    if _catalogue is None:
        import gettext

        try:
            with catalogue_path().open("rb") as handle:
                _catalogue = gettext.GNUTranslations(handle)
        except OSError:  # a broken install: English rather than a crash
            return None
    return _catalogue


def tr(message: str) -> str:
    """``message`` in the user's language (the English text itself when there is none)."""
    if language() == "en":
        return message
    catalogue = _translations()
    return message if catalogue is None else catalogue.gettext(message)


def ntr(singular: str, plural: str, count: int) -> str:
    """The singular or plural form for ``count``, in the user's language."""
    catalogue = None if language() == "en" else _translations()
    if catalogue is None:
        return singular if count == 1 else plural
    return catalogue.ngettext(singular, plural, count)


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it yet (module constants)."""
    return message


def clauses(parts: Iterable[str]) -> str:
    """Clauses of one message joined with a semicolon: a full-width one in Chinese."""
    return ("；" if language() == "zh_CN" else "; ").join(parts)
