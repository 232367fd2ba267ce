"""The real-client tests' fixture: ``harness``, one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.realclients.harness import Harness, require_harness


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    """The namespace, the "merged" and "split" recorders and the refusing proxy; skips (fails
    under CI) where the harness cannot run."""
    require_harness()
    h = Harness.start()
    try:
        yield h
    finally:
        h.close()
