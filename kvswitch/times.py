"""Times as kvswitch shows them: ISO 8601 in UTC in every report and JSON output, and the
local minute where a person reads one in a list."""

from __future__ import annotations

__all__ = ["iso_utc", "local_minute"]


def iso_utc(seconds: float | None) -> str | None:
    """A Unix time as ISO 8601 in UTC (``2026-12-03T14:05:09Z``, milliseconds where there are
    any); None stays None."""
    if seconds is None:
        return None
    from datetime import UTC, datetime  # here: a command that shows no time never imports datetime

    moment = datetime.fromtimestamp(seconds, tz=UTC)
    text = moment.isoformat(timespec="milliseconds" if seconds % 1 else "seconds")
    return text.replace("+00:00", "Z")


def local_minute(value: object) -> str:
    """An ISO 8601 time as ``2026-12-03 15:05`` in the local zone; text that is not one is shown
    as it is (cut to the minute's length)."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)[:16].replace("T", " ")
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")
