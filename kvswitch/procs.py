"""A process's identity from ``/proc``: its state and start time, so that a recorded pid is
only ever signalled while it is still the process that was recorded."""

from __future__ import annotations

from pathlib import Path

__all__ = ["start_time", "stat"]


def stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks since boot) from ``/proc/<pid>/stat``, or
    ``None`` when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text.rsplit(")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or ``None``."""
    st = stat(pid)
    return st[1] if st else None
