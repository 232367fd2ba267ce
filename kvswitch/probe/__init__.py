"""kvswitch's probe: measure TTFT, ITL and GPU memory per mode, side by side (D-9).

The front door is :mod:`kvswitch.probe.api` (``settings_for`` → ``run`` → a typed
:class:`~kvswitch.probe.shapes.Report`, ``record`` for the history); :func:`verdict` reads a
split/merged ratio. Names are imported on first use, so importing a probe module stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvswitch.probe.api import (
        ASK_ABOVE_TOKENS,
        ProbeSettingsError,
        Spend,
        mode_endpoints,
        record,
        run,
        settings_for,
        spend,
    )
    from kvswitch.probe.comparison import Verdict, ttft_verdict, verdict
    from kvswitch.probe.runner import ProbeSettings
    from kvswitch.probe.shapes import ModeReport, Report

__all__ = [
    "ASK_ABOVE_TOKENS",
    "ModeReport",
    "ProbeSettings",
    "ProbeSettingsError",
    "Report",
    "Spend",
    "Verdict",
    "mode_endpoints",
    "record",
    "run",
    "settings_for",
    "spend",
    "ttft_verdict",
    "verdict",
]

_HOME = {
    "ModeReport": "shapes",
    "ProbeSettings": "runner",
    "Report": "shapes",
    "Verdict": "comparison",
    "ttft_verdict": "comparison",
    "verdict": "comparison",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME.get(name, 'api')}"), name)


def __dir__() -> list[str]:
    return list(__all__)
