"""kvswitch.io: the one writer of user files (D-4) and the readers.

CI runs as root, so permission-denied cases run in a child process that drops to uid 65534
with ``setpriv``, a full disk is an ``RLIMIT_FSIZE`` child, and the other OS failures are
injected by monkeypatching ``os`` in :mod:`kvswitch.io` (D-12).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import kvswitch.io as kio
from kvswitch.backups import list_backups
from kvswitch.errors import ChangedOnDiskError, ReadError, WriteError
from kvswitch.io import MAX_REAPPLY, atomic_write, read_bytes, read_optional, write_private
from tests.conftest import require_tool
from tests.unprivileged import run_child

OLD = b'{\n  // mine\n  "a": 1\n}\n'
NEW = b'{\n  // mine\n  "a": 2\n}\n'


def temps(directory: Path) -> list[str]:
    """kvswitch temp files in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if ".kvswitch-" in p.name and p.name.endswith(".tmp"))


def backup_files(target: Path) -> dict[str, bytes]:
    return {b.id: b.path.read_bytes() for b in list_backups(target)}


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "conf" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(OLD)
    return path


# -- children: unprivileged (setpriv) and size-limited ------------------------------------


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory uid 65534 can reach (pytest's tmp_path is 0700 root)."""
    path = Path(tempfile.mkdtemp(prefix="kvswitch-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


CHILD_WRITE = """
    import sys
    from pathlib import Path
    from kvswitch.errors import WriteError
    from kvswitch.io import atomic_write
    try:
        atomic_write(Path(sys.argv[1]), sys.argv[2].encode())
    except WriteError as exc:
        print(exc)
        sys.exit(1)
    print("written")
"""

CHILD_READ = """
    import sys
    from pathlib import Path
    from kvswitch.errors import ReadError
    from kvswitch.io import read_bytes
    try:
        read_bytes(Path(sys.argv[1]))
    except ReadError as exc:
        print(exc)
        sys.exit(1)
    print("read")
"""


def test_setpriv_really_drops_root(public_dir: Path) -> None:
    out = run_child("import os; print(os.getuid(), os.geteuid(), os.getgroups())", as_nobody=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["65534", "65534"]


# -- symlinks --------------------------------------------------------------------------------


def test_symlink_is_kept_and_its_target_written(tmp_path: Path) -> None:
    real = tmp_path / "settings.json"
    real.write_bytes(OLD)
    link = tmp_path / "link.json"
    link.symlink_to("settings.json")
    result = atomic_write(link, NEW)
    assert link.is_symlink() and os.readlink(link) == "settings.json"
    assert real.read_bytes() == NEW
    assert result.target == real.resolve() and result.path == link
    assert temps(tmp_path) == []


def test_dotfiles_style_link_into_another_directory(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "vscode"
    dotfiles.mkdir(parents=True)
    real = dotfiles / "settings.json"
    real.write_bytes(OLD)
    user = tmp_path / "home" / ".config" / "Code" / "User"
    user.mkdir(parents=True)
    link = user / "settings.json"
    link.symlink_to(os.path.relpath(real, user))
    before = os.readlink(link)
    result = atomic_write(link, NEW)
    assert link.is_symlink() and os.readlink(link) == before
    assert real.read_bytes() == NEW and link.read_bytes() == NEW
    # the temp file lived beside the target, not beside the link; none is left anywhere
    assert temps(dotfiles) == [] and temps(user) == []
    assert result.backup is not None and result.backup.read_bytes() == OLD
    source = result.backup.parent / "source"
    assert source.read_text().strip() == str(real.resolve())


def test_dangling_symlink_creates_the_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to("new.json")
    atomic_write(link, NEW)
    assert link.is_symlink() and (tmp_path / "new.json").read_bytes() == NEW


# -- mode and owner ------------------------------------------------------------------------


def test_mode_is_kept(cfg: Path) -> None:
    cfg.chmod(0o640)
    atomic_write(cfg, NEW)
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o640


def test_setgid_bit_survives_the_owner_being_restored(cfg: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    os.chown(cfg, 1000, 1000)
    cfg.chmod(0o2670)
    atomic_write(cfg, NEW)
    st = cfg.stat()
    assert (st.st_uid, st.st_gid) == (1000, 1000)
    assert stat.S_IMODE(st.st_mode) == 0o2670


def test_owner_is_kept(cfg: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    os.chown(cfg, 1000, 1000)
    cfg.chmod(0o640)
    atomic_write(cfg, NEW)
    st = cfg.stat()
    assert (st.st_uid, st.st_gid) == (1000, 1000)
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert cfg.read_bytes() == NEW


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_new_file_gets_0666_minus_umask(tmp_path: Path, umask: int, expected: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write(tmp_path / "new.json", NEW)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == expected


def test_mode_0600_is_forced(cfg: Path) -> None:
    cfg.chmod(0o644)
    atomic_write(cfg, NEW, mode=0o600)
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    fresh = cfg.parent / "fresh.json"
    atomic_write(fresh, NEW, mode=0o600)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_mode_0600_is_forced_even_when_the_bytes_are_already_there(cfg: Path) -> None:
    cfg.chmod(0o644)
    ino = cfg.stat().st_ino
    result = atomic_write(cfg, OLD, mode=0o600)
    assert not result.changed
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600 and cfg.stat().st_ino == ino


# -- durability ------------------------------------------------------------------------------


def test_fsync_of_the_file_and_of_the_directory(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), stat.S_ISDIR(os.fstat(fd).st_mode)))
        real_fsync(fd)

    monkeypatch.setattr(kio.os, "fsync", counting)
    atomic_write(cfg, NEW, backup=False)
    files = [p for p, is_dir in calls if not is_dir]
    dirs = [p for p, is_dir in calls if is_dir]
    assert len(files) == 1 and Path(files[0]).parent == cfg.parent
    assert Path(files[0]).name.startswith(".settings.json.kvswitch-")  # the temp, before the rename
    assert dirs == [str(cfg.parent)]  # after the rename
    calls.clear()
    atomic_write(cfg, OLD)  # with a backup: that is fsynced too
    assert sum(1 for _p, is_dir in calls if not is_dir) >= 2
    assert str(cfg.parent) in [p for p, is_dir in calls if is_dir]


# -- failures leave everything as it was ----------------------------------------------------


def test_no_temp_left_after_success(cfg: Path) -> None:
    atomic_write(cfg, NEW)
    assert temps(cfg.parent) == []


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC])
def test_fsync_failure_leaves_no_temp_and_the_file_intact(cfg: Path, monkeypatch: pytest.MonkeyPatch, err: int) -> None:
    def failing(fd: int) -> None:
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(kio.os, "fsync", failing)
    with pytest.raises(WriteError) as info:
        atomic_write(cfg, NEW)
    assert str(cfg) in str(info.value)
    if err == errno.ENOSPC:
        assert "disk full" in str(info.value)
    assert cfg.read_bytes() == OLD
    assert temps(cfg.parent) == []
    assert list_backups(cfg) == []


def test_replace_failure(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    atomic_write(cfg, NEW)  # an earlier write: one backup exists
    atomic_write(cfg, OLD)
    before = backup_files(cfg)
    assert len(before) == 2
    real_rename = kio._rename

    def failing(src: Path, dst: Path, flags: int = 0) -> None:
        if Path(dst) == cfg:
            raise PermissionError(errno.EACCES, "Permission denied")
        real_rename(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", failing)
    with pytest.raises(WriteError) as info:
        atomic_write(cfg, NEW)
    assert str(cfg) in str(info.value) and "permission denied" in str(info.value)
    assert cfg.read_bytes() == OLD
    assert backup_files(cfg) == before  # no new backup, the old ones untouched
    assert temps(cfg.parent) == []


def test_disk_full_in_a_size_limited_child(cfg: Path) -> None:
    code = """
        import resource, signal, sys
        from pathlib import Path
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        from kvswitch.errors import WriteError
        from kvswitch.io import atomic_write
        try:
            atomic_write(Path(sys.argv[1]), b"x" * (1024 * 1024))
        except WriteError as exc:
            print(exc)
            sys.exit(1)
        print("written")
    """
    out = run_child(code, str(cfg))
    assert out.returncode == 1, out.stdout + out.stderr
    message = out.stdout.strip()
    assert message.startswith(f"{cfg}: cannot write")
    assert "too large" in message and "disk full" in message
    assert "Traceback" not in out.stderr
    assert cfg.read_bytes() == OLD
    assert temps(cfg.parent) == []


def test_read_only_directory_as_an_unprivileged_user(public_dir: Path) -> None:
    require_tool("setpriv")
    conf = public_dir / "conf"
    conf.mkdir(mode=0o755)
    cfg = conf / "settings.json"
    cfg.write_bytes(OLD)
    cfg.chmod(0o666)  # the file is writable, its directory is not: no temp can be made
    out = run_child(CHILD_WRITE, str(cfg), NEW.decode(), as_nobody=True, home=public_dir)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.startswith(f"{cfg}: ") and "permission denied" in out.stdout
    assert cfg.read_bytes() == OLD
    assert temps(conf) == []


def test_read_only_file_in_a_writable_directory_as_an_unprivileged_user(public_dir: Path) -> None:
    require_tool("setpriv")
    conf = public_dir / "conf"
    conf.mkdir(mode=0o755)
    cfg = conf / "settings.json"
    cfg.write_bytes(OLD)
    home = public_dir / "home"
    home.mkdir()
    for p in (conf, cfg, home):
        os.chown(p, 65534, 65534)
    cfg.chmod(0o444)  # the rename would work; the file's mode says no
    out = run_child(CHILD_WRITE, str(cfg), NEW.decode(), as_nobody=True, home=home)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.strip() == f"{cfg}: cannot write: permission denied"
    assert cfg.read_bytes() == OLD and stat.S_IMODE(cfg.stat().st_mode) == 0o444
    assert temps(conf) == []


def test_unprivileged_user_writes_its_own_file(public_dir: Path) -> None:
    require_tool("setpriv")
    conf = public_dir / "conf"
    conf.mkdir(mode=0o755)
    cfg = conf / "settings.json"
    cfg.write_bytes(OLD)
    cfg.chmod(0o640)
    home = public_dir / "home"
    home.mkdir()
    for p in (conf, cfg, home):
        os.chown(p, 65534, 65534)
    out = run_child(CHILD_WRITE, str(cfg), NEW.decode(), as_nobody=True, home=home)
    assert out.returncode == 0, out.stdout + out.stderr
    st = cfg.stat()
    assert cfg.read_bytes() == NEW and (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o640)


# -- changed on disk -----------------------------------------------------------------------


def test_changed_on_disk_without_rebuild_is_refused(cfg: Path) -> None:
    theirs = b'{"a": "theirs"}\n'
    cfg.write_bytes(theirs)
    with pytest.raises(ChangedOnDiskError) as info:
        atomic_write(cfg, NEW, expected=OLD)
    assert "changed on disk" in str(info.value) and str(cfg) in str(info.value)
    assert cfg.read_bytes() == theirs
    assert list_backups(cfg) == [] and temps(cfg.parent) == []


def test_changed_on_disk_with_rebuild_reapplies_the_edit(cfg: Path) -> None:
    theirs = b'{\n  // theirs\n  "a": 1,\n  "b": 3\n}\n'
    cfg.write_bytes(theirs)
    seen: list[bytes] = []

    def rebuild(current: bytes) -> bytes:
        seen.append(current)
        return current.replace(b'"a": 1', b'"a": 2')

    result = atomic_write(cfg, NEW, expected=OLD, rebuild=rebuild)
    assert seen == [theirs]
    assert result.reapplied == 1 and result.changed
    assert cfg.read_bytes() == b'{\n  // theirs\n  "a": 2,\n  "b": 3\n}\n'
    assert result.backup is not None and result.backup.read_bytes() == theirs


def _writer_during_prepare(monkeypatch: pytest.MonkeyPatch, cfg: Path, theirs: list[bytes]) -> None:
    """Someone writes the file while the temp file is being prepared (the last look)."""
    real = kio.prepare_write

    def prepare(*args: object, **kwargs: object) -> kio.PreparedWrite:
        prepared = real(*args, **kwargs)  # type: ignore[arg-type]
        if theirs:
            cfg.write_bytes(theirs.pop(0))
        return prepared

    monkeypatch.setattr(kio, "prepare_write", prepare)


def test_changed_just_before_the_rename_is_refused(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = b'{"a": "theirs"}\n'
    _writer_during_prepare(monkeypatch, cfg, [theirs])
    with pytest.raises(ChangedOnDiskError):
        atomic_write(cfg, NEW, expected=OLD)
    assert cfg.read_bytes() == theirs
    # the only backup is their version, kept the moment it raced (docs/decisions.md 36)
    assert temps(cfg.parent) == [] and [b.path.read_bytes() for b in list_backups(cfg)] == [theirs]


def test_changed_just_before_the_rename_is_reapplied(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = b'{\n  "a": 1, "z": true\n}\n'
    _writer_during_prepare(monkeypatch, cfg, [theirs])
    result = atomic_write(cfg, NEW, expected=OLD, rebuild=lambda cur: cur.replace(b'"a": 1', b'"a": 2'))
    assert result.reapplied == 1
    assert cfg.read_bytes() == b'{\n  "a": 2, "z": true\n}\n'
    assert temps(cfg.parent) == []


def test_a_file_that_keeps_changing_is_bounded_then_refused(cfg: Path) -> None:
    calls: list[bytes] = []

    def rebuild(current: bytes) -> bytes:
        calls.append(current)
        cfg.write_bytes(b'{"other writer": %d}\n' % len(calls))  # they write again meanwhile
        return current + b" edited"

    cfg.write_bytes(b'{"other writer": 0}\n')
    with pytest.raises(ChangedOnDiskError):
        atomic_write(cfg, NEW, expected=OLD, rebuild=rebuild)
    assert len(calls) == MAX_REAPPLY
    assert cfg.read_bytes() == b'{"other writer": %d}\n' % MAX_REAPPLY
    assert temps(cfg.parent) == [] and list_backups(cfg) == []


def test_expected_empty_means_create(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    result = atomic_write(path, NEW, expected=b"")
    assert result.changed and result.backup is None and path.read_bytes() == NEW
    with pytest.raises(ChangedOnDiskError):
        atomic_write(tmp_path / "new.json", OLD, expected=b"")  # it exists now


# -- no-op, temp sweeping ---------------------------------------------------------------------


def test_same_bytes_write_nothing(cfg: Path) -> None:
    before = cfg.stat()
    result = atomic_write(cfg, OLD, expected=OLD)
    after = cfg.stat()
    assert not result.changed and result.backup is None
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert list_backups(cfg) == []


def test_stale_temps_of_dead_pids_are_swept(cfg: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        d = cfg.parent
        stale = d / f".settings.json.kvswitch-{dead.pid}-deadbeef.tmp"
        stale_other = d / f".other.json.kvswitch-{dead.pid}-0000abcd.tmp"  # a file never written again
        busy = d / f".settings.json.kvswitch-{live.pid}-0badf00d.tmp"
        mine = d / f".settings.json.kvswitch-{os.getpid()}-12345678.tmp"
        unrelated = d / ".settings.json.kvswitch-notes.tmp"
        for p in (stale, stale_other, busy, mine, unrelated):
            p.write_bytes(b"partial")
        atomic_write(cfg, NEW)
        assert not stale.exists() and not stale_other.exists()
        assert busy.exists() and mine.exists() and unrelated.exists()
        assert cfg.read_bytes() == NEW
    finally:
        live.kill()
        live.wait()


# -- reading -----------------------------------------------------------------------------------


def test_read_bytes_missing(tmp_path: Path) -> None:
    with pytest.raises(ReadError) as info:
        read_bytes(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: cannot read: no such file or directory"
    assert read_optional(tmp_path / "nope.json") is None


def test_read_bytes_directory(tmp_path: Path) -> None:
    with pytest.raises(ReadError) as info:
        read_bytes(tmp_path)
    assert "is a directory" in str(info.value)
    with pytest.raises(ReadError):
        read_optional(tmp_path)


def test_read_bytes_unreadable_as_an_unprivileged_user(public_dir: Path) -> None:
    secret = public_dir / "settings.json"
    secret.write_bytes(OLD)
    secret.chmod(0o600)
    out = run_child(CHILD_READ, str(secret), as_nobody=True, home=public_dir)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.strip() == f"{secret}: cannot read: permission denied"


def test_write_over_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises((WriteError, ReadError)):
        atomic_write(tmp_path / "d", NEW)
    assert (tmp_path / "d").is_dir()


def test_write_private_makes_0600_files_in_0700_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "state.json"
    write_private(path, b"{}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert temps(path.parent) == []
