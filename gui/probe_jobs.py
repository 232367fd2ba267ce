"""The probe window's work for ``run_in_thread``: plain functions over the library's probe front door
(:mod:`kvswitch.probe.api`) that read the config and the key, run the probe, keep the history and
export. No widgets here, and nothing here runs on the GUI thread.

Settings come from the same ``settings_for`` the CLI uses, so a window run and ``kvswitch probe``
with the same choices send the same requests. Words go through ``QCoreApplication.translate``
(context ``ProbeWindow``, where they were first written; thread-safe).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from PySide6.QtCore import QCoreApplication

if TYPE_CHECKING:
    from kvswitch.probe.api import Flag, Spend
    from kvswitch.probe.runner import ProbeSettings
    from kvswitch.probe.shapes import Report

__all__ = [
    "PROGRESS_EVERY_S",
    "Finished",
    "Prepared",
    "ProbeState",
    "export",
    "load_state",
    "prepare_probe",
    "run_probe_job",
]

PROGRESS_EVERY_S = 0.05
"""The worker reports progress at most this often (the first and the last always)."""


class ProbeState(TypedDict):
    """The history (newest last) and a line about the active profile, or why there is none."""

    history: list[Report]
    profile: str


def load_state(history_limit: int = 50) -> ProbeState:
    """The history and the active profile's line: ``name: model @ merged URL (split: URL)``."""
    from kvswitch.errors import KvswitchError
    from kvswitch.probe.report import load_history

    try:
        from kvswitch.config import read_config

        name, profile = read_config().profile()
        merged, split = profile.mode_url("merged"), profile.mode_url("split")
        active = f"{name}: {profile.model} @ {merged}"
        if split != merged:
            active += f" (split: {split})"
    except KvswitchError as exc:
        active = QCoreApplication.translate("ProbeWindow", "unavailable: {problem}").format(problem=exc)
    return {"history": load_history(history_limit), "profile": active}


@dataclass(frozen=True)
class Prepared:
    """Settings (config and key read) and what the probe would spend."""

    settings: ProbeSettings
    spend: Spend


def prepare_probe(form: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> Prepared:
    """The settings the form stands for (the library's defaults elsewhere) and their cost.
    ``overrides`` are ProbeSettings fields set last."""
    from kvswitch.probe.api import settings_for, spend

    target: dict[str, Any] = {}
    if form["target"] == "url":
        target = {"base_url": form["base_url"], "model": form["model"], "api_key_env": form.get("key_env") or None}
    settings = settings_for(
        **target,
        modes=list(form["modes"]),
        runs=form["runs"],
        warmup=form["warmup"],
        prompt_tokens=form["prompt_tokens"],
        article_prompt=form["article_prompt"],
        max_tokens=form["max_tokens"],
        cache_bust=form["cache_bust"],
        concurrency=form["concurrency"],
        background=form["background"],
    )
    if overrides:
        settings = dataclasses.replace(settings, **dict(overrides))
    return Prepared(settings, spend(settings))


@dataclass(frozen=True)
class Finished:
    """A finished run: its report, why the history did not take it (or ``None``), and how long."""

    report: Report
    history_error: str | None
    seconds: float


def run_probe_job(settings: ProbeSettings, *, progress: Callable[[int, int, str], None], cancel: Flag) -> Finished:
    """Run the probe (its own asyncio loop in this thread) and append its report to the history
    when it measured anything. Progress goes out at most every ``PROGRESS_EVERY_S``."""
    from kvswitch.errors import KvswitchError
    from kvswitch.probe.api import record, run

    last = [0.0, -1.0]  # when the last update went out, and its ``done``

    def throttled(done: int, total: int, mode: str) -> None:
        now = time.monotonic()
        if done >= total or last[1] < 0 or now - last[0] >= PROGRESS_EVERY_S:
            last[0], last[1] = now, done
            progress(done, total, mode)

    started = time.monotonic()
    report = run(settings, on_progress=throttled, cancel=cancel)
    history_error = None
    if sum(m.get("requests", 0) for m in report.get("modes", {}).values()):
        try:
            record(report)
        except (KvswitchError, OSError) as exc:
            history_error = str(exc)
    return Finished(report, history_error, time.monotonic() - started)


def export(report: Mapping[str, Any], path: str) -> str:
    """Write the report through the library (atomic); returns the path written."""
    from kvswitch.probe.report import export_report

    export_report(report, Path(path))
    return path
