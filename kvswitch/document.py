"""Parsing a config file: its bytes decoded, its kind told (from its path and content together)
and its document parsed with positions, as a :class:`~kvswitch.config_file.ConfigFile`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvswitch.config_file import ConfigFile, Document
from kvswitch.errors import ConfigParseError, Location, UnknownKindError
from kvswitch.formats.edited import parsed
from kvswitch.formats.jsonc import JsoncDocument, JsoncSyntaxError, line_col
from kvswitch.formats.toml import TomlDocument, TomlSyntaxError
from kvswitch.i18n import tr
from kvswitch.kinds import detect_kind, get_kind
from kvswitch.literals import FileKind

__all__ = ["ConfigFile", "decode", "parse_config"]


def decode(raw: bytes, path: Path | None) -> str:
    """UTF-8 text of ``raw`` (a BOM is kept in the text); bad bytes are a parse error."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise ConfigParseError(
            tr("not UTF-8 text (byte {byte})").format(byte=f"0x{raw[exc.start]:02x}"), Location(path, line, col)
        ) from exc


def parse_config(raw: bytes | str, kind: FileKind | None = None, path: Path | None = None) -> ConfigFile:
    """Parse ``raw`` as ``kind`` (detected from the path and content when ``None``)."""
    if isinstance(raw, str):
        text = raw
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError as exc:
            line, col = line_col(raw, exc.start)
            raise ConfigParseError(
                tr("text holds a lone surrogate {char}, which no UTF-8 file can").format(
                    char=f"U+{ord(raw[exc.start]):04X}"
                ),
                Location(path, line, col),
            ) from exc
    else:
        text, data = decode(raw, path), raw
    parses = _Parses(text)  # detection and the document share one parse per format
    kind = _detect(path, parses) if kind is None else get_kind(kind).id  # an old alias reads as its kind
    fmt = get_kind(kind).format
    known = parsed(text)  # an edit's verified text comes with its document
    if isinstance(known, JsoncDocument if fmt == "jsonc" else TomlDocument):
        return ConfigFile(path, kind, data, known)
    try:
        doc = parses.document(fmt)
    except JsoncSyntaxError as exc:
        raise ConfigParseError(exc.message + _json5_hint(text, kind), _where(text, path, exc)) from exc
    except TomlSyntaxError as exc:
        raise ConfigParseError(exc.message, _where(text, path, exc)) from exc
    return ConfigFile(path, kind, data, doc)


def _where(text: str, path: Path | None, fault: JsoncSyntaxError | TomlSyntaxError) -> Location:
    """Where in ``text`` the syntax error ``fault`` lies."""
    if isinstance(fault, JsoncSyntaxError):
        line, col = line_col(text, fault.offset)
        return Location(path, line, col)
    return Location(path, fault.line, fault.column)


class _Parses:
    """One text parsed once per format (JSONC, TOML), when first asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._done: dict[str, Document | JsoncSyntaxError | TomlSyntaxError] = {}

    def document(self, fmt: str) -> Document:
        """The text as a document of ``fmt``; raises its syntax error."""
        if fmt not in self._done:
            try:
                self._done[fmt] = JsoncDocument(self.text) if fmt == "jsonc" else TomlDocument(self.text)
            except (JsoncSyntaxError, TomlSyntaxError) as exc:
                self._done[fmt] = exc
        done = self._done[fmt]
        if isinstance(done, JsoncSyntaxError | TomlSyntaxError):
            raise done
        return done

    def data(self, fmt: str) -> Any:
        """The text's values as ``fmt``, or ``None`` when it is not valid ``fmt``."""
        try:
            doc = self.document(fmt)
        except (JsoncSyntaxError, TomlSyntaxError, RecursionError):
            return None
        return doc.value if isinstance(doc, JsoncDocument) else doc.data


def _detect(path: Path | None, parses: _Parses) -> FileKind:
    """The file's kind; when it cannot be told because the text does not parse (a ``.toml``
    file as TOML; a ``.json`` file, or text that starts like JSON, as JSONC), the refusal says
    where the text breaks."""
    text = parses.text
    try:
        return detect_kind(path, text, data_for=parses.data)
    except UnknownKindError as exc:
        suffix = path.suffix.lower() if path is not None else ""
        looks_json = suffix in (".json", ".jsonc") or (
            suffix != ".toml" and text.lstrip("\ufeff \t\r\n").startswith(("{", "//", "/*"))
        )
        if not looks_json and suffix != ".toml":
            raise  # plain text, say: nothing to point at
        try:
            parses.document("jsonc" if looks_json else "toml")
        except (JsoncSyntaxError, TomlSyntaxError) as fault:
            message = tr("not valid {format}: {error}, so kvswitch cannot tell which kind of file this is")
            raise UnknownKindError(
                message.format(format="JSONC" if looks_json else "TOML", error=fault.message),
                _where(text, path, fault),
            ) from exc
        raise


def _json5_hint(text: str, kind: str) -> str:
    """When the text is valid JSON5 (single quotes, bare keys…), say that its reader rejects it."""
    try:
        import json5

        json5.loads(text.removeprefix("\ufeff"))
    except Exception:  # noqa: BLE001 - json5 raises assorted types; any failure means "no hint"
        return ""
    return tr(" (the file is valid JSON5, but {note})").format(note=get_kind(kind).json5_note())
