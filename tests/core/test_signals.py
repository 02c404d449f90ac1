"""The multi-signal detectors and their eval-only anchors (SIG-*): naive references, O(1)
state, observable only, missing values, invariance, parameters, fallbacks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any
from unittest import mock

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import check_nan_report_changes_nothing, make_job
from builders import detector_alarms as alarms
from builders import detector_states as fold
from evalstop.core.bocpd import BocpdDetector, BocpdState, decline_probability
from evalstop.core.boundary import CheckpointView, checkpoint_report
from evalstop.core.detectors import Detector, observe, start_watch
from evalstop.core.divergence import DivergenceDetector, DivergenceState, SideState, _side
from evalstop.core.ewma import EwmaDetector
from evalstop.core.kl_budget import KlBudgetDetector, KlBudgetState
from evalstop.core.model import JobKind, Observation
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, NoiseAwareDetector
from evalstop.core.registry import DETECTOR_TYPES, make_detector
from evalstop.live.monitor import Monitor

NAN = math.nan

DETECTORS: tuple[Detector[Any], ...] = (
    EwmaDetector(),
    EwmaDetector(alpha=0.5, drop=0.1, warmup_evals=2),
    DivergenceDetector(),
    DivergenceDetector(z=0.5, side_z=0.0, fallback_z=3.0, signal="kl", warmup_evals=3),
    DivergenceDetector(
        z=1.5, side_z=0.5, fallback_z=2.0, signal="proxy_reward", stall=0.2, stall_gain_z=1.0
    ),
    DivergenceDetector(z=1.0, signal="kl", warmup_evals=3, stall=0.5, stall_z=0.0),
    DivergenceDetector(z=1.0, side_z=0.5, stall=0.0, shortfall=1.0, stall_gain_z=1.0),
    DivergenceDetector(z=1.25, side_z=1.0, stall=0.1, stall_z=0.0, persist=0.2),
    KlBudgetDetector(),
    KlBudgetDetector(z=0.5, warmup_evals=4),
    BocpdDetector(),
    BocpdDetector(hazard=0.3, threshold=0.6, max_hypotheses=3, warmup_evals=3),
)

scores = st.floats(-100.0, 100.0, allow_nan=False)
maybe = st.one_of(scores, st.just(NAN))
series = st.lists(st.tuples(maybe, scores, scores), min_size=1, max_size=30)


def view(
    i: int,
    score: float,
    proxy: float | None = None,
    kl: float | None = None,
    *,
    job_id: int = 1,
    loss: float = 1.0,
    progress: float = 0.5,
) -> CheckpointView:
    """Report ``i`` (0-based) at step ``10 (i + 1)``."""
    return CheckpointView(
        job_id, JobKind.RLHF, i + 1, 10 * (i + 1), i, score, loss, proxy, progress, kl
    )


def reports(rows: Sequence[tuple[float, float, float]]) -> list[CheckpointView]:
    """Score, proxy and a KL made non-negative and growing from each row."""
    total, out = 0.0, []
    for i, (score, proxy, kl) in enumerate(rows):
        total += abs(kl)
        out.append(view(i, score, proxy, total))
    return out


def size(state: object) -> int:
    """Numbers in a state, nested states and tuples counted element by element."""
    if attrs.has(type(state)):
        names = [f.name for f in attrs.fields(type(state))]  # type: ignore[arg-type]
        return sum(size(getattr(state, name)) for name in names)
    if isinstance(state, tuple):
        return len(state)
    return 1


# --- SIG-2: the common contract ------------------------------------------------------------


@given(series, st.sampled_from(DETECTORS))
def test_sig2_state_is_bounded_and_deterministic(rows: list[Any], detector: Any) -> None:
    """SIG-2: a state's size never exceeds a bound that does not depend on the reports, and
    folding the same reports twice gives equal states."""
    views = reports(rows)
    first, second = fold(detector, views), fold(detector, views)
    assert first == second
    bound = size(detector.initial())
    if isinstance(detector, BocpdDetector):
        bound = size(BocpdState()) + (detector.max_hypotheses - 1) * 8
    assert all(size(s) <= bound for s in first)


@given(series, st.sampled_from(DETECTORS), st.integers(0, 2**31), st.floats(-9, 9))
def test_sig2_reads_only_observable_fields(
    rows: list[Any], detector: Any, job: int, loss: float
) -> None:
    """SIG-2, DET-9: the job id, index, time, loss and progress change no decision."""
    views = reports(rows)
    other = [
        attrs.evolve(
            v, job_id=job, index=v.index + 3, time=v.time * 7, loss=loss, estimated_progress=0.9
        )
        for v in views
    ]
    assert fold(detector, views) == fold(detector, other)


@given(series, st.sampled_from(DETECTORS), st.data())
def test_sig2_nan_scores_change_no_decision(rows: list[Any], detector: Any, data: Any) -> None:
    """SIG-2: a report with a NaN eval score inserted anywhere (its side values missing too)
    changes no later decision."""
    views = reports(rows)
    at = data.draw(st.integers(0, len(views)))
    check_nan_report_changes_nothing(detector, views, at)


dyadic = st.integers(-64, 64).map(lambda n: n / 8)


@given(
    st.lists(dyadic, min_size=1, max_size=25),
    st.sampled_from([2.0, 4.0, 0.5]),
    st.sampled_from([-3.0, 0.0, 16.0]),
    st.sampled_from([d for d in DETECTORS if not isinstance(d, KlBudgetDetector)]),
)
def test_sig2_affine_invariance(ys: list[float], scale: float, shift: float, detector: Any) -> None:
    """SIG-2: ewma, bocpd and divergence decide the same on ``scale * y + shift`` (dyadic)."""
    proxies = [float(i) for i in range(len(ys))]
    a = [view(i, y, proxies[i]) for i, y in enumerate(ys)]
    b = [view(i, scale * y + shift, proxies[i]) for i, y in enumerate(ys)]
    assert alarms(detector, a) == alarms(detector, b)


@given(series, st.sampled_from(DETECTORS))
def test_sig2_alarm_latches(rows: list[Any], detector: Any) -> None:
    """SIG-2: once fired, always fired."""
    fired = alarms(detector, reports(rows))
    if True in fired:
        assert all(fired[fired.index(True) :])


def test_sig2_registry_names() -> None:
    """SIG-2: the four names build the four detectors at their defaults, and a saved state may
    name their classes."""
    for name, kind in (
        ("ewma", EwmaDetector),
        ("divergence", DivergenceDetector),
        ("kl-budget", KlBudgetDetector),
        ("bocpd", BocpdDetector),
    ):
        assert make_detector(name) == kind()
        assert DETECTOR_TYPES[kind.__name__] is kind


# --- SIG-3: ewma against a naive reference -------------------------------------------------


def ewma_reference(detector: EwmaDetector, ys: Sequence[float]) -> list[bool]:
    valid = [y for y in ys if math.isfinite(y)]
    out, fired, count = [], False, 0
    for y in ys:
        if math.isfinite(y):
            count += 1
            rel = [v - valid[0] for v in valid[:count]]
            levels = [0.0]
            for v in rel[1:]:
                levels.append(levels[-1] + detector.alpha * (v - levels[-1]))
            best, level = max(levels), levels[-1]
            fall = best - level
            fired = fired or (
                count >= detector.warmup_evals and fall > 0 and fall > detector.drop * best
            )
        out.append(fired)
    return out


@given(st.lists(maybe, min_size=1, max_size=30), st.sampled_from(DETECTORS[:2]))
def test_sig3_ewma_equals_reference(ys: list[float], detector: Any) -> None:
    """SIG-3: the fold equals a recomputation of the levels from the whole history."""
    assert alarms(detector, [view(i, y) for i, y in enumerate(ys)]) == ewma_reference(detector, ys)


def test_sig3_hand_worked() -> None:
    """SIG-3: alpha 0.5: levels 0, 0.5, 0.75, 0.375 (best 0.75): the fall 0.375 is more than
    0.3 of the gain 0.75 at the 4th score, with a warm-up of 4."""
    detector = EwmaDetector(alpha=0.5, drop=0.3, warmup_evals=4)
    assert alarms(detector, [view(i, y) for i, y in enumerate([0.0, 1.0, 1.0, 0.0])]) == [
        False,
        False,
        False,
        True,
    ]
    assert not any(alarms(detector, [view(i, y) for i, y in enumerate([0.0, 1.0, 1.0, 0.9])]))


@pytest.mark.parametrize(
    "kwargs",
    [{"alpha": 0.0}, {"alpha": 1.5}, {"drop": 0.0}, {"drop": math.inf}, {"warmup_evals": -1}],
)
def test_sig3_bad_parameters(kwargs: dict[str, Any]) -> None:
    """SIG-3: alpha outside (0, 1], a non-positive or infinite drop, a negative warm-up."""
    with pytest.raises(ValueError):
        EwmaDetector(**kwargs)


# --- SIG-4: divergence ---------------------------------------------------------------------


def side_reference(
    points: Sequence[tuple[int, float]], memory: float
) -> tuple[float, float, float]:
    """``(level, weight, sigma)`` of the side values ``(step, value)``, from the whole list,
    each taken relative to the first (as the fold keeps its level: ``SIG-4``)."""
    rel = [v - points[0][1] for _, v in points]
    level, weight = 0.0, 1.0
    for ((prev, _), (step, _)), v in zip(itertools.pairwise(points), rel[1:], strict=True):
        alpha = -math.expm1(-max(step - prev, 0) / (memory * max(step, 1)))
        level, weight = level + alpha * (v - level), (1 - alpha) ** 2 * weight + alpha**2
    seconds = [abs(rel[i] - 2 * rel[i - 1] + rel[i - 2]) for i in range(2, len(rel))]
    sigma = math.fsum(seconds) / len(seconds) / ROUGHNESS_TO_SIGMA if seconds else math.nan
    return level, weight, sigma


def divergence_reference(
    detector: DivergenceDetector, views: Sequence[CheckpointView]
) -> list[bool]:
    """The rule from the noise-aware rule at ``z`` and at ``fallback_z`` side by side, and the
    side signal's level recomputed from every side value so far."""
    low = detector.rule
    wide = NoiseAwareDetector(
        z=detector.fallback_z, memory=detector.memory, warmup_evals=detector.warmup_evals
    )
    a, b = low.initial(), wide.initial()
    out: list[bool] = []
    fired, at_peak, since = False, None, None
    for i, v in enumerate(views):
        values = [
            (w.step, w.proxy_reward if detector.signal == "proxy_reward" else w.kl)
            for w in views[: i + 1]
        ]
        points = [(s, x) for s, x in values if x is not None and math.isfinite(x)]
        before = a
        a, b = low.update(a, v), wide.update(b, v)
        if a is not before:
            new_peak = a.evals == 1 or a.peak > before.peak
            if points and (new_peak or at_peak is None):
                at_peak = side_reference(points, detector.memory)[:2]
            elif new_peak:
                at_peak = None
            corroborated = stalled = short = False
            if at_peak is not None and len(points) >= 3:
                level, weight, sigma = side_reference(points, detector.memory)
                rise = level - at_peak[0]
                limit = detector.side_z * sigma * math.sqrt(weight + at_peak[1])
                corroborated = rise > 0 and rise > limit
                stalled = corroborated and stall_reference(detector, a, rise, at_peak[0])
                short = corroborated and shortfall_reference(detector, a, rise, at_peak[0])
            holds = b.alarm or (a.alarm and corroborated) or stalled or short
            since = (before.step if since is None else since) if holds else None
            persisted = since is not None and a.step - since >= detector.persist * a.step
            fired = fired or persisted
        out.append(fired)
    return out


