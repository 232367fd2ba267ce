"""``kvswitch init``: kvswitch's config, and client files where missing (each kind's skeleton).

Existing client files are registered, never overwritten. The key, when given, goes to the
OS keyring first; client files get it only where D-7 allows (and are then made 0600).
:func:`keyring_problem` tells beforehand whether the keyring can take it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.errors import ConfigError, Location
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.literals import CacheMode
    from kvswitch.models import ClientEntry, Profile

__all__ = ["InitResult", "Preset", "init", "keyring_problem", "preset_title", "presets"]


@dataclass(frozen=True, slots=True)
class Preset:
    """A provider preset (D-11): where it is and how clients join paths to it."""

    name: str
    title: str
    base_url: str
    url_convention: str


@cache
def presets() -> dict[str, Preset]:
    """The presets shipped in ``kvswitch/presets.toml``."""
    text = (Path(__file__).parent / "presets.toml").read_text(encoding="utf-8")
    return {name: Preset(name, **table) for name, table in tomllib.loads(text).items()}


def preset_title(name: str) -> str:
    """What the preset ``name`` is, in the user's language (its title in presets.toml otherwise)."""
    titles = {
        "taotoken": tr("TaoToken, a hosted OpenAI-compatible gateway"),
        "vllm": tr("vLLM on this machine"),
        "sglang": tr("SGLang on this machine"),
        "llamacpp": tr("llama.cpp server on this machine"),
        "ollama": tr("Ollama on this machine"),
        "lmstudio": tr("LM Studio on this machine"),
        "lab": tr("the kvswitch lab (kvswitch lab up): real llama.cpp servers, merged and split"),
    }
    return titles.get(name) or presets()[name].title


def keyring_problem(profile_name: str) -> str | None:
    """Why the OS keyring cannot hold ``profile_name``'s key here (None: it can). Only reads:
    a locked keyring may ask to be unlocked, which storing the key would ask anyway."""
    from kvswitch.keys import SecretStoreError, get_key

    try:
        get_key(profile_name)
    except SecretStoreError as exc:
        return exc.message
    return None


@dataclass(frozen=True)
class InitResult:
    """What ``init`` did."""

    config: Path
    config_written: bool
    created: list[Path] = field(default_factory=list)
    registered: list[Path] = field(default_factory=list)
    key_stored: bool = False
    key_written: list[Path] = field(default_factory=list)
    key_reference: str = "keyring"
    no_keyring: str | None = None  # why the profile sends no key: there is no usable OS keyring


def init(
    profile_name: str,
    profile: Profile,
    clients: list[ClientEntry],
    *,
    key: str | None = None,
    mode: CacheMode = "merged",
) -> InitResult:
    """Write kvswitch's config (or add to an existing one), create missing client files from
    the article's skeletons, register existing ones, and store ``key`` in the keyring.

    Client paths are stored absolute; a file registered already under another spelling (a
    symlink, ``..``) is not registered again. Without a key and without a usable OS keyring
    the profile's key reference is ``none`` (it sends no key), so later commands work."""
    from kvswitch.clients import add_client, key_allowed, registered
    from kvswitch.config import (
        client_path,
        config_file,
        edit_config,
        new_config_text,
        profile_table,
        read_config,
    )
    from kvswitch.edits import Set
    from kvswitch.io import atomic_write, read_optional, write_private
    from kvswitch.keys import SecretStoreError, check_key, get_key, set_key
    from kvswitch.kinds import get_kind
    from kvswitch.profile_input import check_profile_input
    from kvswitch.render import render_input
    from kvswitch.state import record_writes

    profile = check_profile_input(profile_name, profile, clients)  # one validation for every entry point
    clients = _distinct_clients(clients)
    no_keyring = None
    if key is not None:
        check_key(key)
        if profile.key != "keyring":
            raise ConfigError(
                tr("profile {name} reads its key from {source}; do not pass one").format(
                    name=repr(profile_name), source=profile.key
                )
            )
        set_key(profile_name, key)
    elif profile.key == "keyring":
        try:
            get_key(profile_name)
        except SecretStoreError as exc:  # "keyring" would make profile use, rename and probe fail
            no_keyring = exc.message
            profile = profile.model_copy(update={"key": "none"})
    path = config_file()
    existing = read_optional(path)
    written = False
    reference = profile.key
    if existing is None:
        write_private(path, new_config_text(profile_name, profile, clients, mode).encode("utf-8"))
        written = True
    else:
        config = read_config(path)
        edits: list[Any] = []
        if profile_name not in config.model.profiles:
            edits.append(Set(("profiles", profile_name), profile_table(profile)))
        if config.model.active_profile is None:
            edits.append(Set(("active_profile",), profile_name))
        if edits:
            config = edit_config(edits, config)
            written = True
        for entry in clients:
            if registered(config, client_path(entry)) is None:  # by real path, not by spelling
                config = add_client(entry, config)
                written = True
        mode = config.model.mode
        reference = config.model.profiles[profile_name].key  # an existing profile keeps its own
        no_keyring = no_keyring if reference == "none" else None
    created, existing_files, with_key = [], [], []
    for entry in clients:
        file = client_path(entry)
        if file.exists():
            existing_files.append(file)
            continue
        put_key = key if key is not None and key_allowed(entry, file) else None
        text = get_kind(entry.kind).skeleton(render_input(profile, mode, name=profile_name, key=put_key))
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(file, text.encode("utf-8"), expected=b"", mode=0o600 if put_key else None)
        created.append(file)
        if put_key:
            with_key.append(file)
    record_writes(created)
    if not path.exists():  # pragma: no cover - write_private raised already
        raise ConfigError(tr("kvswitch config was not written"), Location(path))
    return InitResult(path, written, created, existing_files, key is not None, with_key, reference, no_keyring)


def _distinct_clients(clients: list[ClientEntry]) -> list[ClientEntry]:
    """``clients`` with absolute paths (``..`` resolved); two that are one file are refused."""
    import os

    from kvswitch.config import client_path

    out: list[ClientEntry] = []
    seen: dict[str, str] = {}
    for entry in clients:
        path = os.path.abspath(client_path(entry))
        real = os.path.realpath(path)
        if real in seen:
            raise ConfigError(
                tr("{first} and {second} are the same file; give each client its own file").format(
                    first=seen[real], second=path
                ),
                Location(Path(path)),
            )
        seen[real] = path
        out.append(entry.model_copy(update={"path": path}))
    return out
