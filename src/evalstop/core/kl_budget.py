"""The KL-budget detector: Gao et al.'s law fitted online, stop past the fitted peak (spec
``SIG-5``).

Gao, Schulman & Hilton (2023) found that the gold reward of an RL policy follows
``gold(d) = d (alpha - beta ln d)`` in ``d = sqrt(KL(pi || pi_init))``, peaking at
``d* = exp(alpha / beta - 1)``. This detector fits ``y = c + a d + b d ln d`` (Gao's form plus
an intercept: the initial policy's eval score is not 0 on a real metric; ``a = alpha``,
``b = -beta``) by least squares to the run's ``(d, eval score)`` pairs, from running sums
(ten numbers: O(1) state), and fires once the fitted curve is concave (``b < 0``) and its
slope at the current ``d``, ``a + b (ln d + 1)``, is below zero by more than ``z`` standard
errors: the run is confidently past the fitted peak.

The clock ``d`` is ``sqrt(max(KL, 0))`` when the run's first valid report carries a finite
``kl``; when it carries none the detector falls back, documented and reported by
:meth:`KlBudgetDetector.uses_fallback`, to ``d = step`` (Gao et al.: ``d`` grows roughly
linearly with the steps; a linear rescaling of ``d`` only reparametrises the fit, so the
decisions do not depend on the step's unit). Once chosen the clock stays; a report lacking it,
with a non-finite score, or whose sums would overflow is not folded. The kept checkpoint is
the best reported score (``DET-4``). The alarm latches.
"""

from __future__ import annotations

import math

import attrs

from evalstop.core.boundary import CheckpointView
from evalstop.core.noise_aware import _count, _positive

__all__ = ["CLOCK_KL", "CLOCK_STEP", "KlBudgetDetector", "KlBudgetState", "solve3"]

CLOCK_KL = 1
"""``KlBudgetState.clock`` when ``d = sqrt(KL)``."""

CLOCK_STEP = 2
"""``KlBudgetState.clock`` when the run reports no KL and ``d = step`` (the fallback)."""


@attrs.frozen(slots=True)
class KlBudgetState:
    """The running sums of the least-squares fit (O(1)).

    Features are ``1``, ``d`` and ``u = d ln d``; ``y`` is the score minus the first folded
    score.

    Attributes:
        clock: 0 before the first folded report, then :data:`CLOCK_KL` or :data:`CLOCK_STEP`.
        n: folded pairs.
        origin: the first folded score.
        d: the last folded ``d``.
        s_d: sum of ``d``; s_u: of ``u``; s_dd: of ``d^2``; s_du: of ``d u``; s_uu: of ``u^2``.
        s_y: sum of ``y``; s_dy: of ``d y``; s_uy: of ``u y``; s_yy: of ``y^2``.
        alarm: whether the rule has fired (it latches).
    """

    clock: int = 0
    n: int = 0
    origin: float = 0.0
    d: float = 0.0
    s_d: float = 0.0
    s_u: float = 0.0
    s_dd: float = 0.0
    s_du: float = 0.0
    s_uu: float = 0.0
    s_y: float = 0.0
    s_dy: float = 0.0
    s_uy: float = 0.0
    s_yy: float = 0.0
    alarm: bool = False


Matrix3 = tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float, float]]


def solve3(m: Matrix3) -> Matrix3 | None:
    """The inverse of the 3x3 matrix ``m`` by its adjugate; None when it is (nearly) singular
    (determinant at most ``1e-12`` of the product of the diagonal)."""
    (a, b, c), (d, e, f), (g, h, i) = m
    co = (e * i - f * h, -(d * i - f * g), d * h - e * g)
    det = a * co[0] + b * co[1] + c * co[2]
    scale = abs(a * e * i)
    if not math.isfinite(det) or scale == 0 or abs(det) <= 1e-12 * scale:
        return None
    return (
        (co[0] / det, -(b * i - c * h) / det, (b * f - c * e) / det),
        (co[1] / det, (a * i - c * g) / det, -(a * f - c * d) / det),
        (co[2] / det, -(a * h - b * g) / det, (a * e - b * d) / det),
    )


def _u(d: float) -> float:
    return d * math.log(d) if d > 0 else 0.0


