"""Where every registered client stands against the active profile and mode
(``kvswitch status``, the tray's menu). It reads files and imports nothing of a switch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.config import client_mode, client_path, read_config
from kvswitch.document import parse_config
from kvswitch.errors import KvswitchError
from kvswitch.records import field, record

if TYPE_CHECKING:
    from kvswitch.models import Profile

__all__ = ["NO_PROFILE", "ClientStatus", "Status", "status"]


@record
class ClientStatus:
    """One client as ``kvswitch status`` shows it; ``key`` is masked."""

    path: Path
    kind: str
    name: str | None
    exists: bool
    mode: str | None = None
    in_sync: bool = False
    drift: list[str] = field(default_factory=list)
    key: str | None = None
    last_write: float | None = None
    backups: int = 0
    problem: str | None = None
    target: str | None = None
    """The mode the client is to be in (its own, else the config's)."""
    own_mode: bool = False
    """The client has a mode of its own (switched alone)."""
    changed_outside: bool = False
    """The file differs from what kvswitch last wrote there (edited by hand or by its client)."""
    route: str = "direct"
    """``gateway``: pinned to the gateway (``in_sync``: the file holds the gateway's form;
    ``mode``: the running gateway's, else ``None``)."""
    gateway_running: bool | None = None
    """For a pinned client: whether a gateway answers now (``None`` for a direct one)."""


@record
class Status:
    """The active profile and mode, and every client."""

    config: Path
    profile: str | None
    mode: str
    clients: list[ClientStatus]

    @property
    def in_sync(self) -> bool:
        return all(c.in_sync for c in self.clients)


NO_PROFILE = "profile"
"""The drift a client shows while the config has no active profile to compare it with."""


def status() -> Status:
    """Where every registered client stands against the active profile and mode. Without an
    active profile (a config ``client detect --register`` wrote), each client's mode is what
    its file says by itself, and its drift is :data:`NO_PROFILE`."""
    from kvswitch.backups import list_backups
    from kvswitch.io import read_bytes
    from kvswitch.kinds import get_path, kind_of
    from kvswitch.redact import mask
    from kvswitch.render import drift, mode_defaults
    from kvswitch.state import changed_since_written, last_write

    config = read_config()
    name: str | None = None
    profile: Profile | None = None
    if config.model.active_profile is not None:
        name, profile = config.profile()
    out = []
    running: tuple[Any, ...] | None = None  # (the running gateway or None), asked once
    for entry in config.model.clients:
        path = client_path(entry)
        mode = client_mode(config, entry)
        common: dict[str, Any] = {
            "path": path,
            "kind": entry.kind,
            "name": entry.name,
            "last_write": last_write(path),
            "backups": len(list_backups(path)),
            "target": mode,
            "own_mode": entry.mode is not None,
        }
        if entry.route == "gateway":
            if running is None:
                running = (_running_gateway(),)
            common["route"] = "gateway"
            common["gateway_running"] = running[0] is not None
        try:
            raw = read_bytes(path)
            common["changed_outside"] = changed_since_written(path, raw)
            cf = parse_config(raw, entry.kind, path)
        except KvswitchError as exc:
            if not (path.exists() or path.is_symlink()):  # removed since kvswitch wrote it
                common["changed_outside"] = changed_since_written(path, None)
            out.append(ClientStatus(exists=path.exists(), problem=str(exc), **common))
            continue
        kind = kind_of(cf)
        file_mode = kind.file_mode(cf, mode_defaults(profile) if profile is not None else None)
        key_path = kind.fields(cf.data).get("provider.api_key")  # kvswitch's key, not another provider's
        key = get_path(cf.data, key_path) if key_path is not None else None
        want = profile
        if entry.route == "gateway" and profile is not None and name:
            from kvswitch.gateway.pinned_form import gateway_profile

            want = gateway_profile(config, name, profile)  # in sync: it holds the gateway's form
            file_mode = getattr(running[0], "mode", None) if running is not None else None
        fields = drift(cf, want, mode, name=name) if want is not None and name else [NO_PROFILE]
        out.append(
            ClientStatus(
                exists=True,
                mode=file_mode,
                in_sync=not fields,
                drift=fields,
                key=mask(key) if isinstance(key, str) and key else None,
                **common,
            )
        )
    return Status(config.path, name, config.model.mode, out)


def _running_gateway() -> Any:
    """The gateway that answers on this machine's control socket, or ``None`` (none, or one
    that cannot be asked: a status never fails for it)."""
    from kvswitch.gateway.control import running

    try:
        return running()
    except (KvswitchError, OSError, ValueError):
        return None
