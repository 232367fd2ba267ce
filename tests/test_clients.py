"""Every registered client at once (kvswitch.clients, kvswitch.render): ``kvswitch switch MODE``
without paths, all or nothing; no lost edit under a concurrent writer; a profile rendered
into a client file versus a mode flip."""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import kvswitch.io as kio
import kvswitch.transaction as kt
from kvswitch.backups import list_backups
from kvswitch.clients import apply_profile, switch_clients
from kvswitch.document import parse_config
from kvswitch.edits import Set
from kvswitch.errors import ChangedOnDiskError, EditError
from kvswitch.io import MAX_REAPPLY
from kvswitch.models import Profile
from kvswitch.render import desired_values, drift, render_edits
from tests.clientenv import (
    backups_under,
    ccswitch_file,
    cli,
    cline_file,
    config_data,
    config_file,
    init,
    kvswitch_home,
    temps_under,
)
from tests.conftest import FIXTURES, require_tool
from tests.unprivileged import chown_tree, run_kvswitch


def snapshot() -> tuple[bytes, bytes, bytes]:
    return cline_file().read_bytes(), ccswitch_file().read_bytes(), config_file().read_bytes()


# -- init → switch → switch on the article's skeletons -------------------------------------


@pytest.mark.parametrize(("start", "other"), [("merged", "split"), ("split", "merged")])
def test_round_trip_on_the_skeletons_is_byte_identical(start: str, other: str) -> None:
    init("--mode", start)
    after_init = snapshot()
    assert config_data()["mode"] == start
    first = cli("switch", other)
    assert first.rc == 0, first
    assert f"switched 2 files to {other}" in first.out
    assert config_data()["mode"] == other
    assert f'"mode": "{other}"' in cline_file().read_text()
    assert re.search(rf'^mode = "{other}" +# "merged" \| "split"$', ccswitch_file().read_text(), re.M)
    back = cli("switch", start)
    assert back.rc == 0, back
    assert snapshot() == after_init  # both clients and kvswitch.toml, byte for byte


def test_switch_without_paths_reports_every_client_and_keeps_them_in_sync() -> None:
    init()
    result = cli("switch", "split")
    assert result.rc == 0, result
    for path in (cline_file(), ccswitch_file()):
        assert f"{path}: merged → split (backup " in result.out
    assert (
        "restart Cline (settings.json) to apply" in result.out
        and "restart CC Switch (config.toml) to apply" in result.out
    )
    status = cli("status")
    assert status.rc == 0, status
    assert status.out.count("in sync") == 2


def test_switch_to_the_current_mode_writes_nothing() -> None:
    init()
    before = snapshot()
    result = cli("switch", "merged")
    assert result.rc == 0, result
    assert "already merged, unchanged" in result.out and "switched 0 files to merged" in result.out
    assert snapshot() == before
    assert backups_under(kvswitch_home()) == []


def test_dry_run_prints_every_diff_and_writes_nothing() -> None:
    init()
    before = snapshot()
    result = cli("switch", "split", "--dry-run")
    assert result.rc == 0, result
    assert f"--- {cline_file()} (now)" in result.out and f"+++ {ccswitch_file()} (after)" in result.out
    assert '+        "prefillEndpoint": "https://taotoken.net/api",' in result.out
    assert "switched" not in result.out
    assert snapshot() == before
    assert backups_under(kvswitch_home()) == []


def test_switch_clients_returns_one_change_per_client_with_its_backup() -> None:
    init()
    changes = switch_clients("split")
    assert [(c.path, c.kind, c.old_mode, c.new_mode, c.changed) for c in changes] == [
        (cline_file(), "article-cline", "merged", "split", True),
        (ccswitch_file(), "article-ccswitch", "merged", "split", True),
    ]
    for c in changes:
        assert c.backup is not None and c.backup.read_bytes() != c.path.read_bytes()
        assert b'"merged"' in c.backup.read_bytes()
    assert config_data()["mode"] == "split"


