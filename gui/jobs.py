"""The work the tray hands to ``run_in_thread``: plain functions over the kvswitch library
that touch files, the keyring or processes. No widgets here, and nothing here runs on the GUI
thread (the views and controllers only pass these functions to ``run_in_thread``).

Each returns plain data (frozen dataclasses) the GUI renders. The words in it go through
``QCoreApplication.translate`` (context ``jobs``; thread-safe), so they read in the tray's language.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication

if TYPE_CHECKING:
    from kvswitch.backups import Backup
    from kvswitch.clients import ClientChange
    from kvswitch.config import Config
    from kvswitch.gateway.live import LiveFigures, LiveSamples
    from kvswitch.installed import Installed
    from kvswitch.profile_check import ProfileCheck
    from kvswitch.reload import NudgeResult
    from kvswitch.watch import Watcher, WatchEvent

__all__ = [
    "DETECT_OFFERED",
    "ClientView",
    "Detected",
    "GatewayView",
    "KeyInfo",
    "ProfileForm",
    "ProfileMade",
    "RestoreOutcome",
    "Snapshot",
    "SwitchOutcome",
    "check_form",
    "detect",
    "first_run_offer",
    "follow_all",
    "gateway_state",
    "import_client",
    "key_info",
    "load_form",
    "probe_summary",
    "register",
    "restore_backup",
    "save_form",
    "save_language",
    "set_autostart",
    "snapshot",
    "start_gateway",
    "start_watcher",
    "stop_gateway",
    "stop_watcher",
    "store_key",
    "switch_client",
    "switch_mode",
    "use_profile",
]

MENU_BACKUPS = 10
"""Backups listed per client in the Restore menu (newest first)."""
DETECT_OFFERED = "tray-detect-offered"
"""The file in kvswitch's state directory that says the tray offered "Detect clients…" once."""
translate = QCoreApplication.translate


# -- the state the tray shows ------------------------------------------------------------


@dataclass(frozen=True)
class ClientView:
    """One registered client as the menu shows it."""

    path: Path
    label: str
    kind: str
    name: str | None
    mode: str | None
    in_sync: bool
    drift: tuple[str, ...]
    problem: str | None
    exists: bool
    nudge: str
    backups: tuple[Backup, ...] = ()
    target: str | None = None
    """The mode the client is to be in: its own, else every client's."""
    own_mode: bool = False
    """Switched alone: it keeps this mode until every client is switched (or it follows all)."""
    changed_outside: bool = False
    """The file differs from what kvswitch last wrote there (edited by hand or by its client)."""
    no_profile: bool = False
    """kvswitch.toml has no active profile yet (only clients, as Detect registers them)."""
    pinned: bool = False
    """Pinned to the gateway (``route = "gateway"``): its file holds the gateway's address, and
    ``mode`` is the running gateway's (``None`` while none runs)."""

    @property
    def state(self) -> str:
        """``split, in sync`` / ``split, drifted: cache.chunk_size`` / ``invalid: …`` / ``missing``
        / ``no profile yet``; a pinned client's ``via gateway · split, in sync`` (``via gateway,
        not running, in sync`` while none runs)."""
        if not self.exists:
            return translate("jobs", "missing")
        if self.problem is not None:
            return translate("jobs", "invalid: {problem}").format(problem=_short_problem(self.problem, self.path))
        if self.no_profile:
            return translate("jobs", "no profile yet")
        if self.pinned:
            mode = (
                translate("jobs", "via gateway · {mode}").format(mode=self.mode)
                if self.mode
                else translate("jobs", "via gateway, not running")
            )
        else:
            mode = self.mode or translate("jobs", "no mode")
        if self.in_sync:
            return translate("jobs", "{mode}, in sync").format(mode=mode)
        return translate("jobs", "{mode}, drifted: {fields}").format(mode=mode, fields=", ".join(self.drift))

    @property
    def title(self) -> str:
        """``Claude Code — split, in sync``, with `` · changed outside`` when it was."""
        title = f"{self.label} — {self.state}"
        return translate("jobs", "{title} · changed outside").format(title=title) if self.changed_outside else title

    @property
    def ok(self) -> bool:
        return self.exists and self.problem is None and self.in_sync


