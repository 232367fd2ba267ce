"""The watcher: keep every registered client in step with kvswitch's config (D-8).

It watches kvswitch's config and every client file through their parent directories (and
the directories of symlink targets), so in-place writes, editor rename-saves, delete and
re-create, and writes through a symlink are all seen. Events are debounced (trailing,
~150 ms); the file is then read once, and kvswitch's own writes are recognised by content
hash and ignored. An external change is handled by policy:

- invalid file → reported with ``path:line:col``, nothing written (a torn, half-written read
  is re-checked after another quiet period before it is reported);
- fixable finding the config allows (``auto_fix``, default KVS101 and KVS201) → fixed in place;
- a changed owned cache field (mode, chunk size, prefix cache, kv dtype, split settings) →
  ``adopt`` it into the active profile and propagate to the other clients (never a key, base
  URL or model, D-12), ``revert`` the file to the profile, or only ``report`` it.

Written clients are nudged to reload (:mod:`kvswitch.reload`). Every outcome goes to the
``on_event`` callback (plain Python, any thread) and to a rotating log in kvswitch's logs
directory. One watcher per ``KVSWITCH_HOME`` (a lock in ``state/``).

Each look (read, plan, commit) holds the switch lock (:mod:`kvswitch.locks`), so the watcher and
a ``kvswitch switch`` never interleave; when another kvswitch holds it, the look is tried again
shortly. Whatever a watched path becomes (a FIFO, a directory, a device, a symlink loop, a huge
file) it is refused without being read and reported once; the watcher stays responsive and
stoppable. A watched folder that is deleted (or moved away) is re-armed when it comes back: the
nearest existing ancestor is watched meanwhile, and the folders are checked every
:data:`REARM_INTERVAL` seconds for events inotify cannot give.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import logging.handlers
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kvswitch import paths
from kvswitch.errors import ChangedOnDiskError, KvswitchError, Location
from kvswitch.i18n import clauses, tr
from kvswitch.kinds import STRATEGY_FIELDS

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.diagnostics import Diagnostic
    from kvswitch.document import ConfigFile
    from kvswitch.edits import Edit
    from kvswitch.models import ClientEntry
    from kvswitch.reload import NudgeResult

__all__ = ["OWNED_FIELDS", "Policy", "WatchEvent", "Watcher", "WatcherBusyError", "watch_log"]

Policy = Literal["adopt", "revert", "report"]

OWNED_FIELDS = ("cache.mode", *STRATEGY_FIELDS)
"""The fields ``adopt`` takes from a client into the active profile (D-12)."""

DEBOUNCE = 0.15
WRITE_GRACE = 10.0
"""How long a file written in place may stay open before it is read anyway (seconds)."""
MAX_RETRIES = 20
"""How many times in a row a change is looked at again after another save beat the watcher's
commit (each after a quiet period) before the conflict is reported as an error."""
LOCK_WAIT = 0.5
"""How long one look waits for the switch lock before it steps back and tries again later."""
REARM_INTERVAL = 0.5
"""How often the watched folders are checked for having been deleted, moved or re-created."""


def _drop_inactive_emitter(record: logging.LogRecord) -> bool:
    """A logging filter: False for watchdog's "called when the thread is inactive" record."""
    return "called when the thread is inactive" not in record.getMessage()


class WatcherBusyError(KvswitchError):
    """Another watcher (``kvswitch watch`` or the tray) already runs for this KVSWITCH_HOME."""


@dataclass(frozen=True)
class WatchEvent:
    """One outcome: ``kind`` is started, invalid, fixed, adopted, reverted, drift,
    propagated, nudged, error or stopped."""

    kind: str
    path: Path | None
    message: str
    diagnostics: tuple[Diagnostic, ...] = ()
    nudges: tuple[NudgeResult, ...] = ()
    written: tuple[Path, ...] = ()

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.kind}: {where}{self.message}"


