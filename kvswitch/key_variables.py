"""The variables registered clients read the active profile's key from, and where each stands.

Some clients take their key from an environment variable their file names (Codex's
``env_key``, OpenCode's ``{env:VAR}``), not from the file. For a profile whose key is
``env:NAME`` that variable is NAME; for a keyring profile kvswitch names one,
``KVSWITCH_KEY_<PROFILE>`` (:func:`kvswitch.kinds.real.key_variable`), which the user exports.
:func:`key_variables` says, per variable, whether the current environment has it, and with
which key (masked); ``kvswitch status`` and ``kvswitch doctor`` render it. Pure data: nothing
here prints, and no key leaves unmasked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from kvswitch.i18n import ntr, tr
from kvswitch.records import record

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.models import ClientEntry, Profile

__all__ = ["KeyVariable", "VariableState", "key_variables", "reads_key_variable"]

VariableState = Literal["ok", "unset", "differs", "no-key"]
"""``ok``: set to the profile's key; ``unset``: not in the environment; ``differs``: set, but
not to the keyring's key; ``no-key``: unset, and the keyring holds no key to export."""

_PROBE = "KVSWITCH_KEY_VARIABLE_PROBE_7F3A"
"""A variable name no client file holds: whether a rendering names it tells whether the
client reads its key from a variable."""


@record
class KeyVariable:
    """One variable registered clients read the active profile's key from."""

    name: str
    profile: str
    reference: str  # the profile's key reference: keyring or env:NAME
    clients: tuple[str, ...]  # how messages call the clients that read it
    state: VariableState
    value: str | None = None  # the variable's value, masked
    key: str | None = None  # the keyring's key, masked (keyring profiles)
    token: bool = False  # the gateway's local token, read by clients pinned to the gateway

    @property
    def export(self) -> str | None:
        """The line that sets the variable, the key masked (``None`` when there is no key)."""
        return f"export {self.name}={self.key}" if self.key else None

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def as_dict(self) -> dict[str, object]:
        saw, fix = self.describe()
        return {
            "name": self.name,
            "profile": self.profile,
            "reference": self.reference,
            "clients": list(self.clients),
            "state": self.state,
            "value": self.value,
            "key": self.key,
            "export": self.export,
            "token": self.token,
            "saw": saw,
            "fix": fix,
        }

    def describe(self) -> tuple[str, str]:
        """(what is the case, what to do) in words; keys masked; ``""`` when nothing to do."""
        from kvswitch.validate import shell_word, show_name

        if self.token:
            return self._describe_token()
        n, who, name = len(self.clients), _and(self.clients), self.name
        profile = show_name(self.profile)
        reads = ntr(
            "{clients} reads profile {profile}'s key from it", "{clients} read profile {profile}'s key from it", n
        ).format(clients=who, profile=profile)
        shell = ntr("in the shell {clients} starts from", "in the shell {clients} start from", n).format(clients=who)
        whole = f'export {name}="$(kvswitch key get {shell_word(self.profile)} --reveal)"'
        if self.reference.startswith("env:"):
            if self.state == "ok":
                return tr("{name} is set ({value}): {reads}").format(name=name, value=self.value, reads=reads), ""
            return (
                tr("{name} is not set in this environment: {reads}").format(name=name, reads=reads),
                tr("export {name}=YOUR_KEY {shell}").format(name=name, shell=shell),
            )
        if self.state == "ok":
            if self.key:
                saw = ntr(
                    "{name} is set to profile {profile}'s key ({value}): {clients} reads the key from it",
                    "{name} is set to profile {profile}'s key ({value}): {clients} read the key from it",
                    n,
                )
            else:
                saw = ntr(
                    "{name} is set ({value}): {clients} reads the key from it",
                    "{name} is set ({value}): {clients} read the key from it",
                    n,
                )
            return saw.format(name=name, profile=profile, value=self.value, clients=who), ""
        if self.state == "no-key":
            saw = ntr(
                "{name} is not set, and no key is stored for profile {profile}: {clients} reads the key from "
                "that variable",
                "{name} is not set, and no key is stored for profile {profile}: {clients} read the key from "
                "that variable",
                n,
            )
            return (
                saw.format(name=name, profile=profile, clients=who),
                tr("kvswitch key set {profile}, then {command}").format(
                    profile=shell_word(self.profile), command=whole
                ),
            )
        if self.state == "unset":
            return (
                tr("{name} is not set in this environment: {reads}").format(name=name, reads=reads),
                tr("{export} (the key stored for profile {profile}): {command} {shell}").format(
                    export=self.export, profile=profile, command=whole, shell=shell
                ),
            )
        saw = ntr(
            "{name} holds {value}, not the key stored for profile {profile} ({key}): {clients} sends that one",
            "{name} holds {value}, not the key stored for profile {profile} ({key}): {clients} send that one",
            n,
        )
        return (
            saw.format(name=name, value=self.value, profile=profile, key=self.key, clients=who),
            f"{self.export}: {whole}",
        )

    def _describe_token(self) -> tuple[str, str]:
        n, who, name = len(self.clients), _and(self.clients), self.name
        reads = ntr(
            "{clients}, pinned to the gateway, reads the gateway's token from it",
            "{clients}, pinned to the gateway, read the gateway's token from it",
            n,
        ).format(clients=who)
        shell = ntr("in the shell {clients} starts from", "in the shell {clients} start from", n).format(clients=who)
        if self.reference.startswith("env:"):
            if self.state == "ok":
                return tr("{name} is set ({value}): {reads}").format(name=name, value=self.value, reads=reads), ""
            return (
                tr("{name} is not set in this environment: {reads} (and the gateway does too)").format(
                    name=name, reads=reads
                ),
                tr("export {name}=A_LONG_RANDOM_VALUE {shell} and where the gateway starts").format(
                    name=name, shell=shell
                ),
            )
        if self.state == "ok":
            return tr("{name} is set to the gateway's token ({value}): {reads}").format(
                name=name, value=self.value, reads=reads
            ), ""
        if self.state == "no-key":
            return (
                tr("{name} is not set, and the gateway has no token yet: {reads}").format(name=name, reads=reads),
                tr("kvswitch gateway pin makes one"),
            )
        if self.state == "unset":
            return (
                tr("{name} is not set in this environment: {reads}").format(name=name, reads=reads),
                tr("{export} (the gateway's token) {shell}").format(export=self.export, shell=shell),
            )
        saw = ntr(
            "{name} holds {value}, not the gateway's token ({key}): {clients} sends that one, which the "
            "gateway refuses",
            "{name} holds {value}, not the gateway's token ({key}): {clients} send that one, which the gateway refuses",
            n,
        )
        return (saw.format(name=name, value=self.value, key=self.key, clients=who), f"{self.export} {shell}")


