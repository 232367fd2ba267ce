"""The probe window (kvswitch_gui.probe_window) and its charts, against the deterministic SSE
server: a run by URL and by profile, the table, the verdict, the charts, cancel, history,
export, GPU "n/a", and the event loop kept responsive while a probe runs (practice 14)."""

from __future__ import annotations

import itertools
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox
from pytestqt.qtbot import QtBot

from kvswitch.testing.sse_server import SSEServer
from kvswitch_gui import probe_jobs
from kvswitch_gui import probe_window as pw
from kvswitch_gui.charts import GpuMemoryChart, TtftChart, nice_ticks
from kvswitch_gui.probe_window import ProbeWindow
from tests.probe import fake_nvidia_smi

U0 = "GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf"
TIMEOUT_MS = 30_000


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NVML and no nvidia-smi on PATH (the machine may have one): GPU memory is n/a."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def window(qtbot: QtBot, **overrides: Any) -> ProbeWindow:
    win = ProbeWindow()
    qtbot.addWidget(win)
    win.settings_overrides = {"stall_timeout": 10.0, "request_timeout": 30.0, **overrides}
    # the history and profile line arrive from a worker; wait so they do not land mid-test
    qtbot.waitUntil(lambda: win.profile_label.text() != "reading the config…", timeout=TIMEOUT_MS)
    return win


def by_url(win: ProbeWindow, url: str, *, runs: int = 6, warmup: int = 1, concurrency: int = 1) -> None:
    win.url_radio.setChecked(True)
    win.base_url_edit.setText(url)
    win.model_edit.setText("gpt-4o-mini")
    win.runs_spin.setValue(runs)
    win.warmup_spin.setValue(warmup)
    win.prompt_spin.setValue(16)
    win.concurrency_spin.setValue(concurrency)


def run(qtbot: QtBot, win: ProbeWindow) -> dict[str, Any]:
    with qtbot.waitSignal(win.report_ready, timeout=TIMEOUT_MS) as blocker:
        qtbot.mouseClick(win.run_button, Qt.MouseButton.LeftButton)
    assert not win.is_running() and win.run_button.isEnabled()
    report: dict[str, Any] = blocker.args[0]
    return report


def table(win: ProbeWindow) -> dict[str, dict[str, str]]:
    out = {}
    for row in range(win.table.rowCount()):
        cells = {pw.COLUMNS[c]: win.table.item(row, c).text() for c in range(win.table.columnCount())}
        out[cells["mode"]] = cells
    return out


def ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+) ms", text)
    assert m, text
    return float(m.group(1))


def grabbed(widget: Any) -> None:
    image = widget.grab().toImage()
    assert not image.isNull() and image.width() > 100
    # something besides the background was drawn
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 2


# -- a whole run ----------------------------------------------------------------------------------


