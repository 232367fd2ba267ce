"""API keys: kept in the OS keyring (service ``kvswitch``, one entry per profile) or read
from an environment variable (``env:NAME``). Never in kvswitch's own config, never printed
(only :func:`kvswitch.redact.mask` of them), never a silent plaintext fallback (D-7).

With ``KVSWITCH_HOME`` set the service is ``kvswitch@<hash of that path>``, so a sandbox
can never overwrite the user's real keys (D-12).
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from kvswitch import paths
from kvswitch.errors import KvswitchError
from kvswitch.i18n import N_, tr

__all__ = [
    "NO_BACKEND_HELP",
    "InvalidKeyError",
    "SecretStoreError",
    "check_key",
    "delete_key",
    "env_key",
    "get_key",
    "resolve_key",
    "service_name",
    "set_key",
]

NO_BACKEND_HELP = N_(
    "no OS keyring is available. Install and unlock one — GNOME Keyring "
    "(apt install gnome-keyring; it needs a D-Bus session, e.g. dbus-run-session) or KWallet — "
    "or keep the key in an environment variable and point the profile at it: "
    "kvswitch profile edit PROFILE --key env:NAME. kvswitch never falls back to storing keys in plain text."
)

_ENV_REF = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")


class SecretStoreError(KvswitchError):
    """The OS keyring cannot be used (none installed, locked, refused)."""


class InvalidKeyError(KvswitchError):
    """A key value is unusable (whitespace, line break, placeholder) or missing."""


def service_name() -> str:
    """``kvswitch``, or ``kvswitch@<8 hex>`` inside a ``KVSWITCH_HOME`` sandbox."""
    home = paths.home_override()
    if home is None:
        return "kvswitch"
    return f"kvswitch@{hashlib.sha256(str(home).encode()).hexdigest()[:8]}"


def check_key(key: str) -> None:
    """Refuse keys the article's troubleshooting warns about (S-24) and keys that would break
    a request header (any space, control or format character such as U+200B, or non-ASCII),
    never echoing them."""
    from kvswitch.rules import looks_like_placeholder
    from kvswitch.validate import key_problem

    if looks_like_placeholder(key):  # first: "sk-你的Key" is a placeholder before it is non-ASCII
        raise InvalidKeyError(tr("that is a placeholder, not a key (KVS211)"))
    problem = key_problem(key)
    if problem is not None:
        raise InvalidKeyError(problem)


def _backend() -> Any:
    try:
        import keyring
        from keyring.backends import fail
    except ImportError as exc:  # pragma: no cover - keyring is a dependency
        raise SecretStoreError(tr(NO_BACKEND_HELP)) from exc
    backend = keyring.get_keyring()
    chained = getattr(backend, "backends", None)
    if isinstance(backend, fail.Keyring) or (chained is not None and not chained):
        raise SecretStoreError(tr(NO_BACKEND_HELP))
    if _plaintext(backend) and not _chosen_explicitly():
        # keyring picked a plain-text file store by itself (keyrings.alt installed, no Secret
        # Service): that would be a silent plaintext fallback, which kvswitch never does
        raise SecretStoreError(tr(NO_BACKEND_HELP))
    return keyring


def _plaintext(backend: Any) -> bool:
    backends = getattr(backend, "backends", None) or [backend]
    return any(
        type(b).__module__.startswith("keyrings.alt") and "Encrypted" not in type(b).__name__ for b in backends[:1]
    )


def _chosen_explicitly() -> bool:
    """Whether the user named the backend (PYTHON_KEYRING_BACKEND or keyringrc.cfg)."""
    from keyring import core

    try:
        return core.load_env() is not None or core.load_config() is not None
    except Exception:  # noqa: BLE001 - a broken keyring config means "not chosen"
        return False


def _call(what: str, fn: Any, *args: str) -> Any:
    """``fn(*args)``, its keyring errors said as kvswitch's; ``what`` (translated) completes
    "cannot …"."""
    from keyring import errors

    try:
        return fn(*args)
    except errors.NoKeyringError as exc:
        raise SecretStoreError(tr(NO_BACKEND_HELP)) from exc
    except errors.KeyringLocked as exc:
        raise SecretStoreError(
            tr("cannot {what}: the keyring is locked; unlock it and try again").format(what=what)
        ) from exc
    except errors.InitError as exc:
        raise SecretStoreError(
            tr("cannot {what}: the keyring could not start ({error})").format(what=what, error=exc)
        ) from exc
    except errors.KeyringError as exc:
        raise SecretStoreError(
            tr("cannot {what}: the keyring refused ({error})").format(what=what, error=type(exc).__name__)
        ) from exc


def set_key(profile: str, key: str) -> None:
    """Store ``key`` for ``profile`` after :func:`check_key`."""
    check_key(key)
    keyring = _backend()
    _call(tr("store the key"), keyring.set_password, service_name(), profile, key)


def get_key(profile: str) -> str | None:
    """The stored key of ``profile``, or ``None``."""
    keyring = _backend()
    value = _call(tr("read the key"), keyring.get_password, service_name(), profile)
    return value if isinstance(value, str) else None


def delete_key(profile: str) -> bool:
    """Remove the stored key; False when there was none."""
    from keyring import errors

    keyring = _backend()
    try:
        _call(tr("delete the key"), keyring.delete_password, service_name(), profile)
    except SecretStoreError as exc:
        if isinstance(exc.__cause__, errors.PasswordDeleteError):
            return False
        raise
    except errors.PasswordDeleteError:
        return False
    return True


def resolve_key(profile: str, reference: str) -> str | None:
    """The key a profile's reference points at: ``keyring`` → the keyring entry,
    ``env:NAME`` → that variable, ``none`` → no key; ``None`` when it is not set. A value with a
    character no request header can carry (U+200B, U+FEFF, U+00A0, a control or non-ASCII
    character) is an :class:`InvalidKeyError`; plain spaces and line breaks are left to the
    caller to report (the doctor shows what they do)."""
    from kvswitch.validate import key_problem, show_name

    m = _ENV_REF.fullmatch(reference)
    if m:
        value, where = os.environ.get(m.group(1)), f"${m.group(1)}"
    elif reference == "none":  # the profile sends no key (e.g. set up without a keyring)
        return None
    elif reference == "keyring":
        value, where = get_key(profile), tr("the key stored for profile {name}").format(name=show_name(profile))
    else:
        raise InvalidKeyError(
            tr("profile {name}: key reference must be 'keyring', 'env:NAME' or 'none' (KVS213)").format(
                name=show_name(profile)
            )
        )
    if not value:
        return None
    # ASCII whitespace (a key pasted with a space or wrapped onto a new line) is left for the
    # doctor's live S-24 check to show; any other invisible or non-ASCII character could not be
    # sent in a header at all, so it is refused here, before any request
    problem = key_problem(re.sub(r"[ \t\r\n]+", "", value))
    if problem is not None:
        raise InvalidKeyError(tr("{where}: {problem}").format(where=where, problem=problem))
    return value


def env_key(name: str) -> str | None:
    """The key in the environment variable ``name`` (``--api-key-env``), checked like a stored
    one (:func:`resolve_key`); ``None`` when it is not set or empty."""
    if not _ENV_REF.fullmatch(f"env:{name}"):
        from kvswitch.validate import show

        raise InvalidKeyError(tr("{name} is not an environment variable name").format(name=show(name)))
    return resolve_key("", f"env:{name}")