def eval_units(
    detector: DivergenceDetector, state: Any
) -> tuple[Callable[[float], float], float, bool]:
    """What ``SIG-13`` and ``SIG-14`` both read from the eval's noise-aware state: a threshold's
    widening at its number of differences, the eval's noise sigma, and whether its peak lies
    more than ``stall_gain_z`` widened units above its start."""
    n: int = state.differences

    def widened(z: float) -> float:
        return z + (z**3 + z) / (4.0 * n)

    sigma: float = state.roughness / n / ROUGHNESS_TO_SIGMA
    gained = state.peak > widened(detector.stall_gain_z) * sigma * math.sqrt(state.peak_weight)
    return widened, sigma, gained


def stall_reference(detector: DivergenceDetector, state: Any, rise: float, before: float) -> bool:
    """``SIG-13`` written from the clause: the eval's noise, gain and drop from the noise-aware
    state's own sums, the side's rise against ``stall`` times its rise before the peak."""
    if not detector.stall or state.evals < detector.warmup_evals or state.differences == 0:
        return False
    widened, sigma, gained = eval_units(detector, state)
    below = state.peak - state.level >= widened(detector.stall_z) * sigma * math.sqrt(
        state.weight + state.peak_weight
    )
    return gained and below and before > 0 and rise > detector.stall * before