@attrs.frozen(slots=True)
class KlBudgetDetector:
    """Fire when the run is confidently past the peak of its fitted Gao curve (``SIG-5``).

    Attributes:
        z: how many standard errors the fitted slope at the current ``d`` must lie below 0.
        warmup_evals: no stop before this many folded pairs (at least 4: the fit has three
            parameters and needs a residual).

    The defaults were chosen by ``docs/scripts/tune_signals.py`` on the gym's development
    split only (``SIG-9``; re-chosen on the gym's second distribution, ``GYM-5``).

    Raises:
        ValueError: ``z`` not a finite number > 0, ``warmup_evals`` below 4.
    """

    z: float = attrs.field(default=1.0, validator=_positive)
    warmup_evals: int = attrs.field(default=8, validator=_count)

    def __attrs_post_init__(self) -> None:
        if self.warmup_evals < 4:
            raise ValueError(f"warmup_evals must be >= 4, got {self.warmup_evals!r}")

    @property
    def name(self) -> str:
        return f"kl-budget(z={self.z:g},warmup={self.warmup_evals})"

    @property
    def needs(self) -> tuple[str, ...]:
        """The side signals the rule reads (``SIG-8``): without them it is the fallback."""
        return ("kl",)

    def initial(self) -> KlBudgetState:
        return KlBudgetState()

    def update(self, state: KlBudgetState, obs: CheckpointView) -> KlBudgetState:
        """Fold one report (O(1)); see the module docstring for what is skipped."""
        score = obs.eval_score
        if not math.isfinite(score):
            return state
        clock = state.clock or (CLOCK_KL if _kl(obs) is not None else CLOCK_STEP)
        raw = _kl(obs) if clock == CLOCK_KL else float(obs.step)
        if raw is None:
            return state
        d = math.sqrt(raw) if clock == CLOCK_KL else raw
        origin = score if state.n == 0 else state.origin
        y, u = score - origin, _u(d)
        if not math.isfinite(y) or not math.isfinite(u * u):
            return state
        new = KlBudgetState(
            clock,
            state.n + 1,
            origin,
            d,
            state.s_d + d,
            state.s_u + u,
            state.s_dd + d * d,
            state.s_du + d * u,
            state.s_uu + u * u,
            state.s_y + y,
            state.s_dy + d * y,
            state.s_uy + u * y,
            state.s_yy + y * y,
            state.alarm,
        )
        sums = (new.s_dd, new.s_du, new.s_uu, new.s_yy, new.s_dy, new.s_uy, new.s_d, new.s_u)
        if not all(map(math.isfinite, (*sums, new.s_y))):  # its arithmetic would overflow
            return state
        if not state.alarm and new.n >= self.warmup_evals and self._past_peak(new):
            return attrs.evolve(new, alarm=True)  # once a run: the alarm latches
        return new

    def fired(self, state: KlBudgetState) -> bool:
        return state.alarm

    def uses_fallback(self, state: KlBudgetState) -> bool:
        """True when the run's clock is the step, not the KL (no KL reported)."""
        return state.clock == CLOCK_STEP

    def fit(self, state: KlBudgetState) -> tuple[float, float, float] | None:
        """``(c, a, b)`` of the least-squares fit, None before it is determined."""
        solved = self._solve(state)
        return None if solved is None else solved[0]

    def peak(self, state: KlBudgetState) -> float | None:
        """The fitted peak ``d* = exp(-a / b - 1)``, None unless the fit is concave."""
        fitted = self.fit(state)
        if fitted is None or not fitted[2] < 0:
            return None
        return math.exp(min(-fitted[1] / fitted[2] - 1.0, 700.0))

    def _solve(self, s: KlBudgetState) -> tuple[tuple[float, float, float], Matrix3] | None:
        inverse = solve3(((s.n, s.s_d, s.s_u), (s.s_d, s.s_dd, s.s_du), (s.s_u, s.s_du, s.s_uu)))
        if inverse is None:
            return None
        y, dy, uy = s.s_y, s.s_dy, s.s_uy
        (a0, b0, c0), (a1, b1, c1), (a2, b2, c2) = inverse
        # sum() of each row's three products, in order (it summed a generator of them)
        theta = (
            sum((a0 * y, b0 * dy, c0 * uy)),
            sum((a1 * y, b1 * dy, c1 * uy)),
            sum((a2 * y, b2 * dy, c2 * uy)),
        )
        return theta, inverse

    def _past_peak(self, s: KlBudgetState) -> bool:
        solved = self._solve(s)
        if solved is None or s.d <= 0:
            return False
        (c, a, b), inv = solved
        if not b < 0:
            return False
        rss = s.s_yy - (c * s.s_y + a * s.s_dy + b * s.s_uy)
        variance = max(rss, 0.0) / (s.n - 3)
        w = math.log(s.d) + 1.0
        spread = inv[1][1] + 2.0 * w * inv[1][2] + w * w * inv[2][2]
        slope = a + b * w
        return slope + self.z * math.sqrt(variance * max(spread, 0.0)) < 0


def _kl(obs: CheckpointView) -> float | None:
    kl = obs.kl
    if kl is None or not math.isfinite(kl):
        return None
    return max(kl, 0.0)
