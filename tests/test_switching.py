"""Switching real fixture files: golden outputs, owned lines only, round trips, no-ops."""

from __future__ import annotations

import difflib
import os
import re
import shutil
from pathlib import Path

import pytest

import kvswitch
from kvswitch.document import parse_config
from kvswitch.errors import EditError
from kvswitch.switching import ModeDefaults, plan_switch
from tests.conftest import FIXTURES

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("KVSWITCH_UPDATE_GOLDEN") == "1"

CASES = sorted(
    [p for p in (FIXTURES / "cline").glob("*.json") if p.name != "plain-vscode.json"]
    + list((FIXTURES / "ccswitch").glob("*.toml"))
)
# lines a switch may touch: the mode, the keys that leave or come, and a new [cache.split] block
OWNED_JSONC = re.compile(
    r'^\s*("mode"|"chunkSize"|"prefillEndpoint"|"decodeEndpoint"|"kvTransferProtocol"|"cline\.cacheStrategy"'
    r'|"kvCacheDtype"|"enablePrefixCache"|"cline\.openAiModelId"|[{}],?\s*$)'
)
OWNED_TOML = re.compile(
    r"^\s*(mode\s*=|\[cache\.split\]|prefill_base_url\s*=|decode_base_url\s*=|transfer_protocol\s*=|"
    r"max_transfer_concurrency\s*=|$)"
)


def _place(src: Path, tmp_path: Path) -> Path:
    """Copy a fixture to where its kind is detected by name."""
    if src.suffix == ".json":
        dest = tmp_path / src.stem / ".vscode" / "settings.json"
    else:
        dest = tmp_path / src.stem / "cc-switch" / "config.toml"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(src, dest)
    return dest


