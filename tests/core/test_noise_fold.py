"""The noise-aware rule folded in place (spec NAD-11) against the generic fold, report by report."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import checkpoint_view
from evalstop.core.detectors import Watch, observe, start_watch
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, SPAN, NoiseAwareDetector, NoiseState
from evalstop.core.noise_fold import NoiseFold, noise_folder
from evalstop.core.registry import InPlace

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
    scores that drift with noise from a drawn random stream; a few NaN and infinities, and a
    few finite scores at the ends of the float range (NAD-7's ``SPAN``)."""
    rng = draw(st.randoms(use_true_random=False))
    step, level, out = 0, 0.0, []
    for _ in range(draw(st.integers(0, 60))):
        step = max(0, step + rng.randint(-2, 30))
        level += rng.uniform(-1.0, 0.6)
        special = rng.random()
        if special < 0.05:
            score = rng.choice([math.nan, math.inf, -math.inf])
        elif special < 0.08:
            score = rng.choice([1.7e308, -1.7e308, 1e300, -1e300, 9e307])
        else:
            score = level + rng.gauss(0.0, 0.2)
        out.append((step, score))
    return out


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
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
        assert fold(state, step, score) == math.isfinite(score)
        assert method.fold(detector, step, score) == math.isfinite(score)
        assert repr(InPlace.watch(state)) == repr(watch) == repr(InPlace.watch(method))


@given(detector=DETECTORS, stream=reports(), cut=st.integers(0, 60))
def test_nad11_fold_resumes_from_any_watch(
    detector: NoiseAwareDetector, stream: list[tuple[int, float]], cut: int
) -> None:
    """NAD-11: a fold built from a watch part-way continues exactly as observe does."""
    watch = start_watch(detector)
    for index, (step, score) in enumerate(stream[:cut], start=1):
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
    state, fold = NoiseFold(watch), noise_folder(detector)
    for index, (step, score) in enumerate(stream[cut:], start=cut + 1):
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
        fold(state, step, score)
    assert repr(InPlace.watch(state)) == repr(watch)


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
            watches[i] = observe(detector, watches[i], checkpoint_view(step, score, index=index))
            folds[i].fold(detector, step, score)
    assert [repr(InPlace.watch(fold)) for fold in folds] == [repr(watch) for watch in watches]


def _alarm_after(detector: NoiseAwareDetector, reports: list[tuple[int, float]]) -> bool:
    """Whether the rule holds after the last of ``reports`` (observe, the generic fold)."""
    watch = start_watch(detector)
    for index, (step, score) in enumerate(reports, start=1):
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
    return watch.rule.alarm


@pytest.mark.parametrize(
    ("z", "memory", "min_delta"),
    [(0.5, 0.05, 0.0), (1.0, 0.3, 0.0), (2.25, 0.3, 0.0), (3.0, 1.0, 0.0), (2.25, 0.3, 0.4)],
)
def test_nad11_fold_agrees_at_the_edge_of_firing(z: float, memory: float, min_delta: float) -> None:
    """NAD-11: at the edge of firing (the last score of a run that does not fire and the
    next float below it, which does, found by bisection) the in-place fold's alarm is
    observe's: the two compute the threshold alike to the last bit, not just roughly."""
    detector = NoiseAwareDetector(z=z, memory=memory, warmup_evals=0, min_delta=min_delta)
    prefix = [(10 * i, 0.1 * i + (0.05 if i % 2 else -0.05)) for i in range(1, 13)]
    fires, calm = -100.0, prefix[-1][1]
    assert _alarm_after(detector, [*prefix, (130, fires)])
    assert not _alarm_after(detector, [*prefix, (130, calm)])
    while (middle := (fires + calm) / 2) not in (fires, calm):
        if _alarm_after(detector, [*prefix, (130, middle)]):
            fires = middle
        else:
            calm = middle
    for score, alarm in ((fires, True), (calm, False)):
        fold = NoiseFold(start_watch(detector))
        for step, value in [*prefix, (130, score)]:
            fold.fold(detector, step, value)
        assert fold.alarm is alarm


