"""The committed JSON Schemas are what the models generate today, and they validate fixtures."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from kvswitch.cli import main
from kvswitch.formats.jsonc import JsoncDocument
from kvswitch.schema_export import schema_files, schema_text, write_schemas
from tests.conftest import FIXTURES, ROOT


def test_committed_schemas_are_fresh(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    for name in schema_files().values():
        assert (ROOT / "schemas" / name).read_text() == (tmp_path / name).read_text(), (
            f"schemas/{name} is stale: run `kvswitch schema --write schemas`"
        )
    assert main(["schema", "--check", str(ROOT / "schemas")]) == 0


def test_check_reports_a_stale_schema(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    (tmp_path / schema_files()["article-cline"]).write_text("{}\n")
    assert main(["schema", "--check", str(tmp_path)]) == 1


def test_fixtures_validate_against_the_schemas() -> None:
    import jsonschema

    cline = jsonschema.Draft202012Validator(json.loads(schema_text("cline")))
    for path in sorted((FIXTURES / "cline").glob("*.json")):
        cline.validate(JsoncDocument(path.read_text(encoding="utf-8-sig")).value or {})
    ccswitch = jsonschema.Draft202012Validator(json.loads(schema_text("ccswitch")))
    for path in sorted((FIXTURES / "ccswitch").glob("*.toml")):
        ccswitch.validate(tomllib.loads(path.read_text()))
    kv = jsonschema.Draft202012Validator(json.loads(schema_text("kvswitch")))
    kv.validate(tomllib.loads((FIXTURES / "kvswitch" / "kvswitch.toml").read_text()))
    errors = list(ccswitch.iter_errors({"cache": {"mode": "both"}}))
    assert errors and "both" in errors[0].message


def test_configuration_reference_is_fresh() -> None:
    from kvswitch.schema_export import config_reference

    marker = "<!-- generated: kvswitch schema --reference; do not edit below -->\n"
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert marker in text
    assert text.split(marker, 1)[1] == config_reference(), "docs/configuration.md is stale: regenerate its tail"
