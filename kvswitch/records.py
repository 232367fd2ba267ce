"""Records: classes of named, typed fields, like :func:`dataclasses.dataclass`, cheap to define.

kvswitch starts a process for every ``switch``, ``status`` and pre-commit ``lint``, and each of
those defines some thirty small value classes before it does any work. As dataclasses they cost
about 1 ms each to define (several ``exec`` calls, a second class for ``__slots__``) plus the
import of :mod:`dataclasses` and :mod:`inspect`: together a third of a ``switch``. A record is
defined with one ``exec``. It offers the part of dataclasses those classes use, with the same
behaviour: ``__init__`` (defaults, :func:`field` with ``default_factory``), ``__repr__``,
``__eq__`` (same class only; ``compare=False`` fields left out), ``__hash__`` when frozen,
assignment refused (``AttributeError``) when frozen, ``__slots__``, ``__match_args__``, ``__post_init__``;
:func:`replace` and :func:`asdict` (both also take dataclasses). Type checkers see a record as a
dataclass (:func:`typing.dataclass_transform`).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["asdict", "field", "field_names", "record", "replace"]

T = TypeVar("T")

_MISSING: Any = object()


class Field:
    """What :func:`field` returns: a field's default and how it takes part."""

    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] = _MISSING,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field's default (``default`` or ``default_factory``), whether ``repr`` shows it and
    whether ``==`` and ``hash`` compare it."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("a field takes a default or a default_factory, not both")
    return Field(default, default_factory, repr, compare)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(text, str) and text.replace("typing.", "").startswith("ClassVar")


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The compared fields' values of a record, as a tuple."""
    if not names:
        return lambda _obj: ()
    get = attrgetter(*names)
    return (lambda obj: (get(obj),)) if len(names) == 1 else get


# the methods every record shares; __init__ alone is made per class (exec: it is the hot one)
def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_repr__)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return bool(self.__record_key__(self) == other.__record_key__(other))
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_key__(self))


def _refuse_set(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r}")  # a bug in the caller, as in a dataclass


def _refuse_delete(self: Any, name: str) -> None:
    raise AttributeError(f"cannot delete field {name!r}")


def _build(cls: type[T], frozen: bool, slots: bool, eq: bool) -> type[T]:
    if any("__record_fields__" in vars(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot extend another record")
    names: list[str] = []
    specs: dict[str, Field] = {}
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - inspect is what records avoid importing
    for name, annotation in own.items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(value, _MISSING, True, True)
        names.append(name)
        specs[name] = spec
    scope: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params: list[str] = []
    body: list[str] = []
    seen_default = False
    for name in names:
        spec = specs[name]
        if spec.default_factory is not _MISSING:
            scope[f"_f_{name}"] = spec.default_factory
            params.append(f"{name}=_MISSING")
            value = f"_f_{name}() if {name} is _MISSING else {name}"
            seen_default = True
        elif spec.default is not _MISSING:
            scope[f"_d_{name}"] = spec.default
            params.append(f"{name}=_d_{name}")
            value = name
            seen_default = True
        else:
            if seen_default:
                raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with a default")
            params.append(name)
            value = name
        body.append(f"  _set(self, {name!r}, {value})" if frozen else f"  self.{name} = {value}")
    if "__post_init__" in cls.__dict__:
        body.append("  self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}) -> None:\n" + "\n".join(body or ["  pass"]), scope)
    methods: dict[str, Any] = {"__init__": scope["__init__"], "__repr__": _repr}
    if eq:
        methods["__eq__"] = _eq
        if frozen:
            methods["__hash__"] = _hash
    if frozen:
        methods.update(__setattr__=_refuse_set, __delattr__=_refuse_delete)
    scope["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    compared = [n for n in names if specs[n].compare]
    extra: dict[str, Any] = {
        **methods,
        "__match_args__": tuple(names),
        "__record_fields__": tuple(names),
        "__record_repr__": tuple(n for n in names if specs[n].repr),
        "__record_key__": staticmethod(_key(compared)),
    }
    if eq and not frozen:
        extra["__hash__"] = None
    if not slots:
        for name in names:  # a plain default stays a class attribute, as in a dataclass
            spec = specs[name]
            if spec.default is _MISSING:
                if name in cls.__dict__:
                    delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        for key, value in extra.items():
            setattr(cls, key, value)
        return cls
    namespace = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__", *names)}
    namespace.update(extra, __slots__=tuple(names))
    metaclass: Any = type(cls)
    made: type[T] = metaclass(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, frozen: bool = True, slots: bool = False, eq: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(
    cls: type[T] | None = None, /, *, frozen: bool = True, slots: bool = False, eq: bool = True
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` a record of its annotated fields (frozen unless ``frozen=False``)."""
    if cls is not None:
        return _build(cls, frozen, slots, eq)
    return lambda c: _build(c, frozen, slots, eq)


def field_names(obj: object) -> tuple[str, ...]:
    """The fields of a record (or of a dataclass), in order."""
    names: tuple[str, ...] | None = getattr(obj, "__record_fields__", None)
    if names is not None:
        return names
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(obj))  # type: ignore[arg-type]


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record (or dataclass) ``obj`` with ``changes``, made through ``__init__``."""
    if not hasattr(obj, "__record_fields__"):
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    unknown = set(changes) - set(field_names(obj))
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values = {name: getattr(obj, name) for name in field_names(obj)}
    values.update(changes)
    return obj.__class__(**values)


def asdict(obj: object) -> Any:
    """A record (or dataclass) as a dict, its fields' values converted the same way, recursively
    (lists, tuples and dicts too), as :func:`dataclasses.asdict` does."""
    if hasattr(obj, "__record_fields__") or hasattr(obj, "__dataclass_fields__"):
        return {name: asdict(getattr(obj, name)) for name in field_names(obj)}
    if isinstance(obj, list):
        return [asdict(v) for v in obj]
    if isinstance(obj, tuple):
        return type(obj)(asdict(v) for v in obj) if not hasattr(obj, "_fields") else type(obj)(*map(asdict, obj))
    if isinstance(obj, dict):
        return type(obj)((asdict(k), asdict(v)) for k, v in obj.items())
    return obj