def test_probe_by_url_shows_both_modes_the_verdict_charts_and_gpu_na(qtbot: QtBot, sse_server: SSEServer) -> None:
    win = window(qtbot)
    assert win.max_tokens_spin.value() == 128 and win.cache_bust_check.isChecked()  # S-34, S-28
    by_url(win, sse_server.url)
    report = run(qtbot, win)

    assert not report["cancelled"] and report["settings"]["base_url"] == sse_server.url
    rows = table(win)
    assert list(rows) == ["merged", "split"]
    merged, split = ms(rows["merged"]["TTFT med"]), ms(rows["split"]["TTFT med"])
    assert 28 <= merged <= 60 and 88 <= split <= 130 and split > merged
    assert rows["merged"]["ok / sent"] == "6 / 6" and rows["split"]["ok / sent"] == "6 / 6"
    for cells in rows.values():
        assert ms(cells["TTFB med"]) <= ms(cells["TTFT med"])
        assert ms(cells["ITL p99"]) > 0 and ms(cells["TPOT med"]) > 0
        assert cells["bg ITL p99"] == "–"  # no background streams
        assert cells["GPU peak Δ"] == "n/a"
    gpu_item = win.table.item(0, pw.COLUMNS.index("GPU peak Δ"))
    assert "nvidia-smi not found" in gpu_item.toolTip()

    assert "merged is faster" in win.comparison_label.text()
    assert "95 % bootstrap interval" in win.comparison_label.text()
    notes = win.notes_label.text()
    assert "TTFT = time from sending the request" in notes and "routing unverified" in notes
    assert "nvidia-smi not found" in notes

    assert win.ttft_chart.has_data() and sorted(win.ttft_chart.samples) == ["merged", "split"]
    assert len(win.ttft_chart.samples["merged"]) == 6
    assert win.ttft_chart.medians["merged"] == pytest.approx(report["modes"]["merged"]["ttft_ms"]["median"])
    assert not win.gpu_chart.has_data()
    assert win.gpu_chart.message.startswith("GPU memory: n/a: local: nvidia-smi not found")
    grabbed(win.ttft_chart)
    grabbed(win.gpu_chart)
    grabbed(win)

    assert win.history_list.count() == 1
    assert "merged" in win.history_list.item(0).text() and win.progress_bar.value() == win.progress_bar.maximum()
    assert win.status_label.text().startswith("Done: 12 measured requests")


def test_probe_of_the_active_profile(qtbot: QtBot, kv_sandbox: dict[str, Path], sse_server: SSEServer) -> None:
    from kvswitch.config import edit_config, read_config
    from kvswitch.edits import Set

    name, profile = read_config().profile()
    assert profile.url_convention == "append-v1"  # <base>/v1/chat/completions
    edit_config([Set(("profiles", name, "base_url"), sse_server.root)])
    win = window(qtbot)
    assert win.profile_radio.isChecked()  # the default target
    assert name in win.profile_label.text() and sse_server.root in win.profile_label.text()
    win.runs_spin.setValue(5)
    win.warmup_spin.setValue(1)
    win.prompt_spin.setValue(16)
    report = run(qtbot, win)
    assert report["settings"]["base_url"] == sse_server.root and report["settings"]["model"] == "gpt-4o-mini"
    assert report["modes"]["merged"]["url"] == sse_server.root + "/v1/chat/completions"
    rows = table(win)
    assert rows["merged"]["ok / sent"] == "5 / 5" and rows["split"]["ok / sent"] == "5 / 5"
    assert ms(rows["split"]["TTFT med"]) > ms(rows["merged"]["TTFT med"])
    assert "merged is faster" in win.comparison_label.text()


def test_cancel_stops_the_probe_and_says_so(qtbot: QtBot, sse_server: SSEServer) -> None:
    win = window(qtbot)
    by_url(win, sse_server.url, runs=500, warmup=0)
    with qtbot.waitSignal(win.report_ready, timeout=TIMEOUT_MS) as blocker:
        qtbot.mouseClick(win.run_button, Qt.MouseButton.LeftButton)
        assert win.is_running() and not win.run_button.isEnabled() and win.cancel_button.isEnabled()
        assert not win.runs_spin.isEnabled() and not win.base_url_edit.isEnabled()
        qtbot.waitUntil(lambda: win.progress_bar.value() >= 4, timeout=TIMEOUT_MS)
        assert win.progress_bar.maximum() == 1000
        assert re.match(r"Running: (merged|split) · \d+ of 1000 requests", win.status_label.text())
        qtbot.mouseClick(win.cancel_button, Qt.MouseButton.LeftButton)
        assert "Cancelling" in win.status_label.text()
    report = blocker.args[0]
    assert report["cancelled"] is True
    measured = sum(m["requests"] for m in report["modes"].values())
    assert 4 <= measured < 1000
    assert win.status_label.text().startswith("Cancelled:")
    assert win.summary_label.text().startswith("CANCELLED")
    assert win.run_button.isEnabled() and not win.cancel_button.isEnabled() and win.runs_spin.isEnabled()
    assert win.history_list.count() == 1 and win.history_list.item(0).text().endswith("(cancelled)")


