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

**Speed** (``SIG-18``). ``update`` builds its state without the converters (its columns are
already tuples of ints and floats), and a regime it started, of fewer than 511 scores, takes
its line's covariance and predictive spread from a table per pair of scales (they depend on
its count alone): the same operations on the same numbers, so the same bits. The decline
probability's sum stops once it cannot reach ``threshold`` any more.

Longer than 400 lines: the recursion, its state's trusted construction and the table of regime
lines are one rule that must agree with itself bit for bit (``SIG-18``); a split would put the
table apart from the one-by-one formulas it stands for.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any

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

_Sums = tuple[
    Sequence[int],
    Sequence[float],
    Sequence[float],
    Sequence[float],
    Sequence[float],
    Sequence[float],
]
"""The ``counts``, ``weights``, ``s_t``, ``s_tt``, ``s_y`` and ``s_ty`` columns."""

_new = object.__new__
_set = object.__setattr__


def _built(
    evals: int,
    origin: float,
    last: float,
    before: float,
    roughness: float,
    differences: int,
    starts: tuple[int, ...],
    priors: tuple[float, ...],
    weights: tuple[float, ...],
    counts: tuple[int, ...],
    s_t: tuple[float, ...],
    s_tt: tuple[float, ...],
    s_y: tuple[float, ...],
    s_ty: tuple[float, ...],
    alarm: bool,
) -> BocpdState:
    """The state of these fields without :class:`BocpdState`'s converters and check:
    ``update``'s trusted path (``SIG-18``), whose columns are already equal tuples of ints and
    floats, so the state equals the one the validating constructor builds."""
    state: BocpdState = _new(BocpdState)
    _set(state, "evals", evals)
    _set(state, "origin", origin)
    _set(state, "last", last)
    _set(state, "before", before)
    _set(state, "roughness", roughness)
    _set(state, "differences", differences)
    _set(state, "starts", starts)
    _set(state, "priors", priors)
    _set(state, "weights", weights)
    _set(state, "counts", counts)
    _set(state, "s_t", s_t)
    _set(state, "s_tt", s_tt)
    _set(state, "s_y", s_y)
    _set(state, "s_ty", s_ty)
    _set(state, "alarm", alarm)
    return state


def _precisions(level_scale: float, slope_scale: float) -> tuple[float, float]:
    """The prior precisions of a line's intercept and slope (noise units)."""
    return 1.0 / (level_scale * level_scale), 1.0 / (slope_scale * slope_scale)


def _line(
    n: int, st: float, stt: float, tau: float, level: float, slope: float
) -> tuple[float, float, float, float]:
    """A hypothesis's regime line from its count ``n`` and the sums ``st`` (of ``tau``) and
    ``stt`` (of ``tau^2``): the entries (00, 01, 11) of the posterior covariance over
    ``sigma^2``, ``(X'X + diag(level, slope))^-1`` (the prior precisions; the scales are in
    noise units), and the predictive variance over ``sigma^2`` at ``tau``, ``spread``. The
    posterior mean is ``(c00 s_y + c01 s_ty, c01 s_y + c11 s_ty)``: it does not depend on
    ``sigma``."""
    p00, p11 = n + level, stt + slope
    det = p00 * p11 - st * st
    c00, c01, c11 = p11 / det, -st / det, p00 / det
    return c00, c01, c11, 1.0 + c00 + 2.0 * tau * c01 + tau * tau * c11


_Row = tuple[float, float, float, float, float, float, float, float]
"""``(s_t, s_tt, c00, c01, c11, spread, log(spread), sqrt(c11))``: a row of :func:`_lines`."""

_ROWS = 512
"""Regime lengths whose lines :func:`_lines` tabulates."""

_NO_ROW = (math.nan, math.nan)
"""No row: its sums equal no hypothesis's."""


