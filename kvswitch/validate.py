"""One validation for every value that enters kvswitch: URLs, profile and client names, API
keys and profile values, whether they come from the command line, the library, the tray's
form or a config file.

The answers use the codes ``kvswitch lint`` uses for the same problem in a file (KVS202 for a
URL that is not a bare http(s) address, KVS101 for a chunk size off the 64 grid…). A value
lint would fix is given back fixed, with a note saying so; a value lint would call an error
raises :class:`InvalidValueError`. Every value echoed in a message goes through :func:`show`:
control and invisible characters escaped, long text cut, key-looking text masked.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from kvswitch.errors import KvswitchError, Location
from kvswitch.i18n import ntr, tr
from kvswitch.records import record
from kvswitch.urls import redact_url

__all__ = [
    "HEADERS_MAX",
    "NAME_MAX",
    "InvalidValueError",
    "Note",
    "check_name",
    "check_url",
    "clean_url",
    "credential_header",
    "header_problem",
    "invisible",
    "is_key_reference",
    "key_problem",
    "name_problem",
    "nearest_chunk_size",
    "profile_value",
    "query_problem",
    "redact_url",
    "shell_word",
    "show",
    "show_name",
    "text_problem",
    "url_problem",
]

NAME_MAX = 64
"""The longest profile or client name, in characters."""

_URL_CODES = {
    "base_url": "KVS202",
    "prefill_base_url": "KVS110",
    "decode_base_url": "KVS110",
    "url": "KVS202",  # merged.url, split.url
    "probe_url": "KVS202",  # config version 1's split.url
}
_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
_ENV_REF = re.compile(r"env:[A-Za-z_][A-Za-z0-9_]*")
_TEXT_MAX = 1000
_NOT_TEXT = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})  # controls, format, line breaks, lone surrogates


def nearest_chunk_size(value: int) -> int:
    """The nearest multiple of 64, ties up, never below 64 (D-12): 500 → 512, 96 → 128."""
    return max(64, (value + 32) // 64 * 64)


def query_problem() -> str:
    """What :func:`url_problem` says of a URL whose only fault is a query string or fragment
    (in the user's language: compare with it, never with a fixed text)."""
    return tr("it has a query string or fragment; write the bare address")


class InvalidValueError(KvswitchError):
    """A value given to kvswitch cannot be used; ``code`` is lint's code for the same problem."""

    def __init__(self, message: str, code: str = "KVS002", location: Location | None = None) -> None:
        super().__init__(message, location)
        self.code = code


@record(slots=True)
class Note:
    """A value was changed on its way in, as ``lint --fix`` would have changed it."""

    code: str
    message: str


# -- showing values safely -----------------------------------------------------------------


def _escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _unsafe(ch: str) -> bool:
    """Characters a terminal would act on or a reader could not see."""
    return ch != " " and unicodedata.category(ch) in {*_INVISIBLE, "Cs", "Co", "Cn"}


def _escaped(text: str, quoted: bool) -> str:
    out = []
    for ch in text:
        if quoted and ch in "\\'":
            out.append("\\" + ch)
        else:
            out.append(_escape(ch) if _unsafe(ch) else ch)
    return "".join(out)


def _masked(text: str) -> str:
    from kvswitch.redact import looks_like_key, mask, redact_likely

    return mask(text) if looks_like_key(text) else redact_likely(text)


def show(value: object, limit: int = 80) -> str:
    """``value`` for a message, quoted: control, invisible and unassigned characters escaped
    (``'a\\x1b[31m'``), text past ``limit`` characters cut (``… (5000 characters)``), and
    key-looking text masked (``sk-…abcd``). Other values are shown as ``repr`` shows them."""
    if isinstance(value, int | float | bool | None):
        return repr(value)
    quoted = isinstance(value, str)
    text = _masked(value if isinstance(value, str) else repr(value))
    cut = len(text) > limit
    body = _escaped(text[:limit], quoted) + ("…" if cut else "")
    if not cut:
        return f"'{body}'" if quoted else body
    count = ntr(" ({count} character)", " ({count} characters)", len(text)).format(count=len(text))
    return (f"'{body}'" if quoted else body) + count


def shell_word(text: str) -> str:
    """``text`` as one shell word: quoted, or ANSI-C quoted (``$'a\\x1b'``) when it holds
    characters a terminal would act on, so a hint can be pasted as it is shown."""
    import shlex

    if not any(_unsafe(ch) for ch in text):
        return shlex.quote(text)
    return "$'" + _escaped(text, True) + "'"


def show_name(name: str) -> str:
    """A profile or client name for output: as it is when it is a valid name, else :func:`show`."""
    return name if name_problem(name) is None else show(name, NAME_MAX)


# -- names ---------------------------------------------------------------------------------


def _name_char(ch: str) -> bool:
    return ch in "._-" or unicodedata.category(ch)[0] in "LM" or unicodedata.category(ch) == "Nd"


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid profile or client name, or ``None``: 1–64 letters (any
    script), digits and ``._-``, starting with a letter or digit."""
    if not name:
        return tr("it is empty")
    if len(name) > NAME_MAX:
        return tr("it has {count} characters (at most {limit})").format(count=len(name), limit=NAME_MAX)
    first = unicodedata.category(name[0])
    if not (first[0] == "L" or first == "Nd"):
        return tr("it must start with a letter or digit")
    bad = next((ch for ch in name if not _name_char(ch)), None)
    if bad == " ":
        return tr("it contains a space; use letters, digits, '.', '_' and '-'")
    if bad is not None:
        return tr("it contains the character {char}; use letters, digits, '.', '_' and '-'").format(char=show(bad))
    return None


def check_name(name: str, what: str = "profile") -> str:
    """``name`` when it is a valid ``what`` (``"profile"`` or ``"client"``) name, else
    :class:`InvalidValueError`."""
    problem = name_problem(name)
    if problem is None:
        return name
    shown = show(name, NAME_MAX)
    if what == "client":
        message = tr("client name {name} is not allowed: {problem}")
    elif what == "profile":
        message = tr("profile name {name} is not allowed: {problem}")
    else:
        message = tr("{what} name {name} is not allowed: {problem}")
    raise InvalidValueError(message.format(what=what, name=shown, problem=problem))


# -- URLs ----------------------------------------------------------------------------------


def invisible(text: str) -> str | None:
    """The first whitespace, control or format character in ``text`` (U+200B, U+FEFF…), named."""
    for ch in text:
        if unicodedata.category(ch) in _INVISIBLE:
            name = unicodedata.name(ch, "").lower() or tr("control character")
            return f"U+{ord(ch):04X} ({name})"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` is not a bare http(s) address, or ``None``. A trailing ``/`` is no problem
    here (lint fixes it, :func:`clean_url` strips it)."""
    hidden = invisible(url)
    if hidden is not None:
        return tr("it contains {char}").format(char=hidden)
    if not url.isascii():
        return tr("it contains a non-ASCII character (write the host in its xn-- form)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        if "port" in str(exc).lower():
            return tr("its port is not a number from 1 to 65535")
        return tr("it does not parse ({error})").format(error=exc)
    if parts.scheme not in ("http", "https"):
        if not parts.scheme:
            return tr("only http:// and https:// addresses are allowed (it has no scheme)")
        return tr("only http:// and https:// addresses are allowed (scheme: {scheme})").format(
            scheme=f"'{parts.scheme}:'"
        )
    if not parts.hostname:
        return tr("it has no host")
    if "@" in parts.netloc:
        return tr("it holds a user name or password; keep the key in the keyring (kvswitch key set)")
    if port is not None and not 1 <= port <= 65535:
        return tr("its port is not a number from 1 to 65535")
    if parts.netloc.endswith(":"):
        return tr("its port is empty")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return query_problem()
    return None


def check_url(url: str, label: str | None = None, code: str = "KVS202") -> str:
    """``url`` when it is a bare http(s) address (a trailing ``/`` allowed), else
    :class:`InvalidValueError` with ``code``. ``label`` names the value in the message
    (default: "base URL", in the user's language)."""
    problem = url_problem(url)
    if problem is not None:
        label = tr("base URL") if label is None else label
        shown = show(redact_url(url))
        if problem == query_problem():
            message = tr("{label} {url} has a query string or fragment; write the bare address")
        else:
            message = tr("{label} {url} is not an http(s) URL: {problem}")
        raise InvalidValueError(message.format(label=label, url=shown, problem=problem), code)
    return url


def clean_url(url: str, label: str | None = None, code: str = "KVS202") -> tuple[str, Note | None]:
    """``url`` checked (:func:`check_url`) and without its trailing ``/`` (KVS201), with a
    note when one was taken off."""
    url = check_url(url.strip(), label, code)
    bare = url.rstrip("/")
    if bare != url and urlsplit(bare).hostname:
        label = tr("base URL") if label is None else label
        message = tr("{label} ends with '/'; stored without it: {url}").format(label=label, url=show(bare))
        return bare, Note("KVS201", message)
    return url, None


# -- keys and text -------------------------------------------------------------------------


def is_key_reference(value: str) -> bool:
    """Whether ``value`` is what kvswitch's config may hold as a profile's key: a reference
    (``keyring``, ``env:NAME``, or ``none``: the profile sends no key), never a key."""
    return value in ("keyring", "none") or _ENV_REF.fullmatch(value) is not None


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot be an API key (it would break the request header), or ``None``. The
    answer never contains the key."""
    if not key:
        return tr("the key is empty")
    if key != key.strip() or any(c in key for c in "\r\n"):
        return tr("the key has leading/trailing whitespace or a line break (KVS210); paste it again")
    hidden = invisible(key)
    if hidden is not None:
        return tr("the key contains {char}, an invisible or whitespace character (KVS210); paste it again").format(
            char=hidden
        )
    if not key.isascii():
        return tr("the key contains a non-ASCII character; API keys are ASCII, so it was changed in copying (KVS210)")
    return None


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
_CREDENTIAL_HEADER = re.compile(
    r"authorization|cookie|(api|access|auth|secret|session)[-_]?(key|token)|"
    r"token|secret|password|(^|[-_])key$",
    re.I,
)
HEADERS_MAX = 32


def credential_header(name: str) -> bool:
    """Whether a header named ``name`` carries a credential (``Authorization``,
    ``X-Api-Key``, ``X-Auth-Token``…): its value is a key, never stored in plain text."""
    return _CREDENTIAL_HEADER.search(name) is not None


def header_problem(name: str, value: str) -> str | None:
    """Why an extra header cannot be kept in a profile, or ``None``."""
    from kvswitch.kinds.base import MODE_HEADER

    if not _HEADER_NAME.fullmatch(name):
        return tr("header name {name} is not a valid HTTP header name").format(name=show(name))
    if name.lower() == MODE_HEADER.lower():
        return tr("header {name}: kvswitch sets it per mode (mode_header)").format(name=name)
    if credential_header(name):
        return tr(
            "header {name} carries a credential; kvswitch keeps keys in the keyring, "
            "never in its config (kvswitch key set PROFILE)"
        ).format(name=name)
    if any(unicodedata.category(ch) in _NOT_TEXT for ch in value) or len(value) > _TEXT_MAX:
        return tr("header {name}: its value has a line break or control character, or is too long").format(name=name)
    from kvswitch.redact import looks_like_key

    if looks_like_key(value) or any(looks_like_key(w) for w in re.split(r"[\s=:,;&'\"]+", value)):
        # kvswitch's config never holds a key in plain text (D-7); the value is never echoed
        return tr(
            "header {name}: its value looks like an API key; kvswitch keeps keys in the "
            "keyring, never in its config (kvswitch key set PROFILE)"
        ).format(name=name)
    return None


def text_problem(value: str) -> str | None:
    """Why a plain text value (a model id, a provider name) cannot be stored, or ``None``."""
    bad = next((ch for ch in value if unicodedata.category(ch) in _NOT_TEXT), None)
    if bad is not None:
        return tr("it contains a control or invisible character ({char})").format(char=show(bad))
    if len(value) > _TEXT_MAX:
        return tr("it has {count} characters (at most {limit})").format(count=len(value), limit=_TEXT_MAX)
    return None


# -- profile values --------------------------------------------------------------------------


def profile_value(path: Sequence[str], value: Any) -> tuple[Any, Note | None]:
    """A value for the key ``path`` inside a profile (``("merged", "chunk_size")``), checked
    and normalised as lint would fix it; :class:`InvalidValueError` when lint would call it an
    error. The whole profile is checked again by lint when it is written."""
    field = ".".join(path)
    last = path[-1]
    if isinstance(value, str) and last in _URL_CODES:
        return clean_url(value, field, _URL_CODES[last])
    if isinstance(value, str):
        if last == "key":
            if not is_key_reference(value):
                raise InvalidValueError(
                    tr(
                        "{field}: a key reference is 'keyring', 'env:NAME' or 'none', never the key "
                        "itself; store the key with: kvswitch key set PROFILE"
                    ).format(field=field),
                    "KVS213",
                )
            return value, None
        problem = text_problem(value)
        if problem is None and not value.strip() and last == "model":
            problem = tr("it is empty")
        if problem is not None:
            raise InvalidValueError(
                tr("{field} {value} is not usable: {problem}").format(field=field, value=show(value), problem=problem)
            )
        return value, None
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidValueError(tr("{field}: {value} is not a finite number").format(field=field, value=repr(value)))
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) >= 2**63:
            raise InvalidValueError(tr("{field}: {value} is out of range").format(field=field, value=value))
        if last == "chunk_size" and value >= 1 and value % 64:
            new = nearest_chunk_size(value)
            return new, Note(
                "KVS101",
                tr("chunk_size {value} is not a multiple of 64; it becomes {new}").format(value=value, new=new),
            )
        if last == "max_transfer_concurrency" and value < 1:
            raise InvalidValueError(
                tr("{field}: {value} must be at least 1").format(field=field, value=value), "KVS112"
            )
    return value, None