def _changed_lines(old: str, new: str) -> list[str]:
    return [
        line[1:]
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("src", CASES, ids=lambda p: p.name)
@pytest.mark.parametrize("mode", ["merged", "split"])
def test_switch_matches_golden_and_touches_only_owned_lines(src: Path, mode: str, tmp_path: Path) -> None:
    path = _place(src, tmp_path)
    before = path.read_bytes()
    [result] = kvswitch.switch(mode, [path])  # type: ignore[arg-type]
    after = path.read_bytes()
    golden = GOLDEN / f"{src.name}.{mode}"
    if UPDATE:
        golden.write_bytes(after)
    assert after == golden.read_bytes(), f"{src.name} → {mode} differs from {golden.name}"
    owned = OWNED_JSONC if src.suffix == ".json" else OWNED_TOML
    for line in _changed_lines(before.decode(), after.decode()):
        assert owned.match(line), f"a switch touched a line it does not own: {line!r}"
    assert result.changed == (before != after)
    # the file's style survives
    assert after.startswith(b"\xef\xbb\xbf") == before.startswith(b"\xef\xbb\xbf")
    if b"\r\n" in before:
        assert re.search(rb"(?<!\r)\n", after) is None, "a CRLF file gained bare LF line endings"


@pytest.mark.parametrize("src", CASES, ids=lambda p: p.name)
def test_load_save_without_change_is_byte_identical(src: Path) -> None:
    raw = src.read_bytes()
    cf = parse_config(raw, "cline" if src.suffix == ".json" else "ccswitch", src)
    assert cf.doc.apply([]).encode() == raw


def _mode_of(src: Path) -> str | None:
    data = parse_config(src.read_bytes(), "cline" if src.suffix == ".json" else "ccswitch").data
    block = data.get("cline.cacheStrategy") or data.get("cache") or {}
    return block.get("mode")


@pytest.mark.parametrize("src", [c for c in CASES if _mode_of(c)], ids=lambda p: p.name)
def test_there_and_back_restores_the_file(src: Path, tmp_path: Path) -> None:
    path = _place(src, tmp_path)
    original = path.read_bytes()
    first = _mode_of(src)
    other = "split" if first == "merged" else "merged"
    kvswitch.switch(other, [path])
    kvswitch.switch(first, [path])
    if src.suffix == ".json":
        # remembered values come back with their comments: the file is as it was
        assert path.read_bytes() == original
    else:
        # CC Switch keeps [cache.split] once created; only that block may differ
        extra = _changed_lines(original.decode(), path.read_text())
        assert all(OWNED_TOML.match(line) for line in extra)


def test_chunk_size_768_comes_back_after_a_round_trip(tmp_path: Path) -> None:
    path = _place(FIXTURES / "cline" / "vscode-user.json", tmp_path)
    kvswitch.switch("split", [path])
    assert "chunkSize" not in path.read_text()
    kvswitch.switch("merged", [path])
    assert '"chunkSize": 768, // tuned for the 7B model' in path.read_text()


def test_a_no_op_switch_writes_nothing(tmp_path: Path) -> None:
    path = _place(FIXTURES / "cline" / "article.json", tmp_path)
    st = path.stat()
    [result] = kvswitch.switch("merged", [path])
    assert not result.changed and result.backup is None and result.diff == ""
    st2 = path.stat()
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert not (Path(os.environ["KVSWITCH_HOME"]) / "backups").exists()


def test_dry_run_writes_nothing_and_masks_keys(tmp_path: Path) -> None:
    path = _place(FIXTURES / "cline" / "article.json", tmp_path)
    key = "sk-live-0123456789abcdefWXYZ"
    text = path.read_text().replace(
        '"cline.openAiModelId"',
        f'"cline.openAiApiKey": "{key}",\n    "cline.cacheStrategy2": 1,\n    "cline.openAiModelId"',
    )
    path.write_text(text)
    [result] = kvswitch.switch("split", [path], dry_run=True)
    assert path.read_text() == text
    assert result.changed and result.diff.startswith("---")
    assert '+        "mode": "split",' in result.diff
    assert key not in result.diff


def test_ccswitch_split_table_from_defaults_then_kept(tmp_path: Path) -> None:
    path = _place(FIXTURES / "ccswitch" / "no-split.toml", tmp_path)
    kvswitch.switch("split", [path])
    cfg = kvswitch.load(path)
    assert cfg.mode == "split" and cfg.split is not None
    assert cfg.split.prefill_base_url == cfg.split.decode_base_url == "http://127.0.0.1:18080/v1"
    assert (cfg.split.transfer_protocol, cfg.split.max_transfer_concurrency) == ("layer-wise", 4)
    kvswitch.switch("merged", [path])
    assert "[cache.split]" in path.read_text()  # nothing else changes on the way back (D-3)


def test_profile_defaults_win_over_base_url(tmp_path: Path) -> None:
    cf = parse_config((FIXTURES / "ccswitch" / "no-split.toml").read_bytes(), "ccswitch")
    plan = plan_switch(cf, "split", ModeDefaults(prefill="http://p:1", decode="http://d:2", max_transfer_concurrency=2))
    new = parse_config(cf.doc.apply(list(plan.edits)), "ccswitch").data
    assert new["cache"]["split"]["prefill_base_url"] == "http://p:1"
    assert new["cache"]["split"]["max_transfer_concurrency"] == 2


def test_split_without_any_endpoint_source_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ".vscode" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"cline.cacheStrategy": {"mode": "merged", "chunkSize": 512}}\n')
    with pytest.raises(EditError, match="prefill and decode endpoints"):
        kvswitch.switch("split", [path])
    assert path.read_text() == '{"cline.cacheStrategy": {"mode": "merged", "chunkSize": 512}}\n'


def test_many_files_switch_together_or_not_at_all(tmp_path: Path) -> None:
    good = _place(FIXTURES / "cline" / "article.json", tmp_path)
    toml = _place(FIXTURES / "ccswitch" / "article.toml", tmp_path)
    bad = tmp_path / "broken" / "cc-switch" / "config.toml"
    bad.parent.mkdir(parents=True)
    bad.write_text("[cache]\nmode = \n")
    before = (good.read_bytes(), toml.read_bytes())
    with pytest.raises(kvswitch.ConfigParseError) as info:
        kvswitch.switch("split", [good, toml, bad])
    assert str(info.value).startswith(f"{bad}:2:")
    assert (good.read_bytes(), toml.read_bytes()) == before
    results = kvswitch.switch("split", [good, toml])
    assert [r.changed for r in results] == [True, True]
    assert kvswitch.load(good).mode == kvswitch.load(toml).mode == "split"


def test_kvswitch_config_switch_sets_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "kvswitch.toml"
    shutil.copyfile(FIXTURES / "kvswitch" / "kvswitch.toml", path)
    kvswitch.switch("split", [path])
    assert kvswitch.load(path).mode == "split"
    assert _changed_lines((FIXTURES / "kvswitch" / "kvswitch.toml").read_text(), path.read_text()) == [
        'mode = "merged"',
        'mode = "split"',
    ]
