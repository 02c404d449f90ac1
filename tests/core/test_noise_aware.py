"""The noise-aware detector (NAD-*): hand-worked traces and property tests."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import checkpoint_view
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, SPAN, NoiseAwareDetector, NoiseState


def run(
    detector: NoiseAwareDetector, scores: Sequence[float], steps: Sequence[int] | None = None
) -> tuple[NoiseState, int | None]:
    """The final state and the first step at which the detector fires (None: never)."""
    steps = [10 * (i + 1) for i in range(len(scores))] if steps is None else steps
    state, fired = detector.initial(), None
    for step, score in zip(steps, scores, strict=True):
        state = detector.update(state, checkpoint_view(step, score))
        if fired is None and detector.fired(state):
            fired = step
    return state, fired


RISE_THEN_FALL = [0.0, 0.5, 0.8, 1.0, 1.05, 1.0, 0.8, 0.5, 0.2, 0.0, -0.2, -0.4]


def test_nad1_noise_is_the_scaled_mean_absolute_second_difference() -> None:
    """NAD-1: the noise is the scaled mean absolute second difference."""
    scores = [0.0, 1.0, 0.0, 1.0]  # second differences -2, +2
    state, _ = run(NoiseAwareDetector(), scores)
    assert state.differences == 2
    assert state.roughness == pytest.approx(4.0)
    assert state.roughness / state.differences / ROUGHNESS_TO_SIGMA == pytest.approx(
        2.0 / (math.sqrt(6.0) * math.sqrt(2.0 / math.pi))
    )


def test_nad2_level_memory_is_a_fraction_of_elapsed_steps() -> None:
    """NAD-2: the level's memory is a fraction of the elapsed steps."""
    detector = NoiseAwareDetector(memory=0.5)
    first = detector.update(detector.initial(), checkpoint_view(10, 0.0))
    second = detector.update(first, checkpoint_view(20, 1.0))
    alpha = 1.0 - math.exp(-10 / (0.5 * 20))
    assert second.level == pytest.approx(alpha)
    assert second.weight == pytest.approx((1 - alpha) ** 2 + alpha**2)


def test_nad3_peak_tracks_the_highest_level_and_baseline_seeds_it() -> None:
    """NAD-3: the peak is the highest level; a baseline seeds it."""
    state, _ = run(NoiseAwareDetector(), [0.0, 1.0, 2.0, 1.0])
    assert state.peak > state.level
    seeded = NoiseAwareDetector(baseline=5.0).update(NoiseState(), checkpoint_view(10, 1.0))
    assert (seeded.peak, seeded.peak_weight) == (4.0, 0.0)
    below = NoiseAwareDetector(baseline=0.0).update(NoiseState(), checkpoint_view(10, 1.0))
    assert (below.peak, below.peak_weight) == (0.0, 1.0)


def test_nad4_fires_on_a_collapse_and_not_on_a_noisy_plateau() -> None:
    """NAD-4: the rule: fire on a collapse, hold back for warm-up, min_delta, baseline."""
    _, fired = run(NoiseAwareDetector(), RISE_THEN_FALL)
    assert fired is not None and fired > 50
    plateau = [0.0, 0.6, 0.9, 1.0] + [1.0 + 0.03 * (-1) ** i for i in range(30)]
    assert run(NoiseAwareDetector(), plateau)[1] is None


def test_nad4_warm_up_and_min_delta_hold_the_fire_back() -> None:
    """NAD-4: the rule: fire on a collapse, hold back for warm-up, min_delta, baseline."""
    fired = run(NoiseAwareDetector(), RISE_THEN_FALL)[1]
    assert fired is not None
    later = run(NoiseAwareDetector(warmup_steps=fired + 10), RISE_THEN_FALL)[1]
    assert later is not None and later >= fired + 10
    assert run(NoiseAwareDetector(warmup_evals=len(RISE_THEN_FALL) + 1), RISE_THEN_FALL)[1] is None
    assert run(NoiseAwareDetector(min_delta=10.0), RISE_THEN_FALL)[1] is None


def test_nad4_baseline_stops_a_run_that_stays_far_below_it() -> None:
    """NAD-4: the rule: fire on a collapse, hold back for warm-up, min_delta, baseline."""
    flat = [0.0, 0.01, 0.0, 0.01, 0.0, 0.01, 0.0, 0.01]
    assert run(NoiseAwareDetector(), flat)[1] is None
    assert run(NoiseAwareDetector(baseline=1.0, warmup_evals=5), flat)[1] == 50
    assert run(NoiseAwareDetector(baseline=1.0, warmup_evals=4), flat)[1] == 40


