"""The built-in rule's fast fold against the generic one, on any stream of scores."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import DeclineDetector, observe, observe_decline, start_watch
from evalstop.core.model import JobKind

SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.0, -0.0, math.nan, math.inf, -math.inf]),
)


@given(
    k=st.integers(1, 4),
    scores=st.lists(SCORES, max_size=30),
    loss=st.floats(),
    min_delta=st.sampled_from([0.0, 0.5, 1.0]),
    warmup=st.sampled_from([0, 25, 100]),
)
def test_det10_fast_fold_equals_observe(
    k: int, scores: list[float], loss: float, min_delta: float, warmup: int
) -> None:
    """DET-10, DET-11: observe_decline gives the watch observe gives, after every score, for
    every DeclineDetector field (min_delta, warmup_steps)."""
    detector = DeclineDetector(k, min_delta=min_delta, warmup_steps=warmup)
    slow = fast = start_watch(detector)
    for i, score in enumerate(scores):
        step = 10 * (i + 1)
        view = CheckpointView(7, JobKind.RLHF, i + 1, step, 3 * i, score, loss, None, 0.5)
        slow = observe(detector, slow, view)
        fast = observe_decline(detector, fast, step, score)
        assert repr(fast) == repr(slow)  # repr: a NaN best score equals itself
