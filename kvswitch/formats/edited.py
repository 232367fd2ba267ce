"""Text an edit produced, carrying the document its verification already parsed."""

from __future__ import annotations

from typing import Any

__all__ = ["EditedText", "parsed"]


class EditedText(str):
    """A ``str`` (the edited text, verified) that also holds ``doc``, the document parsed from
    it when it was verified: :func:`kvswitch.document.parse_config` takes that document instead
    of parsing the same text again, which on a big file is most of a switch's time."""

    doc: Any

    @classmethod
    def of(cls, text: str, doc: Any) -> EditedText:
        out = cls(text)
        out.doc = doc  # the document holds the plain text, so there is no reference cycle
        return out


def parsed(text: str) -> Any:
    """The document already parsed from ``text``, or ``None``."""
    return text.doc if isinstance(text, EditedText) else None
