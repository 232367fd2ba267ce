"""The state commands in Simplified Chinese: the same story told in English and in Chinese
(``KVSWITCH_LANG=zh-CN``, ``--lang zh-CN``, a Chinese locale) exits the same way, the Chinese
one reads as Chinese, and what a user types or a program parses (modes, names, paths, options,
codes, JSON field names) stays as it is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

CJK = re.compile(r"[\u4e00-\u9fff]")


def _env(top: Path, **extra: str) -> dict[str, str]:
    """A sandbox of its own under ``top`` (one per language, so both tell the same story)."""
    home = top / "home"
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        KVSWITCH_HOME=str(top / "kvswitch-home"),
    )
    env.update(extra)
    home.mkdir(parents=True)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


STORY: list[tuple[str, ...]] = [
    ("init", "--profile", "A", "--preset", "taotoken", "--model", "m", "--no-key"),
    ("switch", "split"),
    ("switch", "split"),  # already split
    ("status",),
    ("profile", "list"),
    ("profile", "show"),
    ("client", "list"),
    ("switch", "merged", "--client", "nobody"),  # refused: no such client
    ("switch", "split", "--client", "x", "some/path"),  # a usage error
    ("key", "get", "A"),  # no key stored for it
    ("restore", "nowhere.toml", "--list"),  # no backups
    ("status", "--format", "json"),
    ("switch", "merged", "--format", "json"),
]


def _tell(env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    return [_run(env, *args) for args in STORY]


def test_the_story_in_chinese_exits_as_in_english_and_reads_as_chinese(tmp_path: Path) -> None:
    english = _tell(_env(tmp_path / "en", KVSWITCH_LANG="en"))
    chinese = _tell(_env(tmp_path / "zh", KVSWITCH_LANG="zh-CN"))
    assert [r.returncode for r in chinese] == [r.returncode for r in english]
    assert [r.returncode for r in english] == [0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 1, 0, 0]
    said: dict[str, subprocess.CompletedProcess[str]] = {}
    for args, result in zip(STORY, chinese, strict=True):
        said.setdefault(" ".join(args), result)  # the first time each was said
    switched = said["switch split"].stdout
    assert "已将 2 个文件切换到 split" in switched and CJK.search(switched)
    status = said["status"].stdout
    assert status.startswith("配置方案 A · 模式 split") and "一致" in status, status
    assert "[article-cline] 模式 split" in status  # kinds and modes as typed
    shown = said["profile show"].stdout
    assert shown.startswith("配置方案 A（当前使用）") and "  merged.chunk_size = 512" in shown
    assert "*" in said["profile list"].stdout and "key=" in said["profile list"].stdout  # data only, as in English
    assert said["profile list"].stdout == english[STORY.index(("profile", "list"))].stdout.replace(
        str(tmp_path / "en"), str(tmp_path / "zh")
    )
    assert CJK.search(said["switch split --client x some/path"].stderr)
    assert said["key get A"].stderr == "kvswitch: A 没有密钥（keyring）\n"  # the reference as typed
    assert "没有备份" in said["restore nowhere.toml --list"].stdout
    # the JSON's fields, command names and values are the same in both languages
    for args in (("status", "--format", "json"), ("switch", "merged", "--format", "json")):
        zh, en = json.loads(said[" ".join(args)].stdout), json.loads(english[STORY.index(args)].stdout)
        assert (zh["command"], zh["ok"], set(zh["data"])) == (en["command"], en["ok"], set(en["data"]))
    assert json.loads(said["status --format json"].stdout)["data"]["mode"] == "split"


def test_lang_option_and_the_locale_choose_chinese(tmp_path: Path) -> None:
    env = _env(tmp_path / "s", KVSWITCH_LANG="en")
    assert _run(env, "init", "--preset", "taotoken", "--model", "m", "--no-key").returncode == 0
    by_option = _run(env, "--lang", "zh-CN", "status")
    assert by_option.returncode == 0 and by_option.stdout.startswith("配置方案 taotoken · 模式 merged"), by_option
    locale_env = {k: v for k, v in env.items() if k not in ("KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    by_locale = _run({**locale_env, "LANG": "zh_CN.UTF-8"}, "switch", "split", "--dry-run")
    assert by_locale.returncode == 0
    english = _run(env, "status")
    assert english.stdout.startswith("profile taotoken · mode merged") and not CJK.search(english.stdout)


def test_help_of_the_state_commands_is_chinese(tmp_path: Path) -> None:
    env = _env(tmp_path / "s", KVSWITCH_LANG="zh-CN")
    for args in (
        ("switch",),
        ("status",),
        ("restore",),
        ("profile", "list"),
        ("client", "add"),
        ("key", "get"),
        ("watch",),
    ):
        shown = _run(env, *args, "--help")
        assert shown.returncode == 0, shown
        assert CJK.search(shown.stdout), args
        assert "--format" in shown.stdout or args in {("client", "add")}
    switch_help = _run(env, "switch", "--help").stdout
    assert "--dry-run" in switch_help and "打印统一格式的 diff" in switch_help
