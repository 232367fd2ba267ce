"""The documentation is whole and stays true to the code: every page is linked from the index,
every relative link resolves and lands on a section that exists, the architecture's module map
names modules that exist, the troubleshooting page maps every known error to a diagnostic code or
doctor check that exists, every link the code makes to the background page lands on an anchor,
and each Chinese page translates its English page (the same codes, anchors and commands)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvswitch.diagnostics import CODES
from kvswitch.doctor import CHECKS
from tests.conftest import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")


def test_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = {m.group(1) for m in LINK.finditer(index)}
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= linked, f"docs/index.md does not link: {sorted(pages - linked)}"


@pytest.mark.parametrize(
    "page",
    [
        *sorted(p.name for p in DOCS.glob("*.md")),
        "../README.md",
        "../README.zh-CN.md",
        *sorted(f"zh-CN/{p.name}" for p in (DOCS / "zh-CN").glob("*.md")),
    ],
)
def test_relative_links_resolve(page: str) -> None:
    path = DOCS / page
    for m in LINK.finditer(path.read_text(encoding="utf-8")):
        target = m.group(1)
        if "://" in target:
            continue
        assert (path.parent / target).resolve().exists(), f"{page}: broken link {target}"


def test_architecture_module_map_names_existing_modules() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert text.count("```mermaid") == 1, "one picture"
    sections = re.split(r"^### ", text.split("## Module map", 1)[1].split("## The data flow", 1)[0], flags=re.M)
    checked = 0
    for section in sections[1:]:
        title = section.splitlines()[0]
        base = ROOT / ("gui" if title.startswith("`gui/`") else "kvswitch")
        for row in section.splitlines():
            if not row.startswith("| `"):
                continue
            first = row.split("|")[1]
            names = re.findall(r"`([\w/]+\.(?:py|toml))`", first)
            folder = ""
            for name in names:
                if "/" in name:
                    folder = name.rsplit("/", 1)[0] + "/"
                    rel = name
                else:
                    rel = folder + name
                assert (base / rel).exists(), f"architecture.md names {rel}, which does not exist under {base.name}/"
                checked += 1
    assert checked > 60


KNOWN_ERRORS = {
    # anchor in troubleshooting.md → the lint codes and doctor checks its section must name
    "unauthorized": ({"KVS210", "KVS201", "KVS211"}, {"auth"}),
    "split-timeout": ({"KVS111", "KVS110"}, {"split"}),
    "chunk-size-no-effect": ({"KVS103", "KVS101"}, {"chunk-size"}),
    "memory-up": (set(), {"same-gpu", "nvidia-smi"}),
    "ttft-swings": (set(), {"prefix-cache"}),
    "access": ({"KVS211", "KVS212"}, {"auth"}),
    "wrong-model": ({"KVS220"}, {"model"}),
    "key-in-file": ({"KVS212", "KVS213"}, set()),
}
"""Every known error: a section of its own (a stable id) that names real checks."""
ALSO_ASKED = ("switch-no-effect", "routing-unverified", "int8")


def sections(markdown: str) -> dict[str, str]:
    """Explicit id → the text from its ``<a id>`` to the next one."""
    parts = re.split(r'<a id="([^"]+)"></a>', markdown)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_troubleshooting_maps_every_known_error_to_a_real_check() -> None:
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    found = sections(text)
    for anchor, (codes, checks) in KNOWN_ERRORS.items():
        assert anchor in found, f"troubleshooting.md has no section #{anchor}"
        body = found[anchor]
        assert body.lstrip().startswith("## "), f"#{anchor} is not right before its heading"
        assert "**Cause**" in body and "**Fix**" in body, anchor
        named_codes = set(re.findall(r"\*\*(KVS\d{3})\*\*", body))
        named_checks = set(re.findall(r"doctor \*\*`([\w-]+)`\*\*", body))
        assert named_codes | named_checks, f"#{anchor} names no lint code and no doctor check"
        assert codes <= named_codes, (anchor, codes - named_codes)
        assert checks <= named_checks, (anchor, checks - named_checks)
    for anchor in ALSO_ASKED:
        assert anchor in found, anchor
    for code in set(re.findall(r"KVS\d{3}", text)):
        assert code in CODES, code
    for check in set(re.findall(r"doctor \*\*`([\w-]+)`\*\*", text)):
        assert check in CHECKS, check
    table = text.split("| symptom |", 1)[1].split("\n\n", 1)[0]
    for anchor in [*KNOWN_ERRORS, "switch-no-effect", "int8"]:
        assert f"](#{anchor})" in table, f"the table at the top has no row for #{anchor}"
    for check in set(re.findall(r"`([\w-]+)`", table)) & set(CHECKS):
        assert check in CHECKS
    assert {c for c in CHECKS if f"`{c}`" in table} >= {
        "auth",
        "split",
        "chunk-size",
        "same-gpu",
        "prefix-cache",
        "model",
    }
    for code in set(re.findall(r"KVS\d{3}", table)):
        assert code in CODES, code


# -- background.md: the page code links to ------------------------------------------------
REQUIRED_BACKGROUND = (
    "two-strategies",
    "merged",
    "split",
    "chunk-size",
    "when-split-pays",
    "when-merged-pays",
    "known-errors",
    "real-engines",
    "measuring",
)


def page_anchors(path: Path) -> set[str]:
    from tests.test_docs_clients import anchors

    return set(anchors(path.read_text(encoding="utf-8")))


def _background_links() -> set[tuple[str, str]]:
    """(where, id) for every ``background.md#ID`` in the code and docs, and every
    ``{DOCS}#ID`` in a module whose ``DOCS`` is the page."""
    found: set[tuple[str, str]] = set()
    files = [
        *ROOT.glob("README*.md"),
        *DOCS.rglob("*.md"),
        *(ROOT / "kvswitch").rglob("*.py"),
        *(ROOT / "kvswitch").rglob("*.po"),
        *(ROOT / "gui").rglob("*.py"),
        *(ROOT / "gui").rglob("*.ts"),
    ]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"background\.md#([\w-]+)", text):
            found.add((str(path.relative_to(ROOT)), m.group(1)))
        if re.search(r'^DOCS = "docs/background\.md"', text, re.M):
            for m in re.finditer(r"\{DOCS\}#([\w-]+)", text):
                found.add((str(path.relative_to(ROOT)), m.group(1)))
    return found


