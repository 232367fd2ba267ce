"""The client-kind protocol: everything kvswitch needs to know about one kind of file.

A kind is one class with one instance in the registry (:mod:`kvswitch.kinds`). It says how
to recognise its file, where the file usually is, which keys hold the endpoint, key and
model (its *field map*, in the common names of :data:`COMMON_FIELDS`), how a mode is
expressed in it, how a profile is rendered into it, what its client re-reads live, and how
to tell the user to reload. Nothing outside :mod:`kvswitch.kinds` branches on a kind.

Two families share the protocol:
- the article's shapes (a Cline-style VS Code ``settings.json``, a CC Switch-style
  ``config.toml``) keep the mode and the cache settings in the file;
- real clients (Claude Code, Codex, Cline, OpenCode, Qwen Code) read no cache settings: for
  them a mode *is* a URL (the profile's URL for that mode), plus an ``X-Cache-Mode`` header
  where the profile asks for one. A switch changes only those, never auth or the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from kvswitch.edits import MISSING, KeyPath, get_path
from kvswitch.i18n import tr
from kvswitch.records import field, record

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit
    from kvswitch.literals import CacheMode
    from kvswitch.state import Remembered

__all__ = [
    "COMMON_FIELDS",
    "MISSING",
    "MODE_HEADER",
    "NEAR_MISS",
    "ClientKind",
    "ClientSettings",
    "Finding",
    "KeyPath",
    "ModeDefaults",
    "RenderInput",
    "Subject",
    "SwitchPlan",
    "TakesEffect",
    "get_path",
    "mode_defaults",
]

TakesEffect = Literal["now", "next session", "next start"]

NEAR_MISS = 0.75
"""How close an unknown key must be to a known one to count as its misspelling."""

MODE_HEADER = "X-Cache-Mode"
"""The request header that names the mode, for a backend or router that routes on it."""

_CACHE_KEYS = ("chunk_size", "kv_cache_dtype", "prefix_cache")
_SPLIT_KEYS = ("prefill_base_url", "decode_base_url", "transfer_protocol", "max_transfer_concurrency")
_REQUEST_KEYS = ("temperature", "max_tokens", "stream", "timeout_seconds")
COMMON_FIELDS: tuple[str, ...] = (
    "provider.name",
    "provider.base_url",
    "provider.api_key",
    "provider.model",
    "cache.mode",
    *(f"cache.{k}" for k in _CACHE_KEYS),
    *(f"split.{k}" for k in _SPLIT_KEYS),
    *(f"request.{k}" for k in _REQUEST_KEYS),
)
"""The common names a field map may use (the parts of :class:`kvswitch.models.ClientConfig`)."""


@record(slots=True)
class Subject:
    """One set of common fields in a file: the file itself, or one profile of kvswitch's config."""

    kind: str
    fields: dict[str, KeyPath]
    profile: str | None = None
    active: bool = True


@record(slots=True)
class ModeDefaults:
    """What a switch writes where a file has no value of its own (from a profile, or defaults):
    the article's split settings, and each mode's URL for the real clients."""

    chunk_size: int = 512
    prefill: str | None = None
    decode: str | None = None
    protocol: str = "layer-wise"
    max_transfer_concurrency: int = 4
    merged_url: str | None = None
    split_url: str | None = None
    mode_header: bool = True
    url_convention: str = "includes-v1"

    def url(self, mode: str) -> str | None:
        """The URL clients use in ``mode``."""
        return self.merged_url if mode == "merged" else self.split_url


@record
class SwitchPlan:
    """What switching one file takes: edits, values to remember, remembered values used."""

    kind: str
    old_mode: str | None
    new_mode: CacheMode
    edits: tuple[Edit, ...] = ()
    remember: dict[KeyPath, Remembered] = field(default_factory=dict)
    restored: tuple[KeyPath, ...] = ()

    @property
    def noop(self) -> bool:
        return not self.edits


@record(slots=True)
class RenderInput:
    """A profile, ready to be rendered into a client file in one mode."""

    profile_name: str
    profile: Any  # kvswitch.models.Profile (typed loosely: this module never imports pydantic)
    mode: CacheMode
    defaults: ModeDefaults
    key: str | None = None  # the key to write into the file; None: leave the file's key alone
    key_env: str | None = None  # the variable a client reads the key from; None: the profile has no key
    profile_wins: bool = True  # False: a mode flip (only the mode's form changes)


