"""Bayesian online changepoint detection on the eval stream (Adams & MacKay 2007; spec
``SIG-6``): stop on a confident change to a declining regime.

The eval scores are modelled as regimes, each a straight line in the evaluation index with
Gaussian noise; a new regime starts before any evaluation with probability ``hazard``. The
posterior over the current regime's start (the *run length*) is updated by Adams & MacKay's
recursion: each hypothesis predicts the new score, its weight is multiplied by that
predictive density and by ``1 - hazard``, and a fresh hypothesis takes the weight ``hazard``.

- **Within a regime** the line's intercept and slope have a Gaussian prior: the intercept
  centred on the last score before the regime (so a change is a change of slope, the level
  continuous) with standard deviation ``level_scale`` noise units, the slope centred on 0 with
  ``slope_scale`` noise units per evaluation. The noise standard deviation ``sigma`` is the
  noise-aware detector's estimate (``NAD-1``), plugged in at each report; with a known
  ``sigma`` the posterior of a line has closed form from five running sums.
- **Bounded state.** At most ``max_hypotheses`` hypotheses are kept: when there are more, the
  least probable one (never the fresh one) is dropped and the weights renormalised.
- **Rule.** After ``warmup_evals`` valid evaluations, the detector fires when the posterior
  probability that the current regime declines, ``sum_h w_h P(slope_h < 0) / sum_h w_h`` over
  the hypotheses with at least two scores, exceeds ``threshold``.

Scores are kept relative to the first valid one, so a positive rescaling and any shift of the
metric change no decision. A NaN or infinite score leaves the state unchanged; the alarm
latches; the kept checkpoint is the best reported score (``DET-4``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, SPAN, _count, _positive

__all__ = ["BocpdDetector", "BocpdState", "decline_probability"]


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _floats(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(map(float, values))


@attrs.frozen(slots=True)
class BocpdState:
    """The run-length posterior and the noise estimate on one job (at most
    ``max_hypotheses`` hypotheses: O(1)).

    Hypothesis ``h`` says the current regime started at evaluation ``starts[h]`` (0-based
    among valid scores); its sums are over the scores since then, with ``tau`` the index
    minus the start and ``y`` the score (relative to ``origin``) minus ``priors[h]``.

    Attributes:
        evals: valid evaluations folded.
        origin: the first valid score; None before it.
        last: the last valid score minus ``origin``; before: the one before it.
        roughness: the sum of the absolute second differences (``NAD-1``).
        differences: how many second differences ``roughness`` sums.
        starts: each hypothesis's first evaluation index.
        priors: each hypothesis's prior intercept (the score before its regime).
        weights: each hypothesis's posterior probability (they sum to 1).
        counts: scores in each hypothesis's regime.
        s_t: sum of ``tau``; s_tt: of ``tau^2``; s_y: of ``y``; s_ty: of ``tau y``.
        alarm: whether the rule has fired (it latches).
    """

    evals: int = 0
    origin: float | None = None
    last: float = 0.0
    before: float = 0.0
    roughness: float = 0.0
    differences: int = 0
    starts: tuple[int, ...] = attrs.field(default=(0,), converter=_ints)
    priors: tuple[float, ...] = attrs.field(default=(0.0,), converter=_floats)
    weights: tuple[float, ...] = attrs.field(default=(1.0,), converter=_floats)
    counts: tuple[int, ...] = attrs.field(default=(0,), converter=_ints)
    s_t: tuple[float, ...] = attrs.field(default=(0.0,), converter=_floats)
    s_tt: tuple[float, ...] = attrs.field(default=(0.0,), converter=_floats)
    s_y: tuple[float, ...] = attrs.field(default=(0.0,), converter=_floats)
    s_ty: tuple[float, ...] = attrs.field(default=(0.0,), converter=_floats)
    alarm: bool = False

    def __attrs_post_init__(self) -> None:
        n = len(self.starts)
        if not n or not (
            len(self.priors)
            == len(self.weights)
            == len(self.counts)
            == len(self.s_t)
            == len(self.s_tt)
            == len(self.s_y)
            == len(self.s_ty)
            == n
        ):
            raise ValueError("a BocpdState's hypothesis columns must be non-empty and equal")


def _probability(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float | int) and 0.0 < value < 1.0):
        raise ValueError(f"{attribute.name} must be in (0, 1), got {value!r}")


def _hypotheses(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"{attribute.name} must be an integer >= 2, got {value!r}")


_SQRT2 = math.sqrt(2.0)

_Columns = tuple[
    list[int],
    list[float],
    list[float],
    list[int],
    list[float],
    list[float],
    list[float],
    list[float],
]
"""A state's hypothesis columns as lists, in :class:`BocpdState`'s order (starts to s_ty)."""


def _line(
    n: int, st: float, stt: float, sy: float, sty: float, level: float, slope: float
) -> tuple[float, float, float, float, float]:
    """A hypothesis's regime line posterior from its count and four running sums: the mean
    intercept and slope, and the entries (00, 01, 11) of the covariance over ``sigma^2``,
    ``(X'X + diag(level^-2, slope^-2))^-1`` (``level`` and ``slope`` are those precisions; the
    scales are in noise units, so the means do not depend on ``sigma``)."""
    p00, p11 = n + level, stt + slope
    det = p00 * p11 - st * st
    i00, i01, i11 = p11 / det, -st / det, p00 / det
    return i00 * sy + i01 * sty, i01 * sy + i11 * sty, i00, i01, i11


def _precisions(level_scale: float, slope_scale: float) -> tuple[float, float]:
    """The prior precisions of a line's intercept and slope (noise units)."""
    return 1.0 / (level_scale * level_scale), 1.0 / (slope_scale * slope_scale)


