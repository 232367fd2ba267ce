"""``kvswitch switch``: diffs, exit codes, all-or-nothing, masked keys."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kvswitch.cli import main
from tests.conftest import FIXTURES


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    cline = tmp_path / ".cline" / "settings.json"
    toml = tmp_path / "cc-switch" / "config.toml"
    cline.parent.mkdir()
    toml.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", cline)
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", toml)
    return cline, toml


def test_switch_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cline, toml = _pair(tmp_path)
    assert main(["switch", "split", str(cline), str(toml)]) == 0
    out = capsys.readouterr().out
    assert f"{cline}: merged → split" in out and f"{toml}: merged → split" in out
    assert "switched 2 files to split" in out
    assert '"mode": "split"' in cline.read_text() and 'mode = "split"' in toml.read_text()
    assert main(["switch", "split", str(cline), str(toml)]) == 0
    assert "already split, unchanged" in capsys.readouterr().out


def test_dry_run_prints_a_unified_diff_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cline, toml = _pair(tmp_path)
    before = cline.read_bytes(), toml.read_bytes()
    assert main(["switch", "split", "--dry-run", str(cline), str(toml)]) == 0
    out = capsys.readouterr().out
    assert (cline.read_bytes(), toml.read_bytes()) == before
    assert f"--- {cline} (now)" in out and f"+++ {toml} (after)" in out
    assert '-mode = "merged"            # "merged" | "split"' in out
    assert re.search(r'\n\+mode = "split" +# "merged" \| "split"\n', out)


def test_refused_switch_exits_1_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cline, toml = _pair(tmp_path)
    toml.write_text(toml.read_text().replace('mode = "merged"', 'mode = "merged"\nmode = "x"'))
    before = cline.read_bytes()
    assert main(["switch", "split", str(cline), str(toml)]) == 1
    err = capsys.readouterr().err
    assert str(toml) in err and "KVS" not in err
    assert cline.read_bytes() == before


def test_missing_file_exits_2(tmp_path: Path) -> None:
    assert main(["switch", "merged", str(tmp_path / "settings.json")]) == 2
    assert main(["switch", "sideways", str(tmp_path / "settings.json")]) == 2


def test_keys_never_appear_in_diffs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, toml = _pair(tmp_path)
    key = "sk-proj-AbCdEf0123456789xyzQ"
    toml.write_text(toml.read_text().replace('model = "gpt-4o-mini"', f'model = "gpt-4o-mini"\napi_key = "{key}"'))
    toml.write_text(
        toml.read_text().replace('mode = "merged"            # "merged" | "split"', f'mode = "merged"  # {key}')
    )
    assert main(["switch", "split", "--dry-run", str(toml)]) == 0
    out = capsys.readouterr().out
    assert key not in out and "sk-…xyzQ" in out


def test_a_failed_write_exits_1_and_leaves_everything_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import kvswitch.io

    cline, toml = _pair(tmp_path)
    before = cline.read_bytes(), toml.read_bytes()
    real_rename = kvswitch.io._rename

    def disk_full(src: Path, dst: Path, flags: int = 0) -> None:
        if str(dst).endswith("config.toml"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_rename(src, dst, flags)

    monkeypatch.setattr(kvswitch.io, "_rename", disk_full)
    assert main(["switch", "split", str(cline), str(toml)]) == 1
    err = capsys.readouterr().err
    assert str(toml) in err and "disk full" in err
    assert (cline.read_bytes(), toml.read_bytes()) == before  # the first file was put back
    leftovers = [p for p in tmp_path.rglob("*.tmp")]
    assert leftovers == []
