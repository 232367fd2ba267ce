"""Claude Code: ``~/.claude/settings.json`` (and a project's ``.claude/settings.json``).

Its ``env`` block holds ``ANTHROPIC_BASE_URL`` (the root URL: Claude Code appends
``/v1/messages``), ``ANTHROPIC_AUTH_TOKEN`` (sent as a bearer token), ``ANTHROPIC_MODEL`` and
``ANTHROPIC_CUSTOM_HEADERS`` (``Name: Value`` lines; kvswitch owns only its
``X-Cache-Mode`` line). A running session reads the file again before its next request.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kvswitch.kinds import register
from kvswitch.kinds.base import MODE_HEADER, KeyPath, TakesEffect, get_path
from kvswitch.kinds.real import RealKind, find_header, header_lines

if TYPE_CHECKING:
    from kvswitch.document import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["ClaudeCode"]

_HEADERS = ("env", "ANTHROPIC_CUSTOM_HEADERS")


class ClaudeCode(RealKind):
    id = "claude-code"
    product = "Claude Code"
    takes_effect: ClassVar[TakesEffect] = "now"
    url_has_v1 = False
    requires_model = False  # Claude Code has a default model
    schema_file = "claude-code-settings.schema.json"
    schema_title = "kvswitch: the parts of Claude Code's settings.json kvswitch writes"
    docs_anchor = "claude-code"

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        return (base / "settings.json",)

    def project_paths(self, root: Path) -> tuple[Path, ...]:
        return (root / ".claude" / "settings.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.parent.name == ".claude" and path.name in ("settings.json", "settings.local.json"):
            return 3
        env = data.get("env") if isinstance(data, dict) else None
        if isinstance(env, dict) and any(str(k).startswith("ANTHROPIC_") for k in env):
            return 2
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return ("env", "ANTHROPIC_BASE_URL")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("env", "ANTHROPIC_MODEL")

    def literal_key_path(self, data: Any) -> KeyPath | None:
        return ("env", "ANTHROPIC_AUTH_TOKEN")

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        return (("env", "ANTHROPIC_AUTH_TOKEN"), ("env", "ANTHROPIC_API_KEY"))

    def header(self, data: Any) -> str | None:
        lines = header_lines(get_path(data, _HEADERS))
        i = find_header(lines)
        return None if i is None else lines[i].partition(":")[2].strip()

    def header_edits(self, cf: ConfigFile, value: str | None) -> list[Edit]:
        from kvswitch.edits import Delete, Set

        lines = header_lines(get_path(cf.data, _HEADERS))
        i = find_header(lines)
        line = f"{MODE_HEADER}: {value}"
        if value is None:
            if i is None:
                return []
            del lines[i]
        elif i is None:
            lines.append(line)
        else:
            lines[i] = line
        return [Set(_HEADERS, "\n".join(lines))] if lines else [Delete(_HEADERS)]

    def model(self) -> Any:
        return _model()


@cache
def _model() -> Any:
    from pydantic import Field, SecretStr

    from kvswitch.models.common import StrictModel

    class ClaudeCodeEnv(StrictModel):
        """The variables Claude Code reads from its settings (every value a string)."""

        ANTHROPIC_BASE_URL: str | None = Field(None, description="Root URL; Claude Code appends /v1/messages.")
        ANTHROPIC_AUTH_TOKEN: SecretStr | None = Field(None, description="Sent as a bearer token.")
        ANTHROPIC_API_KEY: SecretStr | None = Field(None, description="Sent as x-api-key.")
        ANTHROPIC_MODEL: str | None = Field(None, description="Model id.")
        ANTHROPIC_CUSTOM_HEADERS: str | None = Field(None, description="Extra headers, one 'Name: Value' per line.")

    class ClaudeCodeSettings(StrictModel):
        """Claude Code's settings.json: kvswitch writes only in its env block."""

        env: ClaudeCodeEnv | None = Field(None, description="Environment for Claude Code and its tools.")

    return ClaudeCodeSettings


register(ClaudeCode())
