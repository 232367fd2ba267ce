"""Diagnostics and file errors in Simplified Chinese: every finding lint can make reads as
Chinese, with the same codes, severities, positions and keys as in English; the errors of
reading, parsing and validating files too. Codes, field names, keys and values never change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kvswitch
from kvswitch import i18n
from kvswitch.diagnostics import CODES, Diagnostic
from tests.conftest import FIXTURES, ROOT
from tests.test_rules import CC, CC_HEAD, CLINE, EXAMPLES, KV, REAL_KEY

CJK = re.compile("[\u4e00-\u9fff]")
LOCALE_VARS = ("KVSWITCH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

# more of each code's wordings than the one example per code in tests/test_rules.py
EXTRA: list[tuple[str, str, str]] = [
    ("KVS001", CLINE, '{\n  "cline.openAiModelId": ,\n}\n'),
    ("KVS001", CLINE, "{\n  'cline.openAiModelId': 'm'\n}\n"),
    ("KVS001", CLINE, '{\n  "cline.openAiModelId": "m\n}\n'),
    ("KVS001", CLINE, '{\n  "cline.openAiModelId": "m"\n'),
    ("KVS001", CC, "[provider\nmodel = 1\n"),
    ("KVS001", CC, "a = [1, 2\n"),
    ("KVS001", CC, "a = 1\na = 2\n"),
    ("KVS001", CC, 'a = "x\n'),
    ("KVS002", CLINE, "[1]\n"),
    ("KVS002", CC, CC_HEAD + 'chunk_size = "512"\n'),
    ("KVS002", CC, CC_HEAD + "chunk_size = 0\n"),
    ("KVS002", CC, CC_HEAD + "prefix_cache = 1\n"),
    ("KVS002", CC, '[provider]\nmodel = "m"\n[request]\ntemperature = 9\n'),
    ("KVS002", KV, 'active_profile = "a"\n[profiles.a]\nmodel = "m"\n'),
    ("KVS002", KV, 'active_profile = "b"\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n'),
    ("KVS002", KV, '[[clients]]\npath = "x.json"\nkind = "no-such-kind"\n'),
    ("KVS003", KV, "zzz = 1\n"),
    ("KVS006", KV, '[[clients]]\npath = "x.json"\nkind = "claude-code"\nname = "a b"\n'),
    (
        "KVS103",
        CLINE,
        '{\n "cline.openAiModelId": "m",\n "cline.cacheStrategy": {"mode": "merged", "prefillEndpoint": "http://p"}\n}\n',
    ),
    ("KVS110", CC, CC_HEAD + 'mode = "split"\n'),
    ("KVS110", CLINE, '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {"mode": "split"}\n}\n'),
    (
        "KVS112",
        CC,
        CC_HEAD + 'mode = "split"\n[cache.split]\nprefill_base_url = "http://p"\n'
        'decode_base_url = "http://d"\nmax_transfer_concurrency = 0\n',
    ),
    (
        "KVS201",
        KV,
        '[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n[profiles.a.merged]\nurl = "https://m/v1/"\n',
    ),
    ("KVS202", CC, '[provider]\nbase_url = "ftp://h"\nmodel = "m"\n'),
    ("KVS202", CC, '[provider]\nbase_url = "https://user:pw@h/api"\nmodel = "m"\n'),
    ("KVS202", KV, '[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n[profiles.a.split]\nurl = "h:99999"\n'),
    (
        "KVS210",
        CC,
        f'[provider]\nbase_url = "https://h/api"\napi_key = "{REAL_KEY[:8]}\\u200b{REAL_KEY[8:]}"\nmodel = "m"\n',
    ),
    ("KVS210", CC, f'[provider]\nbase_url = "https://h/api"\napi_key = "{REAL_KEY}é"\nmodel = "m"\n'),
    ("KVS220", CC, '[provider]\nbase_url = "https://h/api"\nmodel = ""\n'),
]


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    yield
    i18n.set_language("en")  # conftest resets it too


def _lint(tmp_path: Path, name: str, text: str, *, tracked: bool = False) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """The findings in English, then in Chinese, for one file."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    if tracked:
        for args in (("init", "-q"), ("add", name)):
            subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    try:
        english = kvswitch.lint(path, git=tracked).diagnostics
        i18n.set_language("zh_CN")
        chinese = kvswitch.lint(path, git=tracked).diagnostics
    finally:
        i18n.set_language("en")
    return english, chinese


