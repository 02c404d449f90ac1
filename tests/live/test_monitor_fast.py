"""The monitor's fast path for the built-in rule against its generic path, on any stream."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.monitor import Monitor, Reason, Stop
from evalstop.live.state import Mode


@attrs.frozen(slots=True)
class GenericDecline(DeclineDetector):
    """The built-in rule under another type, so that the monitor takes its generic path."""


OBSERVATION = st.tuples(
    st.sampled_from([0, 1, "a", "b"]),
    st.integers(0, 12),
    st.one_of(st.floats(-2, 2), st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0])),
)


@attrs.frozen(slots=True)
class GenericNoiseAware(NoiseAwareDetector):
    """The noise-aware rule under another type, so that the monitor takes its generic path."""


NOISE_AWARE = st.builds(
    NoiseAwareDetector,
    z=st.floats(0.5, 3.0),
    memory=st.floats(0.05, 1.0),
    warmup_evals=st.integers(0, 6),
    warmup_steps=st.integers(0, 8),
    min_delta=st.sampled_from([0.0, 0.01, 0.3]),
    baseline=st.one_of(st.none(), st.floats(-2, 2)),
    keep=st.sampled_from(["best", "level"]),
    keep_memory=st.floats(0.01, 1.0),
)


@st.composite
def runs(draw: st.DrawFn) -> list[tuple[int | str, int, float]]:
    """Interleaved runs of two jobs whose steps mostly advance (some repeat or go back) and
    whose scores drift with noise (from a drawn random stream, so that values spread), so
    that the rule fires in many of them; a few NaN and infinite scores."""
    rng = draw(st.randoms(use_true_random=False))
    out: list[tuple[int | str, int, float]] = []
    keys: list[int | str] = [0, "a"]
    last: dict[int | str, int] = {0: 0, "a": 0}
    level: dict[int | str, float] = {0: 0.0, "a": 0.0}
    for _ in range(draw(st.integers(0, 80))):
        key = rng.choice(keys)
        last[key] = max(0, last[key] + rng.randint(-3, 40))
        level[key] += rng.uniform(-1.0, 0.6)
        special = rng.random() < 0.05
        score = rng.choice([math.nan, math.inf, -math.inf]) if special else level[key]
        out.append((key, last[key], score + rng.gauss(0.0, 0.2)))
    return out


DECLINE = st.builds(
    DeclineDetector,
    k=st.integers(1, 3),
    min_delta=st.sampled_from([0.0, 0.05, 0.5]),
    warmup_steps=st.sampled_from([0, 0, 5, 40]),
)


@given(
    detector=DECLINE,
    mode=st.sampled_from(["max", "min"]),
    stream=st.one_of(st.lists(OBSERVATION, max_size=60), runs()),
    forget=st.sets(st.integers(0, 59), max_size=5),
)
def test_mon13_fast_path_equals_generic(
    detector: DeclineDetector,
    mode: Mode,
    stream: list[tuple[int | str, int, float]],
    forget: set[int],
) -> None:
    """MON-14, DET-11: the same verdicts, one by one, and the same saved state, for any k,
    min_delta and warm-up."""
    fast = Monitor(detector, mode)
    generic = Monitor(GenericDecline(**attrs.asdict(detector)), mode)
    for i, (key, step, score) in enumerate(stream):
        assert repr(fast.observe(key, step, score)) == repr(generic.observe(key, step, score))
        if i in forget:
            assert fast.forget(key) == generic.forget(key)
    assert [repr(fast.job_state(key)) for key in fast] == [
        repr(generic.job_state(key)) for key in generic
    ]


@given(
    data=st.data(),
    mode=st.sampled_from(["max", "min"]),
    stream=st.one_of(st.lists(OBSERVATION, max_size=60), runs()),
    rule=st.sampled_from(["decline", "generic", "noise-aware"]),
    cut=st.integers(0, 80),
)
def test_mon17_observe_many_is_observe_keeping_the_stops(
    data: st.DataObject,
    mode: Mode,
    stream: list[tuple[int | str, int, float]],
    rule: str,
    cut: int,
) -> None:
    """MON-17: observe_many returns the fresh stops of the single calls, in order, and leaves
    the same state, for the built-in rules (their own loops, any parameters) and any other
    detector; two batches in a row are one batch."""
    decline = data.draw(DECLINE)
    detectors: dict[str, Detector[Any]] = {
        "decline": decline,
        "generic": GenericDecline(**attrs.asdict(decline)),
        "noise-aware": data.draw(NOISE_AWARE),
    }
    one, many = Monitor(detectors[rule], mode), Monitor(detectors[rule], mode)
    verdicts = [one.observe(key, step, score) for key, step, score in stream]
    fresh = [v for v in verdicts if isinstance(v, Stop)]
    expected = [v for v in fresh if v.reason is not Reason.ALREADY_STOPPED]
    stops = many.observe_many(stream[:cut]) + many.observe_many(iter(stream[cut:]))
    assert repr(stops) == repr(expected)
    assert [repr(many.job_state(key)) for key in many] == [repr(one.job_state(key)) for key in one]


def test_mon17_a_bad_triple_raises_after_the_ones_before_it() -> None:
    """MON-17: the triples before a bad one are folded; the bad one raises as observe does and
    changes nothing; numpy scalars pass like in observe."""
    monitor = Monitor(DeclineDetector(1))
    with pytest.raises(TypeError, match="step must be an int"):
        monitor.observe_many([("a", 1, 1.0), ("a", 2, 0.5), ("b", 1.5, 1.0)])  # type: ignore[list-item]
    state = monitor.job_state("a")
    assert "b" not in monitor and state is not None and state.watch.fired_step == 2
    numpy_scalars = ("b", np.int64(1), np.float32(1.0))
    stops = monitor.observe_many([numpy_scalars, ("b", 2, 0.0)])  # type: ignore[list-item]
    assert [(s.job_id, s.stop_step, s.best_step) for s in stops] == [("b", 2, 1)]
    assert monitor.observe_many([("a", 3, 0.0)]) == []


@given(
    detector=NOISE_AWARE,
    mode=st.sampled_from(["max", "min"]),
    stream=st.one_of(runs(), st.lists(OBSERVATION, max_size=60)),
    forget=st.sets(st.integers(0, 79), max_size=3),
)
def test_mon14_noise_aware_record_equals_generic(
    detector: NoiseAwareDetector,
    mode: Mode,
    stream: list[tuple[int | str, int, float]],
    forget: set[int],
) -> None:
    """MON-14: the noise-aware rule folded in place on the job's record gives the generic
    path's verdicts one by one and the same saved state, for any parameters (keep rules,
    baseline, warm-ups) and any stream (NaN, infinities, stale steps, forgotten jobs); a
    restored monitor resumes on the same record."""
    fast = Monitor(detector, mode)
    generic = Monitor(GenericNoiseAware(**attrs.asdict(detector)), mode)
    for i, (key, step, score) in enumerate(stream):
        assert repr(fast.observe(key, step, score)) == repr(generic.observe(key, step, score))
        if i in forget:
            assert fast.forget(key) == generic.forget(key)
        if i == len(stream) // 2 and all(math.isfinite(s) for *_, s in stream):
            fast = Monitor.from_json(fast.to_json())
    assert [repr(fast.job_state(key)) for key in fast] == [
        repr(generic.job_state(key)) for key in generic
    ]


@pytest.mark.parametrize("key", [1.5, True, None, ("a",)])
def test_mon17_a_key_neither_str_nor_int_is_refused_in_a_batch(key: object) -> None:
    """MON-17: observe_many refuses a job key that is not a str or an int (a float, a bool,
    None, a tuple) with observe's TypeError, after folding the triples before it."""
    monitor = Monitor(DeclineDetector(1))
    with pytest.raises(TypeError, match=r"^job_id must be a str or an int, got "):
        monitor.observe_many([("a", 1, 1.0), (key, 1, 1.0)])  # type: ignore[list-item]
    assert list(monitor) == ["a"]


@pytest.mark.parametrize("batch", [False, True], ids=["observe", "observe_many"])
def test_mon14_a_drop_of_exactly_min_delta_is_not_a_decline(batch: bool) -> None:
    """MON-14, DET-1: on the in-place path a score lower than the previous one by exactly
    min_delta (or equal to it, with min_delta 0) is not a decline; a larger drop is."""
    for min_delta, scores in ((0.25, [1.0, 0.75, 0.375]), (0.0, [0.5, 0.5, 0.25])):
        monitor = Monitor(DeclineDetector(1, min_delta=min_delta))
        for step, score in enumerate(scores[:2], start=1):
            if batch:
                assert monitor.observe_many([("a", step, score)]) == []
            else:
                assert not monitor.observe("a", step, score).stopped
        stops = monitor.observe_many([("a", 3, scores[2])])
        assert [(stop.job_id, stop.stop_step) for stop in stops] == [("a", 3)]
