"""docs/clients.md covers every registered client kind: a section whose GitHub anchor is the
kind's ``docs_anchor`` (messages and the kind itself point there), a row in the table at the
top, links that land on sections that exist, and user-facing text with no design-note
citations and no paths of the machine it was written on."""

from __future__ import annotations

import re

import pytest

from kvswitch.kinds import all_kinds
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "clients.md"
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def github_slug(title: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, every character that is
    not a letter, digit, ``_``, ``-`` or space removed, spaces as ``-``; a repeat gets ``-N``."""
    text = re.sub(r"`([^`]*)`", r"\1", title)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(slug, 0)
    seen[slug] = n + 1
    return slug if n == 0 else f"{slug}-{n}"


EXPLICIT = re.compile(r'<a id="([^"]+)"></a>')


def anchors(markdown: str) -> dict[str, str]:
    """Anchor → heading text, for every heading outside code blocks, and for every explicit
    ``<a id="…"></a>`` (a stable id that outlives a heading's wording): the heading after it."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    seen: dict[str, int] = {}
    found = {github_slug(m.group(2), seen): m.group(2) for m in HEADING.finditer(prose)}
    for m in EXPLICIT.finditer(prose):
        heading = HEADING.search(prose, m.end())
        found[m.group(1)] = heading.group(2) if heading else ""
    return found


def builtin_client_kinds() -> list:  # type: ignore[type-arg]
    """The client kinds kvswitch ships (a test may register a throwaway one meanwhile)."""
    return [k for k in all_kinds(clients_only=True) if type(k).__module__.startswith("kvswitch.kinds.")]


def test_an_explicit_id_names_the_heading_after_it() -> None:
    text = '<a id="old-id"></a>\n## New wording\n\ntext\n\n## Next\n'
    assert anchors(text) == {"new-wording": "New wording", "next": "Next", "old-id": "New wording"}


def test_the_slug_is_githubs() -> None:
    seen: dict[str, int] = {}
    assert github_slug("The article's Cline-style settings.json", seen) == "the-articles-cline-style-settingsjson"
    assert github_slug("The article's CC Switch-style config.toml", seen) == "the-articles-cc-switch-style-configtoml"
    assert github_slug("`kvswitch.toml` and version 2", seen) == "kvswitchtoml-and-version-2"
    assert github_slug("Undo", seen) == "undo"
    assert github_slug("Undo", seen) == "undo-1"


def test_every_kind_has_a_docs_anchor() -> None:
    kinds = builtin_client_kinds()
    assert len(kinds) >= 7
    for kind in kinds:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", kind.docs_anchor), (kind.id, kind.docs_anchor)
    assert len({k.docs_anchor for k in kinds}) == len(kinds), "two kinds share a section"


@pytest.mark.parametrize("kind_id", [k.id for k in builtin_client_kinds()])
def test_each_client_kind_has_its_section_and_table_row(kind_id: str) -> None:
    from kvswitch.kinds import get_kind

    kind = get_kind(kind_id)
    text = PAGE.read_text(encoding="utf-8")
    found = anchors(text)
    assert kind.docs_anchor in found, f"docs/clients.md has no section #{kind.docs_anchor} for {kind.id}"
    section = text.split(f"## {found[kind.docs_anchor]}\n", 1)[1].split("\n## ", 1)[0]
    assert "**File.**" in section and "**What kvswitch writes.**" in section and "**Key.**" in section
    assert "**Takes effect.**" in section, kind.id
    table = text.split("\n\n| client |", 1)[1].split("\n\n", 1)[0]
    row = next((r for r in table.splitlines() if f"| `{kind.id}`" in r), None)
    assert row is not None, f"the table at the top has no row for {kind.id}"
    assert f"(#{kind.docs_anchor})" in row
    if kind.real:
        assert kind.takes_effect in row, (kind.id, kind.takes_effect)
        assert kind.product in row
    for alias in kind.aliases:  # the old id is named where the kind is
        assert f"`{alias}`" in row and f"`{alias}`" in section, (kind.id, alias)


def test_links_inside_the_page_land_on_a_section() -> None:
    text = PAGE.read_text(encoding="utf-8")
    found = anchors(text)
    targets = re.findall(r"\]\(#([^)\s]+)\)", text)
    assert len(targets) >= 7
    for target in targets:
        assert target in found, f"docs/clients.md links to #{target}, which is no section"


def test_the_page_stands_alone() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert not re.search(r"\b[SD]-\d+\b", text), "no design-note citations in user docs"
    assert not re.search(r"(?<![\w~.])/(home|root|tmp|work|Users)/", text), "no machine paths"
    assert "DIGEST" not in text
    assert not re.search(r"\bthe article\b|§", text, re.I), "no citations of the source write-up"
    assert not re.search(r"registry\.[a-z]|pypi\.org|npmjs\.", text), "no package registry hosts"
