"""Reload nudges (D-8, D-12) against real processes: none, touch, signal (with the pid's
identity checked in /proc: a stale pidfile is reported, never obeyed) and command (argv, no
shell, timeout)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvswitch.models import ClientEntry
from kvswitch.reload import NudgeResult, nudge
from tests.helpers.watching import Recorder, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")


@pytest.fixture
def client(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_text("{}\n")
    return path


@pytest.fixture
def recorders(tmp_path: Path) -> Iterator[list[Recorder]]:
    made: list[Recorder] = []
    yield made
    for r in made:
        r.close()


def _entry(client: Path, name: str | None = None, **n: object) -> ClientEntry:
    data: dict[str, object] = {"path": str(client), "kind": "cline", "nudge": n}
    if name:
        data["name"] = name
    return ClientEntry.model_validate(data)


def _no_signal_arrives(recorder: Recorder) -> bool:
    """A signal is delivered at once; wait a little to be sure none is on its way."""
    return not wait_until(lambda: recorder.hups() > 0, timeout=0.5)


# -- none ---------------------------------------------------------------------------------------


def test_none_tells_the_user_to_restart(client: Path) -> None:
    result = nudge(_entry(client, kind="none"), client)
    assert result == NudgeResult(client, "none", True, result.message, True)
    assert "restart Cline (settings.json) to apply" in result.message and "S-35" not in result.message
    named = nudge(_entry(client, "VS Code"), client)  # none is the default
    assert named.kind == "none" and "restart VS Code to apply" in named.message


# -- touch --------------------------------------------------------------------------------------


def test_touch_bumps_the_client_file(client: Path) -> None:
    past = time.time() - 600
    os.utime(client, (past, past))
    result = nudge(_entry(client, kind="touch"), client)
    assert result.ok and not result.restart_needed and str(client) in result.message
    assert client.stat().st_mtime > past + 500
    assert client.read_text() == "{}\n"


def test_touch_bumps_another_file(client: Path, tmp_path: Path) -> None:
    trigger = tmp_path / "reload.trigger"
    trigger.write_text("")
    past = time.time() - 600
    for p in (trigger, client):
        os.utime(p, (past, past))
    result = nudge(_entry(client, kind="touch", path=str(trigger)), client)
    assert result.ok and str(trigger) in result.message
    assert trigger.stat().st_mtime > past + 500
    assert client.stat().st_mtime == pytest.approx(past)


def test_touch_of_a_missing_file_is_reported(client: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "reload.trigger"
    result = nudge(_entry(client, kind="touch", path=str(missing)), client)
    assert not result.ok and "cannot touch" in result.message and str(missing) in result.message
    assert not missing.exists()


# -- signal -------------------------------------------------------------------------------------


def test_signal_reaches_the_process_in_the_pidfile(client: Path, tmp_path: Path, recorders: list[Recorder]) -> None:
    pidfile = tmp_path / "client.pid"
    recorder = Recorder(tmp_path, pidfile)
    recorders.append(recorder)
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile)), client)
    assert result.ok and not result.restart_needed, result.message
    assert f"pid {recorder.pid}" in result.message and "SIGHUP" in result.message
    assert wait_until(lambda: recorder.hups() == 1), "no SIGHUP arrived"
    assert recorder.alive()
    # and again: one signal per nudge
    assert nudge(_entry(client, kind="signal", pidfile=str(pidfile)), client).ok
    assert wait_until(lambda: recorder.hups() == 2)


def test_signal_with_a_matching_process_name(client: Path, tmp_path: Path, recorders: list[Recorder]) -> None:
    pidfile = tmp_path / "client.pid"
    recorder = Recorder(tmp_path, pidfile)
    recorders.append(recorder)
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile), process="recorder.py"), client)
    assert result.ok, result.message
    assert wait_until(lambda: recorder.hups() == 1)


def test_another_signal_by_name(client: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "client.pid"
    log = tmp_path / "usr1.log"
    script = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGUSR1, lambda *a: open(sys.argv[2], 'a').write('usr1\\n'))\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "deadline = time.monotonic() + 60\n"
        "while time.monotonic() < deadline: time.sleep(0.05)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(pidfile), str(log)])
    try:
        assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=15)
        result = nudge(_entry(client, kind="signal", pidfile=str(pidfile), signal="SIGUSR1"), client)
        assert result.ok and "SIGUSR1" in result.message, result.message
        assert wait_until(lambda: log.exists() and log.read_text() == "usr1\n")
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_pidfile_older_than_its_process_is_stale(client: Path, tmp_path: Path, recorders: list[Recorder]) -> None:
    """The pid was reused: the process now holding it started after the pidfile was written."""
    pidfile = tmp_path / "client.pid"
    recorder = Recorder(tmp_path, None)  # does not write the pidfile itself
    recorders.append(recorder)
    pidfile.write_text(f"{recorder.pid}\n")
    past = time.time() - 300  # written five minutes ago, before this process started
    os.utime(pidfile, (past, past))
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile)), client)
    assert not result.ok and result.restart_needed
    assert "stale pidfile" in result.message and "started after the pidfile" in result.message
    assert "not signalled" in result.message
    assert _no_signal_arrives(recorder) and recorder.alive()


def test_a_pidfile_of_a_dead_process_is_stale(client: Path, tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    pidfile = tmp_path / "client.pid"
    pidfile.write_text(f"{gone.pid}\n")
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile)), client)
    assert not result.ok and result.restart_needed
    assert "stale pidfile" in result.message and f"no process {gone.pid}" in result.message


def test_a_process_name_mismatch_is_refused(client: Path, tmp_path: Path, recorders: list[Recorder]) -> None:
    pidfile = tmp_path / "client.pid"
    recorder = Recorder(tmp_path, pidfile)
    recorders.append(recorder)
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile), process="code-server"), client)
    assert not result.ok and result.restart_needed
    assert "is not 'code-server'" in result.message and "not signalled" in result.message
    assert "its command line" in result.message  # says what the process really is
    assert _no_signal_arrives(recorder) and recorder.alive()


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "No such file"), ("", "holds no pid"), ("not-a-pid\n", "holds no pid")],
    ids=["missing", "empty", "garbage"],
)
def test_a_pidfile_without_a_pid_is_reported(client: Path, tmp_path: Path, content: str | None, expected: str) -> None:
    pidfile = tmp_path / "client.pid"
    if content is not None:
        pidfile.write_text(content)
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile)), client)
    assert not result.ok and result.restart_needed and expected in result.message
    assert str(pidfile) in result.message


def test_signal_without_a_pidfile_says_restart(client: Path) -> None:
    result = nudge(_entry(client, "CC Switch", kind="signal"), client)
    assert not result.ok and result.restart_needed
    assert "no pidfile" in result.message and "restart it" in result.message


def test_an_unknown_signal_is_reported(client: Path, tmp_path: Path, recorders: list[Recorder]) -> None:
    pidfile = tmp_path / "client.pid"
    recorder = Recorder(tmp_path, pidfile)
    recorders.append(recorder)
    result = nudge(_entry(client, kind="signal", pidfile=str(pidfile), signal="NOSUCH"), client)
    assert not result.ok and "unknown signal" in result.message
    assert recorder.alive()


# -- command --------------------------------------------------------------------------------------

MARKER_SCRIPT = "import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(repr(sys.argv[2:]))\n"


def test_a_command_runs_as_argv_without_a_shell(client: Path, tmp_path: Path) -> None:
    script = tmp_path / "reload.py"
    script.write_text(MARKER_SCRIPT)
    marker = tmp_path / "reloaded"
    injected = tmp_path / "injected"
    tricky = f"two words; touch {injected} $(touch {injected})"
    result = nudge(_entry(client, kind="command", argv=[sys.executable, str(script), str(marker), tricky]), client)
    assert result.ok and not result.restart_needed and "exited 0" in result.message, result.message
    assert marker.read_text() == repr([tricky])
    assert not injected.exists()


def test_a_failing_command_is_reported_with_its_output(client: Path, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import sys; print('reload refused', file=sys.stderr); sys.exit(3)"]
    result = nudge(_entry(client, kind="command", argv=argv), client)
    assert not result.ok and "exited 3" in result.message
    assert "stderr: reload refused" in result.message


def test_a_command_past_its_timeout_is_killed_and_reported(client: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "slow.pid"
    script = (
        "import os, sys, time\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "print('working', flush=True)\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    result = nudge(
        _entry(client, kind="command", argv=[sys.executable, "-c", script, str(pidfile)], timeout_seconds=1.0), client
    )
    took = time.monotonic() - t0
    assert not result.ok and "did not finish within 1 s (killed)" in result.message, result.message
    assert took < 20
    pid = int(pidfile.read_text())
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists()), f"process {pid} still runs"


def test_a_command_past_its_timeout_leaves_no_children(client: Path, tmp_path: Path) -> None:
    # (before f6b57b2 only the direct child was killed: `sh -c '…'` left its children running)
    child_pid = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    result = nudge(
        _entry(client, kind="command", argv=[sys.executable, "-c", script, str(child_pid)], timeout_seconds=1.0), client
    )
    assert not result.ok and "killed" in result.message
    pid = int(child_pid.read_text())
    try:
        assert wait_until(lambda: not _running(pid), timeout=2.0), f"its child {pid} still runs"
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_missing_command_is_reported(client: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-reload")
    result = nudge(_entry(client, kind="command", argv=[missing, "--now"]), client)
    assert not result.ok and f"command not found: {missing}" in result.message


def test_a_command_that_cannot_run_is_reported(client: Path, tmp_path: Path) -> None:
    script = tmp_path / "reload.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)  # not executable, even for root
    result = nudge(_entry(client, kind="command", argv=[str(script)]), client)
    assert not result.ok and "cannot run" in result.message


def test_a_command_nudge_without_argv_says_restart(client: Path) -> None:
    result = nudge(_entry(client, kind="command"), client)
    assert not result.ok and result.restart_needed and "no command" in result.message
