"""The five real clients' kinds, end to end through the CLI in process: golden files from
each client's realistic default file, the round trip merged → split → merged byte for byte,
what a switch may write (only the URL and the X-Cache-Mode header, S-05), keys the real
clients' way (D-7, D-12), the mode header off, one URL per mode, status and lint."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kvswitch.document import parse_config
from kvswitch.kinds import MODE_HEADER, get_kind, get_path
from kvswitch.kinds.real import RealKind
from tests.clientenv import KEY_A, cli
from tests.kinds.kindenv import (
    CLIENTS,
    MERGED_URL,
    MODEL,
    SPLIT_URL,
    add,
    default_path,
    mask_updated_at,
    place,
    set_profile,
    setup,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "kinds"
REGEN = os.environ.get("KVSWITCH_REGEN_GOLDEN") == "1"
REAL = sorted(CLIENTS)


def _comparable(kind_id: str, text: str) -> str:
    return mask_updated_at(text) if kind_id == "cline-providers" else text


def _golden(kind_id: str, mode: str, text: str) -> None:
    path = GOLDEN / f"{kind_id}.{mode}"
    if REGEN:
        path.write_text(_comparable(kind_id, text), encoding="utf-8", newline="")
    assert _comparable(kind_id, text) == path.read_text(encoding="utf-8"), f"differs from {path.name}"


def _data(kind_id: str, path: Path) -> Any:
    return parse_config(path.read_bytes(), kind_id, path).data


def _real(kind_id: str) -> RealKind:
    kind = get_kind(kind_id)
    assert isinstance(kind, RealKind)
    return kind


def _use(*argv: str) -> None:
    result = cli(*argv)
    assert result.rc == 0, result


# -- golden files and the round trip ------------------------------------------------------

@pytest.mark.parametrize("kind_id", REAL)
def test_golden_round_trip(kind_id: str) -> None:
    """profile use (merged) → golden .merged; switch split → golden .split; switch merged →
    the merged render again, byte for byte (Cline: its updatedAt masked)."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    merged = path.read_text(encoding="utf-8")
    _golden(kind_id, "merged", merged)
    _use("switch", "split")
    split = path.read_text(encoding="utf-8")
    _golden(kind_id, "split", split)
    _use("switch", "merged")
    again = path.read_text(encoding="utf-8")
    assert _comparable(kind_id, again) == _comparable(kind_id, merged)
    if kind_id == "cline-providers":
        assert merged != split != again  # updatedAt is set on every write (Cline requires it)
    else:
        assert again == merged
