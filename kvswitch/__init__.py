"""kvswitch: flip LLM coding clients between merged and split KV-cache strategies, safely.

The public API, for scripts::

    import kvswitch
    cfg = kvswitch.load("~/.config/cc-switch/config.toml")   # ClientConfig (snake_case view)
    codes = [d.code for d in kvswitch.lint("settings.json").diagnostics]  # Diagnostic data
    kvswitch.switch("split", ["settings.json", "config.toml"])  # all files or none

Names are imported on first use, so ``import kvswitch`` stays cheap (the pre-commit hook
and the CLI start fast) and never imports Qt.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvswitch.diagnostics import CODES, Diagnostic, Fix, Severity
    from kvswitch.document import ConfigFile, parse_config
    from kvswitch.errors import (
        ChangedOnDiskError,
        ConfigError,
        ConfigParseError,
        ConfigValidationError,
        ConfigVersionError,
        EditError,
        FileAccessError,
        KvswitchError,
        Location,
        ReadError,
        UnknownKindError,
        WriteError,
    )
    from kvswitch.io import WriteResult, atomic_write
    from kvswitch.kinds import detect_kind
    from kvswitch.linter import FixResult, LintResult, fix, lint
    from kvswitch.loader import load
    from kvswitch.models import (
        CacheSettings,
        CCSwitchConfig,
        ClientConfig,
        ClineSettings,
        KvswitchConfig,
        ProviderSettings,
        RequestOptions,
        SplitSettings,
    )
    from kvswitch.rules import check
    from kvswitch.switching import FileSwitch, plan_switch, switch

__all__ = [
    "CODES",
    "CCSwitchConfig",
    "CacheSettings",
    "ChangedOnDiskError",
    "ClientConfig",
    "ClineSettings",
    "ConfigError",
    "ConfigFile",
    "ConfigParseError",
    "ConfigValidationError",
    "ConfigVersionError",
    "Diagnostic",
    "EditError",
    "FileAccessError",
    "FileSwitch",
    "Fix",
    "FixResult",
    "KvswitchConfig",
    "KvswitchError",
    "LintResult",
    "Location",
    "ProviderSettings",
    "ReadError",
    "RequestOptions",
    "Severity",
    "SplitSettings",
    "UnknownKindError",
    "WriteError",
    "WriteResult",
    "__version__",
    "atomic_write",
    "check",
    "detect_kind",
    "fix",
    "lint",
    "load",
    "parse_config",
    "plan_switch",
    "switch",
]

_WHERE = {
    **dict.fromkeys(("CODES", "Diagnostic", "Fix", "Severity"), "kvswitch.diagnostics"),
    **dict.fromkeys(("ConfigFile", "parse_config"), "kvswitch.document"),
    **dict.fromkeys(
        (
            "ChangedOnDiskError",
            "ConfigError",
            "ConfigParseError",
            "ConfigValidationError",
            "ConfigVersionError",
            "EditError",
            "FileAccessError",
            "KvswitchError",
            "Location",
            "ReadError",
            "UnknownKindError",
            "WriteError",
        ),
        "kvswitch.errors",
    ),
    **dict.fromkeys(("WriteResult", "atomic_write"), "kvswitch.io"),
    "detect_kind": "kvswitch.kinds",
    **dict.fromkeys(("FixResult", "LintResult", "fix", "lint"), "kvswitch.linter"),
    "load": "kvswitch.loader",
    **dict.fromkeys(
        (
            "CacheSettings",
            "CCSwitchConfig",
            "ClientConfig",
            "ClineSettings",
            "KvswitchConfig",
            "ProviderSettings",
            "RequestOptions",
            "SplitSettings",
        ),
        "kvswitch.models",
    ),
    "check": "kvswitch.rules",
    **dict.fromkeys(("FileSwitch", "plan_switch", "switch"), "kvswitch.switching"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("kvswitch")
        except PackageNotFoundError:  # running from a source tree
            return "0+unknown"
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kvswitch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
