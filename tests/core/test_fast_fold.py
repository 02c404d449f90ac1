"""The built-in rule's fast fold against the generic one, on any stream of scores."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import (
    DeclineDetector,
    Watch,
    observe,
    observe_decline,
    start_watch,
)
from evalstop.core.folds import DeclineState
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


@given(
    k=st.integers(1, 4),
    declines=st.integers(0, 5),
    previous=st.sampled_from([None, 0.5]),
    fired=st.sampled_from([None, 20]),
    score=st.sampled_from([math.nan, math.inf, 0.25, 0.75]),
)
# Exactly k declines, unfired, then a NaN: it fires (one fewer does not).
@example(k=2, declines=2, previous=0.5, fired=None, score=math.nan)
@example(k=2, declines=1, previous=0.5, fired=None, score=math.nan)
def test_det10_fast_fold_equals_observe_from_any_watch(
    k: int, declines: int, previous: float | None, fired: int | None, score: float
) -> None:
    """DET-10: the equality holds from any watch, not only those a fold reaches: one with at
    least k declines that has not fired (a saved state, or one folded by a laxer rule) fires
    at the next report, a NaN one too, and keeps its rule, evals and best checkpoint."""
    detector = DeclineDetector(k)
    watch = Watch(DeclineState(declines, previous), 3, 10, 0.9, fired)
    view = CheckpointView(7, JobKind.RLHF, 4, 40, 30, score, 1.0, None, 0.5)
    fast = observe_decline(detector, watch, 40, score)
    assert repr(fast) == repr(observe(detector, watch, view))
    if not math.isfinite(score):
        late = fired is None and declines >= k
        assert fast == Watch(watch.rule, 3, 10, 0.9, 40 if late else fired)
