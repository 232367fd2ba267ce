"""``kvswitch.redact``: a key is masked in every form a text can carry it (D-7) — raw, JSON- or
TOML-escaped in any legal way, URL-encoded, base64 (``Basic user:key``), hex, HTML references,
nested — and so is any run of eight of its characters; ordinary text is left alone. Also the
``switch --dry-run`` diff of a key written with escapes, through the real CLI."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import urllib.parse
from pathlib import Path

import pytest

from kvswitch.cli import main
from kvswitch.redact import Redactor, looks_like_key, mask, redact, redact_likely
from tests.conftest import FIXTURES

KEY = "sk-REDACT/0123456789+abcdefXYZ"
OTHER = "gsk_second0123456789ABCDEFGH"


def pieces(key: str) -> list[str]:
    return [key[i : i + 8] for i in range(len(key) - 7)]


def unescaped_views(text: str) -> list[str]:
    """The text as it is, JSON-unescaped, percent-decoded, and both (an independent oracle)."""

    def unjson(t: str) -> str:
        t = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), t)
        return re.sub(r"\\+([/\"\\])", r"\1", t)

    views = [
        text,
        unjson(text),
        urllib.parse.unquote(text),
        urllib.parse.unquote(unjson(text)),
        unjson(urllib.parse.unquote(text)),
    ]
    for run in re.findall(r"[A-Za-z0-9+/_-]{12,}", text):
        run = run.replace("-", "+").replace("_", "/")
        for offset in range(4):
            chunk = run[offset:]
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            with contextlib.suppress(ValueError):
                views.append(base64.b64decode(chunk).decode("latin-1"))
    return views


def assert_masked(text: str, *keys: str) -> None:
    leaked = sorted({p for k in keys for v in unescaped_views(text) for p in pieces(k) if p in v})
    assert not leaked, (leaked, text)


def _unicode_all(s: str, upper: bool) -> str:
    return "".join(f"\\u{ord(c):04X}" if upper else f"\\u{ord(c):04x}" for c in s)


FORMS = {
    "raw": KEY,
    "bearer": f"Bearer {KEY}",
    "json-dumps": json.dumps(KEY)[1:-1],
    "json-slash": KEY.replace("/", "\\/"),
    "json-unicode-upper": _unicode_all(KEY, upper=True),
    "json-unicode-lower": _unicode_all(KEY, upper=False),
    "json-unicode-mixed": "".join(f"\\u{ord(c):04x}" if i % 3 == 0 else c for i, c in enumerate(KEY)),
    "json-unicode-mixed-case-hex": "".join(f"\\u{ord(c):04x}".upper().replace("\\U", "\\u") for c in KEY),
    "json-in-json": json.dumps(json.dumps({"auth": f"Bearer {KEY}"})),
    "toml-long-unicode": "".join(f"\\U{ord(c):08x}" for c in KEY),
    "percent": urllib.parse.quote(KEY, safe=""),
    "percent-plus": urllib.parse.quote_plus(f"Bearer {KEY}"),
    "percent-every-char-lower": "".join(f"%{b:02x}" for b in KEY.encode()),
    "percent-twice": urllib.parse.quote(urllib.parse.quote(KEY, safe=""), safe=""),
    "percent-in-json": urllib.parse.quote(KEY, safe="").replace("%", "\\u0025"),
    "basic": "Basic " + base64.b64encode(f"user:{KEY}".encode()).decode(),
    "basic-long-user": "Basic " + base64.b64encode(f"someone@example.org:{KEY}".encode()).decode(),
    "base64-key": base64.b64encode(KEY.encode()).decode(),
    "base64url": base64.urlsafe_b64encode(f"u:{KEY}".encode()).decode().rstrip("="),
    "base64-of-base64": base64.b64encode(base64.b64encode(KEY.encode())).decode(),
    "hex": KEY.encode().hex(),
    "html-decimal": "".join(f"&#{ord(c)};" for c in KEY),
    "html-hex": "".join(f"&#x{ord(c):X};" for c in KEY),
    "python-bytes-repr": repr(KEY.encode()),
    "cut-at-the-end": KEY[:14],
    "cut-at-the-start": KEY[-12:],
    "cut-in-json-unicode": _unicode_all(KEY, upper=True)[: 6 * 11],
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_of_a_key_is_masked(form: str) -> None:
    text = f'{{"error": "you sent {FORMS[form]} (rejected)"}}'
    out = redact(text, [KEY])
    assert_masked(out, KEY)
    assert out.startswith('{"error": "you sent ') and out.endswith(' (rejected)"}')


def test_the_mask_names_the_key_and_leaves_the_rest() -> None:
    assert redact(f"key={KEY}; other=value", [KEY]) == f"key={mask(KEY)}; other=value"
    assert mask(KEY) == "sk-…fXYZ" and mask("short") == "…"


def test_several_keys_and_whitespace_variants() -> None:
    text = f"a {KEY} b {OTHER} c gsk_second012345 d"
    out = redact(text, [KEY, f"  {OTHER}\n", None, ""])
    assert_masked(out, KEY, OTHER)
    assert out == "a sk-…fXYZ b gsk…EFGH c gsk…EFGH d"  # 16 characters of it are a piece of it, masked too


def test_ordinary_text_is_untouched() -> None:
    text = (
        "HTTP 401: invalid api key; see https://example.org/docs?x=%20y and \\u00e9t\\u00e9, "
        "Basic realm, dGhpcyBpcyBqdXN0IHRleHQ= and deadbeefcafebabe0123 " * 20
    )
    assert redact(text, [KEY, OTHER]) == text
    assert redact(text, []) == text and redact("", [KEY]) == ""


def test_short_keys_are_only_masked_whole() -> None:
    assert redact("abc abcd xabcdx", ["abcd"]) == "abc … x…x"
    assert redact("ab", ["ab"]) == "ab"  # too short to look for


def test_data_redacts_every_string_of_a_report() -> None:
    report = {
        "modes": {"merged": {"failure_causes": {f"HTTP 401: {FORMS['json-slash']}": 2}, "n": 1.5}},
        "notes": [FORMS["basic"], 3, None],
        KEY: True,
    }
    out = Redactor([KEY]).data(report)
    assert_masked(json.dumps(out, ensure_ascii=False), KEY)
    assert out["modes"]["merged"]["n"] == 1.5 and out["notes"][1:] == [3, None]


def test_holds() -> None:
    r = Redactor([KEY])
    assert r.holds(FORMS["percent-in-json"]) and not r.holds("nothing")
    assert not Redactor([]) and not Redactor([None, ""]).holds(KEY)


@pytest.mark.parametrize(
    "value",
    [
        "sk-abcdef0123456789",
        "gsk_0123456789abcdefABCD",
        "Bearer abc.def.ghi",
        "AIzaSyA0123456789abcdefghijklmnopq",
        "0123456789abcdef0123456789abcdef",
        "hf_AbCdEfGhIjKlMnOpQrStUv",
    ],
)
def test_looks_like_key(value: str) -> None:
    assert looks_like_key(value)


@pytest.mark.parametrize(
    "value",
    [
        "merged",
        "split",
        "http://127.0.0.1:8000/v1",
        "/home/me/.config/x.json",
        "gpt-4o-mini",
        "kvswitch-lab-tiny",
        "Qwen/Qwen2.5-7B-Instruct",
        "512",
        "",
    ],
)
def test_does_not_look_like_key(value: str) -> None:
    assert not looks_like_key(value)


def test_redact_likely_masks_a_pasted_key_in_a_message() -> None:
    msg = "cache.mode must be 'merged' or 'split', got 'sk-abcdef0123456789'"
    assert redact_likely(msg) == "cache.mode must be 'merged' or 'split', got 'sk-…6789'"
    assert redact_likely("base_url: got 'Bearer sk-abcdef0123456789'") == "base_url: got 'Bearer …'"
    plain = "chunk_size 500 is not a multiple of 64 (http://127.0.0.1:8000/v1, gpt-4o-mini)"
    assert redact_likely(plain) == plain


# -- switch --dry-run, through the CLI --------------------------------------------------------------


@pytest.mark.parametrize("written", ["json-slash", "json-unicode-mixed", "json-unicode-upper"])
def test_dry_run_diff_masks_a_key_written_with_escapes(
    written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cline = tmp_path / ".cline" / "settings.json"
    cline.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", cline)
    text = cline.read_text().replace(
        '    "cline.cacheStrategy": {', f'    "cline.openAiApiKey": "{FORMS[written]}",\n    "cline.cacheStrategy": {{'
    )
    cline.write_text(text)
    assert main(["switch", "split", "--dry-run", str(cline)]) == 0
    out = capsys.readouterr().out
    assert '"cline.openAiApiKey": "sk-…fXYZ"' in out  # the line is in the diff, masked
    assert_masked(out, KEY)


def test_another_key_of_the_same_vendor_is_not_taken_for_this_one() -> None:
    """``sk-live-`` is every such key's prefix: a piece inside it marks no key, so another key
    keeps its own mask and the masked key keeps its prefix whole (not ``ssk-…``)."""
    from kvswitch.redact import Redactor

    mine, theirs = "sk-live-7f3kQ9zR2mX8vB1nL4aA", "sk-live-Jw5pT0cY6hG2dS9eK3bB"
    out = Redactor([mine]).text(f"a {theirs} b {mine} c sk-live-7f3kQ9zR d")
    assert out == f"a {theirs} b sk-…L4aA c sk-…L4aA d"
