"""The README's first command, short version, on a fresh sandbox: the whole story runs and
prints what the issue asks (per mode TTFT median/p90, ITL p99, memory or n/a, the comparison
with its interval), and leaves no lab process behind."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_quickstart_short(tmp_path: Path) -> None:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("the lab needs xllamacpp (pip install -e '.[lab]')")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVSWITCH_", "PYTHON_KEYRING"))}
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docs" / "quickstart.py"),
            "--short",
            "--dir",
            str(tmp_path / "qs"),
            "--port",
            str(_free_port()),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    text = out.stdout
    assert out.returncode == 0, text[-3000:] + out.stderr[-3000:]
    for step in (
        "kvswitch lab up",
        "kvswitch init",
        "kvswitch switch merged",
        "kvswitch switch split",
        "kvswitch probe --combine",
        "kvswitch lab down",
    ):
        assert f"$ {step}" in text, step
    table = re.search(r"mode\s+ok/n\s+TTFT med\s+p90\s+p99.*?ITL p99.*?\n(merged.*)\n(split.*)\n", text)
    assert table, text[-3000:]
    for row in table.groups():
        assert re.search(r"\d+/\d+\s+[\d.]+ ms\s+[\d.]+ ms", row), row
    assert re.search(r"TTFT median split/merged: [\d.]+ \(95 % bootstrap interval [\d.]+–[\d.]+\)", text)
    assert "GPU memory: n/a: " in text or "GPU " in text
    assert "routing verified" in text
    assert "stopped router" in text
    pids = [int(p) for p in re.findall(r"pid (\d+)", text.split("$ kvswitch lab down", 1)[1])]
    assert len(pids) == 4
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", f"pid {pid} still runs"
