"""Where a key may go: only to the origins (scheme, host, port) its profile names.

One rule for every part of kvswitch that sends requests (probe, doctor, later the gateway): a
profile's key goes to its base URL, each mode's URL (``merged.url``, ``split.url``) and its
split prefill and decode URLs, and to nothing else; a key given with ``--base-url`` and
``--api-key-env`` goes to that URL's origin only. Any other address, whoever gave it
(``--endpoint``, a URL found in a client file, a redirect), is sent no key, and the caller says so in its report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kvswitch.i18n import tr
from kvswitch.urls import Origin, origin, show_origin

__all__ = ["KeyScope", "Origin", "key_for", "origin", "show_origin"]  # origin, show_origin: from kvswitch.urls


def key_for(url: str, allowed: Iterable[Origin], key: str | None) -> str | None:
    """``key`` when ``url``'s origin is one of ``allowed``, else ``None``."""
    if key is None:
        return None
    o = origin(url)
    return key if o is not None and o in frozenset(allowed) else None


@dataclass(frozen=True)
class KeyScope:
    """A key and the origins it may be sent to."""

    key: str | None = field(default=None, repr=False)
    origins: frozenset[Origin] = frozenset()

    @classmethod
    def of(cls, key: str | None, urls: Iterable[str | None]) -> KeyScope:
        """The scope of ``key`` over the origins of ``urls`` (the addresses a profile names)."""
        return cls(key or None, frozenset(o for o in (origin(u) for u in urls) if o is not None))

    def allows(self, url: str) -> bool:
        """Whether a request to ``url`` may carry the key."""
        o = origin(url)
        return o is not None and o in self.origins

    def key_for(self, url: str) -> str | None:
        """The key for a request to ``url``, or ``None`` where it may not go."""
        return key_for(url, self.origins, self.key)

    def headers(self, url: str) -> dict[str, str]:
        """``{"Authorization": "Bearer …"}`` for ``url`` where the key may go, else ``{}``."""
        key = self.key_for(url)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def withheld(self, url: str) -> str | None:
        """Why no key goes to ``url`` though there is one (for the report), or ``None``."""
        if self.key is None or self.allows(url):
            return None
        o = origin(url)
        where = show_origin(o) if o else tr("that address")
        return tr("no key sent to {address}: it is not an address the profile names").format(address=where)
