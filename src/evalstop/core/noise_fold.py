"""The noise-aware rule, written once: its state and its fold in place (spec ``NAD-11``).

:class:`NoiseFold` holds a watch of :class:`~evalstop.core.noise_aware.NoiseAwareDetector` as
mutable fields; :func:`noise_folder` gives the function that folds a report into it from the
report's step and score alone, without building a
:class:`~evalstop.core.boundary.CheckpointView`, a :class:`NoiseState` or a
:class:`~evalstop.core.detectors.Watch`. It is the only copy of the rule's arithmetic
(``NAD-1`` to ``NAD-4``, ``NAD-7``, ``NAD-10``): ``NoiseAwareDetector.update`` runs it on a
scratch fold of its state, and the fast paths of the engine (``ENG-17``), the monitor
(``MON-14``) and ``fold_job`` run it on their records, with the detector's parameters read once
per folder instead of once per report. Which fold applies to a detector is said in one place,
the registry's :func:`~evalstop.core.registry.in_place`.

The module imports only :mod:`evalstop.core.folds` of the package, so the detector that it
folds can import it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import attrs

from evalstop.core.folds import WatchFields

__all__ = ["ROUGHNESS_TO_SIGMA", "SPAN", "NoiseFold", "NoiseRule", "NoiseState", "noise_folder"]

ROUGHNESS_TO_SIGMA = math.sqrt(6.0) * math.sqrt(2.0 / math.pi)
"""E|e| / sigma for a second difference ``e`` of independent N(0, sigma^2) scores."""

SPAN = 1e300
"""The farthest a score may lie from the first valid score for the rule to fold it (``NAD-7``).
Levels, peaks and tracks are weighted means of such differences and a second difference is at
most 4 of them, so every number of the state stays finite (the roughness sum for any run of
fewer than 10^7 evaluations); chosen from the float range, not from data."""


@attrs.frozen(slots=True)
class NoiseState:
    """The noise-aware detector's state on one job: a fixed set of numbers (O(1)).

    Attributes:
        evals: valid evaluations folded so far.
        step: the step of the last valid evaluation.
        origin: the first valid score; every level below is relative to it.
        last: the last valid score minus ``origin``; before: the one before it.
        level: the exponentially weighted level minus ``origin``.
        weight: sum of the squared weights of ``level`` (its variance over sigma^2).
        roughness: sum of the absolute second differences so far.
        differences: how many second differences ``roughness`` sums.
        peak: the highest level so far (or the baseline), minus ``origin``.
        peak_weight: ``weight`` of the level at the peak (0 for a baseline).
        alarm: whether the rule holds after the last valid evaluation.
        track: the keep rule's exponentially weighted level minus ``origin`` (``NAD-10``).
        kept_level: the highest ``track`` so far; kept_step: the step where it was reached.
        kept_score: the score reported at ``kept_step`` (as reported, not relative).
    """

    evals: int = 0
    step: int = 0
    origin: float | None = None
    last: float = 0.0
    before: float = 0.0
    level: float = 0.0
    weight: float = 0.0
    roughness: float = 0.0
    differences: int = 0
    peak: float = 0.0
    peak_weight: float = 0.0
    alarm: bool = False
    track: float = 0.0
    kept_level: float = 0.0
    kept_step: int = 0
    kept_score: float = 0.0


class NoiseRule(Protocol):
    """The parameters of the noise-aware rule (those of ``NoiseAwareDetector``)."""

    @property
    def z(self) -> float: ...

    @property
    def memory(self) -> float: ...

    @property
    def warmup_evals(self) -> int: ...

    @property
    def warmup_steps(self) -> int: ...

    @property
    def min_delta(self) -> float: ...

    @property
    def baseline(self) -> float | None: ...

    @property
    def keep(self) -> str: ...

    @property
    def keep_memory(self) -> float: ...


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
    the watch's and the :class:`NoiseState`'s (``evals_rule`` is
    ``NoiseState.evals``; every other rule field has its ``NoiseState`` name), updated in
    place by a :func:`noise_folder` (spec ``NAD-11``).

    Built from a watch (``NoiseFold(watch)``, as ``DeclineFold(watch)``). Mutable on purpose:
    it lives only inside a fast path (and ``NoiseAwareDetector.update``'s scratch copy);
    :attr:`rule` gives the rule's immutable state, ``registry.InPlace.watch`` the watch's.
    """

    __slots__ = (*_NOISE_FIELDS, "best_score", "best_step", "evals", "fired_step")

    def __init__(self, watch: WatchFields[NoiseState]) -> None:
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

    @classmethod
    def scratch(cls, state: NoiseState) -> NoiseFold:
        """A fold of the rule's state ``state`` alone, in an empty watch: what
        ``NoiseAwareDetector.update`` folds a report into."""
        s = cls.__new__(cls)
        s.evals_rule, s.step, s.origin = state.evals, state.step, state.origin
        s.last, s.before, s.level, s.weight = state.last, state.before, state.level, state.weight
        s.roughness, s.differences = state.roughness, state.differences
        s.peak, s.peak_weight, s.alarm = state.peak, state.peak_weight, state.alarm
        s.track, s.kept_level = state.track, state.kept_level
        s.kept_step, s.kept_score = state.kept_step, state.kept_score
        s.evals, s.best_step, s.best_score, s.fired_step = 0, None, None, None
        return s

    @classmethod
    def levels(
        cls,
        evals: int,
        step: int,
        origin: float | None,
        last: float,
        before: float,
        level: float,
        weight: float,
        roughness: float,
        differences: int,
    ) -> NoiseFold:
        """A scratch fold of the level and noise alone (``NAD-1``, ``NAD-2``: the fields of
        the same names), every other field at rest: what the divergence detector folds its
        side signal into (``SIG-4``)."""
        s = cls.__new__(cls)
        s.evals_rule, s.step, s.origin, s.last, s.before = evals, step, origin, last, before
        s.level, s.weight, s.roughness, s.differences = level, weight, roughness, differences
        s.peak = s.peak_weight = s.track = s.kept_level = s.kept_score = 0.0
        s.alarm, s.kept_step = False, 0
        s.evals, s.best_step, s.best_score, s.fired_step = 0, None, None, None
        return s

    def fold(self, rule: NoiseRule, step: int, value: float) -> bool:
        """Fold one report in place with ``noise_folder(rule)`` (spec ``NAD-11``); True when
        ``value`` is finite. The folder of the last rule is kept, so a loop over one rule
        builds it once."""
        last = _LAST[0] if _LAST else None
        if last is None or last[0] is not rule:
            last = (rule, noise_folder(rule))
            _LAST[:] = [last]
        return last[1](self, step, value)

    @property
    def rule(self) -> NoiseState:
        """The rule's state, as an immutable value."""
        return NoiseState(
            self.evals_rule,
            self.step,
            self.origin,
            self.last,
            self.before,
            self.level,
            self.weight,
            self.roughness,
            self.differences,
            self.peak,
            self.peak_weight,
            self.alarm,
            self.track,
            self.kept_level,
            self.kept_step,
            self.kept_score,
        )


def noise_folder(rule: NoiseRule) -> Callable[[NoiseFold, int, float], bool]:
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


def _first(rule: NoiseRule) -> Callable[[NoiseFold, int, float], bool]:
    """The rare reports of :func:`noise_folder`: a NaN or infinite score (the state stays
    as it was) and the first valid score (the state's origin; a baseline seeds the peak)."""
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


def _skip(rule: NoiseRule) -> Callable[[NoiseFold, int, float], bool]:
    """The rare finite report more than ``SPAN`` from the origin: the rule's state stays as it
    was (``NAD-7``) and the watch counts it as ``observe`` does
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
_LAST: list[tuple[NoiseRule, Callable[[NoiseFold, int, float], bool]]] = []
"""The last rule :meth:`NoiseFold.fold` folded with and its folder (one tuple, replaced
whole, so that a reader never pairs one rule with another's folder)."""
