"""Keep floors (RGT-6): what the best stopping time leaves when a checkpoint is kept by scores."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from builders import checkpoint_view
from evalstop.core.detectors import observe, start_watch
from evalstop.core.keep_floor import FloorChoice, keep_floors, kept_indices
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.regret import regret_fraction

values = st.floats(-5.0, 5.0, allow_nan=False)


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[int], list[float], list[float]]:
    """Steps, noisy scores (some NaN) and true qualities of one run."""
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    steps = [sum(gaps[: i + 1]) for i in range(n)]
    scores = draw(st.lists(values | st.just(math.nan), min_size=n, max_size=n))
    quality = draw(st.lists(values, min_size=n, max_size=n))
    return steps, scores, quality


def _regret(quality: list[float], index: int | None) -> float:
    value = quality[0] if index is None else quality[index]
    return regret_fraction(max(quality), quality[0], value)


def test_rgt6_best_observed_keep_is_the_prefix_argmax() -> None:
    """RGT-6: the best-observed rule holds the first strictly highest finite score so far."""
    scores = [math.nan, 0.2, 0.5, 0.5, 0.1, 0.7]
    assert kept_indices(range(6), scores, None) == [None, 1, 2, 2, 2, 5]


def test_rgt6_floors_of_a_noisy_spike() -> None:
    """RGT-6: a lucky report fools every keep; the stop floor finds the best stop, the oracle
    stops at the true peak."""
    quality = [0.0, 0.5, 1.0, 0.6, 0.2]
    kept = [0, 1, 1, 1, 1]  # a noisy spike at checkpoint 1 keeps checkpoint 1 from then on
    floors = keep_floors(quality, kept)
    assert floors.hindsight == FloorChoice(None, 1)
    assert floors.stop_floor == FloorChoice(1, 1)  # the earliest of the equal choices
    assert floors.oracle_stop == FloorChoice(2, 1)
    assert keep_floors([0.0, 1.0], [0, 0]).oracle_stop == FloorChoice(None, 1)


@given(runs(), st.sampled_from([None, 0.05, 0.2]), st.data())
def test_rgt6_no_stop_beats_the_stop_floor(
    run: tuple[list[int], list[float], list[float]], memory: float | None, data: st.DataObject
) -> None:
    """RGT-6: any stop (or running to the end) keeping by the rule has at least the floor's
    regret; the floor's own choice attains it."""
    steps, scores, quality = run
    kept = kept_indices(steps, scores, memory)
    floors = keep_floors(quality, kept)
    floor = _regret(quality, floors.stop_floor.kept)
    last = len(quality) - 1
    stop = data.draw(st.integers(0, last))
    detector = _regret(quality, kept[stop] if stop < last else last)
    assert floor <= detector
    assert floor <= _regret(quality, floors.oracle_stop.kept)


@given(runs(), st.sampled_from([0.05, 0.3]))
def test_rgt6_level_keep_is_the_noise_aware_detectors(
    run: tuple[list[int], list[float], list[float]], memory: float
) -> None:
    """RGT-6: with a memory, the kept checkpoint is the one the noise-aware detector keeps
    (NAD-10) after the same reports."""
    steps, scores, _ = run
    rule = NoiseAwareDetector(keep="level", keep_memory=memory)
    watch = start_watch(rule)
    expected: list[int | None] = []
    for step, score in zip(steps, scores, strict=True):
        watch = observe(rule, watch, checkpoint_view(step, score))
        expected.append(None if watch.best_step is None else steps.index(watch.best_step))
    assert kept_indices(steps, scores, memory) == expected
