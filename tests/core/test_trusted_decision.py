"""BND-6: the trusted constructors of a decision and a stop order give what the public ones
give (equal, same type, frozen, hashable) and skip nothing the public ones check."""

from __future__ import annotations

import inspect
import math
import weakref
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core import decision as decision_module
from evalstop.core.decision import Decision, StopOrder, trusted_decision, trusted_stop_order

_ids = st.tuples(*[st.integers(0, 10**6)] * 2) | st.tuples() | st.tuples(st.integers(0, 10**6))
_maybe_float = st.none() | st.floats(allow_nan=True, allow_infinity=True)
_orders = st.builds(
    StopOrder, st.integers(0, 10**6), st.text(max_size=8), st.none() | st.integers(), _maybe_float
)


@given(st.integers(0, 10**6), st.text(max_size=8), st.none() | st.integers(), _maybe_float)
def test_bnd6_trusted_stop_order_equals_the_public_constructor(
    job_id: int, reason: str, step: int | None, score: float | None
) -> None:
    """BND-6: trusted_stop_order gives the StopOrder the public constructor gives (by repr,
    and by ==, hash and type unless its score is NaN); still frozen."""
    made, public = (
        trusted_stop_order(job_id, reason, step, score),
        StopOrder(job_id, reason, step, score),
    )
    assert type(made) is StopOrder and repr(made) == repr(public)
    if not (isinstance(score, float) and math.isnan(score)):
        assert made == public and hash(made) == hash(public)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.reason = "x"  # type: ignore[misc]


@given(_ids, _ids, st.lists(_orders, max_size=2).map(tuple))
def test_bnd6_trusted_decision_equals_the_public_constructor(
    start: tuple[int, ...], preempt: tuple[int, ...], stop: tuple[StopOrder, ...]
) -> None:
    """BND-6: trusted_decision gives the Decision the public constructor gives; still frozen."""
    made, public = trusted_decision(start, preempt, stop), Decision(start, preempt, stop)
    assert type(made) is Decision and repr(made) == repr(public)
    if not any(isinstance(o.saved_score, float) and math.isnan(o.saved_score) for o in stop):
        assert made == public and hash(made) == hash(public)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.start = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("cls", "trusted", "twin"),
    [
        (Decision, trusted_decision, decision_module._DecisionFilling),
        (StopOrder, trusted_stop_order, decision_module._StopFilling),
    ],
)
def test_bnd6_a_decision_has_nothing_the_trusted_path_skips(
    cls: type, trusted: Callable[..., Any], twin: type
) -> None:
    """BND-6: no Decision or StopOrder field has a validator or a converter, neither class has
    __attrs_post_init__ (attrs' __init__ only stores what it is given, as the trusted
    constructors do); the mutable twin each fills has the class's slots, which are its fields
    (no __weakref__), and the constructor's parameters are the fields, in order."""
    for field in attrs.fields(cls):
        assert field.validator is None and field.converter is None, field.name
    assert not hasattr(cls, "__attrs_post_init__")
    assert not hasattr(cls, "__attrs_pre_init__")
    names = [field.name for field in attrs.fields(cls)]
    assert names == list(inspect.signature(trusted).parameters)
    assert list(vars(cls)["__slots__"]) == names
    assert list(vars(twin)["__slots__"]) == sorted(names)  # CPython lays slots out sorted
    with pytest.raises(TypeError):
        weakref.ref(cls(*([()] * 3 if cls is Decision else [1, "x"])))
