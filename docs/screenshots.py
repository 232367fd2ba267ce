#!/usr/bin/env python3
"""Real screenshots of the tray app for docs/gui.md: ``.venv/bin/python docs/screenshots.py``.

Runs everything in a throwaway sandbox (its own HOME and KVSWITCH_HOME, made by ``kvswitch init
--preset taotoken --model gpt-4o-mini --no-key``; nothing of yours is read or written) on a
virtual X display (Xvfb) with a tray host (trayer), and writes into ``docs/images/``:

- ``tray-menu.png``: ``python -m kvswitch_gui`` as its own process, its icon right-clicked
  with xdotool and Mode opened with the keyboard; the screen captured by ImageMagick ``import``,
  cropped to the panel and the menus;
- ``tray-notice.png``: Mode ▸ Split chosen in that menu: the success notice as the balloon Qt
  shows by the icon when there is no notification daemon, and the icon in its split shape;
- ``tray-clients.png``: a second sandbox with Claude Code's and Qwen Code's files registered
  (``tests/gui/two_clients.py``), Claude Code switched alone to split
  (``kvswitch switch split --client claude-code``) and Qwen Code's file edited by hand; the
  app's menu opened at Clients ▸ Claude Code with the keyboard;
- ``probe-window.png``: the probe window (in this process, Qt on the same display), run by
  base URL against kvswitch's deterministic SSE test server
  (:class:`kvswitch.testing.sse_server.SSEServer`: TTFT 120 ms merged, 200 ms split), twice,
  so the history has two entries; the window's own rendering (``QWidget.grab``);
- ``settings.png``: the settings dialog after typing 500 into the chunk size: the live
  KVS101 finding ("… becomes 512"), cropped to the top of the dialog;
- ``icon-states.png``: the icon in each state at 16, 22 and 32 px, drawn by
  ``kvswitch_gui.icons`` (not a screen capture).

The main ones are made in Simplified Chinese too, into ``docs/images/zh-CN/``: ``tray-menu.png``
and ``tray-notice.png`` (the app started with ``KVSWITCH_LANG=zh-CN`` in a sandbox of its own),
``probe-window.png`` and ``settings.png`` (the Qt translators installed in this process). A CJK
font must be installed (Debian: fonts-wqy-zenhei).

Needs Xvfb, trayer, xdotool, ImageMagick and xwininfo (``python3 tests/run.py`` installs them
as root). Options: ``--out DIR`` (default docs/images), ``--keep`` (keep the sandbox),
``--only NAME…`` (make only those: tray, clients, gateway, probe, settings, icons),
``--languages LANG…`` (en, zh-CN; default both).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gui.two_clients import file_mode, make_two_clients, run_kvswitch  # noqa: E402
from tests.helpers.observe import cline_mode, toml_mode, wait_until  # noqa: E402
from tests.helpers.xdisplay import (  # noqa: E402
    TOOLS,
    TrayApp,
    Window,
    XSession,
    make_sandbox,
    png_size,
    sandbox_env,
)

MAX_BYTES = 200_000
SHOTS = ("tray", "clients", "gateway", "probe", "settings", "icons")
TRANSLATED = ("tray", "probe", "settings")
"""The shots also made in Chinese (``docs/images/zh-CN/``)."""
LANGUAGES = ("en", "zh-CN")
MARGIN = 10


def _union(windows: list[Window], screen: tuple[int, int], margin: int = MARGIN) -> tuple[int, int, int, int]:
    x0 = max(0, min(w.x for w in windows) - margin)
    y0 = max(0, min(w.y for w in windows) - margin)
    x1 = min(screen[0], max(w.x + w.width for w in windows) + margin)
    y1 = min(screen[1], max(w.y + w.height for w in windows) + margin)
    return x0, y0, x1 - x0, y1 - y0


def _say(text: str) -> None:
    print(f"[screenshots] {text}", flush=True)


def _saved(path: Path) -> None:
    w, h = png_size(path)
    size = path.stat().st_size
    _say(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({w}×{h}, {size / 1024:.0f} KB)")
    if size > MAX_BYTES:
        _say(f"  note: over {MAX_BYTES // 1000} KB")


# -- the tray, as its own process ------------------------------------------------------------------


def _open_menu(x: XSession, app: TrayApp, mode: str = "merged") -> Any:
    """Wait for the icon in its ``mode`` state, then right-click it: the tray menu opens.
    Returns the icon."""
    icon = app.wait_icon(60)
    if not wait_until(lambda: x.icon_mode(icon) == mode, 60):
        raise RuntimeError(f"the icon never showed the {mode} state; app log:\n{app.log()}")
    x.click(*icon.centre, button=3)
    if not wait_until(x.popups, 15):
        raise RuntimeError("no menu after a right click on the icon")
    return icon


def tray_shots(x: XSession, env: dict[str, str], files: dict[str, Path], out: Path) -> None:
    with TrayApp(x, env=env, log=x.workdir / "app.log") as app:
        icon = _open_menu(x, app)
        x.key("Down", "Right")  # Mode — merged ▸ (Merged / Split)
        menus = wait_until(lambda: len(x.popups()) >= 2 and x.popups(), 15)
        if not menus:
            raise RuntimeError("the Mode submenu did not open")
        time.sleep(0.3)  # the highlight settles
        assert x.panel is not None
        x.screenshot(out / "tray-menu.png", _union([x.panel, *menus], x.size))
        _saved(out / "tray-menu.png")

        x.key("Down", "Return")  # Split
        if not wait_until(lambda: cline_mode(files["cline"]) == toml_mode(files["ccswitch"]) == "split", 15):
            raise RuntimeError(f"Mode ▸ Split did not switch the files; app log:\n{app.log()}")
        menu_ids = {w.id for w in menus}
        balloon = wait_until(lambda: [w for w in x.popups() if w.id not in menu_ids], 15)
        wait_until(lambda: x.icon_mode(icon) == "split", 15)
        if not balloon:
            raise RuntimeError("no notice balloon after the switch")
        time.sleep(0.3)
        x.screenshot(out / "tray-notice.png", _union([x.panel, *balloon], x.size))
        _saved(out / "tray-notice.png")
        x.key("Escape")
        if app.close() != 0:
            raise RuntimeError(f"the app did not quit cleanly; log:\n{app.log()}")


def _two_clients(root: Path) -> tuple[dict[str, str], dict[str, Path]]:
    """A second sandbox under ``root`` with two clients registered (``tests/gui/two_clients.py``):
    its environment and the files by name."""
    env = {**os.environ, **sandbox_env(root)}
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env, make_two_clients(env)


def clients_shot(x: XSession, root: Path, out: Path) -> None:
    """Clients ▸ Claude Code open: one client in a mode of its own, one edited by hand."""
    env, files = _two_clients(root)
    run_kvswitch(env, "switch", "split", "--client", "claude-code")
    if file_mode(files) != ("split", "merged"):
        raise RuntimeError(f"switching Claude Code alone left the files at {file_mode(files)}")
    qwen = files["qwen"]
    qwen.write_text(qwen.read_text().replace('"privacy": {', '"ui": {"theme": "GitHub"}, "privacy": {', 1))
    with TrayApp(x, env=env, log=x.workdir / "app-clients.log") as app:
        _open_menu(x, app)
        x.key("Down", "Down", "Down", "Right")  # Mode, Profile, Clients ▸ (Claude Code ▸ active)
        if not wait_until(lambda: len(x.popups()) >= 2, 15):
            raise RuntimeError("the Clients submenu did not open")
        x.key("Right")  # Claude Code ▸
        menus = wait_until(lambda: len(x.popups()) >= 3 and x.popups(), 15)
        if not menus:
            raise RuntimeError("Claude Code's submenu did not open")
        x.key("Down")  # Split: the check mark is on it already
        time.sleep(0.4)  # the highlight settles
        assert x.panel is not None
        x.screenshot(out / "tray-clients.png", _union([x.panel, *menus], x.size))
        _saved(out / "tray-clients.png")
        x.key("Escape", "Escape", "Escape")
        if app.close() != 0:
            raise RuntimeError(f"the app did not quit cleanly; log:\n{app.log()}")


def gateway_shot(x: XSession, root: Path, out: Path) -> None:
    """Gateway ▸ open: Claude Code pinned, the gateway running in split mode."""
    import socket

    env, _ = _two_clients(root)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run_kvswitch(env, "gateway", "pin", "claude-code")
    run_kvswitch(env, "gateway", "run", "--detach", "--port", str(port))
    try:
        run_kvswitch(env, "switch", "split")
        with TrayApp(x, env=env, log=x.workdir / "app-gateway.log") as app:
            _open_menu(x, app, "split")
            x.key("Down", "Down", "Down", "Down", "Right")  # Mode, Profile, Clients, Gateway ▸
            menus = wait_until(lambda: len(x.popups()) >= 2 and x.popups(), 15)
            if not menus:
                raise RuntimeError("the Gateway submenu did not open")
            time.sleep(0.4)  # the highlight settles
            assert x.panel is not None
            x.screenshot(out / "tray-gateway.png", _union([x.panel, *menus], x.size))
            _saved(out / "tray-gateway.png")
            x.key("Escape", "Escape")
            if app.close() != 0:
                raise RuntimeError(f"the app did not quit cleanly; log:\n{app.log()}")
    finally:
        run_kvswitch(env, "gateway", "stop")


# -- windows, in this process ---------------------------------------------------------------------


def _spin(app: Any, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        app.processEvents()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _save(pixmap: Any, path: Path) -> None:
    """Save a window's rendering; one over the size budget again with 256 colours."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage

    if not pixmap.save(str(path), "PNG"):
        raise RuntimeError(f"cannot write {path}")
    if path.stat().st_size > MAX_BYTES:
        flags = Qt.ImageConversionFlag.ThresholdDither | Qt.ImageConversionFlag.AvoidDither
        if not pixmap.toImage().convertToFormat(QImage.Format.Format_Indexed8, flags).save(str(path), "PNG"):
            raise RuntimeError(f"cannot write {path}")
    _saved(path)


