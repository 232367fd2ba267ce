"""Every diagnostic code (D-5) on a minimal real file: code, severity, exact line and
column, and what the message says; the article's cases (S-07, S-17, S-19, S-24…S-26)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import kvswitch
from kvswitch.diagnostics import CODES, Diagnostic, Severity
from kvswitch.linter import lint_text
from kvswitch.literals import CONFIG_VERSION
from kvswitch.rules import nearest_chunk_size

FIXTURES = Path(__file__).parent / "fixtures"
CC = "cc-switch/config.toml"
CLINE = "settings.json"
KV = "kvswitch.toml"
ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
REAL_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def lint(tmp_path: Path, name: str, text: str, *, git: bool = False) -> list[Diagnostic]:
    return kvswitch.lint(write(tmp_path, name, text), git=git).diagnostics


def only(diags: list[Diagnostic], code: str) -> list[Diagnostic]:
    return [d for d in diags if d.code == code]


def one(diags: list[Diagnostic], code: str) -> Diagnostic:
    found = only(diags, code)
    assert len(found) == 1, [str(d) for d in diags]
    return found[0]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


# -- one example per code --------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    name: str
    text: str
    line: int
    column: int
    severity: Severity
    says: tuple[str, ...]
    tracked: bool = False


CC_HEAD = '[provider]\nmodel = "m"\n[cache]\n'
EXAMPLES: dict[str, Example] = {
    "KVS001": Example(CC, "a = 1\nb = = 2\n", 2, 5, ERROR, ("Invalid value",)),
    "KVS002": Example(
        CC, CC_HEAD + 'mode = "both"\n', 4, 8, ERROR, ("cache.mode", "got 'both'", "'merged' or 'split'")
    ),
    "KVS003": Example(
        CC, CC_HEAD + "  chunk_sise = 512\n", 4, 3, WARNING, ("'chunk_sise'", "did you mean 'chunk_size'?")
    ),
    "KVS004": Example(
        CLINE,
        '{\n  "cline.openAiModelId": "a",\n  "cline.openAiModelId": "m"\n}\n',
        3,
        3,
        WARNING,
        ("'cline.openAiModelId'", "more than once", "last"),
    ),
    "KVS005": Example(KV, "version = 99\n", 1, 11, ERROR, ("version 99", "newer kvswitch")),
    "KVS006": Example(
        KV,
        '[profiles."../x"]\nbase_url = "https://h/api"\nmodel = "m"\n',
        1,
        1,
        WARNING,
        ("profile name '../x'", "start with a letter or digit", "kvswitch profile rename ../x NEW"),
    ),
    "KVS101": Example(CC, CC_HEAD + "chunk_size = 500\n", 4, 14, WARNING, ("500", "multiple of 64", "becomes 512")),
    "KVS102": Example(CC, CC_HEAD + "chunk_size = 128\n", 4, 14, WARNING, ("128", "below 256", "TTFT")),
    "KVS103": Example(
        CC,
        CC_HEAD + 'mode = "split"\nchunk_size = 512\n[cache.split]\n'
        'prefill_base_url = "http://p:1"\ndecode_base_url = "http://d:2"\n',
        5,
        1,
        INFO,
        ("chunk_size", "ignored in split mode"),
    ),
    "KVS104": Example(CC, CC_HEAD + 'kv_cache_dtype = "fp5"\n', 4, 18, WARNING, ("'fp5'", "fp8")),
    "KVS105": Example(CC, CC_HEAD + 'kv_cache_dtype = "int8"\n', 4, 18, INFO, ("int8", "fp8", "q8_0")),
    "KVS110": Example(
        CC,
        CC_HEAD + 'mode = "split"\n[cache.split]\nprefill_base_url = "ftp://p"\ndecode_base_url = "http://d"\n',
        6,
        20,
        ERROR,
        ("prefill", "'ftp://p'", "not an http(s) URL"),
    ),
    "KVS111": Example(
        CC,
        CC_HEAD + 'mode = "split"\n[cache.split]\nprefill_base_url = "http://10.0.0.1:8000"\n'
        'decode_base_url = "http://10.0.0.1:8000"\n',
        7,
        19,
        WARNING,
        ("same address", "time out"),
    ),
    "KVS112": Example(
        CC,
        CC_HEAD + 'mode = "split"\n[cache.split]\nprefill_base_url = "http://p"\ndecode_base_url = "http://d"\n'
        "max_transfer_concurrency = 12\n",
        8,
        28,
        WARNING,
        ("12", "above 8"),
    ),
    "KVS201": Example(
        CC,
        '[provider]\nbase_url = "https://h/api/"\nmodel = "m"\n',
        2,
        12,
        WARNING,
        ("ends with '/'", "'https://h/api'"),
    ),
    "KVS202": Example(
        CC,
        '[provider]\nbase_url = "https://h/api?x=1"\nmodel = "m"\n',
        2,
        12,
        ERROR,
        ("query string",),
    ),
    "KVS203": Example(
        CC,
        f'[provider]\nbase_url = "http://example.com/api"\napi_key = "{REAL_KEY}"\nmodel = "m"\n',
        2,
        12,
        WARNING,
        ("plain http", "example.com", "https"),
    ),
    "KVS210": Example(
        CC,
        f'[provider]\nbase_url = "https://h/api"\napi_key = " {REAL_KEY}"\nmodel = "m"\n',
        3,
        11,
        ERROR,
        ("whitespace", "401"),
    ),
    "KVS211": Example(
        CC,
        '[provider]\nbase_url = "https://h/api"\napi_key = "sk-你的TaoToken Key"\nmodel = "m"\n',
        3,
        11,
        ERROR,
        ("placeholder",),
    ),
    "KVS212": Example(
        CLINE,
        f'{{\n  "cline.openAiBaseUrl": "https://h/api",\n  "cline.openAiApiKey": "{REAL_KEY}",\n'
        '  "cline.openAiModelId": "m"\n}\n',
        3,
        25,
        ERROR,
        ("tracked by git", "keyring"),
        tracked=True,
    ),
    "KVS213": Example(
        KV,
        'active_profile = "a"\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\nkey = "sk-live-abc123"\n',
        5,
        7,
        ERROR,
        ("profile 'a'", "'keyring'", "'env:NAME'"),
    ),
    "KVS220": Example(
        CC,
        '[provider]\nbase_url = "https://h/api"\nmodel = "your-model-name"\n',
        3,
        9,
        WARNING,
        ("'your-model-name'", "placeholder", "404"),
    ),
}


def test_every_code_has_an_example() -> None:
    assert set(EXAMPLES) == set(CODES)


def test_codes_table_is_well_formed() -> None:
    for code, (severity, meaning) in CODES.items():
        assert code.startswith("KVS") and len(code) == 6
        assert isinstance(severity, Severity) and meaning


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_code_example(tmp_path: Path, code: str) -> None:
    ex = EXAMPLES[code]
    path = write(tmp_path, ex.name, ex.text)
    if ex.tracked:
        git(tmp_path, "init", "-q")
        git(tmp_path, "add", ex.name)
    diags = kvswitch.lint(path, git=ex.tracked).diagnostics
    d = one(diags, code)
    assert d.severity is ex.severity
    assert (d.line, d.column) == (ex.line, ex.column), str(d)
    assert d.path == path
    for text in ex.says:
        assert text in d.message, (text, d.message)
    assert str(d).startswith(f"{path}:{ex.line}:{ex.column}: {code} {ex.severity}: ")


# -- KVS001 parse errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line", "col"),
    [
        (CLINE, '{\n  "cline.openAiModelId": ,\n}\n', 2, 26),
        (CLINE, '{\n  "a": 1\n  "b": 2\n}\n', 3, 3),
        (KV, 'version = 1\n[profiles.a\nmodel = "m"\n', 2, 12),
        (CC, "[cache]\nmode = merged\n", 2, 8),
    ],
)
def test_kvs001_parse_error_position(tmp_path: Path, name: str, text: str, line: int, col: int) -> None:
    diags = lint(tmp_path, name, text)
    assert len(diags) == 1
    d = diags[0]
    assert (d.code, d.severity, d.line, d.column) == ("KVS001", ERROR, line, col)


def test_kvs001_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / CLINE
    path.write_bytes(b'{\n  "cline.openAiModelId": "caf\xe9"\n}\n')
    d = one(kvswitch.lint(path, git=False).diagnostics, "KVS001")
    assert (d.line, d.column) == (2, 30)
    assert "UTF-8" in d.message


# -- KVS002 types and values -----------------------------------------------------------


def test_kvs002_cline_types(tmp_path: Path) -> None:
    text = (
        "{\n"
        '  "cline.openAiModelId": "m",\n'
        '  "cline.requestOptions": {"temperature": 3, "maxTokens": "512", "stream": 1},\n'
        '  "cline.cacheStrategy": {"mode": "both", "chunkSize": true}\n'
        "}\n"
    )
    diags = only(lint(tmp_path, CLINE, text), "KVS002")
    got = {(d.key_path, d.line, d.column) for d in diags}
    assert got == {
        (("cline.requestOptions", "temperature"), 3, 43),
        (("cline.requestOptions", "maxTokens"), 3, 59),
        (("cline.requestOptions", "stream"), 3, 76),
        (("cline.cacheStrategy", "mode"), 4, 35),
        (("cline.cacheStrategy", "chunkSize"), 4, 56),
    }
    by_key = {d.key_path[-1]: d.message for d in diags}
    assert "got 'both'" in by_key["mode"]
    assert "less than or equal to 2" in by_key["temperature"]
    assert "valid integer" in by_key["maxTokens"] and "got '512'" in by_key["maxTokens"]
    assert "valid integer" in by_key["chunkSize"]


def test_kvs002_wrong_type_is_not_also_a_missing_model(tmp_path: Path) -> None:
    diags = lint(tmp_path, CLINE, '{\n  "cline.openAiModelId": 5\n}\n')
    assert one(diags, "KVS002").message.endswith("(got 5)")
    assert not only(diags, "KVS220")


def test_kvs002_active_profile_unknown(tmp_path: Path) -> None:
    text = 'active_profile = "taotokn"\n[profiles.taotoken]\nbase_url = "https://h/api"\nmodel = "m"\n'
    d = one(lint(tmp_path, KV, text), "KVS002")
    assert (d.line, d.column, d.severity) == (1, 18, ERROR)
    assert "did you mean 'taotoken'?" in d.message


def test_kvs002_required_profile_keys(tmp_path: Path) -> None:
    text = '[profiles.a]\nprovider = "x"\n'
    diags = only(lint(tmp_path, KV, text), "KVS002")
    assert sorted(d.message for d in diags) == [
        "profiles.a.base_url: required key is missing",
        "profiles.a.model: required key is missing",
    ]
    assert {(d.line, d.column) for d in diags} == {(1, 1)}  # the [profiles.a] header


def test_kvs002_array_of_tables(tmp_path: Path) -> None:
    text = (
        '[[clients]]\npath = "a"\nkind = "cline"\n\n'
        '[[clients]]\npath = "b"\nkind = "ccswitch"\nnudge = { kind = "email" }\n'
    )
    d = one(lint(tmp_path, KV, text), "KVS002")
    assert d.key_path == ("clients", 1, "nudge", "kind")
    assert (d.line, d.column) == (8, 18)
    assert "got 'email'" in d.message


# -- KVS003 unknown keys ---------------------------------------------------------------


def test_kvs003_cline_nested_key_at_the_key(tmp_path: Path) -> None:
    text = (
        "{\n"
        '  "cline.openAiModelId": "m",\n'
        '  "cline.openAiBaseUrll": "https://h/api",\n'
        '  "cline.enableCheckpoints": true,\n'
        '  "cline.cacheStrategy": {\n'
        '    "mode": "merged",\n'
        '    "chunkSise": 512\n'
        "  }\n"
        "}\n"
    )
    diags = only(lint(tmp_path, CLINE, text), "KVS003")
    assert [(d.line, d.column, d.key_path[-1]) for d in diags] == [
        (3, 3, "cline.openAiBaseUrll"),
        (7, 5, "chunkSise"),
    ]
    assert "did you mean 'cline.openAiBaseUrl'?" in diags[0].message
    assert "did you mean 'chunkSize'?" in diags[1].message
    assert all(d.severity is WARNING for d in diags)


def test_kvs003_ccswitch_unknown_tables_and_keys(tmp_path: Path) -> None:
    text = (
        '[provider]\nmodel = "m"\nheaders = { a = 1 }\n\n'
        "[cache.splt]\nx = 1\n\n"
        "[requst]\nstream = true\n\n"
        '[projects."/home/me"]\ntrust = 1\n'
    )
    diags = only(lint(tmp_path, CC, text), "KVS003")
    assert [(d.line, d.column, d.key_path) for d in diags] == [
        (3, 1, ("provider", "headers")),
        (5, 1, ("cache", "splt")),
        (8, 1, ("requst",)),
    ]
    assert "(kvswitch ignores it)" in diags[0].message
    assert "did you mean 'split'?" in diags[1].message
    assert "did you mean 'request'?" in diags[2].message


def test_kvs003_kvswitch_profiles_and_clients(tmp_path: Path) -> None:
    text = (
        'active_profile = "a"\nmodee = "split"\n'
        '[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\nbogus = 1\n'
        '[[clients]]\npath = "x"\nkind = "cline"\nnudge = { kind = "signal", pidfle = "/run/p" }\n'
    )
    diags = only(lint(tmp_path, KV, text), "KVS003")
    assert [(d.line, d.column, d.key_path) for d in diags] == [
        (2, 1, ("modee",)),
        (6, 1, ("profiles", "a", "bogus")),
        (10, 28, ("clients", 0, "nudge", "pidfle")),
    ]
    assert "did you mean 'pidfile'?" in diags[2].message


def test_kvs003_fixture_with_foreign_cline_keys(tmp_path: Path) -> None:
    text = (FIXTURES / "cline" / "unknown-cline-keys.json").read_text()
    diags = lint(tmp_path, CLINE, text)
    assert [(d.code, d.line, d.column) for d in diags] == [("KVS003", 10, 9)]
    assert "'prefetchLayers'" in diags[0].message


# -- KVS004 duplicates -----------------------------------------------------------------


def test_kvs004_duplicates_fixture(tmp_path: Path) -> None:
    text = (FIXTURES / "cline" / "duplicates.json").read_text()
    diags = lint(tmp_path, CLINE, text)
    d = one(diags, "KVS004")
    assert (d.line, d.column, d.severity) == (5, 5, WARNING)
    assert "'cline.cacheStrategy'" in d.message
    assert not only(diags, "KVS110")  # VS Code takes the last one: merged


def test_kvs004_only_for_cline_keys(tmp_path: Path) -> None:
    text = '{\n  "editor.x": 1,\n  "editor.x": 2,\n  "cline.openAiModelId": "m"\n}\n'
    assert lint(tmp_path, CLINE, text) == []


def test_kvs004_nested_duplicate(tmp_path: Path) -> None:
    text = '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {"mode": "merged", "mode": "merged"}\n}\n'
    d = one(lint(tmp_path, CLINE, text), "KVS004")
    assert (d.line, d.column) == (3, 45)
    assert "'mode'" in d.message


# -- KVS005 version --------------------------------------------------------------------


def test_kvs005_only_for_newer_versions(tmp_path: Path) -> None:
    base = (FIXTURES / "kvswitch" / "kvswitch.toml").read_text()
    assert lint(tmp_path, KV, base) == []
    d = one(lint(tmp_path, KV, base.replace("version = 1", "version = 99")), "KVS005")
    assert (d.line, d.column) == (1, 11)
    assert "99" in d.message and f"reads up to {CONFIG_VERSION}" in d.message


# -- KVS101 / KVS102 chunk size --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "becomes"),
    [
        (500, 512),
        (96, 128),
        (32, 64),
        (1, 64),
        (31, 64),
        (544, 576),
        (800, 832),
        (1000, 1024),
        (543, 512),
        (1055, 1024),
    ],
)
def test_kvs101_nearest_multiple_of_64_ties_up_never_below_64(tmp_path: Path, value: int, becomes: int) -> None:
    assert nearest_chunk_size(value) == becomes
    assert becomes % 64 == 0 and becomes >= 64
    d = one(lint(tmp_path, CC, CC_HEAD + f"chunk_size = {value}\n"), "KVS101")
    assert f"becomes {becomes}" in d.message
    assert d.fix is not None
    assert d.fix.value == becomes
    assert d.fix.key_path == ("cache", "chunk_size")
    assert d.as_dict()["fixable"] is True


def test_kvs101_in_cline_and_in_a_profile(tmp_path: Path) -> None:
    cline = (
        '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {\n'
        '    "mode": "merged",\n    "chunkSize": 500\n  }\n}\n'
    )
    d = one(lint(tmp_path, CLINE, cline), "KVS101")
    assert (d.line, d.column) == (5, 18)
    assert d.fix is not None and d.fix.key_path == ("cline.cacheStrategy", "chunkSize") and d.fix.value == 512
    kv = (
        'active_profile = "a"\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n'
        "[profiles.a.merged]\nchunk_size = 500\n"
    )
    d = one(lint(tmp_path, KV, kv), "KVS101")
    assert (d.line, d.column) == (6, 14)
    assert d.message.startswith("profile 'a': ")


@pytest.mark.parametrize("value", [64, 128, 192])
def test_kvs102_multiples_below_256(tmp_path: Path, value: int) -> None:
    diags = lint(tmp_path, CC, CC_HEAD + f"chunk_size = {value}\n")
    d = one(diags, "KVS102")
    assert (d.line, d.column, d.severity) == (4, 14, WARNING)
    assert not only(diags, "KVS101")


@pytest.mark.parametrize("value", [256, 512, 768, 1024, 4096])
def test_chunk_sizes_that_are_fine(tmp_path: Path, value: int) -> None:
    assert lint(tmp_path, CC, CC_HEAD + f"chunk_size = {value}\n") == []


def test_chunk_size_zero_is_a_type_error_only(tmp_path: Path) -> None:
    diags = lint(tmp_path, CC, CC_HEAD + "chunk_size = 0\n")
    assert [d.code for d in diags] == ["KVS002"]


# -- KVS103 other mode's settings ------------------------------------------------------


def test_kvs103_chunk_size_in_cline_split_mode_is_info(tmp_path: Path) -> None:
    text = (
        "{\n"
        '  "cline.openAiModelId": "m",\n'
        '  "cline.cacheStrategy": {\n'
        '    "mode": "split",\n'
        '    "chunkSize": 512,\n'
        '    "prefillEndpoint": "http://p:1",\n'
        '    "decodeEndpoint": "http://d:2"\n'
        "  }\n"
        "}\n"
    )
    d = one(lint(tmp_path, CLINE, text), "KVS103")
    assert (d.line, d.column, d.severity) == (5, 5, INFO)
    assert "ignored in split mode" in d.message


def test_kvs103_split_keys_in_cline_merged_mode(tmp_path: Path) -> None:
    text = (
        "{\n"
        '  "cline.openAiModelId": "m",\n'
        '  "cline.cacheStrategy": '
        '{"mode": "merged", "prefillEndpoint": "http://p", "kvTransferProtocol": "layer-wise"}\n'
        "}\n"
    )
    diags = only(lint(tmp_path, CLINE, text), "KVS103")
    assert [(d.line, d.column, d.severity) for d in diags] == [(3, 45, INFO), (3, 76, INFO)]
    assert "prefillEndpoint is ignored in merged mode" in diags[0].message
    assert "kvTransferProtocol is ignored in merged mode" in diags[1].message


def test_kvs103_never_for_profiles_or_a_kept_cache_split_table(tmp_path: Path) -> None:
    assert lint(tmp_path, CC, (FIXTURES / "ccswitch" / "article.toml").read_text()) == []
    kv = (FIXTURES / "kvswitch" / "kvswitch.toml").read_text().replace('mode = "merged"', 'mode = "split"', 1)
    assert not only(lint(tmp_path, KV, kv), "KVS103")


# -- KVS104 / KVS105 kv cache dtype ----------------------------------------------------


@pytest.mark.parametrize("dtype", ["auto", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "q8_0", "q4_0"])
def test_known_kv_cache_dtypes_are_fine(tmp_path: Path, dtype: str) -> None:
    assert lint(tmp_path, CC, CC_HEAD + f'kv_cache_dtype = "{dtype}"\n') == []


def test_kvs104_in_cline(tmp_path: Path) -> None:
    text = '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {"mode": "merged", "kvCacheDtype": "fp5"}\n}\n'
    d = one(lint(tmp_path, CLINE, text), "KVS104")
    assert (d.line, d.column, d.severity) == (3, 61, WARNING)


# -- KVS110 / KVS111 / KVS112 split sanity ---------------------------------------------


def test_kvs110_cline_split_without_endpoints(tmp_path: Path) -> None:
    text = '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {"mode": "split"}\n}\n'
    diags = only(lint(tmp_path, CLINE, text), "KVS110")
    assert [(d.line, d.column, d.severity) for d in diags] == [(3, 3, ERROR), (3, 3, ERROR)]
    assert sorted(d.message for d in diags) == [
        "split mode without a decode endpoint (decodeEndpoint)",
        "split mode without a prefill endpoint (prefillEndpoint)",
    ]


def test_kvs110_ccswitch_split_without_split_table(tmp_path: Path) -> None:
    d = one(lint(tmp_path, CC, CC_HEAD + 'mode = "split"\n'), "KVS110")
    assert (d.line, d.column, d.severity) == (4, 8, ERROR)
    assert "[cache.split]" in d.message


def test_kvs110_ccswitch_split_table_missing_decode(tmp_path: Path) -> None:
    text = CC_HEAD + 'mode = "split"\n\n[cache.split]\nprefill_base_url = "http://p"\n'
    d = one(lint(tmp_path, CC, text), "KVS110")
    assert (d.line, d.column) == (6, 1)
    assert "decode endpoint (decode_base_url)" in d.message


@pytest.mark.parametrize("url", ["ftp://p", "p:8000", "http://", "http://exa mple", "http://h:99999"])
def test_kvs110_not_an_http_url(tmp_path: Path, url: str) -> None:
    text = CC_HEAD + f'mode = "split"\n[cache.split]\nprefill_base_url = "http://p"\ndecode_base_url = "{url}"\n'
    d = one(lint(tmp_path, CC, text), "KVS110")
    assert (d.line, d.column, d.severity) == (7, 19, ERROR)
    assert "decode endpoint" in d.message and "not an http(s) URL" in d.message


def test_kvs110_bad_endpoint_in_merged_mode_is_a_warning(tmp_path: Path) -> None:
    text = CC_HEAD + 'mode = "merged"\n[cache.split]\nprefill_base_url = "ftp://p"\n'
    d = one(lint(tmp_path, CC, text), "KVS110")
    assert d.severity is WARNING
    assert (d.line, d.column) == (6, 20)


@pytest.mark.parametrize(
    ("prefill", "decode"),
    [
        ("http://10.0.0.1:8000", "http://10.0.0.1:8000"),
        ("http://10.0.0.1:8000/", "http://10.0.0.1:8000"),
        ("http://gpu:80", "http://gpu"),
        ("https://GPU:443/v1/", "https://gpu/v1"),
    ],
)
def test_kvs111_same_address(tmp_path: Path, prefill: str, decode: str) -> None:
    text = CC_HEAD + f'mode = "split"\n[cache.split]\nprefill_base_url = "{prefill}"\ndecode_base_url = "{decode}"\n'
    d = one(lint(tmp_path, CC, text), "KVS111")
    assert (d.line, d.column, d.severity) == (7, 19, WARNING)
    assert "time out" in d.message and "merged" in d.message


@pytest.mark.parametrize(
    ("prefill", "decode"),
    [
        ("http://10.0.0.1:8000", "http://10.0.0.1:8001"),
        ("http://10.0.0.1:8000", "http://10.0.0.2:8000"),
        ("http://gpu:80", "https://gpu"),
        ("http://gpu/prefill", "http://gpu/decode"),
    ],
)
def test_kvs111_different_addresses(tmp_path: Path, prefill: str, decode: str) -> None:
    text = CC_HEAD + f'mode = "split"\n[cache.split]\nprefill_base_url = "{prefill}"\ndecode_base_url = "{decode}"\n'
    assert not only(lint(tmp_path, CC, text), "KVS111")


def test_kvs111_cline(tmp_path: Path) -> None:
    text = (
        '{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {\n    "mode": "split",\n'
        '    "prefillEndpoint": "http://gpu:8000/",\n    "decodeEndpoint": "http://gpu:8000"\n  }\n}\n'
    )
    d = one(lint(tmp_path, CLINE, text), "KVS111")
    assert (d.line, d.column) == (6, 23)


@pytest.mark.parametrize(
    ("value", "severity", "says"),
    [(0, ERROR, "at least 1"), (-3, ERROR, "at least 1"), (9, WARNING, "above 8"), (12, WARNING, "above 8")],
)
def test_kvs112_max_transfer_concurrency(tmp_path: Path, value: int, severity: Severity, says: str) -> None:
    text = CC_HEAD + f'[cache.split]\nprefill_base_url = "http://p"\nmax_transfer_concurrency = {value}\n'
    d = one(lint(tmp_path, CC, text), "KVS112")
    assert (d.line, d.column, d.severity) == (6, 28, severity)
    assert says in d.message and str(value) in d.message


@pytest.mark.parametrize("value", [1, 4, 8])
def test_kvs112_in_range(tmp_path: Path, value: int) -> None:
    text = CC_HEAD + f'[cache.split]\nprefill_base_url = "http://p"\nmax_transfer_concurrency = {value}\n'
    assert lint(tmp_path, CC, text) == []


# -- KVS201 / KVS202 / KVS203 URLs -----------------------------------------------------


def test_kvs201_cline_fix(tmp_path: Path) -> None:
    text = '{\n  "cline.openAiBaseUrl": "https://taotoken.net/api//",\n  "cline.openAiModelId": "m"\n}\n'
    d = one(lint(tmp_path, CLINE, text), "KVS201")
    assert (d.line, d.column, d.severity) == (2, 26, WARNING)
    assert d.fix is not None and d.fix.value == "https://taotoken.net/api"
    assert d.fix.key_path == ("cline.openAiBaseUrl",)


def test_kvs201_endpoint_trailing_slash(tmp_path: Path) -> None:
    text = CC_HEAD + '[cache.split]\nprefill_base_url = "http://p:1/"\ndecode_base_url = "http://d:2"\n'
    d = one(lint(tmp_path, CC, text), "KVS201")
    assert (d.line, d.column) == (5, 20)
    assert d.fix is not None and d.fix.key_path == ("cache", "split", "prefill_base_url")
    assert d.message.startswith("prefill endpoint ends with '/'")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://h/api?x=1", "query string"),
        ("https://h/api#frag", "fragment"),
        ("https://h/api?", "query string"),
        ("ftp://h/api", "not an http(s) URL"),
        ("taotoken.net/api", "not an http(s) URL"),
    ],
)
def test_kvs202(tmp_path: Path, url: str, says: str) -> None:
    d = one(lint(tmp_path, CC, f'[provider]\nbase_url = "{url}"\nmodel = "m"\n'), "KVS202")
    assert (d.line, d.column, d.severity) == (2, 12, ERROR)
    assert says in d.message
    assert d.fix is None


def test_kvs202_message_masks_query_values(tmp_path: Path) -> None:
    url = f"https://h/api?api_key={REAL_KEY}"
    d = one(lint(tmp_path, CC, f'[provider]\nbase_url = "{url}"\nmodel = "m"\n'), "KVS202")
    assert REAL_KEY not in d.message
    assert "'https://h/api?…'" in d.message


@pytest.mark.parametrize(
    ("url", "key", "flagged"),
    [
        ("http://example.com/api", REAL_KEY, True),
        ("http://10.1.2.3:8000/v1", REAL_KEY, True),
        ("http://127.0.0.1:8000/v1", REAL_KEY, False),
        ("http://127.5.5.5:8000/v1", REAL_KEY, False),
        ("http://localhost:8000/v1", REAL_KEY, False),
        ("http://LOCALHOST/v1", REAL_KEY, False),
        ("http://[::1]:8000/v1", REAL_KEY, False),
        ("https://example.com/api", REAL_KEY, False),
        ("http://example.com/api", None, False),
        ("http://example.com/api", "", False),
    ],
)
def test_kvs203_plain_http_with_a_key(tmp_path: Path, url: str, key: str | None, flagged: bool) -> None:
    key_line = f'api_key = "{key}"\n' if key is not None else ""
    diags = lint(tmp_path, CC, f'[provider]\nbase_url = "{url}"\n{key_line}model = "m"\n')
    found = only(diags, "KVS203")
    assert bool(found) is flagged
    if flagged:
        assert (found[0].line, found[0].column, found[0].severity) == (2, 12, WARNING)


# -- KVS210…KVS213 keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        (f" {REAL_KEY}", REAL_KEY),
        (f"{REAL_KEY} ", REAL_KEY),
        (f"{REAL_KEY}\\n", REAL_KEY),
        (f"\\t{REAL_KEY}\\r\\n", REAL_KEY),
        (f"{REAL_KEY[:10]}\\n{REAL_KEY[10:]}", REAL_KEY),
    ],
)
def test_kvs210_whitespace_in_key(tmp_path: Path, raw: str, fixed: str) -> None:
    text = (
        f'{{\n  "cline.openAiBaseUrl": "https://h/api",\n  "cline.openAiApiKey": "{raw}",\n'
        '  "cline.openAiModelId": "m"\n}\n'
    )
    d = one(lint(tmp_path, CLINE, text), "KVS210")
    assert (d.line, d.column, d.severity) == (3, 25, ERROR)
    assert d.fix is not None and d.fix.value == fixed
    assert REAL_KEY not in d.message and REAL_KEY[:10] not in d.message and REAL_KEY[10:] not in d.message
    assert REAL_KEY not in json.dumps(d.as_dict())


@pytest.mark.parametrize(
    "key",
    [
        "sk-你的TaoToken Key",
        "<your-key>",
        "<API_KEY>",
        "your-api-key",
        "YOUR_KEY_HERE",
        "sk-...",
        "sk-xxxxxxxx",
        "changeme",
        "{{ api_key }}",
        "sk-…",
    ],
)
def test_kvs211_placeholder_key(tmp_path: Path, key: str) -> None:
    text = f'[provider]\nbase_url = "https://h/api"\napi_key = "{key}"\nmodel = "m"\n'
    diags = lint(tmp_path, CC, text)
    d = one(diags, "KVS211")
    assert (d.line, d.column, d.severity) == (3, 11, ERROR)
    assert key not in d.message


def test_kvs211_real_key_is_not_a_placeholder(tmp_path: Path) -> None:
    text = f'[provider]\nbase_url = "https://h/api"\napi_key = "{REAL_KEY}"\nmodel = "m"\n'
    assert lint(tmp_path, CC, text) == []


def _cline_with_key(key: str) -> str:
    return (
        f'{{\n  "cline.openAiBaseUrl": "https://h/api",\n  "cline.openAiApiKey": "{key}",\n'
        '  "cline.openAiModelId": "m"\n}\n'
    )


def test_kvs212_tracked_and_untracked(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    path = write(tmp_path, CLINE, _cline_with_key(REAL_KEY))
    assert kvswitch.lint(path).diagnostics == []  # untracked: nothing to say
    git(tmp_path, "add", CLINE)
    d = one(kvswitch.lint(path).diagnostics, "KVS212")
    assert (d.line, d.column, d.severity) == (3, 25, ERROR)
    assert REAL_KEY not in d.message
    assert kvswitch.lint(path, git=False).diagnostics == []  # git=False skips the query
    git(tmp_path, "commit", "-q", "-m", "oops")
    assert one(kvswitch.lint(path).diagnostics, "KVS212")


def test_kvs212_in_a_subdirectory_and_ccswitch(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    path = write(
        tmp_path, "home/.config/" + CC, f'[provider]\nbase_url = "https://h/api"\napi_key = "{REAL_KEY}"\nmodel = "m"\n'
    )
    git(tmp_path, "add", ".")
    d = one(kvswitch.lint(path).diagnostics, "KVS212")
    assert (d.line, d.column) == (3, 11)


def test_kvs212_not_for_placeholders_or_outside_git(tmp_path: Path) -> None:
    path = write(tmp_path / "nogit", CLINE, _cline_with_key(REAL_KEY))
    assert kvswitch.lint(path).diagnostics == []
    git(tmp_path, "init", "-q")
    tracked = write(tmp_path, CLINE, _cline_with_key("<your-key>"))
    git(tmp_path, "add", CLINE)
    codes = [d.code for d in kvswitch.lint(tracked).diagnostics]
    assert codes == ["KVS211"]


@pytest.mark.parametrize(
    ("key", "flagged"),
    [
        ("sk-live-abc123", True),
        ("keyring", False),
        ("env:TAO_KEY", False),
        ("env:", True),
        ("env:1BAD", True),
        ("Keyring", True),
    ],
)
def test_kvs213_profile_key_must_be_a_reference(tmp_path: Path, key: str, flagged: bool) -> None:
    text = f'active_profile = "a"\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\nkey = "{key}"\n'
    found = only(lint(tmp_path, KV, text), "KVS213")
    assert bool(found) is flagged
    if flagged:
        assert (found[0].line, found[0].column, found[0].severity) == (5, 7, ERROR)
        if key.startswith("sk-"):
            assert key not in found[0].message


def test_kvs213_every_profile(tmp_path: Path) -> None:
    text = (
        '[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\nkey = "sk-aaaaaaaaaaaa"\n\n'
        '[profiles.b]\nbase_url = "https://h/api"\nmodel = "m"\nkey = "sk-bbbbbbbbbbbb"\n'
    )
    found = only(lint(tmp_path, KV, text), "KVS213")
    assert [(d.line, d.column) for d in found] == [(4, 7), (9, 7)]
    assert found[1].message.startswith("profile 'b': ")


# -- KVS220 model ----------------------------------------------------------------------


@pytest.mark.parametrize("model", ["your-model-name", "<model>", "model-name", "YOUR_MODEL", "model", "你的模型"])
def test_kvs220_placeholder_model(tmp_path: Path, model: str) -> None:
    d = one(lint(tmp_path, CC, f'[provider]\nbase_url = "https://h/api"\nmodel = "{model}"\n'), "KVS220")
    assert (d.line, d.column, d.severity) == (3, 9, WARNING)


def test_kvs220_missing_model(tmp_path: Path) -> None:
    d = one(lint(tmp_path, CC, '[provider]\nbase_url = "https://h/api"\n'), "KVS220")
    assert (d.line, d.column) == (1, 1)  # the [provider] table
    assert "missing" in d.message
    d = one(lint(tmp_path, CC, '[provider]\nbase_url = "https://h/api"\nmodel = "  "\n'), "KVS220")
    assert (d.line, d.column) == (3, 9)
    d = one(lint(tmp_path, CLINE, '{\n  "cline.openAiBaseUrl": "https://h/api"\n}\n'), "KVS220")
    assert (d.line, d.column) == (1, 1)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "Qwen/Qwen2.5-7B-Instruct", "deepseek-chat", "tiny"])
def test_real_model_names_are_fine(tmp_path: Path, model: str) -> None:
    assert lint(tmp_path, CC, f'[provider]\nbase_url = "https://h/api"\nmodel = "{model}"\n') == []


# -- whole files -----------------------------------------------------------------------


def test_all_problems_in_one_file_are_reported_with_their_positions(tmp_path: Path) -> None:
    text = (
        "[provider]\n"  # 1
        'base_url = "http://example.com/api/"\n'  # 2
        f'api_key = " {REAL_KEY}"\n'  # 3
        'model = "your-model-name"\n'  # 4
        "\n"  # 5
        "[cache]\n"  # 6
        'mode = "split"\n'  # 7
        "chunk_size = 500\n"  # 8
        'kv_cache_dtype = "int8"\n'  # 9
        "prefix_cach = true\n"  # 10
        "\n"  # 11
        "[cache.split]\n"  # 12
        'prefill_base_url = "http://10.0.0.1:8000/"\n'  # 13
        'decode_base_url = "http://10.0.0.1:8000"\n'  # 14
        "max_transfer_concurrency = 0\n"  # 15
        "\n"  # 16
        "[request]\n"  # 17
        "temperature = 2.5\n"  # 18
        'max_tokens = "128"\n'  # 19
    )
    got = [(d.code, d.line, d.column, d.severity) for d in lint(tmp_path, CC, text)]
    assert got == [
        ("KVS201", 2, 12, WARNING),
        ("KVS203", 2, 12, WARNING),
        ("KVS210", 3, 11, ERROR),
        ("KVS220", 4, 9, WARNING),
        ("KVS103", 8, 1, INFO),
        ("KVS101", 8, 14, WARNING),
        ("KVS105", 9, 18, INFO),
        ("KVS003", 10, 1, WARNING),
        ("KVS201", 13, 20, WARNING),
        ("KVS111", 14, 19, WARNING),
        ("KVS112", 15, 28, ERROR),
        ("KVS002", 18, 15, ERROR),
        ("KVS002", 19, 14, ERROR),
    ]


def test_all_problems_in_one_cline_file(tmp_path: Path) -> None:
    text = (
        "{\n"  # 1
        "  // the user's own settings stay untouched\n"  # 2
        '  "editor.fontSize": 14,\n'  # 3
        '  "cline.openAiBaseUrl": "https://h/api?x=1",\n'  # 4
        '  "cline.openAiApiKey": "<your-key>",\n'  # 5
        '  "cline.openAiModelId": "",\n'  # 6
        '  "cline.cacheStrategy": {\n'  # 7
        '    "mode": "split",\n'  # 8
        '    "chunkSize": 96,\n'  # 9
        '    "kvCacheDtype": "fp5",\n'  # 10
        '    "prefillEndpoint": "ftp://p",\n'  # 11
        '    "kvTransferProtocol": "layerwise",\n'  # 12
        "  },\n"  # 13
        "}\n"
    )
    got = {(d.code, d.line, d.column) for d in lint(tmp_path, CLINE, text)}
    assert got == {
        ("KVS202", 4, 26),
        ("KVS211", 5, 25),
        ("KVS220", 6, 26),
        ("KVS101", 9, 18),
        ("KVS102", 9, 18),
        ("KVS103", 9, 5),
        ("KVS104", 10, 21),
        ("KVS110", 11, 24),
        ("KVS110", 7, 3),  # no decodeEndpoint: at the cacheStrategy key
        ("KVS002", 12, 27),
    }


def test_plain_vscode_settings_have_no_findings(tmp_path: Path) -> None:
    for fixture in (
        "plain-vscode.json",
        "vscode-user.json",
        "article.json",
        "article-split.json",
        "comments-everywhere.json",
        "compact.json",
        "bom.json",
        "crlf.json",
        "tabs.json",
    ):
        text = (FIXTURES / "cline" / fixture).read_bytes().decode("utf-8")
        assert lint(tmp_path, CLINE, text) == [], fixture
    assert lint(tmp_path, CLINE, "{}") == []
    assert lint(tmp_path, CLINE, "") == []
    assert lint(tmp_path, CLINE, "// nothing\n") == []


@pytest.mark.parametrize("fixture", ["article.toml", "crlf.toml", "no-split.toml", "split.toml"])
def test_ccswitch_fixtures(tmp_path: Path, fixture: str) -> None:
    diags = lint(tmp_path, CC, (FIXTURES / "ccswitch" / fixture).read_bytes().decode("utf-8"))
    if fixture == "split.toml":
        assert [(d.code, d.line, d.column) for d in diags] == [("KVS103", 8, 1)]
    else:
        assert diags == []


def test_settings_json_must_be_an_object(tmp_path: Path) -> None:
    d = one(lint(tmp_path, CLINE, "[1, 2]\n"), "KVS002")
    assert (d.line, d.column) == (1, 1)
    assert "object" in d.message


def test_lint_json_shape(tmp_path: Path) -> None:
    diags = lint(tmp_path, CC, CC_HEAD + "chunk_size = 500\n" + 'mode = "both"\n')
    assert len(diags) == 2
    for d in diags:
        shape = d.as_dict()
        assert list(shape) == ["path", "line", "column", "code", "severity", "message", "key", "fixable"]
        assert json.loads(json.dumps(shape)) == shape
        assert shape["path"] == str(tmp_path / CC)
        assert shape["severity"] in ("error", "warning", "info")
        assert isinstance(shape["line"], int) and isinstance(shape["column"], int)
    kvs101 = next(d for d in diags if d.code == "KVS101").as_dict()
    assert kvs101 == {
        "path": str(tmp_path / CC),
        "line": 4,
        "column": 14,
        "code": "KVS101",
        "severity": "warning",
        "message": kvs101["message"],
        "key": "cache.chunk_size",
        "fixable": True,
    }
    assert next(d for d in diags if d.code == "KVS002").as_dict()["fixable"] is False


def test_lint_text_without_a_path(tmp_path: Path) -> None:
    cf, result = lint_text(CC_HEAD + "chunk_size = 500\n", "ccswitch")
    assert cf is not None and result.kind == "article-ccswitch"  # the old id reads as an alias
    d = one(result.diagnostics, "KVS101")
    assert d.path is None and (d.line, d.column) == (4, 14)
    assert str(d).startswith("<string>:4:14: KVS101")


# -- keys never leak into messages -----------------------------------------------------

KEYS = [
    REAL_KEY,
    f" {REAL_KEY}",
    f"{REAL_KEY}\\n",
    "sk-你的TaoToken Key",
    "<your-key-here>",
    "sk-live-abc123def456",
]


def _key_files(key: str) -> list[tuple[str, str]]:
    return [
        (
            CLINE,
            f'{{\n  "cline.openAiBaseUrl": "http://example.com/api/",\n  "cline.openAiApiKey": "{key}",\n'
            '  "cline.openAiModelId": "m"\n}\n',
        ),
        (CC, f'[provider]\nbase_url = "http://example.com/api?k=v"\napi_key = "{key}"\nmodel = "m"\n'),
        (KV, f'active_profile = "a"\n[profiles.a]\nbase_url = "http://example.com/api"\nmodel = "m"\nkey = "{key}"\n'),
        (CC, f'[provider]\nmodel = "m"\napi_key = ["{key}"]\n'),
        (CC, f'[provider]\nmodel = "m"\napi_key = {{ value = "{key}" }}\n'),
        (CLINE, f'{{\n  "cline.openAiApiKey": ["{key}"],\n  "cline.openAiModelId": "m"\n}}\n'),
        (CC, f'[provider]\nmodel = "m"\nbase_url = "https://u:{key.strip()}@h/api/"\n'),
    ]


@pytest.mark.parametrize("key", KEYS)
def test_no_message_contains_the_key(tmp_path: Path, key: str) -> None:
    git(tmp_path, "init", "-q")
    secret = key.replace("\\n", "").strip()
    fragments = {secret} | ({secret[3:]} if len(secret) > 8 else set())
    seen_codes: set[str] = set()
    for i, (name, text) in enumerate(_key_files(key)):
        path = write(tmp_path / str(i), name, text)
        git(tmp_path, "add", ".")
        for d in kvswitch.lint(path).diagnostics:
            seen_codes.add(d.code)
            for shown in (d.message, str(d), json.dumps(d.as_dict(), ensure_ascii=False)):
                for fragment in fragments:
                    assert fragment not in shown, (d.code, shown)
    assert seen_codes & {"KVS002", "KVS203", "KVS210", "KVS211", "KVS212", "KVS213"}


def test_kvs002_on_a_key_field_never_shows_the_input(tmp_path: Path) -> None:
    d = one(lint(tmp_path, CC, '[provider]\nmodel = "m"\napi_key = 12345678901\n'), "KVS002")
    assert "12345678901" not in d.message
    assert (d.line, d.column) == (3, 11)


# -- severity overrides stay within the table ------------------------------------------


def test_default_severities_match_the_codes_table(tmp_path: Path) -> None:
    for code, ex in EXAMPLES.items():
        if code != "KVS112":  # KVS112 is an error below 1 and a warning above 8
            assert ex.severity is CODES[code][0], code


# -- values echoed in messages are shown safely --------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (CC, f'[provider]\nbase_url = "{REAL_KEY}"\nmodel = "m"\n'),  # the key pasted into base_url
        (CC, f'[provider]\nmodel = "m"\n[cache]\nmode = "{REAL_KEY}"\n'),  # … into mode
        (CC, f'[provider]\nmodel = "m"\n[cache]\nkv_cache_dtype = "{REAL_KEY}"\n'),
        (CC, f'[provider]\nmodel = "{REAL_KEY}x-your-model"\n'),
        (CLINE, f'{{\n  "cline.openAiModelId": "m",\n  "cline.cacheStrategy": {{"mode": "{REAL_KEY}"}}\n}}\n'),
        (CLINE, f'{{\n  "cline.openAiBaseUrl": "https://u:{REAL_KEY}@h/api",\n  "cline.openAiModelId": "m"\n}}\n'),
        (
            KV,
            f'[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n[profiles.a.split]\nprefill_base_url = '
            f'"{REAL_KEY}"\n',
        ),
        (KV, f'active_profile = "{REAL_KEY}"\n[profiles.a]\nbase_url = "https://h/api"\nmodel = "m"\n'),
    ],
)
def test_a_key_echoed_in_a_message_is_masked(tmp_path: Path, name: str, text: str) -> None:
    diags = lint(tmp_path, name, text)
    assert diags, text
    for d in diags:
        assert REAL_KEY not in d.message and REAL_KEY[8:] not in d.message, str(d)


def test_a_key_the_file_holds_is_masked_wherever_a_message_echoes_it(tmp_path: Path) -> None:
    short = "abc123xyz"  # too plain to look like a key, but it is this file's key
    text = f'[provider]\nbase_url = "{short}"\napi_key = "{short}"\nmodel = "m"\n'
    d = one(lint(tmp_path, CC, text), "KVS202")
    assert short not in d.message


@pytest.mark.parametrize("bad", ["\x1b[31m", "\u202e", "\n", "\u200b"])
def test_values_and_names_in_messages_never_carry_terminal_controls(tmp_path: Path, bad: str) -> None:
    esc = json.dumps(bad)[1:-1]
    text = (
        f'active_profile = "x{esc}"\n[profiles."p{esc}"]\nbase_url = "https://h/a{esc}"\nmodel = "m{esc}your"\n'
        f'[profiles."p{esc}".cache]\nkv_cache_dtype = "f{esc}"\n'
    )
    diags = lint(tmp_path, KV, text)
    assert {"KVS002", "KVS006", "KVS202", "KVS104", "KVS220"} <= {d.code for d in diags}
    for d in diags:
        assert bad not in d.message and bad not in str(d), str(d)


@pytest.mark.parametrize("char", ["\u200b", "\ufeff", "\u00a0", "\u2060", "\u3000"])
def test_kvs210_a_key_with_an_invisible_character_inside(tmp_path: Path, char: str) -> None:
    key = REAL_KEY[:10] + char + REAL_KEY[10:]
    text = f'[provider]\nbase_url = "https://h/api"\napi_key = "{key}"\nmodel = "m"\n'
    d = one(lint(tmp_path, CC, text), "KVS210")
    assert d.severity is ERROR and f"U+{ord(char):04X}" in d.message
    assert d.fix is not None and d.fix.value == REAL_KEY
    assert REAL_KEY[10:] not in d.message


def test_each_modes_url_in_a_profile_is_checked_like_the_base_url(tmp_path: Path) -> None:
    base = (FIXTURES / "kvswitch" / "kvswitch.toml").read_text()
    good = base + '\n[profiles.x]\nbase_url = "https://h/v1"\nmodel = "m"\nmerged = { url = "https://m/v1" }\n'
    assert [d for d in lint(tmp_path, KV, good) if d.code in ("KVS201", "KVS202")] == []
    bad = base + (
        '\n[profiles.x]\nbase_url = "https://h/v1"\nmodel = "m"\n'
        'merged = { url = "http://h:99999/v1?x=1" }\nsplit = { url = "https://r/v1/" }\n'
    )
    found = {(d.code, d.key_path) for d in lint(tmp_path, KV, bad)}
    assert ("KVS202", ("profiles", "x", "merged", "url")) in found
    assert ("KVS201", ("profiles", "x", "split", "url")) in found
