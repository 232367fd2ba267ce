"""Codex CLI: ``~/.codex/config.toml`` (``$CODEX_HOME/config.toml`` when set).

kvswitch adds a ``[model_providers.kvswitch]`` table (``base_url`` ending in ``/v1``,
``env_key`` naming the variable Codex reads the key from, ``wire_api = "responses"``, the
only value Codex accepts now, and ``http_headers``) and makes it the ``model_provider``.
The user's other providers, ``[profiles.NAME]`` tables and comments stay. Codex reads the
file at start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from kvswitch.i18n import tr
from kvswitch.kinds import register
from kvswitch.kinds.base import MISSING, ClientSettings, KeyPath, RenderInput, get_path
from kvswitch.kinds.real import PROVIDER_ID, RealKind, text_value

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["Codex"]

_OURS: KeyPath = ("model_providers", PROVIDER_ID)
_HEADERS: KeyPath = (*_OURS, "http_headers")
_OWN_KEYS = (
    "model_providers",
    "model_provider",
    "approval_policy",
    "sandbox_mode",
    "model_reasoning_effort",
    "mcp_servers",
    "model_verbosity",
    "sandbox_workspace_write",
)
"""Settings only Codex has (at the top, or in a ``[profiles.NAME]`` table)."""


class Codex(RealKind):
    id = "codex"
    product = "Codex"
    format: ClassVar[Literal["jsonc", "toml"]] = "toml"
    schema_file = "codex-config.schema.json"
    schema_title = "kvswitch: the parts of Codex's config.toml kvswitch writes"
    docs_anchor = "codex"
    programs = ("codex",)
    cc_switch_app = "codex"
    packages = ("@openai/codex",)

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return (base / "config.toml",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name == "config.toml":
            own = os.environ.get("CODEX_HOME")
            if path.parent.name == ".codex" or (own and path.parent == Path(own).expanduser()):
                return 3
        if isinstance(data, dict) and any(k in data for k in _OWN_KEYS):
            return 2
        profiles = data.get("profiles") if isinstance(data, dict) else None
        if isinstance(profiles, dict) and any(
            isinstance(p, dict) and any(k in p for k in _OWN_KEYS) for p in profiles.values()
        ):
            return 2  # [profiles.NAME] tables of Codex's own settings
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return (*_OURS, "base_url")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("model",)

    def headers_path(self, data: Any) -> KeyPath:
        return _HEADERS

    def current(self, data: Any) -> ClientSettings | None:
        """The ``[model_providers.ID]`` table ``model_provider`` names (a chosen
        ``[profiles.NAME]`` table's choice first); a built-in provider has none."""
        if not isinstance(data, dict):
            return None
        chosen = get_path(data, ("profiles", data.get("profile", MISSING)))
        chosen = chosen if isinstance(chosen, dict) else {}
        provider = text_value(chosen.get("model_provider", data.get("model_provider")))
        table = get_path(data, ("model_providers", provider)) if provider else MISSING
        url = text_value(table.get("base_url")) if isinstance(table, dict) else None
        if url is None or provider is None:
            return None
        headers_path: KeyPath = ("model_providers", provider, "http_headers")
        return ClientSettings(
            url,
            model=text_value(chosen.get("model", data.get("model"))),
            headers=self.extra_headers(data, headers_path),
            mode=_header(table.get("http_headers")),
            key=text_value(table.get("experimental_bearer_token")),
            key_env=text_value(table.get("env_key")),
            provider=provider,
        )

    def cc_switch_data(self, settings: dict[str, Any], provider_id: str) -> Any:
        """CC Switch keeps Codex's ``config.toml`` as text (empty: the official login)."""
        import tomllib

        config = settings.get("config")
        if not isinstance(config, str) or not config.strip():
            return None
        try:
            return tomllib.loads(config)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise ValueError(tr("its config.toml does not parse ({error})").format(error=exc)) from exc

    def cc_switch_key(self, settings: dict[str, Any]) -> str | None:
        """CC Switch keeps Codex's ``auth.json`` beside it: ``OPENAI_API_KEY``."""
        auth = settings.get("auth")
        return text_value(auth.get("OPENAI_API_KEY")) if isinstance(auth, dict) else None

    def setup_edits(self, cf: ConfigFile, data: Any, r: RenderInput) -> list[Edit]:
        from kvswitch.edits import Delete, Set

        edits: list[Edit] = []
        want = {"name": "kvswitch", "wire_api": "responses"}
        for key, value in want.items():
            if get_path(data, (*_OURS, key)) != value:
                edits.append(Set((*_OURS, key), value))
        env_key = get_path(data, (*_OURS, "env_key"))
        if r.key_env is None and env_key is not MISSING:
            edits.append(Delete((*_OURS, "env_key")))
        elif r.key_env is not None and env_key != r.key_env:
            edits.append(Set((*_OURS, "env_key"), r.key_env))
        if get_path(data, ("model_provider",)) != PROVIDER_ID:
            edits.append(Set(("model_provider",), PROVIDER_ID))
        return edits

    def model(self) -> Any:
        return _model()


def _header(headers: Any) -> str | None:
    from kvswitch.kinds.base import MODE_HEADER

    value = headers.get(MODE_HEADER) if isinstance(headers, dict) else None
    return value if isinstance(value, str) else None


@cache
def _model() -> Any:
    from pydantic import Field

    from kvswitch.models.common import StrictModel

    class CodexProvider(StrictModel):
        """One ``[model_providers.ID]`` table."""

        name: str | None = Field(None, description="Shown in Codex.")
        base_url: str | None = Field(None, description="Base URL ending in /v1; Codex appends /responses.")
        env_key: str | None = Field(None, description="The variable Codex reads the API key from.")
        wire_api: Literal["responses"] | None = Field(None, description="The protocol; Codex accepts only responses.")
        http_headers: dict[str, str] | None = Field(None, description="Extra headers sent with every request.")

    class CodexConfig(StrictModel):
        """Codex's config.toml: the provider tables and the choice of one."""

        model: str | None = Field(None, description="Model id.")
        model_provider: str | None = Field(None, description="The provider Codex uses.")
        model_providers: dict[str, CodexProvider] | None = Field(None, description="Providers by id.")

    return CodexConfig


register(Codex())
