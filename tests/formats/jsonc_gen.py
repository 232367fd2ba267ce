"""Random JSONC for the JSONC tests: values, and text that spells them in VS Code's dialect.

``render`` writes a value with random layout (compact or one item a line, 2/4 spaces or
tabs), random ``//`` and ``/* */`` comments between tokens, random trailing commas, random
string escapes (``\\uXXXX``, surrogate pairs, ``\\/``), random number spellings, LF / CRLF /
CR line endings, an optional BOM, and optionally an earlier duplicate of some keys (the
last one wins, so the value is unchanged). ``random_edit`` picks an edit that makes sense
for a value. Everything takes a ``random.Random``, so a seed reproduces a document.
``same`` compares values kind for kind; ``json5_value`` reads text with the json5 package.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import json5
from hypothesis import strategies as st

from kvswitch.edits import Delete, Edit, Insert, Set

SAFE_INT = 2**53 - 1  # JavaScript's exact integers: the peer reads numbers as doubles
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_COMMENT_CHARS = "abc xyz 0129 \"'{}[]:,/*\\ é ß 中 🙂\t"


def _key_ok(key: str) -> bool:
    return key != "__proto__"  # JavaScript's parse() treats it as the prototype


# -- values -----------------------------------------------------------------------------------

keys = st.text(max_size=6).filter(_key_ok)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE_INT, SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(keys, values, max_size=5)


def random_text(rng: random.Random, max_size: int = 8) -> str:
    pools = (
        "abcdefghijklmnopqrstuvwxyz",
        "ABC0123456789 -_.",
        "\"\\/'\t\n\r\x00\x01\x1f\x7f",
        "éßøüñ中文日本語한국어",
        "\u2028\u2029\u00a0\ufeff",
        "🙂😀𝄞",
    )
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, max_size)))


def random_scalar(rng: random.Random) -> Any:
    kind = rng.randrange(7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-1000, 1000)
    if kind == 3:
        return rng.randint(-SAFE_INT, SAFE_INT)
    if kind == 4:
        return rng.choice([0.5, -2.25, 1e-7, 6.02e23, 1.7976931348623157e308, 5e-324, -0.0, 0.1 + 0.2])
    if kind == 5:
        return rng.uniform(-1e6, 1e6)
    return random_text(rng)


def random_value(rng: random.Random, depth: int = 0, max_depth: int = 4) -> Any:
    roll = rng.random()
    if depth >= max_depth or roll < 0.45:
        return random_scalar(rng)
    if roll < 0.65:
        return [random_value(rng, depth + 1, max_depth) for _ in range(rng.randint(0, 4))]
    return random_object(rng, depth, max_depth)


def random_object(rng: random.Random, depth: int = 0, max_depth: int = 4, max_size: int = 5) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(rng.randint(0, max_size)):
        key = random_text(rng, 6) if rng.random() < 0.4 else rng.choice("abcdefgh") + str(rng.randint(0, 9))
        if _key_ok(key):
            out[key] = random_value(rng, depth + 1, max_depth)
    return out


# -- text -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Style:
    eol: str = "\n"
    unit: str = "    "
    bom: bool = False
    pretty: float = 0.7  # chance that a container puts one item a line
    comments: float = 0.15  # chance of a comment in a gap between tokens
    trailing: float = 0.3  # chance that a container has a trailing comma
    escapes: float = 0.1  # chance that a character is written as an escape
    duplicates: float = 0.0  # chance that a key is also written earlier with another value
    final_eol: bool = True


def random_style(rng: random.Random) -> Style:
    return Style(
        eol=rng.choice(["\n", "\n", "\r\n", "\r"]),
        unit=rng.choice(["  ", "    ", "\t", " "]),
        bom=rng.random() < 0.15,
        pretty=rng.choice([0.0, 0.5, 0.9, 1.0]),
        comments=rng.choice([0.0, 0.1, 0.3]),
        trailing=rng.choice([0.0, 0.0, 0.5, 1.0]),
        escapes=rng.choice([0.0, 0.05, 0.3]),
        duplicates=rng.choice([0.0, 0.0, 0.2]),
        final_eol=rng.random() < 0.8,
    )


class _Renderer:
    def __init__(self, rng: random.Random, style: Style) -> None:
        self.rng = rng
        self.style = style

    def indent(self, depth: int) -> str:
        return self.style.unit * depth

    def comment(self, depth: int) -> str:
        rng = self.rng
        body = "".join(rng.choice(_COMMENT_CHARS) for _ in range(rng.randint(0, 10)))
        if rng.random() < 0.5:
            return "/*" + body.replace("*/", "* /") + "*/"
        # a line comment ends its line
        return "//" + body + self.style.eol + self.indent(depth)

    def gap(self, depth: int) -> str:
        """Trivia between two tokens on a line: maybe spaces, maybe comments."""
        rng = self.rng
        out = rng.choice(["", "", "", " ", "  ", "\t"])
        while rng.random() < self.style.comments:
            out += self.comment(depth) + rng.choice(["", " "])
        return out

    def newline(self, depth: int, pretty: bool) -> str:
        """The gap before an item or a closing bracket."""
        rng = self.rng
        out = ""
        if pretty:
            out += self.style.eol + self.indent(depth)
            while rng.random() < self.style.comments:  # comment lines
                out += self.comment(depth).rstrip(" \t\r\n") + self.style.eol + self.indent(depth)
        return out + self.gap(depth)

    def string(self, text: str) -> str:
        rng, p = self.rng, self.style.escapes
        out = ['"']
        for ch in text:
            code = ord(ch)
            if ch in '"\\' or code < 0x20 or rng.random() < p:
                roll = rng.random()
                if ch in _SHORT_ESCAPES and roll < 0.7:
                    out.append(_SHORT_ESCAPES[ch])
                elif ch in '"\\/' and roll < 0.7:
                    out.append("\\" + ch)
                elif code > 0xFFFF:
                    code -= 0x10000
                    hi, lo = 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)
                    out.append(self.hex4(hi) + self.hex4(lo))
                else:
                    out.append(self.hex4(code))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def hex4(self, code: int) -> str:
        digits = f"{code:04x}"
        return "\\u" + (digits.upper() if self.rng.random() < 0.5 else digits)

    def number(self, value: int | float) -> str:
        if isinstance(value, int) or value == 0 or self.rng.random() < 0.4:
            return json.dumps(value)
        sign, digits, exp = Decimal(repr(value)).as_tuple()
        assert isinstance(exp, int)
        mantissa = "".join(map(str, digits))
        minus = "-" if sign else ""
        roll = self.rng.random()
        if roll < 0.5:  # all digits before the exponent: 1.5 -> 15E-1
            e = self.rng.choice(["e", "E"])
            plus = self.rng.choice(["", "+"]) if exp >= 0 else ""
            return f"{minus}{mantissa}{e}{plus}{exp}"
        # one digit before the point: 1.5 -> 1.5e0
        point = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
        return f"{minus}{point}e{exp + len(mantissa) - 1}"

    def value(self, value: Any, depth: int) -> str:
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int | float):
            return self.number(value)
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            items = list(value.items())
            if self.style.duplicates:
                for i in range(len(items) - 1, -1, -1):
                    if self.rng.random() < self.style.duplicates:
                        earlier = random_scalar(self.rng)
                        items.insert(self.rng.randint(0, i), (items[i][0], earlier))
            return self.container("{", "}", items, depth)
        if isinstance(value, list):
            return self.container("[", "]", [(None, v) for v in value], depth)
        raise TypeError(type(value))

    def container(self, open_: str, close: str, items: list[tuple[str | None, Any]], depth: int) -> str:
        rng = self.rng
        if not items:
            return open_ + self.gap(depth) + close
        pretty = rng.random() < self.style.pretty
        trailing = rng.random() < self.style.trailing
        parts = [open_]
        for i, (key, item) in enumerate(items):
            parts.append(self.newline(depth + 1, pretty))
            if key is not None:
                parts += [self.string(key), self.gap(depth + 1), ":", self.gap(depth + 1) or " "]
            parts.append(self.value(item, depth + 1))
            if i < len(items) - 1 or trailing:
                parts += [self.gap(depth + 1), ","]
            if not pretty and i < len(items) - 1:
                parts.append(rng.choice(["", " ", " ", "\t"]))
        parts += [self.newline(depth, pretty), close]
        return "".join(parts)


def render(value: Any, rng: random.Random, style: Style | None = None) -> str:
    """JSONC text whose value is ``value``, in ``style`` (a random one when ``None``)."""
    style = style if style is not None else random_style(rng)
    r = _Renderer(rng, style)
    head = "\ufeff" if style.bom else ""
    if rng.random() < style.comments * 2:
        head += r.comment(0).rstrip(" \t\r\n") + style.eol
    body = r.value(value, 0)
    tail = r.gap(0)  # ends with a line break when it holds a line comment
    if style.final_eol:
        tail += style.eol
    return head + body + tail


# -- comparing values -------------------------------------------------------------------------


def same(a: Any, b: Any, *, exact_numbers: bool = True) -> bool:
    """Equal values, and equal kinds: ``True`` is not ``1``; with ``exact_numbers`` an int is
    not a float either (the text ``1.0`` reads as a float, ``1`` as an int)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if exact_numbers and type(a) is not type(b):
            return False
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, exact_numbers=exact_numbers) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], exact_numbers=exact_numbers) for k in a)
    return False


