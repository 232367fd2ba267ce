"""Fuzzing: whatever bytes or text arrive, linting and loading return results or raise
kvswitch's own errors (``KvswitchError``) — never a stray ``TypeError``, ``KeyError``,
``RecursionError``, ``UnicodeError``…"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kvswitch
from kvswitch.errors import KvswitchError
from kvswitch.kinds import all_kinds
from kvswitch.linter import lint_text
from kvswitch.loader import to_view

ALL_KINDS = tuple(k.id for k in all_kinds())  # every registered kind, real clients included
KINDS = ("article-cline", "article-ccswitch", "kvswitch")  # the ones with fixable findings
NAMES = {"article-cline": "settings.json", "article-ccswitch": "cc-switch/config.toml", "kvswitch": "kvswitch.toml"}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Words that steer random input into kvswitch's own code paths.
WORDS = [
    "provider",
    "cache",
    "split",
    "request",
    "profiles",
    "clients",
    "mode",
    "merged",
    "chunk_size",
    "chunkSize",
    "base_url",
    "api_key",
    "model",
    "prefill_base_url",
    "decode_base_url",
    "max_transfer_concurrency",
    "version",
    "active_profile",
    "key",
    "nudge",
    "kind",
    "path",
    "kv_cache_dtype",
    "kvCacheDtype",
    "temperature",
    "cline.cacheStrategy",
    "cline.openAiApiKey",
    "cline.openAiBaseUrl",
    "cline.openAiModelId",
    "cline.requestOptions",
    "prefillEndpoint",
    "decodeEndpoint",
    "http://a",
    "https://h/api/",
    "sk-x ",
    "int8",
    "keyring",
    "env:X",
]
SYNTAX = [*"{}[]\"',:=#/*\n\r\t .\\", "//", "/*", "*/", '"""', "'''", "[[", "]]", "\ufeff", "\r\n"]

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
_soup = st.lists(st.sampled_from(WORDS + SYNTAX) | _text.map(lambda s: s[:3]), max_size=40).map("".join)
_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
_value = st.recursive(
    _scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(WORDS), c, max_size=4),
    max_leaves=15,
)
_tree = st.dictionaries(st.sampled_from(WORDS), _value, max_size=6)


def _as_toml(tree: dict[str, Any]) -> str:
    try:
        return tomlkit.dumps(tree)
    except Exception:  # noqa: BLE001 - TOML has no null: such trees just give no text
        return ""


_documents = st.one_of(
    st.binary(max_size=120),
    _text,
    _soup,
    _tree.map(json.dumps),
    _tree.map(lambda t: json.dumps({("cline." + k if i % 2 else k): v for i, (k, v) in enumerate(t.items())})),
    _tree.map(_as_toml),
)


def _check_lint(raw: bytes | str, kind: Any) -> None:
    try:
        cf, result = lint_text(raw, kind, git=False)
    except KvswitchError:
        return
    for d in result.diagnostics:
        assert d.code.startswith("KVS")
        assert d.line is None or d.line >= 1
        assert d.column is None or d.column >= 1
        d.as_dict()
    if cf is not None:
        with contextlib.suppress(KvswitchError):
            to_view(cf)


@FUZZ
@given(raw=_documents, kind=st.sampled_from((*ALL_KINDS, None)))
@example(raw="0.0", kind="cline")  # settings.json holding a number
@example(raw="a = " + "[" * 3000, kind="ccswitch")  # deeper than tomllib's recursion
@example(raw="a = " + "[" * 3000, kind=None)  # … while telling the kind from the content
@example(raw="x = " + "[" * 150 + "]" * 150, kind="kvswitch")  # deeper than tomlkit edits
@example(raw="[" * 3000, kind="cline")
@example(raw=b"\xff\xfe{}", kind="cline")
@example(raw='{"cline.openAiModelId": 5}', kind="cline")
@example(raw="profiles = 1\nactive_profile = 2\nclients = 3\n", kind="kvswitch")
@example(raw='[[profiles]]\nmodel = "m"\n', kind="kvswitch")
@example(raw="[cache]\nsplit = 5\nmode = 'split'\n", kind="ccswitch")
@example(raw='cache = "x"\nprovider = []\n', kind="ccswitch")
def test_lint_text_never_raises_foreign_errors(raw: bytes | str, kind: Any) -> None:
    _check_lint(raw, kind)


@FUZZ
@given(raw=_documents)
def test_every_kind_on_the_same_input(raw: bytes | str) -> None:
    for kind in ALL_KINDS:
        _check_lint(raw, kind)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kvswitch-fuzz-") as tmp:
        yield Path(tmp)


@FUZZ
@given(raw=_documents, name=st.sampled_from([*NAMES.values(), "notes.txt", "config.toml"]))
def test_load_never_raises_foreign_errors(scratch: Path, raw: bytes | str, name: str) -> None:
    path = scratch / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if isinstance(raw, bytes) else raw.encode("utf-8"))
    try:
        view = kvswitch.load(path)
    except KvswitchError:
        return
    assert view.kind in ALL_KINDS
    assert view.path == path


def _fixable_text(kind: str, chunk: int, url: str, key: str) -> str:
    if kind == "article-ccswitch":
        return f'[provider]\nbase_url = "{url}"\napi_key = "{key}"\nmodel = "m"\n[cache]\nchunk_size = {chunk}  # c\n'
    if kind == "article-cline":
        return json.dumps(
            {"cline.openAiBaseUrl": url, "cline.openAiApiKey": key, "cline.cacheStrategy": {"chunkSize": chunk}},
            indent=2,
        )
    return f'[profiles.a]\nbase_url = "{url}"\nmodel = "m"\n[profiles.a.merged]\nchunk_size = {chunk}\n'


_fixable = st.sampled_from(KINDS).flatmap(
    lambda kind: st.tuples(
        st.just(NAMES[kind]),
        st.builds(
            _fixable_text,
            st.just(kind),
            st.integers(-5, 5000),
            st.sampled_from(["https://h/api/", "http://h//", "https://h/api", "https://h/?x=1/"]),
            st.sampled_from([" sk-abc ", "sk-a\\nb", "sk-ok", "\\tsk-b\\r\\n"]),
        ),
    )
)
_random_named = st.tuples(st.sampled_from(list(NAMES.values())), _documents)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_fixable | _random_named)
def test_fix_never_raises_foreign_errors(scratch: Path, case: tuple[str, bytes | str]) -> None:
    name, raw = case
    path = scratch / "fix" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if isinstance(raw, bytes) else raw.encode("utf-8"))
    try:
        result = kvswitch.fix(path, git=False)
    except KvswitchError:
        return
    assert not [d for d in result.remaining if d.fix is not None]


def test_load_of_a_missing_file_or_directory_is_a_kvswitch_error(tmp_path: Path) -> None:
    with pytest.raises(KvswitchError):
        kvswitch.load(tmp_path / "settings.json")
    (tmp_path / "kvswitch.toml").mkdir()
    with pytest.raises(KvswitchError):
        kvswitch.load(tmp_path / "kvswitch.toml")


@pytest.mark.parametrize("kind", KINDS)
def test_lone_surrogate_in_text_input(kind: str) -> None:
    _check_lint('a = "\ud800"', kind)
