"""``kvswitch engine-flags`` in Simplified Chinese: the caveats (text, versions, source) are
translated, and the command lines are the same byte for byte as in English, for every engine
and router; codes, levels, flags and JSON field names never change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from kvswitch import i18n
from kvswitch.engine_flags import CAVEATS, EngineFlags, engine_flags
from kvswitch.models import Profile
from tests.clientenv import cli, init
from tests.conftest import ROOT

CJK = re.compile(r"[\u4e00-\u9fff]")
WORDS = re.compile(r"[A-Za-z]{2,}")
PLACEHOLDER = re.compile(r"\{\w+\}")

# each engine with its usual front (vLLM's example proxy, SGLang's router) and every router
# in both of its modes, plus a refusal (int8) and the transfer backends
ARGVS = [
    ["--engine", "vllm", "--mode", "merged"],
    ["--engine", "sglang", "--mode", "merged"],
    ["--engine", "vllm", "--mode", "split"],
    ["--engine", "vllm", "--mode", "split", "--transfer-backend", "mooncake", "--shared-gpu"],
    ["--engine", "sglang", "--mode", "split"],
    ["--engine", "sglang", "--mode", "split", "--transfer-backend", "nixl"],
    ["--engine", "vllm", "--mode", "split", "--router", "vllm"],
    [
        "--engine",
        "sglang",
        "--mode",
        "split",
        "--router",
        "sglang",
        "--router-mode",
        "regular",
        "--router-policy",
        "round_robin",
    ],
    ["--engine", "vllm", "--mode", "split", "--router", "sglang", "--router-mode", "regular"],
    ["--engine", "sglang", "--mode", "split", "--router", "vllm", "--router-mode", "regular"],
]


@pytest.fixture(scope="module", autouse=True)
def compiled_catalogue() -> None:
    """The shipped .mo built from the .po sources (as CI does before the tests)."""
    subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "i18n.py"), "compile"], check=True, capture_output=True, timeout=120
    )


def setup_profile() -> None:
    """A ``lab`` profile whose int8 KV cache is refused and whose layer-wise transfer and small,
    unaligned chunk bring the most caveats."""
    init(preset="vllm", model="Qwen/Qwen2.5-7B-Instruct", profile="lab")
    done = cli(
        "profile", "edit", "lab", "--kv-cache-dtype", "int8", "--chunk-size", "100", "--transfer-protocol", "layer-wise"
    )
    assert done.rc == 0, done


def commands(text: str) -> list[str]:
    """The command lines of ``engine-flags`` text output: each block under a ``# role → URL``
    comment, without that comment."""
    return ["\n".join(block.split("\n")[1:]) for block in text.split("\n\n") if block.startswith("# ")]


def zh(*argv: str) -> subprocess.CompletedProcess[str]:
    """``kvswitch ARGV`` in a process of its own, with ``KVSWITCH_LANG=zh-CN``."""
    env = {**os.environ, "KVSWITCH_LANG": "zh-CN"}
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def data(out: str) -> dict[str, Any]:
    """The ``data`` of kvswitch's JSON envelope."""
    doc = json.loads(out)
    assert doc["command"] == "engine-flags"
    body: dict[str, Any] = doc["data"]
    return body


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: "-".join(a[1::2]))
def test_the_cli_under_kvswitch_lang_zh_gives_chinese_caveats_and_the_same_commands(argv: list[str]) -> None:
    setup_profile()
    english = cli("--lang", "en", "engine-flags", *argv)
    chinese = zh("engine-flags", *argv)
    assert chinese.returncode == english.rc == 1  # int8 is refused in every engine (merged and split)
    assert commands(chinese.stdout) == commands(english.out)
    assert len(commands(english.out)) == (1 if "merged" in argv else 3)
    caveats = chinese.stdout.split("\n\n")[-1]
    assert CJK.search(caveats), chinese.stdout
    flowing = " ".join(chinese.stdout.split())  # the caveats are wrapped
    assert "kvswitch profile edit lab --kv-cache-dtype fp8" in flowing  # commands in a caveat stay
    assert "KVS105" in chinese.stdout  # codes are never translated


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: "-".join(a[1::2]))
def test_the_json_has_the_same_commands_codes_and_fields_in_both_languages(argv: list[str]) -> None:
    setup_profile()
    en = data(cli("--lang", "en", "engine-flags", *argv, "--format", "json").out)
    cn = data(cli("--lang", "zh-CN", "engine-flags", *argv, "--format", "json").out)
    assert set(cn) == set(en)
    assert cn["commands"] == en["commands"]  # argv, shell, env, flags and their caveat numbers
    assert [(c["n"], c["code"], c["level"], c["flags"]) for c in cn["caveats"]] == [
        (c["n"], c["code"], c["level"], c["flags"]) for c in en["caveats"]
    ]
    for mine, theirs in zip(cn["caveats"], en["caveats"], strict=True):
        assert set(mine) == set(theirs)
        assert CJK.search(mine["text"]) and mine["text"] != theirs["text"], mine["code"]
        assert CJK.search(mine["source"]), mine["source"]
        assert bool(mine["versions"]) == bool(theirs["versions"])