def probe_shot(app: Any, out: Path) -> None:
    from kvswitch.testing.sse_server import SSEServer
    from kvswitch_gui.probe_window import ProbeWindow

    with SSEServer(ttft_ms=120, split_ttft_ms=200, itl_ms=8, split_itl_ms=6, tokens=24, model="gpt-4o-mini") as srv:
        win = ProbeWindow()
        win.settings_overrides = {"stall_timeout": 15.0, "request_timeout": 60.0}
        reading = win.profile_label.text()
        win.show()
        _spin(app, lambda: win.profile_label.text() != reading, 30, "the profile line")
        win.url_radio.setChecked(True)
        win.base_url_edit.setText(srv.url)
        win.model_edit.setText("gpt-4o-mini")
        win.warmup_spin.setValue(1)
        for runs, background in ((8, 0), (12, 2)):
            win.runs_spin.setValue(runs)
            win.background_spin.setValue(background)
            reports: list[Any] = []
            win.report_ready.connect(reports.append)
            win.run_button.click()
            _spin(app, lambda r=reports: r, 180, "the probe report")
            win.report_ready.disconnect()
        _spin(app, lambda: not win.is_running() and win.history_list.count() == 2, 30, "the history")
        time.sleep(0.2)
        app.processEvents()
        _save(win.grab(), out / "probe-window.png")
        win.close()
        win.deleteLater()