# -- history and export ---------------------------------------------------------------------------


def test_history_grows_and_an_old_run_can_be_shown(qtbot: QtBot, sse_server: SSEServer) -> None:
    win = window(qtbot)
    assert win.history_list.count() == 0
    by_url(win, sse_server.url, runs=3, warmup=0)
    first = run(qtbot, win)
    win.runs_spin.setValue(4)
    second = run(qtbot, win)
    assert win.history_list.count() == 2
    assert win.report is second and table(win)["merged"]["ok / sent"] == "4 / 4"
    win.history_list.setCurrentRow(1)  # the older run
    assert win.report == first and table(win)["merged"]["ok / sent"] == "3 / 3"

    again = window(qtbot)  # a new window reads the history file
    assert again.history_list.count() == 2
    assert again.history_list.item(0).data(Qt.ItemDataRole.UserRole)["settings"]["runs"] == 4
    again.history_list.setCurrentRow(1)
    assert table(again)["merged"]["ok / sent"] == "3 / 3" and again.ttft_chart.has_data()
    assert "merged is faster" in again.comparison_label.text()


def test_export_writes_the_report_as_json(
    qtbot: QtBot, sse_server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win = window(qtbot)
    assert not win.export_button.isEnabled()
    by_url(win, sse_server.url, runs=2, warmup=0)
    report = run(qtbot, win)
    target = tmp_path / "exported" / "probe.json"
    target.parent.mkdir()
    asked: list[str] = []

    def save_name(*args: Any, **kwargs: Any) -> tuple[str, str]:
        asked.append(args[2])
        return str(target), "JSON files (*.json)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    qtbot.mouseClick(win.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.status_label.text().startswith("Exported"), timeout=TIMEOUT_MS)
    assert asked and asked[0].endswith(".json")
    assert json.loads(target.read_text(encoding="utf-8")) == json.loads(json.dumps(report))

    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "nowhere" / "x.json"), ""))
    qtbot.mouseClick(win.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.status_label.text().startswith("Export failed"), timeout=TIMEOUT_MS)

    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: ("", ""))  # the dialog cancelled
    qtbot.mouseClick(win.export_button, Qt.MouseButton.LeftButton)
    assert win.status_label.text().startswith("Export failed")  # nothing new happened


# -- GPU memory over time -------------------------------------------------------------------------


