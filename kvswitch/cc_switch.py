"""CC Switch's database (``~/.cc-switch/cc-switch.db``), read without changing it.

CC Switch (a desktop switcher for Claude Code, Codex, OpenCode and others) keeps every
provider in one SQLite table, ``providers``: one row per (``id``, ``app_type``), the
client's settings as a JSON text in ``settings_config``, ``is_current`` for the one in use.
:func:`read_database` reads those rows; :func:`provider_settings` turns one into the endpoint
it describes, through kvswitch's client kinds.

Nothing here writes. A database in rollback-journal mode (CC Switch's own) is opened
read-only (``mode=ro``, ``PRAGMA query_only``, an authorizer that allows only reads), so
SQLite's locks still apply: while CC Switch writes, the read waits up to ``timeout`` and
then says to try again. A database in WAL mode is never opened where it lies, because even a
read-only SQLite connection creates (and leaves) ``-wal`` and ``-shm`` files for it: its
bytes and its WAL's committed frames are read into memory and queried there.

The schema versions (``PRAGMA user_version``) in :data:`KNOWN_VERSIONS` are those whose
``providers`` table was checked against CC Switch's source (``src-tauri/src/database/
schema.rs``); any other version is refused, naming it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kvswitch.errors import (
    CcSwitchBusyError,
    CcSwitchError,
    CcSwitchReadError,
    KvswitchError,
    Location,
    ReadError,
)
from kvswitch.i18n import ntr, tr
from kvswitch.records import replace

if TYPE_CHECKING:
    from kvswitch.kinds.base import ClientSettings

__all__ = [
    "KNOWN_VERSIONS",
    "PLACEHOLDER_KEYS",
    "CcSwitchDatabase",
    "CcSwitchProvider",
    "SkippedRow",
    "default_database",
    "provider_settings",
    "read_database",
    "read_providers",
]

KNOWN_VERSIONS: tuple[int, ...] = tuple(range(1, 21))
"""Schema versions whose ``providers`` table kvswitch has checked: v1 (the columns CC Switch's
v0→v1 migration completes) to v20; no migration from v2 to v20 changes that table."""

PLACEHOLDER_KEYS = frozenset({"PROXY_MANAGED"})
"""Values CC Switch writes in place of a key while its local proxy holds the real one."""

REQUIRED_COLUMNS = ("id", "app_type", "name", "settings_config", "is_current")
_OPTIONAL_COLUMNS = ("sort_index", "created_at", "category", "website_url")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_MAX_SNAPSHOT = 256 * 1024 * 1024
"""The most a WAL-mode database (file plus WAL) may weigh to be read into memory."""
_MAX_SETTINGS = 4 * 1024 * 1024
"""A row's ``settings_config`` longer than this is skipped (a real one is a few KiB)."""
_MAX_TEXT = 1024
"""An ``id``, ``app_type`` or ``name`` longer than this is skipped."""
_DEADLINE_S = 10.0
_FUNCTIONS = frozenset({"substr", "length", "typeof", "coalesce"})
_PRAGMAS = frozenset({"user_version", "table_xinfo"})
_MAX_VALUE = 64 * 1024 * 1024
"""SQLite's length limit while reading: no value (stored or computed) may be larger."""


@dataclass(frozen=True, slots=True)
class CcSwitchProvider:
    """One row of CC Switch's ``providers`` table. ``settings`` (which holds the key) is left
    out of ``repr``."""

    app: str
    """CC Switch's ``app_type``: ``claude``, ``codex``, ``opencode``, ``gemini``…"""
    id: str
    name: str
    current: bool
    """The provider CC Switch uses for this app now."""
    settings: dict[str, Any] = field(default_factory=dict, repr=False, hash=False)
    """``settings_config`` parsed: the client's settings as CC Switch writes them."""
    sort_index: int | None = None
    created_at: int | None = None
    category: str | None = None
    """CC Switch's category: ``official``, ``third_party``, ``custom``…"""
    website_url: str | None = None