def watch_log() -> logging.Logger:
    """The watcher's rotating log (``<logs>/watch.log``, 1 MB × 3)."""
    logger = logging.getLogger("kvswitch.watch")
    target = paths.dirs().logs / "watch.log"
    if not any(getattr(h, "baseFilename", None) == str(target) for h in logger.handlers):
        for h in list(logger.handlers):
            logger.removeHandler(h)
            h.close()
        from kvswitch.io import _private_dir

        _private_dir(target.parent)  # 0700, and so is every missing folder above it
        handler = logging.handlers.RotatingFileHandler(target, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class _Target:
    path: Path  # as registered (maybe a symlink)
    kind: str  # cline | ccswitch | config
    entry: ClientEntry | None = None
    own: set[str] = field(default_factory=set)  # digests of kvswitch's own writes
    seen: str | None = None  # digest last handled
    unstable: str | None = None  # digest of an invalid read waiting for a second look
    timer: threading.Timer | None = None
    writing: float = 0.0  # when an in-place write began that has not been closed yet (0: none)
    stale: bool = False  # handling it failed: look again even if the content is what was seen
    retries: int = 0  # conflicts in a row (another save beat our commit)
    problem: str | None = None  # the read error last reported (said once until it changes)
    busy: bool = False  # waiting for another kvswitch to release the switch lock


class Watcher:
    """Watch kvswitch's config and every registered client; handle changes by ``policy``."""

    def __init__(
        self,
        on_event: Callable[[WatchEvent], None] | None = None,
        *,
        policy: Policy = "adopt",
        debounce: float = DEBOUNCE,
    ) -> None:
        if policy not in ("adopt", "revert", "report"):
            raise ValueError(f"policy must be adopt, revert or report, not {policy!r}")
        self.policy = policy
        self.debounce = debounce
        self._on_event = on_event
        self._log = watch_log()
        self._lock_fd: int | None = None
        self._observer: Any = None
        self._handler: Any = None
        self._targets: dict[str, _Target] = {}  # by real path
        self._aliases: dict[str, str] = {}  # any watched path (link or target) → real path
        self._work = threading.RLock()  # one look at a time
        # the debounce timers: never held for long, because watchdog's thread takes it while it
        # holds its own lock (a look that waited on it would block the observer, and its stop)
        self._timers = threading.Lock()
        self._arming = threading.Lock()
        self._watches: dict[str, tuple[Any, tuple[int, int]]] = {}  # folder → (watch, identity)
        self._rearm = threading.Event()
        self._rearm_thread: threading.Thread | None = None
        self._later: list[Callable[[], object]] = []  # nudges of a look, run once the lock is released
        self._stopped = threading.Event()

    # -- life cycle ---------------------------------------------------------------
    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Take the lock, read the config, start watching."""
        self._acquire_lock()
        try:
            self._refresh_targets()
            self._schedule()
        except BaseException:
            self._stopped.set()
            self._stop_observer()
            self._release_lock()
            raise
        names = ", ".join(str(t.path) for t in self._targets.values())
        self._emit(
            WatchEvent(
                "started", None, tr("watching {files} (policy {policy})").format(files=names, policy=self.policy)
            )
        )

    def stop(self) -> None:
        """Stop watching and release the lock (pending debounced checks are dropped). Returns
        promptly even while a look is still running (a slow nudge command, say)."""
        self._stopped.set()
        self._rearm.set()
        with self._timers:
            for t in self._targets.values():
                if t.timer is not None:
                    t.timer.cancel()
        if self._rearm_thread is not None:
            self._rearm_thread.join(timeout=5)
            self._rearm_thread = None
        self._stop_observer()
        if self._lock_fd is not None:
            self._emit(WatchEvent("stopped", None, tr("watcher stopped")))
        self._release_lock()

    def _stop_observer(self) -> None:
        """Stop and join watchdog's observer. An inotify event that lands while it stops is
        dropped with an ERROR record ("queue_events() called when the thread is inactive"),
        which is harmless here (the watcher is stopping or re-scheduling); it is filtered out
        meanwhile so that no stray error reaches a terminal."""
        with self._arming:
            observer, self._observer = self._observer, None
            self._watches = {}
        if observer is None:
            return
        with _quiet_emitter():
            observer.stop()
            with contextlib.suppress(RuntimeError):
                observer.join(timeout=5)

    def check_all(self) -> None:
        """Handle every watched file as it is now (``kvswitch watch --once``): the clients
        first (a mode flipped by hand is adopted before anything is propagated), then the
        config if it changed since the watcher started."""
        clients = [r for r, t in self._targets.items() if t.kind != "config"]
        config = [r for r, t in self._targets.items() if t.kind == "config"]
        for real in clients:
            self._handle(real, force=True)
        for real in config:
            self._handle(real)

    # -- the lock ------------------------------------------------------------------
    def _acquire_lock(self) -> None:
        import fcntl

        state = paths.dirs().state
        from kvswitch.io import _private_dir

        _private_dir(state)  # 0700, and so is every missing folder above it
        path = state / "watch.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or tr("another process")
            os.close(fd)
            raise WatcherBusyError(
                tr("another watcher is running for this kvswitch home: {holder}").format(holder=holder),
                Location(path),
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({_cmdline()})\n".encode(), 0)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- what is watched -----------------------------------------------------------
    def _refresh_targets(self) -> None:
        from kvswitch.config import client_path, config_file, read_config
        from kvswitch.io import read_optional

        wanted: list[tuple[Path, str, ClientEntry | None]] = [(config_file(), "config", None)]
        try:
            config = read_config()
        except KvswitchError as exc:
            self._emit(WatchEvent("invalid", config_file(), str(exc)))
        else:
            wanted += [(client_path(e), e.kind, e) for e in config.model.clients]
        old = self._targets
        # a link that points elsewhere now keeps what was known of the path as registered
        by_path = {os.path.abspath(t.path): t for t in old.values()}
        targets: dict[str, _Target] = {}
        aliases: dict[str, str] = {}
        for path, kind, entry in wanted:
            real = os.path.realpath(path)
            target = old.get(real) or by_path.get(os.path.abspath(path)) or _Target(path, kind, entry)
            target.path, target.kind, target.entry = path, kind, entry
            if target.seen is None:
                with contextlib.suppress(KvswitchError):  # never blocks: a FIFO is refused unread
                    raw = read_optional(path)
                    target.seen = _digest(raw) if raw is not None else None
            targets[real] = target
            aliases[os.path.abspath(path)] = real
            if not Path(real).exists() or Path(real).is_file():  # never a folder like /dev
                aliases[real] = real
        self._targets, self._aliases = targets, aliases

    def _links_moved(self) -> bool:
        """Whether a registered path resolves elsewhere than when its watch was set up."""
        return any(os.path.realpath(t.path) != real for real, t in list(self._targets.items()))

    def _schedule(self) -> None:
        """Start the observer (once), then bring the watched folders in line with the targets."""
        with self._arming:
            if self._observer is None and not self._stopped.is_set():
                from watchdog.observers import Observer

                observer = Observer()
                observer.daemon = True
                observer.start()
                self._handler = _event_handler(self)
                self._observer, self._watches = observer, {}
        self._arm()
        if self._rearm_thread is None and not self._stopped.is_set():
            thread = threading.Thread(target=self._rearm_loop, name="kvswitch-watch-rearm", daemon=True)
            self._rearm_thread = thread
            thread.start()

    def _arm(self) -> bool:
        """Watch the folder of every watched path, or while it is missing its nearest existing
        ancestor (to see it come back); re-schedule a folder that was deleted, moved away or
        re-created (its old inotify watch is gone). True when a watch changed."""
        with self._arming:
            observer = self._observer
            if observer is None or self._stopped.is_set():
                return False
            wanted: dict[str, tuple[int, int]] = {}
            for path in list(self._aliases):
                found = _nearest_folder(os.path.dirname(path))
                if found is not None:
                    wanted[found[0]] = found[1]
            changed = False
            for folder, (watch, identity) in list(self._watches.items()):
                if wanted.get(folder) != identity:
                    with _quiet_emitter(), contextlib.suppress(KeyError, RuntimeError, OSError):
                        observer.unschedule(watch)
                    del self._watches[folder]
                    changed = True
            for folder, identity in wanted.items():
                if folder in self._watches:
                    continue
                try:
                    watch = observer.schedule(self._handler, folder, recursive=False)
                except OSError as exc:  # gone again meanwhile, or out of inotify watches
                    self._log.warning("cannot watch %s: %s; trying again", folder, exc)
                    changed = True
                    continue
                self._watches[folder] = (watch, identity)
                changed = True
            return changed

    def _rearm_loop(self) -> None:
        """Every :data:`REARM_INTERVAL` s, or at once when a folder came or went: re-arm, and
        look at every file after a change (what happened while nothing watched is not lost)."""
        while not self._stopped.is_set():
            self._rearm.wait(REARM_INTERVAL)
            self._rearm.clear()
            if self._stopped.is_set():
                return
            try:
                moved = self._links_moved() and self._work.acquire(blocking=False)  # busy: next round
                if moved:
                    try:
                        self._refresh_targets()
                    finally:
                        self._work.release()
                if self._arm() or moved:
                    for real in list(self._targets):
                        self._poke(real)
            except Exception:  # noqa: BLE001 - the thread must go on re-arming
                self._log.exception("re-arming the watch failed")

    # -- debounce ------------------------------------------------------------------
    def _poke(self, real: str, event_type: str = "", delay: float | None = None) -> None:
        target = self._targets.get(real)
        if target is None or self._stopped.is_set():
            return
        # an in-place writer may pause mid-file (a half-written TOML can parse!): a file written
        # in place is read only once it is closed (inotify's close-write), or after WRITE_GRACE
        if event_type == "modified":
            target.writing = target.writing or time.monotonic()
        elif event_type in ("closed", "moved", "created", "deleted"):
            target.writing = 0.0
        with self._timers:
            if self._stopped.is_set():
                return
            if target.timer is not None:
                target.timer.cancel()
            timer = threading.Timer(self.debounce if delay is None else delay, self._handle, args=(real,))
            timer.daemon = True
            target.timer = timer
            timer.start()

    # -- handling ------------------------------------------------------------------
    def _handle(self, real: str, force: bool = False) -> None:
        from kvswitch.errors import LockTimeoutError, ReadError
        from kvswitch.locks import DEFAULT_TIMEOUT, switch_lock

        if self._stopped.is_set() and not force:
            return
        with self._work:
            target = self._targets.get(real)
            if target is None or (self._stopped.is_set() and not force):
                return  # (a look that waited for the one before it: stopped meanwhile)
            if target.writing and not force and time.monotonic() - target.writing < WRITE_GRACE:
                self._poke(real)  # still open for writing: look again after another quiet period
                return
            target.writing = 0.0
            self._later = []
            had_problem = target.problem is not None
            try:
                # read, plan and commit under the switch lock: a `kvswitch switch` never interleaves
                with switch_lock(timeout=DEFAULT_TIMEOUT if force else LOCK_WAIT):
                    self._handle_target(real, target, force)
            except LockTimeoutError as exc:
                target.stale = True  # nothing was looked at: the change is still to be handled
                if force:
                    self._emit(WatchEvent("error", target.path, str(exc)))
                else:
                    # another kvswitch is switching: not an error; look again once it is done
                    if not target.busy:
                        self._log.info("%s: another kvswitch is switching; looking again shortly", target.path)
                    target.busy = True
                    self._poke(real, delay=max(self.debounce, LOCK_WAIT))
                    return
            except ChangedOnDiskError as exc:
                # another save landed while we committed (all or none: nothing was written); what
                # we decided may be stale, so decide again on what is there after a quiet period
                target.stale = True
                target.retries += 1
                if target.retries <= MAX_RETRIES:
                    self._log.info("%s: %s; looking again", target.path, exc)
                    self._poke(real)
                else:
                    target.retries = 0
                    self._emit(WatchEvent("error", target.path, str(exc)))
            except ReadError as exc:
                # a FIFO, a directory, a device, a loop, a huge file: refused unread, said once
                target.stale = True  # the same content saved again is a new request
                message = _describe(exc, target.path, real)
                if message != target.problem:
                    target.problem = message
                    self._emit(WatchEvent("error", target.path, message))
                else:
                    self._log.info("%s: still: %s", target.path, message)
            except KvswitchError as exc:
                target.stale = True  # the same content saved again is a new request
                self._emit(WatchEvent("error", target.path, _describe(exc, target.path, real)))
            except Exception as exc:  # noqa: BLE001 - a watcher thread must report, not die
                target.stale = True
                self._log.exception("unexpected error")
                self._emit(
                    WatchEvent(
                        "error",
                        target.path,
                        tr("unexpected error: {error}").format(error=f"{type(exc).__name__}: {exc}"),
                    )
                )
            else:
                target.retries = 0
                if had_problem and target.problem is None:
                    # readable again: a change another file could not carry through meanwhile
                    # (it needed this one) is looked at again
                    for other, t in list(self._targets.items()):
                        if t.stale and other != real:
                            self._poke(other)
            target.busy = False
            later, self._later = self._later, []
            for tell in later:  # nudges (a command may take seconds): outside the switch lock
                try:
                    tell()
                except Exception:  # noqa: BLE001 - a watcher thread must report, not die
                    self._log.exception("nudging failed")

    def _handle_target(self, real: str, target: _Target, force: bool) -> None:
        from kvswitch.document import parse_config
        from kvswitch.errors import ConfigParseError
        from kvswitch.io import read_optional

        raw = read_optional(target.path)  # what the registered path holds now (a link may move)
        if raw is None:
            target.problem = None
            if target.seen is not None:
                target.seen = None
                self._emit(WatchEvent("error", target.path, tr("the file is gone; waiting for it to come back")))
            return
        target.problem = None
        digest = _digest(raw)
        if digest in target.own:
            target.own.discard(digest)
            target.seen = digest
            return
        target.own.clear()  # someone else wrote after us: our pending echoes are stale
        if digest == target.seen and not force and not target.stale:
            return
        target.stale = False
        from kvswitch.kinds import CONFIG

        kind = CONFIG if target.kind == "config" else target.kind
        problem: ConfigParseError | None = None
        try:
            cf = parse_config(raw, kind, target.path)
        except ConfigParseError as exc:
            problem = exc
        # maybe half-written: it does not parse, or it is empty (an in-place save truncates
        # first, its event may not have arrived yet, and an empty settings.json parses, as {}):
        # act only on what is still there after another quiet period
        if (problem is not None or not raw.strip()) and target.unstable != digest and not force:
            target.unstable = digest
            self._poke(real)
            return
        target.unstable = None
        target.seen = digest
        if problem is not None:
            self._emit(WatchEvent("invalid", target.path, _nothing_written(problem)))
            return
        if target.kind == "config":
            self._config_changed(cf)
        else:
            self._client_changed(real, target, cf)

    # -- a client changed ----------------------------------------------------------
    def _client_changed(self, real: str, target: _Target, cf: ConfigFile) -> None:
        from kvswitch.clients import client_mode, registered
        from kvswitch.config import read_config
        from kvswitch.diagnostics import Severity
        from kvswitch.kinds import MISSING, get_path, kind_of
        from kvswitch.render import drift, mode_defaults
        from kvswitch.rules import check

        config = read_config()
        name, profile = config.profile()
        entry = registered(config, target.path)
        mode = client_mode(config, entry) if entry is not None else config.model.mode
        if entry is not None and entry.route == "gateway":  # compared with the gateway's form
            from kvswitch.gateway.pinning import gateway_profile

            profile = gateway_profile(config, name, profile)
        diags = check(cf, git=False)
        kind = kind_of(cf)
        file_mode = kind.file_mode(cf, mode_defaults(profile))
        flipped = file_mode in ("merged", "split") and file_mode != mode
        # a mode flipped by hand leaves the other form's keys: the missing endpoints are ours to fill
        errors = tuple(
            d
            for d in diags
            if d.severity is Severity.ERROR
            and not (flipped and d.code == "KVS110" and get_path(cf.data, d.key_path) is MISSING)
        )
        if errors:
            self._emit(WatchEvent("invalid", target.path, _first_finding(errors), errors))
            return
        fixable = [d for d in diags if d.fix is not None and d.code in config.model.auto_fix]
        if fixable:
            cf = self._fix(real, target, cf, fixable)
        fields = drift(cf, profile, mode, name=name)
        owned = [f for f in fields if f in OWNED_FIELDS or f == "cache.form"]
        other = [f for f in fields if f not in owned]
        if flipped and kind.rewrites_itself and _just_written(target.path):
            # the client rewrote its file from its own copy right after kvswitch wrote it: that
            # is not the user choosing a mode, so it is never adopted
            self._emit(
                WatchEvent(
                    "drift",
                    target.path,
                    tr(
                        "{product} rewrote its file with the {mode} settings it had before kvswitch's change; not "
                        "adopted. "
                        "Quit {product} or start a new session, then switch again"
                    ).format(product=kind.product, mode=file_mode),
                )
            )
            return
        note = ""
        chunk_path = kind.fields(cf.data).get("cache.chunk_size")
        if (
            "cache.chunk_size" in owned
            and file_mode == "split"
            and chunk_path is not None
            and get_path(cf.data, chunk_path) is not MISSING
        ):  # changed, not left out
            note = tr(
                " (chunk_size was changed in split mode, where it is ignored: the prefill instance "
                "picks its own chunking; it takes effect in merged mode)"
            )
        if other:
            self._emit(
                WatchEvent(
                    "drift",
                    target.path,
                    tr(
                        "changed by hand, not adopted (kvswitch never adopts keys, base URLs or models): {fields}"
                    ).format(fields=", ".join(other)),
                )
            )
        if not owned:
            return
        if self.policy == "report":
            self._emit(
                WatchEvent(
                    "drift",
                    target.path,
                    tr("differs from profile {name}: {fields}{note}").format(
                        name=name, fields=", ".join(owned), note=note
                    ),
                )
            )
        elif self.policy == "revert":
            self._revert(config, name, profile, target, cf, owned, note, mode)
        else:
            self._adopt(config, name, target, cf, owned, note, entry)

    def _fix(self, real: str, target: _Target, cf: ConfigFile, fixable: list[Diagnostic]) -> ConfigFile:
        from kvswitch.document import parse_config
        from kvswitch.io import atomic_write
        from kvswitch.linter import fixed_text

        new = fixed_text(cf, fixable).encode("utf-8")
        target.own.add(_digest(new))
        atomic_write(target.path, new, expected=cf.raw)
        from kvswitch.state import record_writes

        record_writes([target.path], {target.path: new})
        target.seen = _digest(new)
        what = clauses(d.fix.description for d in fixable if d.fix is not None)
        self._emit(WatchEvent("fixed", target.path, what, tuple(fixable), (), (target.path,)))
        self._later.append(lambda: self._nudge([target]))
        return parse_config(new, cf.kind, cf.path)

    def _adopt(
        self,
        config: Config,
        name: str,
        target: _Target,
        cf: ConfigFile,
        owned: list[str],
        note: str,
        entry: ClientEntry | None = None,
    ) -> None:
        from kvswitch.clients import ClientPlan, commit_plan, plan_clients
        from kvswitch.config import edited_text, read_config_text
        from kvswitch.edits import Delete, Set
        from kvswitch.kinds import MISSING, get_path, kind_of
        from kvswitch.kinds.own_config import profile_fields
        from kvswitch.render import mode_defaults
        from kvswitch.transaction import FileWrite

        kind = kind_of(cf)
        fmap = kind.fields(cf.data)
        pmap = profile_fields(name)
        _, profile = config.profile(name)
        edits: list[Edit] = []
        own_note = ""
        for f in OWNED_FIELDS:
            if f == "cache.mode":  # a real client's mode is its URL and header
                value = kind.file_mode(cf, mode_defaults(profile))
                value = MISSING if value is None else value
            else:
                value = get_path(cf.data, fmap[f]) if f in fmap else MISSING
            if value is MISSING or value is None:
                continue
            if f in ("split.prefill_base_url", "split.decode_base_url"):
                current = getattr(profile.split, f.split(".")[1]) or profile.base_url
                if value == current:
                    continue
            if f == "cache.mode" and entry is not None and entry.mode is not None:
                # a client with a mode of its own: the hand flip is its own mode now (none when
                # it is the config's again, as after kvswitch switch MODE --client)
                i = next(i for i, e in enumerate(config.model.clients) if e is entry)
                if value == config.model.mode:
                    edits.append(Delete(("clients", i, "mode")))
                    own_note = tr("it follows the config's mode again")
                elif value != entry.mode:
                    edits.append(Set(("clients", i, "mode"), value))
                    own_note = tr("its own mode is {mode} now").format(mode=value)
            elif get_path(config.file.data, pmap[f]) != value:
                edits.append(Set(pmap[f], value))
        text = edited_text(config, edits) if edits else config.file.text
        new_config = read_config_text(text, config.path)
        name, profile = new_config.profile(name)
        mode = new_config.model.mode
        # the others take the profile; the edited file only completes its mode's form (its other
        # hand edits, a base URL say, stay: they are reported, not adopted, and not undone)
        others = plan_clients(
            new_config, name, profile, mode, profile_wins=True, with_keys=False, exclude=frozenset({target.path})
        )
        own = plan_clients(
            new_config,
            name,
            profile,
            mode,
            profile_wins=False,
            with_keys=False,
            exclude=frozenset(p for p in self._all_paths() if p != target.path),
        )
        plan = ClientPlan(
            others.changes + own.changes,
            others.writes + own.writes,
            others.memos + own.memos,
            {**others.entries, **own.entries},
            others.rendered + own.rendered,
        )
        extra = [FileWrite(config.path, text.encode("utf-8"), config.file.raw)] if edits else []
        with self._expecting([*plan.writes, *extra]):
            commit_plan(plan, extra)
        written = [w.path for w in others.writes]
        adopted = ", ".join(
            f"{e.path[-1]} = {e.value!r}" for e in edits if isinstance(e, Set) and e.path[0] != "clients"
        )
        took = tr("took {values} into profile {name}").format(values=adopted, name=name) if adopted else ""
        said = clauses(filter(None, [took, own_note]))
        said = said or tr("took nothing new into profile {name}").format(name=name)
        self._emit(WatchEvent("adopted", target.path, f"{said}{note}", written=(config.path,) if edits else ()))
        if written:
            told = [self._targets[os.path.realpath(p)] for p in written]

            def tell() -> None:
                nudges = self._nudge(told)
                message = tr("brought {count} other client(s) to mode {mode}: {files}").format(
                    count=len(written), mode=mode, files=", ".join(str(p) for p in written)
                )
                self._emit(WatchEvent("propagated", None, message, nudges=nudges, written=tuple(written)))

            self._later.append(tell)

    def _revert(
        self,
        config: Config,
        name: str,
        profile: Any,
        target: _Target,
        cf: ConfigFile,
        owned: list[str],
        note: str,
        mode: str,
    ) -> None:
        from kvswitch.clients import commit_plan, plan_clients

        others = frozenset(p for p in self._all_paths() if p != target.path)
        plan = plan_clients(
            config, name, profile, config.model.mode, profile_wins=True, with_keys=False, exclude=others
        )  # the client's own mode, where it has one
        with self._expecting(plan.writes):
            commit_plan(plan)

        def tell() -> None:
            nudges = self._nudge([target]) if plan.writes else ()
            message = tr("put back profile {name} in mode {mode}: {fields}{note}").format(
                name=name, mode=mode, fields=", ".join(owned), note=note
            )
            self._emit(
                WatchEvent("reverted", target.path, message, nudges=nudges, written=tuple(w.path for w in plan.writes))
            )

        self._later.append(tell)

    # -- kvswitch's config changed ---------------------------------------------------
    def _config_changed(self, cf: ConfigFile) -> None:
        from kvswitch.clients import commit_plan, plan_clients
        from kvswitch.config import read_config

        try:
            config = read_config()
        except KvswitchError as exc:
            self._emit(WatchEvent("invalid", cf.path, _nothing_written(exc)))
            return
        self._refresh_targets()
        self._schedule()
        name, profile = config.profile()
        broken = frozenset(self._broken_clients())  # never rendered over: reported instead
        # nor a client with a change not yet carried through: its own look decides (a mode the
        # user just flipped there must not be overwritten with the config's older one)
        pending = self._pending_clients()
        for real in pending:
            self._poke(real)  # its look comes after this one, even if nothing else stirs it
        plan = plan_clients(
            config,
            name,
            profile,
            config.model.mode,
            profile_wins=True,
            with_keys=False,
            exclude=broken | {self._targets[r].path for r in pending},
        )
        if not plan.writes:
            return
        if self.policy == "report":
            names = ", ".join(str(w.path) for w in plan.writes)
            self._emit(
                WatchEvent(
                    "drift",
                    cf.path,
                    tr("kvswitch's config changed; these clients differ (policy report): {files}").format(files=names),
                )
            )
            return
        with self._expecting(plan.writes):
            commit_plan(plan)
        written = [w.path for w in plan.writes]
        told = [self._targets[os.path.realpath(p)] for p in written]

        def tell() -> None:
            nudges = self._nudge(told) if told else ()
            own = sum(1 for p in written if (e := plan.entries.get(p)) is not None and e.mode is not None)
            if own:
                message = tr(
                    "config changed: {count} client(s) brought to profile {name}, mode {mode} ({own} in their own mode)"
                ).format(count=len(written), name=name, mode=config.model.mode, own=own)
            else:
                message = tr("config changed: {count} client(s) brought to profile {name}, mode {mode}").format(
                    count=len(written), name=name, mode=config.model.mode
                )
            self._emit(WatchEvent("propagated", cf.path, message, nudges=nudges, written=tuple(written)))

        self._later.append(tell)

    # -- helpers ---------------------------------------------------------------------
    def _broken_clients(self) -> list[Path]:
        """Clients that do not parse or have error findings now (each reported)."""
        from kvswitch.diagnostics import Severity
        from kvswitch.document import parse_config
        from kvswitch.io import read_bytes
        from kvswitch.rules import check

        out = []
        for t in self._targets.values():
            if t.kind == "config":
                continue
            try:
                cf = parse_config(read_bytes(t.path), t.kind, t.path)
                errors = [d for d in check(cf, git=False) if d.severity is Severity.ERROR]
            except KvswitchError as exc:
                self._emit(WatchEvent("invalid", t.path, _nothing_written(exc)))
                out.append(t.path)
                continue
            if errors:
                self._emit(WatchEvent("invalid", t.path, _first_finding(errors), tuple(errors)))
                out.append(t.path)
        return out

    def _pending_clients(self) -> list[str]:
        """Clients (real paths) whose change the watcher has not carried through yet: a failed
        look, or content it has not looked at (a debounced look is on its way)."""
        from kvswitch.io import read_optional

        out = []
        for real, t in self._targets.items():
            if t.kind == "config":
                continue
            try:
                raw = read_optional(t.path)
            except KvswitchError:
                continue  # unreadable (a FIFO, say): among the broken ones, reported there
            digest = _digest(raw) if raw is not None else None
            if t.stale or (digest is not None and digest != t.seen and digest not in t.own):
                out.append(real)
        return out

    def _all_paths(self) -> list[Path]:
        return [t.path for t in self._targets.values() if t.kind != "config"]

    @contextlib.contextmanager
    def _expecting(self, writes: list[Any]) -> Iterator[None]:
        """Note what kvswitch is about to write, so its echo is ignored and a later save of
        the earlier content still counts as a change; taken back if the commit fails (nothing
        was written, so a save of that content would be someone else's)."""
        before: dict[int, tuple[_Target, set[str], str | None]] = {}
        for w in writes:
            target = self._targets.get(os.path.realpath(w.path))
            if target is not None:
                before.setdefault(id(target), (target, set(target.own), target.seen))
                digest = _digest(w.data)
                target.own.add(digest)
                target.seen = digest
        try:
            yield
        except BaseException:
            for target, own, seen in before.values():
                target.own, target.seen = own, seen
            raise

    def _nudge(self, targets: list[_Target]) -> tuple[NudgeResult, ...]:
        from kvswitch.reload import nudge

        results = tuple(nudge(t.entry, t.path) for t in targets if t.entry is not None)
        for r in results:
            self._emit(WatchEvent("nudged", r.client, r.message, nudges=(r,)))
        return results

    def _emit(self, event: WatchEvent) -> None:
        level = logging.WARNING if event.kind in ("invalid", "error") else logging.INFO
        self._log.log(level, "%s", event)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:  # noqa: BLE001 - a broken callback must not stop the watcher
                self._log.exception("event callback failed")


def _event_handler(watcher: Watcher) -> Any:
    """watchdog's handler: pokes the watched paths an event names; a folder that came or went
    wakes the re-arming. It never waits on a look (it runs in watchdog's thread, holding
    watchdog's lock)."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            kind = event.event_type
            if kind in ("opened", "closed_no_write"):
                return
            if event.is_directory:
                if kind in ("created", "deleted", "moved"):
                    watcher._rearm.set()
                kind = ""  # a folder where a file should be: look, but never wait for a close
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    real = watcher._aliases.get(os.path.abspath(os.fsdecode(raw)))
                    if real is not None:
                        watcher._poke(real, kind if raw == event.src_path or not kind else "moved")

    return Handler()


def _nearest_folder(path: str) -> tuple[str, tuple[int, int]] | None:
    """``path`` if it is a folder, else its nearest ancestor that is: (path, (device, inode))."""
    while True:
        try:
            st = Path(path).stat()
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            return path, (st.st_dev, st.st_ino)
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


@contextlib.contextmanager
def _quiet_emitter() -> Iterator[None]:
    """Filter watchdog's "emitter inactive" ERROR while a watch is taken down: an inotify event
    that lands meanwhile is dropped with it, which is harmless then."""
    emitter_log = logging.getLogger("watchdog.observers.inotify")
    emitter_log.addFilter(_drop_inactive_emitter)
    try:
        yield
    finally:
        emitter_log.removeFilter(_drop_inactive_emitter)


def _nothing_written(problem: object) -> str:
    """An event's message for a file kvswitch did not write because of ``problem``."""
    return tr("{error} — nothing written").format(error=problem)


def _first_finding(errors: tuple[Diagnostic, ...] | list[Diagnostic]) -> str:
    """The first of a file's error findings as an event's message (``path:line:col: CODE message``)."""
    first = errors[0]
    return tr("{location}: {code} {message} — nothing written").format(
        location=first.location, code=first.code, message=first.message
    )


def _describe(exc: KvswitchError, *paths: object) -> str:
    """``exc`` as an event's message: without its location when that is just the event's path."""
    loc = exc.location
    if loc is not None and loc.line is None and loc.path is not None and str(loc.path) in {str(p) for p in paths}:
        return exc.message
    return str(exc)


REWRITE_WINDOW = 30.0
"""How long after kvswitch wrote a file a client's rewrite of it counts as "just after" (seconds)."""


def _just_written(path: Path) -> bool:
    import time

    from kvswitch.state import last_write

    when = last_write(path)
    return when is not None and 0 <= time.time() - when < REWRITE_WINDOW


def _cmdline() -> str:
    try:
        return Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "kvswitch"
