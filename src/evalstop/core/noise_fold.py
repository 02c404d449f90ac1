"""The noise-aware rule folded in place: the fast path of the online monitor and of
``fold_job`` (spec ``NAD-11``).

:class:`NoiseFold` holds a watch of :class:`~evalstop.core.noise_aware.NoiseAwareDetector` as
mutable fields; :func:`noise_folder` gives the function that folds a report into it from the
report's step and score alone, without building a
:class:`~evalstop.core.boundary.CheckpointView`, a :class:`~evalstop.core.noise_aware.NoiseState`
or a :class:`~evalstop.core.detectors.Watch`; it equals :func:`~evalstop.core.detectors.observe`
report by report (a property test checks every field). The arithmetic is
``NoiseAwareDetector.update``'s, operation for operation, with the detector's parameters read
once per folder instead of once per report.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from evalstop.core.detectors import Watch
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, SPAN, NoiseAwareDetector, NoiseState

__all__ = ["NoiseFold", "noise_folder"]

_NOISE_FIELDS = (
    "evals_rule",
    "step",
    "origin",
    "last",
    "before",
    "level",
    "weight",
    "roughness",
    "differences",
    "peak",
    "peak_weight",
    "alarm",
    "track",
    "kept_level",
    "kept_step",
    "kept_score",
)


class NoiseFold:
    """A :class:`~evalstop.core.detectors.Watch` of the noise-aware rule as mutable fields:
    the watch's and the :class:`~evalstop.core.noise_aware.NoiseState`'s (``evals_rule`` is
    ``NoiseState.evals``; every other rule field has its ``NoiseState`` name), updated in
    place by a :func:`noise_folder` (spec ``NAD-11``).

    Mutable on purpose, the one such class in the core: it is the fast path of the monitor
    and of ``fold_job`` and never leaves them; :attr:`watch` gives the immutable value.
    """

    __slots__ = (*_NOISE_FIELDS, "best_score", "best_step", "evals", "fired_step")

    def __init__(self, watch: Watch[NoiseState]) -> None:
        rule = watch.rule
        self.evals_rule, self.step, self.origin = rule.evals, rule.step, rule.origin
        self.last, self.before, self.level, self.weight = (
            rule.last,
            rule.before,
            rule.level,
            rule.weight,
        )
        self.roughness, self.differences = rule.roughness, rule.differences
        self.peak, self.peak_weight, self.alarm = rule.peak, rule.peak_weight, rule.alarm
        self.track, self.kept_level = rule.track, rule.kept_level
        self.kept_step, self.kept_score = rule.kept_step, rule.kept_score
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    def fold(self, rule: NoiseAwareDetector, step: int, value: float) -> bool:
        """Fold one report in place with ``noise_folder(rule)`` (spec ``NAD-11``); True when
        ``value`` is finite. The folder of the last rule is kept, so a loop over one rule
        builds it once."""
        last = _LAST[0]
        if last[0] is not rule:
            last = _LAST[0] = (rule, noise_folder(rule))
        return last[1](self, step, value)

    @property
    def rule(self) -> NoiseState:
        """The rule's state, as an immutable value."""
        return NoiseState(*(getattr(self, name) for name in _NOISE_FIELDS))

    @property
    def watch(self) -> Watch[NoiseState]:
        """The job's watch, built from the record."""
        return Watch(self.rule, self.evals, self.best_step, self.best_score, self.fired_step)