def decline_probability(state: BocpdState, level_scale: float, slope_scale: float) -> float:
    """The posterior probability that the current regime's slope is negative given that it
    holds at least two scores (``SIG-6``): ``sum_h w_h Phi(-mean_h / sd_h) / sum_h w_h`` over
    the hypotheses with at least two scores; 0 before the noise can be estimated."""
    if state.differences == 0:
        return 0.0
    sigma = state.roughness / state.differences / ROUGHNESS_TO_SIGMA
    level, slope = _precisions(level_scale, slope_scale)
    total = mass = 0.0
    columns = (state.counts, state.weights, state.s_t, state.s_tt, state.s_y, state.s_ty)
    for count, weight, st, stt, sy, sty in zip(*columns, strict=True):
        if count < 2:
            continue
        _, b, _, _, i11 = _line(count, st, stt, sy, sty, level, slope)
        sd = sigma * math.sqrt(i11) if sigma > 0 else 0.0
        below = 0.5 * math.erfc(b / (sd * _SQRT2)) if sd > 0 else float(b < 0)
        total += weight * below
        mass += weight
    return total / mass if mass > 0 else 0.0


@attrs.frozen(slots=True)
class BocpdDetector:
    """Fire on a confident change to a declining regime of the eval score (``SIG-6``).

    Attributes:
        hazard: the prior probability that a new regime starts before an evaluation.
        threshold: the posterior probability of a declining regime that fires.
        level_scale: the prior standard deviation of a regime's intercept, in noise units.
        slope_scale: the prior standard deviation of its slope, in noise units per evaluation.
        max_hypotheses: the run-length hypotheses kept (the state's bound).
        warmup_evals: no stop before this many valid evaluations.

    The defaults were chosen by ``docs/scripts/tune_signals.py`` on the gym's development
    split only (``SIG-9``; re-chosen on the gym's second distribution, ``GYM-5``).

    Raises:
        ValueError: ``hazard`` or ``threshold`` outside (0, 1), a non-positive scale,
            ``max_hypotheses < 2``, a negative ``warmup_evals``.
    """

    hazard: float = attrs.field(default=0.05, validator=_probability)
    threshold: float = attrs.field(default=0.99, validator=_probability)
    level_scale: float = attrs.field(default=1.0, validator=_positive)
    slope_scale: float = attrs.field(default=2.0, validator=_positive)
    max_hypotheses: int = attrs.field(default=16, validator=_hypotheses)
    warmup_evals: int = attrs.field(default=5, validator=_count)

    @property
    def name(self) -> str:
        return (
            f"bocpd(hazard={self.hazard:g},threshold={self.threshold:g},"
            f"scales={self.level_scale:g}/{self.slope_scale:g},"
            f"max={self.max_hypotheses},warmup={self.warmup_evals})"
        )

    def initial(self) -> BocpdState:
        return BocpdState()

    def update(self, state: BocpdState, obs: CheckpointView) -> BocpdState:
        """Fold one report: Adams & MacKay's recursion, then pruning (O(max_hypotheses))."""
        score = obs.eval_score
        if not math.isfinite(score):
            return state
        origin = score if state.origin is None else state.origin
        y = score - origin
        if not -SPAN <= y <= SPAN:
            return state
        roughness, differences = state.roughness, state.differences
        if state.evals >= 2:
            roughness += abs(y - 2.0 * state.last + state.before)
            differences += 1
        sigma = roughness / differences / ROUGHNESS_TO_SIGMA if differences else 0.0
        t = state.evals
        starts, priors, weights, counts, s_t, s_tt, s_y, s_ty = self._grow(state, t, y, sigma)
        keep = 1.0 - self.hazard
        weights = [w * keep for w in weights]
        starts.append(t + 1)
        priors.append(y)
        weights.append(self.hazard)
        counts.append(0)
        for column in (s_t, s_tt, s_y, s_ty):
            column.append(0.0)
        if len(starts) > self.max_hypotheses:
            old = weights[:-1]
            drop = old.index(min(old))  # the first least probable non-fresh hypothesis
            for any_column in (starts, priors, weights, counts, s_t, s_tt, s_y, s_ty):
                del any_column[drop]
        total = math.fsum(weights)
        weights = [w / total for w in weights]
        new = BocpdState(
            t + 1,
            origin,
            y,
            state.last if state.evals else 0.0,
            roughness,
            differences,
            starts,
            priors,
            weights,
            counts,
            s_t,
            s_tt,
            s_y,
            s_ty,
            state.alarm,
        )
        if state.alarm or new.evals < self.warmup_evals:
            return new
        if decline_probability(new, self.level_scale, self.slope_scale) > self.threshold:
            return attrs.evolve(new, alarm=True)  # once a run: the alarm latches
        return new

    def fired(self, state: BocpdState) -> bool:
        return state.alarm

    def _grow(self, state: BocpdState, t: int, y: float, sigma: float) -> _Columns:
        """Every hypothesis's columns with ``y`` folded in, its weight multiplied by its
        predictive density of ``y`` (uniform while ``sigma`` is unknown or its square
        underflows), the weights normalised."""
        unit = sigma * sigma  # 0 also when sigma^2 underflows: no density then
        log = math.log
        level, slope = _precisions(self.level_scale, self.slope_scale)
        logs: list[float] = []
        counts: list[int] = []
        s_t: list[float] = []
        s_tt: list[float] = []
        s_y: list[float] = []
        s_ty: list[float] = []
        columns = (state.starts, state.priors, state.weights, state.counts)
        sums = (state.s_t, state.s_tt, state.s_y, state.s_ty)
        for start, prior, w, n, st, stt, sy, sty in zip(*columns, *sums, strict=True):
            tau, rel = float(t - start), y - prior
            logged = log(w) if w > 0 else -math.inf
            if unit > 0:
                a, b, c00, c01, c11 = _line(n, st, stt, sy, sty, level, slope)
                spread = 1.0 + c00 + 2.0 * tau * c01 + tau * tau * c11  # var / sigma^2
                residual = rel - (a + b * tau)
                # log N(rel; a + b tau, sigma^2 spread) without -log(2 pi sigma^2) / 2, the
                # same for every hypothesis: the weights are then exactly scale-free (SIG-2)
                logged -= 0.5 * (log(spread) + residual * residual / (unit * spread))
            logs.append(logged)
            counts.append(n + 1)
            s_t.append(st + tau)
            s_tt.append(stt + tau * tau)
            s_y.append(sy + rel)
            s_ty.append(sty + tau * rel)
        top = max(logs)
        if not math.isfinite(top):  # every density underflowed (scores near SPAN): no update
            logs, top = [log(w) if w > 0 else -math.inf for w in state.weights], 0.0
        raw = [math.exp(v - top) for v in logs]
        total = math.fsum(raw)
        weights = [w / total for w in raw]
        return list(state.starts), list(state.priors), weights, counts, s_t, s_tt, s_y, s_ty
