"""What doctor checks: its settings, and the target built from a profile or a ``--base-url``:
the server, the model, the mode, the key and the only origins that may receive it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kvswitch.doctor.checks import Check
from kvswitch.i18n import tr
from kvswitch.key_scope import KeyScope
from kvswitch.urls import Origin, origin, redact_url

if TYPE_CHECKING:
    from kvswitch.config import Config

__all__ = ["DoctorSettings", "Target", "clean_key", "key_has_whitespace", "target_from_settings"]


@dataclass(frozen=True)
class DoctorSettings:
    """What to check. ``base_url`` (with ``model`` and maybe ``api_key_env``) checks that
    address instead of a profile; ``mode`` overrides the configured mode."""

    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    mode: Literal["merged", "split"] | None = None
    smi: str = "nvidia-smi"
    prefill_prefix: Sequence[str] = ()
    decode_prefix: Sequence[str] = ()
    timeout: float = 4.0
    prefix_samples: int = 3
    prefix_prompt_words: int = 400
    gpu_seconds: float = 2.0
    skip: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Target:
    """The server doctor talks to, and the only addresses that may receive the key."""

    label: str
    profile: str | None
    base_url: str
    model: str
    mode: str
    url_convention: str | None = None
    prefill: str | None = None
    decode: str | None = None
    split_url: str | None = None  # where a split request goes (the profile's split URL)
    split_header: bool = True  # a split request says X-Cache-Mode: split (one URL for both modes)
    prefix_cache: bool | None = None
    key: str | None = field(default=None, repr=False)
    key_note: str | None = None  # why there is no key (not set, keyring error…)
    key_ref: str | None = None  # where the key comes from: keyring, env:NAME
    allowed: frozenset[Origin] = frozenset()

    def as_dict(self) -> dict[str, Any]:
        from kvswitch.redact import mask

        return {
            "label": self.label,
            "profile": self.profile,
            "base_url": redact_url(self.base_url),
            "model": self.model,
            "mode": self.mode,
            "url_convention": self.url_convention,
            "prefill": redact_url(self.prefill) if self.prefill else None,
            "decode": redact_url(self.decode) if self.decode else None,
            "key": mask(self.key) if self.key else None,
        }


def key_has_whitespace(key: str | None) -> bool:
    """Whether the resolved key has whitespace or a line break anywhere (S-24)."""
    return key is not None and any(c.isspace() for c in key)


def clean_key(key: str) -> str:
    """``key`` without any whitespace (to retry with it, and to mask both forms)."""
    return re.sub(r"\s+", "", key)


def target_from_settings(s: DoctorSettings, config: Config | None) -> tuple[Target | None, Check | None]:
    """The target, or a check that says why there is none."""
    from kvswitch.errors import KvswitchError
    from kvswitch.validate import show_name

    key: str | None = None
    note: str | None = None
    if s.base_url:
        from kvswitch.keys import env_key

        try:
            key = env_key(s.api_key_env) if s.api_key_env else None
            if s.api_key_env and not key:
                note = tr("${name} is not set").format(name=s.api_key_env)
            elif not s.api_key_env:
                note = tr("--api-key-env not given, and a profile's key never goes to another address")
        except KvswitchError as exc:  # a key that would break the request header
            key, note = None, str(exc)
        base_origin = origin(s.base_url)
        return Target(
            label="--base-url",
            profile=None,
            base_url=s.base_url,
            model=s.model or "",
            mode=s.mode or "merged",
            prefill=s.base_url,
            decode=s.base_url,
            key=key or None,
            key_note=note,
            key_ref=f"env:{s.api_key_env}" if s.api_key_env else None,
            allowed=frozenset({base_origin}) if base_origin and key else frozenset(),
        ), None
    if config is None:
        return None, None
    try:
        name, profile = config.profile(s.profile)
    except KvswitchError as exc:
        return None, Check(
            "config", "fail", str(exc), tr("choose a profile: kvswitch profile list; kvswitch profile use NAME")
        )
    try:
        from kvswitch.keys import resolve_key

        key = resolve_key(name, profile.key)
        if key is None:
            if profile.key == "keyring":
                note = tr("no key stored for profile {profile} (kvswitch key set {name})").format(
                    profile=show_name(name), name=name
                )
            elif profile.key == "none":
                note = tr('profile {profile} sends no key (key = "none")').format(profile=show_name(name))
            else:
                note = tr("{variable} is not set (the profile's key is {reference})").format(
                    variable=profile.key.removeprefix("env:"), reference=profile.key
                )
    except KvswitchError as exc:
        note = str(exc)
    prefill = profile.split.prefill_base_url or profile.base_url
    decode = profile.split.decode_base_url or profile.base_url
    merged_url, split_url = profile.mode_url("merged"), profile.mode_url("split")
    urls = (profile.base_url, prefill, decode, merged_url, split_url)
    allowed = KeyScope.of(key, urls).origins
    return Target(
        label=tr("profile {name}").format(name=show_name(name)),
        profile=name,
        base_url=merged_url,
        model=profile.model,
        mode=s.mode or config.model.mode,
        url_convention=profile.url_convention,
        prefill=prefill,
        decode=decode,
        split_url=split_url,
        split_header=profile.mode_header and split_url == merged_url,
        prefix_cache=profile.cache.prefix_cache,
        key=key,
        key_note=note,
        key_ref=profile.key,
        allowed=allowed,
    ), None
