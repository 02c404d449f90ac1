"""The learned stop rule (SIG-16): a naive reference, O(1) state, observable fields only,
missing values, invariance, the eval-only fallback, parameters, names and saved states."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import check_nan_report_changes_nothing
from builders import detector_alarms as alarms
from builders import detector_states as fold
from evalstop.core.boundary import CheckpointView
from evalstop.core.learned import FEATURES, FIT, LearnedStopDetector, features
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, NoiseAwareDetector, NoiseState
from evalstop.core.registry import DETECTOR_TYPES, make_detector
from evalstop.live.monitor import Monitor

NAN = math.nan
scores = st.floats(-100.0, 100.0, allow_nan=False)
maybe = st.one_of(scores, st.just(NAN))
proxies = st.one_of(scores, st.none())
series = st.lists(st.tuples(maybe, proxies), min_size=1, max_size=25)
weights = st.lists(st.floats(-3.0, 3.0), min_size=len(FEATURES), max_size=len(FEATURES))
detectors = st.builds(
    LearnedStopDetector,
    weights=weights.map(tuple),
    bias=st.floats(-3.0, 3.0),
    threshold=st.floats(-2.0, 2.0),
    fallback_z=st.sampled_from([1.0, 2.0, 3.0]),
    memory=st.sampled_from([0.1, 0.3, 1.0]),
    warmup_evals=st.integers(0, 6),
)


def view(
    i: int, score: float, proxy: float | None = None, kl: float | None = None
) -> CheckpointView:
    """Report ``i`` (0-based) at step ``10 (i + 1)``."""
    return CheckpointView(1, JobKind.RLHF, i + 1, 10 * (i + 1), i, score, 1.0, proxy, 0.5, kl)


def views_of(rows: Sequence[tuple[float, float | None]]) -> list[CheckpointView]:
    return [view(i, y, p) for i, (y, p) in enumerate(rows)]


# --- the naive reference: every quantity re-folded from the whole history ------------------


def eval_state(detector: LearnedStopDetector, views: Sequence[CheckpointView]) -> NoiseState:
    rule = NoiseAwareDetector(
        z=detector.fallback_z, memory=detector.memory, warmup_evals=detector.warmup_evals
    )
    state = rule.initial()
    for v in views:
        state = rule.update(state, v)
    return state


def proxy_state(detector: LearnedStopDetector, views: Sequence[CheckpointView]) -> NoiseState:
    """The proxy's levels: the noise-aware fold (its rule never consulted) of its finite values."""
    rule = NoiseAwareDetector(memory=detector.memory, warmup_evals=2**62, keep="best")
    state = rule.initial()
    for v in views:
        if v.proxy_reward is not None and math.isfinite(v.proxy_reward):
            state = rule.update(state, attrs.evolve(v, eval_score=v.proxy_reward))
    return state


def clip(value: float, low: float, high: float) -> float:
    return 0.0 if math.isnan(value) else min(max(value, low), high)


def units(value: float, unit: float, low: float, high: float) -> float:
    if unit > 0:
        return clip(value / unit, low, high)
    return high if value > 0 else low if value < 0 else 0.0


def reference(detector: LearnedStopDetector, views: Sequence[CheckpointView]) -> list[bool]:
    """The alarms of SIG-16, each recomputed from the whole prefix."""
    out, fired, peak_at = [], False, None
    for k in range(1, len(views) + 1):
        e, before = eval_state(detector, views[:k]), eval_state(detector, views[: k - 1])
        p = proxy_state(detector, views[:k])
        if e != before:  # a valid evaluation
            if e.evals == 1 or e.peak > before.peak:
                peak_at = (p, e.step) if p.evals else (None, e.step)
            elif peak_at is not None and peak_at[0] is None and p.evals:
                peak_at = (p, peak_at[1])
            x = reference_features(e, p, peak_at)
            if not fired and e.evals >= detector.warmup_evals:
                if p.evals == 0:
                    fired = e.alarm
                elif x is not None:
                    score = detector.bias + math.fsum(
                        w * v for w, v in zip(detector.weights, x, strict=True)
                    )
                    fired = clip(score, -1e300, 1e300) > detector.threshold
        out.append(fired)
    return out


