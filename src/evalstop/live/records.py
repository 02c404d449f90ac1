"""The mutable per-job records behind the monitor's :class:`~evalstop.live.state.JobState`.

On the built-in rule's path (spec ``MON-14``) the monitor updates a job's record in place on
each observation: no :class:`~evalstop.core.detectors.Watch` or detector state is built per
observation. A record's :attr:`watch` and :meth:`snapshot` build the immutable values
only when they are read (``job_state``, ``verdict``, ``to_dict``). Internal to
:mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from evalstop.core.detectors import DeclineDetector, DeclineState, Detector, Watch
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, NoiseAwareDetector, NoiseState
from evalstop.live.state import JobState

__all__ = ["DeclineRecord", "NoiseRecord", "WatchRecord", "record_of"]


class WatchRecord:
    """A job's record for any detector: the watch itself, replaced on each observation.

    Attributes:
        serial: the job's registration number.
        last_step: step of the last accepted observation.
        seen: accepted observations.
        watch: the detector's watch.
    """

    __slots__ = ("last_step", "seen", "serial", "watch")

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[Any]) -> None:
        self.serial = serial
        self.last_step = last_step
        self.seen = seen
        self.watch = watch

    @property
    def evals(self) -> int:
        """Valid evaluations folded."""
        return self.watch.evals

    @property
    def best_step(self) -> int | None:
        """Step of the best valid score."""
        return self.watch.best_step

    @property
    def best_score(self) -> float | None:
        """The best valid score (internal, higher-is-better units)."""
        return self.watch.best_score

    @property
    def fired_step(self) -> int | None:
        """Step at which the detector fired; None until then."""
        return self.watch.fired_step

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


class DeclineRecord:
    """A job's record for the built-in :class:`~evalstop.core.detectors.DeclineDetector`:
    the watch's fields and the rule's two numbers, updated in place (spec ``MON-14``).

    Attributes:
        serial: the job's registration number.
        last_step: step of the last accepted observation.
        seen: accepted observations.
        declines: consecutive declines (the rule's ``DeclineState.declines``).
        previous: the last valid score (``DeclineState.previous``).
        evals: valid evaluations folded.
        best_step: step of the best valid score.
        best_score: that score (internal units).
        fired_step: step at which the rule fired; None until then.
    """

    __slots__ = (
        "best_score",
        "best_step",
        "declines",
        "evals",
        "fired_step",
        "last_step",
        "previous",
        "seen",
        "serial",
    )

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[DeclineState]) -> None:
        self.serial = serial
        self.last_step = last_step
        self.seen = seen
        self.declines = watch.rule.declines
        self.previous = watch.rule.previous
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    def fold(self, rule: DeclineDetector, step: int, value: float) -> bool:
        """Fold an accepted observation of internal score ``value`` at ``step`` in place, as
        ``observe_decline`` does (spec ``DET-10``); True when ``value`` is finite."""
        k, min_delta = rule.k, rule.min_delta
        self.last_step = step
        self.seen += 1
        if value - value == 0.0:  # finite: inf - inf and NaN - NaN are NaN
            previous = self.previous
            fall = previous is not None and value < previous - min_delta
            self.declines = declines = self.declines + 1 if fall else 0
            self.previous = value
            self.evals += 1
            best = self.best_score
            if best is None or value > best:
                self.best_step, self.best_score = step, value
            if declines >= k and self.fired_step is None:
                self.fired_step = step
            return True
        if self.declines >= k and self.fired_step is None:
            self.fired_step = step
        return False

    @property
    def watch(self) -> Watch[DeclineState]:
        """The job's watch, built from the record."""
        rule = DeclineState(self.declines, self.previous)
        return Watch(rule, self.evals, self.best_step, self.best_score, self.fired_step)

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


def record_of(
    state: JobState, detector: Detector[Any]
) -> WatchRecord | DeclineRecord | NoiseRecord:
    """The mutable record of a saved job state, for ``detector``'s path (spec ``MON-14``)."""
    parts = (state.serial, state.last_step, state.seen, state.watch)
    if type(detector) is DeclineDetector:
        return DeclineRecord(*parts)
    if type(detector) is NoiseAwareDetector:
        return NoiseRecord(*parts)
    return WatchRecord(*parts)


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


class NoiseRecord:
    """A job's record for the built-in :class:`~evalstop.core.noise_aware.NoiseAwareDetector`:
    the watch's fields and the :class:`~evalstop.core.noise_aware.NoiseState` fields, updated
    in place by :meth:`fold` (spec ``MON-14``). ``evals_rule`` is ``NoiseState.evals``; every
    other rule field has its ``NoiseState`` name.
    """

    __slots__ = (
        *_NOISE_FIELDS,
        "best_score",
        "best_step",
        "evals",
        "fired_step",
        "last_step",
        "seen",
        "serial",
    )

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[NoiseState]) -> None:
        self.serial = serial
        self.last_step = last_step
        self.seen = seen
        for name, value in zip(_NOISE_FIELDS, attrs.astuple(watch.rule), strict=True):
            setattr(self, name, value)
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    def fold(self, rule: NoiseAwareDetector, step: int, value: float) -> bool:
        """Fold an accepted observation of internal score ``value`` at ``step`` in place, as
        ``observe(rule, watch, view)`` does with ``NoiseAwareDetector.update`` (spec
        ``MON-14``); True when ``value`` is finite."""
        self.last_step = step
        self.seen += 1
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

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


def _threshold(rule: NoiseAwareDetector, roughness: float, count: int, variance: float) -> float:
    """``NoiseAwareDetector._threshold``: the drop that fires."""
    if count == 0:
        return math.inf
    sigma = roughness / count / ROUGHNESS_TO_SIGMA
    z = rule.z + (rule.z**3 + rule.z) / (4.0 * count)
    return max(z * sigma * math.sqrt(variance), rule.min_delta)


_expm1 = math.expm1
