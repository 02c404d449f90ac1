"""The noise-aware rule folded in place: the fast path of the online monitor and of
``fold_job`` (spec ``NAD-11``).

:class:`NoiseFold` holds a watch of :class:`~evalstop.core.noise_aware.NoiseAwareDetector` as
mutable fields and folds a report from its step and score alone, without building a
:class:`~evalstop.core.boundary.CheckpointView`, a :class:`~evalstop.core.noise_aware.NoiseState`
or a :class:`~evalstop.core.detectors.Watch`; it equals :func:`~evalstop.core.detectors.observe`
report by report (a property test checks every field). The arithmetic is
``NoiseAwareDetector.update``'s, operation for operation.
"""

from __future__ import annotations

import math

import attrs

from evalstop.core.detectors import Watch
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, NoiseAwareDetector, NoiseState

__all__ = ["NoiseFold"]

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
    place by :meth:`fold` (spec ``NAD-11``).

    Mutable on purpose, the one such class in the core: it is the fast path of the monitor
    and of ``fold_job`` and never leaves them; :attr:`watch` gives the immutable value.
    """

    __slots__ = (*_NOISE_FIELDS, "best_score", "best_step", "evals", "fired_step")

    def __init__(self, watch: Watch[NoiseState]) -> None:
        for name, value in zip(_NOISE_FIELDS, attrs.astuple(watch.rule), strict=True):
            setattr(self, name, value)
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    def fold(self, rule: NoiseAwareDetector, step: int, value: float) -> bool:
        """Fold a report of score ``value`` at ``step`` in place, as ``observe(rule, watch,
        view)`` does for any view with that step and score (the rule reads nothing else;
        spec ``NAD-11``); True when ``value`` is finite. O(1)."""
        finite = value - value == 0.0  # inf - inf and NaN - NaN are NaN
        if finite:
            if self.origin is None:
                self._first(rule, step, value)
            else:
                self._next(rule, step, value)
            self.evals += 1
            best = self.best_score
            if best is None or value > best:
                self.best_step, self.best_score = step, value
        if rule.keep == "level" and self.origin is not None:
            self.best_step, self.best_score = self.kept_step, self.kept_score
        if self.fired_step is None and self.alarm:
            self.fired_step = step
        return finite

    def _first(self, rule: NoiseAwareDetector, step: int, value: float) -> None:
        """``NoiseAwareDetector._first``: the state after the first valid score."""
        peak, peak_weight = 0.0, 1.0
        if rule.baseline is not None and rule.baseline - value > 0.0:
            peak, peak_weight = rule.baseline - value, 0.0
        self.evals_rule, self.step, self.origin = 1, step, value
        self.last = self.before = self.level = self.roughness = self.track = 0.0
        self.weight, self.differences, self.peak, self.peak_weight = 1.0, 0, peak, peak_weight
        self.alarm, self.kept_level, self.kept_step, self.kept_score = False, 0.0, step, value

    def _next(self, rule: NoiseAwareDetector, step: int, score: float) -> None:
        """``NoiseAwareDetector.update`` after the first valid score, field by field."""
        origin = self.origin
        assert origin is not None
        value = score - origin
        gap = max(step - self.step, 0)
        elapsed = max(step, 1)
        alpha = -_expm1(-gap / (rule.memory * elapsed))
        level = self.level + alpha * (value - self.level)
        weight = (1.0 - alpha) ** 2 * self.weight + alpha * alpha
        if self.evals_rule >= 2:
            self.roughness += abs(value - 2.0 * self.last + self.before)
            self.differences += 1
        if level > self.peak:
            self.peak, self.peak_weight = level, weight
        self.evals_rule += 1
        drop, variance = self.peak - level, weight + self.peak_weight
        if self.evals_rule < rule.warmup_evals or step < rule.warmup_steps:
            self.alarm = False
        else:
            self.alarm = drop > _threshold(rule, self.roughness, self.differences, variance)
        track = self.track - _expm1(-gap / (rule.keep_memory * elapsed)) * (value - self.track)
        if track > self.kept_level:
            self.kept_level, self.kept_step, self.kept_score = track, step, score
        self.step, self.before, self.last = step, self.last, value
        self.level, self.weight, self.track = level, weight, track

    @property
    def watch(self) -> Watch[NoiseState]:
        """The job's watch, built from the record."""
        rule = NoiseState(*(getattr(self, name) for name in _NOISE_FIELDS))
        return Watch(rule, self.evals, self.best_step, self.best_score, self.fired_step)


def _threshold(rule: NoiseAwareDetector, roughness: float, count: int, variance: float) -> float:
    """``NoiseAwareDetector._threshold``: the drop that fires."""
    if count == 0:
        return math.inf
    sigma = roughness / count / ROUGHNESS_TO_SIGMA
    z = rule.z + (rule.z**3 + rule.z) / (4.0 * count)
    return max(z * sigma * math.sqrt(variance), rule.min_delta)


_expm1 = math.expm1