@dataclass(frozen=True)
class Snapshot:
    """Everything the tray's icon, tooltip and menu show, read in one go."""

    profile: str | None = None
    mode: str | None = None
    profiles: tuple[str, ...] = ()
    clients: tuple[ClientView, ...] = ()
    config_path: Path | None = None
    log_path: Path | None = None
    log_exists: bool = False
    last_probe: str | None = None
    error: str | None = None
    key_ref: str | None = None
    gateway: GatewayView | None = None
    language: str | None = None
    """The tray's language setting (``en``, ``zh_CN``; None: the system's)."""
    system_language: str = "en"
    """The language the system asks for (``KVSWITCH_LANG``, else the locale)."""
    autostart: bool | None = None
    """kvswitch-tray starts at login; None where ``kvswitch_gui.autostart`` is not installed."""

    @property
    def no_profile(self) -> bool:
        """Read, but there is no active profile yet: nothing can be switched until one is made."""
        return self.error is None and self.profile is None and self.config_path is not None

    @property
    def gateway_missing(self) -> bool:
        """Some client is pinned to the gateway, and none runs: its requests reach nothing."""
        return any(c.pinned for c in self.clients) and not (self.gateway is not None and self.gateway.running)

    @property
    def warning(self) -> bool:
        return self.error is not None or self.no_profile or not all(c.ok for c in self.clients) or self.gateway_missing

    @property
    def structure(self) -> tuple[Any, ...]:
        """What decides the menu's items (labels aside): equal structures are updated in place."""
        return (
            self.error is None,
            self.profiles,
            tuple((c.path, tuple(b.id for b in c.backups)) for c in self.clients),
        )


def _short_problem(problem: str, path: Path) -> str:
    """A client's problem without its path (the submenu already names the file)."""
    text = problem.removeprefix(f"{path}:")
    m = re.match(r"(\d+)(?::\d+)?: (.*)", text, re.S)
    if m:
        text = translate("jobs", "{problem} (line {line})").format(problem=m.group(2), line=m.group(1))
    text = text.strip()
    return text if len(text) <= 90 else text[:89] + "…"


def _brief(exc: Any) -> str:
    """An error with its file named by name only (``kvswitch.toml:3:1: …``)."""
    loc = exc.location
    if loc is None or loc.path is None:
        return str(exc.message)
    where = ":".join([loc.path.name, *(str(n) for n in (loc.line, loc.column) if n is not None)])
    return f"{where}: {exc.message}"


def _labels(clients: list[tuple[Path, str | None, str]]) -> list[str]:
    """Client labels: the entry's name, else its product (``Claude Code``); two unnamed ones
    of one product get their folders (``Claude Code (work/.claude)``)."""
    base = [name or product for _, name, product in clients]
    out = []
    for i, ((path, name, _), label) in enumerate(zip(clients, base, strict=True)):
        if name is None and base.count(label) > 1:
            others = [p for j, (p, _, _) in enumerate(clients) if j != i and base[j] == label]
            label = f"{label} ({_folder(path, others)})"
        out.append(label)
    return out


def _folder(path: Path, others: list[Path]) -> str:
    """The shortest tail of ``path``'s folder that no path of ``others`` ends its folder with
    (the whole path when the folders are the same)."""
    parts = path.parent.parts
    for n in range(1, len(parts) + 1):
        tail = parts[-n:]
        if all(o.parent.parts[-n:] != tail for o in others):
            return "/".join(tail) if tail[0] != "/" else "/" + "/".join(tail[1:])
    return str(path)


def _product(kind: str) -> str:
    from kvswitch.errors import KvswitchError
    from kvswitch.kinds import get_kind

    try:
        return get_kind(kind).product
    except (KvswitchError, KeyError, ValueError):
        return kind


