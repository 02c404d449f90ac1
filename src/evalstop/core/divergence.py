"""The divergence detector: stop when the eval level falls while the proxy reward (or the KL)
keeps rising, each in its own noise units (spec ``SIG-4``).

A run that reward-hacks shows a signature a platform sees besides its eval score: the proxy
keeps climbing while the world feedback falls; a healthy run that plateaus has both flat. The
eval stream is folded by the noise-aware rule (:class:`NoiseAwareDetector`, ``NAD-1`` to
``NAD-4``); the side signal (``signal``: ``proxy_reward`` or ``kl``) by the same level and
noise estimators (``NAD-1``, ``NAD-2``, same memory), and the side level is remembered where
the eval level last peaked. The detector fires when

- the eval level's drop exceeds ``z`` of its noise-aware threshold units *and* the side level
  has risen since the eval peak by more than ``side_z`` of the side's own noise (the rise's
  standard deviation under noise alone, ``sigma_side sqrt(w_now + w_at_peak)``); or
- the eval drop alone exceeds ``fallback_z`` units: the noise-aware rule at that ``z``.

With ``stall`` s > 0 it also fires when the eval stalls while the side signal keeps rising
(``SIG-13``): the eval level rose clearly before its peak (``stall_gain_z`` units), lies at
least ``stall_z`` units below that peak, and the side level has risen since the eval peak by
more than ``s`` times its rise from its start to the eval peak (and by more than ``side_z`` of
its noise): the run has spent a share ``s`` of the proxy gain its best eval took again, and
the eval did not follow. That is Gao et al.'s signature of overoptimisation seen before the
eval falls; on a healthy run that has plateaued such a stop keeps its best checkpoint.

With ``growth`` g > 0 the eval thresholds grow with the evaluations seen, by
``g ln(n / max(warmup, 1))`` units at the n-th valid one (``SIG-12``): a run evaluated often
is looked at more often, and a fixed threshold stops more healthy runs on noise the more looks
it gets. The count is what the detector has seen, never the run's planned evaluations.

A stream with no side signal (no finite value of it yet) is judged by the second clause alone:
the documented eval-only fallback, which :meth:`DivergenceDetector.uses_fallback` reports and
the entry points print. The kept checkpoint is the noise-aware level keep (``NAD-10``).
O(1) state; a NaN eval score leaves the eval part unchanged, a missing side value the side
part; the alarm latches.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.noise_aware import (
    ROUGHNESS_TO_SIGMA,
    NoiseAwareDetector,
    NoiseState,
    _count,
    _non_negative,
    _positive,
)
from evalstop.core.noise_fold import NoiseFold, noise_folder

__all__ = ["SIGNALS", "DivergenceDetector", "DivergenceState", "SideState", "side_value"]

SIGNALS: tuple[str, ...] = ("kl", "proxy_reward")
"""The side signals a multi-signal detector may read from a :class:`CheckpointView`."""


def side_value(obs: CheckpointView, signal: str) -> float | None:
    """The report's ``signal`` (``proxy_reward`` or ``kl``) when finite, else None."""
    value = obs.kl if signal == "kl" else obs.proxy_reward
    if value is None or not math.isfinite(value):
        return None
    return value


