"""The library speaks Chinese where a person reads it: kvswitch's config, a switch refused, the
watcher's events, an import refused, CC Switch's database, a transaction's recovery note, key
errors and reload nudges. Codes, commands, options, paths and mode values stay as they are.

Each test chooses Chinese in process (:func:`kvswitch.i18n.set_language`); the conftest puts
English back after it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from kvswitch import i18n
from kvswitch.errors import KvswitchError

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh() -> None:
    i18n.set_language("zh_CN")


def _chinese(text: str) -> bool:
    return bool(CJK.search(text))


def test_the_config_not_set_up_and_an_unknown_profile_say_so_in_chinese(zh: None, sb: object) -> None:
    from kvswitch.config import read_config

    with pytest.raises(KvswitchError) as missing:
        read_config(Path("/nonexistent-kvswitch-dir/kvswitch.toml"))
    assert "尚未设置" in missing.value.message and "kvswitch init" in missing.value.message
    with pytest.raises(KvswitchError) as unknown:
        read_config().profile("nope")
    assert "没有配置方案" in unknown.value.message and "'nope'" in unknown.value.message


def test_a_config_written_in_chinese_has_chinese_comments_and_stays_a_valid_config(zh: None, sb: object) -> None:
    from kvswitch.config import new_config_text, read_config, read_config_text

    config = read_config()
    name, profile = config.profile()
    text = new_config_text(name, profile, [], "split")
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert len(comments) >= 3 and all(_chinese(c) for c in comments)
    assert "# 合并模式（merged）：" in text and "# 分离模式（split）：" in text
    assert not re.search(r"\bS-\d{2}\b", text)
    data = tomllib.loads(text)
    assert data["mode"] == "split" and data["active_profile"] == name  # keys and values untranslated
    assert read_config_text(text, config.path).model.mode == "split"


def test_a_switch_lint_rejects_is_refused_in_chinese_with_its_codes(zh: None, tmp_path: Path) -> None:
    import kvswitch
    from kvswitch.errors import ConfigValidationError

    path = tmp_path / "cc-switch" / "config.toml"
    path.parent.mkdir()
    text = (
        '[provider]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\n\n'
        '[cache]\nmode = "merged"\nchunk_size = "512"\n'
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigValidationError) as caught:
        kvswitch.switch("split", [path])
    message = caught.value.message
    head, *lines = message.splitlines()
    assert head.startswith("已拒绝切换到 split，") and "kvswitch lint --fix" in head
    assert lines and lines[0].startswith(f"{path}:7:") and " KVS002 错误：" in lines[0]
    assert path.read_text(encoding="utf-8") == text


def test_the_watchers_events_and_its_busy_error_are_chinese(zh: None, sb: object) -> None:
    from kvswitch.watch import Watcher, WatcherBusyError, WatchEvent

    events: list[WatchEvent] = []
    with Watcher(events.append, debounce=0.05):
        with pytest.raises(WatcherBusyError) as busy:
            Watcher().start()
        assert "另一个监视器" in busy.value.message
    started, stopped = events[0], events[-1]
    assert started.kind == "started" and started.message.startswith("正在监视") and "adopt" in started.message
    assert stopped.kind == "stopped" and stopped.message == "监视器已停止"


def test_an_invalid_file_is_reported_in_chinese_with_its_code(zh: None) -> None:
    from kvswitch.diagnostics import Diagnostic, Severity
    from kvswitch.watch import _first_finding, _nothing_written

    finding = Diagnostic("KVS002", Severity.ERROR, "bad", Path("/x/settings.json"), 3, 5)
    said = _first_finding([finding])
    assert said.startswith("/x/settings.json:3:5: KVS002 bad") and said.endswith("未写入任何内容")
    assert _nothing_written("broken") == "broken——未写入任何内容"


def test_an_import_of_cc_switchs_proxy_is_refused_in_chinese(zh: None) -> None:
    from kvswitch.errors import ImportRefusedError
    from kvswitch.importing import profile_from
    from kvswitch.kinds.base import ClientSettings

    settings = ClientSettings(url="http://127.0.0.1:15721", model="m", key="PROXY_MANAGED")
    with pytest.raises(ImportRefusedError) as caught:
        profile_from(settings, name="claude", source="Claude Code")
    message = caught.value.message
    assert message.startswith("Claude Code 由 CC Switch 的本地代理设置")
    assert "PROXY_MANAGED" in message and "kvswitch import --from cc-switch" in message


def test_a_pydantic_error_of_an_import_is_worded_in_chinese(zh: None) -> None:
    from pydantic import ValidationError

    from kvswitch.importing import _first_error
    from kvswitch.models import Profile

    with pytest.raises(ValidationError) as caught:
        Profile.model_validate({"base_url": "http://127.0.0.1:8000/v1", "model": 5, "key": "none"})
    said = _first_error(caught.value)
    assert said.startswith("model: ") and _chinese(said)


def test_cc_switch_database_errors_and_skipped_rows_are_chinese(zh: None, tmp_path: Path) -> None:
    from kvswitch.cc_switch import read_database
    from kvswitch.errors import CcSwitchError
    from tests.ccswitch_db import Row, build

    newer = build(tmp_path / "a" / "cc-switch.db", 99)
    with pytest.raises(CcSwitchError) as caught:
        read_database(newer)
    assert "架构版本 99" in caught.value.message and "kvswitch profile add" in caught.value.message
    db = read_database(build(tmp_path / "b" / "cc-switch.db", providers=[Row("claude", "p1", "Broken", "{oops")]))
    [row] = db.skipped
    assert row.reason.startswith("它的设置不是有效的 JSON（第 1 行")
    with pytest.raises(CcSwitchError) as absent:
        read_database(tmp_path / "c" / "cc-switch.db")
    assert "这里没有 CC Switch 数据库" in absent.value.message and "--db" in absent.value.message


def test_a_transactions_recovery_note_is_chinese(zh: None) -> None:
    from kvswitch import paths
    from kvswitch.io import write_private
    from kvswitch.transaction import recover

    write_private(paths.dirs().state / "journal.json", b"{not json")
    assert recover() == "发现一个无法读取的切换日志，已将其删除"
    assert recover() is None


def test_key_errors_are_chinese_and_keep_their_codes(zh: None) -> None:
    from kvswitch.key_scope import KeyScope
    from kvswitch.keys import InvalidKeyError, check_key, resolve_key

    with pytest.raises(InvalidKeyError) as placeholder:
        check_key("sk-你的Key")
    assert "占位符" in placeholder.value.message and "KVS211" in placeholder.value.message
    with pytest.raises(InvalidKeyError) as reference:
        resolve_key("p", "plain")
    assert "KVS213" in reference.value.message and "'env:NAME'" in reference.value.message
    withheld = KeyScope.of("sk-test-1234", ["https://a.example/v1"]).withheld("https://b.example/v1")
    assert withheld is not None and withheld.startswith("未向 https://b.example:443 发送密钥")


def test_a_reload_nudges_outcome_is_chinese(zh: None, tmp_path: Path) -> None:
    from kvswitch.models import ClientEntry
    from kvswitch.reload import nudge

    entry = ClientEntry.model_validate(
        {
            "path": str(tmp_path / "x.json"),
            "kind": "claude-code",
            "name": "cc",
            "nudge": {"kind": "command", "argv": ["false"]},
        }
    )
    result = nudge(entry, tmp_path / "x.json")
    assert not result.ok and result.message == "false 退出码为 1"
    missing = nudge(
        entry.model_copy(update={"nudge": entry.nudge.model_copy(update={"kind": "signal"})}), tmp_path / "x.json"
    )
    assert missing.message == "没有为 cc 设置 pidfile；请重启它以应用更改" and missing.restart_needed


def test_an_unknown_client_and_a_missing_backup_are_chinese(zh: None, sb: object) -> None:
    from kvswitch.clients import find_client, restore
    from kvswitch.config import read_config

    with pytest.raises(KvswitchError) as unknown:
        find_client(read_config(), "nobody")
    assert unknown.value.message.startswith("没有已登记的客户端")
    with pytest.raises(KvswitchError) as none:
        restore(Path(str(sb.cline)))  # type: ignore[attr-defined]
    assert none.value.message == "此文件没有备份"


def test_the_same_calls_speak_english_by_default(sb: object) -> None:
    from kvswitch.clients import find_client
    from kvswitch.config import read_config

    with pytest.raises(KvswitchError) as unknown:
        find_client(read_config(), "nobody")
    assert unknown.value.message.startswith("no registered client 'nobody' (clients: ")
    assert not _chinese(unknown.value.message)