def _and(items: tuple[str, ...]) -> str:
    if len(items) == 1:
        return items[0]
    return tr("{clients} and {last}").format(clients=", ".join(items[:-1]), last=items[-1])


def reads_key_variable(entry: ClientEntry, profile_name: str, profile: Profile) -> bool:
    """Whether the client of ``entry`` reads the profile's key from a variable: its kind's
    rendering of the profile (the key written only where kvswitch writes it for this entry)
    names the variable. Any registered kind answers, with no list of kinds here."""
    from kvswitch.config import client_path
    from kvswitch.kinds import RenderInput, get_kind
    from kvswitch.kinds.base import mode_defaults

    kind = get_kind(entry.kind)
    if not kind.real:
        return False
    from kvswitch.clients import key_allowed

    key = "sk-" + "0" * 20 if key_allowed(entry, client_path(entry)) else None
    r = RenderInput(profile_name, profile, "merged", mode_defaults(profile), key, _PROBE)
    try:
        return _PROBE in kind.skeleton(r)
    except (ValueError, TypeError, NotImplementedError):
        return False


def key_variables(config: Config, env: Mapping[str, str] | None = None) -> list[KeyVariable]:
    """Where each variable the registered clients read the active profile's key (or, pinned to
    the gateway, its token) from stands in ``env`` (default: this process's environment).
    Empty without an active profile. Reading the keyring may raise
    :class:`kvswitch.keys.SecretStoreError`."""
    from kvswitch.keys import get_key
    from kvswitch.kinds.real import key_variable

    env = os.environ if env is None else env
    if config.model.active_profile is None:
        return []
    name, profile = config.profile()
    out = []
    variable = key_variable(name, profile.key)
    if variable is not None:
        clients = _client_names(config, lambda e: e.route != "gateway" and reads_key_variable(e, name, profile))
        if clients:
            out.append(_state(variable, name, profile.key, clients, env.get(variable) or None, lambda: get_key(name)))
    token = _token_variable(config, env)
    return [*out, *([token] if token is not None else [])]


def _client_names(config: Config, reads: Callable[[ClientEntry], bool]) -> tuple[str, ...]:
    """How messages call the registered clients ``reads`` picks, each once."""
    from kvswitch.kinds import get_kind

    return tuple(dict.fromkeys(e.name or get_kind(e.kind).product for e in config.model.clients if reads(e)))


def _token_variable(config: Config, env: Mapping[str, str]) -> KeyVariable | None:
    """The variable clients pinned to the gateway read its token from, where one does."""
    from kvswitch.gateway.pinning import reads_token_variable
    from kvswitch.gateway.token import load_token, token_variable

    clients = _client_names(config, lambda e: e.route == "gateway" and reads_token_variable(config, e))
    if not clients:
        return None
    name = token_variable(config)
    return _state(
        name, "", config.model.gateway.token, clients, env.get(name) or None, lambda: load_token(config), token=True
    )


def _state(
    variable: str,
    profile: str,
    reference: str,
    clients: tuple[str, ...],
    value: str | None,
    stored: Callable[[], str | None],
    token: bool = False,
) -> KeyVariable:
    """Where ``variable`` stands against the key ``reference`` names (``stored`` reads it from
    the keyring, asked only where there is one to compare with)."""
    from kvswitch.redact import mask

    shown = mask(value) if value else None
    if reference.startswith("env:"):  # the variable is where the key lives: nothing to compare
        return KeyVariable(variable, profile, reference, clients, "ok" if value else "unset", shown, token=token)
    key = stored()
    if not value:
        return KeyVariable(
            variable, profile, reference, clients, "unset" if key else "no-key", None, mask(key) if key else None, token
        )
    if key is None:  # set; nothing to compare
        return KeyVariable(variable, profile, reference, clients, "ok", shown, token=token)
    state: VariableState = "ok" if value == key else "differs"
    return KeyVariable(variable, profile, reference, clients, state, shown, mask(key), token)
