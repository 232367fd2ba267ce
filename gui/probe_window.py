"""The probe window: choose what to measure, run the probe in a worker, read the result.

Everything that blocks — reading the config and the key, the probe itself, building the report,
the history file, the export — is in :mod:`kvswitch_gui.probe_jobs`, run through
:func:`kvswitch_gui.workers.run_in_thread`; the GUI thread only reads the form and renders
finished results (words from :mod:`kvswitch_gui.probe_text`). Settings come from the library's
probe front door, as ``kvswitch probe``'s do, so the same choices send the same requests.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from kvswitch_gui.charts import GpuMemoryChart, TtftChart
from kvswitch_gui.probe_jobs import export, load_state, prepare_probe, run_probe_job
from kvswitch_gui.probe_text import comparison_text, gpu_cell, history_label, identity, ms
from kvswitch_gui.translations import QT_TRANSLATE_NOOP
from kvswitch_gui.workers import Task, Tasks

if TYPE_CHECKING:
    from kvswitch.probe.shapes import Report
    from kvswitch_gui.probe_jobs import Finished, Prepared, ProbeState

__all__ = ["COLUMNS", "ProbeWindow"]

_C = "ProbeWindow"  # the translation context of this module's words
COLUMNS = [
    QT_TRANSLATE_NOOP("ProbeWindow", "mode"),
    QT_TRANSLATE_NOOP("ProbeWindow", "ok / sent"),
    "TTFT med",
    "TTFT p90",
    "TTFT p99",
    "TTFB med",
    "ITL p99",
    "TPOT med",
    "bg ITL p99",
    QT_TRANSLATE_NOOP("ProbeWindow", "GPU peak Δ"),
]
"""The result table's columns (English; the headers show them translated)."""

COLUMN_TIPS = [
    QT_TRANSLATE_NOOP("ProbeWindow", "how the mode was selected, and where its requests went"),
    QT_TRANSLATE_NOOP("ProbeWindow", "successful requests / measured requests"),
    QT_TRANSLATE_NOOP("ProbeWindow", "median time to the first token-bearing delta"),
    QT_TRANSLATE_NOOP("ProbeWindow", "90th percentile TTFT"),
    QT_TRANSLATE_NOOP("ProbeWindow", "99th percentile TTFT (the maximum below 100 samples)"),
    QT_TRANSLATE_NOOP("ProbeWindow", "median time to the first response byte (diagnostic)"),
    QT_TRANSLATE_NOOP("ProbeWindow", "99th percentile gap between tokens"),
    QT_TRANSLATE_NOOP("ProbeWindow", "median time per output token after the first"),
    QT_TRANSLATE_NOOP("ProbeWindow", "99th percentile ITL of the background decode streams"),
    QT_TRANSLATE_NOOP(
        "ProbeWindow", "GPU memory: peak during the mode's own batches minus the baseline before the probe"
    ),
]


def _tr(text: str) -> str:
    """``text`` (marked with QT_TRANSLATE_NOOP in this module's context) in the user's language."""
    return QCoreApplication.translate(_C, text)


# -- the window ---------------------------------------------------------------------------------


