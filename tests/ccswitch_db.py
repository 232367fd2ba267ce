"""CC Switch databases for tests, built the way CC Switch builds them.

The tables follow CC Switch's own schema (farion1231/cc-switch, ``src-tauri/src/database/
schema.rs``: ``create_tables_on_conn`` and the ``apply_schema_migrations`` ladder), written
here in our own SQL: the columns, their types, defaults and keys as CC Switch has them at
each schema version (``PRAGMA user_version``). ``providers`` gained ``cost_multiplier``,
``limit_daily_usd``, ``limit_monthly_usd`` and ``provider_type`` in the v1→v2 migration
(``ALTER TABLE … ADD COLUMN``, so after the others); no later migration changes it.

The rows carry realistic ``settings_config`` values (Claude Code's ``settings.json``
object, Codex's ``{"auth", "config"}``, one OpenCode provider entry, Gemini's ``env``) with
keys that start ``sk-test-`` so that tests can prove they never leak.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "KEYS",
    "LATEST",
    "Row",
    "build",
    "claude",
    "codex",
    "gemini",
    "insert",
    "opencode",
    "standard_rows",
]

LATEST = 20
"""The newest schema version kvswitch has checked (CC Switch's ``SCHEMA_VERSION``)."""

KEYS = {
    "claude": "sk-test-claude-0123456789abcdef",
    "codex": "sk-test-codex-0123456789abcdef",
    "opencode": "sk-test-opencode-0123456789abcdef",
    "gemini": "sk-test-gemini-0123456789abcdef",
    "claude-2": "sk-test-claude2-0123456789abcdef",
}
"""Every key the standard rows hold: none may appear in any output."""

# providers as create_tables_on_conn creates it (schema.rs, "1. Providers 表")
_PROVIDERS = """
CREATE TABLE IF NOT EXISTS providers (
    id TEXT NOT NULL,
    app_type TEXT NOT NULL,
    name TEXT NOT NULL,
    settings_config TEXT NOT NULL,
    website_url TEXT,
    category TEXT,
    created_at INTEGER,
    sort_index INTEGER,
    notes TEXT,
    icon TEXT,
    icon_color TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    is_current BOOLEAN NOT NULL DEFAULT 0,
    in_failover_queue BOOLEAN NOT NULL DEFAULT 0,
    PRIMARY KEY (id, app_type)
)"""
# the v1 -> v2 migration's columns, added in this order
_V2_COLUMNS = (
    "cost_multiplier TEXT NOT NULL DEFAULT '1.0'",
    "limit_daily_usd TEXT",
    "limit_monthly_usd TEXT",
    "provider_type TEXT",
)
_OTHERS = (
    """CREATE TABLE IF NOT EXISTS provider_endpoints (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        provider_id TEXT NOT NULL,
        app_type TEXT NOT NULL,
        url TEXT NOT NULL,
        added_at INTEGER,
        FOREIGN KEY (provider_id, app_type) REFERENCES providers(id, app_type) ON DELETE CASCADE
    )""",
    "CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE IF NOT EXISTS mcp_servers (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, server_config TEXT NOT NULL,
        description TEXT, homepage TEXT, docs TEXT, tags TEXT NOT NULL DEFAULT '[]',
        enabled_claude BOOLEAN NOT NULL DEFAULT 0, enabled_codex BOOLEAN NOT NULL DEFAULT 0,
        enabled_gemini BOOLEAN NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS idx_providers_failover ON providers(app_type, in_failover_queue, sort_index)",
)


@dataclass
class Row:
    """One provider row. ``settings`` is JSON-encoded unless it is already text (or bytes)."""

    app: str
    id: str
    name: str
    settings: Any
    current: bool = False
    sort_index: int | None = None
    category: str | None = None
    created_at: int | None = 1_760_000_000_000
    website_url: str | None = None
    endpoints: list[str] = field(default_factory=list)


def claude(
    id: str = "claude-local",
    name: str = "Local llama.cpp",
    *,
    url: str = "http://127.0.0.1:8080",
    key: str = KEYS["claude"],
    model: str | None = "qwen3-coder",
    **kw: Any,
) -> Row:
    """A Claude Code provider: CC Switch stores the ``settings.json`` object it writes."""
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": key}
    if model:
        env |= {"ANTHROPIC_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model}
    return Row("claude", id, name, {"env": env, "includeCoAuthoredBy": False}, **kw)


def codex(
    id: str = "codex-local",
    name: str = "Local vLLM",
    *,
    url: str = "http://127.0.0.1:8081/v1",
    key: str = KEYS["codex"],
    model: str = "gpt-oss-120b",
    extra: str = "",
    **kw: Any,
) -> Row:
    """A Codex provider: ``auth`` is ``auth.json``, ``config`` the whole ``config.toml`` text
    (the shape of CC Switch's ``generateThirdPartyConfig``)."""
    config = (
        f'model_provider = "custom"\nmodel = "{model}"\nmodel_reasoning_effort = "high"\n'
        'disable_response_storage = true\n\n[model_providers.custom]\nname = "custom"\n'
        f'base_url = "{url}"\nwire_api = "responses"\nrequires_openai_auth = true\n{extra}'
    )
    return Row("codex", id, name, {"auth": {"OPENAI_API_KEY": key}, "config": config}, **kw)


def opencode(
    id: str = "opencode-local",
    name: str = "Local SGLang",
    *,
    url: str = "http://127.0.0.1:8082/v1",
    key: str = KEYS["opencode"],
    **kw: Any,
) -> Row:
    """An OpenCode provider: one entry of ``opencode.json``'s ``provider`` table."""
    entry = {
        "npm": "@ai-sdk/openai-compatible",
        "name": name,
        "options": {"baseURL": url, "apiKey": key, "setCacheKey": True, "headers": {"X-Team": "kv"}},
        "models": {"qwen3-coder-30b": {"name": "Qwen3 Coder 30B"}, "glm-4.6": {"name": "GLM 4.6"}},
    }
    return Row("opencode", id, name, entry, **kw)


def gemini(id: str = "gemini-relay", name: str = "Gemini relay", **kw: Any) -> Row:
    """A Gemini CLI provider (``.env`` as ``env`` and ``settings.json`` as ``config``)."""
    env = {
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8083",
        "GEMINI_API_KEY": KEYS["gemini"],
        "GEMINI_MODEL": "gemini-2.5-pro",
    }
    return Row("gemini", id, name, {"env": env, "config": {}}, **kw)


def standard_rows() -> list[Row]:
    """Two Claude providers (the second current), one each for Codex, OpenCode and Gemini,
    and the official providers CC Switch seeds (no endpoint of their own)."""
    return [
        claude(sort_index=1),
        claude(
            "claude-relay",
            "Relay",
            url="http://127.0.0.1:9090",
            key=KEYS["claude-2"],
            model=None,
            sort_index=0,
            current=True,
        ),
        Row("claude", "claude-official", "Claude Official", {"env": {}}, category="official", sort_index=2),
        codex(current=True, endpoints=["http://127.0.0.1:8081/v1"]),
        Row("codex", "codex-official", "OpenAI Official", {"auth": {}, "config": ""}, category="official"),
        opencode(current=True),
        gemini(current=True),
    ]


def build(
    path: Path,
    version: int = LATEST,
    providers: Iterable[Row] | None = None,
    *,
    wal: bool = False,
    device_current: dict[str, str] | None = None,
) -> Path:
    """A CC Switch database at ``path`` as CC Switch leaves it at schema ``version``
    (``standard_rows()`` when ``providers`` is None); ``wal``: in WAL mode (closed cleanly,
    so no ``-wal`` file is left). ``device_current`` writes CC Switch's device settings
    (``settings.json`` next to the database: ``{"currentProviderClaude": id, …}``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("PRAGMA auto_vacuum = INCREMENTAL")
        if wal:
            con.execute("PRAGMA journal_mode = WAL")
        con.execute("BEGIN")
        con.execute(_PROVIDERS)
        if version >= 2:
            for column in _V2_COLUMNS:
                con.execute(f"ALTER TABLE providers ADD COLUMN {column}")
        for sql in _OTHERS:
            con.execute(sql)
        insert(con, standard_rows() if providers is None else providers)
        con.execute(f"PRAGMA user_version = {int(version)}")
        con.execute("COMMIT")
    finally:
        con.close()
    if device_current is not None:
        (path.parent / "settings.json").write_text(
            json.dumps({"showInTray": True, **{f"currentProvider{app}": pid for app, pid in device_current.items()}})
        )
    return path


def insert(con: sqlite3.Connection, rows: Iterable[Row]) -> None:
    """Insert provider rows (and their endpoints) the way CC Switch's ``save_provider`` does."""
    for r in rows:
        settings = r.settings if isinstance(r.settings, str | bytes) else json.dumps(r.settings)
        con.execute(
            "INSERT INTO providers (id, app_type, name, settings_config, website_url, category, "
            "created_at, sort_index, notes, icon, icon_color, meta, is_current, in_failover_queue) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, '{}', ?, 0)",
            (r.id, r.app, r.name, settings, r.website_url, r.category, r.created_at, r.sort_index, int(r.current)),
        )
        for url in r.endpoints:
            con.execute(
                "INSERT INTO provider_endpoints (provider_id, app_type, url, added_at) VALUES (?, ?, ?, ?)",
                (r.id, r.app, url, 1_760_000_000_000),
            )