def test_every_link_to_the_background_page_lands_on_an_anchor() -> None:
    have = page_anchors(DOCS / "background.md")
    assert set(REQUIRED_BACKGROUND) <= have, set(REQUIRED_BACKGROUND) - have
    links = _background_links()
    assert {i for _, i in links} >= {"known-errors", "chunk-size", "measuring"}  # the scan finds the code's links
    bad = sorted(f"{where}: #{anchor}" for where, anchor in links if anchor not in have and anchor != "ANCHOR")
    assert not bad, "links to background.md anchors that do not exist:\n" + "\n".join(bad)


def test_background_lists_every_known_error_with_its_section() -> None:
    text = (DOCS / "background.md").read_text(encoding="utf-8")
    known = sections(text)["known-errors"]
    linked = set(re.findall(r"\(troubleshooting\.md#([\w-]+)\)", known))
    assert set(KNOWN_ERRORS) <= linked, set(KNOWN_ERRORS) - linked
    assert linked <= page_anchors(DOCS / "troubleshooting.md")
    for code in set(re.findall(r"KVS\d{3}", text)):
        assert code in CODES, code


def test_links_between_pages_land_on_anchors() -> None:
    """A ``page.md#anchor`` link in README, the docs or their Chinese pages names a section
    the page has (a heading's GitHub anchor or an explicit id)."""
    pages = [ROOT / "README.md", *sorted(ROOT.glob("README.*.md")), *sorted(DOCS.rglob("*.md"))]
    bad = []
    for page in pages:
        for m in re.finditer(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)", page.read_text(encoding="utf-8")):
            target = (page.parent / m.group(1)).resolve() if m.group(1) else page
            if "://" in (m.group(1) or "") or not target.exists():
                continue
            if m.group(2) not in page_anchors(target):
                bad.append(f"{page.relative_to(ROOT)}: {m.group(1) or ''}#{m.group(2)}")
    assert not bad, "\n".join(bad)


# -- the Chinese pages ----------------------------------------------------------------------
ZH = DOCS / "zh-CN"
ZH_PAGES = ("quickstart.md", "clients.md", "troubleshooting.md", "diagnostics.md", "background.md")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def prose(markdown: str) -> str:
    """The words a reader reads: code blocks, inline code, link targets and HTML left out."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<[^>]+>", "", text)


def commands(markdown: str) -> set[tuple[str, ...]]:
    """The page's kvswitch command lines as argument vectors (comments may be translated)."""
    from tests.test_docs_examples import command_lines, to_argv

    return {tuple(to_argv(line)) for line in command_lines(markdown)}


