"""A mode flip and its way back give the file's exact bytes back, whatever its comments.

Random Cline ``settings.json`` files (a ``cline.cacheStrategy`` block) and CC Switch
``config.toml`` files (``[cache]``, ``[cache.split]``) are written with comments in every
position around every key a switch owns: lines above a key, before it on its line, between
key and colon (or ``=``), between colon and value, after the value before the comma, after the
comma (up to the line's end, as a line comment, as a block comment that runs over lines, or
followed by the next key on the same line), and lines below. Each file goes through the real
switch (``kvswitch.switch``, files on disk, remembered values in ``KVSWITCH_HOME``) to the
other mode and back, and must then be byte for byte what it was.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvswitch
from kvswitch.document import parse_config

PROPS = settings(
    max_examples=int(os.environ.get("KVSWITCH_HYPOTHESIS_EXAMPLES", "200")) // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
seeds = st.integers(0, 2**32 - 1)

_WORDS = ["tuned", "for the 7B model", "merged | split", "see the article", "é ß 中 🙂", "a, b: {c}", "x // y", "'q'"]

# -- JSONC ----------------------------------------------------------------------------------


def _block_comment(rng: random.Random, eol: str, indent: str) -> str:
    body = rng.choice(_WORDS).replace("*/", "* /")
    if rng.random() < 0.3:  # one that runs over lines
        return f"/* {body}{eol}{indent}   {rng.choice(_WORDS).replace('*/', '* /')} */"
    return f"/* {body} */"


def _maybe(rng: random.Random, p: float, eol: str, indent: str) -> str:
    """A block comment with spaces around it, or one space, or nothing."""
    if rng.random() < p:
        return " " + _block_comment(rng, eol, indent) + rng.choice(["", " "])
    return rng.choice(["", " "])


def _jsonc_object(props: list[tuple[str, str]], rng: random.Random, eol: str, indent: str, unit: str) -> str:
    """``props`` (key, JSON value text) as an object with comments everywhere around each."""
    inner = indent + unit
    out = ["{"]
    if rng.random() < 0.3:
        out.append(" // " + rng.choice(_WORDS))
    same_line = False  # whether the next property follows on the line of the previous one
    for i, (key, value) in enumerate(props):
        last = i == len(props) - 1
        if not same_line:
            for _ in range(rng.choice([0, 0, 1, 2])):  # lines above it
                above = rng.random()
                if above < 0.2:
                    out.append(eol)  # a blank line
                elif above < 0.7:
                    out.append(f"{eol}{inner}// {rng.choice(_WORDS)}")
                else:
                    out.append(f"{eol}{inner}{_block_comment(rng, eol, inner)}")
            out.append(eol + inner)
        if rng.random() < 0.25:
            out.append(_block_comment(rng, eol, inner) + " ")  # before the key, on its line
        out.append(f'"{key}"{_maybe(rng, 0.2, eol, inner)}:{_maybe(rng, 0.2, eol, inner) or " "}{value}')
        comma = not last or rng.random() < 0.3
        if comma:
            out.append(_maybe(rng, 0.2, eol, inner).rstrip() + ",")  # before the comma
        tail = rng.random()
        same_line = False
        if tail < 0.25:
            out.append(" // " + rng.choice(_WORDS))
        elif tail < 0.5:
            out.append(" " + _block_comment(rng, eol, inner))
            if not last and comma and rng.random() < 0.5:
                out.append(" ")
                same_line = True  # the next key follows on the same line
        elif tail < 0.6 and not last and comma:
            out.append(" ")
            same_line = True
    if rng.random() < 0.3:
        out.append(f"{eol}{inner}// {rng.choice(_WORDS)}")  # a line below the last key
    out.append(eol + indent + "}")
    return "".join(out)


MERGED = [("chunkSize", "512"), ("kvCacheDtype", '"auto"'), ("enablePrefixCache", "true")]
SPLIT = [
    ("prefillEndpoint", '"http://127.0.0.1:8001/v1"'),
    ("decodeEndpoint", '"http://127.0.0.1:8002/v1"'),
    ("kvTransferProtocol", '"layer-wise"'),
    ("kvCacheDtype", '"auto"'),
    ("enablePrefixCache", "true"),
]


def cline_settings(mode: str, rng: random.Random) -> str:
    """A Cline settings.json in ``mode`` with comments everywhere in and around its block."""
    eol = rng.choice(["\n", "\n", "\r\n"])
    unit = rng.choice(["  ", "    ", "\t"])
    keys = list(MERGED if mode == "merged" else SPLIT)
    rng.shuffle(keys)
    if mode == "merged":  # chunkSize is the merged form's; the others are optional
        keys = [k for k in keys[: rng.randint(1, len(keys))] if k[0] != "chunkSize"]
        keys.insert(rng.randint(0, len(keys)), MERGED[0] if rng.random() < 0.5 else ("chunkSize", "1024"))
    keys.insert(rng.randint(0, len(keys)), ("mode", f'"{mode}"'))
    block = _jsonc_object(keys, rng, eol, unit, unit)
    outer = [
        ("editor.fontSize", "14"),
        ("cline.openAiBaseUrl", '"http://127.0.0.1:8000/v1"'),
        ("cline.cacheStrategy", block),
        ("files.trimTrailingWhitespace", "true"),
    ]
    rng.shuffle(outer)
    return _jsonc_object(outer, rng, eol, "", unit) + rng.choice(["", eol])


def _place(text: str, name: str) -> Path:
    """``text`` written where a switch detects its kind, in a folder of its own (remembered
    values are kept by the file's real path)."""
    folder = Path(tempfile.mkdtemp(dir=os.environ["KVSWITCH_HOME"] + "-files"))
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture(autouse=True)
def _files_dir() -> None:
    Path(os.environ["KVSWITCH_HOME"] + "-files").mkdir(parents=True, exist_ok=True)


def there_and_back(text: str, name: str, first: str, then: str) -> tuple[bytes, bytes]:
    path = _place(text, name)
    [one] = kvswitch.switch(first, [path])  # type: ignore[arg-type]
    assert one.changed
    middle = path.read_bytes()
    [two] = kvswitch.switch(then, [path])  # type: ignore[arg-type]
    assert two.changed
    return middle, path.read_bytes()


def cline_round_trip(seed: int, start: str, other: str, gone: str) -> None:
    """A random settings.json in ``start`` switched to ``other`` (``gone`` has left the block)
    and back gives the same bytes."""
    text = cline_settings(start, random.Random(seed))
    middle, back = there_and_back(text, ".vscode/settings.json", other, start)
    data = parse_config(middle, "cline").data["cline.cacheStrategy"]
    assert data["mode"] == other and gone not in data, middle.decode()
    assert back == text.encode(), (text, middle.decode(), back.decode())


@PROPS
@given(seed=seeds)
def test_cline_merged_split_merged_gives_the_same_bytes(seed: int) -> None:
    cline_round_trip(seed, "merged", "split", "chunkSize")


@PROPS
@given(seed=seeds)
def test_cline_split_merged_split_gives_the_same_bytes(seed: int) -> None:
    cline_round_trip(seed, "split", "merged", "prefillEndpoint")


@pytest.mark.parametrize(
    "block",
    [
        # a block comment that starts on the chunkSize line and runs over lines
        '    "mode": "merged",\n    "chunkSize": 512, /* a comment\n       over lines */\n    "kvCacheDtype": "auto"\n',
        # a comment between chunkSize and a sibling on the same line
        '    "mode": "merged",\n    "chunkSize": 512, /* c */ "kvCacheDtype": "auto"\n',
        # a line comment above chunkSize
        '    "mode": "merged",\n    // about the chunk size\n    "chunkSize": 512,\n    "kvCacheDtype": "auto"\n',
        # chunkSize last, its comma taken from the key before it
        '    "mode": "merged" /* m */ ,\n    // last\n    "chunkSize": 512 // c\n',
    ],
    ids=["block-over-lines", "between-siblings", "line-above", "last"],
)
def test_the_issue_examples_round_trip(block: str) -> None:
    text = '{\n  "cline.openAiBaseUrl": "http://127.0.0.1:8000/v1",\n  "cline.cacheStrategy": {\n' + block + "  }\n}\n"
    middle, back = there_and_back(text, ".vscode/settings.json", "split", "merged")
    assert b"chunkSize" not in middle
    assert back == text.encode(), back.decode()


# -- TOML -----------------------------------------------------------------------------------


def _toml_table(rows: list[tuple[str, str]], rng: random.Random, eol: str) -> str:
    """Key/value lines with comment lines above, comments after, and assorted spacing."""
    out = []
    for key, value in rows:
        for _ in range(rng.choice([0, 0, 1, 2])):
            out.append("" if rng.random() < 0.3 else f"{rng.choice(['', '  '])}# {rng.choice(_WORDS)}")
        spelled = rng.choice([key, key, f'"{key}"', f"'{key}'"])
        left, right = rng.choice([" ", "", "   "]), rng.choice([" ", "", "  "])
        if value.startswith('"') and rng.random() < 0.3:
            value = "'" + value[1:-1] + "'"  # a literal string
        tail = rng.choice(
            [
                "",
                "",
                f" # {rng.choice(_WORDS)}",
                f"{' ' * rng.randint(1, 12)}# {rng.choice(_WORDS)}",
                f"\t# {rng.choice(_WORDS)}",
            ]
        )
        out.append(f"{rng.choice(['', '  '])}{spelled}{left}={right}{value}{tail}")
    return eol.join(out)


def ccswitch_config(mode: str, rng: random.Random) -> str:
    """A CC Switch config.toml in ``mode``, with ``[cache.split]``, comments everywhere."""
    eol = rng.choice(["\n", "\n", "\r\n"])
    cache = [
        ("mode", f'"{mode}"'),
        ("chunk_size", rng.choice(["512", "1_024"])),
        ("kv_cache_dtype", '"auto"'),
        ("prefix_cache", rng.choice(["true", "false"])),
    ]
    rng.shuffle(cache)
    split = [
        ("prefill_base_url", '"http://127.0.0.1:8001/v1"'),
        ("decode_base_url", '"http://127.0.0.1:8002/v1"'),
        ("transfer_protocol", '"layer-wise"'),
        ("max_transfer_concurrency", "4"),
    ]
    rng.shuffle(split)
    sections = [
        f"[provider]{eol}" + _toml_table([("name", '"lab"'), ("base_url", '"http://127.0.0.1:8000/v1"')], rng, eol),
        f"[cache]{rng.choice(['', ' # the cache'])}{eol}" + _toml_table(cache, rng, eol),
        f"[cache.split]{eol}" + _toml_table(split, rng, eol),
        f"[request]{eol}" + _toml_table([("temperature", "0.2"), ("stream", "true")], rng, eol),
        # a nan anywhere must not stop the file from reading back as itself
        f"[windows]{eol}" + _toml_table([("scale", rng.choice(["nan", "inf", "-nan", "1.5"]))], rng, eol),
    ]
    head = f"# CC Switch{eol}{eol}" if rng.random() < 0.5 else ""
    return head + (eol * rng.choice([1, 2])).join(s + eol for s in sections) + rng.choice(["", eol])


@PROPS
@given(seed=seeds, first=st.sampled_from(["merged", "split"]))
def test_ccswitch_there_and_back_gives_the_same_bytes(seed: int, first: str) -> None:
    text = ccswitch_config(first, random.Random(seed))
    other = "split" if first == "merged" else "merged"
    middle, back = there_and_back(text, "cc-switch/config.toml", other, first)
    assert parse_config(middle, "ccswitch").data["cache"]["mode"] == other, middle.decode()
    assert back == text.encode(), (text, middle.decode(), back.decode())