def test_every_caveat_of_the_catalogue_reads_in_chinese_with_its_placeholders() -> None:
    i18n.set_language("zh_CN")
    for spec in CAVEATS.values():
        for text in (spec.text, spec.versions, spec.source):
            if not WORDS.search(text):
                continue  # "", "—"
            shown = i18n.tr(text)
            assert shown != text and CJK.search(shown), (spec.code, text)
            assert sorted(PLACEHOLDER.findall(shown)) == sorted(PLACEHOLDER.findall(text)), spec.code


PROFILES = {
    "one-address": Profile(base_url="http://127.0.0.1:8000/v1", model="m"),
    "two-hosts": Profile.model_validate(
        {
            "base_url": "https://10.0.0.10:8000/v1",
            "model": "m",
            "merged": {"chunk_size": 100},
            "split": {
                "prefill_base_url": "http://10.0.0.11:8998",
                "decode_base_url": "http://10.0.0.12",
                "transfer_protocol": "layer-wise",
                "max_transfer_concurrency": 6,
            },
            "cache": {"kv_cache_dtype": "fp16", "prefix_cache": False},
        }
    ),
}


def _both(profile: Profile, engine: str, mode: str, **kw: Any) -> tuple[EngineFlags, EngineFlags]:
    i18n.set_language("en")
    en = engine_flags(profile, engine, mode, profile_name="lab", **kw)  # type: ignore[arg-type]
    i18n.set_language("zh_CN")
    cn = engine_flags(profile, engine, mode, profile_name="lab", **kw)  # type: ignore[arg-type]
    return en, cn


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize(
    ("engine", "mode", "kw"),
    [
        ("vllm", "merged", {"shared_gpu": True, "router": "sglang"}),
        ("sglang", "merged", {}),
        ("vllm", "split", {"transfer_backend": "mooncake"}),
        ("vllm", "split", {"router": "vllm"}),
        ("sglang", "split", {"transfer_backend": "nixl", "shared_gpu": True}),
        ("sglang", "split", {"router": "sglang", "router_mode": "regular", "metrics_port": 8998}),
    ],
)
def test_the_library_translates_every_caveat_it_fills_in(
    profile: str, engine: str, mode: str, kw: dict[str, Any]
) -> None:
    """Filled-in parts (who shares a host, which ports moved) read in Chinese too; the commands
    do not change."""
    en, cn = _both(PROFILES[profile], engine, mode, **kw)
    assert [c.argv for c in cn.commands] == [c.argv for c in en.commands]
    assert [c.shell(multiline=True) for c in cn.commands] == [c.shell(multiline=True) for c in en.commands]
    assert [(c.code, c.level, c.flags, c.n) for c in cn.caveats] == [
        (c.code, c.level, c.flags, c.n) for c in en.caveats
    ]
    for c in cn.caveats:
        assert CJK.search(c.text), (c.code, c.text)
        english_left = re.findall(r"\b(?:the|and|for|are|one|gets)\b", c.text, re.IGNORECASE)
        assert english_left == [], (c.code, c.text)  # no English glue from the filled-in parts


def test_a_refused_router_combination_is_explained_in_chinese() -> None:
    i18n.set_language("zh_CN")
    with pytest.raises(ValueError, match="PD 模式") as caught:
        engine_flags(PROFILES["one-address"], "vllm", "split", router="sglang")
    assert "SGLang 的路由器" in str(caught.value) and "'vllm'" in str(caught.value)
    with pytest.raises(ValueError, match="指标端口"):
        engine_flags(PROFILES["one-address"], "sglang", "split", metrics_port=70000)
