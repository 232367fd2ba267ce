"""OpenCode: ``~/.config/opencode/opencode.json`` (``opencode.jsonc`` too).

kvswitch adds a ``provider.kvswitch`` entry (``npm: "@ai-sdk/openai-compatible"``,
``options.baseURL`` ending in ``/v1``, ``options.apiKey`` as ``{env:VAR}`` so the key stays
in the environment, ``options.headers``, ``models``) and sets ``model`` to
``kvswitch/<model>``. The user's other providers stay. OpenCode reads the file at start.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.kinds import register
from kvswitch.kinds.base import MISSING, MODE_HEADER, ClientSettings, KeyPath, RenderInput, get_path
from kvswitch.kinds.real import PROVIDER_ID, RealKind, text_value

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["OpenCode"]

_OURS: KeyPath = ("provider", PROVIDER_ID)
_OPTIONS: KeyPath = (*_OURS, "options")
_SDK = "@ai-sdk/openai-compatible"
_SDKS = "@ai-sdk/"


def _is_reference(value: Any) -> bool:
    """``{env:VAR}`` or ``{file:PATH}``: OpenCode reads the key from there."""
    return isinstance(value, str) and value.startswith("{") and value.endswith("}")


class OpenCode(RealKind):
    id = "opencode"
    product = "OpenCode"
    schema_file = "opencode-config.schema.json"
    schema_title = "kvswitch: the parts of OpenCode's opencode.json kvswitch writes"
    docs_anchor = "opencode"
    programs = ("opencode",)
    cc_switch_app = "opencode"
    packages = ("opencode-ai",)

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        return (xdg / "opencode" / "opencode.json",)

    def project_paths(self, root: Path) -> tuple[Path, ...]:
        return (root / "opencode.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name in ("opencode.json", "opencode.jsonc"):
            return 3
        if not isinstance(data, dict):
            return 0
        if "opencode" in str(data.get("$schema", "")):
            return 2
        providers = data.get("provider")
        entries = providers.values() if isinstance(providers, dict) else ()
        if any(isinstance(e, dict) and str(e.get("npm", "")).startswith(_SDKS) for e in entries):
            return 2  # providers as OpenCode's AI SDK packages, without a $schema
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return (*_OPTIONS, "baseURL")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("model",)

    def model_value(self, r: RenderInput) -> str:
        return f"{PROVIDER_ID}/{r.profile.model}"

    def literal_key_path(self, data: Any) -> KeyPath | None:
        value = get_path(data, (*_OPTIONS, "apiKey"))
        literal = isinstance(value, str) and not _is_reference(value)
        return (*_OPTIONS, "apiKey") if literal else None

    def key_write_path(self, data: Any) -> KeyPath | None:
        return (*_OPTIONS, "apiKey")  # --write-key: the key itself, in place of {env:VAR}

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        providers = data.get("provider") if isinstance(data, dict) else None
        if not isinstance(providers, dict):
            return ()
        paths = [("provider", p, "options", "apiKey") for p in providers]
        # "{env:VAR}" names a variable: it is no key (nothing to mask, no reason for 0600)
        return tuple(p for p in paths if not _is_reference(get_path(data, p)))

    def headers_path(self, data: Any) -> KeyPath:
        return (*_OPTIONS, "headers")

    def current(self, data: Any) -> ClientSettings | None:
        """The provider entry ``model`` (``provider/model``) names; its key may be a
        ``{env:VAR}`` reference (a ``{file:PATH}`` one is not followed)."""
        if not isinstance(data, dict):
            return None
        provider, slash, model = str(data.get("model", "")).partition("/")
        options = get_path(data, ("provider", provider, "options")) if slash else MISSING
        url = text_value(options.get("baseURL")) if isinstance(options, dict) else None
        if url is None:
            return None
        key = options.get("apiKey")
        env = (
            key[len("{env:") : -1].strip()
            if isinstance(key, str) and key.startswith("{env:") and key.endswith("}")
            else None
        )
        headers = options.get("headers")
        mode = headers.get(MODE_HEADER) if isinstance(headers, dict) else None
        return ClientSettings(
            url,
            model=text_value(model),
            mode=mode if isinstance(mode, str) else None,
            headers=self.extra_headers(data, ("provider", provider, "options", "headers")),
            key=None if _is_reference(key) else text_value(key),
            key_env=env or None,
            provider=provider,
        )

    def cc_switch_data(self, settings: dict[str, Any], provider_id: str) -> Any:
        """CC Switch keeps one provider entry: it becomes the file's only provider, its first
        model the file's model."""
        models = settings.get("models")
        first = next(iter(models), "") if isinstance(models, dict) else ""
        entry = provider_id.replace("/", "_")
        return {"model": f"{entry}/{first}", "provider": {entry: settings}}

    def setup_edits(self, cf: ConfigFile, data: Any, r: RenderInput) -> list[Edit]:
        from kvswitch.edits import Delete, Set

        edits: list[Edit] = []
        if get_path(data, (*_OURS, "npm")) != _SDK:
            edits.append(Set((*_OURS, "npm"), _SDK))
        if get_path(data, (*_OURS, "name")) is MISSING:
            edits.append(Set((*_OURS, "name"), "kvswitch"))
        models = get_path(data, (*_OURS, "models"))
        if not isinstance(models, dict) or r.profile.model not in models:
            edits.append(
                Set(
                    (*_OURS, "models", r.profile.model) if isinstance(models, dict) else (*_OURS, "models"),
                    {} if isinstance(models, dict) else {r.profile.model: {}},
                )
            )
        key = get_path(data, (*_OPTIONS, "apiKey"))
        if r.key is None:  # the key stays in the environment
            want = f"{{env:{r.key_env}}}" if r.key_env else None
            if want is None and key is not MISSING:
                edits.append(Delete((*_OPTIONS, "apiKey")))
            elif want is not None and key != want:
                edits.append(Set((*_OPTIONS, "apiKey"), want))
        return edits

    def model(self) -> Any:
        return _model()


@cache
def _model() -> Any:
    from pydantic import Field

    from kvswitch.models.common import StrictModel

    class OpenCodeOptions(StrictModel):
        """What the provider's SDK is given."""

        baseURL: str | None = Field(None, description="Base URL ending in /v1.")
        apiKey: str | None = Field(None, description="The key, or {env:VAR} to read it from a variable.")
        headers: dict[str, str] | None = Field(None, description="Extra headers sent with every request.")

    class OpenCodeProvider(StrictModel):
        """One provider entry."""

        npm: str | None = Field(None, description="The AI SDK package that speaks to it.")
        name: str | None = Field(None, description="Shown in OpenCode.")
        options: OpenCodeOptions | None = Field(None, description="Options for the SDK.")
        models: dict[str, dict[str, object]] | None = Field(None, description="Models by id.")

    class OpenCodeConfig(StrictModel):
        """OpenCode's opencode.json: providers and the model in use (provider/model)."""

        model: str | None = Field(None, description="The model in use, as provider/model.")
        provider: dict[str, OpenCodeProvider] | None = Field(None, description="Providers by id.")

    return OpenCodeConfig


register(OpenCode())
