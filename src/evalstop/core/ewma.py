"""The EWMA drop-from-best rule: the plain early-stopping rule practitioners write (spec
``SIG-3``), kept as an anchor for the other detectors.

Smooth the eval score with an exponentially weighted mean per evaluation,
``level <- level + alpha (y - level)``; remember the best smoothed level; stop once the level
has fallen from that best by more than ``drop`` times the smoothed gain so far (best level
minus the first level), after ``warmup_evals`` valid evaluations. The drop is measured in the
run's own gain, so a positive rescaling and any shift of the metric change no decision. It
knows nothing about noise: that is the point of an anchor. O(1) state; a NaN or infinite
score leaves it unchanged; the alarm latches.
"""

from __future__ import annotations

import math

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.noise_aware import _count

__all__ = ["EwmaDetector", "EwmaState"]


@attrs.frozen(slots=True)
class EwmaState:
    """The EWMA rule's state on one job (O(1)).

    Attributes:
        evals: valid evaluations folded.
        origin: the first valid score (levels below are relative to it); None before it.
        level: the smoothed score minus ``origin``.
        best: the highest ``level`` so far.
        alarm: whether the rule has fired (it latches).
    """

    evals: int = 0
    origin: float | None = None
    level: float = 0.0
    best: float = 0.0
    alarm: bool = False


def _unit(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float | int) and 0.0 < value <= 1.0):
        raise ValueError(f"{attribute.name} must be in (0, 1], got {value!r}")


def _positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float | int) and math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value!r}")


@attrs.frozen(slots=True)
class EwmaDetector:
    """Fire when the smoothed score has fallen ``drop`` of its gain below its best (``SIG-3``).

    Attributes:
        alpha: the smoothing weight of each new evaluation, in (0, 1].
        drop: the fall from the best level that fires, as a share of the smoothed gain.
        warmup_evals: no stop before this many valid evaluations.

    The defaults were chosen by ``docs/scripts/tune_signals.py`` on the gym's development
    split and simulator seeds only (``SIG-8``).

    Raises:
        ValueError: ``alpha`` outside (0, 1], ``drop`` not a finite number > 0, a negative
            ``warmup_evals``.
    """

    alpha: float = attrs.field(default=0.2, validator=_unit)
    drop: float = attrs.field(default=0.5, validator=_positive)
    warmup_evals: int = attrs.field(default=5, validator=_count)

    @property
    def name(self) -> str:
        return f"ewma(alpha={self.alpha:g},drop={self.drop:g},warmup={self.warmup_evals})"

    def initial(self) -> EwmaState:
        return EwmaState()

    def update(self, state: EwmaState, obs: CheckpointView) -> EwmaState:
        """Fold one report (O(1)); a non-finite score leaves the state as it was."""
        score = obs.eval_score
        if not math.isfinite(score):
            return state
        if state.origin is None:
            return EwmaState(1, score, 0.0, 0.0, state.alarm)
        value = score - state.origin
        if not math.isfinite(value):
            return state
        level = state.level + self.alpha * (value - state.level)
        best = max(state.best, level)
        evals = state.evals + 1
        fall = best - level
        alarm = state.alarm or (evals >= self.warmup_evals and fall > 0 and fall > self.drop * best)
        return EwmaState(evals, state.origin, level, best, alarm)

    def fired(self, state: EwmaState) -> bool:
        return state.alarm
