"""What doctor's checks are, as data: their names and order, one :class:`Check` per outcome, the
pages they point to, and a parenthesis in each language (clauses join with
``kvswitch.i18n.clauses``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvswitch.i18n import language

__all__ = [
    "CHECKS",
    "CHUNK",
    "DOCS",
    "KNOWN",
    "MEASURING",
    "Check",
    "CheckStatus",
    "paren",
]


CheckStatus = Literal["pass", "warn", "fail", "skip"]

CHECKS = (
    "config",
    "key-variables",
    "chunk-size",
    "reachable",
    "url-convention",
    "auth",
    "model",
    "split",
    "nvidia-smi",
    "same-gpu",
    "prefix-cache",
)
"""Every check's name, in the order doctor runs them (``--skip`` takes these)."""

DOCS = "docs/background.md"
"""The page that explains what the checks look for; a check's ``source`` is an anchor in it."""
KNOWN = f"{DOCS}#known-errors"
CHUNK = f"{DOCS}#chunk-size"
MEASURING = f"{DOCS}#measuring"


def paren(text: str) -> str:
    """``text`` in parentheses: full-width in Chinese."""
    return f"（{text}）" if language() == "zh_CN" else f" ({text})"


@dataclass(frozen=True, slots=True)
class Check:
    """One check's outcome: what it looked at and saw, the fix when it is not a pass, and where
    to read more (``source``: a page and anchor, or empty)."""

    name: str
    status: CheckStatus
    saw: str
    fix: str = ""
    source: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "saw": self.saw, "fix": self.fix, "source": self.source}