def pairs_joined(value: Any) -> Any:
    """``value`` with escaped surrogate pairs joined (json5 leaves ``\\ud83d\\ude00`` as two
    code units; a JSON reader makes one character of them)."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, list):
        return [pairs_joined(v) for v in value]
    if isinstance(value, dict):
        return {pairs_joined(k): pairs_joined(v) for k, v in value.items()}
    return value


_ESCAPED_PAIR = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.I)


def json5_value(text: str) -> Any:
    """What json5 reads from ``text``. It leaves an escaped surrogate pair as two code units,
    so two spellings of one key would not collapse into one: pairs are joined first."""

    def join(m: re.Match[str]) -> str:
        pair = chr(int(m.group(2), 16)) + chr(int(m.group(3), 16))
        return m.group(1) + pair.encode("utf-16-le", "surrogatepass").decode("utf-16-le")

    return pairs_joined(json5.loads(_ESCAPED_PAIR.sub(join, text)))


# -- edits ------------------------------------------------------------------------------------

Path = tuple[str | int, ...]


def all_paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every path in ``value`` (not the root itself)."""
    out: list[Path] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out += all_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out += all_paths(v, (*prefix, i))
    return out


def object_paths(value: Any) -> list[Path]:
    """Paths of every object in ``value``, the root included when it is one."""
    out: list[Path] = [()] if isinstance(value, dict) else []
    for path in all_paths(value):
        if isinstance(get(value, path), dict):
            out.append(path)
    return out