def reference_features(
    e: NoiseState, p: NoiseState, peak_at: tuple[NoiseState | None, int] | None
) -> tuple[float, ...] | None:
    if e.differences == 0:
        return None
    sigma = e.roughness / e.differences / ROUGHNESS_TO_SIGMA
    drop = units(e.peak - e.level, sigma * math.sqrt(e.weight + e.peak_weight), -5, 10)
    gain = math.log1p(units(max(e.peak, 0.0), sigma * math.sqrt(e.peak_weight), 0, 100))
    lost = clip((e.peak - e.level) / e.peak, -1, 2) if e.peak > 0 else 0.0
    assert peak_at is not None
    at, step = peak_at
    age = clip((e.step - step) / e.step, 0, 1) if e.step > 0 else 0.0
    recent = units(e.last - e.level, sigma, -5, 5)
    rise = share = 0.0
    if at is not None and p.differences:
        p_sigma = p.roughness / p.differences / ROUGHNESS_TO_SIGMA
        raw = p.level - at.level
        rise = units(raw, p_sigma * math.sqrt(p.weight + at.weight), -5, 20)
        share = clip(raw / at.level, -2, 5) if at.level > 0 else 0.0
    n = math.log(e.evals)
    return (
        drop,
        gain,
        lost,
        rise,
        share,
        age,
        recent,
        n,
        drop * share,
        age * share,
        drop * n,
        gain * n,
        lost * n,
        share * n,
        age * n,
    )


@given(series, detectors)
def test_sig16_equals_the_naive_reference(rows: list[Any], detector: LearnedStopDetector) -> None:
    """SIG-16: the fold's alarms equal a recomputation of every feature from the whole history
    (the eval's and the proxy's levels re-folded at each prefix, the proxy at the eval peak
    taken from the prefix where the peak was reached)."""
    views = views_of(rows)
    assert alarms(detector, views) == reference(detector, views)


@given(series)
def test_sig16_the_shipped_rule_equals_the_reference(rows: list[Any]) -> None:
    """SIG-16: the shipped weights too."""
    views = views_of(rows)
    assert alarms(LearnedStopDetector(), views) == reference(LearnedStopDetector(), views)


def size(state: object) -> int:
    if attrs.has(type(state)):
        names = [f.name for f in attrs.fields(type(state))]  # type: ignore[arg-type]
        return sum(size(getattr(state, name)) for name in names)
    return 1


@given(series, detectors)
def test_sig16_state_is_bounded_deterministic_and_latches(
    rows: list[Any], detector: LearnedStopDetector
) -> None:
    """SIG-16, DET-8: a state has a fixed count of numbers; the same reports give equal states;
    once fired, always fired."""
    views = views_of(rows)
    first, second = fold(detector, views), fold(detector, views)
    assert first == second
    assert all(size(s) == size(detector.initial()) for s in first)
    fired = [detector.fired(s) for s in first]
    if True in fired:
        assert all(fired[fired.index(True) :])


@given(series, detectors, st.integers(0, 2**31), st.floats(-9, 9), st.floats(0, 9))
def test_sig16_reads_only_observable_fields(
    rows: list[Any], detector: LearnedStopDetector, job: int, loss: float, kl: float
) -> None:
    """SIG-16, DET-9: the job id, index, time, loss, progress and the KL change no decision
    (the rule reads no planned length and no KL)."""
    views = views_of(rows)
    other = [
        attrs.evolve(
            v,
            job_id=job,
            index=v.index + 3,
            time=v.time * 7,
            loss=loss,
            estimated_progress=0.9,
            kl=kl,
        )
        for v in views
    ]
    assert fold(detector, views) == fold(detector, other)


@given(series, detectors, st.data())
def test_sig16_nan_scores_change_no_decision(
    rows: list[Any], detector: LearnedStopDetector, data: Any
) -> None:
    """SIG-16: a report with a NaN eval score and no proxy inserted anywhere changes no later
    decision."""
    views = views_of(rows)
    at = data.draw(st.integers(0, len(views)))
    check_nan_report_changes_nothing(detector, views, at)


dyadic = st.integers(-64, 64).map(lambda n: n / 8)


@given(
    st.lists(st.tuples(dyadic, dyadic), min_size=1, max_size=20),
    st.sampled_from([2.0, 4.0, 0.5]),
    st.sampled_from([-3.0, 0.0, 16.0]),
    st.sampled_from([0.25, 1.0, 8.0]),
    st.sampled_from([-2.0, 0.0, 5.0]),
    detectors,
)
def test_sig16_affine_invariance(
    rows: list[tuple[float, float]],
    scale: float,
    shift: float,
    p_scale: float,
    p_shift: float,
    detector: LearnedStopDetector,
) -> None:
    """SIG-16: the same decisions on ``scale * y + shift`` and ``p_scale * proxy + p_shift``
    (dyadic values and power-of-two scales, so the arithmetic is exact up to rounding that
    the features' clips absorb)."""
    a = [view(i, y, p) for i, (y, p) in enumerate(rows)]
    b = [view(i, scale * y + shift, p_scale * p + p_shift) for i, (y, p) in enumerate(rows)]
    fa, fb = fold(detector, a), fold(detector, b)
    assert [detector.fired(s) for s in fa] == [detector.fired(s) for s in fb] or any(
        s.score is not None and abs(s.score - detector.threshold) < 1e-9 for s in fa
    )
    for sa, sb in zip(fa, fb, strict=True):
        xa, xb = features(sa), features(sb)
        assert (xa is None) == (xb is None)
        if xa is not None and xb is not None:
            assert all(
                math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9) for u, v in zip(xa, xb, strict=True)
            )


