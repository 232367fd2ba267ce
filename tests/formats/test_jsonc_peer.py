"""The JSONC reader against VS Code's own: npm ``jsonc-parser`` (``tests/peer``).

A seeded sample of random JSONC (``jsonc_gen.render``), the same documents after a random
edit by our editor, and every Cline fixture with its switched (golden) forms go to ONE
node process; jsonc-parser must find no error in any of them and read the values we read.
A handful of invalid documents must be rejected by both.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from typing import Any

import pytest

from kvswitch.formats.jsonc import JsoncDocument, JsoncSyntaxError
from tests.conftest import FIXTURES, ROOT, require_tool

from .jsonc_gen import random_edit, random_object, random_value, render, same

pytestmark = pytest.mark.peer

PEER = ROOT / "tests" / "peer"
SCRIPT = PEER / "jsonc_check.js"
SAMPLE_SIZE = 300
INSTALL = "cd tests/peer && npm install --no-package-lock --no-save jsonc-parser@3.3.1 (tests/run.py does this)"


def run_peer(docs: list[str]) -> list[dict[str, Any]]:
    """What jsonc-parser makes of each document: ``errors``, ``value`` and ``empty``."""
    node = require_tool("node")
    if not (PEER / "node_modules" / "jsonc-parser" / "package.json").is_file():
        message = f"npm jsonc-parser is not installed in tests/peer: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps(docs),  # ASCII, so surrogates and odd characters travel safely
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(results) == len(docs)
    return results


def sample() -> list[tuple[str, str]]:
    """(label, text) pairs: random documents, each also after one random edit by our editor."""
    out: list[tuple[str, str]] = []
    for seed in range(SAMPLE_SIZE // 2):
        rng = random.Random(seed)
        value: Any = random_object(rng) if seed % 4 else random_value(rng)
        text = render(value, rng)
        out.append((f"random #{seed}", text))
        picked = random_edit(value, rng) if isinstance(value, dict) else None
        if picked is not None:
            out.append((f"random #{seed} after {picked[1]!r}", JsoncDocument(text).apply([picked[1]])))
    return out


def fixture_documents() -> list[tuple[str, str]]:
    paths = sorted((FIXTURES / "cline").glob("*.json"))
    paths += sorted((ROOT / "tests" / "golden").glob("*.json.*"))
    return [(p.relative_to(ROOT).as_posix(), p.read_bytes().decode("utf-8")) for p in paths]


def test_jsonc_parser_reads_what_we_read() -> None:
    fixtures = fixture_documents()
    assert len(fixtures) >= 12
    docs = sample() + fixtures
    assert len(docs) >= 200
    results = run_peer([text for _, text in docs])
    for (label, text), peer in zip(docs, results, strict=True):
        ours = JsoncDocument(text)
        assert ours.root is not None, label
        assert peer["errors"] == [], (label, text, peer["errors"])
        assert not peer["empty"], label
        assert same(peer["value"], ours.value, exact_numbers=False), (label, text, peer["value"], ours.value)


INVALID = [
    '{"a": 1 "b": 2}',  # missing comma
    "{'a': 1}",  # single quotes
    "{a: 1}",  # bare key
    '{"a": yes}',  # bare word
    "[01]",  # leading zero
    "[NaN]",
    "[-Infinity]",
    "[1.]",
    '{"a": 1}}',  # garbage after the root
    '{"a": 1} x',
    "{ /* open",  # unterminated comment
    '{"a": "abc',  # unterminated string
    '{"a": "ab\ncd"}',  # a line break in a string
    '["a\tb"]',  # a raw control character in a string
    '["\\q"]',  # an invalid escape
    '["\\u12G4"]',
    "{\u00a0}",  # a non-breaking space is not whitespace
    '{"a": 1}\ufeff',  # a BOM after the start
    "[1,,2]",
    "{,}",
    '{"a" 1}',
    "[true false]",
]


@pytest.mark.parametrize("text", INVALID)
def test_we_reject_invalid_documents(text: str) -> None:
    with pytest.raises(JsoncSyntaxError):
        JsoncDocument(text)


def test_jsonc_parser_rejects_them_too() -> None:
    results = run_peer(INVALID)
    accepted = [text for text, peer in zip(INVALID, results, strict=True) if not peer["errors"]]
    assert accepted == []


def test_the_peer_script_and_manifest_are_in_place() -> None:
    manifest = json.loads((PEER / "package.json").read_text(encoding="utf-8"))
    assert manifest["private"] is True
    assert manifest["dependencies"] == {"jsonc-parser": "3.3.1"}
    assert SCRIPT.is_file()
    assert not (PEER / "package-lock.json").exists()
