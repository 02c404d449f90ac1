"""The learned stop rule: a logistic score over a fixed set of running summaries of the eval
and proxy streams (spec ``SIG-16``).

Issue 26's fifth round. The hand-written multi-signal rule (:mod:`evalstop.core.divergence`)
tests a few clauses one at a time; an offline classifier on the gym's dev split showed the
signals hold more (``docs/scripts/tune_default_reference.py``). This rule keeps the fold
interface and O(1) state, and weighs the same summaries together: at each valid evaluation
after the warm-up it computes :data:`FEATURES` from its state (every one in the run's own noise
units or a ratio of its own gains, so an affine change of a metric changes nothing) and fires
when ``bias + sum(w_i x_i)`` exceeds ``threshold``. The weights are constants fitted by
``docs/scripts/tune_learned.py`` on the gym's dev split only; :data:`FIT` names the commit
and the data that chose them.

It reads a report's step, eval score and proxy reward; not the KL (on the dev split a fit
with KL features did no better, and the real corpus's PAR curves log none), and never the
run's planned length (``Monitor`` and ``evalstop watch`` do not know it). A stream with no
finite proxy reward is judged by the eval-only fallback, the noise-aware rule at
``fallback_z`` (``uses_fallback``, ``SIG-8``). The kept
checkpoint is the noise-aware level keep (``NAD-10``); the alarm latches.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.divergence import SideState, _side, side_value
from evalstop.core.noise_aware import (
    ROUGHNESS_TO_SIGMA,
    NoiseAwareDetector,
    NoiseState,
    _count,
    _positive,
)

__all__ = [
    "BIAS",
    "FEATURES",
    "FIT",
    "THRESHOLD",
    "WEIGHTS",
    "LearnedState",
    "LearnedStopDetector",
    "features",
]

FEATURES: tuple[str, ...] = (
    "drop",
    "gain",
    "lost",
    "proxy_rise",
    "proxy_share",
    "age",
    "recent",
    "log_evals",
    "drop_x_proxy_share",
    "age_x_proxy_share",
    "drop_x_log_evals",
    "gain_x_log_evals",
    "lost_x_log_evals",
    "proxy_share_x_log_evals",
    "age_x_log_evals",
)
"""The features, in the weights' order (``SIG-16`` defines each)."""

FIT = "dev0-2999@8f0dc46"
"""The data and the commit that chose :data:`WEIGHTS` and :data:`BIAS`: the gym's dev split
(``V2``), seeds 0-2999, by ``docs/scripts/tune_learned.py`` as committed in 8f0dc46 (its
output ``docs/scripts/tune_learned.out``; ``SIG-17``). No test run, corpus curve or supervised
curve was read."""

WEIGHTS: tuple[float, ...] = (
    0.982579,
    1.875493,
    -1.657022,
    0.282841,
    0.91964,
    3.409324,
    -0.161271,
    0.709961,
    0.41851,
    -1.041648,
    -0.162591,
    -0.413839,
    0.780412,
    -0.291951,
    -1.303563,
)
"""The shipped weights, one per feature of :data:`FEATURES` (:data:`FIT`)."""

BIAS = -5.981639
"""The shipped intercept (:data:`FIT`)."""

THRESHOLD = 0.0
"""The shipped score threshold (a logit: the rule fires when the score exceeds it; ``SIG-17``
fixes it at 0, the bias carries the level)."""


def _clip(value: float, low: float, high: float) -> float:
    """``value`` clipped to [low, high]; NaN (inf over inf on extreme scores) gives 0."""
    if math.isnan(value):
        return 0.0
    return min(max(value, low), high)


