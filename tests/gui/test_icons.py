"""The tray icons: merged, split and unknown differ in shape (not only colour) at 16 px, and
the warning variant adds a mark of its own."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtGui import QImage

from kvswitch_gui.icons import SIZES, mode_icon, render

MODES = ("merged", "split", None)


def _mask(image: QImage, threshold: int = 96) -> list[list[bool]]:
    """Where the icon is drawn, ignoring colour: alpha above ``threshold``."""
    return [[image.pixelColor(x, y).alpha() > threshold for x in range(image.width())] for y in range(image.height())]


def _differing(a: list[list[bool]], b: list[list[bool]]) -> int:
    return sum(pa != pb for ra, rb in zip(a, b, strict=True) for pa, pb in zip(ra, rb, strict=True))


def _column_filled(mask: list[list[bool]], x: int) -> int:
    return sum(row[x] for row in mask)


def test_every_state_has_a_distinct_shape_at_16_px(qapp: object) -> None:
    masks = {(m, w): _mask(render(m, w, 16)) for m in MODES for w in (False, True)}
    for a, b in itertools.combinations(masks, 2):
        assert _differing(masks[a], masks[b]) >= 6, f"{a} and {b} look alike without colour"


def test_merged_is_one_block_and_split_two_halves(qapp: object) -> None:
    merged, split = _mask(render("merged", False, 16)), _mask(render("split", False, 16))
    assert _column_filled(merged, 7) >= 12 and _column_filled(merged, 8) >= 12  # solid through the middle
    assert _column_filled(split, 7) == 0 or _column_filled(split, 8) == 0  # a gap down the middle
    assert _column_filled(split, 3) >= 12 and _column_filled(split, 12) >= 12  # two halves
    hollow = _mask(render(None, False, 16))
    assert not hollow[8][8] and hollow[8][1]  # unknown: an outline only


@pytest.mark.parametrize("mode", MODES)
def test_warning_marks_the_bottom_right_corner(qapp: object, mode: str | None) -> None:
    plain, warned = render(mode, False, 32), render(mode, True, 32)
    corner = [(x, y) for x in range(20, 32) for y in range(20, 32)]
    changed = sum(plain.pixelColor(x, y) != warned.pixelColor(x, y) for x, y in corner)
    assert changed > 40
    top_left = [(x, y) for x in range(0, 12) for y in range(0, 12)]
    assert all(plain.pixelColor(x, y) == warned.pixelColor(x, y) for x, y in top_left)


def test_mode_icon_has_every_size_and_is_cached(qapp: object) -> None:
    icon = mode_icon("split", True)
    assert not icon.isNull()
    assert {s.width() for s in icon.availableSizes()} == set(SIZES)
    assert mode_icon("split", True) is icon
    assert mode_icon("merged", False).cacheKey() != mode_icon("split", False).cacheKey()