def _same_but_words(english: list[Diagnostic], chinese: list[Diagnostic]) -> None:
    def facts(d: Diagnostic) -> tuple[object, ...]:
        return (
            d.code,
            d.severity,
            d.path,
            d.line,
            d.column,
            d.key_path,
            d.fix is not None,
            d.fix.key_path if d.fix else None,
            d.fix.value if d.fix else None,
        )

    assert [facts(d) for d in english] == [facts(d) for d in chinese]
    for en, zh in zip(english, chinese, strict=True):
        assert CJK.search(zh.message), zh.message
        assert zh.message != en.message
        assert zh.as_dict().keys() == en.as_dict().keys()
        assert zh.as_dict()["severity"] == en.as_dict()["severity"] in ("error", "warning", "info")
        if zh.fix is not None and en.fix is not None:
            assert CJK.search(zh.fix.description) and zh.fix.description != en.fix.description


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_each_codes_example_reads_as_chinese_with_the_same_facts(tmp_path: Path, code: str) -> None:
    ex = EXAMPLES[code]
    english, chinese = _lint(tmp_path, ex.name, ex.text, tracked=ex.tracked)
    assert code in {d.code for d in chinese}
    _same_but_words(english, chinese)


@pytest.mark.parametrize(("code", "name", "text"), EXTRA, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(EXTRA)])
def test_more_wordings_read_as_chinese_with_the_same_facts(tmp_path: Path, code: str, name: str, text: str) -> None:
    english, chinese = _lint(tmp_path, name, text)
    assert code in {d.code for d in english}, [str(d) for d in english]
    _same_but_words(english, chinese)


def test_every_code_the_rules_can_emit_is_covered_here() -> None:
    """Each code written in the rules, the kinds or the catalogue has a Chinese case above."""
    sources = [
        ROOT / "kvswitch" / "rules.py",
        ROOT / "kvswitch" / "linter.py",
        *sorted((ROOT / "kvswitch" / "kinds").glob("*.py")),
    ]
    emitted = {c for p in sources for c in re.findall(r'"(KVS\d{3})"', p.read_text(encoding="utf-8"))}
    assert emitted <= set(CODES)
    covered = set(EXAMPLES) | {c for c, _, _ in EXTRA}
    assert emitted | set(CODES) <= covered


# -- the command line ---------------------------------------------------------------------


def _problem_files(tmp_path: Path) -> list[Path]:
    """The shipped fixtures with several kinds of problem put in."""
    cline = (FIXTURES / "cline" / "article.json").read_text(encoding="utf-8")
    cline = cline.replace('"https://taotoken.net/api"', '"https://taotoken.net/api/"')
    cline = cline.replace('"chunkSize": 512', '"chunkSize": 500')
    cline = cline.replace('"kvCacheDtype": "auto"', '"kvCacheDtype": "int8"')
    cline = cline.replace('"gpt-4o-mini"', '"your-model-name"')
    cline = cline.replace('"maxTokens": 2048', '"maxTokens": "lots"')
    cline = cline.replace(
        '"cline.apiProvider"', '"cline.openAiApiKey": "sk-你的TaoToken Key",\n    "cline.apiProvider"'
    )
    cc = (FIXTURES / "ccswitch" / "article.toml").read_text(encoding="utf-8")
    cc = cc.replace('mode = "merged"', 'mode = "both"', 1).replace("[request]", "[request]\ntemprature = 0.2", 1)
    broken = '{\n    "cline.openAiBaseUrl": "https://h/api",\n    "cline.openAiModelId": \n}\n'
    out = []
    for name, text in (
        ("vscode/settings.json", cline),
        ("cc-switch/config.toml", cc),
        ("broken/settings.json", broken),
    ):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out.append(path)
    assert cline != (FIXTURES / "cline" / "article.json").read_text(encoding="utf-8")
    return out