@attrs.frozen(slots=True)
class LearnedState:
    """The learned rule's state on one job (O(1)).

    Attributes:
        eval: the noise-aware fold of the eval score (``NAD-1`` to ``NAD-4``, at ``fallback_z``).
        proxy: the proxy reward's level and noise (``SIG-4``'s side fold).
        proxy_at_peak: the proxy level when the eval level last reached its peak (or the first
            proxy level, if the proxy started after it); None before any proxy value.
        proxy_at_peak_weight: the proxy level's weight then.
        peak_step: the step where the eval level last reached its peak.
        score: the last score computed (None before the first).
        alarm: whether the rule has fired (it latches).
    """

    eval: NoiseState = attrs.field(factory=NoiseState)
    proxy: SideState = attrs.field(factory=SideState)
    proxy_at_peak: float | None = None
    proxy_at_peak_weight: float = 0.0
    peak_step: int = 0
    score: float | None = None
    alarm: bool = False


def _sigma(roughness: float, differences: int) -> float:
    return roughness / differences / ROUGHNESS_TO_SIGMA


def _in_units(value: float, unit: float, low: float, high: float) -> float:
    """``value / unit`` clipped; a zero unit gives the clip's end on ``value``'s side."""
    if unit > 0:
        return _clip(value / unit, low, high)
    return high if value > 0 else (low if value < 0 else 0.0)


def features(state: LearnedState) -> tuple[float, ...] | None:
    """:data:`FEATURES` in ``state`` (``SIG-16``); None before a second difference of the eval."""
    e = state.eval
    if e.differences == 0 or e.evals < 1:
        return None
    sigma = _sigma(e.roughness, e.differences)
    drop_value = e.peak - e.level
    drop = _in_units(drop_value, sigma * math.sqrt(e.weight + e.peak_weight), -5.0, 10.0)
    gain = math.log1p(_in_units(max(e.peak, 0.0), sigma * math.sqrt(e.peak_weight), 0.0, 100.0))
    lost = _clip(drop_value / e.peak, -1.0, 2.0) if e.peak > 0 else 0.0
    recent = _in_units(e.last - e.level, sigma, -5.0, 5.0)
    age = _clip((e.step - state.peak_step) / e.step, 0.0, 1.0) if e.step > 0 else 0.0
    proxy_rise = proxy_share = 0.0
    p, at = state.proxy, state.proxy_at_peak
    if at is not None and p.differences:
        rise = p.level - at
        unit = _sigma(p.roughness, p.differences) * math.sqrt(p.weight + state.proxy_at_peak_weight)
        proxy_rise = _in_units(rise, unit, -5.0, 20.0)
        proxy_share = _clip(rise / at, -2.0, 5.0) if at > 0 else 0.0
    looks = math.log(e.evals)
    return (
        drop,
        gain,
        lost,
        proxy_rise,
        proxy_share,
        age,
        recent,
        looks,
        drop * proxy_share,
        age * proxy_share,
        drop * looks,
        gain * looks,
        lost * looks,
        proxy_share * looks,
        age * looks,
    )


_HUGE = 1e300
"""The score's clip: a finite number a saved state can hold (``SIG-7``)."""


def _weights(_inst: object, attribute: attrs.Attribute[tuple[float, ...]], value: object) -> None:
    if not (
        isinstance(value, tuple)
        and len(value) == len(FEATURES)
        and all(isinstance(v, float | int) and math.isfinite(v) for v in value)
    ):
        raise ValueError(
            f"{attribute.name} must be a tuple of {len(FEATURES)} finite numbers, got {value!r}"
        )


def _as_tuple(value: Iterable[float]) -> tuple[float, ...]:
    """The weights as a tuple (a saved monitor state holds them as a list, ``SIG-7``)."""
    return tuple(value)


def _finite(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float | int) and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a finite number, got {value!r}")