@attrs.frozen(slots=True)
class SideState:
    """The side signal's level and noise (``NAD-1``, ``NAD-2``), relative to its first value.

    Attributes:
        evals: finite side values folded.
        step: the step of the last one.
        origin: the first finite side value; None before it.
        last: the last value minus ``origin``; before: the one before it.
        level: the exponentially weighted level minus ``origin``.
        weight: the sum of the level's squared weights.
        roughness: the sum of the absolute second differences.
        differences: how many second differences ``roughness`` sums.
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


@attrs.frozen(slots=True)
class DivergenceState:
    """The divergence detector's state on one job (O(1)).

    Attributes:
        eval: the noise-aware rule's state on the eval score.
        side: the side signal's level and noise.
        at_peak: the side level when the eval level last reached its peak, or the first side
            level when the side signal started after it (None before any side value).
        at_peak_weight: the side level's weight then.
        alarm: whether the rule has fired (it latches).
    """

    eval: NoiseState = attrs.field(factory=NoiseState)
    side: SideState = attrs.field(factory=SideState)
    at_peak: float | None = None
    at_peak_weight: float = 0.0
    alarm: bool = False


def _signal(_inst: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in SIGNALS:
        raise ValueError(f"{attribute.name} must be one of {SIGNALS}, got {value!r}")


def _side(state: SideState, value: float | None, step: int, memory: float) -> SideState:
    """``state`` after one side value (``NAD-1``, ``NAD-2``, by the noise-aware rule's one fold,
    ``NAD-11``); None, or a value more than ``SPAN`` from the first (``NAD-7``), leaves it
    unchanged."""
    if value is None:
        return state
    s = NoiseFold.levels(
        state.evals,
        state.step,
        state.origin,
        state.last,
        state.before,
        state.level,
        state.weight,
        state.roughness,
        state.differences,
    )
    _levels(memory)(s, step, value)
    if s.origin is state.origin and s.evals_rule == state.evals:
        return state  # skipped: the fold changed nothing
    return SideState(
        s.evals_rule,
        s.step,
        s.origin,
        s.last,
        s.before,
        s.level,
        s.weight,
        s.roughness,
        s.differences,
    )


@functools.lru_cache(maxsize=256)
def _levels(memory: float) -> Callable[[NoiseFold, int, float], bool]:
    """The noise-aware fold at ``memory`` whose level and noise fields :func:`_side` reads (its
    rule never fires: the side's own test is ``DivergenceDetector._fires``)."""
    return noise_folder(NoiseAwareDetector(memory=memory, warmup_evals=_NEVER, keep="best"))


_NEVER = 2**62
"""A warm-up no run reaches: the side's fold skips the rule's alarm."""


@attrs.frozen(slots=True)
class DivergenceDetector:
    """Fire when the eval level falls while the side signal keeps rising (``SIG-4``).

    Attributes:
        z: the eval drop, in noise-aware threshold units, that fires when the side signal
            corroborates it.
        side_z: the side signal's rise since the eval peak, in its own noise units, that
            corroborates.
        fallback_z: the eval drop that fires alone (the eval-only fallback; ``>= z``).
        signal: the side signal, ``proxy_reward`` or ``kl``.
        memory: the levels' memory, a fraction of the steps elapsed (``NAD-2``).
        warmup_evals: no stop before this many valid evaluations.
        growth: the thresholds' growth per log of the evaluations seen (``SIG-12``; 0: fixed).
        stall: the side signal's rise since the eval peak, over its rise before it, that fires
            with a stalled eval (``SIG-13``; 0: no stall clause).
        stall_gain_z: the eval level's rise from its start to its peak, in noise units, that
            the stall clause needs (the run must have improved clearly before it stalled).
        stall_z: the eval drop below its peak, in noise-aware units, the stall clause needs.

    The defaults were chosen by ``docs/scripts/tune_signals.py`` on the gym's development
    split only (``SIG-9``; re-chosen on the gym's second distribution, ``GYM-5``).

    Raises:
        ValueError: a non-positive ``z`` or ``memory``, a negative ``side_z``, ``fallback_z``
            below ``z``, an unknown ``signal``, a negative ``warmup_evals``, ``growth``,
            ``stall``, ``stall_gain_z`` or ``stall_z``.
    """

    z: float = attrs.field(default=1.25, validator=_positive)
    side_z: float = attrs.field(default=2.0, validator=_non_negative)
    fallback_z: float = attrs.field(default=3.0, validator=_positive)
    signal: str = attrs.field(default="proxy_reward", validator=_signal)
    memory: float = attrs.field(default=0.3, validator=_positive)
    warmup_evals: int = attrs.field(default=5, validator=_count)
    growth: float = attrs.field(default=0.0, validator=_non_negative)
    stall: float = attrs.field(default=0.1, validator=_non_negative)
    stall_gain_z: float = attrs.field(default=4.0, validator=_non_negative)
    stall_z: float = attrs.field(default=0.5, validator=_non_negative)

    def __attrs_post_init__(self) -> None:
        if self.fallback_z < self.z:
            raise ValueError(f"fallback_z must be >= z, got {self.fallback_z!r} < {self.z!r}")

    @property
    def name(self) -> str:
        grows = f",growth={self.growth:g}" if self.growth else ""
        if self.stall:
            grows += f",stall={self.stall:g}/{self.stall_gain_z:g}/{self.stall_z:g}"
        return (
            f"divergence(z={self.z:g},side_z={self.side_z:g},fallback_z={self.fallback_z:g},"
            f"signal={self.signal},memory={self.memory:g},warmup={self.warmup_evals}{grows})"
        )

    def extra(self, evals: int) -> float:
        """The thresholds' growth at the ``evals``-th valid evaluation (``SIG-12``)."""
        if not self.growth:
            return 0.0
        base = max(self.warmup_evals, 1)
        return self.growth * math.log(max(evals, base) / base)

    @property
    def rule(self) -> NoiseAwareDetector:
        """The noise-aware rule that folds the eval score (at ``z``)."""
        return _rule(self.z, self.memory, self.warmup_evals)

    @property
    def needs(self) -> tuple[str, ...]:
        """The side signals the rule reads (``SIG-8``): without them it is the fallback."""
        return (self.signal,)

    def initial(self) -> DivergenceState:
        return DivergenceState()

    def update(self, state: DivergenceState, obs: CheckpointView) -> DivergenceState:
        """Fold one report (O(1))."""
        side = _side(state.side, side_value(obs, self.signal), obs.step, self.memory)
        previous = state.eval
        current = self.rule.update(previous, obs)
        at_peak, at_peak_weight = state.at_peak, state.at_peak_weight
        if current is previous:  # a skipped eval score: nothing to judge
            return DivergenceState(previous, side, at_peak, at_peak_weight, state.alarm)
        if current.evals == 1 or current.peak > previous.peak:
            at_peak, at_peak_weight = (side.level, side.weight) if side.evals else (None, 0.0)
        elif at_peak is None and side.evals:
            at_peak, at_peak_weight = side.level, side.weight
        alarm = state.alarm or self._fires(current, side, at_peak, at_peak_weight)
        return DivergenceState(current, side, at_peak, at_peak_weight, alarm)

    def fired(self, state: DivergenceState) -> bool:
        return state.alarm

    def kept(self, state: DivergenceState) -> tuple[int, float] | None:
        """The noise-aware level keep's checkpoint (``NAD-10``)."""
        return self.rule.kept(state.eval)

    def uses_fallback(self, state: DivergenceState) -> bool:
        """True while no finite side value has been seen: the eval-only rule judges."""
        return state.side.evals == 0

    def _fires(
        self, state: NoiseState, side: SideState, at_peak: float | None, at_peak_weight: float
    ) -> bool:
        if state.evals < self.warmup_evals or state.differences == 0:
            return False
        drop = state.peak - state.level
        sigma = state.roughness / state.differences / ROUGHNESS_TO_SIGMA
        unit = sigma * math.sqrt(state.weight + state.peak_weight)
        extra = self.extra(state.evals)
        if drop > _widened(self.fallback_z + extra, state.differences) * unit:
            return True
        if at_peak is None or side.differences == 0:
            return False
        rise = side.level - at_peak
        side_sigma = side.roughness / side.differences / ROUGHNESS_TO_SIGMA
        if not (
            rise > 0 and rise > self.side_z * side_sigma * math.sqrt(side.weight + at_peak_weight)
        ):
            return False
        if drop > _widened(self.z + extra, state.differences) * unit:
            return True
        return self._stalled(
            state,
            sigma,
            drop >= _widened(self.stall_z + extra, state.differences) * unit,
            rise,
            at_peak,
        )

    def _stalled(
        self, state: NoiseState, sigma: float, below: bool, rise: float, at_peak: float
    ) -> bool:
        """``SIG-13``: the eval rose clearly to its peak, sits ``below`` it, and the side has
        risen since the peak by more than ``stall`` times its rise before it."""
        if not self.stall or not below or at_peak <= 0:
            return False
        gained = state.peak > _widened(self.stall_gain_z, state.differences) * sigma * math.sqrt(
            state.peak_weight
        )
        return gained and rise > self.stall * at_peak


@functools.lru_cache(maxsize=256)
def _rule(z: float, memory: float, warmup_evals: int) -> NoiseAwareDetector:
    return NoiseAwareDetector(z=z, memory=memory, warmup_evals=warmup_evals)


def _widened(z: float, count: int) -> float:
    """``NAD-4``'s Student-t widening of ``z`` for ``count`` second differences."""
    return z + (z**3 + z) / (4.0 * count)