@functools.lru_cache(maxsize=64)
def _lines(level: float, slope: float) -> tuple[_Row, ...]:
    """Row ``n``: the sums and :func:`_line` of a regime of ``n`` scores as ``update`` builds
    it (``tau`` runs 0 to ``n - 1``, summed in that order), at ``tau = n``, its next score. A
    hypothesis whose count and sums are a row's has that row's line bit for bit (the line
    depends on the scores only through ``s_y`` and ``s_ty``)."""
    rows: list[_Row] = []
    st = stt = 0.0
    for n in range(_ROWS):
        tau = float(n)
        c00, c01, c11, spread = _line(n, st, stt, tau, level, slope)
        rows.append((st, stt, c00, c01, c11, spread, math.log(spread), math.sqrt(c11)))
        st, stt = st + tau, stt + tau * tau
    return tuple(rows)


def _below(b: float, sd: float) -> float:
    """``P(slope < 0)`` of a regime line whose slope has mean ``b`` and deviation ``sd``."""
    return 0.5 * math.erfc(b / (sd * _SQRT2)) if sd > 0 else float(b < 0)


def decline_probability(state: BocpdState, level_scale: float, slope_scale: float) -> float:
    """The posterior probability that the current regime's slope is negative given that it
    holds at least two scores (``SIG-6``): ``sum_h w_h Phi(-mean_h / sd_h) / sum_h w_h`` over
    the hypotheses with at least two scores; 0 before the noise can be estimated."""
    if state.differences == 0:
        return 0.0
    sigma = state.roughness / state.differences / ROUGHNESS_TO_SIGMA
    columns = (state.counts, state.weights, state.s_t, state.s_tt, state.s_y, state.s_ty)
    probability = _declining(columns, sigma, _precisions(level_scale, slope_scale), -math.inf)
    assert probability is not None  # no bar: the sum runs to its end
    return probability


