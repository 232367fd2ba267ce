"""The one JSON shape every reporting command prints with ``--format json``.

::

    {
      "kvswitch": "0.1.0",          the version that wrote it
      "format": 1,                  this envelope's version (bumped only on a breaking change)
      "command": "switch",          the command, with its subcommand: "profile list"
      "ok": true,                   false where the command exits nonzero
      "generated_at": "2026-12-03T14:05:09Z",   ISO 8601, UTC
      "data": {...}                 the command's own report (see schemas/kvswitch-output.schema.json)
    }

``lint --format json`` keeps its plain list of diagnostics (pre-commit users parse it), and is
the one exception. Times inside ``data`` are ISO 8601 strings too (:func:`iso_time`). Field
names are never translated; messages inside ``data`` are in the user's language.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kvswitch.times import iso_utc as iso_time

__all__ = ["FORMAT_VERSION", "dumps", "envelope", "iso_time"]

FORMAT_VERSION = 1


def _default(value: object) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def envelope(command: str, data: Any, *, ok: bool = True) -> dict[str, Any]:
    """The envelope around ``data`` (a dict or list of plain JSON values)."""
    from kvswitch import __version__

    return {
        "kvswitch": __version__,
        "format": FORMAT_VERSION,
        "command": command,
        "ok": ok,
        "generated_at": iso_time(float(int(time.time()))),
        "data": data,
    }


def dumps(command: str, data: Any, *, ok: bool = True) -> str:
    """The envelope as indented JSON text (UTF-8 as is: Chinese messages stay readable)."""
    return json.dumps(envelope(command, data, ok=ok), indent=2, ensure_ascii=False, default=_default)
