"""The noise-aware detector against a line-by-line transcription of its spec (NAD-1 to NAD-4,
and the kept checkpoint of NAD-10).

The reference below is written from spec/detectors.md, not from the module; every state number
and the fire decision must agree after every report, for random knobs and report sequences
(repeated steps, a report at step 0 or 1, a baseline equal to the first score, equal levels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import checkpoint_view
from evalstop.core.noise_aware import NoiseAwareDetector

SIGMA_FACTOR = math.sqrt(6.0) * math.sqrt(2.0 / math.pi)


@attrs.define
class Reference:
    """NAD-1, NAD-2, NAD-3, NAD-4, NAD-10: the numbers the spec names, after each valid report."""

    detector: NoiseAwareDetector
    scores: list[float] = attrs.field(factory=list)
    step: int = 0
    level: float = 0.0
    w: float = 1.0
    peak: float = 0.0
    w_peak: float = 1.0
    second_differences: list[float] = attrs.field(factory=list)
    track: float = 0.0  # NAD-10: the keep rule's level (relative to the first score)
    kept_level: float = 0.0
    kept: tuple[int, float] = (0, 0.0)  # (step, score) of the kept checkpoint

    def report(self, step: int, score: float) -> bool:
        """Fold one valid report; whether the detector fires after it."""
        d = self.detector
        if not self.scores:
            self.scores, self.step, self.kept = [score], step, (step, score)
            if d.baseline is not None and d.baseline > score:
                self.peak, self.w_peak = d.baseline - score, 0.0
            return False
        value = score - self.scores[0]
        alpha = 1.0 - math.exp(-(step - self.step) / (d.memory * max(step, 1)))
        self.level += alpha * (value - self.level)
        self.w = (1.0 - alpha) ** 2 * self.w + alpha**2
        keep_alpha = 1.0 - math.exp(-(step - self.step) / (d.keep_memory * max(step, 1)))
        self.track += keep_alpha * (value - self.track)
        if self.track > self.kept_level:
            self.kept_level, self.kept = self.track, (step, score)
        self.scores.append(score)
        self.step = step
        if len(self.scores) >= 3:
            y = self.scores
            self.second_differences.append(y[-1] - 2.0 * y[-2] + y[-3])
        if self.level > self.peak:
            self.peak, self.w_peak = self.level, self.w
        return (
            len(self.scores) >= d.warmup_evals
            and step >= d.warmup_steps
            and bool(self.second_differences)
            and self.peak - self.level > self.threshold()
        )

    def threshold(self) -> float:
        nu = len(self.second_differences)
        if nu == 0:
            return math.inf
        sigma = sum(abs(e) for e in self.second_differences) / nu / SIGMA_FACTOR
        z = self.detector.z
        widened = z + (z**3 + z) / (4.0 * nu)
        return max(widened * sigma * math.sqrt(self.w_peak + self.w), self.detector.min_delta)


def check_against_reference(
    detector: NoiseAwareDetector, reports: Sequence[tuple[int, float]]
) -> None:
    """Fold ``reports`` into both; compare every state number and the decision each time."""
    reference = Reference(detector)
    state = detector.initial()
    for step, score in reports:
        expected = reference.report(step, score)
        state = detector.update(state, checkpoint_view(step, score))
        assert detector.fired(state) is expected
        assert state.evals == len(reference.scores)
        assert state.step == step
        assert state.level == pytest.approx(reference.level, rel=1e-9, abs=1e-12)
        assert state.weight == pytest.approx(reference.w, rel=1e-9, abs=1e-12)
        assert state.peak == pytest.approx(reference.peak, rel=1e-9, abs=1e-12)
        assert state.peak_weight == pytest.approx(reference.w_peak, rel=1e-9, abs=1e-12)
        assert state.differences == len(reference.second_differences)
        assert detector.threshold(state) == pytest.approx(
            reference.threshold(), rel=1e-9, abs=1e-12
        )
        assert state.track == pytest.approx(reference.track, rel=1e-9, abs=1e-12)
        assert state.kept_level == pytest.approx(reference.kept_level, rel=1e-9, abs=1e-12)
        assert (state.kept_step, state.kept_score) == reference.kept
        expected_kept = reference.kept if detector.keep == "level" else None
        assert detector.kept(state) == expected_kept


dyadic = st.integers(min_value=-64, max_value=64).map(lambda n: n / 8)


@st.composite
def detectors_and_reports(
    draw: st.DrawFn,
) -> tuple[NoiseAwareDetector, list[tuple[int, float]]]:
    start = draw(st.integers(min_value=0, max_value=3))
    gaps = draw(st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=25))
    steps = [start + sum(gaps[:i]) for i in range(len(gaps))]
    scores = draw(st.lists(dyadic, min_size=len(steps), max_size=len(steps)))
    baseline = draw(st.sampled_from([None, 0.0, 1.0, -1.0]))
    detector = NoiseAwareDetector(
        z=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
        memory=draw(st.sampled_from([0.05, 0.2, 1.0])),
        warmup_evals=draw(st.integers(min_value=0, max_value=6)),
        warmup_steps=draw(st.sampled_from([0, *steps])),
        min_delta=draw(st.sampled_from([0.0, 0.25])),
        baseline=None if baseline is None else scores[0] + baseline,
        keep=draw(st.sampled_from(["level", "best"])),
        keep_memory=draw(st.sampled_from([0.01, 0.05, 0.5])),
    )
    return detector, list(zip(steps, scores, strict=True))


@given(detectors_and_reports())
def test_nad1_nad2_nad3_nad4_state_and_decision_follow_the_spec(
    case: tuple[NoiseAwareDetector, list[tuple[int, float]]],
) -> None:
    """NAD-1, NAD-2, NAD-3, NAD-4, NAD-10: noise, level, weights, peak, threshold, the
    decision and the kept checkpoint equal the spec's formulas after every report."""
    detector, reports = case
    check_against_reference(detector, reports)


