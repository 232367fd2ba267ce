"""kvswitch.validate: the one validation every entry point uses (URLs, names, keys, values) and
the safe showing of a value in a message."""

from __future__ import annotations

import pytest

from kvswitch.keys import InvalidKeyError, check_key
from kvswitch.validate import (
    InvalidValueError,
    check_name,
    check_url,
    clean_url,
    key_problem,
    name_problem,
    profile_value,
    shell_word,
    show,
    url_problem,
)

KEY = "sk-live-7f3kQ9zR2mX8vB1nL4aA"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("file:///etc/passwd", "only http:// and https://"),
        ("javascript:alert(1)", "only http:// and https://"),
        ("ftp://h/api", "only http:// and https://"),
        ("taotoken.net/api", "only http:// and https://"),
        ("http://h:99999/v1", "port"),
        ("http://h:0/v1", "port"),
        ("http://h:abc/v1", "port"),
        ("http://h/v1\r\nX-Evil: 1", "U+000D"),
        ("http://h/v1\n", "U+000A"),
        ("http://h/v\x1b[31m1", "U+001B"),
        ("http://h\u200b/v1", "U+200B"),
        ("http://h/v1\ufeff", "U+FEFF"),
        ("http://h /v1", "U+0020"),
        ("http://h/v1?x=1", "query string"),
        ("http://h/v1#top", "query string or fragment"),
        ("http://h/v1?", "query string"),
        (f"http://user:{KEY}@h/v1", "user name or password"),
        ("http://[::1/v1", "does not parse"),
        ("http:///v1", "no host"),
        ("http://bücher.example/v1", "non-ASCII"),
    ],
)
def test_an_address_that_is_not_a_bare_http_url_is_refused_with_the_reason(url: str, says: str) -> None:
    problem = url_problem(url)
    assert problem is not None and says in problem
    with pytest.raises(InvalidValueError) as info:
        check_url(url, "--base-url")
    assert info.value.code == "KVS202"
    message = info.value.message
    assert KEY not in message and "\r" not in message and "\n" not in message and "\x1b" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "https://taotoken.net/api",
        "http://[::1]:9/",
        "https://h:65535",
        "http://localhost/v1/",
    ],
)
def test_bare_http_addresses_pass(url: str) -> None:
    assert url_problem(url) is None


def test_a_trailing_slash_is_taken_off_with_a_note() -> None:
    assert clean_url("https://h/api/") == ("https://h/api", clean_url("https://h/api/")[1])
    url, note = clean_url("https://h/api//", "base_url")
    assert url == "https://h/api" and note is not None and note.code == "KVS201"
    assert clean_url("https://h/api") == ("https://h/api", None)
    assert clean_url("http://h/")[0] == "http://h"


NAMES = ["A", "default", "work-2", "my.profile_1", "Ελληνικά", "日本語", "हिन्दी", "7", "a" * 64]


@pytest.mark.parametrize("name", NAMES)
def test_names_of_letters_digits_and_dot_dash_underscore_are_allowed(name: str) -> None:
    assert name_problem(name) is None
    assert check_name(name) == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "empty"),
        (".", "start with a letter or digit"),
        ("..", "start with a letter or digit"),
        ("../../x", "start with a letter or digit"),
        ("-x", "start with a letter or digit"),
        ("_x", "start with a letter or digit"),
        ("a/b", "'/'"),
        ("a b", "a space"),
        ("a\nb", "'\\x0a'"),
        ("a\x1b[31mred", "'\\x1b'"),
        ("a\u200bb", "'\\u200b'"),
        ("a\u202eb", "'\\u202e'"),
        ("a" * 65, "65 characters"),
        ("a" * 5000, "5000 characters"),
    ],
)
def test_other_names_are_refused_and_shown_safely(name: str, says: str) -> None:
    problem = name_problem(name)
    assert problem is not None and says in problem
    with pytest.raises(InvalidValueError) as info:
        check_name(name, "client")
    message = info.value.message
    assert message.startswith("client name ")
    assert not any(c in message for c in "\n\x1b\u200b\u202e")
    assert len(message) < 300  # a 5,000-character name is cut


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("sk-abc\u200bdefghijklmnop", "U+200B"),  # zero width space
        ("sk-abc\ufeffdefghijklmnop", "U+FEFF"),  # byte order mark
        ("sk-abc\u00a0defghijklmnop", "U+00A0"),  # no-break space
        ("sk-abc\u2028defghijklmnop", "U+2028"),  # line separator
        ("sk-abc\u2029defghijklmnop", "U+2029"),  # paragraph separator
        ("sk-abc\u3000defghijklmnop", "U+3000"),  # ideographic space
        ("sk-abc\x00defghijklmnop", "U+0000"),
        ("sk-abc\x1bdefghijklmnop", "U+001B"),
        ("sk-abc\u2060defghijklmnop", "U+2060"),  # word joiner (Cf)
        ("sk-abc defghijklmnop", "U+0020"),
        ("sk-abcdéfghijklmnop", "non-ASCII"),
        (" sk-abcdefghijklmnop", "leading/trailing"),
        ("sk-abcdefghijklmnop\n", "line break"),
    ],
)
def test_keys_with_any_space_or_format_character_are_refused_without_echo(key: str, says: str) -> None:
    problem = key_problem(key)
    assert problem is not None and says in problem and "KVS210" in problem
    with pytest.raises(InvalidKeyError) as info:
        check_key(key)
    assert "abcd" not in str(info.value) and "ghijk" not in str(info.value)


