"""Detectors: hand-worked traces, a naive reference, O(1) state, observable only (DET-*)."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import make_job, simulate, with_hidden_truth
from evalstop.core.boundary import CheckpointView, Verdict
from evalstop.core.detectors import (
    DeclineDetector,
    Detector,
    LossPlateau,
    Never,
    StopAtProgress,
    Watch,
    observe,
    start_watch,
    verdict_of,
)
from evalstop.core.model import JobKind
from evalstop.core.policies import BASE_POLICIES
from evalstop.core.wrapper import evalstop
from evalstop.engine.log import LogKind

NAN, INF = math.nan, math.inf


def report(
    index: int,
    score: float,
    *,
    loss: float = 1.0,
    progress: float = 0.0,
    job_id: int = 1,
) -> CheckpointView:
    """Checkpoint ``index`` (1-based) at step 10 * index."""
    return CheckpointView(
        job_id=job_id,
        kind=JobKind.RLHF,
        index=index,
        step=10 * index,
        time=index,
        eval_score=score,
        loss=loss,
        proxy_reward=None,
        estimated_progress=progress,
    )


def fold(
    detector: Detector[Any],
    scores: Sequence[float],
    *,
    losses: Sequence[float] | None = None,
    progress: Sequence[float] | None = None,
) -> list[Verdict]:
    """The verdict after each checkpoint of a job reporting ``scores``."""
    watch: Watch[Any] = start_watch(detector)
    verdicts = []
    for i, score in enumerate(scores):
        obs = report(
            i + 1,
            score,
            loss=1.0 if losses is None else losses[i],
            progress=0.0 if progress is None else progress[i],
        )
        watch = observe(detector, watch, obs)
        verdicts.append(verdict_of(detector, watch))
    return verdicts


def fired_at(verdicts: Sequence[Verdict]) -> int | None:
    """1-based checkpoint at which the verdict first reads fired."""
    for i, verdict in enumerate(verdicts):
        if verdict.fired:
            return i + 1
    return None


# --- DeclineDetector: hand-worked traces -------------------------------------------------


def test_det1_det2_fires_exactly_at_kth_consecutive_decline() -> None:
    """DET-1, DET-2: 1, 2, 3 rise; 2 is decline 1; 1 is decline 2: k=2 fires at checkpoint 5."""
    verdicts = fold(DeclineDetector(2), [1, 2, 3, 2, 1])
    assert [v.fired for v in verdicts] == [False, False, False, False, True]
    assert verdicts[-1].fired_step == 50
    assert fired_at(fold(DeclineDetector(1), [1, 2, 3, 2, 1])) == 4
    assert fired_at(fold(DeclineDetector(3), [1, 2, 3, 2, 1])) is None
    assert fired_at(fold(DeclineDetector(3), [1, 2, 3, 2, 1, 0])) == 6


def test_det1_decline_is_strict() -> None:
    """DET-1: an equal score is not a decline."""
    assert fired_at(fold(DeclineDetector(1), [2, 2, 2, 2])) is None
    assert fired_at(fold(DeclineDetector(1), [2, 2, 1.999])) == 3


def test_det2_ties_and_rises_reset_the_count() -> None:
    """DET-2: 3 -> 2 (1), tie 2 (reset 0), 1 (1), rise 5 (0), 4 (1): k=2 never fires."""
    assert fired_at(fold(DeclineDetector(2), [3, 2, 2, 1, 5, 4])) is None
    # ... and one more decline after the last reset does fire.
    assert fired_at(fold(DeclineDetector(2), [3, 2, 2, 1, 5, 4, 3])) == 7


def test_det2_first_score_starts_at_zero() -> None:
    """DET-2: the first valid score is never a decline, whatever its value."""
    assert fired_at(fold(DeclineDetector(1), [-1e9])) is None
    assert fired_at(fold(DeclineDetector(1), [NAN, -1e9])) is None


def test_det2_k_must_be_positive() -> None:
    """DET-2: k >= 1."""
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        DeclineDetector(0)


@pytest.mark.parametrize("missing", [NAN, INF, -INF])
def test_det3_missing_scores_are_skipped(missing: float) -> None:
    """DET-3: 3, 2 (decline 1), missing (skipped, count kept), 1 < 2 (decline 2): fires at 4."""
    verdicts = fold(DeclineDetector(2), [3, 2, missing, 1])
    assert fired_at(verdicts) == 4
    assert verdicts[-1].fired_step == 40
    assert [v.evals for v in verdicts] == [1, 2, 2, 3]  # a missing score is not an evaluation


def test_det3_missing_score_is_not_a_reset_nor_a_decline() -> None:
    """DET-3: NaN after a decline neither resets nor counts; the next compare is with 2."""
    # 3, 2 (1), NaN, 2.5 (rise vs 2: reset), 2 (1): k=2 does not fire
    assert fired_at(fold(DeclineDetector(2), [3, 2, NAN, 2.5, 2])) is None
    # NaN alone never fires, however many
    assert fired_at(fold(DeclineDetector(1), [NAN] * 6)) is None
    assert fold(DeclineDetector(1), [NAN] * 6)[-1].best_step is None
    # a missing first score: the comparison starts at the first valid one
    assert fired_at(fold(DeclineDetector(1), [NAN, 5, 4])) == 3


def test_det4_saved_checkpoint_is_k_before_a_strict_decline() -> None:
    """DET-4: peak at checkpoint 2 then 2 strict declines: saved = checkpoint 2 (k before)."""
    verdicts = fold(DeclineDetector(2), [1, 3, 2, 1])
    last = verdicts[-1]
    assert (last.fired, last.fired_step) == (True, 40)
    assert (last.best_step, last.best_score) == (20, 3)


def test_det4_saved_checkpoint_is_the_best_so_far() -> None:
    """DET-4: the best is over the whole history up to the trigger, not just the last k."""
    verdicts = fold(DeclineDetector(2), [5, 1, 2, 1.5, 1.0])
    last = verdicts[-1]
    assert (last.fired_step, last.best_step, last.best_score) == (50, 10, 5)


def test_det4_ties_keep_the_earlier_checkpoint() -> None:
    """DET-4: strictly higher replaces the best; a tie keeps the earlier step."""
    last = fold(DeclineDetector(2), [3, 3, 2, 1])[-1]
    assert (last.best_step, last.best_score) == (10, 3)
    # NaN never becomes the best
    last = fold(DeclineDetector(2), [NAN, 1, NAN, 0.5, 0.2])[-1]
    assert (last.best_step, last.best_score, last.fired_step) == (20, 1, 50)


def test_det5_fired_latches() -> None:
    """DET-5: after firing at checkpoint 3, rising scores never clear the fired step."""
    verdicts = fold(DeclineDetector(2), [3, 2, 1, 5, 6, 7])
    assert [v.fired for v in verdicts] == [False, False, True, True, True, True]
    assert {v.fired_step for v in verdicts[2:]} == {30}
    # the best keeps being tracked after the trigger, the fired step does not move
    assert verdicts[-1].best_step == 60


def test_det5_latching_for_every_detector() -> None:
    """DET-5: the watch's fired step latches even when the rule's own state un-fires."""

    @attrs.frozen
    class Flicker:
        """A rule that is 'fired' exactly at odd checkpoints."""

        @property
        def name(self) -> str:
            return "flicker"

        def initial(self) -> int:
            return 0

        def update(self, state: int, obs: CheckpointView) -> int:
            return obs.index

        def fired(self, state: int) -> bool:
            return state % 2 == 1

    verdicts = fold(Flicker(), [1, 2, 3, 4])
    assert [v.fired for v in verdicts] == [True] * 4
    assert {v.fired_step for v in verdicts} == {10}


def naive_decline_trigger(scores: Sequence[float], k: int) -> tuple[int | None, int | None]:
    """Reference: (checkpoint of the k-th consecutive strict decline, best checkpoint then)."""
    valid = [(i + 1, s) for i, s in enumerate(scores) if math.isfinite(s)]
    for j in range(k, len(valid)):
        window = valid[j - k : j + 1]
        if all(b[1] < a[1] for a, b in itertools.pairwise(window)):
            upto = valid[: j + 1]
            best = max(upto, key=lambda item: (item[1], -item[0]))
            return valid[j][0], best[0]
    return None, None


SCORES = st.lists(
    st.one_of(
        st.integers(-3, 3).map(float),
        st.sampled_from([NAN, INF, -INF]),
    ),
    max_size=25,
)


@given(SCORES, st.integers(1, 4))
def test_det2_det3_det4_match_naive_reference(scores: list[float], k: int) -> None:
    """DET-2, DET-3, DET-4: the fold fires where a naive scan finds k strict declines in a row
    (skipping missing scores), and saves the best checkpoint up to the trigger."""
    verdicts = fold(DeclineDetector(k), scores)
    trigger, best = naive_decline_trigger(scores, k)
    assert fired_at(verdicts) == trigger
    if trigger is not None:
        at = verdicts[trigger - 1]
        assert at.fired_step == 10 * trigger
        assert at.best_step == (None if best is None else 10 * best)
        assert verdicts[-1].fired_step == 10 * trigger  # DET-5
    assert [v.evals for v in verdicts] == [
        sum(math.isfinite(s) for s in scores[: i + 1]) for i in range(len(scores))
    ]


@given(
    st.lists(st.floats(-1e6, 1e6), max_size=30).map(sorted),
    st.integers(1, 5),
    st.lists(st.integers(0, 29), max_size=5),
)
def test_det2_never_fires_on_a_monotone_run(
    scores: list[float], k: int, nan_positions: list[int]
) -> None:
    """DET-2, DET-3: a non-decreasing run (even with NaN holes) never fires."""
    for position in nan_positions:
        if position < len(scores):
            scores[position] = NAN
    verdicts = fold(DeclineDetector(k), scores)
    assert not any(v.fired for v in verdicts)


@given(
    st.lists(st.floats(-100, 100), min_size=1, max_size=10),
    st.integers(1, 5),
)
def test_det4_strict_peak_then_k_strict_declines(rise: list[float], k: int) -> None:
    """DET-4: strictly rising to a peak then k strict declines: fires at the k-th decline and
    saves the peak, which is the checkpoint k evaluations before the trigger."""
    ups = sorted(set(rise))
    peak = ups[-1]
    scores = [*ups, *(peak - (i + 1) for i in range(k))]
    verdicts = fold(DeclineDetector(k), scores)
    assert fired_at(verdicts) == len(scores)
    last = verdicts[-1]
    assert last.best_step == 10 * (len(scores) - k)
    assert last.best_score == peak


# --- baselines --------------------------------------------------------------------------


def test_det6_stop_at_progress_fires_at_first_checkpoint_past_fraction() -> None:
    """DET-6: progress 0.25, 0.5, 0.75, 1.0 with f = 0.65: fires at checkpoint 3; with f = 0.5
    at checkpoint 2 (at least f)."""
    progress = [0.25, 0.5, 0.75, 1.0]
    scores = [1.0, 2.0, 3.0, 4.0]
    assert fired_at(fold(StopAtProgress(0.65), scores, progress=progress)) == 3
    assert fired_at(fold(StopAtProgress(0.5), scores, progress=progress)) == 2
    assert fired_at(fold(StopAtProgress(1.0), scores, progress=progress)) == 4
    verdicts = fold(StopAtProgress(0.65), scores, progress=progress)
    assert verdicts[-1].fired_step == 30  # latched (DET-5)
    assert verdicts[-1].best_step == 40  # the best keeps being tracked
    assert StopAtProgress().fraction == 0.65


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.01, NAN])
def test_det6_fraction_validated(fraction: float) -> None:
    """DET-6: f is in (0, 1]."""
    with pytest.raises(ValueError, match="fraction"):
        StopAtProgress(fraction)


def test_det6_progress_is_estimated_so_long_estimates_never_fire() -> None:
    """DET-6: in the engine, progress is service over the *estimated* duration, capped at 1.

    Job 1 (estimate 40 = its true length): progress .25, .5, .75, 1 -> stopped at checkpoint 3.
    Job 2 (estimate 400, ten times too long): progress .025 .. .1 -> finishes, never fires.
    Job 3 (estimate 10, four times too short): progress capped at 1 -> fires at checkpoint 1.
    """
    policy = evalstop(BASE_POLICIES["fifo"], StopAtProgress(0.65))
    jobs = [
        make_job(1, scores=[0.1, 0.2, 0.3, 0.4], duration=40, estimate=40),
        make_job(2, scores=[0.1, 0.2, 0.3, 0.4], duration=40, estimate=400),
        make_job(3, scores=[0.1, 0.2, 0.3, 0.4], duration=40, estimate=10),
    ]
    sim = simulate(policy, jobs, total_gpus=3)
    ended = sim.state.ended_jobs()
    assert {j: s.value for j, s in ended.items()} == {1: "stopped", 2: "finished", 3: "stopped"}
    stops = {r.job_id: r for r in sim.log if r.kind is LogKind.STOP}
    assert (stops[1].time, stops[1].index, stops[1].step) == (30, 3, 30)
    assert (stops[3].time, stops[3].index, stops[3].step) == (10, 1, 10)


def test_det7_loss_plateau_hand_worked() -> None:
    """DET-7: patience 2, min_delta 0.1.

    1.0 best; 0.95 not below 0.9 (stale 1); 0.85 below 0.9 (best, stale 0); 0.84 not below
    0.765 (stale 1); 0.8 (stale 2): fires at checkpoint 5.
    """
    losses = [1.0, 0.95, 0.85, 0.84, 0.8]
    verdicts = fold(LossPlateau(2, 0.1), [0.0] * 5, losses=losses)
    assert fired_at(verdicts) == 5
    assert fired_at(fold(LossPlateau(3, 0.1), [0.0] * 5, losses=losses)) is None


def test_det7_improvement_must_exceed_min_delta_of_magnitude() -> None:
    """DET-7: the threshold is min_delta * |best|, also for negative losses; equal is stale."""
    # best -1.0: improves only below -1.1
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 2, losses=[-1.0, -1.1])) == 2
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 2, losses=[-1.0, -1.11])) is None
    # best 2.0: the threshold is 2.0 - 0.1 * 2.0 = 1.8, so 1.9 is stale and 1.75 improves
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 2, losses=[2.0, 1.9])) == 2
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 2, losses=[2.0, 1.75])) is None
    # min_delta 0: any strict fall improves, a tie does not
    assert fired_at(fold(LossPlateau(1, 0.0), [0.0] * 3, losses=[1.0, 0.9, 0.8])) is None
    assert fired_at(fold(LossPlateau(1, 0.0), [0.0] * 2, losses=[1.0, 1.0])) == 2


def test_det7_non_finite_losses_are_skipped() -> None:
    """DET-7: NaN and infinite losses neither improve nor count as stale evaluations."""
    losses = [1.0, NAN, INF, -INF, NAN, 0.99]
    assert fired_at(fold(LossPlateau(2, 0.1), [0.0] * 6, losses=losses)) is None
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 6, losses=losses)) == 6
    assert fired_at(fold(LossPlateau(1, 0.1), [0.0] * 3, losses=[NAN, NAN, 5.0])) is None
    with pytest.raises(ValueError, match="patience"):
        LossPlateau(0)


def test_det_never_detector() -> None:
    """DET-2: the Never baseline never fires, however the scores fall."""
    assert fired_at(fold(Never(), [5, 4, 3, 2, 1, 0])) is None


# --- O(1) state --------------------------------------------------------------------------


def deep_size(value: object) -> int:
    """Bytes of ``value`` and everything it holds (attrs values, tuples, numbers, strings)."""
    size = sys.getsizeof(value)
    cls = type(value)
    if attrs.has(cls):
        size += sum(deep_size(getattr(value, a.name)) for a in attrs.fields(cls))
    elif isinstance(value, tuple | list):
        size += sum(deep_size(item) for item in value)
    return size


def shape(value: object) -> object:
    """The structure of a state: attrs classes with their fields, tuple lengths, scalars."""
    cls = type(value)
    if attrs.has(cls):
        fields = {a.name: shape(getattr(value, a.name)) for a in attrs.fields(cls)}
        return (cls.__name__, fields)
    if isinstance(value, tuple | list):
        return (type(value).__name__, [shape(item) for item in value])
    assert value is None or isinstance(value, int | float | str)
    return "scalar"


DETECTORS: list[Detector[Any]] = [
    DeclineDetector(2),
    DeclineDetector(10_000),
    StopAtProgress(0.65),
    LossPlateau(3, 0.01),
    LossPlateau(20_000, 0.0),
    Never(),
]


@pytest.mark.parametrize("detector", DETECTORS, ids=lambda d: d.name)
@pytest.mark.parametrize("pattern", ["falling", "rising", "zigzag"])
def test_det8_state_size_independent_of_observations(detector: Detector[Any], pattern: str) -> None:
    """DET-8: after 10,000 observations a watch has the same fields and size as after 10."""

    def score(i: int) -> float:
        if pattern == "falling":
            return -float(i)
        if pattern == "rising":
            return float(i)
        return float(i % 2) + (NAN if i % 7 == 0 else 0.0)

    watch: Watch[Any] = start_watch(detector)
    sizes, shapes = {}, {}
    for i in range(10_000):
        obs = report(i + 1, score(i), loss=1.0 / (i + 1), progress=min(1.0, i / 5_000))
        watch = observe(detector, watch, obs)
        if i + 1 in (10, 10_000):
            sizes[i + 1], shapes[i + 1] = deep_size(watch), shape(watch)
    # a field may switch from None to a number (e.g. best_step), but nothing grows
    assert sizes[10_000] <= sizes[10] + 16
    assert shapes[10_000] == shapes[10]
    assert watch.evals <= 10_000


# --- observable only ---------------------------------------------------------------------


@given(
    scores=st.lists(st.one_of(st.integers(-3, 3).map(float), st.just(NAN)), min_size=1, max_size=8),
    hidden=st.tuples(
        st.integers(1, 10_000),
        st.booleans(),
        st.floats(-10, 10),
        st.floats(-5, 5),
    ),
    k=st.integers(1, 3),
    base=st.sampled_from(sorted(BASE_POLICIES)),
)
def test_det9_bnd4_equal_observations_equal_verdicts_and_schedules(
    scores: list[float],
    hidden: tuple[int, bool, float, float],
    k: int,
    base: str,
) -> None:
    """DET-9, BND-4: two jobs with equal observations and different hidden truth (steps,
    hacking label, true quality, peak) get the same verdicts, and swapping one for the other
    in a workload changes nothing in the schedule."""
    total_steps, hacking, level, peak = hidden
    job = make_job(1, scores=scores, duration=10 * len(scores) + 3, gpus=2)
    twin = with_hidden_truth(
        job,
        total_steps=total_steps,
        hacking=hacking,
        quality=[level + i for i in range(len(scores))],
        peak_fraction=peak,
    )
    assert twin.truth != job.truth
    detector = DeclineDetector(k)
    views = [
        report(i + 1, o.eval_score, loss=o.loss, progress=0.1 * i)
        for i, o in enumerate(job.observations)
    ]
    twin_views = [
        report(i + 1, o.eval_score, loss=o.loss, progress=0.1 * i)
        for i, o in enumerate(twin.observations)
    ]
    watch, twin_watch = start_watch(detector), start_watch(detector)
    for a, b in zip(views, twin_views, strict=True):
        watch, twin_watch = observe(detector, watch, a), observe(detector, twin_watch, b)
        assert verdict_of(detector, watch) == verdict_of(detector, twin_watch)

    others = [
        make_job(2, submit=5, scores=[0.3, 0.2, 0.1], gpus=1, estimate=15),
        make_job(3, submit=5, scores=[0.1, 0.2], gpus=3, estimate=500),
    ]
    policy = evalstop(BASE_POLICIES[base], detector)
    logs = [
        [tuple(r) for r in simulate(policy, [j, *others], total_gpus=3).log] for j in (job, twin)
    ]
    # NaN != NaN: compare the logs' text
    assert repr(logs[0]) == repr(logs[1])


@pytest.mark.parametrize("bad", [math.nan, -0.01, math.inf])
def test_det7_lossplateau_rejects_a_bad_min_delta(bad: float) -> None:
    """DET-7: min_delta is a finite number >= 0; the error names the field and the value."""
    with pytest.raises(ValueError, match="min_delta"):
        LossPlateau(min_delta=bad)


def test_det1_min_delta_makes_small_drops_ties() -> None:
    """DET-1, DET-2: with min_delta a drop must exceed it to count; smaller drops reset."""
    small = [0.5, 0.49, 0.48, 0.47]  # drops of 0.01
    assert fold(DeclineDetector(2), small)[-1].fired
    assert not any(v.fired for v in fold(DeclineDetector(2, min_delta=0.02), small))
    big = [0.5, 0.4, 0.3]
    assert fold(DeclineDetector(2, min_delta=0.02), big)[-1].fired
    assert DeclineDetector(2, min_delta=0.02).name == "evalstop(k=2,min_delta=0.02)"
    for bad in (-0.1, math.inf, math.nan):
        with pytest.raises(ValueError, match="min_delta"):
            DeclineDetector(2, min_delta=bad)
    from evalstop.core.registry import make_detector

    assert make_detector("evalstop", min_delta=0.02) == DeclineDetector(2, 0.02)
    with pytest.raises(ValueError, match="--warmup-evals"):
        make_detector("evalstop", warmup_evals=3)


def test_det11_warmup_steps_hold_the_decline_rule_back() -> None:
    """DET-11: reports before warmup_steps are not counted; the watch still keeps the best."""
    scores = [0.5, 0.4, 0.3, 0.2, 0.3, 0.2, 0.1]  # steps 10..70
    assert fired_at(fold(DeclineDetector(2), scores)) == 3
    held = fold(DeclineDetector(2, warmup_steps=40), scores)
    assert fired_at(held) == 7  # 0.2 at step 40 starts the count; 0.3 resets; 0.2, 0.1 fire
    assert held[-1].best_step == 10 and held[-1].best_score == 0.5
    assert DeclineDetector(2, warmup_steps=40).name == "evalstop(k=2,warmup_steps=40)"
    with pytest.raises(ValueError, match="warmup_steps"):
        DeclineDetector(2, warmup_steps=-1)


def test_det11_lossplateau_warmup_and_baseline() -> None:
    """DET-11: LossPlateau ignores losses before warmup_steps; a baseline seeds its best."""
    flat = [0.0] * 6
    losses = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert fired_at(fold(LossPlateau(3), flat, losses=losses)) == 4
    assert fired_at(fold(LossPlateau(3, warmup_steps=30), flat, losses=losses)) == 6
    improving = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    assert fired_at(fold(LossPlateau(3), flat, losses=improving)) is None
    assert fired_at(fold(LossPlateau(3, baseline=0.4), flat, losses=improving)) == 3
    assert LossPlateau(3, baseline=0.4).name == "lossplateau(p=3,d=0.01,baseline=0.4)"
    for bad in ({"warmup_steps": -1}, {"baseline": math.nan}):
        with pytest.raises(ValueError):
            LossPlateau(3, **bad)
    from evalstop.core.registry import make_detector

    assert make_detector("lossplateau", baseline=0.4) == LossPlateau(baseline=0.4)
    assert make_detector("evalstop", warmup_steps=5) == DeclineDetector(2, warmup_steps=5)
    with pytest.raises(ValueError, match="--baseline"):
        make_detector("evalstop", baseline=1.0)


@given(
    k=st.integers(1, 12),
    min_delta=st.one_of(st.integers(0, 3), st.floats(0, 5, allow_nan=False)),
    warmup_steps=st.integers(0, 300),
)
def test_det1_the_name_is_the_parameters_label_every_time(
    k: int, min_delta: float, warmup_steps: int
) -> None:
    """DET-1, DET-11: the name shows k and every non-zero knob as ``{value:g}``, the same on
    every read (it is built once per parameter values and types); equal values of another
    type that format differently get their own label."""
    detector = DeclineDetector(k, min_delta=min_delta, warmup_steps=warmup_steps)
    extras = (f",min_delta={min_delta:g}" if min_delta else "") + (
        f",warmup_steps={warmup_steps}" if warmup_steps else ""
    )
    assert detector.name == detector.name == f"evalstop(k={k}{extras})"
    from decimal import Decimal

    assert DeclineDetector(2, min_delta=1).name == "evalstop(k=2,min_delta=1)"
    exact = DeclineDetector(2, min_delta=Decimal("1.0"))  # type: ignore[arg-type]
    assert exact.name == "evalstop(k=2,min_delta=1.0)"
