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

TOML_ROOT_KEY = pytest.mark.xfail(
    strict=True,
    reason="kvswitch/formats/toml.py (tomlkit path) adds a new top-level key after the comment "
    "that heads the first table, so Codex's model_provider lands under '# Azure, for work'",
)


@pytest.mark.parametrize(
    "kind_id", [pytest.param(k, marks=TOML_ROOT_KEY) if k == "codex" else k for k in REAL]
)
def test_golden_files(kind_id: str) -> None:
    """profile use (merged) gives golden .merged; switch split gives golden .split (Cline:
    its updatedAt masked). The goldens were generated once and checked by hand: the user's
    parts untouched, only our header line or entry, each mode's URL as the client wants it."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    _golden(kind_id, "merged", path.read_text(encoding="utf-8"))
    _use("switch", "split")
    _golden(kind_id, "split", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind_id", REAL)
def test_round_trip_is_byte_identical(kind_id: str) -> None:
    """From the file as profile use rendered it in merged mode, switch split then switch
    merged gives the same bytes (Cline: updatedAt excluded, and set anew on each write)."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    merged = path.read_text(encoding="utf-8")
    _use("switch", "split")
    split = path.read_text(encoding="utf-8")
    assert split != merged
    _use("switch", "merged")
    again = path.read_text(encoding="utf-8")
    if kind_id == "cline-providers":
        assert _comparable(kind_id, again) == _comparable(kind_id, merged)
        stamps = [get_path(json.loads(t), ("providers", "openai-compatible", "updatedAt")) for t in (merged, split, again)]
        assert all(isinstance(s, str) and s.endswith("Z") for s in stamps)
    else:
        assert again == merged


@TOML_ROOT_KEY
def test_codex_new_top_level_key_stays_with_the_top_level_keys() -> None:
    """Codex: model_provider is added among the top-level keys, not under the comment that
    heads the user's first table."""
    setup()
    path = place("codex")
    add(path)
    _use("profile", "use", "A")
    assert "# Azure, for work\n[model_providers.azure]" in path.read_text(encoding="utf-8")
