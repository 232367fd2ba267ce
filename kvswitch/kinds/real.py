"""What the real clients share: a mode is the profile's URL for that mode, plus the
``X-Cache-Mode`` header where the profile asks for one.

A mode flip writes only those two (never auth, never the model). A profile render also
writes the model, the kind's provider entry and, where allowed, the key: either the key
itself (clients that keep it in their file) or the name of the variable the client reads
it from. Each client module says where those live in its file.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any

from kvswitch.i18n import tr
from kvswitch.kinds.base import (
    MISSING,
    MODE_HEADER,
    NEAR_MISS,
    ClientKind,
    ClientSettings,
    KeyPath,
    ModeDefaults,
    RenderInput,
    SwitchPlan,
    get_path,
)

if TYPE_CHECKING:
    from kvswitch.config_file import ConfigFile
    from kvswitch.edits import Edit

__all__ = ["PROVIDER_ID", "RealKind", "client_url", "key_variable", "text_value"]

PROVIDER_ID = "kvswitch"
"""The id of the provider entry kvswitch adds where a client keeps several (Codex, OpenCode)."""


def client_url(url: str | None, convention: str, *, v1: bool) -> str | None:
    """A profile URL as a client wants it: ending in ``/v1`` (``v1``), or the root URL the
    client appends ``/v1/...`` to."""
    if url is None:
        return None
    url = url.rstrip("/")
    has_v1 = convention == "includes-v1"
    if v1 and not has_v1:
        return f"{url}/v1"
    if not v1 and has_v1 and url.endswith("/v1"):
        return url[: -len("/v1")]
    return url


def key_variable(profile_name: str, key_ref: str) -> str | None:
    """The variable a client reads the profile's key from: ``env:NAME`` gives NAME; a keyring
    profile gets ``KVSWITCH_KEY_<PROFILE>`` (the user exports it); ``none``: no variable."""
    if key_ref.startswith("env:"):
        return key_ref[4:]
    if key_ref == "none":
        return None
    return "KVSWITCH_KEY_" + re.sub(r"[^A-Za-z0-9]", "_", profile_name).upper()


class RealKind(ClientKind):
    """Base of the real clients' kinds."""

    url_has_v1 = True
    """The client wants a base URL ending in ``/v1`` (Claude Code wants the root URL)."""

    # -- where things are (override) ---------------------------------------------------
    def url_path(self, data: Any) -> KeyPath:
        raise NotImplementedError

    def model_path(self, data: Any) -> KeyPath | None:
        return None

    def literal_key_path(self, data: Any) -> KeyPath | None:
        """Where the file holds the key itself (clients that keep it in their file)."""
        return None

    def key_write_path(self, data: Any) -> KeyPath | None:
        """Where ``--write-key`` writes the key (default: :meth:`literal_key_path`)."""
        return self.literal_key_path(data)

    def headers_path(self, data: Any) -> KeyPath:
        """Where the file keeps its extra headers as an object (``{"Name": "value"}``)."""
        raise NotImplementedError

    def header(self, data: Any) -> str | None:
        """The ``X-Cache-Mode`` value the file sends, or ``None``."""
        headers = get_path(data, self.headers_path(data))
        value = headers.get(MODE_HEADER) if isinstance(headers, dict) else None
        return value if isinstance(value, str) else None

    def header_edits(self, cf: ConfigFile, value: str | None) -> list[Edit]:
        """Edits that make the file send ``X-Cache-Mode: value`` (``None``: not at all),
        leaving every other header alone."""
        from kvswitch.edits import Delete, Set

        path = self.headers_path(cf.data)
        headers = get_path(cf.data, path)
        if value is None:
            if not isinstance(headers, dict) or MODE_HEADER not in headers:
                return []
            return [Delete(path if len(headers) == 1 else (*path, MODE_HEADER))]
        if not isinstance(headers, dict):
            return [Set(path, {MODE_HEADER: value})]
        return [Set((*path, MODE_HEADER), value)]

    def extra_headers(self, data: Any, path: KeyPath | None = None) -> dict[str, str]:
        """The headers the file sends (at ``path``, default :meth:`headers_path`), without
        ``X-Cache-Mode``; values that are not strings are left out."""
        headers = get_path(data, self.headers_path(data) if path is None else path)
        if not isinstance(headers, dict):
            return {}
        return {str(k): v for k, v in headers.items() if isinstance(v, str) and str(k).lower() != MODE_HEADER.lower()}

    def extra_header_edits(self, cf: ConfigFile, data: Any, want: dict[str, str]) -> list[Edit]:
        """Edits that make the file (``data``: as edited so far) send each header of
        ``want``, leaving its other headers alone (names compared without case)."""
        from kvswitch.edits import Set

        path = self.headers_path(data)
        headers = get_path(data, path)
        if not isinstance(headers, dict):
            return [Set(path, dict(want))] if want else []
        edits: list[Edit] = []
        for name, value in want.items():
            have = next((k for k in headers if str(k).lower() == name.lower()), name)
            if headers.get(have) != value:
                edits.append(Set((*path, have), value))
        return edits

    def current(self, data: Any) -> ClientSettings | None:
        """The endpoint at the kind's own paths (clients with one provider in their file)."""
        if not isinstance(data, dict):
            return None
        url = text_value(get_path(data, self.url_path(data)))
        if url is None:
            return None
        model_path, key_path = self.model_path(data), self.literal_key_path(data)
        return ClientSettings(
            url,
            self.url_has_v1,
            model=text_value(get_path(data, model_path)) if model_path is not None else None,
            headers=self.extra_headers(data),
            mode=self.header(data),
            key=text_value(get_path(data, key_path)) if key_path is not None else None,
        )

    def setup_edits(self, cf: ConfigFile, data: Any, r: RenderInput) -> list[Edit]:
        """What a profile render writes besides URL, header, model and key (a provider entry
        made active, a key variable's name…), against ``data`` as edited so far."""
        return []

    def model_value(self, r: RenderInput) -> str:
        return str(r.profile.model)

    # -- the protocol --------------------------------------------------------------------
    def owned(self, data: Any) -> Any:
        """The parts of the file the kind's model describes: its known keys, and unknown keys
        only where they look like a misspelt known one. Everything else in a real client's
        file is the user's (Claude Code's other variables, other providers' options)."""
        from kvswitch.schema_check import schema

        root = schema(self.id)
        return _described(data, root, root)

    def has_ours(self, data: Any) -> bool:
        """The file holds kvswitch's part (a URL or a key where kvswitch writes them): a
        client file kvswitch has not set up yet has nothing for lint to check."""
        paths = [self.url_path(data), self.literal_key_path(data)]
        return any(p is not None and get_path(data, p) is not MISSING for p in paths)

    def fields(self, data: Any) -> dict[str, KeyPath]:
        out = {"provider.base_url": self.url_path(data)}
        model = self.model_path(data)
        if model is not None:
            out["provider.model"] = model
        key = self.literal_key_path(data)
        if key is not None:
            out["provider.api_key"] = key
        return out

    def mode_url(self, d: ModeDefaults, mode: str) -> str | None:
        return client_url(d.url(mode), d.url_convention, v1=self.url_has_v1)

    def file_mode(self, cf: ConfigFile, defaults: ModeDefaults | None) -> str | None:
        header = self.header(cf.data)
        if header in ("merged", "split"):
            return header
        if defaults is None:
            return None
        url = get_path(cf.data, self.url_path(cf.data))
        merged, split = self.mode_url(defaults, "merged"), self.mode_url(defaults, "split")
        if merged == split:
            return None  # one URL for both: only the header tells them apart
        return "merged" if url == merged else "split" if url == split else None

    def plan_mode(self, cf: ConfigFile, mode: Any, defaults: ModeDefaults | None) -> SwitchPlan:
        from kvswitch.edits import Set
        from kvswitch.errors import EditError

        d = defaults or ModeDefaults()
        url = self.mode_url(d, mode)
        if url is None:
            message = tr(
                "switching {client} needs the profile's URL for {mode} mode; register the file "
                "(kvswitch client add) so the active profile gives it"
            )
            raise EditError(message.format(client=self.product, mode=mode), cf.locate(()))
        data = cf.data
        if not isinstance(data, dict):
            raise EditError(tr("{client}'s file does not hold an object").format(client=self.product), cf.locate(()))
        old = self.file_mode(cf, d)
        edits: list[Edit] = []
        path = self.url_path(data)
        if get_path(data, path) != url:
            edits.append(Set(path, url))
        want = mode if d.mode_header else None
        if self.header(data) != want:
            edits += self.header_edits(cf, want)
        return SwitchPlan(self.id, old, mode, tuple(edits))

    def render(self, cf: ConfigFile, r: RenderInput) -> tuple[list[Edit], SwitchPlan]:
        from kvswitch.edits import Set, apply_to_data

        plan = self.plan_mode(cf, r.mode, r.defaults)
        edits: list[Edit] = list(plan.edits)
        if r.profile_wins:
            data = apply_to_data(cf.data, edits) if edits else cf.data
            path = self.model_path(data)
            if path is not None and get_path(data, path) != self.model_value(r):
                edits.append(Set(path, self.model_value(r)))
            edits += self.setup_edits(cf, apply_to_data(cf.data, edits) if edits else cf.data, r)
            extra: dict[str, str] = dict(getattr(r.profile, "headers", None) or {})
            if extra:
                data = apply_to_data(cf.data, edits) if edits else cf.data
                edits += self.extra_header_edits(cf, data, extra)
        if r.key is not None:
            data = apply_to_data(cf.data, edits) if edits else cf.data
            path = self.key_write_path(data)
            if path is not None and get_path(data, path) != r.key:
                edits.append(Set(path, r.key))
        return edits, plan

    def drift(self, cf: ConfigFile, r: RenderInput) -> list[str]:
        data, d = cf.data, r.defaults
        out: list[str] = []
        url = get_path(data, self.url_path(data))
        want, other = self.mode_url(d, r.mode), self.mode_url(d, "split" if r.mode == "merged" else "merged")
        if url != want:
            out.append("cache.mode" if url == other and url is not MISSING else "provider.base_url")
        if d.mode_header and self.header(data) != r.mode and "cache.mode" not in out:
            out.append("cache.mode")
        path = self.model_path(data)
        if path is not None and get_path(data, path) != self.model_value(r):
            out.append("provider.model")
        extra: dict[str, str] = dict(getattr(r.profile, "headers", None) or {})
        if extra and self.extra_header_edits(cf, data, extra):
            out.append("provider.headers")
        if self.setup_edits(cf, data, r):
            out.append("provider.name")  # the client does not use kvswitch's provider entry
        return out

    def skeleton(self, r: RenderInput) -> str:
        cf = self.new_file(None)
        edits, _ = self.render(cf, r)
        return cf.doc.apply(edits) if edits else cf.text


def text_value(value: Any) -> str | None:
    """A non-empty string value, stripped; anything else ``None``."""
    return (value.strip() or None) if isinstance(value, str) else None


def _described(data: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """``data`` with the keys the schema ``node`` neither knows nor nearly knows left out."""
    from kvswitch.schema_check import resolve

    node = resolve(node, root)
    if "anyOf" in node:
        branches = (resolve(b, root) for b in node["anyOf"])
        objects = [b for b in branches if b.get("type") == "object"]
        node = objects[0] if len(objects) == 1 else node
    if not isinstance(data, dict) or node.get("type") != "object":
        return data
    known: dict[str, Any] = node.get("properties", {})
    extra = node.get("additionalProperties")
    lowered = {k.lower() for k in known}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in known:
            out[key] = _described(value, known[key], root)
        elif isinstance(extra, dict):
            out[key] = _described(value, extra, root)  # a table of tables: providers by id
        elif str(key).lower() in lowered or difflib.get_close_matches(str(key), list(known), n=1, cutoff=NEAR_MISS):
            out[key] = value  # baseURL for baseUrl, ANTHROPIC_BASEURL…
    return out
