"""A profile rendered into a client file: which values each client key should hold.

Two ways to bring a file to a profile and mode (D-12):
- a *mode flip* (``kvswitch switch MODE``) changes only how the file expresses the mode
  (the article's shapes: their cache form, with remembered values coming back; real
  clients: the mode's URL and header);
- a *profile render* (``kvswitch profile use``) makes every owned value the profile's.
A key field is written only when the caller passes the key and it differs from the file's.
Where each value lives is the kind's business (:mod:`kvswitch.kinds`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvswitch.document import ConfigFile
from kvswitch.edits import Edit
from kvswitch.kinds import RenderInput, SwitchPlan, article, kind_of
from kvswitch.kinds.base import mode_defaults
from kvswitch.literals import CacheMode

if TYPE_CHECKING:
    from kvswitch.models import Profile

__all__ = ["desired_values", "drift", "mode_defaults", "render_edits", "render_input"]


def desired_values(profile: Profile, mode: CacheMode) -> dict[str, Any]:
    """The value of every common field the profile decides for the article's shapes (no key)."""
    return article.desired_values(profile, mode, mode_defaults(profile))


def render_input(
    profile: Profile,
    mode: CacheMode,
    *,
    name: str = "",
    key: str | None = None,
    profile_wins: bool = True,
) -> RenderInput:
    """What a kind needs to render ``profile`` in ``mode``."""
    from kvswitch.kinds.real import key_variable

    return RenderInput(
        name, profile, mode, mode_defaults(profile), key, key_variable(name or "default", profile.key), profile_wins
    )


def render_edits(
    cf: ConfigFile,
    profile: Profile,
    mode: CacheMode,
    *,
    key: str | None = None,
    profile_wins: bool = True,
    name: str = "",
) -> tuple[list[Edit], SwitchPlan]:
    """The edits that bring ``cf`` to ``profile`` (named ``name``) in ``mode``.

    ``profile_wins=False`` is a mode flip. ``key`` is written only when given and different
    from the file's. Returns the edits and the mode plan (what it takes out is remembered by
    the caller)."""
    return kind_of(cf).render(cf, render_input(profile, mode, name=name, key=key, profile_wins=profile_wins))


def drift(cf: ConfigFile, profile: Profile, mode: CacheMode, *, name: str = "") -> list[str]:
    """The common fields where ``cf`` differs from what the profile and mode would write."""
    return kind_of(cf).drift(cf, render_input(profile, mode, name=name))
