#!/usr/bin/env python3
"""Maintain kvswitch's message catalogue (Babel): ``python .ci/i18n.py COMMAND``.

The Chinese catalogue's sources are ``.po`` files under ``kvswitch/locale/zh_CN/``, one per
area (``cli.po``, ``diagnostics.po``, ``argparse.po``…), so translators of different areas never
edit one file. ``compile`` merges them into the one ``.mo`` file the package ships.

Commands:
  check [PATH...]  every message in the code has exactly one non-empty Chinese translation with
                   the same placeholders; none stale; the .mo is fresh (exit 1 and a list
                   otherwise). With PATHs: only those source files' messages are checked
  compile          build kvswitch/locale/zh_CN/LC_MESSAGES/kvswitch.mo from the .po sources
  stub PATH...     print .po entries for the untranslated messages of those source files
                   (``argparse`` as a PATH stands for Python's own argparse module)
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "kvswitch" / "locale" / "zh_CN"
MO = LOCALE / "LC_MESSAGES" / "kvswitch.mo"
SOURCES = (ROOT / "kvswitch",)
# the tray's modules that speak before Qt is loaded use the catalogue too (the rest use Qt's .ts)
GUI_SOURCES = (ROOT / "gui" / "launch.py", ROOT / "gui" / "desktop.py", ROOT / "gui" / "autostart.py")
KEYWORDS = {"tr": None, "ntr": (1, 2), "N_": None}
ARGPARSE_KEYWORDS = {"_": None, "ngettext": (1, 2)}
FIXED_DATE = datetime(2026, 1, 1, tzinfo=UTC)  # reproducible .mo bytes

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\([a-z_]+\)[a-z]|%[sdrf]")
WORD = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class Message:
    id: str | tuple[str, str]  # a plural message is (singular, plural)
    where: str

    @property
    def key(self) -> str:
        return self.id[0] if isinstance(self.id, tuple) else self.id


def _extract(path: Path, keywords: dict[str, object]) -> Iterator[Message]:
    from babel.messages.extract import extract_from_file

    for lineno, msgid, _comments, _context in extract_from_file("python", path, keywords=keywords):
        if not msgid or (isinstance(msgid, tuple) and not msgid[0]):
            continue
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)
        yield Message(msgid if isinstance(msgid, str) else (msgid[0], msgid[1]), f"{rel}:{lineno}")


def source_files() -> list[Path]:
    """The Python files whose ``tr``/``ntr``/``N_`` messages belong in the catalogue."""
    files: list[Path] = []
    for top in SOURCES:
        files += [p for p in sorted(top.rglob("*.py")) if "testing" not in p.relative_to(ROOT).parts]
    return files + [p for p in GUI_SOURCES if p.exists()]


def argparse_messages() -> list[Message]:
    """argparse's own strings (usage, options, errors) in the running Python."""
    return list(_extract(Path(argparse.__file__), ARGPARSE_KEYWORDS))


def code_messages(paths: Iterable[Path] | None = None) -> list[Message]:
    return [m for p in (source_files() if paths is None else paths) for m in _extract(p, KEYWORDS)]


def po_files() -> list[Path]:
    return sorted(LOCALE.glob("*.po"))


def read_catalogue():  # -> dict[str, tuple[Path, babel Message]]
    from babel.messages.pofile import read_po

    entries: dict[str, tuple[Path, object]] = {}
    duplicates: list[str] = []
    for path in po_files():
        with path.open("rb") as handle:
            catalog = read_po(handle, locale="zh_CN")
        for message in catalog:
            if not message.id:
                continue
            key = message.id[0] if isinstance(message.id, tuple | list) else message.id
            if key in entries:
                duplicates.append(f"{path.name} and {entries[key][0].name}: {key!r}")
            entries[key] = (path, message)
    return entries, duplicates


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


def needs_cjk(msgid: str) -> bool:
    """A message with words in it must read as Chinese; one that is only placeholders and
    punctuation (``"{path}: {message}"``) may stay as it is."""
    return bool(WORD.search(PLACEHOLDER.sub("", msgid)))


def problems(messages: list[Message], argparse_ids: list[Message], *, whole: bool = True) -> list[str]:
    entries, found = read_catalogue()
    found = [f"duplicate: {d}" for d in found]
    wanted = {m.key: m for m in messages}
    optional = {m.key: m for m in argparse_ids}
    for key, message in {**optional, **wanted}.items():
        if key not in entries:
            found.append(f"missing: {message.where}: {key!r}")
            continue
        path, entry = entries[key]
        strings = list(entry.string) if isinstance(entry.string, tuple | list) else [entry.string]
        ids = list(message.id) if isinstance(message.id, tuple) else [message.id]
        for text in strings:
            if not text:
                found.append(f"empty: {path.name}: {key!r}")
            elif needs_cjk(key) and (text == ids[0] or not CJK.search(text)):
                found.append(f"not Chinese: {path.name}: {key!r}")
            elif placeholders(text) != placeholders(ids[-1]):  # zh has one form: the plural's
                found.append(f"placeholders differ: {path.name}: {key!r} -> {text!r}")
    if not whole:
        return found
    for key, (path, _entry) in entries.items():
        if key not in wanted and path.name != "argparse.po":
            found.append(f"stale (no longer in the code): {path.name}: {key!r}")
    shown = MO.relative_to(ROOT) if MO.is_relative_to(ROOT) else MO
    if MO.exists() and MO.read_bytes() != compiled():
        found.append(f"{shown} is out of date: run `python .ci/i18n.py compile`")
    elif not MO.exists():
        found.append(f"{shown} is missing: run `python .ci/i18n.py compile`")
    return found


def compiled() -> bytes:
    """The .mo bytes the .po sources make (deterministic)."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    entries, _ = read_catalogue()
    catalog = Catalog(
        locale="zh_CN",
        domain="kvswitch",
        project="kvswitch",
        fuzzy=False,
        creation_date=FIXED_DATE,
        revision_date=FIXED_DATE,
        language_team="kvswitch",
        last_translator="kvswitch",
    )
    for key in sorted(entries):
        _path, entry = entries[key]
        catalog.add(entry.id, entry.string, flags=())
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    return buffer.getvalue()


def _po_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def stub(paths: list[str]) -> str:
    entries, _ = read_catalogue()
    out: list[str] = []
    seen: set[str] = set()
    for name in paths:
        messages = argparse_messages() if name == "argparse" else code_messages([Path(name).resolve()])
        for m in messages:
            if m.key in entries or m.key in seen:
                continue
            seen.add(m.key)
            out.append(f"#: {m.where}")
            if isinstance(m.id, tuple):
                out += [f'msgid "{_po_escape(m.id[0])}"', f'msgid_plural "{_po_escape(m.id[1])}"', 'msgstr[0] ""', ""]
            else:
                out += [f'msgid "{_po_escape(m.id)}"', 'msgstr ""', ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="i18n.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["check", "compile", "stub"])
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "compile":
        MO.parent.mkdir(parents=True, exist_ok=True)
        MO.write_bytes(compiled())
        print(f"wrote {MO.relative_to(ROOT)}")
        return 0
    if args.command == "stub":
        print(stub(args.paths))
        return 0
    if args.paths:
        found = problems(code_messages([Path(p).resolve() for p in args.paths]), [], whole=False)
    else:
        found = problems(code_messages(), argparse_messages())
    for line in found:
        print(line)
    print(f"{len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