def test_nad4_the_warmup_decides_when_a_five_checkpoint_collapse_can_stop() -> None:
    """NAD-4, NAD-9: a steady fall on a 5-point curve fires at its 4th checkpoint with
    ``warmup_evals=4``, a stop before the run's end; the default warm-up (5) fires at its
    last checkpoint at the earliest."""
    short = [1.0, 1.02, 0.6, 0.2, -0.2]
    assert run(NoiseAwareDetector(warmup_evals=4), short)[1] == 40
    assert run(NoiseAwareDetector(), short)[1] == 50


scores_strategy = st.lists(
    st.integers(min_value=-512, max_value=512).map(lambda n: n / 64), min_size=3, max_size=40
)


@given(scores_strategy, st.integers(min_value=-4, max_value=4), st.integers(-640, 640))
def test_nad6_positive_rescaling_and_shift_change_no_decision(
    scores: list[float], power: int, shift: int
) -> None:
    """NAD-6: a positive rescaling and a shift of every score change no decision."""
    detector = NoiseAwareDetector()
    scale = 2.0**power
    moved = [scale * s + shift / 64 for s in scores]
    assert run(detector, scores)[1] == run(detector, moved)[1]
    keeper = NoiseAwareDetector(keep="level")
    assert run(keeper, scores)[0].kept_step == run(keeper, moved)[0].kept_step


@given(scores_strategy, st.data())
def test_nad7_a_nan_report_changes_no_decision(scores: list[float], data: st.DataObject) -> None:
    """NAD-7: a NaN or infinite report changes no decision."""
    detector = NoiseAwareDetector()
    steps = [10 * (i + 1) for i in range(len(scores))]
    at = data.draw(st.integers(min_value=0, max_value=len(scores)))
    bad = data.draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    nan_step = 10 * at + 5
    with_nan = [*scores[:at], bad, *scores[at:]]
    nan_steps = [*steps[:at], nan_step, *steps[at:]]
    fired = run(detector, scores, steps)[1]
    assert run(detector, with_nan, nan_steps)[1] == fired
    keeper = NoiseAwareDetector(keep="level")
    kept = keeper.kept(run(keeper, scores, steps)[0])
    assert keeper.kept(run(keeper, with_nan, nan_steps)[0]) == kept


@given(scores_strategy, st.data())
def test_nad7_a_score_beyond_the_span_changes_no_decision(
    scores: list[float], data: st.DataObject
) -> None:
    """NAD-7: a finite score more than SPAN from the first valid score leaves the state as it
    was (its differences would overflow): no decision changes and every number stays finite."""
    detector = NoiseAwareDetector()
    steps = [10 * (i + 1) for i in range(len(scores))]
    at = data.draw(st.integers(min_value=1, max_value=len(scores)))
    far = data.draw(st.sampled_from([1.7e308, -1.7e308, SPAN * 2.0 + scores[0], -SPAN * 1.5]))
    with_far = [*scores[:at], far, *scores[at:]]
    far_steps = [*steps[:at], 10 * at + 5, *steps[at:]]
    state, fired = run(detector, with_far, far_steps)
    assert fired == run(detector, scores, steps)[1]
    numbers = [v for v in attrs.astuple(state) if isinstance(v, float)]
    assert all(math.isfinite(v) for v in numbers)
    # within the span the rule folds it: the same score shifted to the span's edge counts
    edge = detector.update(run(detector, scores[:1], steps[:1])[0], checkpoint_view(11, SPAN))
    assert edge.evals == 2 and math.isfinite(edge.level)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=300))
def test_nad5_state_is_a_fixed_set_of_numbers(scores: list[float]) -> None:
    """NAD-5: the state is a fixed set of plain numbers."""
    state, _ = run(NoiseAwareDetector(), scores)
    fields = attrs.fields(NoiseState)
    assert len(fields) == 16
    for field in fields:
        assert isinstance(getattr(state, field.name), bool | int | float | type(None))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"z": 0.0},
        {"z": math.nan},
        {"memory": -1.0},
        {"warmup_evals": -1},
        {"warmup_steps": -2},
        {"min_delta": math.inf},
        {"baseline": math.nan},
        {"keep": "last"},
        {"keep_memory": 0.0},
    ],
)
def test_nad8_bad_parameters_are_value_errors(kwargs: dict[str, float]) -> None:
    """NAD-8: parameters are validated and non-default knobs show in the name."""
    with pytest.raises(ValueError):
        NoiseAwareDetector(**kwargs)  # type: ignore[arg-type]