@given(st.lists(maybe, min_size=1, max_size=25), st.sampled_from([1.0, 2.0, 3.0]))
def test_sig16_without_a_proxy_it_is_the_noise_aware_rule(ys: list[float], z: float) -> None:
    """SIG-16, SIG-8: a stream with no proxy reward is judged by the noise-aware rule at
    ``fallback_z`` (its first fire, latched, and its kept checkpoint), and ``uses_fallback``
    says so."""
    detector = LearnedStopDetector(fallback_z=z)
    rule = NoiseAwareDetector(z=z)
    views = [view(i, y) for i, y in enumerate(ys)]
    states = fold(detector, views)
    plain, latched = rule.initial(), False
    for v, s in zip(views, states, strict=True):
        plain = rule.update(plain, v)
        latched = latched or rule.fired(plain)  # a watch latches the rule's first fire
        assert detector.fired(s) == latched
        assert detector.kept(s) == rule.kept(plain)
        assert detector.uses_fallback(s)
    assert detector.needs == ("proxy_reward",)
    assert not detector.uses_fallback(fold(detector, [view(0, 0.0, 1.0)])[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"weights": (1.0,) * (len(FEATURES) - 1)},
        {"weights": (math.nan,) * len(FEATURES)},
        {"bias": math.inf},
        {"threshold": math.nan},
        {"fallback_z": 0.0},
        {"memory": -1.0},
        {"warmup_evals": -1},
    ],
)
def test_sig16_bad_parameters(kwargs: dict[str, Any]) -> None:
    """SIG-16: weights of the wrong length or not finite, a non-finite bias or threshold, a
    non-positive fallback_z or memory, a negative warm-up are ValueErrors."""
    with pytest.raises(ValueError):
        LearnedStopDetector(**kwargs)


def test_sig16_registry_name_and_fit() -> None:
    """SIG-16, SYS-1: `learned` builds the shipped rule, a saved state may name its class; the
    name carries FIT for the shipped weights and a digest for others."""
    assert make_detector("learned") == LearnedStopDetector()
    assert DETECTOR_TYPES["LearnedStopDetector"] is LearnedStopDetector
    assert f"fit={FIT}," in LearnedStopDetector().name
    other = LearnedStopDetector(weights=(0.5,) * len(FEATURES))
    assert "fit=custom-" in other.name and other.name != LearnedStopDetector().name
    assert other.name == LearnedStopDetector(weights=(0.5,) * len(FEATURES)).name


@given(
    st.lists(st.tuples(scores, scores), min_size=1, max_size=15),
    st.sampled_from([LearnedStopDetector(), LearnedStopDetector(weights=(0.3,) * len(FEATURES))]),
    st.data(),
)
def test_sig16_a_monitor_saves_and_restores_it(
    rows: list[tuple[float, float]], detector: LearnedStopDetector, data: Any
) -> None:
    """SIG-16, SIG-7, MON-11: a monitor saved after any prefix and restored from its JSON gives
    the same verdicts on the rest; other weights are refused by the saved name."""
    cut = data.draw(st.integers(0, len(rows)))
    original = Monitor(detector)
    for i, (y, proxy) in enumerate(rows[:cut]):
        original.observe("j", 10 * (i + 1), y, proxy_reward=proxy)
    restored = Monitor.from_json(original.to_json())
    assert restored.to_dict() == original.to_dict()
    for i, (y, proxy) in enumerate(rows[cut:], start=cut):
        step = 10 * (i + 1)
        assert restored.observe("j", step, y, proxy_reward=proxy) == original.observe(
            "j", step, y, proxy_reward=proxy
        )
    with pytest.raises(ValueError):
        Monitor.from_json(original.to_json(), LearnedStopDetector(weights=(9.0,) * len(FEATURES)))


def test_sig16_extreme_scores_fold_to_a_state_a_monitor_saves() -> None:
    """SIG-16: scores near the float range and tiny ones fold without error to finite states."""
    for ys in ([0.0, 1e300, -1e300, 1e300, 0.0, 5.0, -1e300], [0.0, 0.0, 1e-268, 0.0, 1e-300]):
        monitor = Monitor(LearnedStopDetector(warmup_evals=0))
        for i, y in enumerate(ys):
            monitor.observe("j", 10 * (i + 1), y, proxy_reward=-y)
        monitor.to_json()
