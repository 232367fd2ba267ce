"""Masking keys wherever text leaves kvswitch (diffs, reports, logs): ``sk-…abcd``.

A key is found in whatever form a text carries it, not only as itself: the text is first
decoded into a plain reading with a map back to its own offsets (JSON and TOML escapes such as
``\\/``, ``\\u0073`` in any case, ``\\U…``, ``\\x73``; percent-encoding, also doubled or
inside JSON; HTML character references), up to three levels deep. Runs of base64 (also the
URL-safe alphabet; ``Basic`` credentials are ``user:key`` in base64) and of hex digits are
decoded too. Every stretch of eight or more characters of a key that shows in the plain reading
is masked in the original text, so neither a whole key nor a cut-off piece of one gets out (the
mask itself shows three characters and four, never eight in a row).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["PIECE", "Redactor", "looks_like_key", "mask", "redact", "redact_likely"]

PIECE = 8
"""A run of this many characters of a key is masked wherever it shows; the mask itself shows 3 + 4."""

_SHORTEST = 4
"""Keys shorter than this are too short to look for (they would mask ordinary words)."""

_DEPTH = 3
"""Levels of escaping undone (JSON in JSON, percent-encoding inside JSON…)."""

_SHORT_ESCAPES = {
    "/": "/",
    '"': '"',
    "\\": "\\",
    "'": "'",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "0": "\0",
    "e": "\x1b",
}
_UNIT = re.compile(
    r"""\\+(?:u(?P<u>[0-9A-Fa-f]{4})(?:\\+u(?P<u2>[0-9A-Fa-f]{4}))?
            |U(?P<U>[0-9A-Fa-f]{8})
            |x(?P<x>[0-9A-Fa-f]{2})
            |(?P<s>[/"\\'bfnrte0]))
       |(?P<pct>(?:%(?:25)*[0-9A-Fa-f]{2})+)
       |&\#(?:(?P<dec>[0-9]{1,7})|[xX](?P<hex>[0-9A-Fa-f]{1,6}));""",
    re.VERBOSE,
)
_MAY_ESCAPE = re.compile(r"[\\%&]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{16,}")
_PCT_BYTE = re.compile(r"%(?:25)*([0-9A-Fa-f]{2})")


def mask(key: str) -> str:
    """A key shown safely: its first three and last four characters, when it is long enough."""
    key = key.strip()
    if len(key) < 12:
        return "…"
    return f"{key[:3]}…{key[-4:]}"


class _Reading:
    """Text with one level of escapes undone, and a map from its offsets back to the text's."""

    __slots__ = ("_canon", "_len", "_orig", "_plain", "text")

    def __init__(self, source: str) -> None:
        parts: list[str] = []
        self._canon: list[int] = []  # where each segment starts in the reading
        self._orig: list[int] = []  # where it starts in the source
        self._len: list[int] = []  # its length in the source
        self._plain: list[bool] = []  # a plain segment maps one to one
        at = 0
        pos = 0
        for m in _UNIT.finditer(source):
            if m.start() > pos:
                self._add(at, pos, m.start() - pos, True)
                parts.append(source[pos : m.start()])
                at += m.start() - pos
            decoded = _decode_unit(m)
            if decoded:
                self._add(at, m.start(), m.end() - m.start(), False)
                parts.append(decoded)
                at += len(decoded)
            pos = m.end()
        if pos < len(source):
            self._add(at, pos, len(source) - pos, True)
            parts.append(source[pos:])
        self.text = "".join(parts)

    def _add(self, canon: int, orig: int, length: int, plain: bool) -> None:
        self._canon.append(canon)
        self._orig.append(orig)
        self._len.append(length)
        self._plain.append(plain)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source span that the reading's ``[start, end)`` came from."""
        i = bisect.bisect_right(self._canon, start) - 1
        j = bisect.bisect_right(self._canon, end - 1) - 1
        a = self._orig[i] + (start - self._canon[i] if self._plain[i] else 0)
        b = self._orig[j] + (end - self._canon[j] if self._plain[j] else self._len[j])
        return a, b


def _decode_unit(m: re.Match[str]) -> str:
    """The characters one escape stands for ('' when it stands for none)."""
    try:
        if m["u"] is not None:
            hi = int(m["u"], 16)
            if m["u2"] is not None:
                lo = int(m["u2"], 16)
                if 0xD800 <= hi < 0xDC00 and 0xDC00 <= lo < 0xE000:
                    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                return chr(hi) + chr(lo)
            return chr(hi)
        if m["U"] is not None:
            return chr(int(m["U"], 16))
        if m["x"] is not None:
            return chr(int(m["x"], 16))
        if m["s"] is not None:
            return _SHORT_ESCAPES[m["s"]]
        if m["pct"] is not None:
            raw = bytes(int(h, 16) for h in _PCT_BYTE.findall(m["pct"]))
            return raw.decode("utf-8", "replace")
        if m["dec"] is not None:
            return chr(int(m["dec"]))
        return chr(int(m["hex"], 16))
    except (ValueError, OverflowError):
        return ""


_PREFIX = re.compile(r"(?:[A-Za-z][A-Za-z0-9]{0,11}[-_]){1,3}")


def _public_prefix(key: str) -> int:
    """Length of a key's vendor prefix (``sk-``, ``sk-live-``, ``sk-ant-api03-``): a piece
    that lies wholly inside it is shared by every key of that vendor, so it marks none."""
    m = _PREFIX.match(key)
    return min(m.end(), 16) if m else 0


class Redactor:
    """Masks the given keys in any text, in every form it can take (see the module's notes).

    Build one per set of keys and use it for every text of a run (the patterns are made once)."""

    def __init__(self, keys: Iterable[str | None]) -> None:
        self._owner: dict[str, str] = {}  # a piece of a key → that key
        self._lead: dict[str, str] = {}  # a piece → what comes before it in its key
        seen: set[str] = set()
        for key in keys:
            if not key:
                continue
            for variant in (key.strip(), "".join(key.split())):  # whitespace around a key is not the key
                if len(variant) < _SHORTEST or variant in seen:
                    continue
                seen.add(variant)
                n = min(PIECE, len(variant))
                public = _public_prefix(variant)
                for i in range(len(variant) - n + 1):
                    if i + n <= public < len(variant):
                        continue  # "sk-live-" alone is every such key's, not this one's
                    if variant[i : i + n] not in self._owner:
                        self._owner[variant[i : i + n]] = key
                        self._lead[variant[i : i + n]] = variant[:i]
        self._pieces = sorted(self._owner, key=len, reverse=True)
        self._shortest = min((len(p) for p in self._pieces), default=0)
        self._pattern = re.compile("(?=(" + "|".join(map(re.escape, self._pieces)) + "))") if self._pieces else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        return self.text(text)

    def text(self, text: str) -> str:
        """``text`` with every key, and every piece of one, replaced by the key's mask."""
        if self._pattern is None or not text:
            return text
        spans = self._find(text, _DEPTH)
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for start, end, key in spans:
            out.append(text[pos:start])
            out.append(mask(key))
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def data(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, strings…) with every string in it redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def holds(self, text: str) -> bool:
        """Whether ``text`` holds a key, or a piece of one, in any form."""
        return bool(self._pattern is not None and text and self._find(text, _DEPTH))

    # -- finding ---------------------------------------------------------------------------

    def _find(self, text: str, depth: int) -> list[tuple[int, int, str]]:
        """Merged source spans that show a key, each with the key it shows."""
        found: list[tuple[int, int, str]] = []
        readings: list[_Reading] = []
        current = text
        self._direct(current, found, readings)
        if depth <= 0:
            return _merge(found)
        self._encoded(current, found, readings, depth)
        level = 0
        while level < depth and _MAY_ESCAPE.search(current):
            reading = _Reading(current)
            if reading.text == current:
                break
            readings.append(reading)
            current = reading.text
            self._direct(current, found, readings)
            self._encoded(current, found, readings, depth)
            level += 1
        return _merge(found)

    def _direct(self, text: str, found: list[tuple[int, int, str]], readings: list[_Reading]) -> None:
        assert self._pattern is not None
        if len(text) < self._shortest or not any(p in text for p in self._pieces):
            return
        for m in self._pattern.finditer(text):
            piece = m.group(1)
            begin, lead = m.start(), self._lead[piece]
            if lead and text.endswith(lead, 0, begin):
                begin -= len(lead)  # the key's prefix goes with it
            start, end = _back(readings, begin, m.start() + len(piece))
            found.append((start, end, self._owner[piece]))

    def _encoded(self, text: str, found: list[tuple[int, int, str]], readings: list[_Reading], depth: int) -> None:
        """Runs of base64 or hex whose decoded bytes show a key: the whole run is masked."""
        if depth <= 0:
            return
        for m in _BASE64_RUN.finditer(text):
            run = m.group(0).rstrip("=").replace("-", "+").replace("_", "/")
            for offset in range(4):
                chunk = run[offset:]
                chunk = chunk[: len(chunk) - len(chunk) % 4]
                if len(chunk) < 12:
                    break
                try:
                    decoded = base64.b64decode(chunk, validate=True).decode("latin-1")
                except (binascii.Error, ValueError):
                    continue
                key = self._key_in(decoded, depth - 1)
                if key is not None:
                    start, end = _back(readings, m.start(), m.end())
                    found.append((start, end, key))
                    break
        for m in _HEX_RUN.finditer(text):
            run = m.group(0)
            for offset in (0, 1):
                chunk = run[offset:]
                chunk = chunk[: len(chunk) - len(chunk) % 2]
                decoded = bytes.fromhex(chunk).decode("latin-1")
                key = self._key_in(decoded, depth - 1)
                if key is not None:
                    start, end = _back(readings, m.start(), m.end())
                    found.append((start, end, key))
                    break

    def _key_in(self, decoded: str, depth: int) -> str | None:
        if sum(c.isprintable() for c in decoded) < 0.9 * len(decoded):
            depth = 0  # binary, not text: only a key as itself can be in it
        spans = self._find(decoded, depth)
        return spans[0][2] if spans else None


def _back(readings: list[_Reading], start: int, end: int) -> tuple[int, int]:
    for reading in reversed(readings):
        start, end = reading.span(start, end)
    return start, end


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for start, end, key in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end, out[-1][2])
            continue
        out.append((start, end, key))
    return out


@lru_cache(maxsize=32)
def _redactor(keys: tuple[str, ...]) -> Redactor:
    return Redactor(keys)


def redact(text: str, keys: Iterable[str | None]) -> str:
    """``text`` with every key (in any form, also a piece of eight or more characters of one)
    replaced by its mask."""
    chosen = tuple(sorted({k for k in keys if k and k.strip()}))
    if not chosen or not text:
        return text
    return _redactor(chosen).text(text)


_KNOWN_PREFIX = re.compile(
    r"^(?:sk|pk|rk|gsk|xai|hf|ghp|gho|ghu|ghs|github_pat|glpat|key|api|nvapi)[-_][A-Za-z0-9_\-.]{8,}$"
    r"|^AKIA[A-Z0-9]{12,}$|^AIza[A-Za-z0-9_\-]{20,}$"
)
_GENERIC = re.compile(r"^[A-Za-z0-9_\-]{24,}$|^[A-Za-z0-9+/]{30,}={0,2}$")
_TOKEN = re.compile(r"""[^\s'"`,;()<>\[\]{}\x00-\x1f\x7f]+""")  # a control character ends a word
_AUTH = re.compile(r"(?i:\bbearer)\s+[^\s'\"`,;]{8,}|\bBasic\s+[A-Za-z0-9+/]{12,}={0,2}")


def looks_like_key(value: str) -> bool:
    """Whether ``value`` looks like an API key (``sk-…``, ``Bearer …``, a long token of letters and
    digits), so that a message echoing it must mask it. URLs, paths and words do not."""
    value = value.strip()
    if _AUTH.fullmatch(value):
        return True
    if not value or any(c.isspace() for c in value):
        return False
    if _KNOWN_PREFIX.match(value):
        return True
    return bool(_GENERIC.match(value)) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def redact_likely(text: str) -> str:
    """``text`` with every word that looks like a key (:func:`looks_like_key`) masked; for messages
    that echo a value kvswitch does not know to be a key (a key pasted into the wrong field)."""
    text = _AUTH.sub(lambda m: m.group(0).split()[0] + " …", text)
    return _TOKEN.sub(lambda m: mask(m.group(0)) if looks_like_key(m.group(0)) else m.group(0), text)