def test_nad11_a_baseline_equal_to_the_first_score_seeds_no_peak() -> None:
    """NAD-11, DET-11: a baseline equal to the first score seeds nothing (the peak starts at the
    first level, weight 1), in the fold as in observe; one above it seeds the peak (weight 0)."""
    for baseline, peak_weight in ((0.5, 1.0), (0.75, 0.0)):
        detector = NoiseAwareDetector(baseline=baseline, warmup_evals=0)
        watch = observe(detector, start_watch(detector), checkpoint_view(10, 0.5))
        fold = NoiseFold(start_watch(detector))
        fold.fold(detector, 10, 0.5)
        assert repr(InPlace.watch(fold)) == repr(watch)
        assert (fold.peak, fold.peak_weight) == (baseline - 0.5, peak_weight)


def test_nad11_from_any_watch_and_at_step_zero() -> None:
    """NAD-11: the fold equals observe from any watch, not only those a fold reaches: one whose
    rule holds but has not fired (a laxer rule folded it) fires at the next report, a NaN one
    too; and reports at step 0 (elapsed time floored at 1, no time passed) fold alike."""
    detector = NoiseAwareDetector(warmup_evals=0)
    alarmed = attrs.evolve(
        observe(detector, start_watch(detector), checkpoint_view(10, 0.5)).rule, alarm=True
    )
    for score in (math.nan, 0.5):
        watch = Watch(alarmed, 1, 10, 0.5, None)
        fold = NoiseFold(watch)
        fold.fold(detector, 20, score)
        assert repr(InPlace.watch(fold)) == repr(
            observe(detector, watch, checkpoint_view(20, score))
        )
    watch, fold = start_watch(detector), NoiseFold(start_watch(detector))
    for step, score in ((0, 0.5), (0, 0.25), (0, 1.0), (1, 0.0)):
        watch = observe(detector, watch, checkpoint_view(step, score))
        fold.fold(detector, step, score)
        assert repr(InPlace.watch(fold)) == repr(watch)


@pytest.mark.parametrize("keep", ["best", "level"])
def test_nad11_from_any_watch_ties_and_the_kept_checkpoint(keep: str) -> None:
    """NAD-11, DET-4, NAD-10: from a watch that already counts evaluations and holds a best
    checkpoint while its rule has seen no valid score, the first valid score counts one more
    evaluation; with keep="best" a tie keeps the earlier step (in the first report and
    later ones), with keep="level" the kept checkpoint replaces the watch's best; always as
    observe does."""
    detector = NoiseAwareDetector(warmup_evals=0, keep=keep)
    watch = Watch(start_watch(detector).rule, 2, 5, 0.75, None)
    fold = NoiseFold(watch)
    for index, (step, score) in enumerate([(20, 0.75), (30, 0.5), (40, 0.75)], start=3):
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
        fold.fold(detector, step, score)
        assert repr(InPlace.watch(fold)) == repr(watch)
    assert watch.evals == 5
    assert (watch.best_step, watch.best_score) == ((5, 0.75) if keep == "best" else (20, 0.75))


def test_nad4_nad11_the_warm_up_ends_at_warmup_steps() -> None:
    """NAD-4, NAD-11: a report at exactly step ``warmup_steps`` may fire (one step later
    than that it may not have), in the fold as in observe."""
    prefix = [(10 * i, 0.1 * i + (0.05 if i % 2 else -0.05)) for i in range(1, 13)]
    for warmup_steps, alarm in ((130, True), (131, False)):
        detector = NoiseAwareDetector(warmup_evals=0, warmup_steps=warmup_steps)
        watch, fold = start_watch(detector), NoiseFold(start_watch(detector))
        for index, (step, score) in enumerate([*prefix, (130, -100.0)], start=1):
            watch = observe(detector, watch, checkpoint_view(step, score, index=index))
            fold.fold(detector, step, score)
        assert repr(InPlace.watch(fold)) == repr(watch)
        assert watch.rule.alarm is alarm


EXTREME_SCORES = st.one_of(
    st.floats(),  # any float: NaN, infinities, subnormals, the largest finite ones
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308]),
)