@attrs.frozen(slots=True)
class LearnedStopDetector:
    """Fire when a fitted logistic score of the run's summaries exceeds ``threshold``
    (``SIG-16``).

    Attributes:
        weights: one weight per feature of :data:`FEATURES`.
        bias: the score's intercept.
        threshold: the score (a logit) above which the rule fires.
        fallback_z: the noise-aware rule's ``z`` that folds the eval, and the eval-only rule
            that judges a stream with no proxy reward (``SIG-8``).
        memory: the levels' memory, a fraction of the steps elapsed (``NAD-2``).
        warmup_evals: no stop before this many valid evaluations.

    The defaults were fitted on the gym's development split only (:data:`FIT`).

    Raises:
        ValueError: ``weights`` not :data:`FEATURES`'s length of finite numbers, a non-finite
            ``bias`` or ``threshold``, a non-positive ``fallback_z`` or ``memory``, a negative
            ``warmup_evals``.
    """

    weights: tuple[float, ...] = attrs.field(
        default=WEIGHTS, converter=_as_tuple, validator=_weights
    )
    bias: float = attrs.field(default=BIAS, validator=_finite)
    threshold: float = attrs.field(default=THRESHOLD, validator=_finite)
    fallback_z: float = attrs.field(default=2.0, validator=_positive)
    memory: float = attrs.field(default=0.3, validator=_positive)
    warmup_evals: int = attrs.field(default=5, validator=_count)

    @property
    def name(self) -> str:
        fit = FIT if (self.weights, self.bias) == (WEIGHTS, BIAS) else f"custom-{_digest(self)}"
        return (
            f"learned(fit={fit},threshold={self.threshold:g},fallback_z={self.fallback_z:g},"
            f"memory={self.memory:g},warmup={self.warmup_evals})"
        )

    @property
    def rule(self) -> NoiseAwareDetector:
        """The noise-aware rule that folds the eval score (at ``fallback_z``)."""
        return _rule(self.fallback_z, self.memory, self.warmup_evals)

    @property
    def needs(self) -> tuple[str, ...]:
        """The side signal the rule reads (``SIG-8``): without it, the eval-only fallback."""
        return ("proxy_reward",)

    def initial(self) -> LearnedState:
        return LearnedState()

    def update(self, state: LearnedState, obs: CheckpointView) -> LearnedState:
        """Fold one report (O(1))."""
        proxy = _side(state.proxy, side_value(obs, "proxy_reward"), obs.step, self.memory)
        previous = state.eval
        current = self.rule.update(previous, obs)
        if current is previous:  # a skipped eval score: nothing to judge
            return attrs.evolve(state, proxy=proxy)
        p_at, p_weight, peak_step = state.proxy_at_peak, state.proxy_at_peak_weight, state.peak_step
        if current.evals == 1 or current.peak > previous.peak:
            p_at, p_weight = (proxy.level, proxy.weight) if proxy.evals else (None, 0.0)
            peak_step = current.step
        elif p_at is None and proxy.evals:
            p_at, p_weight = proxy.level, proxy.weight
        new = LearnedState(current, proxy, p_at, p_weight, peak_step, state.score)
        return self._judged(new, state.alarm)

    def _judged(self, state: LearnedState, alarm: bool) -> LearnedState:
        x = features(state)
        score = state.score
        if x is not None:
            score = _clip(
                self.bias + math.fsum(w * v for w, v in zip(self.weights, x, strict=True)),
                -_HUGE,
                _HUGE,
            )
        if not alarm and state.eval.evals >= self.warmup_evals:
            if self.uses_fallback(state):
                alarm = state.eval.alarm
            else:
                alarm = x is not None and score is not None and score > self.threshold
        return attrs.evolve(state, score=score, alarm=alarm)

    def fired(self, state: LearnedState) -> bool:
        return state.alarm

    def kept(self, state: LearnedState) -> tuple[int, float] | None:
        """The noise-aware level keep's checkpoint (``NAD-10``)."""
        return self.rule.kept(state.eval)

    def uses_fallback(self, state: LearnedState) -> bool:
        """True while no finite proxy reward has been seen: the eval-only rule judges."""
        return state.proxy.evals == 0


def _digest(detector: LearnedStopDetector) -> str:
    import hashlib

    text = repr((detector.weights, detector.bias)).encode()
    return hashlib.sha256(text).hexdigest()[:8]


@functools.lru_cache(maxsize=64)
def _rule(z: float, memory: float, warmup_evals: int) -> NoiseAwareDetector:
    return NoiseAwareDetector(z=z, memory=memory, warmup_evals=warmup_evals)