def shortfall_reference(
    detector: DivergenceDetector, state: Any, rise: float, before: float
) -> bool:
    """``SIG-14`` written from the clause: the eval's gain per side gain up to its peak times
    the side's rise since, plus the eval's drop, against ``shortfall`` noise-aware units."""
    if not detector.shortfall or state.evals < detector.warmup_evals or state.differences == 0:
        return False
    widened, sigma, gained = eval_units(detector, state)
    if not (gained and before > 0 and state.peak > 0):
        return False
    shortfall: float = state.peak / before * rise + state.peak - state.level
    return shortfall > widened(detector.shortfall) * sigma * math.sqrt(
        state.weight + state.peak_weight
    )


@given(
    series,
    st.sampled_from(
        [attrs.evolve(d, growth=0.0) for d in DETECTORS if isinstance(d, DivergenceDetector)]
    ),
)
def test_sig4_divergence_equals_reference(rows: list[Any], detector: Any) -> None:
    """SIG-4, SIG-13, SIG-14, SIG-15: the fold equals a recomputation of the side level, its
    noise and the level at the eval peak from the whole history (the eval part by the
    noise-aware rule itself), the stall and shortfall clauses written out from their spec, and
    the persistence from the steps since the rule last did not hold (growth 0: SIG-12's own
    test adds it)."""
    views = reports(rows)
    assert alarms(detector, views) == divergence_reference(detector, views)


def _side_before_one_copy(
    state: SideState, value: float | None, step: int, memory: float
) -> SideState:
    """The side signal's fold as it was written before it ran the noise-aware fold (commit
    d61fce6), kept as an oracle, operation for operation."""
    if value is None:
        return state
    if state.origin is None:
        return SideState(1, step, value, weight=1.0)
    relative = value - state.origin
    if not math.isfinite(relative):
        return state
    gap = max(step - state.step, 0)
    alpha = -math.expm1(-gap / (memory * max(step, 1)))
    level = state.level + alpha * (relative - state.level)
    weight = (1.0 - alpha) ** 2 * state.weight + alpha * alpha
    roughness, differences = state.roughness, state.differences
    if state.evals >= 2:
        roughness += abs(relative - 2.0 * state.last + state.before)
        differences += 1
    return SideState(
        state.evals + 1,
        step,
        state.origin,
        relative,
        state.last,
        level,
        weight,
        roughness,
        differences,
    )


@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**9),
            st.one_of(st.none(), st.floats(-1e299, 1e299), st.sampled_from([0.0, -0.0, 5e-324])),
        ),
        max_size=40,
    ),
    st.floats(0.01, 2.0),
)
def test_sig4_nad11_the_side_is_folded_by_the_one_noise_fold(
    points: list[tuple[int, float | None]], memory: float
) -> None:
    """SIG-4, NAD-11: the side signal's level and noise come from the noise-aware rule's one
    fold, bit for bit the separate fold it replaced (repr tells -0.0 from 0.0) for any steps
    and any side values within ``SPAN`` of each other, and a missing value returns the state
    itself."""
    new = old = SideState()
    for step, value in points:
        before = new
        new, old = _side(new, value, step, memory), _side_before_one_copy(old, value, step, memory)
        assert repr(new) == repr(old)
        assert (new is before) == (value is None)


