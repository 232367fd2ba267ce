"""Reading CC Switch's database (issue 12): every app's providers, which one is current, the
endpoint each describes; read-only to the byte (no side file, WAL or not); every bad input a
clear refusal naming the path, never a hang; hostile rows skipped; keys never shown."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kvswitch.cc_switch import (
    KNOWN_VERSIONS,
    CcSwitchDatabase,
    default_database,
    provider_settings,
    read_database,
    read_providers,
)
from kvswitch.cli._handler import exit_code
from kvswitch.errors import CcSwitchBusyError, CcSwitchError, CcSwitchReadError, ReadError
from tests.ccswitch_db import (
    KEYS,
    LATEST,
    Row,
    build,
    claude,
    codex,
    insert,
    opencode,
    standard_rows,
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / ".cc-switch" / "cc-switch.db"


def _state(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file in ``folder``: size, mtime and a digest of its bytes; and the folder's mtime."""
    out = {"<dir>": (0, folder.stat().st_mtime_ns, "")}
    for p in sorted(folder.iterdir()):
        st = p.stat()
        out[p.name] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _no_hang(call: Callable[[], Any], limit: float = 20.0) -> BaseException | Any:
    """``call()`` in a thread: its result or exception; the test fails if it has not returned
    within ``limit`` seconds (a hang guard, not a speed check)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert box, f"still running after {limit} s: it hangs"
    return box[0]


def _leaks(text: str) -> list[str]:
    return [k for k in KEYS.values() if k in text]


# -- reading -------------------------------------------------------------------------------
def test_reads_every_apps_providers_in_cc_switch_order(db_path: Path) -> None:
    db = read_database(build(db_path))
    assert isinstance(db, CcSwitchDatabase)
    assert db.version == LATEST and not db.skipped and not db.snapshot
    got = [(p.app, p.id, p.name, p.current) for p in db.providers]
    assert got == [
        ("claude", "claude-relay", "Relay", True),  # sort_index 0 first, as CC Switch lists them
        ("claude", "claude-local", "Local llama.cpp", False),
        ("claude", "claude-official", "Claude Official", False),
        ("codex", "codex-local", "Local vLLM", True),
        ("codex", "codex-official", "OpenAI Official", False),
        ("gemini", "gemini-relay", "Gemini relay", True),
        ("opencode", "opencode-local", "Local SGLang", True),
    ]
    official = next(p for p in db.providers if p.id == "claude-official")
    assert official.category == "official" and official.sort_index == 2
    assert read_providers(db_path) == list(db.providers)


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_every_known_schema_version_reads(db_path: Path, version: int) -> None:
    build(db_path, version, [claude(current=True)])
    db = read_database(db_path)
    assert db.version == version
    assert [(p.id, p.current) for p in db.providers] == [("claude-local", True)]


def test_claude_provider_is_its_settings_json(db_path: Path) -> None:
    build(db_path, providers=[claude(current=True)])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None
    assert (found.url, found.url_has_v1, found.model) == ("http://127.0.0.1:8080", False, "qwen3-coder")
    assert found.key == KEYS["claude"] and found.key_env is None


def test_codex_provider_is_its_config_toml_with_the_key_from_auth(db_path: Path) -> None:
    build(db_path, providers=[codex(current=True)])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None
    assert (found.url, found.model, found.provider) == ("http://127.0.0.1:8081/v1", "gpt-oss-120b", "custom")
    assert found.key == KEYS["codex"] and found.key_env is None


def test_codex_provider_naming_a_variable_keeps_the_variable_not_the_auth_key(db_path: Path) -> None:
    build(db_path, providers=[codex(extra='env_key = "MY_RELAY_KEY"\n')])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None
    assert found.key_env == "MY_RELAY_KEY" and found.key is None


def test_opencode_provider_is_one_entry_with_its_first_model(db_path: Path) -> None:
    build(db_path, providers=[opencode(current=True)])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None
    assert (found.url, found.model, found.provider) == ("http://127.0.0.1:8082/v1", "qwen3-coder-30b", "opencode-local")
    assert found.headers == {"X-Team": "kv"} and found.key == KEYS["opencode"]


def test_opencode_key_variable_is_kept_as_a_variable(db_path: Path) -> None:
    build(db_path, providers=[opencode(key="{env:SGLANG_KEY}")])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None and found.key is None and found.key_env == "SGLANG_KEY"


def test_apps_without_a_client_kind_and_official_logins_give_none(db_path: Path) -> None:
    build(db_path)
    by_id = {p.id: p for p in read_providers(db_path)}
    assert provider_settings(by_id["gemini-relay"]) is None
    assert provider_settings(by_id["claude-official"]) is None
    assert provider_settings(by_id["codex-official"]) is None


@pytest.mark.parametrize(
    "row",
    [
        claude(key="PROXY_MANAGED", url="http://127.0.0.1:15721"),
        codex(key="PROXY_MANAGED"),
        opencode(key="PROXY_MANAGED"),
    ],
    ids=["claude", "codex", "opencode"],
)
def test_the_proxy_placeholder_is_never_a_key(db_path: Path, row: Row) -> None:
    build(db_path, providers=[row])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None and found.key is None


def test_claude_placeholder_token_falls_back_to_a_real_api_key(db_path: Path) -> None:
    row = claude(key="PROXY_MANAGED")
    row.settings["env"]["ANTHROPIC_API_KEY"] = KEYS["claude-2"]
    build(db_path, providers=[row])
    found = provider_settings(read_providers(db_path)[0])
    assert found is not None and found.key == KEYS["claude-2"]


def test_a_codex_config_that_does_not_parse_is_refused_naming_the_provider(db_path: Path) -> None:
    row = codex(name="Broken relay")
    row.settings["config"] = 'model_provider = "custom"\n[model_providers.custom\nbase_url = 1'
    build(db_path, providers=[row])
    with pytest.raises(CcSwitchError, match=r"'Broken relay' \(codex\): its config.toml does not parse"):
        provider_settings(read_providers(db_path)[0])


# -- which provider is current -------------------------------------------------------------
def test_device_settings_choose_the_current_provider_as_cc_switch_does(db_path: Path) -> None:
    build(db_path, device_current={"Claude": "claude-local", "Codex": "no-such-provider"})
    current = {p.app: p.id for p in read_providers(db_path) if p.current}
    assert current["claude"] == "claude-local"  # the device's choice beats is_current
    assert current["codex"] == "codex-local"  # a stale id falls back to is_current


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_unreadable_device_settings_fall_back_to_is_current(db_path: Path, content: bytes) -> None:
    build(db_path)
    (db_path.parent / "settings.json").write_bytes(content)
    current = {p.app: p.id for p in read_providers(db_path) if p.current}
    assert current["claude"] == "claude-relay"


def test_several_rows_marked_current_give_one_current_provider(db_path: Path) -> None:
    build(db_path, providers=[claude("a", current=True, sort_index=0), claude("b", current=True, sort_index=1)])
    assert [(p.id, p.current) for p in read_providers(db_path)] == [("a", True), ("b", False)]


# -- read-only, to the byte ----------------------------------------------------------------
def test_reading_changes_nothing_and_leaves_no_side_file(db_path: Path) -> None:
    build(db_path, device_current={"Claude": "claude-local"})
    before = _state(db_path.parent)
    for p in read_providers(db_path):
        provider_settings(p)
    assert _state(db_path.parent) == before


def test_wal_database_closed_cleanly_is_read_without_creating_wal_or_shm(db_path: Path) -> None:
    build(db_path, wal=True)
    assert sorted(os.listdir(db_path.parent)) == ["cc-switch.db"]
    before = _state(db_path.parent)
    db = read_database(db_path)
    assert db.snapshot and len(db.providers) == len(standard_rows())
    assert _state(db_path.parent) == before  # a plain mode=ro open would leave -wal and -shm


@pytest.fixture
def wal_writer(db_path: Path) -> Iterator[sqlite3.Connection]:
    """CC Switch running: a WAL-mode database with a writer connected, its commits still in
    the WAL (no checkpoint)."""
    build(db_path, wal=True)
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA wal_autocheckpoint = 0")
    insert(con, [claude("in-wal-only", "Only in the WAL", sort_index=5)])
    con.execute("UPDATE providers SET name = 'Renamed in WAL' WHERE id = 'codex-local'")
    con.execute("DELETE FROM providers WHERE id = 'gemini-relay'")
    yield con
    con.close()


def test_wal_database_with_cc_switch_running_is_read_whole_and_untouched(
    db_path: Path,
    wal_writer: sqlite3.Connection,
) -> None:
    assert db_path.with_name("cc-switch.db-wal").stat().st_size > 0
    before = _state(db_path.parent)
    db = read_database(db_path)
    names = {p.id: p.name for p in db.providers}
    assert names["in-wal-only"] == "Only in the WAL" and names["codex-local"] == "Renamed in WAL"
    assert "gemini-relay" not in names
    assert _state(db_path.parent) == before  # the -shm too: no reader mark was set in it
    wal_writer.execute("UPDATE providers SET name = 'after' WHERE id = 'in-wal-only'")
    assert {p.id: p.name for p in read_providers(db_path)}["in-wal-only"] == "after"


def _sqlite_view(folder: Path, tmp: Path) -> list[tuple[Any, ...]]:
    """What SQLite itself reads from a copy of the database files (the oracle)."""
    copy = tmp / "oracle"
    shutil.copytree(folder, copy)
    con = sqlite3.connect(copy / "cc-switch.db")
    try:
        return con.execute("SELECT app_type, id, name, settings_config FROM providers ORDER BY app_type, id").fetchall()
    finally:
        con.close()


def test_wal_left_by_a_crashed_cc_switch_reads_as_sqlite_recovers_it(db_path: Path, tmp_path: Path) -> None:
    build(db_path, wal=True)
    script = (
        "import sqlite3, sys, os\n"
        "from tests.ccswitch_db import insert, claude\n"
        "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "con.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "insert(con, [claude(f'c{i}', f'name {i}', sort_index=i) for i in range(40)])\n"
        "con.execute(\"UPDATE providers SET settings_config = '{}' WHERE id = 'c3'\")\n"
        "con.execute('PRAGMA cache_size = 1')\n"
        "con.execute('BEGIN')\n"
        "con.execute(\"DELETE FROM providers WHERE id = 'c4'\")\n"
        "insert(con, [claude(f'u{i}', 'u' * 3000) for i in range(60)])  # spills to the WAL\n"
        "os._exit(0)  # killed mid-transaction: its frames were never committed\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True, cwd=root)
    wal = db_path.with_name("cc-switch.db-wal")
    data = wal.read_bytes()
    page_size = int.from_bytes(data[8:12], "big")
    step = 24 + page_size

    def frame(i: int) -> bytes:
        return data[32 + i * step : 32 + i * step + 24]

    frames = (len(data) - 32) // step
    commits = [i for i in range(frames) if int.from_bytes(frame(i)[4:8], "big")]
    end = commits[-1] + 1
    while end < frames and frame(end)[8:16] == data[16:24]:
        end += 1
    assert end > commits[-1] + 1  # the killed transaction's frames follow the last commit
    # then a torn frame: right salts, a commit mark, a page of noise that its checksum does not
    # sum (SQLite's recovery stops before it, and drops the uncommitted frames; so must we)
    forged = bytearray(frame(commits[-1]))
    forged[4:8] = (1000).to_bytes(4, "big")
    with wal.open("r+b") as f:
        f.seek(32 + end * step)
        f.write(bytes(forged) + os.urandom(page_size))
    before = _state(db_path.parent)
    ours = [(p.app, p.id, p.name, json.dumps(p.settings)) for p in read_providers(db_path)]
    assert _state(db_path.parent) == before
    oracle = _sqlite_view(db_path.parent, tmp_path)
    assert sorted((a, i, n) for a, i, n, _ in ours) == [(a, i, n) for a, i, n, _ in oracle]
    assert {i for _, i, _, _ in ours} >= {"c4", "c39"} and not {i for _, i, _, _ in ours} & {"u0", "u59"}
    assert next(s for _, i, _, s in ours if i == "c3") == "{}"


# -- refusals ------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [99, LATEST + 1, 0, -1])
def test_an_unknown_schema_version_is_refused_naming_it(db_path: Path, version: int) -> None:
    build(db_path, version)
    before = _state(db_path.parent)
    with pytest.raises(CcSwitchError) as info:
        read_database(db_path)
    message = str(info.value)
    assert str(db_path) in message and f"version {version} " in message
    assert f"({KNOWN_VERSIONS[0]}–{KNOWN_VERSIONS[-1]})" in message and "nothing was imported" in message
    assert not isinstance(info.value, ReadError) and exit_code(info.value) == 1
    assert _state(db_path.parent) == before


def test_a_newer_version_says_it_is_newer(db_path: Path) -> None:
    build(db_path, 99)
    with pytest.raises(CcSwitchError, match="schema version 99 is newer than kvswitch reads"):
        read_database(db_path)


def _sqlite_file(path: Path, *sql: str, version: int = LATEST) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for statement in sql:
        con.execute(statement)
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.close()
    return path


def test_a_database_without_a_providers_table_is_refused(db_path: Path) -> None:
    _sqlite_file(db_path, "CREATE TABLE notes (body TEXT)")
    with pytest.raises(CcSwitchError, match="has no providers table") as info:
        read_database(db_path)
    assert str(db_path) in str(info.value)


def test_missing_columns_are_named(db_path: Path) -> None:
    _sqlite_file(db_path, "CREATE TABLE providers (id TEXT, name TEXT, settings_config TEXT)")
    with pytest.raises(CcSwitchError, match="has no app_type, is_current columns"):
        read_database(db_path)


def test_a_providers_view_is_refused_not_run(db_path: Path) -> None:
    # a view would run whatever query it holds (this one never ends)
    _sqlite_file(
        db_path,
        "CREATE VIEW providers AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
        "SELECT x + 1 FROM c) SELECT x AS id, 'claude' AS app_type, 'n' AS name, "
        "'{}' AS settings_config, 0 AS is_current FROM c",
    )
    result = _no_hang(lambda: read_database(db_path))
    assert isinstance(result, CcSwitchError) and "a view" in str(result)


_WHY = {
    "missing": "no such file",
    "empty": "is empty",
    "garbage": "not a SQLite database",
    "short": "not a SQLite database",
    "directory": "is a directory, not a database file",
    "fifo": "is a named pipe (FIFO), not a database file",
    "dev-zero": "is a device, not a database file",
    "damaged": "damaged",
}


@pytest.mark.parametrize("make", sorted(_WHY))
def test_what_is_not_a_database_is_refused_naming_the_path(tmp_path: Path, make: str) -> None:
    path = tmp_path / "cc-switch.db"
    if make == "empty":
        path.write_bytes(b"")
    elif make == "garbage":
        path.write_bytes(b"not a database at all\n" * 50)
    elif make == "short":
        path.write_bytes(b"SQLite format 3\x00\x10\x00")
    elif make == "directory":
        path.mkdir()
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "dev-zero":
        path.symlink_to("/dev/zero")
    elif make == "damaged":
        build(path)
        data = bytearray(path.read_bytes())
        data[100:4096] = os.urandom(3996)  # the schema page
        path.write_bytes(bytes(data))
    result = _no_hang(lambda: read_database(path))
    assert isinstance(result, CcSwitchReadError), result
    assert str(result).startswith(f"{path}:") and exit_code(result) == 2
    assert _WHY[make] in str(result)


def test_a_locked_database_says_try_again_and_does_not_hang(db_path: Path) -> None:
    build(db_path)
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # CC Switch in the middle of a write
    try:
        result = _no_hang(lambda: read_database(db_path, timeout=0.2))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert isinstance(result, CcSwitchBusyError) and "try again" in str(result)
    assert exit_code(result) == 1
    assert len(read_providers(db_path)) == len(standard_rows())  # and it reads once it is free


def test_an_interrupted_write_is_refused_and_its_journal_left_alone(db_path: Path) -> None:
    build(db_path)
    script = (
        "import sqlite3, sys, os\n"
        "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "con.execute('PRAGMA cache_size = 1')\n"
        "con.execute('BEGIN')\n"
        "for i in range(100):\n"
        "    con.execute(\"INSERT INTO settings VALUES (?, ?)\", (str(i), 'x' * 4000))\n"
        "os._exit(0)  # killed: a hot journal is left\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True)
    assert db_path.with_name("cc-switch.db-journal").exists()
    before = _state(db_path.parent)
    with pytest.raises(CcSwitchBusyError, match="unfinished write"):
        read_database(db_path)
    assert _state(db_path.parent) == before  # never rolled back by a reader


# -- hostile rows --------------------------------------------------------------------------
def test_hostile_rows_are_skipped_with_a_reason_and_the_rest_read(db_path: Path) -> None:
    sqlish = "x'); DROP TABLE providers; --"
    rows = [
        claude(current=True),
        Row("claude", "not-json", "Not JSON", "{not json"),
        Row("claude", "array", "Array", "[1, 2, 3]"),
        Row("claude", "deep", "Deep", "[" * 10000 + "]" * 10000),
        Row("claude", "deep-object", "Deep object", '{"a":' * 10000 + "1" + "}" * 10000),
        Row("claude", "huge", "Huge", json.dumps({"env": {"X": "y" * (5 * 1024 * 1024)}})),
        Row("claude", "blob", "Blob", b"\xff\xfe\x00binary"),
        Row("claude", "long-name", "n" * 5000, {"env": {}}),
        claude(sqlish, sqlish, sort_index=9),
    ]
    build(db_path, providers=rows)
    before = _state(db_path.parent)
    db = read_database(db_path)
    assert {p.id for p in db.providers} == {"claude-local", sqlish}
    assert next(p for p in db.providers if p.id == sqlish).name == sqlish
    reasons = {s.id: s.reason for s in db.skipped}
    assert reasons == {
        "not-json": "its settings are not valid JSON (line 1, column 2)",
        "array": "its settings are not a JSON object",
        "deep": "its settings are nested too deeply",
        "deep-object": "its settings are nested too deeply",
        "huge": "its settings are larger than 4 MiB",
        "blob": "its settings are not UTF-8 text",
        "long-name": "its id, app or name is too long",
    }
    assert _state(db_path.parent) == before
    assert sqlite3.connect(db_path).execute("SELECT count(*) FROM providers").fetchone()[0] == len(rows)


def test_rows_that_are_not_text_where_text_belongs_are_skipped(db_path: Path) -> None:
    _sqlite_file(
        db_path,
        "CREATE TABLE providers (id, app_type, name, settings_config, is_current, sort_index)",
        "INSERT INTO providers VALUES (7, 'claude', 'int id', '{}', 1, 'first')",
        "INSERT INTO providers VALUES (NULL, 'claude', 'no id', '{}', 0, NULL)",
        "INSERT INTO providers VALUES ('ok', 'claude', NULL, '{}', 'yes', 1.5)",
        "INSERT INTO providers VALUES ('no-settings', 'claude', 'n', NULL, 0, NULL)",
    )
    db = read_database(db_path)
    # SQLite reads a number as text where text is asked for; 'yes' is not is_current = 1
    assert {(p.id, p.name, p.current, p.sort_index, str(p.settings)) for p in db.providers} == {
        ("7", "int id", True, None, "{}"),
        ("ok", "ok", False, None, "{}"),
    }
    assert sorted(s.reason for s in db.skipped) == ["it has no settings", "its id or app is not text"]


def test_a_schema_that_computes_more_than_it_reads_is_refused(db_path: Path) -> None:
    _sqlite_file(
        db_path,
        "CREATE TABLE providers (id TEXT, app_type TEXT, name TEXT, is_current INT)",
        "INSERT INTO providers (id, app_type, name, is_current) VALUES ('a', 'claude', 'n', 1)",
        "ALTER TABLE providers ADD COLUMN "  # computed on every read: 2 GB
        "settings_config TEXT GENERATED ALWAYS AS (hex(zeroblob(1000000000))) VIRTUAL",
    )
    result = _no_hang(lambda: read_database(db_path))
    assert isinstance(result, CcSwitchError) and str(db_path) in str(result)
    assert "computes settings_config (a generated column)" in str(result)


# -- keys ----------------------------------------------------------------------------------
def test_keys_appear_only_in_the_key_field(db_path: Path) -> None:
    build(db_path)
    db = read_database(db_path)
    shown = [repr(db), str(db)]
    keys = set()
    for p in db.providers:
        shown += [repr(p), str(p)]
        found = provider_settings(p)
        if found is not None:
            shown += [repr(found), str(found)]
            keys.add(found.key)
    assert not _leaks("\n".join(shown))
    assert keys == {KEYS["claude"], KEYS["claude-2"], KEYS["codex"], KEYS["opencode"]}


def test_default_database_follows_home(sandbox: Path) -> None:
    assert default_database() == sandbox / ".cc-switch" / "cc-switch.db"


def test_the_guard_refuses_anything_but_reads(db_path: Path) -> None:
    from kvswitch.cc_switch import _guard

    build(db_path)
    con = sqlite3.connect(db_path, isolation_level=None)  # even a read-write connection
    try:
        _guard(con)
        assert con.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == 64 * 1024 * 1024  # no value computed larger
        for sql in (
            "DELETE FROM providers",
            "UPDATE providers SET name = 'x'",
            "PRAGMA user_version = 5",
            "ATTACH DATABASE ':memory:' AS other",
            "CREATE TABLE t (a)",
            "SELECT randomblob(10)",
        ):
            with pytest.raises(sqlite3.DatabaseError):
                con.execute(sql)
        assert len(con.execute("SELECT id FROM providers").fetchall()) == len(standard_rows())
    finally:
        con.close()


def test_a_wal_database_read_while_cc_switch_commits_and_checkpoints_is_never_torn(
    db_path: Path,
) -> None:
    build(db_path, wal=True)
    stop = threading.Event()
    commits = 0

    def write() -> None:
        nonlocal commits
        con = sqlite3.connect(db_path, isolation_level=None)
        con.execute("PRAGMA wal_autocheckpoint = 4")  # checkpoints (and WAL resets) all along
        while not stop.is_set() and commits < 5000:
            commits += 1
            con.execute("UPDATE providers SET name = ? WHERE id = 'codex-local'", (f"n{commits}",))
        con.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    names, busy = set(), 0
    try:
        for _ in range(40):
            try:
                db = read_database(db_path)
            except CcSwitchBusyError:
                busy += 1
                continue
            assert db.snapshot and len(db.providers) == len(standard_rows()) and not db.skipped
            names.add(next(p.name for p in db.providers if p.id == "codex-local"))
    finally:
        stop.set()
        writer.join(20)
    assert busy < 40 and all(n == "Local vLLM" or n.startswith("n") for n in names)


def test_a_wal_database_that_keeps_changing_says_try_again(
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import itertools

    from kvswitch import cc_switch

    build(db_path, wal=True)
    counter = itertools.count()
    monkeypatch.setattr(cc_switch, "_stamp", lambda path: (next(counter), 0, 0))
    with pytest.raises(CcSwitchBusyError, match="kept changing while kvswitch read it"):
        read_database(db_path)