def get(value: Any, path: Path) -> Any:
    for part in path:
        value = value[part]
    return value


def fresh_key(rng: random.Random, taken: dict[str, Any]) -> str:
    while True:
        key = random_text(rng, 5) if rng.random() < 0.3 else "new" + str(rng.randint(0, 99))
        if key not in taken and _key_ok(key):
            return key


EDIT_KINDS = ("set", "set-new", "set-nested", "insert-after", "delete")


def random_edit(value: Any, rng: random.Random, kind: str | None = None) -> tuple[str, Edit] | None:
    """An edit of ``kind`` (a random one when ``None``) that makes sense for ``value``, or
    ``None`` when ``value`` has nothing it applies to."""
    kind = kind or rng.choice(EDIT_KINDS)
    new_value = random_value(rng, 2)
    if kind == "set":
        paths = all_paths(value)
        return (kind, Set(rng.choice(paths), new_value)) if paths else None
    objects = object_paths(value)
    if not objects:
        return None
    if kind in ("insert-after", "delete"):
        objects = [p for p in objects if get(value, p)]
        if not objects:
            return None
    parent = rng.choice(objects)
    obj = get(value, parent)
    if kind == "delete":
        return kind, Delete((*parent, rng.choice(list(obj))))
    key = fresh_key(rng, obj)
    if kind == "set-new":
        return kind, Set((*parent, key), new_value)
    if kind == "set-nested":
        return kind, Set((*parent, key, "inner"), new_value)
    return kind, Insert((*parent, key), value=new_value, after=rng.choice(list(obj)))