@record(slots=True)
class ClientSettings:
    """What a client's file says it uses now: the endpoint, model, headers and key of its
    current provider (what ``kvswitch import`` turns into a profile)."""

    url: str
    url_has_v1: bool = True
    """The client calls ``<url>/chat/completions``-style paths (False: it appends ``/v1/...``)."""
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers the client sends, ``X-Cache-Mode`` left out."""
    mode: str | None = None
    """The ``X-Cache-Mode`` value the client sends, if any."""
    key: str | None = field(default=None, repr=False)
    """A key the file holds in plain text (left out of ``repr``)."""
    key_env: str | None = None
    """The variable the client reads its key from."""
    provider: str | None = None
    """The provider entry's id in the file, where the client keeps several."""


Finding = tuple[str, str, KeyPath, bool]
"""A kind's own lint finding: (code, message, key path, point at the key rather than the value)."""


class ClientKind:
    """The protocol every kind implements; defaults suit a JSON file of a real client.

    Subclasses set the class attributes and override what differs. Methods take parsed files
    (:class:`kvswitch.config_file.ConfigFile`) and return plain data or edits; none writes."""

    id: ClassVar[str]
    """The id in kvswitch.toml (``kind = "claude-code"``) and on the command line."""
    product: ClassVar[str]
    """How messages name the client ("Claude Code")."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Older ids that still read as this kind."""
    format: ClassVar[Literal["jsonc", "toml"]] = "jsonc"
    real: ClassVar[bool] = True
    """A released client reads this file (False: the article's shapes, and kvswitch's config)."""
    client: ClassVar[bool] = True
    """Can be registered as a client (False only for kvswitch's own config)."""
    takes_effect: ClassVar[TakesEffect] = "next start"
    write_key_default: ClassVar[bool] = False
    """Whether a registered file of this kind gets the profile's key unless its entry says."""
    schema_file: ClassVar[str | None] = None
    schema_title: ClassVar[str] = ""
    docs_anchor: ClassVar[str] = ""
    """The section of docs/clients.md about this client."""
    rewrites_itself: ClassVar[bool] = False
    """A running client may rewrite the whole file from its own copy (the watcher then
    reports a rewrite just after kvswitch's write, never adopts it)."""
    init_flag: ClassVar[str | None] = None
    """``kvswitch init --FLAG PATH`` sets this client up (its file created from the skeleton)."""
    programs: ClassVar[tuple[str, ...]] = ()
    """The client's program names on ``PATH`` (``kvswitch client detect`` looks for them)."""
    cc_switch_app: ClassVar[str | None] = None
    """The ``app_type`` CC Switch files this client's providers under (``None``: it has none)."""
    packages: ClassVar[tuple[str, ...]] = ()
    """The npm packages the program comes from (its version is read from their package.json);
    a name ending in ``-`` matches every package it starts (platform builds)."""

    # -- recognising the file ------------------------------------------------------------
    def default_paths(self, home: Path, xdg: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
        """Where the client keeps its user-level file (first: the usual one)."""
        return ()

    def project_paths(self, root: Path) -> tuple[Path, ...]:
        """Project-level files of the client under ``root``."""
        return ()

    def detect(self, path: Path | None, data: Any) -> int:
        """How sure this kind is that the file is its own: 0 no, 1 maybe (a generic name),
        2 the content says so, 3 the path says so (``data`` is the parsed file or ``None``)."""
        return 0

    def current(self, data: Any) -> ClientSettings | None:
        """The endpoint the file's client uses now, or ``None`` when it names none of its own
        (a built-in provider, a file not set up)."""
        return None

    def cc_switch_data(self, settings: dict[str, Any], provider_id: str) -> Any:
        """The client file a CC Switch provider's ``settings_config`` stands for (what
        :meth:`current` reads); ``None`` when it names no endpoint (an official login).
        ``ValueError`` when it cannot be read."""
        return settings

    def cc_switch_key(self, settings: dict[str, Any]) -> str | None:
        """A key the provider holds outside the client file's shape (Codex's ``auth``)."""
        return None

    # -- the file's parts ----------------------------------------------------------------
    def subjects(self, data: Any) -> list[Subject]:
        """The sets of common fields in a parsed file (one for a client file)."""
        return [Subject(self.id, self.fields(data))]

    def fields(self, data: Any) -> dict[str, KeyPath]:
        """The field map: common field name → key path, for this file's content."""
        return {}

    def key_paths(self, data: Any) -> tuple[KeyPath, ...]:
        """Where the file holds API keys in plain text (masked, linted, file made 0600)."""
        path = self.fields(data).get("provider.api_key")
        return (path,) if path is not None else ()

    def owned(self, data: Any) -> Any:
        """The part of the file this kind's schema describes (the rest is the user's)."""
        return data

    def has_ours(self, data: Any) -> bool:
        """Whether the file holds anything kvswitch checks (a plain settings file does not)."""
        return True

    def owns_duplicate(self, key_path: KeyPath) -> bool:
        """Whether a duplicated key at ``key_path`` is worth a warning."""
        return True

    strict_keys: ClassVar[bool] = False
    """Every key the schema does not know is reported (not only near-misses of known ones)."""
    keeps_both_modes: ClassVar[bool] = False
    """The file keeps both modes' settings at once (kvswitch's profiles)."""
    requires_model: ClassVar[bool] = True
    """A missing model name is a finding (a client with a default model needs none)."""

    def lint(self, cf: ConfigFile, subject: Subject, mode: Any) -> Iterator[Finding]:
        """Findings only this kind has (``mode``: the file's mode, or :data:`MISSING`)."""
        return iter(())

    def split_endpoints_expected(self, data: Any) -> bool:
        """In split mode, a missing prefill/decode endpoint is a finding."""
        return False

    # -- the schema ----------------------------------------------------------------------
    def model(self) -> Any:
        """The pydantic model of :meth:`owned` (imported on first use: lint never needs it)."""
        raise NotImplementedError(f"{self.product} has no model")

    def schema_extra(self, schema: dict[str, Any]) -> None:
        """Adjust the generated JSON Schema in place."""

    # -- modes and rendering -------------------------------------------------------------
    def file_mode(self, cf: ConfigFile, defaults: ModeDefaults | None) -> str | None:
        """The mode the file is in, ``None`` when it cannot be told."""
        return None

    def plan_mode(self, cf: ConfigFile, mode: CacheMode, defaults: ModeDefaults | None) -> SwitchPlan:
        """The edits that put ``cf`` in ``mode`` and nothing else (none when it is there)."""
        raise NotImplementedError

    def render(self, cf: ConfigFile, r: RenderInput) -> tuple[list[Edit], SwitchPlan]:
        """The edits that bring ``cf`` to the profile in ``r.mode`` (a mode flip when
        ``r.profile_wins`` is False), and the mode plan inside them."""
        raise NotImplementedError

    def drift(self, cf: ConfigFile, r: RenderInput) -> list[str]:
        """The common fields where ``cf`` differs from what :meth:`render` would write
        (``cache.mode`` when the file is in the other mode)."""
        raise NotImplementedError

    def skeleton(self, r: RenderInput) -> str:
        """A new file holding the profile in ``r.mode`` (``r.key`` written when given)."""
        raise NotImplementedError

    # -- telling the user ----------------------------------------------------------------
    def apply_hint(self, name: str | None = None) -> str:
        """What the user does for a written change to take effect (``name``: how the user
        calls this client, else the product's name)."""
        who = name or self.product
        if self.takes_effect == "now":
            return tr("{client} picks the change up with its next request").format(client=who)
        if self.takes_effect == "next session":
            return tr("start a new {client} session to apply (a running one keeps its settings)").format(client=who)
        return tr("restart {client} to apply (it reads its config at start-up)").format(client=who)

    indent: ClassVar[str] = "  "
    """How a new file of this kind is indented (JSON): as the client writes its own."""

    def new_file(self, path: Path | None) -> ConfigFile:
        """The file as it is before kvswitch first writes it: empty, in the kind's format."""
        from kvswitch.config_file import ConfigFile
        from kvswitch.formats.jsonc import JsoncDocument
        from kvswitch.formats.toml import TomlDocument

        doc = JsoncDocument("{}\n", unit=self.indent) if self.format == "jsonc" else TomlDocument("")
        return ConfigFile(path, self.id, b"", doc)

    def json5_note(self) -> str:
        """Why a file that is valid JSON5 (single quotes, bare keys…) is still refused."""
        return tr("{client} reads JSON, not JSON5").format(client=self.product)

    def running(self) -> bool:
        """Whether the client runs now and may rewrite its file (only where that matters)."""
        return False

    def __repr__(self) -> str:
        return f"<kind {self.id}>"


def mode_defaults(profile: Any) -> ModeDefaults:
    """What a switch writes where a file has no value of its own, from a profile."""
    return ModeDefaults(
        chunk_size=profile.merged.chunk_size,
        prefill=profile.split.prefill_base_url or profile.base_url,
        decode=profile.split.decode_base_url or profile.base_url,
        protocol=profile.split.transfer_protocol,
        max_transfer_concurrency=profile.split.max_transfer_concurrency,
        merged_url=profile.mode_url("merged"),
        split_url=profile.mode_url("split"),
        mode_header=profile.mode_header,
        url_convention=profile.url_convention,
    )