def test_sig4_corroboration_fires_earlier_than_the_fallback() -> None:
    """SIG-4: the same eval curve is stopped at a smaller drop when the proxy keeps rising,
    and only by the fallback when the proxy is flat or missing."""
    ys = [0.0, 1.0, 2.0, 3.0, 4.0, 4.2, 3.9, 4.1, 3.6, 3.2, 2.8, 2.2, 1.5]
    noise = [0.05 * (-1) ** i for i in range(len(ys))]
    rising = [view(i, y, proxy=float(i) + noise[i]) for i, y in enumerate(ys)]
    flat = [view(i, y, proxy=noise[i]) for i, y in enumerate(ys)]
    bare = [view(i, y) for i, y in enumerate(ys)]
    detector = DivergenceDetector(z=0.5, side_z=1.0, fallback_z=4.0, signal="proxy_reward")
    first = [
        alarms(detector, v).index(True) if any(alarms(detector, v)) else None
        for v in (rising, flat, bare)
    ]
    assert first[0] is not None
    assert first[1] is None or first[1] > first[0]
    assert first[1] == first[2]
    states = fold(detector, bare)
    assert detector.uses_fallback(states[-1]) and not detector.uses_fallback(
        fold(detector, rising)[-1]
    )


def test_sig4_keeps_the_level_keep() -> None:
    """SIG-4, NAD-10: the watch keeps the noise-aware level keep's checkpoint."""
    detector = DivergenceDetector()
    watch = start_watch(detector)
    for i, y in enumerate([0.0, 1.0, 5.0, 1.0, 1.0]):
        watch = observe(detector, watch, view(i, y, proxy=float(i)))
    assert (watch.best_step, watch.best_score) == detector.kept(watch.rule)
    assert isinstance(watch.rule, DivergenceState)


@given(series, st.sampled_from([0.25, 1.0, 3.0]), st.sampled_from(["kl", "proxy_reward"]))
def test_sig12_growth_raises_both_thresholds_with_the_looks(
    rows: list[Any], growth: float, signal: str
) -> None:
    """SIG-12: with growth g the detector fires at its n-th valid evaluation exactly when the
    growth-0 rule, on the same state, fires at z + g ln(n / n0) and fallback_z + g ln(n / n0);
    g = 0 is the SIG-4 rule and its name has no growth."""
    grown = DivergenceDetector(
        z=0.75, side_z=1.0, fallback_z=2.0, signal=signal, growth=growth, stall=0.0, persist=0.0
    )
    plain = attrs.evolve(grown, growth=0.0)
    assert plain == DivergenceDetector(
        z=0.75, side_z=1.0, fallback_z=2.0, signal=signal, growth=0, stall=0, persist=0
    )
    assert "growth" not in plain.name and f"growth={growth:g}" in grown.name
    views = reports(rows)
    expected, fired, previous = [], False, None
    for state in fold(plain, views):
        if state.eval is not previous:  # a skipped eval score judges nothing (SIG-4)
            n = state.eval.evals
            extra = growth * math.log(max(n, plain.warmup_evals) / plain.warmup_evals)
            at_n = attrs.evolve(plain, z=plain.z + extra, fallback_z=plain.fallback_z + extra)
            judged = at_n._fires(state.eval, state.side, state.at_peak, state.at_peak_weight)
            fired = fired or judged
        previous = state.eval
        expected.append(fired)
    assert alarms(grown, views) == expected


def test_sig13_a_stalled_eval_with_a_rising_proxy_fires() -> None:
    """SIG-13: an eval that rose clearly, then slides slowly (less than the SIG-4 rule's z
    sees, under +-0.02 of noise) while the proxy keeps rising, is stopped by the stall clause
    and not by the SIG-4 rule on the same reports; with the proxy flat nothing fires; the name
    says the clause."""
    evals = [
        (0.1 * i if i < 6 else 0.6 - 0.01 * (i - 6)) + (0.02 if i % 2 else -0.02) for i in range(18)
    ]
    proxies = [0.1 * i + 0.01 * (i % 2) for i in range(18)]
    stall = DivergenceDetector(
        z=1.5,
        side_z=1.0,
        fallback_z=3.0,
        signal="proxy_reward",
        growth=0.0,
        stall=0.1,
        stall_gain_z=3.0,
        stall_z=0.5,
        persist=0.0,
    )
    plain = attrs.evolve(stall, stall=0.0)
    rising = [view(i, e, p) for i, (e, p) in enumerate(zip(evals, proxies, strict=True))]
    flat = [view(i, e, 1.0 + 0.01 * (i % 2)) for i, e in enumerate(evals)]
    assert alarms(stall, rising)[-1] and not any(alarms(plain, rising))
    assert not any(alarms(stall, flat))
    assert "stall=0.1/3/0.5" in stall.name and "stall" not in plain.name