@dataclass(frozen=True)
class GatewayView:
    """kvswitch's local gateway as the tray shows it: running or not, where, in which mode,
    how it routes, the clients pinned to it (their labels), and its latest answers' figures."""

    running: bool
    url: str | None = None
    """The running gateway's address; while none runs, where one would listen (the config's)."""
    mode: str | None = None
    profile: str | None = None
    pid: int | None = None
    in_flight: int = 0
    pinned: tuple[str, ...] = ()
    problem: str | None = None
    """Why its state could not be read (the control socket refused or did not answer)."""
    route: str | None = None
    """How it routes a request that asks for no mode when not by its mode (``auto``);
    ``None``: by its mode."""
    live: LiveFigures | None = None
    """TTFT per mode of its latest answers (``GET /samples``), read with the local token."""
    live_problem: str | None = None
    """Why ``live`` could not be read (no token here, refused, no answer)."""

    @property
    def state(self) -> str:
        """``Gateway: on, split — http://127.0.0.1:18090`` / ``Gateway: off``."""
        if self.running:
            return translate("jobs", "Gateway: on, {mode} — {url}").format(mode=self.mode, url=self.url)
        if self.problem:
            return translate("jobs", "Gateway: unknown ({problem})").format(problem=self.problem)
        return translate("jobs", "Gateway: off")

    @property
    def route_line(self) -> str:
        """``route: default (split)``, or the route it was given (``route: auto``)."""
        if self.route is None:
            return translate("jobs", "route: default ({mode})").format(mode=self.mode)
        return translate("jobs", "route: {route}").format(route=self.route)

    @property
    def live_lines(self) -> tuple[str, ...]:
        """``merged: TTFT p50 123 ms (last 37 requests)``, ``split: no requests yet``; or one
        line saying why there are no figures."""
        if self.live is not None:
            return self.live.lines
        if self.live_problem:
            return (translate("jobs", "no figures: {problem}").format(problem=self.live_problem),)
        return ()


def _gateway_view(info: Any, pinned: tuple[str, ...] = ()) -> GatewayView:
    """A running gateway (a ``control.GatewayInfo``) as the tray shows it."""
    return GatewayView(
        True,
        info.url,
        info.mode or None,
        info.profile,
        info.pid or None,
        info.in_flight,
        pinned,
        route=_route(getattr(info, "route", None)),
    )


def _route(route: Any) -> str | None:
    """A gateway's route for requests that ask for no mode, as the view keeps it."""
    return route if isinstance(route, str) and route not in ("", "mode", "default") else None


_live_samples: LiveSamples | None = None
_live_lock = threading.Lock()


def _live(config: Config | None, view: GatewayView) -> GatewayView:
    """``view`` with its latest answers' figures, or why they cannot be read. The samples are
    kept between calls (one reader for the process), so each read fetches only what is new."""
    global _live_samples
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.live import LiveSamples
    from kvswitch.gateway.token import load_token

    if config is None:
        return replace(
            view, live_problem=translate("jobs", "kvswitch.toml does not read, so the gateway's token is unknown")
        )
    try:
        token = load_token(config)
    except KvswitchError as exc:
        return replace(view, live_problem=translate("jobs", "the gateway's token: {problem}").format(problem=exc))
    if token is None:
        ref = config.model.gateway.token
        why = (
            translate("jobs", "${name} (the gateway's token) is not set where the tray runs").format(
                name=ref.removeprefix("env:")
            )
            if ref.startswith("env:")
            else translate("jobs", "the keyring holds no gateway token yet (kvswitch gateway pin makes one)")
        )
        return replace(view, live_problem=why)
    with _live_lock:
        if _live_samples is None:
            _live_samples = LiveSamples()
        reader = _live_samples
    try:
        return replace(view, live=reader.read(view.url or "", token))
    except KvswitchError as exc:
        return replace(view, live_problem=str(exc))


def _listen_url(config: Config | None) -> str | None:
    """Where pinned clients reach a gateway started with the config's settings."""
    from kvswitch.gateway.pinning import gateway_url

    return gateway_url(config) if config is not None else None


