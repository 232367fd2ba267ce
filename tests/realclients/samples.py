"""Hand-written config files for the real clients: the exact shape each client was seen to
obey (endpoint, key, model, the ``X-Cache-Mode`` header). The harness's own tests use them;
kvswitch's client kinds must write the same shape (compare with :func:`render`).

``base_url`` is a server's root URL (``http://127.0.0.1:PORT``): Claude Code takes the root
and appends ``/v1/messages``; the others take ``…/v1``. Codex and OpenCode read the key from
the variable the file names (``KEY_VAR``): pass ``{KEY_VAR: key}`` to ``run_once``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.realclients.clients import CODEX_SEED, QWEN_SEED, Home

__all__ = ["KEY_VAR", "PROVIDER", "render", "write_config"]

KEY_VAR = "KVSWITCH_TEST_KEY"
PROVIDER = "kvlab"  # the provider id in Codex's and OpenCode's files
CLINE_UPDATED_AT = "2026-01-01T00:00:00.000Z"


def _json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def render(client: str, base_url: str, key: str, model: str, header_value: str) -> str:
    """The whole config file of ``client`` (after its seed, where the seed shares the file)."""
    v1 = base_url.rstrip("/") + "/v1"
    header = {"X-Cache-Mode": header_value}
    if client == "claude":
        return _json(
            {
                "env": {
                    "ANTHROPIC_BASE_URL": base_url.rstrip("/"),
                    "ANTHROPIC_AUTH_TOKEN": key,
                    "ANTHROPIC_MODEL": model,
                    "ANTHROPIC_CUSTOM_HEADERS": f"X-Cache-Mode: {header_value}",
                }
            }
        )
    if client == "codex":
        # top-level keys come before the seed's tables
        return (
            f'model = "{model}"\nmodel_provider = "{PROVIDER}"\n'
            + CODEX_SEED
            + (
                f'\n[model_providers.{PROVIDER}]\nname = "kvswitch test"\nbase_url = "{v1}"\n'
                f'env_key = "{KEY_VAR}"\nwire_api = "responses"\n'
                f'http_headers = {{ "X-Cache-Mode" = "{header_value}" }}\n'
            )
        )
    if client == "cline":
        return _json(
            {
                "version": 1,
                "lastUsedProvider": "openai-compatible",
                "modes": {},
                "providers": {
                    "openai-compatible": {
                        "settings": {
                            "provider": "openai-compatible",
                            "apiKey": key,
                            "model": model,
                            "baseUrl": v1,
                            "headers": header,
                        },
                        "updatedAt": CLINE_UPDATED_AT,
                        "tokenSource": "manual",
                    }
                },
            }
        )
    if client == "opencode":
        return _json(
            {
                "provider": {
                    PROVIDER: {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "kvswitch test",
                        "options": {"baseURL": v1, "apiKey": f"{{env:{KEY_VAR}}}", "headers": header},
                        "models": {model: {"name": model}},
                    }
                },
                "model": f"{PROVIDER}/{model}",
            }
        )
    if client == "qwen":
        return _json(
            {
                **QWEN_SEED,
                "security": {"auth": {"selectedType": "openai", "apiKey": key, "baseUrl": v1}},
                "model": {"name": model, "generationConfig": {"customHeaders": header}},
            }
        )
    raise ValueError(f"unknown client {client!r}")


def write_config(h: Home, base_url: str, key: str, model: str, header_value: str) -> Path:
    """Write ``h``'s config file atomically (temp file + ``os.replace``, as kvswitch does)."""
    text = render(h.client.name, base_url, key, model, header_value)
    h.config.parent.mkdir(parents=True, exist_ok=True)
    temp = h.config.with_name(f".{h.config.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, h.config)
    return h.config