def test_sig14_an_eval_that_falls_short_of_the_proxy_fires() -> None:
    """SIG-14: an eval that rose with the proxy, then stays near flat (down 0.005 a report,
    under +-0.02 of noise) while the proxy keeps rising, is stopped by the shortfall clause and
    not by the SIG-4 rule on the same reports; with the proxy flat nothing fires; the name says
    the clause."""
    evals = [
        (0.1 * i if i < 6 else 0.6 - 0.005 * (i - 6)) + (0.02 if i % 2 else -0.02)
        for i in range(18)
    ]
    proxies = [0.1 * i + 0.01 * (i % 2) for i in range(18)]
    short = DivergenceDetector(
        z=1.5, side_z=1.0, growth=0.0, stall=0.0, shortfall=3.0, stall_gain_z=3.0, persist=0.0
    )
    plain = attrs.evolve(short, shortfall=0.0)
    rising = [view(i, e, p) for i, (e, p) in enumerate(zip(evals, proxies, strict=True))]
    flat = [view(i, e, 1.0 + 0.01 * (i % 2)) for i, e in enumerate(evals)]
    assert alarms(short, rising)[-1] and not any(alarms(plain, rising))
    assert not any(alarms(short, flat))
    assert "shortfall=3/3" in short.name and "shortfall" not in plain.name


@pytest.mark.parametrize("spacing", [1, 4])
def test_sig15_persistence_is_a_share_of_the_steps(spacing: int) -> None:
    """SIG-15: with persist p the detector fires at the first valid evaluation whose step lies
    at least p times that step after the last evaluation where the rule did not hold; p = 0 is
    the rule itself and its name has no persist."""
    ys = [0.1 * i for i in range(8)] + [0.1 - 0.05 * i for i in range(12)]
    views = [
        attrs.evolve(view(i, y, 1.0 + 0.1 * i), step=spacing * (i + 1)) for i, y in enumerate(ys)
    ]
    plain = DivergenceDetector(z=1.25, side_z=1.0, growth=0.0, stall=0.0, persist=0.0)
    held = attrs.evolve(plain, persist=0.2)
    assert "persist" not in plain.name and "persist=0.2" in held.name
    first = alarms(plain, views).index(True)
    states = fold(plain, views)
    ok = [
        i
        for i in range(first, len(views))
        if views[i].step - views[first - 1].step >= 0.2 * views[i].step
        and all(
            plain._fires(s.eval, s.side, s.at_peak, s.at_peak_weight) for s in states[first : i + 1]
        )
    ]
    assert alarms(held, views).index(True) == ok[0] > first


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shortfall": -1.0},
        {"persist": math.inf},
        {"stall": -0.1},
        {"stall_gain_z": -1.0},
        {"stall_z": math.nan},
        {"z": 0.0},
        {"growth": -0.5},
        {"side_z": -1.0},
        {"z": 3.0, "fallback_z": 2.0},
        {"signal": "loss"},
        {"memory": 0.0},
        {"warmup_evals": -2},
    ],
)
def test_sig4_bad_parameters(kwargs: dict[str, Any]) -> None:
    """SIG-4: a non-positive z or memory, a negative side_z, fallback_z below z, an unknown
    signal, a negative warm-up."""
    with pytest.raises(ValueError):
        DivergenceDetector(**kwargs)


# --- SIG-5: kl-budget ----------------------------------------------------------------------


def kl_reference(detector: KlBudgetDetector, views: Sequence[CheckpointView]) -> list[float | None]:
    """The slope's t-statistic at each report, from a least-squares fit of every pair so far
    (None before the warm-up or when the fit is not concave); NaN when ill-conditioned."""
    pairs: list[tuple[float, float]] = []
    clock = None
    out: list[float | None] = []
    for v in views:
        if math.isfinite(v.eval_score):
            if clock is None:
                clock = "kl" if v.kl is not None and math.isfinite(v.kl) else "step"
            raw = (
                (max(v.kl, 0.0) if v.kl is not None and math.isfinite(v.kl) else None)
                if clock == "kl"
                else float(v.step)
            )
            if raw is not None:
                pairs.append((math.sqrt(raw) if clock == "kl" else raw, v.eval_score))
        if len(pairs) < detector.warmup_evals or pairs[-1][0] <= 0:
            out.append(None)
            continue
        d = np.array([p[0] for p in pairs])
        y = np.array([p[1] for p in pairs]) - pairs[0][1]
        u = np.where(d > 0, d * np.log(np.where(d > 0, d, 1.0)), 0.0)
        x = np.column_stack([np.ones_like(d), d, u])
        gram = x.T @ x
        if np.linalg.cond(gram) > 1e8:
            out.append(math.nan)
            continue
        theta = np.linalg.solve(gram, x.T @ y)
        if not theta[2] < 0:
            out.append(None)
            continue
        resid = y - x @ theta
        variance = float(resid @ resid) / (len(pairs) - 3)
        w = math.log(d[-1]) + 1.0
        c = np.array([0.0, 1.0, w])
        se = math.sqrt(variance * float(c @ np.linalg.solve(gram, c)))
        out.append((theta[1] + theta[2] * w) / se if se > 0 else -math.inf)
    return out


@given(
    st.lists(st.tuples(scores, st.floats(0.05, 3.0)), min_size=4, max_size=25),
    st.sampled_from([d for d in DETECTORS if isinstance(d, KlBudgetDetector)]),
)
def test_sig5_kl_budget_equals_reference(rows: list[tuple[float, float]], detector: Any) -> None:
    """SIG-5: each decision equals the one a least-squares fit of every pair so far makes
    (reports whose statistic lies within 1e-6 of the threshold, or whose fit is
    ill-conditioned, are not compared)."""
    total, views = 0.0, []
    for i, (y, step) in enumerate(rows):
        total += step
        views.append(view(i, y, kl=total))
    fired, reference = False, kl_reference(detector, views)
    for state, stat in zip(fold(detector, views), reference, strict=True):
        if stat is not None and math.isnan(stat):
            return  # ill-conditioned from here on: the online solve may differ
        now = stat is not None and stat < -detector.z
        if stat is not None and abs(stat + detector.z) < 1e-6:
            return
        fired = fired or now
        assert detector.fired(state) == fired


