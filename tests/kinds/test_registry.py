"""The kinds registry: ids, old aliases, refusals that list the kinds, a throwaway kind
registered from this test module that kvswitch registers, renders and switches with no
change anywhere else, and no module outside kvswitch/kinds/ naming a kind."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kvswitch.formats.jsonc import JsoncDocument
from kvswitch.kinds import (
    CONFIG,
    all_kinds,
    canonical,
    choices,
    client_kind,
    detect_kind,
    get_kind,
    register,
    unregister,
)
from kvswitch.kinds.base import KeyPath
from kvswitch.kinds.real import RealKind
from tests.clientenv import cli, config_data
from tests.kinds.kindenv import MERGED_URL, MODEL, SPLIT_URL, setup

ROOT = Path(__file__).resolve().parent.parent.parent
IDS = [
    "article-cline",
    "article-ccswitch",
    "claude-code",
    "codex",
    "cline-providers",
    "opencode",
    "qwen-code",
]
ALIASES = {"cline": "article-cline", "ccswitch": "article-ccswitch"}


def test_ids_and_order() -> None:
    assert [k.id for k in all_kinds()] == [CONFIG, *IDS]
    assert [k.id for k in all_kinds(clients_only=True)] == IDS
    assert choices(clients_only=True) == [*IDS, "cline", "ccswitch"]
    assert CONFIG == "kvswitch" and not get_kind(CONFIG).client


@pytest.mark.parametrize(("alias", "kind_id"), sorted(ALIASES.items()))
def test_old_ids_read_as_aliases(alias: str, kind_id: str) -> None:
    assert canonical(alias) == kind_id
    assert get_kind(alias).id == kind_id
    assert client_kind(alias).id == kind_id


def test_products_name_clients() -> None:
    products = {k.id: k.product for k in all_kinds(clients_only=True)}
    assert products["claude-code"] == "Claude Code"
    assert products["codex"] == "Codex"
    assert products["cline-providers"] == "Cline"
    assert products["opencode"] == "OpenCode"
    assert products["qwen-code"] == "Qwen Code"
    assert get_kind("codex").apply_hint() == "restart Codex to apply (it reads its config at start-up)"
    assert {k.id: k.takes_effect for k in all_kinds(clients_only=True) if k.real} == {
        "claude-code": "now",
        "codex": "next start",
        "cline-providers": "next session",
        "opencode": "next start",
        "qwen-code": "next start",
    }


@pytest.mark.parametrize("name", [CONFIG, "vscode", "claude", ""])
def test_client_kind_refuses_the_config_and_unknown_ids(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        client_kind(name)
    message = str(caught.value)
    assert repr(name) in message
    for kind_id in IDS:
        assert kind_id in message
    assert f"{CONFIG}," not in message  # kvswitch's own config is not offered as a client


def test_register_refuses_a_taken_id_or_alias() -> None:
    class Clash(Acme):
        id = "codex"

    class AliasClash(Acme):
        id = "acme-2"
        aliases = ("cline",)

    for kind in (Clash(), AliasClash()):
        with pytest.raises(ValueError, match="is taken"):
            register(kind)
    assert get_kind("codex").product == "Codex" and canonical("cline") == "article-cline"
    assert "acme-2" not in choices()


def test_client_add_refuses_an_unknown_kind() -> None:
    setup()
    target = Path.home() / "x.json"
    target.write_text("{}\n", encoding="utf-8")
    result = cli("client", "add", str(target), "--kind", "acme-code")
    assert result.rc == 2, result
    assert "acme-code" in result.err and "claude-code" in result.err
    assert "clients" not in config_data()


# -- a throwaway kind ------------------------------------------------------------------------


class Acme(RealKind):
    """A tiny JSON client: {"acme": {"url": ..., "model": ..., "headers": {...}}}."""

    id = "acme-code"
    product = "Acme Code"
    aliases: ClassVar[tuple[str, ...]] = ("acme",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name == "acme.json":
            return 3
        return 2 if isinstance(data, dict) and isinstance(data.get("acme"), dict) else 0

    def url_path(self, data: Any) -> KeyPath:
        return ("acme", "url")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("acme", "model")

    def headers_path(self, data: Any) -> KeyPath:
        return ("acme", "headers")

    def model(self) -> Any:
        from pydantic import Field

        from kvswitch.models.common import StrictModel

        class AcmePart(StrictModel):
            url: str | None = Field(None, description="Base URL ending in /v1.")
            model: str | None = Field(None, description="Model id.")
            headers: dict[str, str] | None = Field(None, description="Extra headers.")

        class AcmeConfig(StrictModel):
            acme: AcmePart | None = Field(None, description="Acme's endpoint.")

        return AcmeConfig


@pytest.fixture
def acme() -> Iterator[Acme]:
    """Acme registered for one test, and always taken out again."""
    kind = register(Acme())
    try:
        yield kind
    finally:
        unregister(kind.id)
        from kvswitch.schema_check import schema

        schema.cache_clear()  # its generated schema must not outlive it


def test_a_throwaway_kind_registers_renders_and_switches(acme: Acme) -> None:
    """A kind added by one register() call is a client like the built-in ones: client add
    (--kind, and by detection), profile use, switch split and merged, status and lint."""
    assert "acme-code" in choices(clients_only=True) and canonical("acme") == "acme-code"
    setup()
    path = Path.home() / ".acme" / "acme.json"
    path.parent.mkdir()
    path.write_text(
        '{\n  // mine\n  "theme": "dark",\n  "acme": {"headers": {"X-Team": "a"}}\n}\n',
        encoding="utf-8",
    )
    other = Path.home() / "second.json"
    other.write_text('{"acme": {}}\n', encoding="utf-8")
    for argv in (
        ("client", "add", str(path), "--kind", "acme-code"),
        ("client", "add", str(other)),
    ):
        result = cli(*argv)
        assert result.rc == 0, result
        assert "Acme Code" in result.out
    assert [c["kind"] for c in config_data()["clients"]] == ["acme-code", "acme-code"]

    result = cli("profile", "use", "A")
    assert result.rc == 0, result
    assert "restart Acme Code to apply" in result.out
    merged = path.read_text(encoding="utf-8")
    assert merged.startswith('{\n  // mine\n  "theme": "dark",\n')
    data = JsoncDocument(merged).value
    assert data["acme"] == {
        "headers": {"X-Team": "a", "X-Cache-Mode": "merged"},
        "url": f"{MERGED_URL}/v1",
        "model": MODEL,
    }

    assert cli("switch", "split").rc == 0
    assert f'"url": "{SPLIT_URL}/v1"' in path.read_text(encoding="utf-8")
    assert '"X-Cache-Mode": "split"' in path.read_text(encoding="utf-8")
    status = cli("status")
    assert status.rc == 0 and status.out.count("] mode split · in sync") == 2, status
    assert cli("switch", "merged").rc == 0
    assert path.read_text(encoding="utf-8") == merged

    lint = cli("lint", str(path))
    assert lint.rc == 0, lint
    assert detect_kind(path, merged) == "acme-code"


def test_the_throwaway_kind_is_gone_after(acme: Acme) -> None:
    unregister(acme.id)
    try:
        assert "acme-code" not in choices() and canonical("acme") == "acme"
        with pytest.raises(ValueError):
            client_kind("acme-code")
    finally:
        register(acme)  # the fixture takes it out again


# -- no module outside kvswitch/kinds/ names a kind -----------------------------------------

NAMES = {*IDS, *ALIASES}
"""Every kind id and old alias ("kvswitch", the product's own name and the config kind, is
exempt: other modules refer to it through kinds.CONFIG)."""


def _sources() -> list[Path]:
    kinds = ROOT / "kvswitch" / "kinds"
    return sorted(p for top in ("kvswitch", "gui") for p in (ROOT / top).rglob("*.py") if kinds not in p.parents)


def _offenders(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return out


def test_no_module_outside_the_kinds_package_names_a_kind() -> None:
    """Adding a client is one module in kvswitch/kinds/: nothing else branches on a kind."""
    sources = _sources()
    assert any(p.parts[-2:] == ("kvswitch", "switching.py") for p in sources)
    assert any("gui" in p.relative_to(ROOT).parts[:1] for p in sources)
    assert _offenders(sources) == []


def test_the_scan_finds_a_kind_named(tmp_path: Path) -> None:
    """The scan above can fail: a module comparing with a kind id is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text('def f(kind):\n    return kind == "codex" or kind in ("cline",)\n', encoding="utf-8")
    original = ROOT
    try:
        globals()["ROOT"] = tmp_path
        assert _offenders([bad]) == ["bad.py:2: 'codex'", "bad.py:2: 'cline'"]
    finally:
        globals()["ROOT"] = original
