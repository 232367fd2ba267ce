"""The write promise under stress: no save is ever lost.

An editor thread that only ever adds keys saves the Cline settings file every few
milliseconds the way VS Code does (a temp file renamed over it), reading the file before each
save (so it builds on whatever kvswitch wrote). Meanwhile kvswitch writes the same file
thousands of times — ``switch`` both ways, ``lint --fix`` of an injected ``chunkSize: 500``,
``restore`` of a backup, and the running watcher's auto-fix — with a random delay placed
between kvswitch's last look at the file and its swap, which is where a save used to be lost.

Lost means: a version the editor saved is neither in the final file nor in a backup that
``restore --list`` shows (retention is raised for the run so that every backup stays listed).
With one key per save, a lost version is a lost key.
"""

from __future__ import annotations

import collections
import os
import random
import re
import threading
import time
from pathlib import Path

import pytest

import kvswitch.backups as kb
import kvswitch.io as kio
from kvswitch.backups import list_backups
from kvswitch.clients import restore
from kvswitch.errors import KvswitchError
from kvswitch.linter import fix
from kvswitch.switching import switch
from tests.clientenv import cline_file, init

WRITES = int(os.environ.get("KVSWITCH_STRESS_WRITES", "2000"))
SEGMENT = 200  # writes per segment: each starts from the fresh file, so that it stays small
SECONDS = float(os.environ.get("KVSWITCH_STRESS_SECONDS", "240"))
FLOOR = min(WRITES, 1000)  # fewer writes than this and the test means nothing
# a loaded machine writes slower: past SECONDS the run goes on until FLOOR, for at most this long
LONGEST = SECONDS * 2.5
_KEY = re.compile(r'"editor\.k(\d+)"')


class Editor(threading.Thread):
    """Adds one key per save, temp file + rename, until stopped."""

    def __init__(self, path: Path, seed: int, first: int = 1) -> None:
        super().__init__(daemon=True)
        self.first = first
        self.path = path
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.saved: list[int] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            n = self.first - 1
            while not self.stop.is_set():
                n += 1
                text = self.path.read_text(encoding="utf-8")
                text = text.replace("{\n", f'{{\n  "editor.k{n:06d}": {n},\n', 1)
                tmp = self.path.with_name("settings.json.editor-save")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, self.path)
                self.saved.append(n)
                time.sleep(self.rng.uniform(0.003, 0.03))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _delay_between_look_and_swap(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    lock = threading.Lock()

    def pause() -> None:
        with lock:
            wait = rng.uniform(0.0, 0.004)
        time.sleep(wait)

    if hasattr(kio, "_before_swap"):
        monkeypatch.setattr(kio, "_before_swap", pause)
    else:  # the old writer: its window was the backup between the last look and the rename
        real = kb.save_backup

        def slow_backup(target: Path, data: bytes) -> Path:
            saved = real(target, data)
            pause()
            return saved

        monkeypatch.setattr(kb, "save_backup", slow_backup)


@pytest.mark.slow
def test_thousands_of_kvswitch_writes_against_a_saving_editor_lose_no_save(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kvswitch.watch import Watcher

    init()
    path = cline_file()
    fresh = path.read_bytes()
    monkeypatch.setattr(kb, "KEEP", 10**6)  # every backup stays listed for the count
    _delay_between_look_and_swap(monkeypatch, seed=11)
    writes = {"n": 0}
    real_commit = kio.PreparedWrite.commit

    def counting_commit(self: kio.PreparedWrite) -> None:
        real_commit(self)
        if self.target == path:
            writes["n"] += 1

    monkeypatch.setattr(kio.PreparedWrite, "commit", counting_commit)
    raced = {"n": 0}
    if hasattr(kio.PreparedWrite, "_put_back"):
        real_put_back = kio.PreparedWrite._put_back

        def counting_put_back(self: kio.PreparedWrite, out: bytes) -> None:
            raced["n"] += 1
            real_put_back(self, out)

        monkeypatch.setattr(kio.PreparedWrite, "_put_back", counting_put_back)
    reasons: collections.Counter[str] = collections.Counter()
    rng = random.Random(3)
    saved: list[int] = []
    lost: list[int] = []
    only_in_backups = 0
    started = time.monotonic()

    def more() -> bool:
        spent = time.monotonic() - started
        return writes["n"] < WRITES and (spent < SECONDS or (writes["n"] < FLOOR and spent < LONGEST))

    with Watcher(policy="adopt"):
        segment = 0
        while more():
            segment += 1
            restart = path.with_name("settings.json.fresh")
            restart.write_bytes(fresh)
            os.replace(restart, path)  # a fresh file per segment (the editor's keys grow it)
            editor = Editor(path, seed=segment, first=segment * 100_000)
            editor.start()
            goal = min(WRITES, writes["n"] + SEGMENT)
            try:
                i = 0
                while writes["n"] < goal and more():
                    i += 1
                    _one_operation(path, i % 5, reasons)
                    if rng.random() < 0.2:
                        time.sleep(rng.uniform(0, 0.003))
            finally:
                editor.stop.set()
                editor.join(30)
            assert editor.error is None, editor.error
            final = {int(n) for n in _KEY.findall(path.read_text(encoding="utf-8"))}
            in_backups: set[int] = set()
            for b in list_backups(path):
                in_backups |= {int(n) for n in _KEY.findall(b.path.read_text(encoding="utf-8"))}
            saved += editor.saved
            lost += sorted(set(editor.saved) - final - in_backups)
            only_in_backups += len(set(editor.saved) - final)
            for b in list_backups(path):  # counted: the next segment starts with none
                b.path.unlink()
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\n[stress] {writes['n']} kvswitch writes and {len(saved)} editor saves in {elapsed:.1f}s "
            f"({segment} segments); {raced['n']} saves landed inside a swap and were swapped back; "
            f"{sum(reasons.values())} kvswitch operations refused (changed on disk); "
            f"{only_in_backups} saves found only in backups; saves lost: {len(lost)}"
        )
        if os.environ.get("KVSWITCH_STRESS_VERBOSE"):
            print(reasons.most_common())
    assert lost == [], f"saves lost: {lost[:20]}"
    assert writes["n"] >= FLOOR, "kvswitch wrote too little for the test to mean anything"
    assert len(saved) >= 500, "the editor saved too little for the test to mean anything"


def _one_operation(path: Path, op: int, refusals: collections.Counter[str]) -> None:
    """One kvswitch command on ``path``: switch to the other mode (twice as often), inject a
    fixable ``chunkSize: 500``, ``lint --fix`` it, or ``restore`` the newest other backup."""

    def inject(current: bytes) -> bytes:
        return current.replace(b'"chunkSize": 512', b'"chunkSize": 500')

    try:
        if op in (0, 1):  # always a write: the other mode
            switch("merged" if b'"mode": "split"' in path.read_bytes() else "split", [path])
        elif op == 2:
            text = path.read_bytes()
            kio.atomic_write(path, inject(text), expected=text, rebuild=inject)
        elif op == 3:
            fix(path)
        else:
            restore(path)
    except KvswitchError as exc:
        refusals[exc.message.split(";")[0][:60]] += 1