def test_gpu_memory_chart_from_the_stand_in(
    qtbot: QtBot, sse_server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SMI_SEQ", ",".join(str(1000 + 100 * i) for i in range(200)))
    smi = fake_nvidia_smi.install(tmp_path / "bin")
    win = window(qtbot, smi=str(smi), gpu_interval_ms=25)
    by_url(win, sse_server.url, runs=4, warmup=1)
    report = run(qtbot, win)
    assert report["gpu_source"] == "nvidia-smi" and report["gpu_timeline"]
    assert win.gpu_chart.has_data() and list(win.gpu_chart.series) == [U0]
    assert len(win.gpu_chart.series[U0]) == len(report["gpu_timeline"])
    assert re.fullmatch(r"\+\d+ MiB", table(win)["split"]["GPU peak Δ"])
    assert U0 in win.table.item(1, pw.COLUMNS.index("GPU peak Δ")).toolTip()
    assert "GPU memory may look flat" in win.notes_label.text()
    grabbed(win.gpu_chart)


# -- what does not start --------------------------------------------------------------------------


def test_the_form_is_checked_before_anything_starts(qtbot: QtBot) -> None:
    win = window(qtbot)
    for box in win.mode_checks.values():
        box.setChecked(False)
    win.start()
    assert not win.is_running() and win.status_label.text() == "Choose at least one mode."
    win.mode_checks["merged"].setChecked(True)
    win.url_radio.setChecked(True)
    win.base_url_edit.setText("not a url")
    win.start()
    assert not win.is_running() and "base URL" in win.status_label.text()
    win.base_url_edit.setText("http://127.0.0.1:9/v1")
    win.start()
    assert not win.is_running() and "model" in win.status_label.text()


def test_without_a_config_the_profile_probe_says_why(qtbot: QtBot) -> None:
    win = window(qtbot)
    assert "not set up" in win.profile_label.text()
    win.start()
    qtbot.waitUntil(lambda: win.status_label.text().startswith("Probe failed"), timeout=TIMEOUT_MS)
    assert "kvswitch init" in win.status_label.text() and win.run_button.isEnabled()


def test_a_big_probe_of_a_remote_host_asks_first(qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def no(parent: Any, title: str, text: str, *args: Any) -> QMessageBox.StandardButton:
        asked.append(text)
        return QMessageBox.StandardButton.No

    monkeypatch.setattr(QMessageBox, "question", no)
    win = window(qtbot)
    by_url(win, "https://gateway.example/api", runs=200)
    win.prompt_spin.setValue(2048)
    win.start()
    qtbot.waitUntil(lambda: win.status_label.text() == "Probe not run.", timeout=TIMEOUT_MS)
    assert asked and "gateway.example" in asked[0] and "tokens" in asked[0]
    assert win.run_button.isEnabled() and win.history_list.count() == 0


# -- the event loop stays responsive ----------------------------------------------------------------


def _worst_stall_ms(qtbot: QtBot, win: ProbeWindow) -> float:
    """Run the probe with a 10 ms timer ticking on the GUI thread; the largest gap between ticks."""
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    qtbot.wait(50)  # let the first layout and paint settle
    timer.start()
    report = run(qtbot, win)
    qtbot.wait(200)  # the rendering after report_ready counts too
    timer.stop()
    assert sum(m["requests"] for m in report["modes"].values()) == 160
    assert report["modes"]["merged"]["failures"] == 0 and report["modes"]["split"]["failures"] == 0
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 50
    print(
        f"\nevent loop: {len(ticks)} ticks, max gap {max(gaps) * 1000:.1f} ms, "
        f"median {sorted(gaps)[len(gaps) // 2] * 1000:.1f} ms"
    )
    return max(gaps) * 1000


def test_the_event_loop_never_stalls_during_a_probe(qtbot: QtBot, sse_server: SSEServer) -> None:
    """No gap over 50 ms between ticks of a 10 ms timer while a probe runs. A shared CI machine
    can deschedule the whole process for longer now and then, so one more run is allowed: a
    stall the window causes itself (blocking work on the GUI thread) shows in both."""
    win = window(qtbot)
    win.show()
    qtbot.waitExposed(win)
    by_url(win, sse_server.url, runs=20, warmup=1, concurrency=4)
    worst = [_worst_stall_ms(qtbot, win)]
    if worst[0] > 50:
        worst.append(_worst_stall_ms(qtbot, win))
    assert min(worst) <= 50, f"the GUI thread stalled for {worst} ms"


# -- the charts on their own ----------------------------------------------------------------------


def test_charts_paint_every_shape_of_data(qtbot: QtBot) -> None:
    ttft, gpu = TtftChart(), GpuMemoryChart()
    qtbot.addWidget(ttft)
    qtbot.addWidget(gpu)
    for w in (ttft, gpu):
        w.resize(480, 260)
        assert not w.has_data()
        grabbed(w)  # the empty-state message
    for samples in (
        {"merged": [30.0]},
        {"merged": [30.0] * 5, "split": [30.0] * 5},
        {"merged": [1000.0, 1001.0, 1003.0], "split": []},
        {"merged": [0.4, 0.5], "other": [0.45]},
    ):
        ttft.set_data(samples)
        assert ttft.has_data() and ttft.medians["merged"] is not None
        grabbed(ttft)
    ttft.set_data({"merged": [], "split": []})
    assert not ttft.has_data() and ttft.message
    ttft.resize(60, 40)  # too small for a plot: nothing breaks
    ttft.set_data({"merged": [1.0, 2.0]})
    ttft.grab()

    gpu.set_data([[0.0, U0, 12000.0], [0.5, U0, 30000.0], [0.5, "GPU-b", 500.0], [1.0, "GPU-b", None], ["x"]])
    assert gpu.series == {U0: [(0.0, 12000.0), (0.5, 30000.0)], "GPU-b": [(0.5, 500.0)]}
    grabbed(gpu)
    gpu.set_data([[0.0, U0, 1000.0], [1.0, U0, 1000.0]])  # flat memory
    grabbed(gpu)
    gpu.set_data(None, "n/a: local: nvidia-smi not found")
    assert not gpu.has_data() and gpu.message == "GPU memory: n/a: local: nvidia-smi not found"
    gpu.set_data([])
    assert "no samples over time" in gpu.message
    assert nice_ticks(0, 46) == [0, 10, 20, 30, 40, 50]


def test_the_window_module_does_no_io_of_its_own() -> None:
    """Practice 14: the window and the charts leave I/O to the library, called in workers."""
    for name in ("probe_window.py", "charts.py"):
        source = (Path(pw.__file__).parent / name).read_text(encoding="utf-8")
        for banned in ("import subprocess", "import httpx", "open(", "read_text(", "write_text(", "urlopen"):
            assert banned not in source, (name, banned)


def test_closing_the_window_cancels_its_probe(qtbot: QtBot, sse_server: SSEServer) -> None:
    win = window(qtbot)
    win.show()
    by_url(win, sse_server.url, runs=500, warmup=0)
    with qtbot.waitSignal(win.report_ready, timeout=TIMEOUT_MS) as blocker:
        win.start()
        qtbot.waitUntil(lambda: win.progress_bar.value() >= 2, timeout=TIMEOUT_MS)
        win.close()
    assert blocker.args[0]["cancelled"] is True and not win.is_running()


def test_an_old_history_entry_without_newer_fields_still_shows(qtbot: QtBot) -> None:
    win = window(qtbot)
    gpu = {U0: {"instance": "local", "baseline_mib": 1000.0, "peak_mib": 1500.0, "delta_mib": 500.0}}
    old = {
        "time": "2026-01-01T10:00:00+0000",
        "settings": {"model": "m", "base_url": "http://h/v1"},
        "modes": {
            "merged": {
                "requests": 3,
                "failures": 1,
                "failure_causes": {"HTTP 500: boom": 1},
                "ttft_ms": {"median": 12.0},
                "gpu_memory": gpu,
            }
        },
        "comparison": {},
        "notes": [],
    }
    win.show_report(old)
    assert table(win)["merged"]["ok / sent"] == "2 / 3" and table(win)["merged"]["GPU peak Δ"] == "+500 MiB"
    assert table(win)["merged"]["TTFB med"] == "–"
    assert "No comparison" in win.comparison_label.text() and "HTTP 500: boom" in win.notes_label.text()
    assert "no samples over time" in win.gpu_chart.message and not win.ttft_chart.has_data()
    grabbed(win)


def test_the_window_names_each_modes_url_of_the_active_profile() -> None:
    """The profile line shows the URL each mode's requests go to (merged.url, split.url)."""
    import os

    path = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (
        'version = 2\nactive_profile = "p"\n\n[profiles.p]\nbase_url = "http://127.0.0.1:8000/v1"\n'
        'model = "m"\nkey = "none"\n'
    )
    path.write_text(text, encoding="utf-8")
    assert probe_jobs.load_state()["profile"] == "p: m @ http://127.0.0.1:8000/v1"
    path.write_text(
        text + '\n[profiles.p.merged]\nurl = "http://127.0.0.1:8100/v1"\n\n'
        '[profiles.p.split]\nurl = "http://127.0.0.1:8200/v1"\n',
        encoding="utf-8",
    )
    assert probe_jobs.load_state()["profile"] == ("p: m @ http://127.0.0.1:8100/v1 (split: http://127.0.0.1:8200/v1)")
