"""Edit a profile (by default the active one): chunk size, KV cache dtype, prefix cache, split
endpoints, transfer protocol and concurrency, request options.

Diagnostics are live and come from the library (:mod:`kvswitch.profile_check`, the same rules
as ``kvswitch lint``): typing 500 in chunk size says it becomes 512. A value with an error
finding cannot be saved. Saving is one atomic edit of kvswitch.toml (comments kept), in a
worker; afterwards the dialog offers to apply the profile to the clients (``saved`` signal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from kvswitch_gui import jobs
from kvswitch_gui.workers import Tasks

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.diagnostics import Diagnostic
    from kvswitch.profile_check import ProfileCheck

__all__ = ["SettingsDialog"]

CHECK_DELAY_MS = 150
KV_DTYPES = ("auto", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "q8_0", "q4_0")
_COLOURS = {"error": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8"}


class SettingsDialog(QDialog):
    """The profile form; ``saved(profile, apply)`` after a successful save."""

    saved = Signal(str, bool)
    loaded = Signal()
    checked = Signal(object)  # the latest ProfileCheck
    failed = Signal(str)

    def __init__(self, profile: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("kvswitch — profile settings"))
        self.setMinimumWidth(520)
        self.resize(580, 760)
        self.profile: str | None = profile
        self.config: Config | None = None
        self.check: ProfileCheck | None = None
        self._tasks = Tasks()
        self._seq = 0
        self._checking = False
        self._saving = False
        self._status_from_check = False

        self.title = QLabel(self.tr("reading kvswitch.toml…"))
        self.title.setWordWrap(True)

        self.chunk_size = QSpinBox()
        self.chunk_size.setRange(0, 1 << 24)
        self.chunk_size.setSingleStep(64)
        self.chunk_size.setSuffix(self.tr(" tokens"))
        self.chunk_size.setToolTip(
            self.tr("Tokens per prefill chunk in merged mode: a multiple of 64; 512–1024 suits most 7B models")
        )
        self.kv_cache_dtype = QComboBox()
        self.kv_cache_dtype.setEditable(True)
        self.kv_cache_dtype.addItems(list(KV_DTYPES))
        self.prefix_cache = QCheckBox(self.tr("&Reuse cached prefixes"))
        self.prefill = QLineEdit()
        self.prefill.setPlaceholderText(self.tr("default: the profile's base URL"))
        self.decode = QLineEdit()
        self.decode.setPlaceholderText(self.tr("default: the profile's base URL"))
        self.protocol = QComboBox()
        self.protocol.addItems(["layer-wise", "request-wise"])
        self.concurrency = QSpinBox()
        self.concurrency.setRange(0, 100_000)
        self.concurrency.setToolTip(self.tr("KV layers transferred in parallel: 1–8, 4 is a stable start"))
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setDecimals(2)
        self.temperature.setSingleStep(0.05)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 10_000_000)
        self.stream = QCheckBox(self.tr("Stream &answers (needed to see TTFT)"))
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(1.0, 86_400.0)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(self.tr(" s"))

        self.editors: dict[str, QWidget] = {
            "cache.chunk_size": self.chunk_size,
            "cache.kv_cache_dtype": self.kv_cache_dtype,
            "cache.prefix_cache": self.prefix_cache,
            "split.prefill_base_url": self.prefill,
            "split.decode_base_url": self.decode,
            "split.transfer_protocol": self.protocol,
            "split.max_transfer_concurrency": self.concurrency,
            "request.temperature": self.temperature,
            "request.max_tokens": self.max_tokens,
            "request.stream": self.stream,
            "request.timeout_seconds": self.timeout,
        }
        self.messages: dict[str, QLabel] = {}
        self._rows: dict[str, QFormLayout] = {}
        groups = (  # a check box's row label is no buddy: the box carries the mnemonic
            (self.tr("Merged mode"), ((self.tr("C&hunk size"), "cache.chunk_size"),)),
            (
                self.tr("Both modes"),
                ((self.tr("&KV cache dtype"), "cache.kv_cache_dtype"), (self.tr("Prefix cache"), "cache.prefix_cache")),
            ),
            (
                self.tr("Split mode"),
                (
                    (self.tr("Pre&fill endpoint"), "split.prefill_base_url"),
                    (self.tr("&Decode endpoint"), "split.decode_base_url"),
                    (self.tr("&Transfer protocol"), "split.transfer_protocol"),
                    (self.tr("Transfer co&ncurrency"), "split.max_transfer_concurrency"),
                ),
            ),
            (
                self.tr("Requests"),
                (
                    (self.tr("Te&mperature"), "request.temperature"),
                    (self.tr("Ma&x tokens"), "request.max_tokens"),
                    (self.tr("Stream"), "request.stream"),
                    (self.tr("T&imeout"), "request.timeout_seconds"),
                ),
            ),
        )
        self.form = QWidget()
        form_layout = QVBoxLayout(self.form)
        form_layout.setContentsMargins(0, 0, 0, 0)
        for title, rows in groups:
            group = QGroupBox(title)
            group_layout = QFormLayout(group)
            for label, field in rows:
                editor = self.editors[field]
                if isinstance(editor, QCheckBox):
                    group_layout.addRow(QLabel(label), editor)
                else:
                    group_layout.addRow(label, editor)
                message = QLabel()
                message.setWordWrap(True)
                message.setObjectName(f"message:{field}")
                group_layout.addRow("", message)
                group_layout.setRowVisible(message, False)
                self.messages[field] = message
                self._rows[field] = group_layout
            form_layout.addWidget(group)
        form_layout.addStretch(1)
        self.other = QLabel()
        self.other.setWordWrap(True)
        self.other.setVisible(False)
        self.apply_check = QCheckBox(self.tr("A&pply to the clients after saving"))
        self.apply_check.setChecked(True)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setText(self.tr("&Save"))
        self.buttons.button(QDialogButtonBox.StandardButton.Close).setText(self.tr("&Close"))
        self.save_button.setEnabled(False)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)

        scroll = QScrollArea()  # findings appear under the fields: scroll rather than squeeze
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.form)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.other)
        layout.addWidget(self.apply_check)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.form.setEnabled(False)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(CHECK_DELAY_MS)
        self._timer.timeout.connect(self._check)
        for spin in (self.chunk_size, self.concurrency, self.max_tokens):
            spin.valueChanged.connect(self._changed)
        for dspin in (self.temperature, self.timeout):
            dspin.valueChanged.connect(self._changed)
        for box in (self.prefix_cache, self.stream):
            box.toggled.connect(self._changed)
        for line in (self.prefill, self.decode):
            line.textChanged.connect(self._changed)
        self.kv_cache_dtype.currentTextChanged.connect(self._changed)
        self.protocol.currentTextChanged.connect(self._changed)

        self._tasks.run(jobs.load_form, profile, on_done=self._on_loaded, on_error=self._on_load_failed)

    @property
    def busy(self) -> bool:
        return bool(self._tasks) or self._timer.isActive()

    # -- loading ---------------------------------------------------------------------------
    def _on_loaded(self, form: jobs.ProfileForm) -> None:
        self.config, self.profile = form.config, form.name
        other = "split" if form.mode == "merged" else "merged"
        heading = self.tr("Profile {name}").format(name=_html(form.name))
        self.title.setText(
            f"<b>{heading}</b> — {_html(form.base_url)} · {_html(form.model)}<br>"
            + self.tr("The clients are in {mode} mode; the {other} settings take effect when you switch.").format(
                mode=form.mode, other=other
            )
        )
        self.set_values(form.values)
        self.form.setEnabled(True)
        self.loaded.emit()
        self._check()

    def _on_load_failed(self, exc: BaseException) -> None:
        self.title.setText(self.tr("Cannot edit the profile: {problem}").format(problem=exc))
        self._say(str(exc), error=True)
        self.failed.emit(str(exc))

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the form (no checks run until the next edit)."""
        for w in self.editors.values():
            w.blockSignals(True)
        try:
            self.chunk_size.setValue(int(values["cache.chunk_size"]))
            self.kv_cache_dtype.setCurrentText(str(values["cache.kv_cache_dtype"]))
            self.prefix_cache.setChecked(bool(values["cache.prefix_cache"]))
            self.prefill.setText(values["split.prefill_base_url"] or "")
            self.decode.setText(values["split.decode_base_url"] or "")
            self.protocol.setCurrentText(str(values["split.transfer_protocol"]))
            self.concurrency.setValue(int(values["split.max_transfer_concurrency"]))
            _set_float(self.temperature, float(values["request.temperature"]), 2)
            self.max_tokens.setValue(int(values["request.max_tokens"]))
            self.stream.setChecked(bool(values["request.stream"]))
            _set_float(self.timeout, float(values["request.timeout_seconds"]), 0)
        finally:
            for w in self.editors.values():
                w.blockSignals(False)

    def values(self) -> dict[str, Any]:
        """The form as profile values (an empty endpoint means: use the base URL)."""
        return {
            "cache.chunk_size": self.chunk_size.value(),
            "cache.kv_cache_dtype": self.kv_cache_dtype.currentText().strip(),
            "cache.prefix_cache": self.prefix_cache.isChecked(),
            "split.prefill_base_url": self.prefill.text().strip() or None,
            "split.decode_base_url": self.decode.text().strip() or None,
            "split.transfer_protocol": self.protocol.currentText(),
            "split.max_transfer_concurrency": self.concurrency.value(),
            "request.temperature": round(self.temperature.value(), self.temperature.decimals()),
            "request.max_tokens": self.max_tokens.value(),
            "request.stream": self.stream.isChecked(),
            "request.timeout_seconds": self.timeout.value(),
        }

    # -- live diagnostics --------------------------------------------------------------------
    def _changed(self, *_: Any) -> None:
        self.save_button.setEnabled(False)
        self._timer.start()

    def _check(self) -> None:
        if self.config is None or self.profile is None:
            return
        self._seq += 1
        seq = self._seq
        self._tasks.run(
            jobs.check_form,
            self.config,
            self.profile,
            self.values(),
            on_done=lambda result: self._on_checked(seq, result),
            on_error=lambda exc: self._on_check_failed(seq, exc),
        )

    def _on_checked(self, seq: int, result: ProfileCheck) -> None:
        if seq != self._seq:
            return  # an older check; a newer one is on its way
        self.check = result
        for field, label in self.messages.items():
            self._show(label, result.for_field(field))
            self._rows[field].setRowVisible(label, bool(label.text()))
            self.editors[field].setToolTip(label.toolTip())
        self._show(self.other, [d for d in result.diagnostics if result.field_of(d) is None])
        if result.errors:
            n = len(result.errors)
            self._say(
                self.tr("1 error: fix it to save.")
                if n == 1
                else self.tr("{count} errors: fix them to save.").format(count=n),
                error=True,
                from_check=True,
            )
        elif self._status_from_check:
            self._say("", from_check=True)
        self.save_button.setEnabled(self.can_save)
        self.checked.emit(result)

    def _on_check_failed(self, seq: int, exc: BaseException) -> None:
        if seq != self._seq:
            return
        self.check = None
        self._say(str(exc), error=True)
        self.save_button.setEnabled(False)

    def _show(self, label: QLabel, found: list[Diagnostic]) -> None:
        prefix = f"profile {self.profile!r}: "
        lines = [
            f'<span style="color:{_COLOURS.get(str(d.severity), "#374151")}">'
            + self._finding(d, _escape(d.message.removeprefix(prefix)))
            + "</span>"
            for d in found
        ]
        label.setText("<br>".join(lines))
        label.setToolTip("\n".join(f"{d.code}: {d.message}" for d in found))
        label.setVisible(bool(lines))

    def message_text(self, field: str | None = None) -> str:
        """The findings shown for ``field`` (or every finding), as plain text."""
        if self.check is None:
            return ""
        found = self.check.diagnostics if field is None else self.check.for_field(field)
        return "\n".join(self._finding(d, d.message) for d in found)

    def _finding(self, d: Diagnostic, message: str) -> str:
        """``KVS101 warning: message``, the severity in the user's words (the code as it is)."""
        words = {"error": self.tr("error"), "warning": self.tr("warning"), "info": self.tr("info")}
        severity = words.get(str(d.severity), str(d.severity))
        return self.tr("{code} {severity}: {message}").format(code=d.code, severity=severity, message=message)

    @property
    def can_save(self) -> bool:
        r = self.check
        return (
            r is not None
            and not r.errors
            and r.changed
            and not self._saving
            and not self._timer.isActive()
            and self.config is not None
        )

    # -- saving --------------------------------------------------------------------------------
    def save(self) -> None:
        """Save the form (refused while a value has an error finding)."""
        if self.config is None or self.profile is None or self._saving:
            return
        if self.check is not None and self.check.errors:
            first = self.check.errors[0]
            self._say(self.tr("Not saved: {code} {problem}").format(code=first.code, problem=first.message), error=True)
            return
        self._saving = True
        self.save_button.setEnabled(False)
        self._say(self.tr("Saving…"))
        self._tasks.run(
            jobs.save_form,
            self.config,
            self.profile,
            self.values(),
            on_done=self._on_saved,
            on_error=self._on_save_failed,
        )

    def _on_saved(self, config: Config) -> None:
        self._saving = False
        self.config = config
        assert self.profile is not None
        apply = self.apply_check.isChecked()
        self._say(
            (self.tr("Saved in {file}. Applying it to the clients…") if apply else self.tr("Saved in {file}.")).format(
                file=config.path.name
            )
        )
        self._check()
        self.saved.emit(self.profile, apply)

    def _on_save_failed(self, exc: BaseException) -> None:
        self._saving = False
        self._say(self.tr("Not saved: {problem}").format(problem=exc), error=True)
        self.failed.emit(str(exc))
        self._check()

    def _say(self, text: str, error: bool = False, from_check: bool = False) -> None:
        self._status_from_check = from_check
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {'#b91c1c' if error else '#374151'};")


def _set_float(spin: QDoubleSpinBox, value: float, decimals: int) -> None:
    """Show ``value`` with as few decimals as it needs (at least ``decimals``), so that merely
    opening the form never rounds a value and saves a change nobody made."""
    while decimals < 6 and round(value, decimals) != value:
        decimals += 1
    spin.setDecimals(decimals)
    spin.setValue(value)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _html(text: str) -> str:
    """``text`` for a rich-text label: shown safely (no control characters), HTML escaped."""
    import html

    from kvswitch.validate import show_name

    return html.escape(show_name(text))