def gateway_state(pinned: tuple[str, ...] | None = None) -> GatewayView | None:
    """Whether a gateway runs for this kvswitch home (asked over its control socket), with the
    labels of the clients pinned to it (``pinned``, else read from the config) and, while it
    runs, its latest answers' figures. ``None`` when there is neither a kvswitch.toml nor a
    running gateway."""
    from kvswitch.config import existing_config
    from kvswitch.errors import KvswitchError

    try:
        config = existing_config()
    except KvswitchError:
        config = None  # a config that does not read: the snapshot says why; the gateway may still run
    return _gateway_of(config, pinned)


def _pinned(config: Config) -> tuple[str, ...]:
    """The labels of the clients the config pins to the gateway."""
    return tuple(e.name or _product(e.kind) for e in config.model.clients if e.route == "gateway")


def _gateway_of(config: Config | None, pinned: tuple[str, ...] | None) -> GatewayView | None:
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway import control

    if pinned is None:
        pinned = _pinned(config) if config is not None else ()
    try:
        info = control.running()
    except KvswitchError as exc:
        return GatewayView(False, _listen_url(config), pinned=pinned, problem=str(exc))
    if info is not None:
        return _live(config, _gateway_view(info, pinned))
    if config is None:
        return None
    return GatewayView(False, _listen_url(config), pinned=pinned)


def start_gateway() -> GatewayView:
    """Start the gateway in the background (``kvswitch gateway run`` as a process of its own, in
    a session of its own: it outlives the tray) for the active profile on the config's port, and
    return once it answers. Refused (``KvswitchError``) without an active profile, when one
    already runs, or when it cannot start (the reason from its log)."""
    from kvswitch.config import read_config
    from kvswitch.gateway import process

    config = read_config()
    config.profile()  # no config or no active profile: say so here, before a process starts
    return _gateway_view(process.detach([]), _pinned(config))  # detach's answer: it runs now


def stop_gateway() -> bool:
    """Stop the running gateway (its in-flight streams get up to 10 s) and wait for its end;
    ``False`` when none ran."""
    from kvswitch.gateway import control

    return control.stop() is not None


def probe_summary(report: Mapping[str, Any]) -> str | None:
    """One line for the tooltip: TTFT medians per mode of a probe report."""
    modes = report.get("modes")
    if not isinstance(modes, Mapping) or not modes:
        return None
    parts = []
    for mode, data in modes.items():
        median = data.get("ttft_ms", {}).get("median") if isinstance(data, Mapping) else None
        parts.append(f"{mode} {median:.0f} ms" if isinstance(median, int | float) else f"{mode} n/a")
    from kvswitch.times import local_minute

    when = local_minute(report["time"]) if report.get("time") else ""
    figures = " · ".join(parts)
    if when:
        return translate("jobs", "last probe {when}: TTFT median {figures}").format(when=when, figures=figures)
    return translate("jobs", "last probe: TTFT median {figures}").format(figures=figures)


def snapshot() -> Snapshot:
    """Read the config, every client's state and backups, and the last probe."""
    from kvswitch import paths
    from kvswitch.backups import list_backups
    from kvswitch.clients import status
    from kvswitch.config import client_path, config_file, read_config
    from kvswitch.errors import KvswitchError
    from kvswitch.probe.report import load_history

    log = paths.dirs().logs / "watch.log"
    history = load_history(limit=1)
    last = probe_summary(history[-1]) if history else None
    common: dict[str, Any] = {"log_path": log, "log_exists": log.exists(), "last_probe": last, **_tray_settings()}
    from kvswitch.transaction import recover

    try:
        recover()  # a switch a crash interrupted is finished or rolled back first, as status does
        config = read_config()
        st = status()
    except KvswitchError as exc:
        return Snapshot(config_path=config_file(), error=_brief(exc), **common)
    entries = {client_path(e): e for e in config.model.clients}
    # a name that only repeats the kind (as client detect registers them) reads as the product
    labels = _labels([(c.path, None if c.name == c.kind else c.name, _product(c.kind)) for c in st.clients])
    clients = []
    for c, label in zip(st.clients, labels, strict=True):
        entry = entries.get(c.path)
        clients.append(
            ClientView(
                c.path,
                label,
                c.kind,
                c.name,
                c.mode,
                c.in_sync,
                tuple(c.drift),
                c.problem,
                c.exists,
                entry.nudge.kind if entry is not None else "none",
                tuple(list_backups(c.path)[:MENU_BACKUPS]),
                c.target,
                c.own_mode,
                c.changed_outside,
                st.profile is None,
                c.route == "gateway",
            )
        )
    key_ref = config.model.profiles[st.profile].key if st.profile in config.model.profiles else None
    gateway = _gateway_of(config, tuple(c.label for c in clients if c.pinned))
    return Snapshot(
        st.profile,
        st.mode,
        tuple(config.model.profiles),
        tuple(clients),
        config.path,
        key_ref=key_ref,
        gateway=gateway,
        **common,
    )


