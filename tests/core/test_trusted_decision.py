"""BND-6: the trusted constructors of a decision and a stop order give what the public ones
give (equal, same type, frozen, hashable) and skip nothing the public ones check."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
