"""Crash safety (D-4): SIGKILL a process that is switching a file back and forth, at hundreds
of random moments, and check after every kill that the file parses and holds exactly one of
the two known versions. Nothing in between, nothing lost.

A fresh interpreter costs ~0.3 s to import kvswitch, so a "zygote" process imports it once
and forks one child per kill; each child is its own process (own pid, own temp files, own
journal lock) that switches in a tight loop, starting with the mode that changes the file,
until the parent SIGKILLs it 0-30 ms later. The next child starts with ``switch()``, which
recovers an interrupted journal and sweeps the dead child's temp files.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from kvswitch import paths
from kvswitch.backups import KEEP, list_backups
from kvswitch.document import parse_config
from kvswitch.switching import switch

KILLS_PER_FILE = 150  # two files: 300 kills in all
MAX_DELAY = 0.030

ZYGOTE = """
    import os, sys
    from pathlib import Path
    import kvswitch.backups, kvswitch.io, kvswitch.state, kvswitch.transaction
    from kvswitch.switching import switch

    path = Path(sys.argv[1])
    for mode in ("split", "merged"):  # load every lazy import once, here, not in each child
        switch(mode, [path], dry_run=True)
    for line in sys.stdin:
        first, _, second = line.strip().partition(" ")  # the mode that changes the file first
        if not second:
            break
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                while True:
                    switch(first, [path])
                    switch(second, [path])
            except BaseException:
                import traceback
                traceback.print_exc()
                status = 70
            finally:
                os._exit(status)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print("reaped", status, flush=True)
"""


def kvswitch_temps(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if ".kvswitch-" in p.name and p.name.endswith(".tmp")]


def check_parses(data: bytes, kind: str, path: Path) -> None:
    parse_config(data, kind, path)  # type: ignore[arg-type]
    if kind == "ccswitch":
        tomllib.loads(data.decode("utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "fixture", "name"),
    [("cline", "cline/vscode-user.json", "settings.json"), ("ccswitch", "ccswitch/rich.toml", "cc-switch/config.toml")],
)
def test_sigkill_during_switches_never_leaves_a_third_version(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str], kind: str, fixture: str, name: str
) -> None:
    path = tmp_path / "client" / name
    path.parent.mkdir(parents=True)
    shutil.copyfile(fixtures / fixture, path)
    original = path.read_bytes()
    # the two versions, from one switch each way (and stable on a second round trip)
    switch("split", [path])
    split = path.read_bytes()
    switch("merged", [path])
    merged = path.read_bytes()
    assert split != merged
    switch("split", [path])
    assert path.read_bytes() == split
    switch("merged", [path])
    assert path.read_bytes() == merged

    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    log = tmp_path / "children.log"
    kills = mid_write = journal_seen = 0
    versions = {merged: 0, split: 0}
    journal = paths.dirs().state / "journal.json"
    started = time.monotonic()
    with (
        log.open("w") as err,
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(ZYGOTE), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        ) as zygote,
    ):
        assert zygote.stdin is not None and zygote.stdout is not None
        try:
            while kills < KILLS_PER_FILE:
                order = "split merged" if path.read_bytes() == merged else "merged split"
                zygote.stdin.write(order + "\n")
                zygote.stdin.flush()
                line = zygote.stdout.readline()
                assert line.strip().isdigit(), f"zygote said {line!r}: {log.read_text()}"
                pid = int(line)
                time.sleep(rng.uniform(0, MAX_DELAY))
                os.kill(pid, signal.SIGKILL)
                reaped = zygote.stdout.readline().split()
                status = int(reaped[1])
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
                    f"the child ended by itself (status {status}): {log.read_text()}"
                )
                kills += 1
                data = path.read_bytes()
                assert data in versions, (
                    f"after kill {kills} the file is neither the merged nor the split version:\n"
                    f"{data.decode('utf-8', 'replace')}"
                )
                versions[data] += 1
                check_parses(data, kind, path)
                if any(p.name.startswith(f".{path.name}.kvswitch-{pid}-") for p in path.parent.iterdir()):
                    mid_write += 1  # killed while its temp file existed: mid-write
                journal_seen += journal.exists()
        finally:
            zygote.stdin.close()
            zygote.wait(timeout=30)
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\n[crash:{kind}] {kills} SIGKILLs in {elapsed:.1f}s: {mid_write} while a temp file existed, "
            f"{journal_seen} with a switch journal on disk; merged {versions[merged]}x, split {versions[split]}x"
        )
    assert kills >= KILLS_PER_FILE
    assert mid_write > 0, "no kill landed while a temp file existed"

    # the next clean writes recover what is left and sweep the dead children's temp files
    switch("split", [path])
    assert path.read_bytes() == split
    switch("merged", [path])
    assert path.read_bytes() == merged
    assert kvswitch_temps(path.parent) == []
    assert kvswitch_temps(paths.home_override() or paths.dirs().state) == []  # state/, backups/
    assert not journal.exists()
    backups = list_backups(path)
    assert 0 < len(backups) <= KEEP
    assert {b.path.read_bytes() for b in backups} <= {merged, split, original}


KILL_AT = """
    import os, sys
    from pathlib import Path
    import kvswitch.state
    from kvswitch.switching import switch

    def die(*args, **kwargs):
        os._exit(9)

    setattr(kvswitch.state, sys.argv[2], die)
    switch(sys.argv[3], [Path(sys.argv[1])])
    os._exit(0)
"""


@pytest.mark.parametrize(("there", "back", "step"), [("split", "merged", "remember"), ("merged", "split", "forget")])
def test_a_kill_around_the_remembered_values_loses_nothing(
    tmp_path: Path, fixtures: Path, there: str, back: str, step: str
) -> None:
    """A switch that takes a value out of the file (chunkSize 768 and its comment, going to
    split) must have it remembered before the file loses it: a kill at that moment must not
    turn 768 into the default on the way back."""
    path = tmp_path / "settings.json"
    shutil.copyfile(fixtures / "cline/vscode-user.json", path)
    switch("split", [path])
    split = path.read_bytes()
    switch("merged", [path])
    merged = path.read_bytes()
    assert b'"chunkSize": 768, // tuned for the 7B model' in merged
    if there == "merged":
        switch("split", [path])
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILL_AT), str(path), step, there],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 9, out.stderr
    assert path.read_bytes() in (merged, split)
    switch(back, [path])
    assert path.read_bytes() == (merged if back == "merged" else split)
    switch(there, [path])
    assert path.read_bytes() == (split if there == "split" else merged)
