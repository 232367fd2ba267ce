"""Running doctor: every check in order, into one :class:`DoctorReport`, keys masked in every text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvswitch.doctor.checks import CHECKS, Check
from kvswitch.doctor.gpu import gpu_checks
from kvswitch.doctor.local import chunk_check, config_check, key_variables_check, lint_all
from kvswitch.doctor.server import network_checks
from kvswitch.doctor.target import DoctorSettings, Target, clean_key, target_from_settings
from kvswitch.i18n import clauses, tr

__all__ = ["DoctorReport", "run_doctor"]


@dataclass
class DoctorReport:
    """Every check, in order, and what was checked."""

    checks: list[Check]
    target: Target | None = None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def exit_code(self) -> int:
        """1 when any check failed, else 0."""
        return 1 if self.failed else 0

    def get(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def counts(self) -> dict[str, int]:
        """How many checks passed, warned, failed and were skipped."""
        return {status: sum(c.status == status for c in self.checks) for status in ("pass", "warn", "fail", "skip")}

    def as_dict(self) -> dict[str, Any]:
        """The report as ``kvswitch doctor --format json`` puts it in the envelope's ``data``."""
        return {
            "target": self.target.as_dict() if self.target else None,
            "checks": [c.as_dict() for c in self.checks],
            "counts": self.counts(),
        }


def run_doctor(s: DoctorSettings) -> DoctorReport:
    """Run every check (but those in ``s.skip``); never prints, never raises for a finding."""
    import asyncio

    from kvswitch.redact import redact

    checks: list[Check] = []
    config, results, unreadable, config_fail = lint_all(s)
    if config_fail is not None:
        checks.append(config_fail)
    elif results or unreadable:
        checks.append(config_check(results, unreadable))
    target, why = target_from_settings(s, config)
    if why is not None:  # no such profile: that is the config check's failure
        checks = [c for c in checks if c.name != "config" or c.status == "fail"] or [why]
        if checks[0] is not why:
            checks[0] = Check("config", "fail", clauses([checks[0].saw, why.saw]), clauses([checks[0].fix, why.fix]))
    checks.append(key_variables_check(config))
    mode = target.mode if target else (config.model.mode if config else "merged")
    checks.append(chunk_check(results, mode))
    if target is None:
        for name in ("reachable", "url-convention", "auth", "model", "split", "prefix-cache"):
            checks.append(Check(name, "skip", tr("no profile to check (see config)")))
    else:
        checks.extend(asyncio.run(network_checks(target, s)))
    checks.extend(gpu_checks(target, s))
    checks = [c for c in checks if c.name not in s.skip]
    order = {n: i for i, n in enumerate(CHECKS)}
    checks.sort(key=lambda c: order.get(c.name, len(order)))
    keys = [target.key, clean_key(target.key)] if target and target.key else []
    if keys:
        checks = [Check(c.name, c.status, redact(c.saw, keys), redact(c.fix, keys), c.source) for c in checks]
    return DoctorReport(checks, target)