@dataclass(frozen=True, slots=True)
class SkippedRow:
    """A row kvswitch could not read as a provider, and why."""

    app: str
    id: str
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class CcSwitchDatabase:
    """What :func:`read_database` found."""

    path: Path
    version: int
    """``PRAGMA user_version``: CC Switch's schema version."""
    providers: tuple[CcSwitchProvider, ...]
    """Ordered by app, then as CC Switch lists them (sort index, creation time, id)."""
    skipped: tuple[SkippedRow, ...] = ()
    snapshot: bool = False
    """The database is in WAL mode and was read from an in-memory copy."""


def default_database() -> Path:
    """``$HOME/.cc-switch/cc-switch.db``, where CC Switch keeps its database."""
    from kvswitch.paths import user_dirs

    return user_dirs()[0] / ".cc-switch" / "cc-switch.db"


def read_providers(path: Path) -> list[CcSwitchProvider]:
    """The providers in the CC Switch database at ``path`` (see :func:`read_database`)."""
    return list(read_database(path).providers)


def read_database(path: Path, *, timeout: float = 2.0) -> CcSwitchDatabase:
    """Read CC Switch's database at ``path`` without changing it or leaving any file.

    Which provider is current follows CC Switch: the id its device settings
    (``settings.json`` next to the database) name for the app, else the row's ``is_current``.
    A row that cannot be read (settings that are not a JSON object, too large, an id that is
    not text) is skipped and listed in ``skipped``; the others are still read.

    Raises :class:`CcSwitchReadError` when the file cannot be read as a SQLite database,
    :class:`CcSwitchBusyError` when CC Switch holds it locked for longer than ``timeout``
    seconds, and :class:`CcSwitchError` for a schema kvswitch does not know."""
    path = Path(path)
    header = _probe(path)
    wal_path = path.with_name(path.name + "-wal")
    wal = header[18] == 2 or header[19] == 2 or _size(wal_path) > 0
    try:
        con = _open_snapshot(path, wal_path) if wal else _open_read_only(path, timeout)
        try:
            _guard(con)
            version, rows, skipped = _read(con, path)
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, path) from exc
    providers = _mark_current(rows, _device_current(path))
    return CcSwitchDatabase(path, version, tuple(providers), tuple(skipped), wal)


def provider_settings(p: CcSwitchProvider) -> ClientSettings | None:
    """The endpoint ``p`` describes (URL, model, headers, key or key variable), read by the
    client kind of its app; ``None`` for an app kvswitch has no client kind for, or a
    provider that names no endpoint of its own (an official login). The placeholder key of
    CC Switch's proxy (:data:`PLACEHOLDER_KEYS`) is never returned as a key.

    Raises :class:`CcSwitchError` when a Codex provider's ``config.toml`` text does not parse."""
    from kvswitch.kinds import all_kinds
    from kvswitch.kinds.base import get_path
    from kvswitch.kinds.real import text_value

    kind = next((k for k in all_kinds(clients_only=True) if k.cc_switch_app == p.app), None)
    if kind is None:
        return None  # an app kvswitch has no client for (gemini, hermes…)
    try:
        data = kind.cc_switch_data(p.settings, p.id)
    except ValueError as exc:
        raise CcSwitchError(
            tr("CC Switch provider {name} ({app}): {error}").format(name=repr(p.name), app=p.app, error=exc)
        ) from exc
    found = kind.current(data) if data is not None else None
    if found is None:
        return None
    if found.key is not None and _placeholder(found.key):
        paths = kind.key_paths(data)
        others = (text_value(get_path(data, path)) for path in paths)
        found = replace(found, key=next((k for k in others if k and not _placeholder(k)), None))
    if found.key is None and found.key_env is None:
        key = kind.cc_switch_key(p.settings)
        found = replace(found, key=None if key is None or _placeholder(key) else key)
    return found


