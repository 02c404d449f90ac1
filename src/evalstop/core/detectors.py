"""Detectors: folds over one job's checkpoint reports that decide when to stop it.

A detector holds O(1) state per job and sees only :class:`~evalstop.core.boundary.CheckpointView`
values, so the same object serves the simulator, the online monitor and trace replay. Scores
are "higher is better"; callers with a lower-is-better metric negate it at the edge.

The pure helpers :func:`count_declines` and :func:`improves` carry PEP 316 contracts that
``nox -s crosshair`` checks (spec ``DET-1`` to ``DET-4``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import attrs

from evalstop.core.boundary import CheckpointView, Verdict
from evalstop.core.folds import DeclineFold, DeclineState, decline_folder
from evalstop.core.noise_aware import _count, _optional_finite

__all__ = [
    "DeclineDetector",
    "Detector",
    "LossPlateau",
    "Never",
    "StopAtProgress",
    "Watch",
    "count_declines",
    "improves",
    "observe",
    "observe_decline",
    "start_watch",
    "verdict_of",
]

S = TypeVar("S")


def count_declines(count: int, previous: float | None, score: float) -> int:
    """Consecutive-decline count after ``score`` follows ``previous`` (spec ``DET-1``, ``DET-2``).

    A decline is a score strictly lower than ``previous`` (the previous valid score, lowered by
    the detector's ``min_delta``); a tie or a rise resets the count; the first valid score
    starts it at 0.

    pre: count >= 0
    pre: not math.isnan(score)
    pre: previous is None or not math.isnan(previous)
    post: __return__ >= 0
    post: __return__ <= count + 1
    post: (previous is not None and score < previous) == (__return__ == count + 1)
    post: (previous is None or score >= previous) == (__return__ == 0)
    """
    if previous is not None and score < previous:
        return count + 1
    return 0


def improves(best: float | None, score: float) -> bool:
    """True when ``score`` becomes the new best (strictly higher; the first valid score does).

    Ties keep the earlier checkpoint (spec ``DET-4``).

    pre: not math.isnan(score)
    pre: best is None or not math.isnan(best)
    post: __return__ == (best is None or score > best)
    """
    return best is None or score > best


class Detector(Protocol[S]):
    """A fold over one job's checkpoint reports with a stop rule.

    Implementations are frozen attrs values: hashable, comparable and free of mutable state.
    One member is optional: ``kept(state)``, the ``(step, score)`` of the checkpoint the rule
    keeps itself (or None), which :func:`observe` then keeps instead of the best reported
    score (spec ``DET-12``, ``NAD-10``). Which built-in rules also fold in place is said by
    :func:`evalstop.core.registry.in_place`.
    """

    @property
    def name(self) -> str:
        """A short label that identifies the detector and its parameters."""
        ...

    def initial(self) -> S:
        """The state before any checkpoint."""
        ...

    def update(self, state: S, obs: CheckpointView) -> S:
        """The state after one more checkpoint report (O(1))."""
        ...

    def fired(self, state: S) -> bool:
        """Whether the rule asks to stop the job in this state."""
        ...


def _at_least_one(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    # A bool, a float (2.5, NaN) or a string is no count (spec DET-2), as for ``_count``.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{attribute.name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value!r}")


def _non_negative_finite(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


@functools.lru_cache(maxsize=1024, typed=True)
def _decline_name(k: int, min_delta: float, warmup_steps: int) -> str:
    """:attr:`DeclineDetector.name` (cached per parameter values and their types, so a value
    that formats differently is never served another's label)."""
    extras = "".join(
        f",{label}={value:g}"
        for label, value in (("min_delta", min_delta), ("warmup_steps", warmup_steps))
        if value
    )
    return f"evalstop(k={k}{extras})"


@attrs.frozen(slots=True)
class DeclineDetector:
    """EvalStop's rule: fire at the ``k``-th consecutive decline of the eval score.

    NaN or infinite scores are skipped: they neither count as a decline nor reset the count,
    and the next valid score is compared with the last valid one (spec ``DET-3``).

    Attributes:
        k: the consecutive declines that fire the detector.
        min_delta: a decline must be more than this below the previous score, in the metric's
            units (0: any strict decline, the paper's rule; spec ``DET-1``).
        warmup_steps: reports before this step are not counted by the rule (0; ``DET-11``).

    Raises:
        ValueError: ``k < 1``, a negative or non-finite ``min_delta``, a negative
            ``warmup_steps``.
    """

    k: int = attrs.field(default=2, validator=_at_least_one)
    min_delta: float = attrs.field(default=0.0, validator=_non_negative_finite)
    warmup_steps: int = attrs.field(default=0, validator=_count)

    @functools.cached_property
    def name(self) -> str:
        # read per decision by the wrapper and per verdict: built once per parameter set and
        # kept by each detector (a slot, not a field, as _folder: a read is a slot's)
        return _decline_name(self.k, self.min_delta, self.warmup_steps)

    def initial(self) -> DeclineState:
        return DeclineState()

    def update(self, state: DeclineState, obs: CheckpointView) -> DeclineState:
        # the rule's one copy (evalstop.core.folds), run on a scratch fold of the state
        scratch = DeclineFold(Watch(state))
        self._folder(scratch, obs.step, obs.eval_score)
        return scratch.rule

    def fired(self, state: DeclineState) -> bool:
        return state.declines >= self.k

    @functools.cached_property
    def _folder(self) -> Callable[[DeclineFold, int, float], bool]:
        # decline_folder(self), built once per detector (a slot, not a field: no eq, no hash)
        return decline_folder(self)


def _fraction(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (0.0 < value <= 1.0):
        raise ValueError(f"{attribute.name} must be in (0, 1], got {value!r}")


@attrs.frozen(slots=True)
class StopAtProgress:
    """Fixed-progress baseline: fire at the first checkpoint at or past ``fraction`` of the run.

    Progress is the platform's estimate (service over estimated duration), since the true
    length is hidden (spec ``DET-6``).

    Attributes:
        fraction: the estimated progress at which it fires.

    Raises:
        ValueError: ``fraction`` is not in (0, 1].
    """

    fraction: float = attrs.field(default=0.65, validator=_fraction)

    @property
    def name(self) -> str:
        return f"stopat-{self.fraction:g}"

    def initial(self) -> bool:
        return False

    def update(self, state: bool, obs: CheckpointView) -> bool:
        return state or obs.estimated_progress >= self.fraction

    def fired(self, state: bool) -> bool:
        return state


@attrs.frozen(slots=True)
class PlateauState:
    """Best (lowest) loss so far and evaluations since it last improved enough.

    Attributes:
        best: the lowest finite loss so far; None before the first.
        stale: consecutive evaluations without an improvement.
    """

    best: float | None = None
    stale: int = 0


@attrs.frozen(slots=True)
class LossPlateau:
    """Loss-based baseline: fire when the training loss stops improving.

    Keras-style patience: the loss "improves" when it falls below the best loss so far by more
    than ``min_delta`` times that loss's magnitude; the detector fires after ``patience``
    consecutive evaluations without such an improvement. Non-finite losses are skipped
    (spec ``DET-7``).

    Attributes:
        patience: evaluations without an improvement that fire the detector.
        min_delta: the relative improvement that counts (0.01: one percent of the best loss).
        warmup_steps: reports before this step are not counted by the rule (0; ``DET-11``).
        baseline: when set, the best loss starts there, so a run must get below it (Keras'
            ``baseline``; None).

    Raises:
        ValueError: ``patience < 1``, ``min_delta`` negative or not finite, a negative
            ``warmup_steps`` or a non-finite ``baseline``.
    """

    patience: int = attrs.field(default=3, validator=_at_least_one)
    min_delta: float = attrs.field(default=0.01, validator=_non_negative_finite)
    warmup_steps: int = attrs.field(default=0, validator=_count)
    baseline: float | None = attrs.field(default=None, validator=_optional_finite)

    @property
    def name(self) -> str:
        extras = f",warmup_steps={self.warmup_steps}" if self.warmup_steps else ""
        if self.baseline is not None:
            extras += f",baseline={self.baseline:g}"
        return f"lossplateau(p={self.patience},d={self.min_delta:g}{extras})"

    def initial(self) -> PlateauState:
        return PlateauState(self.baseline)

    def update(self, state: PlateauState, obs: CheckpointView) -> PlateauState:
        loss = obs.loss
        if not math.isfinite(loss) or obs.step < self.warmup_steps:
            return state
        if state.best is None or loss < state.best - self.min_delta * abs(state.best):
            return PlateauState(loss, 0)
        return PlateauState(state.best, state.stale + 1)

    def fired(self, state: PlateauState) -> bool:
        return state.stale >= self.patience


@attrs.frozen(slots=True)
class Never:
    """The base scheduler alone: never fires."""

    @property
    def name(self) -> str:
        return "never"

    def initial(self) -> None:
        return None

    def update(self, state: None, obs: CheckpointView) -> None:
        return None

    def fired(self, state: None) -> bool:
        return False


@attrs.frozen(slots=True)
class Watch(Generic[S]):
    """A detector's state on one job plus the best checkpoint seen so far (O(1)).

    The best checkpoint is tracked the same way for every detector, so "stop and save" keeps
    the best observed eval score up to the trigger whatever rule fired (spec ``DET-4``), unless
    the detector keeps its own (the noise-aware detector's ``keep="level"``, ``NAD-10``).

    Attributes:
        rule: the detector's own state.
        evals: valid (finite) eval scores seen.
        best_step: step of the best valid score so far (ties keep the earlier one).
        best_score: that score.
        fired_step: step at which the detector first fired; None until then, then latched.
    """

    rule: S
    evals: int = 0
    best_step: int | None = None
    best_score: float | None = None
    fired_step: int | None = None


def start_watch(detector: Detector[S]) -> Watch[S]:
    """A fresh watch for one job."""
    return Watch(detector.initial())


def observe(detector: Detector[S], watch: Watch[S], obs: CheckpointView) -> Watch[S]:
    """Fold one checkpoint report into ``watch`` (O(1)); the fired step latches (``DET-5``).

    Args:
        detector: the rule.
        watch: the job's watch before the report.
        obs: the report.

    Returns:
        The job's watch after the report (``watch`` itself is not changed).
    """
    rule = detector.update(watch.rule, obs)
    score = obs.eval_score
    valid = math.isfinite(score)
    best_step, best_score = watch.best_step, watch.best_score
    if valid and improves(best_score, score):
        best_step, best_score = obs.step, score
    kept = getattr(detector, "kept", None)  # the optional hook (NAD-10, DET-12)
    if kept is not None and (checkpoint := kept(rule)) is not None:
        best_step, best_score = checkpoint
    fired_step = watch.fired_step
    if fired_step is None and detector.fired(rule):
        fired_step = obs.step
    return Watch(rule, watch.evals + int(valid), best_step, best_score, fired_step)


def observe_decline(
    detector: DeclineDetector, watch: Watch[DeclineState], step: int, score: float
) -> Watch[DeclineState]:
    """:func:`observe` for the built-in rule, from the step and score alone (``DET-10``).

    Equal to ``observe(detector, watch, view)`` for any view with that step and score (the
    rule reads nothing else), without building the view: the rule's in-place fold
    (:func:`~evalstop.core.folds.decline_folder`) on a copy of the watch. O(1).
    """
    state = DeclineFold(watch)
    detector._folder(state, step, score)
    return Watch(state.rule, state.evals, state.best_step, state.best_score, state.fired_step)


def verdict_of(detector: Detector[S], watch: Watch[S]) -> Verdict:
    """The observable verdict of ``watch``: what policies may read about the detector.

    Args:
        detector: the rule the watch belongs to (it names the verdict).
        watch: the job's watch.

    Returns:
        The verdict, holding no detector state.
    """
    return Verdict(
        detector=detector.name,
        fired=watch.fired_step is not None,
        fired_step=watch.fired_step,
        evals=watch.evals,
        best_step=watch.best_step,
        best_score=watch.best_score,
    )