def noise_folder(rule: NoiseAwareDetector) -> Callable[[NoiseFold, int, float], bool]:
    """The function ``fold(state, step, score)`` that folds a report of ``score`` at ``step``
    into ``state`` in place, as ``observe(rule, watch, view)`` does for any view with that
    step and score (the rule reads nothing else; spec ``NAD-11``); it returns True when
    ``score`` is finite. O(1) per report.

    The arithmetic is ``update``'s with ``alpha = -em`` (``em = expm1(...)``): IEEE rounding
    is symmetric, so ``(-a) * b == -(a * b)`` and ``x + (-y) == x - y`` bit for bit."""
    memory, keep_memory, z, widen = rule.memory, rule.keep_memory, rule.z, rule.z**3 + rule.z
    warmup_evals, warmup_steps, min_delta = rule.warmup_evals, rule.warmup_steps, rule.min_delta
    level_keep, first, expm1, sqrt = rule.keep == "level", _first(rule), _expm1, _sqrt
    skip, span, below = _skip(rule), SPAN, -SPAN

    def fold(s: NoiseFold, step: int, score: float) -> bool:
        origin = s.origin
        if score - score != 0.0 or origin is None:  # NaN and inf - inf are NaN
            return first(s, step, score)
        value = score - origin
        if not below <= value <= span:  # its arithmetic would overflow (NAD-7)
            return skip(s, step, score)
        previous = s.step  # alpha = -em below: exact (see above)
        gap, elapsed = step - previous if step > previous else 0, step if step > 1 else 1
        em = expm1(-gap / (memory * elapsed))
        level = s.level
        level = level - em * (value - level)
        weight = (1.0 + em) ** 2 * s.weight + em * em
        last, count, evals = s.last, s.differences, s.evals_rule + 1
        if evals >= 3:  # the state had two valid scores: a second difference
            s.roughness += abs(value - 2.0 * last + s.before)
            s.differences = count = count + 1
        peak = s.peak
        if level > peak:
            s.peak = peak = level
            s.peak_weight = weight
        s.evals_rule = evals
        if evals < warmup_evals or step < warmup_steps or count == 0:
            alarm = False  # _alarm's warm-up; count == 0 is _threshold's inf
        else:
            sigma = s.roughness / count / ROUGHNESS_TO_SIGMA
            threshold = (z + widen / (4.0 * count)) * sigma * sqrt(weight + s.peak_weight)
            alarm = peak - level > (min_delta if min_delta > threshold else threshold)
        s.alarm = alarm
        track = s.track
        track = track - expm1(-gap / (keep_memory * elapsed)) * (value - track)
        if track > s.kept_level:
            s.kept_level, s.kept_step, s.kept_score = track, step, score
        s.step, s.before, s.last = step, last, value  # three targets: no tuple is built
        s.level, s.weight, s.track = level, weight, track
        s.evals += 1
        if level_keep:
            s.best_step, s.best_score = s.kept_step, s.kept_score
        elif (best := s.best_score) is None or score > best:
            s.best_step, s.best_score = step, score
        if alarm and s.fired_step is None:
            s.fired_step = step
        return True

    return fold


def _first(rule: NoiseAwareDetector) -> Callable[[NoiseFold, int, float], bool]:
    """The rare reports of :func:`noise_folder`: a NaN or infinite score (the state stays
    as it was) and the first valid score (``NoiseAwareDetector._first``)."""
    baseline, level_keep = rule.baseline, rule.keep == "level"

    def first(s: NoiseFold, step: int, score: float) -> bool:
        finite = score - score == 0.0
        if finite:
            peak, peak_weight = 0.0, 1.0
            if baseline is not None and baseline - score > 0.0:
                peak, peak_weight = baseline - score, 0.0
            s.evals_rule, s.step, s.origin = 1, step, score
            s.last = s.before = s.level = s.roughness = s.track = 0.0
            s.weight, s.differences, s.peak, s.peak_weight = 1.0, 0, peak, peak_weight
            s.alarm, s.kept_level, s.kept_step, s.kept_score = False, 0.0, step, score
            s.evals += 1
            if (best := s.best_score) is None or score > best:
                s.best_step, s.best_score = step, score
        if level_keep and s.origin is not None:
            s.best_step, s.best_score = s.kept_step, s.kept_score
        if s.fired_step is None and s.alarm:
            s.fired_step = step
        return finite

    return first


def _skip(rule: NoiseAwareDetector) -> Callable[[NoiseFold, int, float], bool]:
    """The rare finite report more than ``SPAN`` from the origin: the rule's state stays as it
    was (``NoiseAwareDetector.update``, ``NAD-7``) and the watch counts it as ``observe`` does
    (a valid evaluation; the best score under ``keep="best"``)."""
    level_keep = rule.keep == "level"

    def skip(s: NoiseFold, step: int, score: float) -> bool:
        s.evals += 1
        if not level_keep and ((best := s.best_score) is None or score > best):
            s.best_step, s.best_score = step, score
        if s.alarm and s.fired_step is None:
            s.fired_step = step
        return True

    return skip


_expm1 = math.expm1
_sqrt = math.sqrt
_LAST: list[tuple[NoiseAwareDetector, Callable[[NoiseFold, int, float], bool]]] = [
    (NoiseAwareDetector(), noise_folder(NoiseAwareDetector()))
]
"""The last rule :meth:`NoiseFold.fold` folded with and its folder (one tuple, replaced
whole, so that a reader never pairs one rule with another's folder)."""