# -- opening -----------------------------------------------------------------------------
def _probe(path: Path) -> bytes:
    """The first 100 bytes of ``path``, after proving it is a non-empty regular SQLite file
    (opened without blocking: a FIFO or a device is refused, never waited on)."""
    fd, st = _open_regular(
        path,
        missing=tr(
            "no CC Switch database here (no such file); CC Switch keeps it in "
            "~/.cc-switch/cc-switch.db, and --db names another"
        ),
    )
    try:
        if st.st_size == 0:
            raise CcSwitchReadError(tr("is empty, not a SQLite database"), Location(path))
        header = os.read(fd, 100)
    except OSError as exc:
        raise CcSwitchReadError(_cannot_read(exc), Location(path)) from exc
    finally:
        os.close(fd)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise CcSwitchReadError(
            tr("not a SQLite database (CC Switch keeps its providers in a SQLite file, cc-switch.db)"),
            Location(path),
        )
    return header


def _open_regular(path: Path, *, missing: str | None = None) -> tuple[int, os.stat_result]:
    """``path`` opened without blocking, and its status, when it is a regular file (a FIFO or
    a device is refused, never waited on); ``missing``: the message for no such file."""
    from kvswitch.io import open_for_reading

    try:
        fd, st = open_for_reading(path)
    except ReadError as exc:
        said = missing if missing and isinstance(exc.__cause__, FileNotFoundError) else exc.message
        raise CcSwitchReadError(said, Location(path)) from exc.__cause__
    try:
        if not stat.S_ISREG(st.st_mode):
            raise CcSwitchReadError(_not_regular(st.st_mode), Location(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _open_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A read-only connection to a rollback-journal database; SQLite's locks apply."""
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)


def _open_snapshot(path: Path, wal_path: Path) -> sqlite3.Connection:
    """An in-memory copy of a WAL-mode database as a reader would see it now."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.deserialize(_snapshot(path, wal_path))
    return con


def _guard(con: sqlite3.Connection) -> None:
    """Queries only: ``query_only``, an authorizer that denies all but reads, and a deadline."""
    con.execute("PRAGMA query_only = 1")
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE)
    con.set_authorizer(_authorize)
    deadline = time.monotonic() + _DEADLINE_S
    con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and arg2 in _FUNCTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 in _PRAGMAS and (arg1 != "user_version" or arg2 is None):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


# -- a WAL-mode database, in memory --------------------------------------------------------
def _snapshot(path: Path, wal_path: Path) -> bytes:
    """The database's bytes with its WAL's committed frames applied, read while neither file
    changed (a few tries, then :class:`CcSwitchBusyError`)."""
    for attempt in range(5):
        before = (_stamp(path), _stamp(wal_path))
        db = _read_all(path)
        wal = _read_all(wal_path, missing_ok=True)
        if (_stamp(path), _stamp(wal_path)) == before:
            image = bytearray(_apply_wal(db, wal))
            if len(image) >= 100:
                image[18:20] = b"\x01\x01"  # the in-memory copy is a plain (rollback) database
            return bytes(image)
        time.sleep(0.05 * (attempt + 1))
    raise CcSwitchBusyError(
        tr(
            "CC Switch's database kept changing while kvswitch read it (CC Switch is writing to "
            "it); try again in a moment"
        ),
        Location(path),
    )


def _apply_wal(db: bytes, wal: bytes) -> bytes:
    """``db`` with the WAL's committed frames applied, as SQLite's recovery does: frames are
    used up to the last commit frame whose salts and running checksum hold."""
    if len(wal) < 32:
        return db
    magic, version, page_size, _, salt1, salt2, sum0, sum1 = struct.unpack_from(">8I", wal)
    if magic not in (0x377F0682, 0x377F0683) or version != 3007000:
        return db
    if not 512 <= page_size <= 65536 or page_size & (page_size - 1):
        return db
    big = bool(magic & 1)
    sums = _checksum(wal[:24], big, (0, 0))
    if sums != (sum0, sum1):
        return db
    committed: dict[int, int] = {}
    pending: dict[int, int] = {}
    pages: int | None = None
    step = 24 + page_size
    offset = 32
    while offset + step <= len(wal):
        page, commit, f_salt1, f_salt2, f_sum0, f_sum1 = struct.unpack_from(">6I", wal, offset)
        if (f_salt1, f_salt2) != (salt1, salt2) or page == 0:
            break
        sums = _checksum(wal[offset : offset + 8], big, sums)
        sums = _checksum(wal[offset + 24 : offset + step], big, sums)
        if sums != (f_sum0, f_sum1):
            break
        pending[page] = offset + 24
        if commit:
            committed.update(pending)
            pending.clear()
            pages = commit
        offset += step
    if pages is None:
        return db
    image = bytearray(db[: pages * page_size].ljust(pages * page_size, b"\0"))
    for page, at in committed.items():
        if page <= pages:
            image[(page - 1) * page_size : page * page_size] = wal[at : at + page_size]
    return bytes(image)


def _checksum(data: bytes, big: bool, sums: tuple[int, int]) -> tuple[int, int]:
    """SQLite's WAL checksum over ``data`` (a multiple of 8 bytes), continuing ``sums``."""
    s0, s1 = sums
    for x0, x1 in struct.iter_unpack(">II" if big else "<II", data):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def _read_all(path: Path, *, missing_ok: bool = False) -> bytes:
    from kvswitch.io import read_rest

    try:
        fd, st = _open_regular(path)
    except CcSwitchReadError as exc:
        if missing_ok and isinstance(exc.__cause__, FileNotFoundError):
            return b""  # no write-ahead log (now): nothing to apply
        raise
    try:
        if st.st_size > _MAX_SNAPSHOT:
            raise CcSwitchReadError(
                tr(
                    "too large to read safely while CC Switch may be using it ({size} MiB "
                    "in WAL mode); quit CC Switch so it folds its write-ahead log in, then try again"
                ).format(size=st.st_size >> 20),
                Location(path),
            )
        return read_rest(
            fd,
            st.st_size,
            _MAX_SNAPSHOT,
            lambda _: CcSwitchBusyError(tr("grew while kvswitch read it; try again"), Location(path)),
        )
    except OSError as exc:
        raise CcSwitchReadError(_cannot_read(exc), Location(path)) from exc
    finally:
        os.close(fd)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _size(path: Path) -> int:
    try:
        st = path.stat()
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


# -- reading -----------------------------------------------------------------------------
def _read(con: sqlite3.Connection, path: Path) -> tuple[int, list[CcSwitchProvider], list[SkippedRow]]:
    version = con.execute("PRAGMA user_version").fetchone()[0]
    _check_version(version, path)
    columns = _provider_columns(con, path)
    optional = [c if c in columns else "NULL" for c in _OPTIONAL_COLUMNS]
    order = ["COALESCE(sort_index, 999999)"] if "sort_index" in columns else []
    order += ["created_at"] if "created_at" in columns else []
    query = (
        f"SELECT substr(id, 1, {_MAX_TEXT + 1}), substr(app_type, 1, {_MAX_TEXT + 1}), "
        f"substr(name, 1, {_MAX_TEXT + 1}), substr(settings_config, 1, {_MAX_SETTINGS + 1}), "
        f"is_current, {', '.join(optional)} FROM providers "
        f"ORDER BY app_type, {', '.join([*order, 'id'])}"
    )
    providers: list[CcSwitchProvider] = []
    skipped: list[SkippedRow] = []
    for row in con.execute(query):
        read = _row(row)
        if isinstance(read, CcSwitchProvider):
            providers.append(read)
        else:
            skipped.append(read)
    return version, providers, skipped


def _check_version(version: Any, path: Path) -> None:
    known = f"{KNOWN_VERSIONS[0]}–{KNOWN_VERSIONS[-1]}"
    if version in KNOWN_VERSIONS:
        return
    if isinstance(version, int) and version > KNOWN_VERSIONS[-1]:
        raise CcSwitchError(
            tr(
                "CC Switch database schema version {version} is newer than kvswitch reads "
                "({known}); nothing was imported. A newer kvswitch may read it; until then, add "
                "the profile by hand (kvswitch profile add)"
            ).format(version=version, known=known),
            Location(path),
        )
    if version == 0:
        raise CcSwitchError(
            tr(
                "schema version 0 is not one kvswitch reads ({known}): this is not a database CC "
                "Switch has set up (it sets version 1 or later when it opens its database); "
                "nothing was imported"
            ).format(known=known),
            Location(path),
        )
    raise CcSwitchError(
        tr(
            "CC Switch database schema version {version} is not one kvswitch knows ({known}); nothing was imported"
        ).format(version=version, known=known),
        Location(path),
    )


def _provider_columns(con: sqlite3.Connection, path: Path) -> set[str]:
    table = con.execute("SELECT type, rootpage FROM sqlite_master WHERE name = 'providers' COLLATE NOCASE").fetchone()
    if table is None:
        raise CcSwitchError(
            tr("has no providers table: not CC Switch's database? nothing was imported"), Location(path)
        )
    if table[0] != "table" or not table[1]:
        raise CcSwitchError(
            tr("its providers table is a {what}, not a table as CC Switch creates it; nothing was imported").format(
                what=table[0] if table[0] != "table" else tr("virtual table")
            ),
            Location(path),
        )
    info = {str(r[1]).lower(): r[6] for r in con.execute("PRAGMA table_xinfo(providers)")}
    computed = [c for c in (*REQUIRED_COLUMNS, *_OPTIONAL_COLUMNS) if info.get(c) in (2, 3)]
    if computed:
        raise CcSwitchError(
            tr(
                "its providers table computes {columns} (a generated column), which "
                "CC Switch never does; nothing was imported"
            ).format(columns=", ".join(computed)),
            Location(path),
        )
    columns = {c for c, hidden in info.items() if hidden == 0}
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise CcSwitchError(
            ntr(
                "its providers table has no {columns} column (kvswitch reads {required}); nothing was imported",
                "its providers table has no {columns} columns (kvswitch reads {required}); nothing was imported",
                len(missing),
            ).format(columns=", ".join(missing), required=", ".join(REQUIRED_COLUMNS)),
            Location(path),
        )
    return columns


def _row(row: tuple[Any, ...]) -> CcSwitchProvider | SkippedRow:
    raw_id, raw_app, raw_name, raw_settings, is_current, sort_index, created_at, category, url = row
    app = _text(raw_app) or "?"
    ident = _text(raw_id)
    name = _text(raw_name) or ident or "?"
    if ident is None or _text(raw_app) is None:
        return SkippedRow(app, ident or "?", name, tr("its id or app is not text"))
    if max(len(ident), len(app), len(name)) > _MAX_TEXT:
        return SkippedRow(app, ident[:_MAX_TEXT], name[:_MAX_TEXT], tr("its id, app or name is too long"))
    settings = _settings(raw_settings)
    if isinstance(settings, str):
        return SkippedRow(app, ident, name, settings)
    return CcSwitchProvider(
        app,
        ident,
        name,
        is_current == 1,
        settings,
        sort_index=sort_index if type(sort_index) is int else None,
        created_at=created_at if type(created_at) is int else None,
        category=_text(category),
        website_url=_text(url),
    )


def _settings(raw: Any) -> dict[str, Any] | str:
    """``settings_config`` as a dict, or why not."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return tr("its settings are not UTF-8 text")
    if not isinstance(raw, str):
        return tr("it has no settings")
    if len(raw) > _MAX_SETTINGS:
        return tr("its settings are larger than {size} MiB").format(size=_MAX_SETTINGS >> 20)
    try:
        data = json.loads(raw)
    except RecursionError:
        return tr("its settings are nested too deeply")
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            return tr("its settings are not valid JSON (line {line}, column {column})").format(
                line=exc.lineno, column=exc.colno
            )
        return tr("its settings are not valid JSON")
    if not isinstance(data, dict):
        return tr("its settings are not a JSON object")
    return data


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _device_current(path: Path) -> dict[str, str]:
    """The current provider id per app from CC Switch's device settings (``settings.json``
    next to the database, ``currentProviderClaude``…), which take precedence over
    ``is_current``; unreadable settings name none."""
    from kvswitch.io import read_optional

    try:
        data = read_optional(path.with_name("settings.json"))
        parsed = json.loads(data) if data is not None else None
    except (KvswitchError, ValueError, RecursionError):
        return {}
    if not isinstance(parsed, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in parsed.items():
        if isinstance(key, str) and key.startswith("currentProvider") and isinstance(value, str):
            out[key.removeprefix("currentProvider").lower()] = value
    return out


def _mark_current(rows: list[CcSwitchProvider], device: dict[str, str]) -> list[CcSwitchProvider]:
    """One current provider per app at most: the device settings' choice where it names a
    row of the app, else the first row marked ``is_current``."""
    out: list[CcSwitchProvider] = []
    seen: set[str] = set()
    ids = {(p.app, p.id) for p in rows}
    for p in rows:
        chosen = device.get(re.sub(r"[-_]", "", p.app.lower()))
        current = p.id == chosen if chosen is not None and (p.app, chosen) in ids else p.current
        current = current and p.app not in seen
        if current:
            seen.add(p.app)
        out.append(p if current == p.current else replace(p, current=current))
    return out


# -- converting --------------------------------------------------------------------------
def _placeholder(key: str) -> bool:
    return key.strip() in PLACEHOLDER_KEYS


# -- errors ------------------------------------------------------------------------------
def _sqlite_error(exc: sqlite3.Error, path: Path) -> CcSwitchError:
    name = str(getattr(exc, "sqlite_errorname", ""))
    where = Location(path)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return CcSwitchBusyError(
            tr("CC Switch's database is locked: CC Switch is writing to it right now; try again in a moment"),
            where,
        )
    if name.startswith("SQLITE_READONLY"):
        return CcSwitchBusyError(
            tr(
                "CC Switch's database has an unfinished write (CC Switch stopped while writing, or "
                "is writing now); start CC Switch once so it completes it, then try again"
            ),
            where,
        )
    if name == "SQLITE_INTERRUPT":
        return CcSwitchError(
            tr("reading took longer than {seconds} s and was stopped; nothing was imported").format(
                seconds=f"{_DEADLINE_S:.0f}"
            ),
            where,
        )
    if name == "SQLITE_TOOBIG":
        return CcSwitchError(
            tr("a value in it is larger than {size} MiB, more than CC Switch writes; nothing was imported").format(
                size=_MAX_VALUE >> 20
            ),
            where,
        )
    if name == "SQLITE_AUTH":
        return CcSwitchError(tr("its schema asks for more than reading; nothing was imported"), where)
    if name == "SQLITE_NOTADB":
        return CcSwitchReadError(tr("not a SQLite database"), where)
    if name.startswith("SQLITE_CORRUPT"):
        return CcSwitchReadError(tr("the database is damaged (SQLite says it is malformed)"), where)
    return CcSwitchReadError(tr("cannot be read (SQLite: {error})").format(error=exc), where)


def _cannot_read(exc: OSError) -> str:
    from kvswitch.io import _why as why

    return tr("cannot read: {reason}").format(reason=why(exc))


def _not_regular(mode: int) -> str:
    """What a file that is not a regular one is, as a database file should be."""
    if stat.S_ISDIR(mode):
        return tr("is a directory, not a database file")
    if stat.S_ISFIFO(mode):
        return tr("is a named pipe (FIFO), not a database file")
    if stat.S_ISSOCK(mode):
        return tr("is a socket, not a database file")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return tr("is a device, not a database file")
    return tr("is a special file, not a database file")
