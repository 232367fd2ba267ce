"""kvswitch.backups: the previous bytes of every write, 0600 in 0700 dirs, bounded retention."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

import kvswitch.backups as kb
from kvswitch import paths
from kvswitch.backups import backup_dir, list_backups, prune
from kvswitch.io import atomic_write, save_backup


def versions(n: int) -> list[bytes]:
    return [b'{"version": %d}\n' % i for i in range(n)]


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_bytes(b'{"version": -1}\n')
    return path


@pytest.fixture
def same_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backup is taken in the same UTC second."""
    fixed = time.gmtime(1_700_000_000)
    monkeypatch.setattr(kb.time, "gmtime", lambda *_a: fixed)


def test_a_write_backs_up_the_previous_bytes(cfg: Path) -> None:
    old = cfg.read_bytes()
    result = atomic_write(cfg, b'{"version": 0}\n')
    assert result.backup is not None
    assert result.backup.read_bytes() == old
    [only] = list_backups(cfg)
    assert only.path == result.backup and only.size == len(old)


def test_a_new_file_has_nothing_to_back_up(tmp_path: Path) -> None:
    result = atomic_write(tmp_path / "new.json", b"{}")
    assert result.backup is None and list_backups(tmp_path / "new.json") == []


def test_backups_are_0600_in_0700_directories(cfg: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        atomic_write(cfg, b"{}")
    finally:
        os.umask(old_umask)
    [b] = list_backups(cfg)
    assert stat.S_IMODE(b.path.stat().st_mode) == 0o600
    assert stat.S_IMODE((b.path.parent / "source").stat().st_mode) == 0o600
    home = paths.dirs().backups.parent
    d = b.path.parent
    while True:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        if d == home:
            break
        d = d.parent


def test_retention_keeps_the_newest(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kb, "KEEP", 3)
    olds = []
    for v in versions(7):
        olds.append(cfg.read_bytes())
        atomic_write(cfg, v)
    kept = list_backups(cfg)
    assert [b.path.read_bytes() for b in kept] == olds[::-1][:3]  # newest first


def test_retention_within_one_second(cfg: Path, monkeypatch: pytest.MonkeyPatch, same_second: None) -> None:
    """More writes than KEEP in one second: the newest backup must not take a freed low number
    (it would sort as the oldest and be pruned at once)."""
    monkeypatch.setattr(kb, "KEEP", 3)
    olds = []
    for v in versions(8):
        olds.append(cfg.read_bytes())
        result = atomic_write(cfg, v)
        assert result.backup is not None and result.backup.exists(), "the newest backup was pruned"
    kept = list_backups(cfg)
    assert [b.path.read_bytes() for b in kept] == olds[::-1][:3]
    assert [b.id[-3:] for b in kept] == ["007", "006", "005"]


def test_prune_with_an_explicit_keep(cfg: Path) -> None:
    for v in versions(5):
        atomic_write(cfg, v)
    assert len(list_backups(cfg)) == 5
    prune(cfg, keep=3)
    assert len(list_backups(cfg)) == 3
    prune(cfg, keep=0)
    assert list_backups(cfg) == []


def test_list_backups_newest_first(cfg: Path, same_second: None) -> None:
    saved = [save_backup(cfg, v) for v in versions(4)]
    assert [b.path for b in list_backups(cfg)] == saved[::-1]


def test_numbers_past_999_still_sort_as_newest(cfg: Path) -> None:
    d = backup_dir(cfg)
    d.mkdir(parents=True)
    for name in ("20240101T000000Z-998", "20240101T000000Z-999", "20240101T000000Z-1000", "20231231T235959Z-5000"):
        (d / f"{name}.bak").write_bytes(name.encode())
    assert [b.id for b in list_backups(cfg)] == [
        "20240101T000000Z-1000",
        "20240101T000000Z-999",
        "20240101T000000Z-998",
        "20231231T235959Z-5000",
    ]


def test_a_taken_name_is_never_overwritten(cfg: Path, same_second: None) -> None:
    first = save_backup(cfg, b"first")
    # another kvswitch claimed the next number meanwhile
    taken = first.with_name(first.name.replace("-000", "-001"))
    taken.write_bytes(b"theirs")
    second = save_backup(cfg, b"second")
    assert second not in (first, taken)
    assert first.read_bytes() == b"first" and taken.read_bytes() == b"theirs" and second.read_bytes() == b"second"
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]


def test_source_records_the_real_path(tmp_path: Path) -> None:
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    real = real_dir / "settings.json"
    real.write_bytes(b"{}")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    result = atomic_write(link, b'{"a": 1}')
    assert result.backup is not None
    assert (result.backup.parent / "source").read_bytes() == str(real.resolve()).encode() + b"\n"
    # the link and the real path share one backup history
    assert backup_dir(link) == backup_dir(real)
    assert [b.path for b in list_backups(link)] == [b.path for b in list_backups(real)]
    assert list_backups(link)[0].source == real.resolve()


def test_two_files_with_the_same_name_have_separate_histories(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "settings.json", tmp_path / "b" / "settings.json"
    for p in (a, b):
        p.parent.mkdir()
        p.write_bytes(str(p).encode())
        atomic_write(p, b"{}")
    assert backup_dir(a) != backup_dir(b)
    assert list_backups(a)[0].path.read_bytes() == str(a).encode()
    assert list_backups(b)[0].path.read_bytes() == str(b).encode()
