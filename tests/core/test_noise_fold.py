"""The noise-aware rule folded in place (spec NAD-11) against the generic fold, report by report."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import observe, start_watch
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.noise_fold import NoiseFold, noise_folder

DETECTORS = st.builds(
    NoiseAwareDetector,
    z=st.floats(0.5, 3.0),
    memory=st.floats(0.05, 1.0),
    warmup_evals=st.integers(0, 6),
    warmup_steps=st.integers(0, 50),
    min_delta=st.sampled_from([0.0, 0.01, 0.3]),
    baseline=st.one_of(st.none(), st.floats(-2, 2)),
    keep=st.sampled_from(["best", "level"]),
    keep_memory=st.floats(0.01, 1.0),
)


@st.composite
def reports(draw: st.DrawFn) -> list[tuple[int, float]]:
    """Steps that mostly advance (a few repeat or go back: the fold does not check them) and
    scores that drift with noise from a drawn random stream; a few NaN and infinities."""
    rng = draw(st.randoms(use_true_random=False))
    step, level, out = 0, 0.0, []
    for _ in range(draw(st.integers(0, 60))):
        step = max(0, step + rng.randint(-2, 30))
        level += rng.uniform(-1.0, 0.6)
        special = rng.random() < 0.05
        score = rng.choice([math.nan, math.inf, -math.inf]) if special else level
        out.append((step, score + rng.gauss(0.0, 0.2)))
    return out


def view(index: int, step: int, score: float) -> CheckpointView:
    return CheckpointView(3, JobKind.RLHF, index, step, 7, score, 0.5, None, 0.25)


@given(detector=DETECTORS, stream=reports())
def test_nad11_fold_in_place_equals_observe(
    detector: NoiseAwareDetector, stream: list[tuple[int, float]]
) -> None:
    """NAD-11: after every report the in-place fold's watch equals observe's (every field,
    bit for bit), whatever the parameters, and it says whether the score was finite; the
    same through the folder and through ``NoiseFold.fold``."""
    watch = start_watch(detector)
    state, fold, method = NoiseFold(watch), noise_folder(detector), NoiseFold(watch)
    for index, (step, score) in enumerate(stream, start=1):
        watch = observe(detector, watch, view(index, step, score))
        assert fold(state, step, score) == math.isfinite(score)
        assert method.fold(detector, step, score) == math.isfinite(score)
        assert repr(state.watch) == repr(watch) == repr(method.watch)


@given(detector=DETECTORS, stream=reports(), cut=st.integers(0, 60))
def test_nad11_fold_resumes_from_any_watch(
    detector: NoiseAwareDetector, stream: list[tuple[int, float]], cut: int
) -> None:
    """NAD-11: a fold built from a watch part-way continues exactly as observe does."""
    watch = start_watch(detector)
    for index, (step, score) in enumerate(stream[:cut], start=1):
        watch = observe(detector, watch, view(index, step, score))
    state, fold = NoiseFold(watch), noise_folder(detector)
    for index, (step, score) in enumerate(stream[cut:], start=cut + 1):
        watch = observe(detector, watch, view(index, step, score))
        fold(state, step, score)
    assert repr(state.watch) == repr(watch)


@given(detectors=st.tuples(DETECTORS, DETECTORS), stream=reports())
def test_nad11_fold_method_with_two_rules_interleaved(
    detectors: tuple[NoiseAwareDetector, NoiseAwareDetector], stream: list[tuple[int, float]]
) -> None:
    """NAD-11: ``NoiseFold.fold`` keeps the last rule's folder; two rules folded in turn
    each still equal observe."""
    watches = [start_watch(detector) for detector in detectors]
    folds = [NoiseFold(watch) for watch in watches]
    for index, (step, score) in enumerate(stream, start=1):
        for i, detector in enumerate(detectors):
            watches[i] = observe(detector, watches[i], view(index, step, score))
            folds[i].fold(detector, step, score)
    assert [repr(fold.watch) for fold in folds] == [repr(watch) for watch in watches]