def cjk_share(markdown: str) -> float:
    text = prose(markdown)
    cjk = len(CJK.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return cjk / max(1, cjk + latin)


def linked_anchors(page: Path) -> set[str]:
    """The anchors of ``page`` that something points at: its explicit ids, every ``page.md#id``
    link in README and the docs, the diagnostic codes (``kvs101``: lint's messages link them) and
    the client kinds' sections (``docs_anchor``)."""
    from kvswitch.kinds import all_kinds

    text = page.read_text(encoding="utf-8")
    found = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for source in [ROOT / "README.md", *ROOT.glob("README.*.md"), *DOCS.rglob("*.md")]:
        for m in re.finditer(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)", source.read_text(encoding="utf-8")):
            target = (source.parent / m.group(1)).resolve() if m.group(1) else source.resolve()
            if target == page.resolve():
                found.add(m.group(2))
    if page.name == "diagnostics.md":
        found |= {code.lower() for code in CODES}
    if page.name == "clients.md":
        found |= {kind.docs_anchor for kind in all_kinds(clients_only=True)}
    return found


@pytest.mark.parametrize("name", ZH_PAGES)
def test_each_chinese_page_translates_its_english_page(name: str) -> None:
    zh_path, en_path = ZH / name, DOCS / name
    assert zh_path.exists(), f"docs/zh-CN/{name} is missing"
    zh, en = zh_path.read_text(encoding="utf-8"), en_path.read_text(encoding="utf-8")
    assert cjk_share(zh) > 0.5, f"docs/zh-CN/{name} is not mostly Chinese prose ({cjk_share(zh):.0%})"
    assert cjk_share(en) < 0.05
    assert set(re.findall(r"KVS\d{3}", zh)) == set(re.findall(r"KVS\d{3}", en)), "the same diagnostic codes"
    missing = linked_anchors(en_path) - page_anchors(zh_path)
    assert not missing, f"docs/zh-CN/{name} lacks the anchors {sorted(missing)} (links and code point there)"
    assert re.findall(r'<a id="([^"]+)"></a>', en) == [
        i for i in re.findall(r'<a id="([^"]+)"></a>', zh) if i in re.findall(r'<a id="([^"]+)"></a>', en)
    ]
    # the same commands: every kvswitch command line of the English page is on the Chinese one
    assert commands(en) <= commands(zh), commands(en) - commands(zh)
    assert "](../" in zh or name == "background.md", "a Chinese page links back to the English pages"
    assert not re.search(r"\b[SD]-\d+\b|DIGEST|§|文章", zh)


def test_the_readmes_link_each_other_at_the_top() -> None:
    en = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:5]
    zh_text = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert any("[简体中文](README.zh-CN.md)" in line for line in en)
    assert any("[English](README.md)" in line for line in zh_text.splitlines()[:5])
    assert cjk_share(zh_text) > 0.5
    english = (ROOT / "README.md").read_text(encoding="utf-8")
    assert commands(english) <= commands(zh_text), commands(english) - commands(zh_text)
    for page in ZH_PAGES:  # the Chinese README points at the Chinese pages where they exist
        assert f"](docs/zh-CN/{page})" in zh_text, page


IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def test_gui_page_shows_real_screenshots_that_exist() -> None:
    """docs/gui.md shows the tray menu, the probe window and the settings dialog; each image is
    a real PNG made by docs/screenshots.py, of a sensible size and under 200 KB."""
    from tests.helpers.xdisplay import png_size

    text = (DOCS / "gui.md").read_text(encoding="utf-8")
    shown = {target for _, target in IMAGE.findall(text)}
    assert {"images/tray-menu.png", "images/probe-window.png", "images/settings.png"} <= shown
    for target in shown:
        path = DOCS / target
        assert path.exists(), f"gui.md shows {target}, which does not exist"
        width, height = png_size(path)
        assert 40 <= width <= 2000 and 40 <= height <= 1200, (target, width, height)
        assert path.stat().st_size < 200_000, target
        assert target.split("/")[-1] in (ROOT / "docs" / "screenshots.py").read_text(encoding="utf-8")