def test_nad2_nad3_hand_cases_the_random_ones_may_miss() -> None:
    """NAD-2, NAD-3: a repeated step leaves the level; an equal level keeps the older peak; a
    report at step 1 uses max(s, 1); a baseline equal to the first score seeds nothing."""
    detector = NoiseAwareDetector(z=1.0, memory=0.5, warmup_evals=0)
    check_against_reference(detector, [(0, 0.0), (1, 0.0), (1, 1.0), (2, 0.0), (9, 0.0)])
    seeded = NoiseAwareDetector(baseline=0.5, warmup_evals=0)
    check_against_reference(seeded, [(10, 0.5), (20, 0.0), (30, 0.25), (40, -0.5)])
    assert seeded.update(seeded.initial(), checkpoint_view(10, 0.5)).peak_weight == 1.0


def test_nad4_a_drop_equal_to_the_threshold_does_not_fire() -> None:
    """NAD-4: the drop must exceed the threshold: with alpha = 1 (memory tiny) and z tiny the
    threshold is min_delta exactly, and a drop of exactly min_delta does not fire."""
    detector = NoiseAwareDetector(z=1e-9, memory=1e-6, warmup_evals=0, min_delta=1.0)
    reports = [(10, 0.0), (20, 1.0), (30, 2.0), (40, 1.0)]
    check_against_reference(detector, reports)
    state = detector.initial()
    for step, score in reports:
        state = detector.update(state, checkpoint_view(step, score))
    assert state.peak - state.level == 1.0
    assert detector.threshold(state) == 1.0
    assert not detector.fired(state)
    deeper = detector.update(state, checkpoint_view(50, 0.0))
    assert detector.fired(deeper)


def test_nad4_warmup_steps_is_inclusive() -> None:
    """NAD-4: the rule applies from step ``warmup_steps`` on (the report at that step may fire)."""
    reports = [(10, 0.0), (20, 1.0), (30, 2.0), (40, 1.0), (50, -3.0)]
    fired_at = []
    for warmup_steps in (0, 50, 51):
        detector = NoiseAwareDetector(z=0.5, memory=1e-6, warmup_evals=0, warmup_steps=warmup_steps)
        state = detector.initial()
        for step, score in reports:
            state = detector.update(state, checkpoint_view(step, score))
            if detector.fired(state):
                fired_at.append((warmup_steps, step))
                break
    assert fired_at[1:] == [(50, 50)]


@pytest.mark.parametrize(
    ("name", "value"),
    [("warmup_evals", True), ("warmup_evals", 1.5), ("warmup_steps", False), ("z", -1.0)],
)
def test_nad8_bad_parameter_error_names_the_parameter(name: str, value: object) -> None:
    """NAD-8: a bool or non-integer count and a non-positive z are ValueErrors naming the
    parameter and the value."""
    with pytest.raises(ValueError, match=rf"^{name} .*{value!r}"):
        NoiseAwareDetector(**{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"), [("memory", 0.0), ("min_delta", -0.5), ("baseline", math.inf)]
)
def test_nad8_every_validator_names_the_parameter(name: str, value: float) -> None:
    """NAD-8: each kind of bad knob (positive, non-negative, optional finite) names itself."""
    with pytest.raises(ValueError, match=rf"^{name} must be a finite number"):
        NoiseAwareDetector(**{name: value})  # type: ignore[arg-type]


def test_nad5_first_state_is_numbers_only() -> None:
    """NAD-5: after the first report every field is a plain number or bool (none is None)."""
    detector = NoiseAwareDetector()
    state = detector.update(detector.initial(), checkpoint_view(10, 0.25))
    values = attrs.astuple(state)
    assert all(isinstance(value, bool | int | float) for value in values)
    assert state.alarm is False