def _declining(
    columns: _Sums, sigma: float, precisions: tuple[float, float], bar: float
) -> float | None:
    """:func:`decline_probability` of the columns ``counts`` to ``s_ty`` and the noise
    ``sigma``, each line from :func:`_lines` when its sums are a row's (the same bits,
    ``SIG-18``); None as soon as even every hypothesis still to come declining surely
    (``P(slope < 0) <= 1``) would leave the sum below ``bar`` times the weight of the
    hypotheses with at least two scores (``-inf``: never)."""
    counts, weights = columns[0], columns[1]
    everything = sum([w for n, w in zip(counts, weights, strict=True) if n >= 2])
    floor = bar * everything
    level, slope = precisions
    rows = _lines(level, slope)
    total = mass = 0.0
    for n, weight, st, stt, sy, sty in zip(*columns, strict=True):
        if n < 2:
            continue
        row = rows[n] if n < len(rows) else _NO_ROW
        if st == row[0] and stt == row[1]:
            _, _, _, c01, c11, _, _, root = row
        else:
            _, c01, c11, _ = _line(n, st, stt, 0.0, level, slope)
            root = math.sqrt(c11)
        total += weight * _below(c01 * sy + c11 * sty, sigma * root if sigma > 0 else 0.0)
        mass += weight
        if total + (everything - mass) < floor:  # cannot reach the bar any more
            return None
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
        # decline_probability of the new state (0 before the noise can be estimated) is
        # needed once the warm-up is over, until the alarm latches
        judge = not state.alarm and t + 1 >= self.warmup_evals and differences > 0
        columns = self._grow(state, t, y, sigma)
        starts, priors, weights, counts, s_t, s_tt, s_y, s_ty = columns
        starts.append(t + 1)
        priors.append(float(y))
        weights.append(self.hazard)
        counts.append(0)
        for sums in (s_t, s_tt, s_y, s_ty):
            sums.append(0.0)
        if len(starts) > self.max_hypotheses:
            old = weights[:-1]
            drop = old.index(min(old))  # the first least probable non-fresh hypothesis
            for any_column in columns:
                del any_column[drop]
        total = math.fsum(weights)
        weights = [w / total for w in weights]
        final = (counts, weights, s_t, s_tt, s_y, s_ty)
        alarm = state.alarm or (judge and self._declines(final, sigma))
        return _built(
            t + 1,
            origin,
            y,
            state.last if state.evals else 0.0,
            roughness,
            differences,
            tuple(starts),
            tuple(priors),
            tuple(weights),
            tuple(counts),
            tuple(s_t),
            tuple(s_tt),
            tuple(s_y),
            tuple(s_ty),
            alarm,
        )

    def fired(self, state: BocpdState) -> bool:
        return state.alarm

    def _grow(self, state: BocpdState, t: int, y: float, sigma: float) -> _Columns:
        """Every hypothesis's columns with ``y`` folded in, its weight multiplied by its
        predictive density of ``y`` (uniform while ``sigma`` is unknown or its square
        underflows), the weights normalised and multiplied by ``1 - hazard``. A hypothesis
        that ``update`` built, of fewer than :data:`_ROWS` scores, has its line from
        :func:`_lines`."""
        unit = sigma * sigma  # 0 also when sigma^2 underflows: no density then
        log = math.log
        level, slope = _precisions(self.level_scale, self.slope_scale)
        rows = _lines(level, slope)
        limit = len(rows) - 1  # row n + 1 is read too
        logs: list[float] = []
        counts: list[int] = []
        s_t: list[float] = []
        s_tt: list[float] = []
        s_y: list[float] = []
        s_ty: list[float] = []
        columns = (state.starts, state.priors, state.weights, state.counts)
        sums = (state.s_t, state.s_tt, state.s_y, state.s_ty)
        inf = math.inf
        for start, prior, w, n, st, stt, sy, sty in zip(*columns, *sums, strict=True):
            tau, rel = float(t - start), y - prior
            row = rows[n] if 0 <= n < limit else _NO_ROW
            tabled = tau == n and st == row[0] and stt == row[1]
            logged = log(w) if w > 0 else -inf
            if unit > 0:
                if tabled:
                    _, _, c00, c01, c11, spread, log_spread, _ = row
                else:
                    c00, c01, c11, spread = _line(n, st, stt, tau, level, slope)
                    log_spread = log(spread)
                residual = rel - (c00 * sy + c01 * sty + (c01 * sy + c11 * sty) * tau)
                # log N(rel; a + b tau, sigma^2 spread) without -log(2 pi sigma^2) / 2, the
                # same for every hypothesis: the weights are then exactly scale-free (SIG-2)
                logged -= 0.5 * (log_spread + residual * residual / (unit * spread))
            logs.append(logged)
            st1, stt1, sy1, sty1 = st + tau, stt + tau * tau, sy + rel, sty + tau * rel
            counts.append(n + 1)
            s_t.append(st1)
            s_tt.append(stt1)
            s_y.append(sy1)
            s_ty.append(sty1)
        return self._weighed(state, logs, counts, s_t, s_tt, s_y, s_ty)

    def _weighed(self, state: BocpdState, logs: list[float], *sums: Any) -> _Columns:
        """The columns of ``state`` with the new weights (each hypothesis's log weight in
        ``logs``, normalised, times ``1 - hazard``) and the new ``sums`` (counts to s_ty)."""
        if math.isnan(sum(logs)):  # NaN iff one is (the others are finite or -inf): a
            # hypothesis's sums overflowed near SPAN (SIG-6); it gets no weight
            logs = [-math.inf if math.isnan(v) else v for v in logs]
        top = max(logs)
        if not math.isfinite(top):  # every density underflowed (scores near SPAN): no update
            logs, top = [math.log(w) if w > 0 else -math.inf for w in state.weights], 0.0
        exp, keep = math.exp, 1.0 - self.hazard
        raw = [exp(v - top) for v in logs]
        total = math.fsum(raw)
        weights = [w / total * keep for w in raw]
        counts, s_t, s_tt, s_y, s_ty = sums
        return list(state.starts), list(state.priors), weights, counts, s_t, s_tt, s_y, s_ty

    def _declines(self, columns: _Sums, sigma: float) -> bool:
        """Whether :func:`decline_probability` of the new state's columns (``counts`` to
        ``s_ty``) and noise exceeds ``threshold``. The sum stops early, False, once it could
        no longer reach ``threshold`` by a margin far above its rounding (``SIG-18``)."""
        precisions = _precisions(self.level_scale, self.slope_scale)
        probability = _declining(columns, sigma, precisions, self.threshold - 1e-9)
        return probability is not None and probability > self.threshold
