"""Qwen Code: ``~/.qwen/settings.json`` (and a project's ``.qwen/settings.json``).

kvswitch writes ``security.auth`` (``selectedType: "openai"``, ``baseUrl`` ending in ``/v1``,
``apiKey`` where allowed), ``model.name`` and the ``X-Cache-Mode`` entry of
``model.generationConfig.customHeaders``. Qwen Code reads the file at start.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.kinds import register
from kvswitch.kinds.base import KeyPath, RenderInput, get_path
from kvswitch.kinds.real import RealKind

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["QwenCode"]

_AUTH: KeyPath = ("security", "auth")


class QwenCode(RealKind):
    id = "qwen-code"
    product = "Qwen Code"
    schema_file = "qwen-code-settings.schema.json"
    schema_title = "kvswitch: the parts of Qwen Code's settings.json kvswitch writes"
    docs_anchor = "qwen-code"
    programs = ("qwen",)
    packages = ("@qwen-code/qwen-code",)

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        return (home / ".qwen" / "settings.json",)

    def project_paths(self, root: Path) -> tuple[Path, ...]:
        return (root / ".qwen" / "settings.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name == "settings.json" and path.parent.name == ".qwen":
            return 3
        if (
            isinstance(data, dict)
            and isinstance(get_path(data, _AUTH), dict)
            and "selectedType" in data["security"]["auth"]
        ):
            return 2
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return (*_AUTH, "baseUrl")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("model", "name")

    def literal_key_path(self, data: Any) -> KeyPath | None:
        return (*_AUTH, "apiKey")

    def headers_path(self, data: Any) -> KeyPath:
        return ("model", "generationConfig", "customHeaders")

    def setup_edits(self, cf: ConfigFile, data: Any, r: RenderInput) -> list[Edit]:
        from kvswitch.edits import Set

        if get_path(data, (*_AUTH, "selectedType")) != "openai":
            return [Set((*_AUTH, "selectedType"), "openai")]
        return []

    def model(self) -> Any:
        return _model()


@cache
def _model() -> Any:
    from pydantic import Field, SecretStr

    from kvswitch.models.common import StrictModel

    class QwenAuth(StrictModel):
        """How Qwen Code signs in."""

        selectedType: str | None = Field(None, description="openai: an OpenAI-compatible endpoint.")
        baseUrl: str | None = Field(None, description="Base URL ending in /v1.")
        apiKey: SecretStr | None = Field(None, description="The API key.")

    class QwenSecurity(StrictModel):
        auth: QwenAuth | None = Field(None, description="Sign-in settings.")

    class QwenGeneration(StrictModel):
        customHeaders: dict[str, str] | None = Field(None, description="Extra headers.")

    class QwenModel(StrictModel):
        name: str | None = Field(None, description="Model id.")
        generationConfig: QwenGeneration | None = Field(None, description="Request settings.")

    class QwenCodeSettings(StrictModel):
        """Qwen Code's settings.json: sign-in, model and headers."""

        security: QwenSecurity | None = Field(None, description="Security and sign-in.")
        model: QwenModel | None = Field(None, description="The model and how it is called.")

    return QwenCodeSettings


register(QwenCode())
