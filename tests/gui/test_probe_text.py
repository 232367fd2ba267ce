"""The probe window's words (kvswitch_gui.probe_text), and the one verdict: the CLI's text and the
tray's window both read a comparison through kvswitch.probe.comparison.verdict."""

from __future__ import annotations

from typing import Any

import pytest

from kvswitch.cli.probe import render_text
from kvswitch.probe import comparison
from kvswitch.probe.comparison import Verdict
from kvswitch_gui import probe_text

REPORT: dict[str, Any] = {
    "settings": {"model": "m", "base_url": "http://127.0.0.1:8000/v1", "runs": 2},
    "modes": {"merged": {"requests": 2, "failures": 0}, "split": {"requests": 2, "failures": 0}},
    "comparison": {"ttft_median_ratio": {"split/merged": 0.5, "ci95": [0.4, 0.6]}},
    "notes": [],
}


def test_the_window_and_the_cli_say_the_same_verdict() -> None:
    gui = probe_text.comparison_text(REPORT)
    cli = render_text(REPORT)
    assert "0.50 (95 % bootstrap interval 0.40–0.60): split is faster to the first token." in gui
    assert "0.50 (95 % bootstrap interval 0.40–0.60): split is faster to first token" in cli


def test_the_verdict_is_the_one_function_both_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the library's verdict says is what both show: neither decides on its own."""
    calls: list[Any] = []

    def decided(ratio: Any) -> Verdict | None:
        calls.append(ratio)
        return Verdict(9.87, 6.54, 12.3, "merged") if ratio is not None else None

    monkeypatch.setattr(comparison, "verdict", decided)
    gui = probe_text.comparison_text(REPORT)
    cli = render_text(REPORT)
    assert "9.87 (95 % bootstrap interval 6.54–12.30): merged is faster to the first token." in gui
    assert "9.87 (95 % bootstrap interval 6.54–12.30): merged is faster to first token" in cli
    assert calls.count(REPORT["comparison"]["ttft_median_ratio"]) == 2


@pytest.mark.parametrize(
    ("faster", "words"),
    [("split", "split is faster"), ("merged", "merged is faster"), (None, "no difference the interval can show")],
)
def test_the_verdict_in_words(faster: Any, words: str) -> None:
    assert probe_text.verdict_text(Verdict(1.0, 0.5, 2.0, faster)) == words


def test_a_report_without_a_comparison_says_why() -> None:
    assert "this run: merged" in probe_text.comparison_text({"modes": {"merged": {}}})
    assert probe_text.comparison_text({}).startswith("No comparison")
    broken = {"comparison": {"ttft_median_ratio": {"split/merged": "?"}}, "modes": {}}
    assert probe_text.comparison_text(broken).startswith("No comparison")  # unreadable: no verdict


def test_gpu_cells_and_history_labels() -> None:
    assert probe_text.gpu_cell("n/a: no GPU") == ("n/a", "n/a: no GPU")
    text, tip = probe_text.gpu_cell({"GPU-1": {"instance": "local", "baseline_mib": 1.0, "delta_mib": 12.0}})
    assert text == "+12 MiB" and tip.startswith("GPU-1 (local): baseline 1.0 MiB")
    label = probe_text.history_label({"settings": {"model": "m"}, "modes": {"merged": {"ttft_ms": {"median": 12.4}}}})
    assert label == "? · m · merged 12 ms"
    assert probe_text.ms(None) == "–" and probe_text.ms(1.25) == "1.2 ms"


def test_no_tray_module_imports_the_cli() -> None:
    """The tray reaches the probe (and everything else) through the library, never the CLI."""
    import ast
    from pathlib import Path

    gui = Path(probe_text.__file__).parent
    found = []
    for path in sorted(gui.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n == "kvswitch.cli" or n.startswith("kvswitch.cli.")]
    assert found == []
