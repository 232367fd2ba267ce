"""Every path kvswitch uses, resolved in one place.

kvswitch's own files live under platformdirs' user dirs, or all under ``KVSWITCH_HOME``
when it is set (tests, sandboxes, the demo): ``config/``, ``state/``, ``backups/``,
``history/``, ``logs/``. The user's folders as the clients find them follow ``HOME`` and
``XDG_CONFIG_HOME`` (S-09, S-15), so a sandbox sets ``HOME`` too (each kind's default file:
:func:`kvswitch.kinds.default_client_paths`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kvswitch.records import record

__all__ = ["Dirs", "dirs", "home_override", "user_dirs"]

ENV_HOME = "KVSWITCH_HOME"


def home_override() -> Path | None:
    """``KVSWITCH_HOME`` as an absolute path, or ``None``."""
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser().absolute() if value else None


@record(slots=True)
class Dirs:
    """kvswitch's own directories (created on demand by the code that writes there)."""

    config: Path
    state: Path
    backups: Path
    history: Path
    logs: Path

    @property
    def config_file(self) -> Path:
        return self.config / "kvswitch.toml"


def dirs() -> Dirs:
    """The directories for this process (reads the environment each time)."""
    home = home_override()
    if home is not None:
        return Dirs(home / "config", home / "state", home / "backups", home / "history", home / "logs")
    import platformdirs

    state = Path(platformdirs.user_state_dir("kvswitch", appauthor=False))
    return Dirs(
        Path(platformdirs.user_config_dir("kvswitch", appauthor=False)),
        state,
        state / "backups",
        state / "history",
        Path(platformdirs.user_log_dir("kvswitch", appauthor=False)),
    )


def user_dirs(env: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """The user's home and config folders as the clients find them (``HOME``,
    ``XDG_CONFIG_HOME``), from ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return home, Path(env.get("XDG_CONFIG_HOME") or home / ".config")
