#!/usr/bin/env python3
"""The tray app's speed: start → icon in the tray, idle memory and CPU, and a click on a mode →
both client files written.

    .venv/bin/python bench/tray_speed.py [--starts 5] [--clicks 21]

Start and idle: ``python -m kvswitch_gui`` as its own process on Xvfb with trayer (the real
tray host of tests/gui/test_real_tray.py), beside a bare PySide6 app that shows one
QSystemTrayIcon and nothing else, for scale. "Icon" is the moment the icon is embedded and
laid out in trayer's panel (the app shows it, grey, before it loads its menu and the library);
"state" the moment its pixels show the merged shape (the client files read). Idle: RSS and
CPU over 5 s, three seconds after the state showed. Goal: icon ≤ 1.3 × the bare app's.

Click: in this process, Qt offscreen, the tray's Mode ▸ Merged/Split action triggered (what a
click does) with the watcher on, timed until both files on disk hold the new mode; beside it the
library's ``switch_clients`` alone. Goal (issue 6): click → both files median ≤ 100 ms.

Everything runs in a throwaway sandbox (own HOME and KVSWITCH_HOME); the start/idle part needs
Xvfb, trayer, xdotool, ImageMagick and xwininfo (``python3 tests/run.py`` installs them as root)
and is skipped without them.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.observe import cline_mode, toml_mode, wait_until  # noqa: E402
from tests.helpers.xdisplay import (  # noqa: E402
    TOOLS,
    TrayApp,
    XSession,
    make_sandbox,
    sandbox_env,
    stop_process,
)

BARE = """
import sys
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
app = QApplication(sys.argv)
app.setApplicationName("bare-tray")
pix = QPixmap(22, 22)
pix.fill(QColor("#2563eb"))
icon = QSystemTrayIcon(QIcon(pix))
icon.show()
sys.exit(app.exec())
"""

IDLE_WAIT_S = 3.0
IDLE_SPAN_S = 5.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _idle(pid: int) -> tuple[float, float]:
    """(RSS MiB, CPU %) of a process left alone: after IDLE_WAIT_S, over IDLE_SPAN_S."""
    time.sleep(IDLE_WAIT_S)
    cpu0, t0 = _cpu_seconds(pid), time.monotonic()
    time.sleep(IDLE_SPAN_S)
    cpu = (_cpu_seconds(pid) - cpu0) / (time.monotonic() - t0) * 100
    return _rss_mib(pid), cpu


def starts(work: Path, env: dict[str, str], n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        "icon": [],
        "state": [],
        "rss": [],
        "cpu": [],
        "bare_icon": [],
        "bare_rss": [],
        "bare_cpu": [],
    }
    with XSession(work / "x") as x:
        for i in range(n):
            with TrayApp(x, env=env, log=work / f"app-{i}.log") as app:
                icon = app.wait_icon(120, interval=0.01)
                out["icon"].append(time.perf_counter() - app.started)
                if not wait_until(lambda ic=icon: x.icon_mode(ic) == "merged", 60, interval=0.005):
                    raise RuntimeError(f"the icon never showed the merged state; log:\n{app.log()}")
                out["state"].append(time.perf_counter() - app.started)
                if i == n - 1:
                    rss, cpu = _idle(app.pid)
                    out["rss"].append(rss)
                    out["cpu"].append(cpu)
            if app.proc is None or app.proc.returncode != 0:
                raise RuntimeError(f"the tray app did not quit cleanly; log:\n{app.log()}")
            wait_until(lambda: not x.tray_icons("kvswitch"), 10)

            started = time.perf_counter()
            bare = subprocess.Popen(
                [sys.executable, "-c", BARE],
                env=x.env(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                found = wait_until(lambda: x.tray_icons("bare-tray", laid_out=True), 120, interval=0.01)
                if not found:
                    raise RuntimeError("the bare tray icon did not appear")
                out["bare_icon"].append(time.perf_counter() - started)
                if i == n - 1:
                    rss, cpu = _idle(bare.pid)
                    out["bare_rss"].append(rss)
                    out["bare_cpu"].append(cpu)
            finally:
                stop_process(bare)
            wait_until(lambda: not x.tray_icons("bare-tray"), 10)
    return out


def clicks(files: dict[str, Path], n: int) -> tuple[list[float], list[float], list[float]]:
    """(click → both files, click → notice, library switch alone), seconds each."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    from kvswitch.clients import switch_clients
    from kvswitch_gui.collector import GuiThreadCollector
    from kvswitch_gui.tray import TrayController

    app = QApplication([sys.argv[0]])
    collector = GuiThreadCollector()  # as kvswitch-tray runs: collections on this thread only
    collector.start()
    controller = TrayController(use_tray=False, watch=True)
    controller.start()

    def spin(predicate: object, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():  # type: ignore[operator]
            app.processEvents()
            if time.monotonic() > deadline:
                raise RuntimeError("timed out")
            time.sleep(0.0005)

    spin(lambda: controller.loaded and controller.watching and controller.idle)
    notices: list[float] = []
    controller.noticed.connect(lambda _n: notices.append(time.perf_counter()))
    written, noticed, library = [], [], []
    for i in range(n):
        mode = "split" if i % 2 == 0 else "merged"
        spin(lambda m=mode: controller.idle and controller.mode_actions.get(m) is not None)
        time.sleep(0.3)  # let the watcher's echo of the previous switch pass
        app.processEvents()
        notices.clear()
        gc.collect()
        t0 = time.perf_counter()
        controller.mode_actions[mode].trigger()
        spin(lambda m=mode: cline_mode(files["cline"]) == m and toml_mode(files["ccswitch"]) == m)
        written.append(time.perf_counter() - t0)
        spin(lambda: bool(notices))
        noticed.append(notices[0] - t0)
    controller.set_watch(False)
    spin(lambda: not controller.watching and controller.idle)
    for i in range(n):
        gc.collect()
        t0 = time.perf_counter()
        switch_clients("split" if i % 2 == 0 else "merged")
        library.append(time.perf_counter() - t0)
    controller.shutdown()
    app.processEvents()
    collector.stop()
    return written, noticed, library


def main() -> int:
    ap = argparse.ArgumentParser(description="The tray app's start, idle and click-to-switch speed.")
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--clicks", type=int, default=21)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kvswitch-tray-bench-"))
    try:
        files = make_sandbox(work / "sandbox")
        env = {**os.environ, **sandbox_env(work / "sandbox")}
        # the apps' bytecode cached (in this run's folder), as an installed kvswitch has it: under
        # PYTHONDONTWRITEBYTECODE every start would compile kvswitch's modules again
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        os.environ.update(sandbox_env(work / "sandbox"))
        med = statistics.median
        missing = [t for t in TOOLS if shutil.which(t) is None]
        if missing:
            print(f"start/idle: skipped, missing {', '.join(missing)}")
        else:
            s = starts(work, env, args.starts)
            print(f"start → icon, median of {args.starts} starts on Xvfb + trayer")
            print(
                f"  kvswitch-tray: icon in the tray          {med(s['icon']) * 1e3:7.0f} ms"
                f"   (bare PySide6 tray icon {med(s['bare_icon']) * 1e3:5.0f} ms;"
                f" ratio {med(s['icon']) / med(s['bare_icon']):.2f}; goal ≤ 1.3)"
            )
            print(f"  kvswitch-tray: icon shows the state      {med(s['state']) * 1e3:7.0f} ms")
            print(f"idle, {IDLE_WAIT_S:.0f} s after start, over {IDLE_SPAN_S:.0f} s")
            print(
                f"  kvswitch-tray (watcher on): RSS {s['rss'][0]:6.1f} MiB, CPU {s['cpu'][0]:4.1f} %"
                f"   (bare: RSS {s['bare_rss'][0]:6.1f} MiB, CPU {s['bare_cpu'][0]:4.1f} %;"
                f" RSS ratio {s['rss'][0] / s['bare_rss'][0]:.2f})"
            )
        written, noticed, library = clicks(files, args.clicks)
        q = statistics.quantiles(written, n=10)
        print(f"click Mode ▸ Merged/Split → both files on disk, {args.clicks} clicks (offscreen Qt, watcher on)")
        print(f"  median {med(written) * 1e3:6.1f} ms, p90 {q[-1] * 1e3:6.1f} ms  (goal ≤ 100 ms)")
        print(f"  → the notice     median {med(noticed) * 1e3:6.1f} ms")
        print(
            f"  library switch_clients alone: median {med(library) * 1e3:6.1f} ms"
            f"  (tray/library ratio {med(written) / med(library):.2f})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