def settings_shot(app: Any, out: Path) -> None:
    from PySide6.QtCore import QRect
    from PySide6.QtTest import QTest

    from kvswitch_gui.settings_dialog import SettingsDialog

    dialog = SettingsDialog()
    dialog.show()
    _spin(app, lambda: dialog.check is not None and not dialog.busy, 30, "the settings dialog")
    editor = dialog.chunk_size.lineEdit()
    editor.setFocus()
    editor.selectAll()
    QTest.keyClicks(editor, "500")
    _spin(
        app,
        lambda: "KVS101" in dialog.messages["cache.chunk_size"].text() and not dialog.busy,
        30,
        "the KVS101 finding",
    )
    time.sleep(0.2)
    app.processEvents()
    # the title, the merged-mode group with the finding, and the next group ("Both modes")
    both = dialog.kv_cache_dtype.parentWidget()
    bottom = both.mapTo(dialog, both.rect().bottomLeft()).y()
    _save(dialog.grab(QRect(0, 0, dialog.width(), min(dialog.height(), bottom + 6))), out / "settings.png")
    dialog.close()
    dialog.deleteLater()


def icon_states(out: Path) -> None:
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QImage, QPainter

    from kvswitch_gui.icons import render

    states = [
        ("merged", False, "merged"),
        ("split", False, "split"),
        (None, False, "unknown"),
        ("merged", True, "merged + warning"),
        ("split", True, "split + warning"),
    ]
    sizes = (16, 22, 32)
    cell_w, cell_h = 130, 32 + 14 + 22
    image = QImage(cell_w * len(states), cell_h, QImage.Format.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    p = QPainter(image)
    try:
        for i, (mode, warning, label) in enumerate(states):
            x = i * cell_w + 14
            for size in sizes:
                p.drawImage(x, 8 + (32 - size), render(mode, warning, size))
                x += size + 10
            p.setPen(QColor("#1f2937"))
            p.drawText(QRect(i * cell_w, 8 + 32 + 4, cell_w, 20), Qt.AlignmentFlag.AlignHCenter, label)
    finally:
        p.end()
    if not image.save(str(out / "icon-states.png"), "PNG"):
        raise RuntimeError("cannot write icon-states.png")
    _saved(out / "icon-states.png")


def main() -> int:
    ap = argparse.ArgumentParser(description="Real screenshots of the tray app for docs/gui.md.")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    ap.add_argument("--keep", action="store_true", help="keep the sandbox and the logs")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=SHOTS,
        default=list(SHOTS),
        metavar="NAME",
        help=f"make only these: {', '.join(SHOTS)}",
    )
    ap.add_argument(
        "--languages",
        nargs="+",
        choices=LANGUAGES,
        default=list(LANGUAGES),
        metavar="LANG",
        help=f"in these languages: {', '.join(LANGUAGES)} (Chinese: {', '.join(TRANSLATED)} only)",
    )
    args = ap.parse_args()
    only = set(args.only)
    english, chinese = "en" in args.languages, "zh-CN" in args.languages
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        _say(f"missing: {', '.join(missing)} (Debian: python3 tests/run.py as root installs them)")
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kvswitch-shots-"))
    try:
        zh_out = out / "zh-CN"
        if chinese:
            zh_out.mkdir(exist_ok=True)
        files = make_sandbox(work / "sandbox")
        env = {**os.environ, **sandbox_env(work / "sandbox"), "KVSWITCH_LANG": "en"}
        os.environ.update(sandbox_env(work / "sandbox"))  # before anything reads kvswitch's paths
        os.environ["KVSWITCH_LANG"] = "en"
        _say(f"sandbox: {work / 'sandbox'}")
        with XSession(work / "x", white=True) as x:
            _say(f"Xvfb on {x.display}, trayer docked top right")
            if "tray" in only and english:
                tray_shots(x, env, files, out)
            if "tray" in only and chinese:  # a sandbox of its own: the English run switched the first
                zh_files = make_sandbox(work / "sandbox-zh")
                zh_env = {
                    **os.environ,
                    **sandbox_env(work / "sandbox-zh"),
                    "KVSWITCH_LANG": "zh-CN",
                    "LANG": "zh_CN.UTF-8",
                }
                tray_shots(x, zh_env, zh_files, zh_out)
            if "clients" in only and english:
                clients_shot(x, work / "clients", out)
            if "gateway" in only and english:
                gateway_shot(x, work / "gateway", out)
            os.environ.update(x.env())
            from PySide6.QtWidgets import QApplication

            from kvswitch_gui.collector import collecting_on_gui_thread
            from kvswitch_gui.translations import install_translator

            app = QApplication([sys.argv[0]])
            app.setApplicationName("kvswitch")
            with collecting_on_gui_thread():  # as kvswitch-tray runs: collections on this thread only
                for lang, where in (("en", out), ("zh_CN", zh_out)):
                    if (lang == "en" and not english) or (lang == "zh_CN" and not chinese):
                        continue
                    if lang == "zh_CN":  # its own sandbox: a history of its own
                        if not (work / "sandbox-zh").exists():
                            make_sandbox(work / "sandbox-zh")
                        os.environ.update(sandbox_env(work / "sandbox-zh"))
                    install_translator(app, lang)
                    if "probe" in only:
                        probe_shot(app, where)
                    if "settings" in only:
                        settings_shot(app, where)
                install_translator(app, "en")
                if "icons" in only and english:
                    icon_states(out)
                app.processEvents()
    finally:
        if args.keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