def test_a_missing_client_file_refuses_the_switch_and_names_it() -> None:
    init()
    ccswitch_file().unlink()
    before = cline_file().read_bytes(), config_file().read_bytes()
    result = cli("switch", "split")
    assert result.rc == 2, result
    assert str(ccswitch_file()) in result.err and "no such file" in result.err
    assert (cline_file().read_bytes(), config_file().read_bytes()) == before


# -- all or nothing --------------------------------------------------------------------------


def _fail_replace(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    real = kio._rename

    def rename(src: Path, dst: Path, flags: int = 0) -> None:
        if Path(dst) == victim:
            raise OSError(errno.EACCES, "Permission denied", str(dst))
        real(src, dst, flags)

    monkeypatch.setattr(kio, "_rename", rename)


def _fail_temp_open(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    real = os.open

    def open_(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
        p = Path(path)
        if p.parent == victim.parent and p.name.startswith(f".{victim.name}.kvswitch-"):
            raise OSError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(kio.os, "open", open_)


@pytest.mark.parametrize("inject", [_fail_replace, _fail_temp_open], ids=["rename", "temp-file"])
def test_permission_denied_on_the_second_client_changes_nothing(
    tmp_path: Path,
    inject: Callable[[pytest.MonkeyPatch, Path], None],
) -> None:
    init()
    before = snapshot()
    state_before = sorted(p.name for p in (kvswitch_home() / "state").iterdir())
    with pytest.MonkeyPatch.context() as mp:
        inject(mp, ccswitch_file())
        result = cli("switch", "split")
    assert result.rc == 1, result
    assert str(ccswitch_file()) in result.err and "permission denied" in result.err
    assert "Traceback" not in result.err
    if inject is _fail_replace:  # the Cline file was replaced already, then put back
        assert "the files already written were put back, no file was changed" in result.err
    assert snapshot() == before  # the first client byte-identical; kvswitch.toml's mode unchanged
    assert config_data()["mode"] == "merged"
    assert temps_under(tmp_path) == []
    assert backups_under(kvswitch_home()) == []
    assert [len(list_backups(p)) for p in (cline_file(), ccswitch_file(), config_file())] == [0, 0, 0]
    assert not (kvswitch_home() / "state" / "journal.json").exists()
    assert "journal.json" not in state_before
    # and nothing is stuck: the same switch goes through once the file system allows it
    assert cli("switch", "split").rc == 0
    assert config_data()["mode"] == "split"


def test_a_rolled_back_client_keeps_its_mode() -> None:
    from kvswitch.keys import set_key

    init()  # no key yet: the client files are 0644
    set_key("A", "sk-live-7f3kQ9zR2mX8vB1nL4aA")
    cline = cline_file()
    mode_before = stat.S_IMODE(cline.stat().st_mode)
    before = snapshot()
    with pytest.MonkeyPatch.context() as mp:
        _fail_replace(mp, ccswitch_file())
        result = cli("profile", "use", "A")  # writes the key: the Cline file would become 0600
    assert result.rc == 1 and "no file was changed" in result.err, result
    assert snapshot() == before
    assert stat.S_IMODE(cline.stat().st_mode) == mode_before


def test_read_only_directory_of_the_second_client_as_an_unprivileged_user(public_sandbox: Path) -> None:
    """The issue's case for real: uid 65534 owns the sandbox, the CC Switch directory is 0555."""
    require_tool("setpriv")
    init()
    before = snapshot()
    chown_tree(public_sandbox)
    ccswitch_file().parent.chmod(0o555)
    env = {name: os.environ[name] for name in ("HOME", "XDG_CONFIG_HOME", "KVSWITCH_HOME")}
    out = run_kvswitch(["switch", "split"], env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert f"{ccswitch_file()}: " in out.stderr and "permission denied" in out.stderr
    assert snapshot() == before
    assert config_data()["mode"] == "merged"
    assert temps_under(public_sandbox) == []
    assert backups_under(public_sandbox) == []
    # the same child succeeds once the directory is writable: the refusal was the permission
    ccswitch_file().parent.chmod(0o755)
    out = run_kvswitch(["switch", "split"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert config_data()["mode"] == "split" and '"mode": "split"' in cline_file().read_text()
    assert cline_file().stat().st_uid == 65534 and ccswitch_file().stat().st_uid == 65534


# -- no lost edit: deterministic ------------------------------------------------------------


def _on_read(monkeypatch: pytest.MonkeyPatch, path: Path, change: Callable[[int], None], times: int) -> list[int]:
    """Before each of the first ``times`` reads of ``path`` by the multi-file writer, call
    ``change(n)``: another program writes the file between kvswitch's read and its write."""
    real = kt.read_optional
    calls: list[int] = []

    def read_optional(p: Path) -> bytes | None:
        if Path(p) == path and len(calls) < times:
            calls.append(len(calls))
            change(len(calls))
        return real(p)

    monkeypatch.setattr(kt, "read_optional", read_optional)
    return calls


def _append(path: Path) -> Callable[[int], None]:
    def change(n: int) -> None:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"# other writer {n}\n")

    return change


def test_a_change_made_meanwhile_is_kept_and_the_switch_reapplied(monkeypatch: pytest.MonkeyPatch) -> None:
    init()
    toml = ccswitch_file()
    _on_read(monkeypatch, toml, _append(toml), times=1)
    result = cli("switch", "split")
    assert result.rc == 0, result
    text = toml.read_text()
    assert text.endswith("# other writer 1\n")  # their edit
    assert re.search(r'^mode = "split" ', text, re.M)  # and ours, re-applied to their version
    assert config_data()["mode"] == "split"
    backup = list_backups(toml)[0].path.read_bytes().decode()
    assert backup.endswith("# other writer 1\n") and 'mode = "merged"' in backup  # their version was backed up


def test_a_value_changed_meanwhile_in_cline_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    init()
    cline = cline_file()

    def change(n: int) -> None:
        cline.write_text(cline.read_text().replace('"maxTokens": 2048', '"maxTokens": 4096'))

    _on_read(monkeypatch, cline, change, times=1)
    assert cli("switch", "split").rc == 0
    text = cline.read_text()
    assert '"maxTokens": 4096' in text and '"mode": "split"' in text and "chunkSize" not in text


def test_a_chunk_size_changed_meanwhile_comes_back_after_the_round_trip() -> None:
    init()
    cline = cline_file()

    def change(n: int) -> None:
        cline.write_text(cline.read_text().replace('"chunkSize": 512', '"chunkSize": 768'))

    with pytest.MonkeyPatch.context() as mp:
        _on_read(mp, cline, change, times=1)
        assert cli("switch", "split").rc == 0  # re-applied: chunkSize 768 leaves the file
    assert cli("switch", "merged").rc == 0
    assert '"chunkSize": 768' in cline.read_text()  # the edit made meanwhile is not lost


def test_a_file_that_keeps_changing_is_refused_and_left_to_the_other_writer(tmp_path: Path) -> None:
    init()
    toml = ccswitch_file()
    before_cline, before_config = cline_file().read_bytes(), config_file().read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        calls = _on_read(mp, toml, _append(toml), times=100)
        with pytest.raises(ChangedOnDiskError) as info:
            switch_clients("split")
        assert len(calls) == MAX_REAPPLY + 1
        assert info.value.location is not None and info.value.location.path == toml
        assert "changed on disk" in str(info.value)
        theirs = toml.read_text()
        assert theirs.endswith(f"# other writer {MAX_REAPPLY + 1}\n") and 'mode = "merged"' in theirs
        # the CLI says so, exit 1, and changes nothing either
        calls.clear()
        result = cli("switch", "split")
        assert result.rc == 1, result
        assert str(toml) in result.err and "changed on disk" in result.err
    assert toml.read_text().startswith(theirs) and 'mode = "merged"' in toml.read_text()
    assert (cline_file().read_bytes(), config_file().read_bytes()) == (before_cline, before_config)
    assert backups_under(kvswitch_home()) == [] and temps_under(tmp_path) == []


def test_a_change_between_the_temp_file_and_the_rename_is_refused(tmp_path: Path) -> None:
    """The last look before renaming: a write after the temp file was made is not clobbered."""
    init()
    toml = ccswitch_file()
    before_cline, before_config = cline_file().read_bytes(), config_file().read_bytes()
    real = kt.prepare_write

    def prepare_write(path: Path, data: bytes, **kw: object) -> kio.PreparedWrite:
        prepared = real(path, data, **kw)  # type: ignore[arg-type]
        if Path(path) == toml:
            _append(toml)(1)
        return prepared

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kt, "prepare_write", prepare_write)
        result = cli("switch", "split")
    assert result.rc == 1, result
    assert str(toml) in result.err and "changed on disk" in result.err
    assert toml.read_text().endswith("# other writer 1\n") and 'mode = "merged"' in toml.read_text()
    assert (cline_file().read_bytes(), config_file().read_bytes()) == (before_cline, before_config)
    # the only backups are the other writer's versions, kept the moment each raced a swap
    kept = backups_under(kvswitch_home())
    assert kept and all(b.parent.name.startswith("config.toml-") for b in kept)
    assert all(b.read_text().endswith("# other writer 1\n") for b in kept)
    assert temps_under(tmp_path) == []


def test_an_edit_made_while_the_backups_are_saved_is_not_clobbered() -> None:
    init()
    toml = ccswitch_file()
    real = kio.save_backup

    def save_backup(target: Path, data: bytes) -> Path:
        saved = real(target, data)
        if Path(target) == toml:
            _append(toml)(1)  # another program writes after kvswitch's last look
        return saved

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kio, "save_backup", save_backup)
        result = cli("switch", "split")
    assert result.rc in (0, 1), result
    assert toml.read_text().endswith("# other writer 1\n")  # re-applied or refused, never lost


def test_the_config_changed_meanwhile_refuses_the_switch() -> None:
    """kvswitch.toml has no re-apply: a hand edit made during a switch is never overwritten."""
    init()
    cfg = config_file()
    before_clients = cline_file().read_bytes(), ccswitch_file().read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        _on_read(mp, cfg, _append(cfg), times=1)
        result = cli("switch", "split")
    assert result.rc == 1, result
    assert str(cfg) in result.err and "changed on disk" in result.err
    assert cfg.read_text().endswith("# other writer 1\n") and config_data()["mode"] == "merged"
    assert (cline_file().read_bytes(), ccswitch_file().read_bytes()) == before_clients


# -- no lost edit: a real concurrent writer -------------------------------------------------

WRITER = """
    import os, random, sys, time
    path, stop = sys.argv[1], sys.argv[2]
    rng = random.Random(7)
    n = 0
    while not os.path.exists(stop):
        n += 1
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"# writer %06d\\n" % n)
        finally:
            os.close(fd)
        # mostly quick bursts, now and then a pause (so that some switches can go through)
        time.sleep(rng.uniform(0.03, 0.06) if n % 8 == 0 else rng.uniform(0.001, 0.012))
    print(n)
"""
_LINE = re.compile(r"# writer (\d{6})\n")


def test_a_concurrent_writer_never_loses_an_edit_kvswitch_has_seen(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another process keeps appending to the CC Switch file while switches run. Every line
    it wrote that kvswitch read (so: before kvswitch's last look) is still there at the end;
    each switch either went through everywhere or was refused with nothing changed."""
    init()
    toml = ccswitch_file()
    merged_text = toml.read_text()
    seen: list[bytes] = []
    real_bytes, real_optional = kio.read_bytes, kt.read_optional

    def read_bytes(p: Path) -> bytes:
        data = real_bytes(p)
        if Path(p) == toml:
            seen.append(data)
        return data

    def read_optional(p: Path) -> bytes | None:
        data = real_optional(p)
        if Path(p) == toml and data is not None:
            seen.append(data)
        return data

    monkeypatch.setattr(kio, "read_bytes", read_bytes)
    monkeypatch.setattr(kt, "read_optional", read_optional)
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(toml), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    outcomes = []
    try:
        time.sleep(0.02)
        mode = "merged"
        for i in range(24):
            target = "split" if i % 2 == 0 else "merged"
            cline_before, config_before = cline_file().read_bytes(), config_file().read_bytes()
            result = cli("switch", target)
            outcomes.append(result.rc)
            if result.rc == 0:
                mode = target
                assert config_data()["mode"] == target
                assert f'"mode": "{target}"' in cline_file().read_text()
            else:
                assert result.rc == 1, result
                assert "changed on disk" in result.err and str(toml) in result.err, result
                assert (cline_file().read_bytes(), config_file().read_bytes()) == (cline_before, config_before)
            assert re.search(rf'^mode = "{mode}" ', toml.read_text(), re.M), (mode, result, toml.read_text())
            time.sleep(0.005)
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=30)
    written = int(out.strip())
    final = toml.read_text()
    lines = [int(n) for n in _LINE.findall(final)]
    assert lines == sorted(set(lines)), "a writer line was duplicated or reordered"
    kvswitch_saw = {int(n) for data in seen for n in _LINE.findall(data.decode())}
    assert kvswitch_saw, "kvswitch never saw the writer: the test proved nothing"
    assert kvswitch_saw <= set(lines), f"lost edits kvswitch had read: {sorted(kvswitch_saw - set(lines))}"
    assert 0 in outcomes, "no switch went through: the writer was too fast for the test to mean anything"
    assert 0 < len(lines) <= written
    # apart from the writer's lines the file is exactly the skeleton in the last mode
    rest = _LINE.sub("", final)
    expected = (
        merged_text
        if mode == "merged"
        else merged_text.replace(  # the gap before # kept
            'mode = "merged"        #', 'mode = "split"        #'
        )
    )
    assert rest == expected


# -- a profile rendered into a client file vs a mode flip (kvswitch.render) -----------------


def _profile(**kw: object) -> Profile:
    data: dict[str, object] = {"provider": "vllm", "base_url": "http://127.0.0.1:8000/v1", "model": "llama-3-8b"}
    data.update(kw)
    return Profile.model_validate(data)


def _article(kind: str) -> tuple[Path, bytes]:
    path = FIXTURES / ("cline/article.json" if kind == "cline" else "ccswitch/article.toml")
    return path, path.read_bytes()


@pytest.mark.parametrize("kind", ["cline", "ccswitch"])
def test_a_mode_flip_leaves_the_profile_fields_alone(kind: str) -> None:
    path, raw = _article(kind)
    cf = parse_config(raw, kind, path)  # type: ignore[arg-type]
    edits, plan = render_edits(cf, _profile(), "split", profile_wins=False)
    assert plan.old_mode == "merged" and plan.new_mode == "split"
    after = parse_config(cf.doc.apply(edits), kind, path)  # type: ignore[arg-type]
    assert "gpt-4o-mini" in after.text and "llama-3-8b" not in after.text
    if kind == "cline":  # the profile fills only what the file never had: the split endpoints
        block = after.data["cline.cacheStrategy"]
        assert after.data["cline.openAiBaseUrl"] == "https://taotoken.net/api"
        assert block["prefillEndpoint"] == block["decodeEndpoint"] == "http://127.0.0.1:8000/v1"
        assert "chunkSize" not in block
    else:  # [cache.split] is there already: only the mode changes
        assert "127.0.0.1:8000" not in after.text
        assert after.text == raw.decode().replace('mode = "merged"', 'mode = "split"')


@pytest.mark.parametrize("kind", ["cline", "ccswitch"])
def test_a_profile_render_makes_every_owned_value_the_profiles(kind: str) -> None:
    path, raw = _article(kind)
    cf = parse_config(raw, kind, path)  # type: ignore[arg-type]
    profile = _profile(merged={"chunk_size": 1024}, request={"temperature": 0.7})
    assert drift(cf, profile, "merged")  # the article's file is not this profile
    edits, _ = render_edits(cf, profile, "merged", profile_wins=True)
    after = parse_config(cf.doc.apply(edits), kind, path)  # type: ignore[arg-type]
    assert drift(after, profile, "merged") == []
    assert "gpt-4o-mini" not in after.text and "llama-3-8b" in after.text
    if kind == "cline":
        assert after.text.startswith("{\n    // Cline: one address, one key, one model namespace (S-04, S-05)\n")
    else:
        assert after.text.startswith("# CC Switch provider config (S-15, S-16)\n")
        assert 'mode = "merged"            # "merged" | "split"' in after.text


@pytest.mark.parametrize("kind", ["cline", "ccswitch"])
def test_a_key_is_written_only_when_given_and_different(kind: str) -> None:
    path, raw = _article(kind)
    cf = parse_config(raw, kind, path)  # type: ignore[arg-type]
    key_path = ("cline.openAiApiKey",) if kind == "cline" else ("provider", "api_key")
    profile = _profile(base_url="https://taotoken.net/api", model="gpt-4o-mini")
    edits, _ = render_edits(cf, profile, "merged", key=None)
    assert all(e.path != key_path for e in edits)
    edits, _ = render_edits(cf, profile, "merged", key="sk-live-7f3kQ9zR2mX8vB1nL4aA")
    assert [e for e in edits if e.path == key_path] == [Set(key_path, "sk-live-7f3kQ9zR2mX8vB1nL4aA")]
    with_key = parse_config(cf.doc.apply(edits), kind, path)  # type: ignore[arg-type]
    again, _ = render_edits(with_key, profile, "merged", key="sk-live-7f3kQ9zR2mX8vB1nL4aA")
    assert again == []


def test_desired_values_default_the_split_endpoints_to_the_base_url() -> None:
    want = desired_values(_profile(), "split")
    assert want["split.prefill_base_url"] == want["split.decode_base_url"] == "http://127.0.0.1:8000/v1"
    assert want["cache.mode"] == "split" and "provider.api_key" not in want
    own = desired_values(_profile(split={"prefill_base_url": "http://127.0.0.1:8100"}), "split")
    assert own["split.prefill_base_url"] == "http://127.0.0.1:8100"
    assert own["split.decode_base_url"] == "http://127.0.0.1:8000/v1"


def test_drift_names_the_fields_and_a_cline_block_in_the_wrong_form() -> None:
    path, raw = _article("cline")
    profile = _profile(base_url="https://taotoken.net/api", model="gpt-4o-mini")
    cf = parse_config(raw, "cline", path)
    assert drift(cf, profile, "merged") == []
    hand = parse_config(raw.replace(b'"chunkSize": 512', b'"chunkSize": 768'), "cline", path)
    assert drift(hand, profile, "merged") == ["cache.chunk_size"]
    mixed = parse_config(raw.replace(b'"mode": "merged"', b'"mode": "split"'), "cline", path)
    assert "cache.form" in drift(mixed, profile, "split")  # chunkSize is still there


def test_a_profile_that_cannot_be_rendered_names_the_file() -> None:
    init()
    cline = cline_file()
    text = cline.read_text()
    start, end = text.index('"cline.requestOptions": {'), text.index('"cline.cacheStrategy"')
    cline.write_text(text[:start] + '"cline.requestOptions": "fast",\n    ' + text[end:])
    before = snapshot()
    with pytest.raises(EditError) as info:
        apply_profile("A")
    assert info.value.location is not None and info.value.location.path == cline
    result = cli("profile", "use", "A")
    assert result.rc == 1 and str(cline) in result.err and "Traceback" not in result.err, result
    assert snapshot() == before