def test_sig5_gao_curve_is_stopped_past_its_peak() -> None:
    """SIG-5: Gao's gold(d) = d (0.38 - 0.15 ln d) peaks at d* = exp(0.38 / 0.15 - 1) = 4.64;
    with small alternating noise the detector fires past d*, never before, and its fitted
    peak is near d*."""
    detector = KlBudgetDetector(z=2.0)
    ds = [0.5 * (i + 1) for i in range(20)]
    views = [
        view(i, d * (0.38 - 0.15 * math.log(d)) + 0.002 * (-1) ** i, kl=d * d)
        for i, d in enumerate(ds)
    ]
    states = fold(detector, views)
    first = [detector.fired(s) for s in states].index(True)
    assert ds[first] > math.exp(0.38 / 0.15 - 1)
    peak = detector.peak(states[-1])
    assert peak is not None and abs(peak - math.exp(0.38 / 0.15 - 1)) < 0.2
    assert not detector.uses_fallback(states[-1])


def test_sig5_without_kl_the_clock_is_the_step() -> None:
    """SIG-5, SIG-8: with no KL the clock is the step, and a rescaled step clock decides the
    same as sqrt(KL) = step / 10."""
    detector = KlBudgetDetector()
    ys = [
        d * (0.38 - 0.15 * math.log(d)) + 0.002 * (-1) ** i
        for i, d in enumerate(0.5 * (i + 1) for i in range(20))
    ]
    bare = [view(i, y) for i, y in enumerate(ys)]
    kl = [view(i, y, kl=(v.step / 10) ** 2) for i, (y, v) in enumerate(zip(ys, bare, strict=True))]
    states = fold(detector, bare)
    assert detector.uses_fallback(states[-1])
    assert isinstance(states[-1], KlBudgetState)
    assert [detector.fired(s) for s in states] == alarms(detector, kl)


@pytest.mark.parametrize("kwargs", [{"z": 0.0}, {"z": math.nan}, {"warmup_evals": 3}])
def test_sig5_bad_parameters(kwargs: dict[str, Any]) -> None:
    """SIG-5: z not a finite number > 0, a warm-up below 4."""
    with pytest.raises(ValueError):
        KlBudgetDetector(**kwargs)


# --- SIG-6: bocpd --------------------------------------------------------------------------


def bocpd_reference(detector: BocpdDetector, ys: Sequence[float]) -> list[float]:
    """The decline probability after each valid score, by the full run-length recursion with
    every hypothesis's points kept and its posterior solved from them (no pruning)."""
    valid = [y - ys[0] for y in ys]
    hyps: list[dict[str, Any]] = [{"start": 0, "prior": 0.0, "w": 1.0, "pts": []}]
    out = []
    prior = np.diag([detector.level_scale**-2, detector.slope_scale**-2])
    for t, y in enumerate(valid):
        seconds = [abs(valid[i] - 2 * valid[i - 1] + valid[i - 2]) for i in range(2, t + 1)]
        sigma = sum(seconds) / len(seconds) / ROUGHNESS_TO_SIGMA if seconds else 0.0
        logs = []
        for h in hyps:
            log = math.log(h["w"]) if h["w"] > 0 else -math.inf
            if sigma * sigma > 0:  # a sigma whose square underflows gives no density (SIG-6)
                x = np.array([[1.0, tau] for tau, _ in h["pts"]]).reshape(-1, 2)
                r = np.array([v for _, v in h["pts"]])
                cov = np.linalg.inv(x.T @ x + prior)
                mean = cov @ (x.T @ r) if len(r) else np.zeros(2)
                q = np.array([1.0, float(t - h["start"])])
                var = sigma**2 * (1 + q @ cov @ q)
                res = (y - h["prior"]) - q @ mean
                log += -0.5 * (math.log(2 * math.pi * var) + res * res / var)
            logs.append(log)
        top = max(logs)
        weights = [math.exp(v - top) for v in logs]
        total = sum(weights)
        for h, w in zip(hyps, weights, strict=True):
            h["w"] = w / total * (1 - detector.hazard)
            h["pts"].append((float(t - h["start"]), y - h["prior"]))
        hyps.append({"start": t + 1, "prior": y, "w": detector.hazard, "pts": []})
        total, num = 0.0, 0.0
        for h in hyps:
            if len(h["pts"]) < 2 or sigma == 0:
                continue
            x = np.array([[1.0, tau] for tau, _ in h["pts"]])
            r = np.array([v for _, v in h["pts"]])
            cov = np.linalg.inv(x.T @ x + prior)
            mean = cov @ (x.T @ r)
            below = 0.5 * math.erfc(mean[1] / (sigma * math.sqrt(cov[1, 1]) * math.sqrt(2)))
            num += h["w"] * below
            total += h["w"]
        out.append(num / total if total > 0 else 0.0)
    return out