def _tray_settings() -> dict[str, Any]:
    """The tray's own settings for the snapshot: its language, and whether it starts at login."""
    from kvswitch_gui.translations import saved_language, system_language

    try:
        from kvswitch_gui import autostart  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # not installed with this version of the tray
        enabled = None
    else:
        from kvswitch.errors import KvswitchError

        try:
            enabled = bool(autostart.is_enabled())
        except (OSError, KvswitchError):  # unreadable: not an item the desktop runs either
            enabled = False
    return {"language": saved_language(), "system_language": system_language(), "autostart": enabled}


def save_language(lang: str | None) -> None:
    """Save the tray's language (None: the system's); it applies at the next start."""
    from kvswitch_gui.translations import save_language as save

    save(lang)


def set_autostart(on: bool) -> Path | None:
    """Start kvswitch-tray at login (the entry written: returned) or not (``None``)."""
    from kvswitch_gui import autostart  # type: ignore[attr-defined,unused-ignore]

    if on:
        return Path(autostart.enable())
    autostart.disable()
    return None


# -- switching -------------------------------------------------------------------------


@dataclass(frozen=True)
class SwitchOutcome:
    """A finished switch (every client's mode, one client's, a profile): what changed and how
    each client was told."""

    what: str  # "mode" | "profile" | "client" (one client's mode) | "follow" (one client back to all)
    target: str
    changes: tuple[ClientChange, ...]
    nudges: tuple[NudgeResult, ...] = ()
    recovered: str | None = None
    client: Path | None = None
    """The client switched alone ("client", "follow")."""
    gateway: GatewayView | None = None
    """The running gateway after it took the new mode or profile (``None``: none runs, or it
    was not told: see ``gateway_problem``)."""
    gateway_problem: str | None = None
    """Why a running gateway did not take the switch (the files were switched all the same)."""

    @property
    def changed(self) -> tuple[ClientChange, ...]:
        return tuple(c for c in self.changes if c.changed)

    @property
    def restart(self) -> tuple[NudgeResult, ...]:
        """Nudges that could not reload the client: the user has to restart it (S-35)."""
        return tuple(n for n in self.nudges if n.restart_needed or not n.ok)


def _nudge(changes: list[ClientChange]) -> tuple[NudgeResult, ...]:
    from kvswitch.clients import nudge_changed

    return nudge_changed(changes)


def _tell_gateway(tell: Callable[[], Any]) -> dict[str, Any]:
    """After a switch of every client: ``tell`` a running gateway (``control.tell_mode`` /
    ``control.reload``); the outcome's ``gateway`` and ``gateway_problem``."""
    from kvswitch.errors import KvswitchError

    try:
        info = tell()
    except KvswitchError as exc:
        return {"gateway_problem": str(exc)}
    return {"gateway": _gateway_view(info)} if info is not None else {}


def switch_mode(mode: str) -> SwitchOutcome:
    """Flip every registered client to ``mode`` (all or nothing), then nudge the changed ones."""
    from kvswitch.clients import switch_clients
    from kvswitch.gateway import control
    from kvswitch.transaction import recover

    note = recover()
    changes = switch_clients(mode)  # type: ignore[arg-type]  # checked by the caller's menu
    nudges = _nudge(changes)
    told = _tell_gateway(lambda: control.tell_mode(mode))  # pinned clients take it at once
    return SwitchOutcome("mode", mode, tuple(changes), nudges, note, **told)