def test_show_escapes_cuts_and_masks() -> None:
    assert show("a\x1b[31mred") == "'a\\x1b[31mred'"
    assert show("x\u200by") == "'x\\u200by'"
    assert show("line\nbreak") == "'line\\x0abreak'"
    assert show("日本語 ok") == "'日本語 ok'"
    long = show("a" * 5000)
    assert long.endswith("…' (5000 characters)") and len(long) < 120
    assert KEY not in show(KEY) and show(KEY) == "'sk-…L4aA'"
    assert KEY not in show(f"Bearer {KEY}") and KEY not in show(f"got {KEY} here")
    assert show("it's") == "'it\\'s'"
    assert show(512) == "512" and show(None) == "None"


def test_shell_word_gives_a_hint_that_can_be_pasted() -> None:
    assert shell_word("work") == "work"
    assert shell_word("a b") == "'a b'"
    assert shell_word("a\x1b[31m") == "$'a\\x1b[31m'"
    assert shell_word("it's\n") == "$'it\\'s\\x0a'"


@pytest.mark.parametrize(
    ("path", "value", "expected", "note"),
    [
        (("base_url",), "http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1", "KVS201"),
        (("split", "decode_base_url"), "http://d:2/", "http://d:2", "KVS201"),
        (("merged", "chunk_size"), 500, 512, "KVS101"),
        (("merged", "chunk_size"), 96, 128, "KVS101"),
        (("merged", "chunk_size"), 1024, 1024, None),
        (("key",), "env:MY_KEY", "env:MY_KEY", None),
        (("model",), "Qwen2.5-Coder-32B", "Qwen2.5-Coder-32B", None),
        (("request", "temperature"), 0.7, 0.7, None),
    ],
)
def test_profile_values_are_normalised_as_lint_would_fix_them(
    path: tuple[str, ...], value: object, expected: object, note: str | None
) -> None:
    got, said = profile_value(path, value)
    assert got == expected
    assert (said.code if said else None) == note


@pytest.mark.parametrize(
    ("path", "value", "code"),
    [
        (("base_url",), "file:///etc/passwd", "KVS202"),
        (("split", "prefill_base_url"), "javascript:x", "KVS110"),
        (("split", "probe_url"), "http://h:99999", "KVS202"),
        (("split", "url"), "ftp://router/v1", "KVS202"),
        (("merged", "url"), "http://h:99999/v1", "KVS202"),
        (("key",), KEY, "KVS213"),
        (("model",), "m\x1b[31m", "KVS002"),
        (("model",), "  ", "KVS002"),
        (("provider",), "p\u200b", "KVS002"),
        (("model",), "m\udcff", "KVS002"),  # a byte that was not UTF-8 on the command line
        (("request", "temperature"), float("nan"), "KVS002"),
        (("request", "timeout_seconds"), float("inf"), "KVS002"),
        (("request", "max_tokens"), 2**70, "KVS002"),
        (("split", "max_transfer_concurrency"), 0, "KVS112"),
    ],
)
def test_profile_values_lint_calls_errors_are_refused_with_lints_code(
    path: tuple[str, ...], value: object, code: str
) -> None:
    with pytest.raises(InvalidValueError) as info:
        profile_value(path, value)
    assert info.value.code == code
    assert KEY not in info.value.message and "\x1b" not in info.value.message
