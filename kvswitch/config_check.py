"""kvswitch's config validated without pydantic: the fast path of ``switch`` and ``status``.

:func:`kvswitch.config.read_config` first runs lint's checks (:func:`kvswitch.rules.check`,
schema-driven, no pydantic). When they pass, :func:`fast_model` looks for anything else the
pydantic models would refuse (a string pattern, NaN against a bound, the models' own
validators); finding nothing, it returns the config as a :class:`ModelView`, which reads each
field straight from the checked data (defaults from the generated schema) and builds the real
pydantic model only when something beyond a field is asked of it (``model_dump``, a method,
``==``). Finding something, it returns ``None`` and the caller validates with pydantic, so a
bad file gets the reference message. ``tests/test_config_check.py`` holds both paths to the
same verdict and the same values over generated configs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from kvswitch.models import KvswitchConfig

__all__ = ["ModelView", "fast_model", "mode_url", "model_problems"]

_ROOT = "KvswitchConfig"
_FACTORY = frozenset({(_ROOT, "auto_fix")})
"""Fields whose default (a ``default_factory``) neither the schema nor its type gives: read
from the pydantic model when the file leaves them out."""


def _schema() -> dict[str, Any]:
    from kvswitch.schema_check import schema

    return schema("kvswitch")


def model_problems(data: Any) -> bool:
    """Whether the pydantic models might refuse ``data`` although lint's checks pass: a value
    the exact schema check refuses, or one of the models' own validators (headers, a
    client's kind, the auto route's thresholds) that would."""
    from kvswitch.schema_check import check_schema

    if check_schema(data, "kvswitch", exact=True):
        return True
    return any(_validators(data))


def _validators(data: dict[str, Any]) -> Iterator[bool]:
    from kvswitch.kinds import client_kind
    from kvswitch.validate import HEADERS_MAX, header_problem

    auto_defaults = _schema()["$defs"]["AutoRoute"]["properties"]
    busy_default = auto_defaults["busy_split_from_tokens"]["default"]
    split_default = auto_defaults["split_from_tokens"]["default"]
    for profile in (data.get("profiles") or {}).values():
        headers = profile.get("headers") or {}
        seen = {name.lower() for name in headers}
        yield len(headers) > HEADERS_MAX or len(seen) < len(headers)
        yield any(header_problem(name, text) is not None for name, text in headers.items())
        auto = profile.get("auto") or {}
        yield auto.get("busy_split_from_tokens", busy_default) > auto.get("split_from_tokens", split_default)
    for entry in data.get("clients") or ():
        try:
            client_kind(entry["kind"])
        except ValueError:
            yield True


def fast_model(data: Any) -> KvswitchConfig | None:
    """``data`` (which lint's checks passed) as the config model without pydantic, or ``None``
    when the pydantic models must decide (:func:`model_problems`)."""
    if not isinstance(data, dict) or model_problems(data):
        return None
    return cast("KvswitchConfig", ModelView(data, _ROOT, _schema()))


class ModelView:
    """One model's fields read from validated data, as the pydantic model would hold them:
    numbers as floats, a client's kind by its current id, absent fields at their defaults,
    nested models as views. Anything else is asked of the pydantic model, built once."""

    __hash__ = None  # type: ignore[assignment]  # like the models: mutable, compared by value

    def __init__(self, data: dict[str, Any], name: str, root: dict[str, Any]) -> None:
        self._kvs_data = data
        self._kvs_name = name
        self._kvs_root = root
        self._kvs_model: Any = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        node = self._kvs_root if self._kvs_name == _ROOT else self._kvs_root["$defs"][self._kvs_name]
        props: dict[str, Any] = node["properties"]
        if attr not in props or (attr not in self._kvs_data and (self._kvs_name, attr) in _FACTORY):
            return getattr(self.real(), attr)
        # read once: the next read is a plain attribute; setdefault keeps the first value where
        # two threads race, so the same entries are always the same objects
        return self.__dict__.setdefault(attr, self._field(attr, props[attr]))

    def _field(self, attr: str, node: dict[str, Any]) -> Any:
        if attr not in self._kvs_data:
            if "default" in node:
                return node["default"]
            return self._value({}, node) if "$ref" in node else [] if node.get("type") == "array" else {}
        value = self._kvs_data[attr]
        if self._kvs_name == "ClientEntry" and attr == "kind":
            from kvswitch.kinds import client_kind

            return client_kind(value).id  # an old id reads as its kind, as the model's validator does
        return self._value(value, node)

    def _value(self, value: Any, node: dict[str, Any]) -> Any:
        if value is None:
            return None
        if "anyOf" in node:
            node = next(b for b in node["anyOf"] if b.get("type") != "null")
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return (
                _ProfileView(value, name, self._kvs_root)
                if name == "Profile"
                else ModelView(value, name, self._kvs_root)
            )
        kind = node.get("type")
        if kind == "object":
            extra = node.get("additionalProperties")
            sub = extra if isinstance(extra, dict) else {}
            return {k: self._value(v, sub) for k, v in value.items()}
        if kind == "array":
            items = node.get("items")
            return [self._value(v, items if isinstance(items, dict) else {}) for v in value]
        if kind == "number" and not isinstance(value, float):
            return float(value)
        return value

    def real(self) -> Any:
        """The pydantic model of these values (built on first use)."""
        if self._kvs_model is None:
            from kvswitch import models

            self._kvs_model = getattr(models, self._kvs_name).model_validate(self._kvs_data)
        return self._kvs_model

    def __eq__(self, other: object) -> bool:
        mine = self.real()
        return bool(mine == (other.real() if isinstance(other, ModelView) else other))

    def __repr__(self) -> str:
        return repr(self.real())

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.real())


def mode_url(profile: Any, mode: str) -> str:
    """The URL clients use in ``mode``: the mode's own, else the profile's ``base_url`` —
    ``Profile.mode_url``'s rule for a view (kept twice, since the models may not import this
    module, which imports them; ``tests/test_config_check.py`` holds the two equal)."""
    own = profile.merged.url if mode == "merged" else profile.split.url or profile.split.probe_url
    return str(own or profile.base_url)


class _ProfileView(ModelView):
    """A profile's view, with the model's method."""

    def mode_url(self, mode: str) -> str:
        return mode_url(self, mode)
