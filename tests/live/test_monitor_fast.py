"""The monitor's fast path for the built-in rule against its generic path, on any stream."""

from __future__ import annotations

import math

import attrs
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.detectors import DeclineDetector
from evalstop.live.monitor import Monitor
from evalstop.live.state import Mode


@attrs.frozen(slots=True)
class GenericDecline(DeclineDetector):
    """The built-in rule under another type, so that the monitor takes its generic path."""


OBSERVATION = st.tuples(
    st.sampled_from([0, 1, "a", "b"]),
    st.integers(0, 12),
    st.one_of(st.floats(-2, 2), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0])),
)


@given(
    k=st.integers(1, 3),
    mode=st.sampled_from(["max", "min"]),
    stream=st.lists(OBSERVATION, max_size=60),
    forget=st.sets(st.integers(0, 59), max_size=5),
)
def test_mon13_fast_path_equals_generic(
    k: int, mode: Mode, stream: list[tuple[int | str, int, float]], forget: set[int]
) -> None:
    """MON-14: the same verdicts, one by one, and the same saved state."""
    fast = Monitor(DeclineDetector(k), mode)
    generic = Monitor(GenericDecline(k), mode)
    for i, (key, step, score) in enumerate(stream):
        assert repr(fast.observe(key, step, score)) == repr(generic.observe(key, step, score))
        if i in forget:
            assert fast.forget(key) == generic.forget(key)
    assert [repr(fast.job_state(key)) for key in fast] == [
        repr(generic.job_state(key)) for key in generic
    ]
