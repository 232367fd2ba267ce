"""The build of one result: the caveats used so far (with their texts' parameters), the flags
every engine instance shares (address, KV dtype) and the numbered caveats at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvswitch.addresses import is_loopback_host
from kvswitch.engine_flags.caveats import CAVEATS, LEVEL_ORDER
from kvswitch.engine_flags.dtypes import dtype_rule
from kvswitch.engine_flags.model import Backend, Caveat, Command, Engine, EngineFlags, EnvVar, Flag, Route
from kvswitch.engine_flags.where import Where

if TYPE_CHECKING:
    from kvswitch.models import Profile

__all__ = ["Build", "Side"]

Side = tuple[list[Flag], list[EnvVar]]
"""One instance's flags and environment while they are built."""


def _rounded64(n: int) -> int:
    return max(64, ((n + 32) // 64) * 64)


@dataclass
class Build:
    """One result being built: its engine and profile, and every caveat used so far."""

    engine: Engine
    profile: Profile
    profile_name: str | None
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Caveats not attached to a flag (code, params), and the params of every used code."""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def pname(self) -> str:
        return self.profile_name or "NAME"

    def use(self, code: str, **params: Any) -> str:
        """Register ``code`` (with its text's params) and return it, to attach to a flag."""
        if code not in CAVEATS:  # pragma: no cover - a typo in a builder
            raise KeyError(code)
        self.params.setdefault(code, {}).update(params)
        return code

    def note(self, code: str, **params: Any) -> None:
        """Register ``code`` as a caveat of the whole result (attached to no flag)."""
        self.use(code, **params)
        self.notes.append((code, params))

    # flags shared by every engine instance
    def address(self, w: Where) -> list[Flag]:
        """``--host`` and ``--port`` of the server at ``w``."""
        host = Flag("--host", (w.bind,), (self.use("listen-all", url=w.profile_url),) if w.bind == "0.0.0.0" else ())
        codes: list[str] = []
        if not w.explicit_port:
            codes.append(self.use("default-port", url=w.profile_url, port=w.port, field=w.field))
        if w.moved:
            codes.append("port-moved")
        return [host, Flag("--port", (str(w.port),), tuple(codes))]

    def dtype(self, split: bool) -> list[Flag]:
        """``--kv-cache-dtype`` for the profile's KV dtype, or nothing when the engine refuses it."""
        dtype = self.profile.cache.kv_cache_dtype
        rule = dtype_rule(dtype, self.engine)
        code = self.use(rule.caveat, dtype=dtype, value=rule.value or "", profile=self.pname)
        if rule.value is None:
            self.notes.append((code, {}))
            return []
        codes = [code]
        if split:
            codes.append(self.use("split-same-dtype", dtype=rule.value))
        return [Flag("--kv-cache-dtype", (rule.value,), tuple(codes))]

    def chunk_notes(self, split: bool) -> None:
        """The caveats about the profile's chunk size (merged mode's setting)."""
        chunk = self.profile.merged.chunk_size
        if split:
            self.note("chunk-split", chunk=chunk)
            return
        if chunk < 256:
            self.note("chunk-small", chunk=chunk)
        if chunk % 64:
            self.note("chunk-64", chunk=chunk, rounded=_rounded64(chunk))

    def hosted(self, w: Where) -> None:
        """Say so when ``w`` is a hosted gateway, where no engine flags can be passed."""
        if w.scheme == "https" and not is_loopback_host(w.host):
            self.note("hosted", url=w.profile_url)

    def finish(
        self, mode: str, backend: Backend | None, commands: list[Command], route: Route | None = None
    ) -> EngineFlags:
        """The result: ``commands`` with every caveat used, numbered refusals first."""
        order: list[str] = []
        for cmd in commands:
            for code in cmd.codes():
                if code not in order:
                    order.append(code)
        for code, _ in self.notes:
            if code not in order:
                order.append(code)
        order.sort(key=lambda c: LEVEL_ORDER[CAVEATS[c].level])  # stable: first use within a level
        caveats = []
        for n, code in enumerate(order, 1):
            spec = CAVEATS[code]
            text = _shown(spec.text).format_map(_Params(self.params.get(code, {})))
            caveats.append(Caveat(code, spec.level, spec.flags, text, _shown(spec.versions), _shown(spec.source), n))
        return EngineFlags(
            self.engine,
            mode,
            self.profile_name,
            self.profile.model,
            backend,
            tuple(commands),
            tuple(caveats),
            route.shown if route else None,
            route.mode if route else None,
        )


def _shown(text: str) -> str:
    """A catalogue text (marked with ``N_`` in :mod:`.caveats`) in the user's language; ``""``
    stays empty (gettext would answer it with the catalogue's header)."""
    from kvswitch import i18n

    return i18n.tr(text) if text else text


class _Params(dict[str, Any]):
    def __missing__(self, key: str) -> str:  # pragma: no cover - a placeholder without a value
        return "{" + key + "}"
