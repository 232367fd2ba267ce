"""Values a mode flip took out of a client file, kept so the way back restores them (D-3, D-12).

Keyed by the real path of the client file and the key path. What is kept is the
property's raw source text (its value and its same-line comment) and the key it followed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvswitch import paths
from kvswitch.edits import Cut
from kvswitch.records import asdict, record

__all__ = [
    "Remembered",
    "changed_since_written",
    "forget",
    "forget_file",
    "forget_pin",
    "last_write",
    "pinned_from",
    "recall",
    "record_writes",
    "remember",
    "remember_pin",
]

_FILE = "remembered.json"


@record(slots=True)
class Remembered:
    """A property that left a file: its ``raw`` source (key and value as written), what followed
    it on its line (``comment``), and the key it followed; ``cut`` is exactly the text that left
    with it and where (put back byte for byte while its neighbours are still there), ``order``
    its place among the keys that left in the same switch (they come back in reverse order)."""

    raw: str
    comment: str = ""
    after: str | None = None
    cut: Cut | None = None
    order: int = 0


def _read_json(name: str) -> dict[str, Any]:
    """The JSON object in ``<state>/name``; ``{}`` when it is missing or not an object."""
    try:
        data = json.loads((paths.dirs().state / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(name: str, data: dict[str, Any], *, ensure_ascii: bool = True) -> None:
    """Write ``data`` to ``<state>/name`` (0600 in the 0700 state folder)."""
    from kvswitch.io import write_private

    text = json.dumps(data, indent=1, ensure_ascii=ensure_ascii, sort_keys=True) + "\n"
    write_private(paths.dirs().state / name, text.encode())


def _load() -> dict[str, dict[str, Any]]:
    return _read_json(_FILE)


def _save(data: dict[str, dict[str, Any]]) -> None:
    _write_json(_FILE, data, ensure_ascii=False)


def _key(path: tuple[str | int, ...]) -> str:
    return json.dumps(list(path), ensure_ascii=False)


def recall(file: Path, key_path: tuple[str | int, ...]) -> Remembered | None:
    """What was remembered for ``key_path`` of ``file``, if anything."""
    entry = _load().get(os.path.realpath(file), {}).get(_key(key_path))
    if not isinstance(entry, dict) or not isinstance(entry.get("raw"), str):
        return None
    after = entry.get("after")
    order = entry.get("order")
    return Remembered(
        entry["raw"],
        str(entry.get("comment") or ""),
        after if isinstance(after, str) else None,
        _cut(entry.get("cut")),
        order if isinstance(order, int) and not isinstance(order, bool) else 0,
    )


def _cut(data: Any) -> Cut | None:
    """A stored :class:`Cut`, or ``None`` when it is missing or malformed (written by hand or
    by an older kvswitch): the value then goes back by its ``raw`` source."""
    if not isinstance(data, dict):
        return None
    span, place, anchor = data.get("span"), data.get("place"), data.get("anchor")
    gap, comma = data.get("comma_gap", -1), data.get("comma", True)
    if (
        not isinstance(span, str)
        or place not in ("after", "before", "tail", "close")
        or not (anchor is None or isinstance(anchor, str))
        or not isinstance(gap, int)
        or isinstance(gap, bool)
        or not isinstance(comma, bool)
    ):
        return None
    return Cut(span, place, anchor, gap, comma)


def remember(file: Path, items: dict[tuple[str | int, ...], Remembered]) -> None:
    """Keep ``items`` for ``file`` (replacing earlier values of the same keys)."""
    if not items:
        return
    data = _load()
    slot = data.setdefault(os.path.realpath(file), {})
    for key_path, value in items.items():
        slot[_key(key_path)] = asdict(value)
    _save(data)


def forget(file: Path, key_paths: list[tuple[str | int, ...]]) -> None:
    """Drop remembered values that went back into ``file``."""
    data = _load()
    slot = data.get(os.path.realpath(file))
    if not slot:
        return
    changed = False
    for key_path in key_paths:
        with contextlib.suppress(KeyError):
            del slot[_key(key_path)]
            changed = True
    if changed:
        if not slot:
            del data[os.path.realpath(file)]
        _save(data)


_WRITES = "writes.json"


def record_writes(
    files: Sequence[Path], written: Mapping[Path, bytes] | None = None, *, known_only: bool = False
) -> None:
    """Note when kvswitch last wrote each file and what it wrote (its digest), for
    ``kvswitch status`` and the tray. ``written``: the bytes kvswitch put in a file, where
    known (a save that lands just after the write must not pass for kvswitch's own); other
    files are read back. ``known_only``: only files kvswitch already keeps a record of (a
    switch of files named on the command line, a lint fix)."""
    import hashlib
    import time

    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_optional

    if not files:
        return
    data = _read_json(_WRITES)
    now = time.time()
    todo = [f for f in files if not known_only or os.path.realpath(f) in data]
    if not todo:
        return
    for file in todo:
        real = os.path.realpath(file)
        raw = (written or {}).get(file)
        if raw is None:
            try:
                raw = read_optional(file)
            except (OSError, KvswitchError):
                raw = None
        entry: dict[str, Any] = {"at": now}
        if raw is not None:
            entry["sha256"] = hashlib.sha256(raw).hexdigest()
        data[real] = entry
    _write_json(_WRITES, data)


def _write_entry(file: Path) -> dict[str, Any]:
    value = _read_json(_WRITES).get(os.path.realpath(file))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"at": float(value)}  # written by an older kvswitch: the time only
    return value if isinstance(value, dict) else {}


def last_write(file: Path) -> float | None:
    """When kvswitch last wrote ``file`` (seconds since the epoch), if it ever did."""
    value = _write_entry(file).get("at")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def changed_since_written(file: Path, raw: bytes | None) -> bool:
    """Whether ``raw`` (the file's bytes now) differ from what kvswitch last wrote there
    (False when kvswitch never wrote it, or recorded no digest)."""
    import hashlib

    digest = _write_entry(file).get("sha256")
    if not isinstance(digest, str):
        return False
    return raw is None or hashlib.sha256(raw).hexdigest() != digest


def forget_file(file: Path) -> None:
    """Drop every value remembered for ``file`` (a profile render decides them now)."""
    data = _load()
    if data.pop(os.path.realpath(file), None) is not None:
        _save(data)


_PINS = "pins.json"


def remember_pin(file: Path, before: bytes | None) -> None:
    """Note what ``file`` held just before it was pinned to the gateway (its digest: the bytes
    are in its backups; ``None``: there was no file), so unpinning can start from it."""
    import hashlib

    data = _read_json(_PINS)
    data[os.path.realpath(file)] = (
        {"absent": True} if before is None else {"sha256": hashlib.sha256(before).hexdigest()}
    )
    _write_json(_PINS, data)


def pinned_from(file: Path) -> str | bool | None:
    """What :func:`remember_pin` noted for ``file``: the digest of its bytes, ``False`` when
    there was no file, ``None`` when nothing was noted."""
    entry = _read_json(_PINS).get(os.path.realpath(file))
    if not isinstance(entry, dict):
        return None
    if entry.get("absent") is True:
        return False
    digest = entry.get("sha256")
    return digest if isinstance(digest, str) else None


def forget_pin(file: Path) -> None:
    """Drop the note of ``file`` (it is not pinned any more)."""
    data = _read_json(_PINS)
    if data.pop(os.path.realpath(file), None) is not None:
        _write_json(_PINS, data)
