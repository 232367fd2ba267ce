"""Records behave as the dataclasses they replace: each case is defined twice, once with
``dataclasses.dataclass`` and once with ``kvswitch.records.record``, and both must agree."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from kvswitch import records


def _pair(frozen: bool, slots: bool) -> tuple[type, type]:
    def body() -> dict[str, object]:
        return {
            "__annotations__": {
                "kind": "ClassVar[str]",
                "a": "int",
                "b": "str",
                "c": "tuple[int, ...]",
                "secret": "str | None",
                "note": "str",
            },
            "kind": "shape",
            "b": "x",
            "describe": lambda self: f"{self.a}:{self.b}",
        }

    dc_ns = body()
    dc_ns["c"] = dataclasses.field(default_factory=tuple)
    dc_ns["secret"] = dataclasses.field(default=None, repr=False)
    dc_ns["note"] = dataclasses.field(default="", compare=False)
    rec_ns = body()
    rec_ns["c"] = records.field(default_factory=tuple)
    rec_ns["secret"] = records.field(default=None, repr=False)
    rec_ns["note"] = records.field(default="", compare=False)
    dc = dataclasses.dataclass(frozen=frozen, slots=slots)(type("Shape", (), dc_ns))
    rec = records.record(frozen=frozen, slots=slots)(type("Shape", (), rec_ns))
    return dc, rec


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("slots", [True, False])
def test_a_record_behaves_as_the_dataclass(frozen: bool, slots: bool) -> None:
    dc, rec = _pair(frozen, slots)
    for cls in (dc, rec):
        one, same, other = cls(1), cls(1, "x", (), None, "note differs"), cls(2, "y", (3,), "k")
        assert one == same and one != other and (one == 1) is False
        assert one.c == ()
        assert one.describe() == "1:x" and cls.kind == "shape"
        assert cls.__match_args__ == ("a", "b", "c", "secret", "note")
    assert [repr(x) for x in (dc(1), dc(2, "y", (3,), "k", "n"))] == [
        repr(x) for x in (rec(1), rec(2, "y", (3,), "k", "n"))
    ]
    assert "k" not in repr(rec(2, "y", (3,), "k"))  # repr=False
    if frozen:
        assert hash(rec(1)) == hash(rec(1, note="other")) == hash(dc(1))  # compare=False left out
        with pytest.raises(AttributeError):
            rec(1).a = 2  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            dc(1).a = 2  # type: ignore[misc]
    else:
        assert rec.__hash__ is None and dc.__hash__ is None
        x = rec(1)
        x.a = 5
        assert x.a == 5
    if slots:
        assert not hasattr(rec(1), "__dict__") and rec.__slots__ == dc.__slots__


def test_replace_and_asdict_agree_with_dataclasses() -> None:
    dc, rec = _pair(True, True)
    assert records.replace(rec(1, c=(1,)), b="q") == rec(1, "q", (1,))
    assert records.replace(dc(1), b="q") == dataclasses.replace(dc(1), b="q")  # a dataclass too
    with pytest.raises(TypeError, match="no field 'zz'"):
        records.replace(rec(1), zz=1)
    nested = rec(1, c=(rec(2),))
    assert records.asdict(nested) == dataclasses.asdict(dc(1, c=(dc(2),)))
    assert records.field_names(rec) == records.field_names(dc(1)) == ("a", "b", "c", "secret", "note")


def test_post_init_runs_and_may_set_a_frozen_field() -> None:
    @records.record
    class Span:
        start: int
        end: int = -1

        def __post_init__(self) -> None:
            if self.end < 0:
                object.__setattr__(self, "end", self.start)

    assert Span(3) == Span(3, 3) and Span(3, 5).end == 5


def test_mistakes_are_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        @records.record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="not both"):
        records.field(default=1, default_factory=list)

    @records.record
    class Base:
        a: int

    with pytest.raises(TypeError, match="cannot extend another record"):

        @records.record
        class Child(Base):
            b: int = 0


def test_a_default_factory_makes_a_fresh_value_each_time() -> None:
    @records.record(frozen=False)
    class Bag:
        items: list[int] = records.field(default_factory=list)

    one, two = Bag(), Bag()
    one.items.append(1)
    assert two.items == [] and Bag([5]).items == [5]


def test_classvars_are_not_fields() -> None:
    @records.record
    class Limited:
        limit: ClassVar[int] = 3
        a: int = 0

    assert records.field_names(Limited) == ("a",) and Limited.limit == 3 and Limited(1).a == 1