def switch_client(mode: str, path: Path) -> SwitchOutcome:
    """Flip the registered client at ``path`` alone to ``mode``; it keeps the mode as its own
    while that differs from every client's (kvswitch.toml's mode stays)."""
    from kvswitch.clients import switch_clients
    from kvswitch.transaction import recover

    note = recover()
    changes = switch_clients(mode, only=[str(path)])  # type: ignore[arg-type]  # the menu's modes
    return SwitchOutcome("client", mode, tuple(changes), _nudge(changes), note, path)


def follow_all(path: Path) -> SwitchOutcome:
    """Put the client at ``path`` back in every client's mode (kvswitch.toml's, read now),
    clearing its own mode."""
    from kvswitch.clients import switch_clients
    from kvswitch.config import read_config
    from kvswitch.transaction import recover

    note = recover()
    mode = read_config().model.mode
    changes = switch_clients(mode, only=[str(path)])
    return SwitchOutcome("follow", mode, tuple(changes), _nudge(changes), note, path)


def use_profile(name: str) -> SwitchOutcome:
    """Make ``name`` the active profile and render it into every client (all or nothing)."""
    from kvswitch.clients import apply_profile
    from kvswitch.gateway import control
    from kvswitch.transaction import recover

    note = recover()
    changes = apply_profile(name)
    nudges = _nudge(changes)
    told = _tell_gateway(control.reload)  # it serves the new profile's upstreams for new requests
    return SwitchOutcome("profile", name, tuple(changes), nudges, note, **told)


@dataclass(frozen=True)
class RestoreOutcome:
    path: Path
    backup_id: str
    backup_of_current: Path | None


def restore_backup(path: Path, backup_id: str) -> RestoreOutcome:
    """Put backup ``backup_id`` of ``path`` back (the current version is backed up first)."""
    from kvswitch.clients import restore

    chosen, result = restore(path, backup_id)
    return RestoreOutcome(path, chosen.id, result.backup)


# -- detecting clients -------------------------------------------------------------------


@dataclass(frozen=True)
class Detected:
    """The real clients looked for on this machine (found or not), in the library's order."""

    clients: tuple[Installed, ...]

    @property
    def found(self) -> tuple[Installed, ...]:
        return tuple(c for c in self.clients if c.found)

    @property
    def candidates(self) -> tuple[Installed, ...]:
        """Found and not registered yet."""
        return tuple(c for c in self.clients if c.found and not c.registered)


def detect() -> Detected:
    """``kvswitch client detect``: every real client's file, program and version, and
    which are registered (an unreadable kvswitch.toml is an error, as on the command line)."""
    from kvswitch.config import existing_config
    from kvswitch.installed import detect_clients

    return Detected(tuple(detect_clients(existing_config())))


def register(chosen: tuple[Installed, ...] | list[Installed]) -> list[str]:
    """Register ``chosen`` (``kvswitch client detect --register`` for those alone); the names
    registered. The clients' files are not touched."""
    from kvswitch.installed import register_found

    return register_found(list(chosen))


def first_run_offer() -> Detected | None:
    """What the tray's first start offers to register: the clients detected when none is
    registered (or there is no kvswitch.toml yet) and at least one is found, once per
    kvswitch home (remembered in its state directory); ``None`` when there is nothing to offer."""
    import time

    from kvswitch import paths
    from kvswitch.config import existing_config
    from kvswitch.io import read_optional, write_private

    marker = paths.dirs().state / DETECT_OFFERED
    if read_optional(marker) is not None:
        return None
    config = existing_config()
    if config is not None and config.model.clients:
        return None
    found = detect()
    if not found.candidates:
        return None
    write_private(marker, f"offered {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n".encode())
    return found


# -- a profile from a client's settings -----------------------------------------------------


@dataclass(frozen=True)
class ProfileMade:
    """A profile made from a client's settings (``kvswitch import CLIENT``), as the GUI tells
    it: no key in it, only whether one was stored."""

    name: str
    product: str
    base_url: str
    model: str
    activated: bool
    """It became the active profile (there was none)."""
    key_stored: bool
    """The key the client's file holds is now in the OS keyring."""
    key_left: bool
    """The client's file holds a key that was not stored (the profile sends none)."""
    key_ref: str
    notes: tuple[str, ...] = ()