@given(
    st.lists(scores, min_size=1, max_size=20),
    st.sampled_from([0.1, 0.3]),
    st.sampled_from([0.5, 2.0]),
)
def test_sig6_bocpd_equals_reference(ys: list[float], hazard: float, scale: float) -> None:
    """SIG-6: with room for every hypothesis, the decline probability after each score equals
    the full recursion's, each posterior solved from the hypothesis's own points."""
    detector = BocpdDetector(hazard=hazard, slope_scale=scale, max_hypotheses=32)
    states = fold(detector, [view(i, y) for i, y in enumerate(ys)])
    got = [decline_probability(s, detector.level_scale, detector.slope_scale) for s in states]
    assert got == pytest.approx(bocpd_reference(detector, ys), abs=1e-7)


def test_sig6_prunes_to_the_bound_and_fires_on_a_collapse() -> None:
    """SIG-6: never more than max_hypotheses hypotheses; a rise then a steep fall fires, a
    rise with the same noise does not."""
    rng = np.random.default_rng(5)
    t = np.linspace(0.05, 1.0, 30)
    noise = rng.normal(0.0, 0.02, len(t))
    detector = BocpdDetector(threshold=0.95, max_hypotheses=6)
    collapse = fold(
        detector, [view(i, y) for i, y in enumerate(np.where(t < 0.5, t, 1.0 - t) + noise)]
    )
    rise = fold(detector, [view(i, y) for i, y in enumerate(t + noise)])
    assert all(len(s.starts) <= 6 for s in collapse + rise)
    assert detector.fired(collapse[-1]) and not detector.fired(rise[-1])


BOCPDS = (
    BocpdDetector(),
    BocpdDetector(hazard=0.3, threshold=0.6, max_hypotheses=3, warmup_evals=3),
    BocpdDetector(threshold=0.8, level_scale=3.0, slope_scale=0.5, max_hypotheses=32),
)


def bocpd_columns(state: BocpdState) -> list[tuple[type, ...]]:
    """The type of every value of every field of a bocpd state (columns element by element)."""
    return [
        tuple(map(type, value)) if isinstance(value, tuple) else (type(value),)
        for value in attrs.astuple(state, recurse=False)
    ]


@given(st.lists(st.one_of(scores, st.just(NAN), st.integers(-5, 5)), min_size=1, max_size=40))
def test_sig18_bocpd_states_equal_the_validated_ones(ys: list[float]) -> None:
    """SIG-18: every state update builds equals, field by field and type by type, the one
    BocpdState's converters and check build from the same values; update fires exactly when
    decline_probability of the new state exceeds the threshold (after the warm-up, once)."""
    for detector in BOCPDS:
        before = detector.initial()
        for state in fold(detector, [view(i, y) for i, y in enumerate(ys)]):
            rebuilt = BocpdState(*attrs.astuple(state, recurse=False))
            assert rebuilt == state and bocpd_columns(rebuilt) == bocpd_columns(state)
            if state is not before and not before.alarm and state.evals >= detector.warmup_evals:
                probability = decline_probability(state, detector.level_scale, detector.slope_scale)
                assert state.alarm == (probability > detector.threshold)
            before = state


@given(st.lists(scores, min_size=6, max_size=30))
def test_sig18_bocpd_fires_exactly_above_the_threshold(ys: list[float]) -> None:
    """SIG-18: at a threshold one float below the new state's decline probability update
    fires, at the probability itself it does not: the early stop of the sum never decides
    what the full sum would not."""
    base = BocpdDetector(threshold=0.5, warmup_evals=2)
    views = [view(i, y) for i, y in enumerate(ys)]
    state = base.initial()
    for v in views:
        after = base.update(attrs.evolve(state, alarm=False), v)
        p = decline_probability(after, base.level_scale, base.slope_scale)
        if after.evals >= base.warmup_evals and after.differences and 0.0 < p < 1.0:
            below = attrs.evolve(base, threshold=math.nextafter(p, 0.0))
            assert below.update(attrs.evolve(state, alarm=False), v).alarm
            at_p = attrs.evolve(base, threshold=p)
            assert not at_p.update(attrs.evolve(state, alarm=False), v).alarm
        state = after


def untabled(detector: BocpdDetector, state: BocpdState, views: list[CheckpointView]) -> str:
    """Every state of folding ``views`` from ``state`` with no table of lines (SIG-18)."""
    from evalstop.core import bocpd

    states = []
    with mock.patch.object(bocpd, "_lines", lambda level, slope: ()):
        for v in views:
            state = detector.update(state, v)
            states.append(attrs.astuple(state))
    return repr(states)


@given(st.lists(maybe, min_size=1, max_size=40), st.sampled_from(BOCPDS))
def test_sig18_bocpd_tabled_lines_equal_their_own(ys: list[float], detector: Any) -> None:
    """SIG-18: with no table (every hypothesis computing its own line) every state is the same
    bit for bit; so is a hand-built state whose sums are no row's (its regime's tau from 1)."""
    views = [view(i, y) for i, y in enumerate(ys)]
    tabled = repr([attrs.astuple(s) for s in fold(detector, views)])
    assert tabled == untabled(detector, detector.initial(), views)
    off = BocpdState(2, 0.0, 0.5, 0.25, 0.1, 1, (0,), (0.0,), (1.0,), (2,), (3.0,), (5.0,))
    state, states = off, []
    for v in views:
        state = detector.update(state, v)
        states.append(attrs.astuple(state))
    assert repr(states) == untabled(detector, off, views)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"hazard": 0.0},
        {"hazard": 1.0},
        {"threshold": 1.0},
        {"level_scale": 0.0},
        {"slope_scale": -1.0},
        {"max_hypotheses": 1},
        {"warmup_evals": -1},
    ],
)
def test_sig6_bad_parameters(kwargs: dict[str, Any]) -> None:
    """SIG-6: hazard or threshold outside (0, 1), a non-positive scale, fewer than two
    hypotheses, a negative warm-up."""
    with pytest.raises(ValueError):
        BocpdDetector(**kwargs)
    with pytest.raises(ValueError):
        BocpdState(starts=(0, 1))


