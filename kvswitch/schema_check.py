"""Type and value checks driven by the generated JSON Schemas, without importing pydantic.

The pydantic models are the single source of truth; ``schemas/*.json`` are generated from
them (and tested for freshness). Linting a file only needs the models' verdict on types and
values, and importing pydantic and building the models is most of a lint's start-up time, so
the lint path checks the data against the schema with this small validator instead. It
knows exactly the schema features pydantic emits for kvswitch's models, reports the same
locations pydantic would (a test compares them on generated inputs) and words its messages
the same way. kvswitch's own config is read the same way (:mod:`kvswitch.config_check`, with
``exact=True``: patterns and NaN too); ``kvswitch.load`` still validates with pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from kvswitch.i18n import language, tr
from kvswitch.records import record

__all__ = ["SchemaError", "check_schema", "error_message", "resolve", "schema"]


@record(slots=True)
class SchemaError:
    """One violation: where (``loc``), pydantic's error type, its message (pydantic's English
    words) and the values the message names (``ctx``, as pydantic gives them)."""

    loc: tuple[str | int, ...]
    type: str
    msg: str
    input: Any
    ctx: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        """The message in the user's language (:func:`error_message`)."""
        return error_message(self.type, self.msg, self.ctx)


def error_message(kind: str, msg: str, ctx: Mapping[str, Any] | None = None) -> str:
    """A pydantic error (or one of :func:`check_schema`'s) as kvswitch words it, in the user's
    language: chosen by its ``type`` (``missing``, ``int_type``, ``literal_error``,
    ``greater_than``…) with the values of its ``ctx``. In English that is pydantic's own
    wording; a ``value_error`` is kvswitch's own validator's message (its ``Value error, ``
    prefix dropped); a type kvswitch does not know keeps pydantic's English ``msg``."""
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    if language() == "en":
        return msg
    values = dict(ctx or {})
    expected = values.get("expected")
    if isinstance(expected, str):  # "'merged' or 'split'": the choices stay, the "or" is translated
        head, sep, last = expected.rpartition(" or ")
        if sep:
            values["expected"] = tr("{choices} or {last}").format(choices=head, last=last)
    words = _words(kind)
    if words is None:
        return msg
    try:
        return words.format(**values)
    except (KeyError, IndexError, ValueError):  # a ctx without the value the words name
        return msg


def _words(kind: str) -> str | None:
    """kvswitch's words for a pydantic error type (``None``: not one kvswitch knows)."""
    match kind:
        case "missing":
            return tr("Field required")
        case "extra_forbidden":
            return tr("Extra inputs are not permitted")
        case "string_type":
            return tr("Input should be a valid string")
        case "int_type":
            return tr("Input should be a valid integer")
        case "int_parsing":
            return tr("Input should be a valid integer, unable to parse string as an integer")
        case "int_from_float":
            return tr("Input should be a valid integer, got a number with a fractional part")
        case "float_type":
            return tr("Input should be a valid number")
        case "float_parsing":
            return tr("Input should be a valid number, unable to parse string as a number")
        case "finite_number":
            return tr("Input should be a finite number")
        case "bool_type":
            return tr("Input should be a valid boolean")
        case "bool_parsing":
            return tr("Input should be a valid boolean, unable to interpret input")
        case "list_type":
            return tr("Input should be a valid list")
        case "dict_type" | "model_type":
            return tr("Input should be a valid dictionary")
        case "literal_error" | "enum":
            return tr("Input should be {expected}")
        case "greater_than":
            return tr("Input should be greater than {gt}")
        case "greater_than_equal":
            return tr("Input should be greater than or equal to {ge}")
        case "less_than":
            return tr("Input should be less than {lt}")
        case "less_than_equal":
            return tr("Input should be less than or equal to {le}")
        case "string_too_short":
            return tr("String should have at least {min_length} characters")
        case "string_too_long":
            return tr("String should have at most {max_length} characters")
        case "too_short":
            return tr("List should have at least {min_length} items")
        case "too_long":
            return tr("List should have at most {max_length} items")
        case "string_pattern_mismatch":
            return tr("String should match pattern '{pattern}'")
        case "url_type" | "url_parsing" | "url_syntax_violation":
            return tr("Input should be a valid URL")
        case "url_scheme":
            return tr("URL scheme should be {expected_schemes}")
        case "path_type":
            return tr("Input is not a valid path")
    return None


@cache
def schema(kind: str) -> dict[str, Any]:
    """The generated schema of ``kind`` (shipped with the package as ``kvswitch.schemas``;
    a kind without a shipped file, one a script registered, has its schema generated)."""
    import importlib

    from kvswitch.kinds import get_kind

    name = get_kind(kind).schema_file
    if name is None:
        from kvswitch.schema_export import schema_for

        return schema_for(kind)
    pkg = importlib.import_module("kvswitch.schemas")  # the top-level schemas/ directory
    path = Path(str(pkg.__file__)).parent / name
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def check_schema(data: Any, kind: str, *, exact: bool = False) -> list[SchemaError]:
    """Every type/value violation of ``data`` against the schema of ``kind``. With ``exact``,
    also what pydantic checks beyond JSON types: string patterns, NaN against a bound, and an
    integer too large for a number (the lint path leaves them out)."""
    root = schema(kind)
    out: list[SchemaError] = []
    _check(data, root, root, (), out, exact)
    return out


def resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = root["$defs"][name]
    return node


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value)


def _check(
    value: Any,
    node: dict[str, Any],
    root: dict[str, Any],
    loc: tuple[str | int, ...],
    out: list[SchemaError],
    exact: bool = False,
) -> None:
    node = resolve(node, root)
    if "anyOf" in node:
        branches = [resolve(b, root) for b in node["anyOf"]]
        if value is None and any(b.get("type") == "null" for b in branches):
            return
        real = [b for b in branches if b.get("type") != "null"]
        if len(real) == 1:
            _check(value, real[0], root, loc, out, exact)
            return
        errors: list[SchemaError] = []
        for branch in real:
            attempt: list[SchemaError] = []
            _check(value, branch, root, loc, attempt, exact)
            if not attempt:
                return
            errors.extend(attempt)
        out.extend(errors[:1])
        return
    if "enum" in node:
        if value not in node["enum"] or isinstance(value, bool) != any(isinstance(e, bool) for e in node["enum"]):
            opts = [_fmt(e) for e in node["enum"]]
            expected = opts[0] if len(opts) == 1 else ", ".join(opts[:-1]) + " or " + opts[-1]
            out.append(SchemaError(loc, "literal_error", f"Input should be {expected}", value, {"expected": expected}))
        return
    kind = node.get("type")
    if kind == "object":
        _check_object(value, node, root, loc, out, exact)
    elif kind == "array":
        if not isinstance(value, list):
            out.append(SchemaError(loc, "list_type", "Input should be a valid list", value))
            return
        items = node.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _check(item, items, root, (*loc, i), out, exact)
    elif kind == "string":
        if not isinstance(value, str):
            out.append(SchemaError(loc, "string_type", "Input should be a valid string", value))
        elif exact and "pattern" in node and not _matches(node["pattern"], value):
            pattern = node["pattern"]
            message = f"String should match pattern '{pattern}'"
            out.append(SchemaError(loc, "string_pattern_mismatch", message, value, {"pattern": pattern}))
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            out.append(SchemaError(loc, "int_type", "Input should be a valid integer", value))
        else:
            _bounds(value, node, loc, out)
    elif kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool) or (exact and not _as_float(value)):
            out.append(SchemaError(loc, "float_type", "Input should be a valid number", value))
        elif exact and value != value:  # NaN: pydantic names the first bound it checks (le, lt, ge, gt)
            _nan_bound(value, node, loc, out)
        else:
            _bounds(value, node, loc, out)
    elif kind == "boolean" and not isinstance(value, bool):
        out.append(SchemaError(loc, "bool_type", "Input should be a valid boolean", value))


def _check_object(
    value: Any,
    node: dict[str, Any],
    root: dict[str, Any],
    loc: tuple[str | int, ...],
    out: list[SchemaError],
    exact: bool = False,
) -> None:
    if not isinstance(value, dict):
        kind = "model_type" if "properties" in node else "dict_type"
        out.append(SchemaError(loc, kind, "Input should be a valid dictionary", value))
        return
    props: dict[str, Any] = node.get("properties", {})
    for name in node.get("required", []):
        if name not in value:
            out.append(SchemaError((*loc, name), "missing", "Field required", None))
    for key, item in value.items():
        if key in props:
            _check(item, props[key], root, (*loc, key), out, exact)
        else:
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                _check(item, extra, root, (*loc, key), out, exact)


def _bounds(value: float, node: dict[str, Any], loc: tuple[str | int, ...], out: list[SchemaError]) -> None:
    if "minimum" in node and value < node["minimum"]:
        bound = node["minimum"]
        out.append(
            SchemaError(
                loc, "greater_than_equal", f"Input should be greater than or equal to {bound}", value, {"ge": bound}
            )
        )
    if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
        bound = node["exclusiveMinimum"]
        out.append(SchemaError(loc, "greater_than", f"Input should be greater than {bound}", value, {"gt": bound}))
    if "maximum" in node and value > node["maximum"]:
        bound = node["maximum"]
        out.append(
            SchemaError(loc, "less_than_equal", f"Input should be less than or equal to {bound}", value, {"le": bound})
        )
    if "exclusiveMaximum" in node and value >= node["exclusiveMaximum"]:
        bound = node["exclusiveMaximum"]
        out.append(SchemaError(loc, "less_than", f"Input should be less than {bound}", value, {"lt": bound}))


def _matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` as pydantic's (Rust) regex engine reads an anchored
    pattern: ``$`` is the end of the text, never before a final newline."""
    import re

    return re.search(pattern, text) is not None and not (pattern.endswith("$") and text.endswith("\n"))


def _as_float(value: float) -> bool:
    """Whether ``value`` converts to a float (an integer past about 1.8e308 does not)."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _nan_bound(value: float, node: dict[str, Any], loc: tuple[str | int, ...], out: list[SchemaError]) -> None:
    for key, kind, words, name in (
        ("maximum", "less_than_equal", "less than or equal to", "le"),
        ("exclusiveMaximum", "less_than", "less than", "lt"),
        ("minimum", "greater_than_equal", "greater than or equal to", "ge"),
        ("exclusiveMinimum", "greater_than", "greater than", "gt"),
    ):
        if key in node:
            bound = node[key]
            out.append(SchemaError(loc, kind, f"Input should be {words} {bound}", value, {name: bound}))
            return
