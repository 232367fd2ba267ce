"""``kvswitch-tray``: the tray app's command. It looks for Qt for Python (PySide6) before
anything imports it, so a kvswitch installed without the ``gui`` extra says how to add it
instead of failing with a traceback. ``--install`` / ``--uninstall`` (the menu entry and icons,
:mod:`kvswitch_gui.desktop`) need no Qt.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

from kvswitch.i18n import tr

__all__ = ["main"]

INSTALL_HINT = "pip install 'kvswitch[gui]'"

# What this module says runs before (or without) Qt, so its text is in kvswitch's own message
# catalogue (Qt's translator is not loaded yet); .ci/i18n.py reads this file too.


def _qt_missing() -> bool:
    try:
        return importlib.util.find_spec("PySide6") is None
    except (ImportError, ValueError):
        return True


def _wants_desktop(argv: Sequence[str]) -> str | None:
    args = list(argv[: argv.index("--")] if "--" in argv else argv)
    if "-h" in args or "--help" in args:
        return None
    return "uninstall" if "--uninstall" in args else "install" if "--install" in args else None


def main(argv: Sequence[str] | None = None) -> int:
    """The ``kvswitch-tray`` command: the tray app, or ``--install`` / ``--uninstall``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _qt_missing():
        action = _wants_desktop(args)
        if action is not None:
            from kvswitch_gui.desktop import desktop_command

            return desktop_command(remove=action == "uninstall")
        sys.stderr.write(
            tr(
                "kvswitch-tray needs Qt for Python (PySide6), which is not installed.\n"
                "Install it with:  {hint}\n(the command line, `kvswitch`, works without it)\n"
            ).format(hint=INSTALL_HINT)
        )
        return 1
    try:
        from kvswitch_gui.app import main as run_app
    except ImportError as exc:  # installed but unloadable (a missing system library, a broken wheel)
        if (
            "PySide6" not in str(exc)
            and "shiboken6" not in str(exc)
            and not (exc.name or "").startswith(("PySide6", "shiboken6"))
        ):
            raise
        sys.stderr.write(
            tr("kvswitch-tray cannot load Qt for Python (PySide6): {error}\nReinstall it with:  {hint}\n").format(
                error=exc, hint=INSTALL_HINT
            )
        )
        return 1
    return run_app(args)


if __name__ == "__main__":
    raise SystemExit(main())
