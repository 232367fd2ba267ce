"""Text a user reads stands alone: no internal numbering (the design's D-n, the source digest's
S-nn, section signs, issue numbers) and no file a user does not have, in any message, help text,
translation, schema or docs page.

Code comments and docstrings may keep such references (they are for maintainers); every other
string in the shipped code is scanned, since any of them can reach a person."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = re.compile(
    r"\bS-\d{2}\b|\bD-\d{1,2}\b|§|\bthe article\b(?!-)|(?-i:\bDIGEST\b)|\bissue(?: order)? \d+\b|\(issue \d+\)"
    r"|\.\./shared|seed/|文章",
    re.IGNORECASE,
)


def hits(text: str) -> list[str]:
    return [m.group(0) for m in INTERNAL.finditer(text)]


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
        # an attribute's docstring (a bare string right after an assignment) is a docstring too
        if hasattr(node, "body") and isinstance(node.body, list):
            for before, after in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(before, ast.Assign | ast.AnnAssign)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                ):
                    ids.add(id(after.value))
    return ids


def _code_strings() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for top in ("kvswitch", "gui"):
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docs = _docstring_ids(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                    for hit in hits(node.value):
                        found.append((f"{path.relative_to(ROOT)}:{node.lineno}", hit))
    return found


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(ROOT.glob("README.*.md"))]
    files += sorted((ROOT / "docs").rglob("*.md"))
    files += sorted((ROOT / "schemas").glob("*.json"))
    files += sorted((ROOT / "kvswitch" / "locale").rglob("*.po"))
    files += sorted((ROOT / "gui").rglob("*.ts"))
    files += sorted((ROOT / "kvswitch").rglob("*.toml"))
    files += sorted((ROOT / "gui").rglob("*.desktop"))
    return [f for f in files if f.is_file()]


def test_no_string_in_the_code_cites_internal_numbering() -> None:
    found = _code_strings()
    assert found == [], "\n".join(f"{where}: {hit!r}" for where, hit in found)


def test_no_doc_page_schema_or_translation_cites_internal_numbering() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {hit!r}"
        for path in _text_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for hit in hits(line)
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "see S-24",
        "as D-7 says",
        "§7.3",
        "the article says",
        "DIGEST.md",
        "the DIGEST",
        "(issue 14)",
        "issue order 1",
        "../shared/reference",
        "原文章",
    ],
)
def test_the_scan_catches_each_kind_of_reference(text: str) -> None:
    assert hits(text)


@pytest.mark.parametrize(
    "text",
    [
        "KVS024",
        "HTTP/1.1 404",
        "S-curve",
        "2-D plot",
        "pid 24",
        "digests",
        "a blake2b digest",
        "the article-cline kind",
    ],
)
def test_the_scan_lets_ordinary_text_through(text: str) -> None:
    assert not hits(text)
