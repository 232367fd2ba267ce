"""JSON Schemas of the kinds, generated from their pydantic models (``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["config_reference", "schema_files", "schema_for", "schema_text", "write_schemas"]


def schema_files() -> dict[str, str]:
    """Each kind with a shipped schema, and its file name in ``schemas/``."""
    from kvswitch.kinds import all_kinds

    return {k.id: k.schema_file for k in all_kinds() if k.schema_file}


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one kind."""
    from kvswitch.kinds import get_kind

    k = get_kind(kind)
    schema = k.model().model_json_schema(by_alias=True, mode="validation")
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated from kvswitch's pydantic models by `kvswitch schema --write schemas/`; do not edit.",
    }
    out.update(schema)
    out["title"] = k.schema_title
    k.schema_extra(out)
    return out


def schema_text(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into ``directory`` (via :func:`kvswitch.io.atomic_write`)."""
    from kvswitch.io import atomic_write

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, name in schema_files().items():
        path = directory / name
        atomic_write(path, schema_text(kind).encode("utf-8"), backup=False)
        written.append(path)
    return written


def _type_name(prop: dict[str, Any], root: dict[str, Any]) -> str:
    if "$ref" in prop:
        return "table"
    if "enum" in prop:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "anyOf" in prop:
        names = [_type_name(p, root) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(names)
    kind = prop.get("type", "any")
    if kind == "array":
        return f"array of {_type_name(prop.get('items', {}), root)}"
    if kind == "object":
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict):
            return "table of strings" if extra.get("type") == "string" else "table of tables"
        return "table"
    return str({"integer": "integer", "number": "number", "string": "string", "boolean": "boolean"}.get(kind, kind))


def _limits(prop: dict[str, Any]) -> str:
    parts = []
    for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in prop:
            parts.append(f"{sign} {prop[key]}")
    return f" ({', '.join(parts)})" if parts else ""


def config_reference() -> str:
    """The kvswitch.toml reference (markdown), generated from the model's schema."""
    from kvswitch.kinds import CONFIG

    schema = schema_for(CONFIG)
    defs = schema.get("$defs", {})
    sections = [("kvswitch.toml (top level)", "", schema)]
    where = {
        "Profile": "[profiles.NAME]",
        "MergedProfile": "[profiles.NAME.merged]",
        "SplitProfile": "[profiles.NAME.split]",
        "SharedCache": "[profiles.NAME.cache]",
        "RequestOptions": "[profiles.NAME.request]",
        "AutoRoute": "[profiles.NAME.auto]",
        "ClientEntry": "[[clients]]",
        "Nudge": "[clients.nudge] (or nudge = { … } inline)",
        "GatewayConfig": "[gateway]",
    }
    for name, table in where.items():
        if name in defs:
            sections.append((table, defs[name].get("description", ""), defs[name]))
    out = []
    for title, doc, node in sections:
        out.append(f"### `{title}`\n")
        if doc:
            out.append(doc.replace("``", "`") + "\n")
        out.append("| key | type | default | meaning |\n|---|---|---|---|")
        required = set(node.get("required", []))
        for key, prop in node.get("properties", {}).items():
            default = (
                "required"
                if key in required
                else (f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else "—")
            )
            if default == "`{}`" or default == "`[]`":
                default = "empty"
            desc = (prop.get("description") or "").replace("``", "`").replace("|", "\\|")
            out.append(f"| `{key}` | {_type_name(prop, schema)}{_limits(prop)} | {default} | {desc} |")
        out.append("")
    return "\n".join(out)
