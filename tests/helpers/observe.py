"""Observing from a test (or a script of the repo's): poll a condition with a timeout, and read
which mode each client file is in. No pytest and no Qt here."""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cline_data", "cline_mode", "toml_data", "toml_mode", "wait_until"]


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds
    pass (the last falsy value is returned)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def cline_data(path: Path) -> Any:
    """A Cline settings.json, parsed by kvswitch's JSONC parser."""
    from kvswitch.document import parse_config

    return parse_config(path.read_bytes(), "cline", path).data


def cline_mode(path: Path) -> str | None:
    """The Cline file's ``cline.cacheStrategy.mode``; None when it is missing, torn or broken."""
    try:
        return cline_data(path)["cline.cacheStrategy"]["mode"]
    except Exception:  # noqa: BLE001 - a torn or broken file has no mode
        return None


def toml_data(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def toml_mode(path: Path) -> str | None:
    """The CC Switch file's ``[cache] mode``; None when it is missing, torn or broken."""
    try:
        return toml_data(path)["cache"]["mode"]
    except Exception:  # noqa: BLE001
        return None
