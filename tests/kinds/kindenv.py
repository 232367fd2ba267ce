"""Helpers for the client-kind tests: a kvswitch profile with one URL per mode, the real
clients' realistic files at their default paths, and their registration, all in the test's
sandbox (``tests/conftest.py``)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from kvswitch.kinds import get_kind
from tests.clientenv import KEY_A, Result, cli

__all__ = [
    "CLIENTS",
    "MERGED_URL",
    "MODEL",
    "SPLIT_URL",
    "add",
    "clients_fixture",
    "default_path",
    "mask_updated_at",
    "place",
    "set_profile",
    "setup",
]

CLIENTS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
MERGED_URL = "http://127.0.0.1:8101"
SPLIT_URL = "http://127.0.0.1:8102"
MODEL = "coder-7b"

CLIENTS: dict[str, str] = {
    "claude-code": "claude-user.json",
    "codex": "codex.toml",
    "cline-providers": "cline-providers.json",
    "opencode": "opencode.json",
    "qwen-code": "qwen.json",
}
"""Each real kind and its realistic default file under tests/fixtures/clients/."""

CLINE_FIXTURE_UPDATED_AT = "2026-11-02T09:14:27.512Z"


def clients_fixture(name: str) -> Path:
    return CLIENTS_DIR / name


def default_path(kind_id: str) -> Path:
    """The kind's usual user-level file in this test's sandbox."""
    home = Path(os.environ["HOME"])
    xdg = Path(os.environ["XDG_CONFIG_HOME"])
    return get_kind(kind_id).default_paths(home, xdg, os.environ)[0]


def place(kind_id: str, fixture: str | None = None, path: Path | None = None) -> Path:
    """Copy the kind's realistic file (or ``fixture``) to its default path (or ``path``)."""
    target = path or default_path(kind_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(clients_fixture(fixture or CLIENTS[kind_id]), target)
    return target


def add(path: Path, *flags: str) -> Result:
    result = cli("client", "add", str(path), *flags)
    assert result.rc == 0, result
    return result


def set_profile(values: dict[tuple[str, ...], Any], profile: str = "A") -> None:
    """Set fields of ``profile`` in kvswitch.toml (``("merged", "url")`` → its merged.url)."""
    from kvswitch.config import edit_config, read_config
    from kvswitch.edits import Delete, Set

    edits = [
        Delete(("profiles", profile, *p)) if v is None else Set(("profiles", profile, *p), v) for p, v in values.items()
    ]
    edit_config(edits, read_config())


def setup(
    *,
    key: str | None = "keyring",
    convention: str = "append-v1",
    base_url: str = "http://127.0.0.1:8000",
    merged_url: str | None = MERGED_URL,
    split_url: str | None = SPLIT_URL,
    mode_header: bool | None = None,
) -> None:
    """``kvswitch init`` with no article clients; profile A (model :data:`MODEL`) with one URL
    per mode. ``key``: "keyring" (KEY_A stored), "env:NAME" or "none"."""
    argv = [
        "init",
        "--profile",
        "A",
        "--base-url",
        base_url,
        "--url-convention",
        convention,
        "--model",
        MODEL,
        "--no-cline",
        "--no-ccswitch",
    ]
    if key == "keyring":
        result = cli(*argv, "--key-stdin", stdin=KEY_A + "\n")
    elif key is not None and key.startswith("env:"):
        result = cli(*argv, "--key-env", key[4:])
    else:
        result = cli(*argv, "--no-key")
    assert result.rc == 0, result
    values: dict[tuple[str, ...], Any] = {}
    if merged_url is not None:
        values[("merged", "url")] = merged_url
    if split_url is not None:
        values[("split", "url")] = split_url
    if mode_header is not None:
        values[("mode_header",)] = mode_header
    if key == "none":
        values[("key",)] = "none"
    if values:
        set_profile(values)


_UPDATED = re.compile(r'"updatedAt": "([^"]*)"')


def mask_updated_at(text: str) -> str:
    """Cline's file with every ``updatedAt`` kvswitch wrote masked (the fixture's own stays)."""
    return _UPDATED.sub(
        lambda m: m.group(0) if m.group(1) == CLINE_FIXTURE_UPDATED_AT else '"updatedAt": "<masked>"',
        text,
    )