@given(
    detector=DETECTORS,
    stream=st.lists(st.tuples(st.integers(0, 10**12), EXTREME_SCORES), max_size=40),
)
def test_nad11_fold_equals_observe_on_extreme_scores(
    detector: NoiseAwareDetector, stream: list[tuple[int, float]]
) -> None:
    """NAD-11: the fold writes update's ``alpha`` as ``-em`` (exact: IEEE rounding is
    symmetric); on any floats (signed zeros, subnormals, scores past ``SPAN`` that the rule
    skips, NAD-7) and any steps (repeated, going back: a zero gap, so a zero ``em``) its watch stays
    observe's, bit for bit (repr tells -0.0 from 0.0)."""
    watch, state, fold = (
        start_watch(detector),
        NoiseFold(start_watch(detector)),
        noise_folder(detector),
    )
    for index, (step, score) in enumerate(stream, start=1):
        watch = observe(detector, watch, checkpoint_view(step, score, index=index))
        assert fold(state, step, score) == math.isfinite(score)
        assert repr(InPlace.watch(state)) == repr(watch)


def _update_before_one_copy(
    detector: NoiseAwareDetector, state: NoiseState, step: int, score: float
) -> NoiseState:
    """``NoiseAwareDetector.update`` as it was written before it ran the fold (the second copy
    of the rule, commit d61fce6), kept here as an oracle, operation for operation."""
    d = detector
    if not math.isfinite(score):
        return state
    if state.origin is None:
        peak, peak_weight = 0.0, 1.0
        if d.baseline is not None and d.baseline - score > 0.0:
            peak, peak_weight = d.baseline - score, 0.0
        return NoiseState(
            evals=1,
            step=step,
            origin=score,
            weight=1.0,
            peak=peak,
            peak_weight=peak_weight,
            kept_step=step,
            kept_score=score,
        )
    value = score - state.origin
    if not -SPAN <= value <= SPAN:
        return state
    gap = max(step - state.step, 0)
    elapsed = max(step, 1)
    alpha = -math.expm1(-gap / (d.memory * elapsed))
    level = state.level + alpha * (value - state.level)
    weight = (1.0 - alpha) ** 2 * state.weight + alpha * alpha
    roughness, differences = state.roughness, state.differences
    if state.evals >= 2:
        roughness += abs(value - 2.0 * state.last + state.before)
        differences += 1
    peak, peak_weight = state.peak, state.peak_weight
    if level > peak:
        peak, peak_weight = level, weight
    evals = state.evals + 1
    alarm = False
    if evals >= d.warmup_evals and step >= d.warmup_steps and differences:
        sigma = roughness / differences / ROUGHNESS_TO_SIGMA
        z = d.z + (d.z**3 + d.z) / (4.0 * differences)
        alarm = peak - level > max(z * sigma * math.sqrt(weight + peak_weight), d.min_delta)
    track = state.track - math.expm1(-gap / (d.keep_memory * elapsed)) * (value - state.track)
    kept = (state.kept_level, state.kept_step, state.kept_score)
    if track > state.kept_level:
        kept = (track, step, score)
    return NoiseState(
        evals,
        step,
        state.origin,
        value,
        state.last,
        level,
        weight,
        roughness,
        differences,
        peak,
        peak_weight,
        alarm,
        track,
        *kept,
    )


@given(
    detector=DETECTORS,
    stream=st.one_of(
        reports(), st.lists(st.tuples(st.integers(0, 10**12), EXTREME_SCORES), max_size=40)
    ),
)
def test_nad11_update_is_the_fold_and_equals_the_second_copy_it_replaced(
    detector: NoiseAwareDetector, stream: list[tuple[int, float]]
) -> None:
    """NAD-11: ``update`` runs the one fold; its state equals, bit for bit (repr tells -0.0
    from 0.0), the state of the separate ``update`` it replaced, after every report of any
    parameters and any floats, and a skipped report (NaN, infinite, past ``SPAN``) returns the
    state object itself, as before (``NAD-7``)."""
    state = old = detector.initial()
    for index, (step, score) in enumerate(stream, start=1):
        before, old_before = state, old
        state = detector.update(state, checkpoint_view(step, score, index=index))
        old = _update_before_one_copy(detector, old, step, score)
        assert repr(state) == repr(old)
        assert (state is before) == (old is old_before)