def _kvswitch(tmp_path: Path, *args: str, lang: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS} | lang
    return subprocess.run(
        [sys.executable, "-m", "kvswitch", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


_FINDING = re.compile(r"^(?P<where>\S+:\d+:\d+): (?P<code>KVS\d{3}) (?P<rest>.*)$")


def _findings(out: str) -> list[tuple[str, str, str]]:
    return [(m["where"], m["code"], m["rest"]) for line in out.splitlines() if (m := _FINDING.match(line))]


@pytest.mark.parametrize("lang", [{"KVSWITCH_LANG": "zh-CN"}, {"LANG": "zh_CN.UTF-8"}], ids=["KVSWITCH_LANG", "LANG"])
def test_lint_text_in_chinese_has_the_english_places_and_codes(tmp_path: Path, lang: dict[str, str]) -> None:
    paths = [str(p.relative_to(tmp_path)) for p in _problem_files(tmp_path)]
    english = _kvswitch(tmp_path, "lint", *paths, lang={"KVSWITCH_LANG": "en"})
    chinese = _kvswitch(tmp_path, "lint", *paths, lang=lang)
    assert english.returncode == chinese.returncode == 1, (english, chinese)
    en, zh = _findings(english.stdout), _findings(chinese.stdout)
    assert len(en) >= 10
    assert {code for _, code, _ in en} >= {
        "KVS001",
        "KVS002",
        "KVS003",
        "KVS101",
        "KVS105",
        "KVS201",
        "KVS210",
        "KVS211",
        "KVS220",
    }
    assert [(w, c) for w, c, _ in zh] == [(w, c) for w, c, _ in en]
    for (_, code, en_rest), (_, _, zh_rest) in zip(en, zh, strict=True):
        assert CJK.search(zh_rest), (code, zh_rest)
        assert not CJK.search(en_rest.replace("你的", "")), (code, en_rest)
    assert "KVS001" in {c for _, c, _ in zh} and "broken/settings.json:4:1" in {w for w, _, _ in zh}


def test_lint_json_in_chinese_keeps_codes_and_fields_and_translates_messages(tmp_path: Path) -> None:
    paths = [str(p.relative_to(tmp_path)) for p in _problem_files(tmp_path)]
    english = _kvswitch(tmp_path, "lint", "--format", "json", *paths, lang={"KVSWITCH_LANG": "en"})
    chinese = _kvswitch(tmp_path, "lint", "--format", "json", *paths, lang={"KVSWITCH_LANG": "zh-CN"})
    en, zh = json.loads(english.stdout), json.loads(chinese.stdout)
    assert isinstance(zh, list) and len(zh) == len(en) >= 10
    for e, z in zip(en, zh, strict=True):
        assert z.keys() == e.keys()
        assert {k: v for k, v in z.items() if k != "message"} == {k: v for k, v in e.items() if k != "message"}
        assert CJK.search(z["message"]) and z["message"] != e["message"]
        assert z["severity"] in ("error", "warning", "info") and re.fullmatch(r"KVS\d{3}", z["code"])
    schema = json.loads((ROOT / "schemas" / "kvswitch-output.schema.json").read_text(encoding="utf-8"))
    if "diagnostic" in schema.get("$defs", {}):  # the one output contract, where it describes a finding
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator({"$ref": "#/$defs/diagnostic", "$defs": schema["$defs"]})
        for item in zh:
            validator.validate(item)


# -- errors of reading, parsing, validating and writing ---------------------------------------


def test_read_and_parse_errors_are_chinese(tmp_path: Path, chinese: None) -> None:
    from kvswitch.errors import ConfigParseError, ReadError, UnknownKindError

    with pytest.raises(ReadError) as missing:
        kvswitch.lint(tmp_path / "nope.json")
    assert CJK.search(str(missing.value)) and str(missing.value).startswith(str(tmp_path / "nope.json"))
    with pytest.raises(ReadError) as folder:
        kvswitch.lint(tmp_path)
    assert "普通文件" in folder.value.message
    bad = tmp_path / "settings.json"
    bad.write_bytes(b'{"cline.openAiModelId": "\xff"}')
    with pytest.raises(ConfigParseError) as not_utf8:
        kvswitch.load(bad)
    assert "UTF-8" in not_utf8.value.message and CJK.search(not_utf8.value.message)
    unknown = tmp_path / "mystery.json"
    unknown.write_text('{"a": tru}')
    with pytest.raises(UnknownKindError) as which:
        kvswitch.lint(unknown)
    assert "JSONC" in which.value.message and CJK.search(which.value.message)
    plain = tmp_path / "notes.txt"
    plain.write_text("hello\n")
    with pytest.raises(UnknownKindError) as nobody:
        kvswitch.lint(plain)
    assert "--kind" in nobody.value.message and "article-cline" in nobody.value.message  # options and ids stay
    assert CJK.search(nobody.value.message)


def test_validation_of_values_is_chinese(chinese: None) -> None:
    from kvswitch.validate import (
        InvalidValueError,
        check_name,
        check_url,
        clean_url,
        key_problem,
        profile_value,
    )

    with pytest.raises(InvalidValueError) as url:
        check_url("ftp://h/api")
    assert url.value.code == "KVS202" and CJK.search(url.value.message) and "http://" in url.value.message
    with pytest.raises(InvalidValueError) as query:
        check_url("https://h/api?key=1", "--base-url")
    assert query.value.message.startswith("--base-url ") and CJK.search(query.value.message)
    assert "?…" in query.value.message  # the query is never shown
    with pytest.raises(InvalidValueError) as name:
        check_name("a b", "client")
    assert "客户端" in name.value.message and "'a b'" in name.value.message
    bare, note = clean_url("https://h/api/")
    assert bare == "https://h/api" and note is not None and note.code == "KVS201" and CJK.search(note.message)
    value, chunk = profile_value(("merged", "chunk_size"), 500)
    assert value == 512 and chunk is not None and CJK.search(chunk.message)
    with pytest.raises(InvalidValueError) as ref:
        profile_value(("key",), "sk-live-abc123")
    assert ref.value.code == "KVS213" and "sk-live-abc123" not in ref.value.message and CJK.search(ref.value.message)
    problem = key_problem(" sk-abc")
    assert problem is not None and "KVS210" in problem and CJK.search(problem)


def test_pydantic_and_schema_errors_are_worded_by_type(chinese: None) -> None:
    from kvswitch.schema_check import check_schema, error_message

    (err,) = check_schema({"cache": {"mode": "both"}}, "article-ccswitch")
    assert err.msg == "Input should be 'merged' or 'split'"  # pydantic's words, kept as data
    assert err.text == "应为 'merged' 或 'split'"
    assert error_message("greater_than", "Input should be greater than 0", {"gt": 0}) == "应大于 0"
    assert error_message("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
    assert CJK.search(error_message("missing", "Field required"))
    assert error_message("value_error", "Value error, 超过") == "超过"  # kvswitch's own validator's words
    assert error_message("some_future_type", "Something new") == "Something new"  # pydantic's, as a fallback
    assert error_message("greater_than", "Input should be greater than 0", {}) == "Input should be greater than 0"
    i18n.set_language("en")
    assert (
        error_message("greater_than", "Input should be greater than 0", {"gt": 0}) == "Input should be greater than 0"
    )


def test_pydantic_validators_speak_chinese(chinese: None) -> None:
    from pydantic import ValidationError

    from kvswitch.models import Profile
    from kvswitch.schema_check import error_message

    with pytest.raises(ValidationError) as caught:
        Profile.model_validate({"base_url": "https://h/api", "model": "m", "headers": {"X-A": "1", "x-a": "2"}})
    err = caught.value.errors(include_url=False)[0]
    text = error_message(err["type"], err["msg"], err.get("ctx"))
    assert "X-A" in text or "x-a" in text
    assert CJK.search(text) and not text.startswith("Value error")


def test_key_variable_advice_is_chinese(chinese: None) -> None:
    from kvswitch.key_variables import KeyVariable

    one = KeyVariable("KVSWITCH_KEY_WORK", "work", "keyring", ("Codex",), "unset", key="sk-…abcd")
    two = KeyVariable(
        "KVSWITCH_KEY_WORK", "work", "keyring", ("Codex", "OpenCode"), "differs", value="sk-…zzzz", key="sk-…abcd"
    )
    token = KeyVariable("KVSWITCH_GATEWAY_TOKEN", "", "keyring", ("Codex",), "no-key", token=True)
    for variable in (one, two, token):
        saw, fix = variable.describe()
        assert CJK.search(saw) and variable.name in saw
        assert not fix or CJK.search(fix) or fix.startswith("export ")
    saw, fix = one.describe()
    assert "kvswitch key get work --reveal" in fix and "export KVSWITCH_KEY_WORK=sk-…abcd" in fix
    assert "Codex 和 OpenCode" in two.describe()[0]


def test_kinds_hints_and_edit_refusals_are_chinese(tmp_path: Path, chinese: None) -> None:
    from kvswitch.document import parse_config
    from kvswitch.errors import EditError
    from kvswitch.kinds import get_kind

    for kind in ("claude-code", "cline", "codex", "article-cline"):
        hint = get_kind(kind).apply_hint()
        assert CJK.search(hint) and get_kind(kind).product in hint
    cf = parse_config('[provider]\nmodel = "m"\n[cache]\nmode = "merged"\n', "article-ccswitch", tmp_path / "c.toml")
    with pytest.raises(EditError) as refused:
        get_kind("article-ccswitch").plan_mode(cf, "split", None)
    assert CJK.search(refused.value.message) and "provider.base_url" in refused.value.message
    json5 = tmp_path / "settings.json"
    json5.write_text("{cline_x: 'a'}")
    found = kvswitch.lint(json5, "article-cline").diagnostics
    assert [d.code for d in found] == ["KVS001"] and "JSON5" in found[0].message and CJK.search(found[0].message)


def test_writes_refused_in_chinese(tmp_path: Path, chinese: None) -> None:
    from kvswitch.errors import ChangedOnDiskError, WriteError
    from kvswitch.io import atomic_write, prepare_write

    target = tmp_path / "f.json"
    target.write_text("{}\n")
    with pytest.raises(ChangedOnDiskError) as raced:
        atomic_write(target, b'{"a": 1}\n', expected=b"{ }\n")
    assert CJK.search(raced.value.message) and target.read_text() == "{}\n"
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(WriteError) as refused:
        prepare_write(folder, b"x")
    assert "普通文件" in refused.value.message


def test_tomllib_messages_are_translated_and_unknown_ones_kept(chinese: None) -> None:
    from kvswitch.formats.toml import TomlDocument, TomlSyntaxError

    for text in ("a = 1\nb = = 2\n", "a = [1, 2\n", "[t\n", "a = 1\na = 2\n", 'a = "x\n', "a = {b = 1, b = 2}\n"):
        with pytest.raises(TomlSyntaxError) as caught:
            TomlDocument(text)
        assert CJK.search(caught.value.message), (text, caught.value.message)
        assert caught.value.line is not None
