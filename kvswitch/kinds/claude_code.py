"""Claude Code: ``~/.claude/settings.json`` (and a project's ``.claude/settings.json``).

Its ``env`` block holds ``ANTHROPIC_BASE_URL`` (the root URL: Claude Code appends
``/v1/messages``), ``ANTHROPIC_AUTH_TOKEN`` (sent as a bearer token), ``ANTHROPIC_MODEL`` and
``ANTHROPIC_CUSTOM_HEADERS`` (``Name: Value`` lines; kvswitch owns only its
``X-Cache-Mode`` line). A running session reads the file again before its next request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kvswitch.kinds import register
from kvswitch.kinds.base import MODE_HEADER, ClientSettings, KeyPath, TakesEffect, get_path
from kvswitch.kinds.real import RealKind, text_value
from kvswitch.records import replace

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["ClaudeCode"]

_HEADERS = ("env", "ANTHROPIC_CUSTOM_HEADERS")
_NAMES = ("settings.json", "settings.local.json")
_OWN_KEYS = (
    "apiKeyHelper",
    "includeCoAuthoredBy",
    "enableAllProjectMcpServers",
    "statusLine",
    "cleanupPeriodDays",
    "forceLoginMethod",
    "awsAuthRefresh",
)
"""Top-level settings only Claude Code has (a file copied elsewhere is still told by them)."""
_PERMISSIONS = ("allow", "deny", "ask", "defaultMode")


class ClaudeCode(RealKind):
    id = "claude-code"
    product = "Claude Code"
    takes_effect: ClassVar[TakesEffect] = "now"
    url_has_v1 = False
    requires_model = False  # Claude Code has a default model
    schema_file = "claude-code-settings.schema.json"
    schema_title = "kvswitch: the parts of Claude Code's settings.json kvswitch writes"
    docs_anchor = "claude-code"
    programs = ("claude",)
    cc_switch_app = "claude"
    packages = ("@anthropic-ai/claude-code",)

    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        return (base / "settings.json",)

    def project_paths(self, root: Path) -> tuple[Path, ...]:
        return (root / ".claude" / "settings.json",)

    def detect(self, path: Path | None, data: Any) -> int:
        if path is not None and path.name in _NAMES:
            own = os.environ.get("CLAUDE_CONFIG_DIR")
            if path.parent.name == ".claude" or (own and path.parent == Path(own).expanduser()):
                return 3
        if not isinstance(data, dict):
            return 0
        env = data.get("env")
        if isinstance(env, dict) and any(str(k).startswith("ANTHROPIC_") for k in env):
            return 2
        if "claude-code" in str(data.get("$schema", "")) or any(k in data for k in _OWN_KEYS):
            return 2
        permissions = data.get("permissions")
        if isinstance(permissions, dict) and any(k in permissions for k in _PERMISSIONS):
            return 2
        return 0

    def url_path(self, data: Any) -> KeyPath:
        return ("env", "ANTHROPIC_BASE_URL")

    def model_path(self, data: Any) -> KeyPath | None:
        return ("env", "ANTHROPIC_MODEL")

    def literal_key_path(self, data: Any) -> KeyPath | None:
        """``ANTHROPIC_AUTH_TOKEN`` (a bearer token), or ``ANTHROPIC_API_KEY`` where the file
        keeps its key there alone: a key written beside it would be sent twice."""
        env = data.get("env") if isinstance(data, dict) else None
        if isinstance(env, dict) and "ANTHROPIC_API_KEY" in env and "ANTHROPIC_AUTH_TOKEN" not in env:
            return ("env", "ANTHROPIC_API_KEY")
        return ("env", "ANTHROPIC_AUTH_TOKEN")

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        return (("env", "ANTHROPIC_AUTH_TOKEN"), ("env", "ANTHROPIC_API_KEY"))

    def header(self, data: Any) -> str | None:
        """The value of the one ``X-Cache-Mode`` line (several lines: none, it is unclear)."""
        lines = _lines(get_path(data, _HEADERS))
        ours = _ours(lines)
        return lines[ours[0]].partition(":")[2].strip() if len(ours) == 1 else None

    def extra_headers(self, data: Any, path: KeyPath | None = None) -> dict[str, str]:
        """The ``Name: Value`` lines but kvswitch's ``X-Cache-Mode`` one."""
        out: dict[str, str] = {}
        for line in _lines(get_path(data, _HEADERS)):
            name, colon, value = line.partition(":")
            if colon and name.strip() and name.strip().lower() != MODE_HEADER.lower():
                out[name.strip()] = value.strip()
        return out

    def extra_header_edits(self, cf: ConfigFile, data: Any, want: dict[str, str]) -> list[Edit]:
        """Each header of ``want`` as a ``Name: Value`` line (a line of the same name
        replaced in place, a new one added at the end); the user's other lines kept."""
        from kvswitch.edits import Set

        old = _lines(get_path(data, _HEADERS))
        lines = list(old)
        for name, value in want.items():
            at = next(
                (i for i, line in enumerate(lines) if line.partition(":")[0].strip().lower() == name.lower()), None
            )
            if at is None:
                lines.append(f"{name}: {value}")
            elif lines[at].partition(":")[2].strip() != value:
                lines[at] = f"{name}: {value}"
        return [Set(_HEADERS, "\n".join(lines))] if lines != old else []

    def current(self, data: Any) -> ClientSettings | None:
        """Claude Code sends ``ANTHROPIC_AUTH_TOKEN`` as a bearer token, else ``ANTHROPIC_API_KEY``."""
        found = super().current(data)
        if found is None or found.key is not None:
            return found
        return replace(found, key=text_value(get_path(data, ("env", "ANTHROPIC_API_KEY"))))

    def header_edits(self, cf: ConfigFile, value: str | None) -> list[Edit]:
        """Every ``X-Cache-Mode`` line is kvswitch's: one stays (where the first was), with
        ``value``, or none; the user's other lines are kept as they are."""
        from kvswitch.edits import Delete, Set

        lines = _lines(get_path(cf.data, _HEADERS))
        ours = _ours(lines)
        at = ours[0] if ours else len(lines)
        lines = [line for i, line in enumerate(lines) if i not in ours]
        if value is not None:
            lines.insert(at, f"{MODE_HEADER}: {value}")
        return [Set(_HEADERS, "\n".join(lines))] if lines else [Delete(_HEADERS)]

    def model(self) -> Any:
        return _model()


def _lines(text: Any) -> list[str]:
    """The lines of a newline-separated ``Name: Value`` header string."""
    return text.splitlines() if isinstance(text, str) else []


def _ours(lines: list[str]) -> list[int]:
    """The indexes of the ``X-Cache-Mode`` lines."""
    return [
        i
        for i, line in enumerate(lines)
        if (parts := line.partition(":"))[1] and parts[0].strip().lower() == MODE_HEADER.lower()
    ]


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