# --- SIG-1 ---------------------------------------------------------------------------------


def test_sig1_kl_crosses_the_boundary() -> None:
    """SIG-1: an observation's KL is its checkpoint report's, None by default."""
    job = make_job(1, kind=JobKind.RLHF, scores=[0.1, 0.2])
    job = attrs.evolve(
        job, observations=tuple(attrs.evolve(o, kl=0.5 * i) for i, o in enumerate(job.observations))
    )
    assert [checkpoint_report(job, i + 1, 0).kl for i in range(2)] == [0.0, 0.5]
    assert Observation(1, 0.5, 1.0).kl is None


# --- SIG-7: saved states -------------------------------------------------------------------


@given(
    st.lists(st.tuples(scores, scores, st.floats(0.0, 5.0)), min_size=1, max_size=15),
    st.sampled_from(DETECTORS),
    st.data(),
)
def test_sig7_a_monitor_saves_and_restores_every_signal_detector(
    rows: list[tuple[float, float, float]], detector: Any, data: Any
) -> None:
    """SIG-7, MON-11: a monitor saved after any prefix of a stream (proxy and KL included) and
    restored from its JSON gives the same verdicts on the rest as the original."""
    cut = data.draw(st.integers(0, len(rows)))
    original = Monitor(detector)
    for i, (y, proxy, kl) in enumerate(rows[:cut]):
        original.observe("j", 10 * (i + 1), y, proxy_reward=proxy, kl=kl)
    restored = Monitor.from_json(original.to_json())
    assert restored.to_dict() == original.to_dict()
    for i, (y, proxy, kl) in enumerate(rows[cut:], start=cut):
        step = 10 * (i + 1)
        assert restored.observe("j", step, y, proxy_reward=proxy, kl=kl) == original.observe(
            "j", step, y, proxy_reward=proxy, kl=kl
        )


def test_sig7_a_malformed_saved_state_is_refused() -> None:
    """SIG-7, MON-15: a saved bocpd state whose hypothesis columns differ in length, or whose
    tuple is not a list, is a ValueError."""
    monitor = Monitor(BocpdDetector())
    for i, y in enumerate([0.1, 0.2, 0.3]):
        monitor.observe("j", 10 * (i + 1), y)
    saved = monitor.to_dict()
    saved["jobs"][0]["rule"]["starts"] = saved["jobs"][0]["rule"]["starts"][:-1]
    with pytest.raises(ValueError):
        Monitor.from_dict(saved)
    saved = monitor.to_dict()
    saved["jobs"][0]["rule"]["weights"] = 0.5
    with pytest.raises(ValueError):
        Monitor.from_dict(saved)


def test_sig1_monitor_refuses_a_bad_kl() -> None:
    """SIG-1, MON-1: a KL that is not a real number raises before any state changes."""
    monitor = Monitor(DivergenceDetector(signal="kl"))
    with pytest.raises(TypeError):
        monitor.observe("j", 10, 0.5, kl="big")  # type: ignore[arg-type]
    assert monitor.to_dict()["jobs"] == []


_HUGE = st.sampled_from([1e300, -1e300, 5e299, -5e299, 1e299, 3e299, 1.0, 0.0, 1e-300])


@given(
    ys=st.lists(_HUGE, min_size=3, max_size=40),
    most=st.integers(2, 32),
    slope_scale=st.sampled_from([0.5, 2.0]),
)
def test_sig6_bocpd_sums_that_overflow_near_span_never_raise(
    ys: list[float], most: int, slope_scale: float
) -> None:
    """SIG-6: scores within SPAN of the first whose running sums overflow (found: a
    ZeroDivisionError on a stream of +-1e300 scores, max_hypotheses 32, slope scale 0.5) fold
    without an error; the weights stay finite and sum to 1."""
    detector = BocpdDetector(max_hypotheses=most, slope_scale=slope_scale, warmup_evals=2)
    state = detector.initial()
    for i, y in enumerate(ys):
        state = detector.update(state, view(i, y))
        assert all(math.isfinite(w) and w >= 0.0 for w in state.weights)
        assert math.fsum(state.weights) == pytest.approx(1.0)


@pytest.mark.parametrize("detector", DETECTORS)
def test_sig2_extreme_scores_do_not_break_the_fold(detector: Any) -> None:
    """SIG-2: scores near the float range, and tiny ones whose noise underflows, fold without
    an error and leave a state a monitor can save (finite numbers)."""
    for ys in ([0.0, 1e300, -1e300, 1e300, 0.0, 5.0, -1e300], [0.0, 0.0, 1e-268, 0.0, 1e-300]):
        views = [view(i, y, proxy=y, kl=abs(y)) for i, y in enumerate(ys)]
        monitor = Monitor(detector)
        for v in views:
            monitor.observe("j", v.step, v.eval_score, proxy_reward=v.proxy_reward, kl=v.kl)
        fold(detector, views)
        monitor.to_json()
