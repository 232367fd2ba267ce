"""JSON Schemas of the three kinds, generated from the pydantic models (``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_FILES", "schema_for", "schema_text", "write_schemas"]

SCHEMA_FILES = {
    "cline": "cline-settings.schema.json",
    "ccswitch": "ccswitch-config.schema.json",
    "kvswitch": "kvswitch-config.schema.json",
}
_TITLES = {
    "cline": "kvswitch: cline.* keys of a Cline-style VS Code settings.json",
    "ccswitch": "kvswitch: CC Switch config.toml",
    "kvswitch": "kvswitch: kvswitch.toml (profiles and clients)",
}


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one kind."""
    from pydantic import BaseModel

    from kvswitch.models import CCSwitchConfig, ClineSettings, KvswitchConfig

    models: dict[str, type[BaseModel]] = {
        "cline": ClineSettings, "ccswitch": CCSwitchConfig, "kvswitch": KvswitchConfig,
    }
    model = models[kind]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated from kvswitch's pydantic models by `kvswitch schema --write schemas/`; do not edit.",
    }
    out.update(schema)
    out["title"] = _TITLES[kind]
    if kind == "cline":
        out["additionalProperties"] = True  # settings.json holds every other extension's keys
    return out


def schema_text(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into ``directory`` (via :func:`kvswitch.io.atomic_write`)."""
    from kvswitch.io import atomic_write

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, name in SCHEMA_FILES.items():
        path = directory / name
        atomic_write(path, schema_text(kind).encode("utf-8"), backup=False)
        written.append(path)
    return written
