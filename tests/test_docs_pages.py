"""The documentation is whole and stays true to the code: every page is linked from the index,
every relative link resolves, the architecture's module map names modules that exist, and the
troubleshooting page maps every fact to a diagnostic code or doctor check that exists."""

from __future__ import annotations

import re

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


@pytest.mark.parametrize("page", [*sorted(p.name for p in DOCS.glob("*.md")), "../README.md"])
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


def test_troubleshooting_maps_every_fact_to_a_real_check() -> None:
    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    for fact in ("S-24", "S-25", "S-26", "S-27", "S-28", "S-29", "S-08"):
        assert f"## {fact}" in text, fact
    for code in set(re.findall(r"KVS\d{3}", text)):
        assert code in CODES, code
    for check in set(re.findall(r"doctor \*\*`([\w-]+)`\*\*", text)):
        assert check in CHECKS, check
    table = text.split("| symptom |", 1)[1].split("\n\n", 1)[0]
    assert {c for c in CHECKS if f"`{c}`" in table} >= {"auth", "split", "chunk-size", "same-gpu", "prefix-cache",
                                                          "model"}


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