class ProbeWindow(QWidget):
    """Run the probe and read its report. ``report_ready(dict)`` fires for every finished run
    (cancelled ones too, with ``report["cancelled"]`` true), after it is shown."""

    report_ready = Signal(object)
    """``report_ready(dict)``: the report itself (a Signal(dict) would go through QVariantMap,
    which sorts the keys — the modes' order — and copies)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)  # a window of its own, even with a parent
        self.setWindowTitle(self.tr("kvswitch · probe"))
        self.settings_overrides: dict[str, Any] = {}
        """ProbeSettings fields applied after the form (tests, or a caller that knows better)."""
        self.report: Mapping[str, Any] | None = None
        self.task: Task | None = None
        self._tasks = Tasks(lambda: isValid(self))
        self._cancel_requested = False
        self._spend = ""
        self._build()
        self._background(load_state, on_done=self._on_state)

    # -- layout --------------------------------------------------------------------------------

    def _build(self) -> None:
        form_box = QGroupBox(self.tr("What to measure"))
        form = QFormLayout(form_box)
        self.profile_radio = QRadioButton(self.tr("&Active profile"))
        self.profile_label = QLabel(self.tr("reading the config…"))
        self.profile_label.setWordWrap(True)
        self.url_radio = QRadioButton(self.tr("&Base URL"))
        self.profile_radio.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.profile_radio)
        group.addButton(self.url_radio)
        self.base_url_edit = QLineEdit()
        self.base_url_edit.setPlaceholderText("http://127.0.0.1:8000/v1")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText(self.tr("model id"))
        self.key_env_edit = QLineEdit()
        self.key_env_edit.setPlaceholderText(self.tr("optional: variable holding the key"))
        form.addRow(self.profile_radio, self.profile_label)
        form.addRow(self.url_radio, self.base_url_edit)
        form.addRow(self.tr("&Model"), self.model_edit)
        form.addRow(self.tr("&Key from $"), self.key_env_edit)
        for w in (self.base_url_edit, self.model_edit, self.key_env_edit):
            w.setEnabled(False)
        self.url_radio.toggled.connect(self._on_target_toggled)

        modes_row = QHBoxLayout()
        self.mode_checks = {"merged": QCheckBox("m&erged"), "split": QCheckBox("&split")}  # the modes' own names
        for box in self.mode_checks.values():
            box.setChecked(True)
            modes_row.addWidget(box)
        modes_row.addStretch(1)
        form.addRow(self.tr("Modes"), modes_row)

        def spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
            s = QSpinBox()
            s.setRange(lo, hi)
            s.setValue(value)
            s.setToolTip(tip)
            return s

        self.runs_spin = spin(1, 10_000, 10, self.tr("measured batches per mode (p99 of 20 samples is the maximum)"))
        self.warmup_spin = spin(0, 100, 2, self.tr("warm-up requests per mode, not measured"))
        self.prompt_spin = spin(1, 200_000, 256, self.tr("prompt length in words ≈ tokens"))
        self.article_check = QCheckBox(self.tr("Chinese sample &prompt"))
        self.article_check.setToolTip(
            self.tr("a fixed Chinese question about the KV cache, repeated 8 times, instead of N words")
        )
        self.article_check.toggled.connect(lambda on: self.prompt_spin.setEnabled(not on))
        prompt_row = QHBoxLayout()
        prompt_row.addWidget(self.prompt_spin)
        prompt_row.addWidget(self.article_check)
        self.max_tokens_spin = spin(
            1, 100_000, 128, self.tr("output tokens per request (small, so decode does not hide TTFT)")
        )
        self.cache_bust_check = QCheckBox(self.tr("&Nonce first"))
        self.cache_bust_check.setToolTip(
            self.tr(
                "a unique nonce at the start of every prompt, so the prefix cache "
                "cannot serve it; off: the same prompt every time"
            )
        )
        self.cache_bust_check.setChecked(True)
        self.concurrency_spin = spin(1, 1024, 1, self.tr("requests per batch, sent together"))
        self.background_spin = spin(
            0, 1024, 0, self.tr("long generations kept running while TTFT is sampled (decode load)")
        )
        form.addRow(self.tr("R&uns"), self.runs_spin)
        form.addRow(self.tr("&Warm-up"), self.warmup_spin)
        prompt_label = QLabel(self.tr("Prompt &tokens"))
        prompt_label.setBuddy(self.prompt_spin)
        form.addRow(prompt_label, prompt_row)
        form.addRow(self.tr("Ma&x tokens"), self.max_tokens_spin)
        form.addRow(QLabel(self.tr("Cache busting")), self.cache_bust_check)
        form.addRow(self.tr("C&oncurrency"), self.concurrency_spin)
        form.addRow(self.tr("Backgroun&d streams"), self.background_spin)
        self._inputs: list[QWidget] = [
            self.profile_radio,
            self.url_radio,
            *self.mode_checks.values(),
            self.runs_spin,
            self.warmup_spin,
            self.article_check,
            self.max_tokens_spin,
            self.cache_bust_check,
            self.concurrency_spin,
            self.background_spin,
        ]

        self.run_button = QPushButton(self.tr("&Run"))
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.start)
        self.cancel_button = QPushButton(self.tr("&Cancel"))
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat(self.tr("%v / %m requests"))
        self.status_label = QLabel(self.tr("Ready."))
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        history_box = QGroupBox(self.tr("History"))
        self.history_list = QListWidget()
        self.history_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.history_list.currentItemChanged.connect(self._on_history_selected)
        QVBoxLayout(history_box).addWidget(self.history_list)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.addWidget(form_box)
        lv.addLayout(buttons)
        lv.addWidget(self.progress_bar)
        lv.addWidget(self.status_label)
        lv.addWidget(history_box, 1)

        self.summary_label = QLabel(self.tr("No results yet: choose what to measure and press Run."))
        self.summary_label.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([_tr(c) for c in COLUMNS])
        for col, tip in enumerate(COLUMN_TIPS):
            header = self.table.horizontalHeaderItem(col)
            if header is not None:
                header.setToolTip(_tr(tip))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.table.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustIgnored)
        self.table.setMaximumHeight(120)
        self.comparison_label = QLabel()
        self.comparison_label.setWordWrap(True)
        self.comparison_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.ttft_chart = TtftChart()
        self.gpu_chart = GpuMemoryChart()
        charts = QHBoxLayout()
        charts.addWidget(self.ttft_chart)
        charts.addWidget(self.gpu_chart)
        self.notes_label = QLabel()
        self.notes_label.setWordWrap(True)
        self.notes_label.setTextFormat(Qt.TextFormat.RichText)
        self.notes_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.export_button = QPushButton(self.tr("Export &JSON…"))
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self.export_json)
        export_row = QHBoxLayout()
        export_row.addStretch(1)
        export_row.addWidget(self.export_button)

        results = QWidget()
        rv = QVBoxLayout(results)
        rv.addWidget(self.summary_label)
        rv.addWidget(self.table)
        rv.addWidget(self.comparison_label)
        rv.addLayout(charts, 1)
        rv.addWidget(self.notes_label)
        rv.addLayout(export_row)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the table scrolls itself
        scroll.setWidget(results)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([380, 800])
        QVBoxLayout(self).addWidget(splitter)
        self.resize(1180, 720)

    # -- reading the form ------------------------------------------------------------------------

    def _on_target_toggled(self, explicit: bool) -> None:
        for w in (self.base_url_edit, self.model_edit, self.key_env_edit):
            w.setEnabled(explicit and self.task is None)

    def form(self) -> dict[str, Any]:
        """The choices as plain data (what the worker turns into ProbeSettings)."""
        return {
            "target": "url" if self.url_radio.isChecked() else "profile",
            "base_url": self.base_url_edit.text().strip(),
            "model": self.model_edit.text().strip(),
            "key_env": self.key_env_edit.text().strip().removeprefix("$"),
            "modes": [m for m, box in self.mode_checks.items() if box.isChecked()],
            "runs": self.runs_spin.value(),
            "warmup": self.warmup_spin.value(),
            "prompt_tokens": self.prompt_spin.value(),
            "article_prompt": self.article_check.isChecked(),
            "max_tokens": self.max_tokens_spin.value(),
            "cache_bust": self.cache_bust_check.isChecked(),
            "concurrency": self.concurrency_spin.value(),
            "background": self.background_spin.value(),
        }

    def _form_problem(self, form: Mapping[str, Any]) -> str | None:
        if not form["modes"]:
            return self.tr("Choose at least one mode.")
        if form["target"] == "url":
            parts = urlsplit(form["base_url"])
            if parts.scheme not in ("http", "https") or not parts.netloc:
                return self.tr("Enter a base URL such as http://127.0.0.1:8000/v1.")
            if not form["model"]:
                return self.tr("Enter the model id the server serves.")
        return None

    # -- running ---------------------------------------------------------------------------------

    def is_running(self) -> bool:
        return self.task is not None

    def start(self) -> None:
        """Read the form and start: settings first (config and key, in a worker), then the probe."""
        if self.task is not None:
            return
        form = self.form()
        problem = self._form_problem(form)
        if problem:
            self.status_label.setText(problem)
            return
        self._cancel_requested = False
        self._set_running(True)
        self.status_label.setText(self.tr("Preparing: reading the profile…"))
        self.progress_bar.setRange(0, 0)  # busy until the first progress report
        self.task = self._background(
            prepare_probe, form, dict(self.settings_overrides), on_done=self._on_prepared, on_error=self._on_failed
        )

    def _on_prepared(self, prepared: Prepared) -> None:
        self.task = None
        if self._cancel_requested:
            self._finish_idle(self.tr("Cancelled before the probe started."))
            return
        remote, requests, tokens = prepared.spend.remote, prepared.spend.requests, prepared.spend.tokens
        spend = self.tr("{requests} requests, up to {tokens} tokens, to {hosts}").format(
            requests=requests, tokens=f"{tokens:,}", hosts=", ".join(remote)
        )
        if prepared.spend.asks_first:
            answer = QMessageBox.question(
                self,
                self.tr("Spend tokens?"),
                self.tr("This probe sends {spend}. Go ahead?").format(spend=spend),
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                self._finish_idle(self.tr("Probe not run."))
                return
        self._spend = f" ({spend})" if remote else ""
        self.status_label.setText(self.tr("Running…") + self._spend)
        self.task = self._background(
            run_probe_job,
            prepared.settings,
            on_done=self._on_probe_done,
            on_error=self._on_failed,
            on_progress=self._on_progress,
        )

    def cancel(self) -> None:
        """Stop after the batch in flight; the partial report is still shown."""
        if self.task is None:
            return
        self._cancel_requested = True
        self.task.cancel()
        self.cancel_button.setEnabled(False)
        self.status_label.setText(self.tr("Cancelling after the requests in flight…"))

    def _on_progress(self, done: int, total: int, mode: str) -> None:
        if self.task is None:
            return
        if self.progress_bar.maximum() != total:
            self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(done)
        if not self._cancel_requested:
            self.status_label.setText(
                self.tr("Running: {mode} · {done} of {total} requests").format(mode=mode, done=done, total=total)
                + self._spend
            )

    def _on_probe_done(self, result: Finished) -> None:
        self.task = None
        report = result.report
        sent = sum(m["requests"] for m in report["modes"].values())
        failed = sum(m["failures"] for m in report["modes"].values())
        seconds = f"{result.seconds:.1f}"
        if report.get("cancelled"):
            text = self.tr("Cancelled: {count} measured requests before stopping ({seconds} s).").format(
                count=sent, seconds=seconds
            )
        else:
            text = (
                self.tr("Done: {count} measured requests in {seconds} s, {failed} failed.")
                if failed
                else self.tr("Done: {count} measured requests in {seconds} s.")
            ).format(count=sent, seconds=seconds, failed=failed)
            self.progress_bar.setValue(self.progress_bar.maximum())
        if result.history_error:
            text += " " + self.tr("Not saved to the history: {problem}").format(problem=result.history_error)
        self._finish_idle(text)
        if sent:
            self._add_history(report, select=True)
        self.show_report(report)
        self.report_ready.emit(report)

    def _on_failed(self, exc: BaseException) -> None:
        self.task = None
        self._finish_idle(self.tr("Probe failed: {problem}").format(problem=exc))

    def _finish_idle(self, text: str) -> None:
        self._set_running(False)
        if self.progress_bar.maximum() == 0:
            self.progress_bar.setRange(0, 1)
        self.status_label.setText(text)

    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for w in self._inputs:
            w.setEnabled(not running)
        self.prompt_spin.setEnabled(not running and not self.article_check.isChecked())
        for w in (self.base_url_edit, self.model_edit, self.key_env_edit):
            w.setEnabled(not running and self.url_radio.isChecked())

    def _background(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None,
        on_progress: Callable[[int, int, str], None] | None = None,
    ) -> Task:
        """``run_in_thread``, keeping the task alive until it reports back; what arrives after
        the window is gone is dropped."""
        return self._tasks.run(
            fn,
            *args,
            on_done=on_done,
            on_progress=on_progress,
            on_error=on_error or (lambda exc: self.status_label.setText(str(exc))),
        )

    # -- history and export -----------------------------------------------------------------------

    def _on_state(self, state: ProbeState) -> None:
        self.profile_label.setText(state["profile"])
        # runs that finished while the file was read are on top already; the file's go below
        shown = {
            identity(self.history_list.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.history_list.count())
        }
        for report in reversed(state["history"]):  # newest first
            if identity(report) not in shown:
                self._add_history(report, select=False, top=False)

    def refresh(self) -> None:
        """Re-read the profile line and the history (in a worker)."""
        self.history_list.clear()
        self._background(load_state, on_done=self._on_state)

    def _add_history(self, report: Mapping[str, Any], *, select: bool, top: bool = True) -> None:
        item = QListWidgetItem(history_label(report))
        item.setData(Qt.ItemDataRole.UserRole, report)
        item.setToolTip(f"{item.text()}\n{(report.get('settings') or {}).get('base_url', '')}")
        self.history_list.insertItem(0 if top else self.history_list.count(), item)
        if select:
            self.history_list.blockSignals(True)
            self.history_list.setCurrentItem(item)
            self.history_list.blockSignals(False)

    def _on_history_selected(self, current: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        if current is not None:
            self.show_report(current.data(Qt.ItemDataRole.UserRole))

    def export_json(self) -> None:
        """Ask where, then write the shown report there (in a worker, atomically)."""
        if self.report is None:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        suggested = str(Path.home() / f"kvswitch-probe-{stamp}.json")
        path, _ = QFileDialog.getSaveFileName(
            self, self.tr("Export the probe report"), suggested, self.tr("JSON files (*.json);;All files (*)")
        )
        if not path:
            return
        self.status_label.setText(self.tr("Exporting to {path}…").format(path=path))
        self._background(
            export,
            self.report,
            path,
            on_done=lambda p: self.status_label.setText(self.tr("Exported to {path}.").format(path=p)),
            on_error=lambda exc: self.status_label.setText(self.tr("Export failed: {problem}").format(problem=exc)),
        )

    # -- rendering (GUI thread: plain data only) -------------------------------------------------

    def show_report(self, report: Report | Mapping[str, Any]) -> None:
        """Fill the table, the charts, the comparison and the notes from one report."""
        self.report = report
        self.export_button.setEnabled(True)
        s = report.get("settings") or {}
        modes: dict[str, Any] = report.get("modes") or {}
        summary = self.tr(
            "{model} @ {url} · {runs} runs × {concurrency} per mode (+{warmup} warm-up) · prompt "
            "{prompt} · max_tokens {max_tokens}"
        ).format(
            model=s.get("model", "?"),
            url=s.get("base_url", "?"),
            runs=s.get("runs", "?"),
            concurrency=s.get("concurrency", "?"),
            warmup=s.get("warmup", "?"),
            prompt=s.get("prompt", "?"),
            max_tokens=s.get("max_tokens", "?"),
        )
        summary += " · " + (self.tr("cache busting on") if s.get("cache_bust") else self.tr("cache busting off"))
        if s.get("background"):
            summary += " · " + self.tr("{count} background stream(s)").format(count=s["background"])
        summary += f" · {report.get('time', '')}"
        if report.get("cancelled"):
            summary = self.tr("CANCELLED — partial results.") + " " + summary
        self.summary_label.setText(summary)

        self.table.setRowCount(len(modes))
        for row, (mode, m) in enumerate(modes.items()):
            ok = m.get("requests", 0) - m.get("failures", 0)
            gpu_text, gpu_tip = gpu_cell(m.get("gpu_memory"))
            causes = "\n".join(
                self.tr("{count} failed: {cause}").format(count=n, cause=c)
                for c, n in (m.get("failure_causes") or {}).items()
            )
            routed = self.tr("routed by {how} → {url}").format(how=m.get("routed_by", "?"), url=m.get("url", "?"))
            cells = [
                (mode, routed),
                (f"{ok} / {m.get('requests', 0)}", causes or self.tr("no failures")),
                (ms((m.get("ttft_ms") or {}).get("median")), self.tr("first token-bearing delta")),
                (ms((m.get("ttft_ms") or {}).get("p90")), ""),
                (ms((m.get("ttft_ms") or {}).get("p99")), self.tr("with few samples p99 is the maximum")),
                (ms((m.get("ttfb_ms") or {}).get("median")), self.tr("first response byte (diagnostic)")),
                (ms((m.get("itl_ms") or {}).get("p99")), ""),
                (ms((m.get("tpot_ms") or {}).get("median")), ""),
                (ms((m.get("background_itl_ms") or {}).get("p99")), self.tr("ITL of the background streams")),
                (gpu_text, gpu_tip),
            ]
            for col, (text, tip) in enumerate(cells):
                item = QTableWidgetItem(text)
                if tip:
                    item.setToolTip(tip)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)

        self.comparison_label.setText(comparison_text(report))
        self.ttft_chart.set_data(
            {mode: m.get("ttft_samples_ms") or [] for mode, m in modes.items()},
            {mode: (m.get("ttft_ms") or {}).get("median") for mode, m in modes.items()},
        )
        gpu_na = report.get("gpu_unavailable")
        self.gpu_chart.set_data(report.get("gpu_timeline"), f"n/a: {gpu_na}" if gpu_na else None)

        notes = list(report.get("notes") or [])
        for mode, m in modes.items():
            routed = self.tr("routed by {how} → {url}").format(how=m.get("routed_by", "?"), url=m.get("url", "?"))
            notes.append(f"{mode}: {routed}")
            for cause, n in (m.get("failure_causes") or {}).items():
                notes.append(f"{mode}: " + self.tr("{count} failed: {cause}").format(count=n, cause=cause))
            metrics = m.get("metrics")
            if isinstance(metrics, str):
                notes.append(f"{mode}: " + self.tr("backend metrics {metrics}").format(metrics=metrics))
            elif isinstance(metrics, dict) and metrics:
                notes.append(
                    f"{mode}: "
                    + self.tr("backend metrics during the mode's runs: {metrics}").format(
                        metrics=", ".join(f"{k} {v:g}" for k, v in metrics.items())
                    )
                )
            if isinstance(m.get("gpu_memory"), str):
                notes.append(f"{mode}: " + self.tr("GPU memory {state}").format(state=m["gpu_memory"]))
        self.notes_label.setText("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")

    # -- closing ---------------------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.task is not None:
            self.cancel()
        super().closeEvent(event)
