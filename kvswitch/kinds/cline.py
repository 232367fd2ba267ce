"""Cline (the CLI and the VS Code extension share it): ``~/.cline/data/settings/providers.json``.

kvswitch writes the ``openai-compatible`` entry (``settings.baseUrl``, ``apiKey``, ``model``,
``headers``; ``updatedAt``, which Cline requires, on every write) and makes it
``lastUsedProvider``. Cline keeps the key in this file in plain text; kvswitch writes it
itself, never on a command line. A running session keeps its provider: the next session
uses the change. A running Cline may rewrite the whole file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kvswitch.kinds import register
from kvswitch.kinds.base import (
    MISSING,
    MODE_HEADER,
    ClientSettings,
    KeyPath,
    RenderInput,
    TakesEffect,
    get_path,
)
from kvswitch.kinds.real import RealKind, text_value

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["Cline"]

_ENTRY: KeyPath = ("providers", "openai-compatible")
_SETTINGS: KeyPath = (*_ENTRY, "settings")
_HEADERS: KeyPath = (*_SETTINGS, "headers")


def now_iso() -> str:
    """The time as Cline writes ``updatedAt`` (UTC, milliseconds, ``Z``)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Cline(RealKind):
    id = "cline-providers"
    product = "Cline"
    takes_effect: ClassVar[TakesEffect] = "next session"
    rewrites_itself = True
    schema_file = "cline-providers.schema.json"
    schema_title = "kvswitch: the parts of Cline's providers.json kvswitch writes"
    docs_anchor = "cline"
    programs = ("cline",)
    packages = ("cline", "@cline/cli-")

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        return (home / ".cline" / "data" / "settings" / "providers.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if (
            path is not None
            and path.name == "providers.json"
            and path.parent.name == "settings"
            and path.parent.parent.name == "data"
        ):
            return 3
        if isinstance(data, dict) and isinstance(data.get("providers"), dict) and "lastUsedProvider" in data:
            return 2
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return (*_SETTINGS, "baseUrl")

    def model_path(self, data: Any) -> KeyPath | None:
        return (*_SETTINGS, "model")

    def literal_key_path(self, data: Any) -> KeyPath | None:
        return (*_SETTINGS, "apiKey")

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        providers = data.get("providers") if isinstance(data, dict) else None
        if not isinstance(providers, dict):
            return ()
        return tuple(("providers", p, "settings", "apiKey") for p in providers)

    def headers_path(self, data: Any) -> KeyPath:
        return _HEADERS

    def current(self, data: Any) -> ClientSettings | None:
        """The entry ``lastUsedProvider`` names (a provider with a base URL)."""
        if not isinstance(data, dict):
            return None
        provider = text_value(data.get("lastUsedProvider"))
        settings = get_path(data, ("providers", provider, "settings")) if provider else MISSING
        url = text_value(settings.get("baseUrl")) if isinstance(settings, dict) else None
        if url is None or provider is None:
            return None
        headers = settings.get("headers")
        mode = headers.get(MODE_HEADER) if isinstance(headers, dict) else None
        return ClientSettings(
            url,
            model=text_value(settings.get("model")),
            mode=mode if isinstance(mode, str) else None,
            headers=self.extra_headers(data, ("providers", provider, "settings", "headers")),
            key=text_value(settings.get("apiKey")),
            provider=provider,
        )

    def plan_mode(self, cf: ConfigFile, mode: Any, defaults: Any) -> Any:
        from kvswitch.edits import Set
        from kvswitch.records import replace

        plan = super().plan_mode(cf, mode, defaults)
        if not plan.edits:
            return plan
        # Cline replaces an entry without updatedAt by its default provider
        return replace(plan, edits=(*plan.edits, Set((*_ENTRY, "updatedAt"), now_iso())))

    def setup_edits(self, cf: ConfigFile, data: Any, r: RenderInput) -> list[Edit]:
        from kvswitch.edits import Set

        edits: list[Edit] = []
        if get_path(data, ("version",)) is MISSING:
            # without the file's format version Cline discards the whole file and falls back
            # to its default provider (a remote one): seen with the real cline 3.0
            edits.append(Set(("version",), 1))
        if get_path(data, (*_SETTINGS, "provider")) != "openai-compatible":
            edits.append(Set((*_SETTINGS, "provider"), "openai-compatible"))
        if get_path(data, ("lastUsedProvider",)) != "openai-compatible":
            edits.append(Set(("lastUsedProvider",), "openai-compatible"))
        if get_path(data, (*_ENTRY, "tokenSource")) != "manual":
            edits.append(Set((*_ENTRY, "tokenSource"), "manual"))
        if edits and get_path(data, (*_ENTRY, "updatedAt")) == get_path(cf.data, (*_ENTRY, "updatedAt")):
            edits.append(Set((*_ENTRY, "updatedAt"), now_iso()))
        return edits

    def running(self) -> bool:
        """A ``cline`` process of this user runs now (read from /proc; False where there is none)."""
        me = os.getuid() if hasattr(os, "getuid") else None
        try:
            procs = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
        except OSError:
            return False
        for proc in procs:
            try:
                if me is not None and proc.stat().st_uid != me:
                    continue
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(Path(a.decode(errors="replace")).name == "cline" for a in argv[:2] if a):
                return True
        return False

    def model(self) -> Any:
        return _model()


@cache
def _model() -> Any:
    from pydantic import Field, SecretStr

    from kvswitch.models.common import StrictModel

    class ClineProviderSettings(StrictModel):
        """The settings of one provider entry."""

        provider: str | None = Field(None, description="The provider's id.")
        baseUrl: str | None = Field(None, description="Base URL ending in /v1.")
        apiKey: SecretStr | None = Field(None, description="The API key, in plain text.")
        model: str | None = Field(None, description="Model id.")
        headers: dict[str, str] | None = Field(None, description="Extra headers sent with every request.")

    class ClineProvider(StrictModel):
        """One entry of providers.json."""

        settings: ClineProviderSettings | None = Field(None, description="The provider's settings.")
        updatedAt: str | None = Field(None, description="When it was written; Cline requires it.")
        tokenSource: str | None = Field(None, description="How the key was given.")

    class ClineProviders(StrictModel):
        """Cline's providers.json."""

        version: int | None = Field(None, description="File format.")
        lastUsedProvider: str | None = Field(None, description="The provider Cline uses.")
        providers: dict[str, ClineProvider] | None = Field(None, description="Providers by id.")

    return ClineProviders


register(Cline())
