"""The public API is explicit: ``__all__`` is sorted, complete and every name resolves."""

from __future__ import annotations

import kvswitch
from tests.conftest import ROOT


def test_all_is_complete_and_resolves() -> None:
    # the order is ruff's (RUF022, checked by `ruff check`)
    assert len(set(kvswitch.__all__)) == len(kvswitch.__all__)
    for name in kvswitch.__all__:
        assert getattr(kvswitch, name) is not None, name
    assert sorted(dir(kvswitch)) == sorted(kvswitch.__all__)


def test_every_error_is_a_kvswitch_error_and_documented() -> None:
    from kvswitch import errors

    docs = (ROOT / "docs" / "api.md").read_text()
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, errors.KvswitchError), name
            assert f"`{name}`" in docs, f"{name} missing from docs/api.md"


def test_str_of_an_error_starts_with_its_location() -> None:
    from pathlib import Path

    err = kvswitch.ConfigParseError("expected ':'", kvswitch.Location(Path("a/settings.json"), 3, 7))
    assert str(err) == "a/settings.json:3:7: expected ':'"


def test_py_typed_ships() -> None:
    assert (ROOT / "kvswitch" / "py.typed").exists()