def _free_name(base: str, taken: Collection[str]) -> str:
    """``base``, else ``base-2``, ``base-3``… : the first name no profile has."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def import_client(kind: str, store_key: bool) -> ProfileMade:
    """A profile from the settings of the client ``kind`` (a kind id, its file at the default
    path, as Detect lists it) saved in kvswitch.toml (``kvswitch import KIND [--key]``): named
    after the kind (``kind-2``… when taken), active when there was none. The client's file is
    only read; refusals (``ImportRefusedError``) write nothing."""
    from kvswitch.config import existing_config
    from kvswitch.importing import from_client, save_imports
    from kvswitch.kinds import get_kind

    config = existing_config()
    taken = config.model.profiles if config is not None else ()
    imp = from_client(kind, config=config, name=_free_name(kind, taken))
    saved = save_imports([imp], store_keys=store_key)
    made = saved.profiles[0]
    return ProfileMade(
        made.name,
        get_kind(kind).product,
        str(made.profile.base_url),
        made.profile.model,
        saved.activated == made.name,
        made.name in saved.keys_stored,
        imp.profile.key == "keyring" and made.name not in saved.keys_stored,
        made.profile.key,
        imp.notes,
    )


# -- the watcher -----------------------------------------------------------------------


def start_watcher(on_event: Callable[[WatchEvent], None], closing: threading.Event | None = None) -> Watcher | None:
    """A started watcher (policy adopt); raises ``WatcherBusyError`` when another one runs.
    ``None`` when ``closing`` was set meanwhile (the watcher is stopped again at once)."""
    from kvswitch.watch import Watcher

    watcher = Watcher(on_event, policy="adopt")
    watcher.start()
    if closing is not None and closing.is_set():
        watcher.stop()
        return None
    return watcher


def stop_watcher(watcher: Watcher) -> None:
    watcher.stop()


# -- the settings form -------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileForm:
    """A profile as the settings dialog edits it."""

    config: Config
    name: str
    values: dict[str, Any]
    mode: str
    base_url: str
    model: str


def load_form(name: str | None = None) -> ProfileForm:
    from kvswitch.config import read_config
    from kvswitch.profile_check import profile_values

    config = read_config()
    name, profile = config.profile(name)
    return ProfileForm(config, name, profile_values(config, name), config.model.mode, profile.base_url, profile.model)


def check_form(config: Config, name: str, values: Mapping[str, Any]) -> ProfileCheck:
    from kvswitch.profile_check import check_profile

    return check_profile(config, name, values)


def save_form(config: Config, name: str, values: Mapping[str, Any]) -> Config:
    """Save the form into kvswitch.toml (atomic; refused on error findings). The config the
    form was loaded from is where the edit starts; a file changed meanwhile is re-read and
    the edit re-applied (never clobbered)."""
    from kvswitch.profile_check import save_profile

    return save_profile(name, values, config)


# -- keys --------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyInfo:
    """A profile's key as the key dialog shows it: its reference and the stored key, masked."""

    profile: str
    reference: str
    masked: str | None
    problem: str | None = None


def key_info(name: str | None = None) -> KeyInfo:
    from kvswitch.config import read_config
    from kvswitch.errors import KvswitchError
    from kvswitch.keys import get_key
    from kvswitch.redact import mask

    name, profile = read_config().profile(name)
    if profile.key != "keyring":
        value = os.environ.get(profile.key.removeprefix("env:")) if profile.key.startswith("env:") else None
        return KeyInfo(name, profile.key, mask(value) if value else None)
    try:
        key = get_key(name)
    except KvswitchError as exc:
        return KeyInfo(name, profile.key, None, str(exc))
    return KeyInfo(name, profile.key, mask(key) if key else None)


def store_key(name: str, key: str) -> str:
    """Store ``key`` for profile ``name`` in the OS keyring; returns its mask."""
    from kvswitch.keys import set_key
    from kvswitch.redact import mask

    set_key(name, key)
    return mask(key)