def test_nad8_name_shows_non_default_knobs() -> None:
    """NAD-8: parameters are validated and non-default knobs show in the name."""
    assert NoiseAwareDetector().name == "noise-aware(z=2,memory=0.3,warmup=5)"
    assert NoiseAwareDetector(min_delta=0.5, baseline=1.0).name == (
        "noise-aware(z=2,memory=0.3,warmup=5,min_delta=0.5,baseline=1)"
    )
    assert NoiseAwareDetector(keep_memory=0.1).name.endswith(",keep=level(0.1))")
    assert NoiseAwareDetector(keep="best").name.endswith(",keep=best)")


def test_nad9_defaults_are_the_committed_simulator_choice() -> None:
    """NAD-9: the defaults are the choice printed in docs/scripts/tune_noise_aware.out."""
    detector = NoiseAwareDetector()
    assert (detector.z, detector.memory, detector.warmup_evals) == (2.0, 0.3, 5)
    assert (detector.keep, detector.keep_memory) == ("level", 0.05)
    out = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "tune_noise_aware.out"
    chosen = [line for line in out.read_text(encoding="utf-8").splitlines() if "chosen:" in line]
    assert chosen
    assert all(
        line.split("chosen: ")[1].startswith(
            f"z={detector.z:g} memory={detector.memory:g} warmup={detector.warmup_evals} "
            f"keep=level({detector.keep_memory:g})"
        )
        for line in chosen
    )


def test_nad5_monitor_state_round_trips_through_json() -> None:
    """NAD-5: the state is plain numbers, so a saved monitor resumes with the same decisions."""
    from evalstop.core.registry import make_detector
    from evalstop.live.monitor import Monitor

    detector = make_detector("noise-aware")
    assert detector == NoiseAwareDetector()
    first, second = Monitor(detector), Monitor(detector)
    half = len(RISE_THEN_FALL) // 2
    for i, score in enumerate(RISE_THEN_FALL[:half]):
        first.observe("run", 10 * (i + 1), score)
        second.observe("run", 10 * (i + 1), score)
    resumed = Monitor.from_json(second.to_json())
    for i, score in enumerate(RISE_THEN_FALL[half:], start=half):
        assert first.observe("run", 10 * (i + 1), score) == resumed.observe(
            "run", 10 * (i + 1), score
        )


def _track_argmax(scores: Sequence[float], steps: Sequence[int], memory: float) -> int:
    """An independent oracle for NAD-10: the first step where the smoothed level peaks."""
    track, best, best_step, previous = 0.0, 0.0, steps[0], steps[0]
    for step, score in zip(steps[1:], scores[1:], strict=True):
        alpha = -math.expm1(-(step - previous) / (memory * max(step, 1)))
        track += alpha * (score - scores[0] - track)
        previous = step
        if track > best:
            best, best_step = track, step
    return best_step


def test_nad10_level_keep_ignores_a_lucky_spike_the_argmax_keeps() -> None:
    """NAD-10: keep="level" keeps where the smoothed level peaks, not the lucky spike."""
    from evalstop.core.detectors import observe, start_watch

    steps = [1000 + 10 * i for i in range(10)]
    scores = [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2]
    kept_by = {}
    for keep in ("best", "level"):
        detector = NoiseAwareDetector(keep=keep, keep_memory=0.2)
        watch = start_watch(detector)
        for step, score in zip(steps, scores, strict=True):
            watch = observe(detector, watch, checkpoint_view(step, score))
        kept_by[keep] = (watch.best_step, watch.best_score)
    assert kept_by["best"] == (1030, 2.0)
    assert kept_by["level"] == (1090, 1.2)
    assert _track_argmax(scores, steps, 0.2) == 1090


@given(scores_strategy, st.sampled_from([0.05, 0.2, 1.0]))
def test_nad10_kept_step_is_the_smoothed_levels_first_argmax(
    scores: list[float], memory: float
) -> None:
    """NAD-10: the kept checkpoint is the first report where the keep level is highest."""
    from evalstop.core.detectors import observe, start_watch

    steps = [10 * (i + 1) for i in range(len(scores))]
    detector = NoiseAwareDetector(keep="level", keep_memory=memory)
    watch = start_watch(detector)
    for step, score in zip(steps, scores, strict=True):
        watch = observe(detector, watch, checkpoint_view(step, score))
        assert watch.best_step is not None
    expected = _track_argmax(scores, steps, memory)
    assert watch.best_step == expected
    assert watch.best_score == scores[steps.index(expected)]
    assert NoiseAwareDetector(keep="best").kept(watch.rule) is None
