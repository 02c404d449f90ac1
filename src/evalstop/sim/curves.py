"""Synthetic training curves after Gao, Schulman & Hilton (2023), in two named worlds.

Every RLHF run, hacking or healthy, is drawn from the same distributions up to its *turn*
(spec ``CRV-1``, ``CRV-2``): an initial quality ``q0``, a gain ``G``, the position ``P`` of the
peak of its rise and the fraction ``p`` of the run at which it turns. Before the turn its true
quality is ``q0 + G r(t)`` with the rise ``r(t) = g(t / P) / g(1 / P)``, Gao et al.'s RL gold
curve ``g(x) = x (1 - ln x)`` of a run whose peak lies ``P`` run lengths away (so ``r(1) = 1``).
The hidden label shows only after the turn:

- a *hacking* run collapses: ``q0 + G r(p) g(1 + kappa (t - p) / p)``, Gao's post-peak shape
  (``kappa = 1`` is Gao's own speed), so it peaks at ``p`` and falls;
- a *healthy* run keeps rising along ``r`` through the end, or, with the world's plateau share,
  plateaus: it keeps a residual rise of :data:`PLATEAU_SLOPE` of the rise's slope at the turn,
  far below any noise, so its true peak is still its last checkpoint.

Nothing before the turn depends on the label, so neither the level of a checkpoint nor the
proxy reward or the loss at the first checkpoint tells hacking from healthy (``CRV-6``).

The proxy reward rises linearly in the same KL clock ``t / P`` and the loss falls whatever the
gold quality does (``CRV-3``). The KL an RLHF run reports is that clock squared, in Gao's units:
``KL = d^2`` with ``d = d* t / P`` and ``d* = exp(alpha / beta - 1)`` the peak of Gao's law
for the run's beta (``CRV-8``); it is drawn from nothing new, so adding it changed no other
draw. DPO and LoRA quality saturates (``CRV-4``). Eval noise is
Gaussian with standard deviation ``sigma G`` (``CRV-5``). All functions draw randomness only
from the ``numpy.random.Generator`` they are given, in the same order whatever the label.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.sim.worlds import World

__all__ = [
    "ALPHA_RL",
    "BETA_RL_RANGE",
    "GAIN_RANGE",
    "HALF_LOSS_X",
    "INITIAL_RANGE",
    "PLATEAU_SLOPE",
    "RISE_PEAK_RANGE",
    "CurveDraw",
    "CurveSample",
    "gold_shape",
    "loss_curve",
    "rlhf_curves",
    "rlhf_draw",
    "saturating_curves",
    "saturating_draw",
]

FloatArray = npt.NDArray[np.float64]

ALPHA_RL = 0.38
"""Gao et al. 2023, RL gold-reward fit: alpha read off their plots (design.md)."""

BETA_RL_RANGE = (0.118, 0.175)
"""Gao et al. 2023: beta_RL from ~0.175 (small reward model) to ~0.118 (3B reward model)."""

RISE_PEAK_RANGE = (1.5, 4.0)
"""Where the rise ``r`` would peak, in run lengths: beyond the last step (a bigger reward model
or a tighter KL budget moves Gao's d* out; Gao et al. Fig. 1). Same for both labels."""

INITIAL_RANGE = (0.472, 0.516)
"""Initial eval score ``q0``: the range of the first values of the labelled real 0-1 gold
metrics the corpus scores (PAR win rate vs SFT; ``docs/scripts/calibration.py``). Same for
both labels and both worlds."""

GAIN_RANGE = (0.085, 0.228)
"""Gain ``G`` (eval-score units): the range of the real 0-1 gold metrics' gains from first
value to peak (same data). Same for both labels and both worlds."""

HALF_LOSS_X = 2.1555
"""``g(HALF_LOSS_X) = 0.5``: Gao's curve has lost half its peak at 2.1555 times the peak's KL
distance (the calibration converts a measured half-loss time into a decline rate with it)."""

PLATEAU_SLOPE = 0.05
"""A plateaued healthy run keeps rising at this fraction of its rise's slope at the turn: far
below noise, but its true peak stays at its last checkpoint (a healthy run wastes nothing)."""


def gold_shape(x: FloatArray) -> FloatArray:
    """``g(x) = x (1 - ln x)`` for ``x = d / d*`` (``g(0) = 0``, peak ``g(1) = 1``)."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, x * (1.0 - np.log(safe)), 0.0)


@attrs.frozen(slots=True)
class CurveSample:
    """One run's curves at its checkpoints (index i is checkpoint i + 1).

    Attributes:
        quality: the noise-free gold quality (hidden truth).
        eval_score: the held-out eval score each checkpoint reports.
        loss: the training loss each checkpoint reports.
        proxy_reward: the proxy reward each checkpoint reports (RLHF only; None otherwise).
        peak_fraction: where the continuous quality curve peaks, as a fraction of the run
            (> 1 when beyond the end).
        gain: the run's ``G``, the unit of its eval noise.
        kl: the KL each checkpoint reports (RLHF only; None otherwise; ``CRV-8``).
    """

    quality: FloatArray
    eval_score: FloatArray
    loss: FloatArray
    proxy_reward: FloatArray | None
    peak_fraction: float
    gain: float
    kl: FloatArray | None = None


def loss_curve(fractions: FloatArray, rng: np.random.Generator, noise: float) -> FloatArray:
    """A falling training loss: exponential approach to a floor, plus relative noise (CRV-3).

    ``L(t) = L_inf + (L0 - L_inf) exp(-t / tau)`` with ``L0 ~ U(0.8, 1.2)``,
    ``L_inf / L0 ~ U(0.3, 0.6)`` and ``tau`` log-uniform in [0.1, 1] of the run: some runs
    converge early and plateau, others are still improving at their end. The shape does not
    depend on the gold quality, as in the paper: loss and quality decouple.
    """
    start = rng.uniform(0.8, 1.2)
    floor = start * rng.uniform(0.3, 0.6)
    tau = math.exp(rng.uniform(math.log(0.1), 0.0))
    clean = floor + (start - floor) * np.exp(-fractions / tau)
    result: FloatArray = clean * (1.0 + noise * rng.standard_normal(len(fractions)))
    return result


def _after_turn(
    t: FloatArray, turn: float, rise_peak: float, shape: str, decline_rate: float
) -> FloatArray:
    """The normalised quality ``(q - q0) / G`` at run fractions ``t`` (CRV-1, CRV-2).

    The rise ``r(t) = g(t / P) / g(1 / P)`` is 0 at the start and 1 at the end of the run; one
    :func:`gold_shape` call evaluates it at ``t``, at the turn and at the run's end (the same
    values, element by element, as three calls).
    """
    n = len(t)
    points = np.empty(n + 2, dtype=np.float64)
    points[:n] = t / rise_peak
    points[n] = turn / rise_peak
    points[n + 1] = 1.0 / rise_peak
    shapes = gold_shape(points)
    scale = float(shapes[n + 1])
    rise: FloatArray = shapes[:n] / scale
    if shape == "rising":
        return rise
    at_turn = float(shapes[n]) / scale
    after = t > turn
    if shape == "collapse":
        x = 1.0 + decline_rate * (t - turn) / turn
        return np.where(after, at_turn * gold_shape(x), rise)
    # plateau: a residual rise at PLATEAU_SLOPE of r'(turn) = -ln(turn / P) / (P g(1 / P))
    slope = -math.log(turn / rise_peak) / (rise_peak * scale)
    return np.where(after, at_turn + PLATEAU_SLOPE * slope * (t - turn), rise)


@attrs.frozen(slots=True)
class CurveDraw:
    """One run's draws before its eval noise is scaled: everything its curves need except
    sigma (spec ``CRV-5``, ``WRK-8``).

    Eval noise enters a run only as ``sigma G`` times standard normal draws whose number
    and place in the stream do not depend on sigma, so one draw gives the run's curves at
    every sigma (:meth:`sample`), as the curve functions would draw them from the same stream.

    Attributes:
        quality: the noise-free gold quality (hidden truth).
        eval_eps: the standard normal draws of the eval noise, one per checkpoint.
        proxy: the noise-free proxy reward (RLHF only; None otherwise).
        proxy_eps: the standard normal draws of the proxy's noise (RLHF only).
        loss: the training loss each checkpoint reports (its noise does not scale with sigma).
        peak_fraction: where the continuous quality curve peaks, as a fraction of the run.
        gain: the run's ``G``, the unit of its eval noise.
        kl: the noise-free KL each checkpoint reports (RLHF only; None otherwise; ``CRV-8``).
    """

    quality: FloatArray
    eval_eps: FloatArray
    proxy: FloatArray | None
    proxy_eps: FloatArray | None
    loss: FloatArray
    peak_fraction: float
    gain: float
    kl: FloatArray | None = None

    def sample(self, eval_noise: float) -> CurveSample:
        """The run's curves at eval noise ``eval_noise`` (a fraction of the run's gain): the
        same values, bit for bit, as the curve function drawing them with that noise."""
        scale = eval_noise * self.gain  # the curve functions' `eval_noise * gain * eps`
        eval_score = self.quality + scale * self.eval_eps
        proxy = None
        if self.proxy is not None and self.proxy_eps is not None:
            proxy = self.proxy + scale * self.proxy_eps
        return CurveSample(
            self.quality, eval_score, self.loss, proxy, self.peak_fraction, self.gain, self.kl
        )


def rlhf_curves(
    fractions: FloatArray,
    *,
    hacking: bool,
    world: World,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of one RLHF run at checkpoint ``fractions`` of its steps (CRV-1, CRV-2).

    Draws, in this order and whatever the label: ``q0``, ``G``, ``P``, ``p``, beta, the
    plateau draw, the noise of eval and proxy, the proxy's offset and the loss
    (:func:`rlhf_draw`, sampled at ``eval_noise``).

    Args:
        fractions: the checkpoints' positions in the run, in (0, 1], increasing.
        hacking: whether the run reward-hacks (its gold quality peaks and falls).
        world: the curve parameters (:mod:`evalstop.sim.worlds`).
        rng: the run's own random stream.
        eval_noise: the eval noise sigma, as a fraction of the run's gain.
        loss_noise: the relative noise of the loss.

    Returns:
        The run's curves at ``fractions``.
    """
    draw = rlhf_draw(fractions, hacking=hacking, world=world, rng=rng, loss_noise=loss_noise)
    return draw.sample(eval_noise)


def rlhf_draw(
    fractions: FloatArray,
    *,
    hacking: bool,
    world: World,
    rng: np.random.Generator,
    loss_noise: float,
) -> CurveDraw:
    """The draws of :func:`rlhf_curves` before the eval noise is scaled (``WRK-8``); the
    arguments are its own but ``eval_noise``."""
    q0 = float(rng.uniform(*INITIAL_RANGE))
    gain = float(rng.uniform(*GAIN_RANGE))
    rise_peak = float(rng.uniform(*RISE_PEAK_RANGE))
    turn = float(rng.uniform(*world.turn_range))
    beta = float(rng.uniform(*BETA_RL_RANGE))
    plateau = bool(rng.random() < world.plateau_share)
    eval_eps = rng.standard_normal(len(fractions))
    proxy_eps = rng.standard_normal(len(fractions))
    proxy_start = float(rng.uniform(-1.0, 0.0))
    shape = "collapse" if hacking else ("plateau" if plateau else "rising")
    normalised = _after_turn(fractions, turn, rise_peak, shape, world.decline_rate)
    quality = q0 + gain * normalised
    # Proxy reward: linear in d (Gao et al.), d = t / P in the same clock as the rise.
    proxy = proxy_start + gain * (ALPHA_RL / beta) * fractions / rise_peak
    loss = loss_curve(fractions, rng, loss_noise)
    peak_fraction = turn if hacking else (1.0 if plateau else rise_peak)
    # KL = d^2 in Gao's units: d = d* t / P, d* = exp(alpha / beta - 1) (CRV-8; no new draw).
    kl = np.square(math.exp(ALPHA_RL / beta - 1.0) * fractions / rise_peak)
    return CurveDraw(quality, eval_eps, proxy, proxy_eps, loss, peak_fraction, gain, kl)


def saturating_curves(
    fractions: FloatArray,
    *,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of a DPO or LoRA run: quality ``1 - exp(-r t)`` rises and saturates (CRV-4).

    ``r ~ U(2, 5)``: most of the gain comes in the first half of the run, then it plateaus;
    ``q0 + G (1 - exp(-r t)) / (1 - exp(-r))`` with ``q0``, ``G`` as for RLHF. It never
    declines, so its peak is its last step.

    Args:
        fractions: the checkpoints' positions in the run, in (0, 1], increasing.
        rng: the run's own random stream.
        eval_noise: the eval noise sigma, as a fraction of the run's gain.
        loss_noise: the relative noise of the loss.

    Returns:
        The run's curves at ``fractions`` (no proxy reward).
    """
    return saturating_draw(fractions, rng=rng, loss_noise=loss_noise).sample(eval_noise)


def saturating_draw(
    fractions: FloatArray, *, rng: np.random.Generator, loss_noise: float
) -> CurveDraw:
    """The draws of :func:`saturating_curves` before the eval noise is scaled (``WRK-8``);
    the arguments are its own but ``eval_noise``."""
    q0 = float(rng.uniform(*INITIAL_RANGE))
    gain = float(rng.uniform(*GAIN_RANGE))
    rate = rng.uniform(2.0, 5.0)
    quality = q0 + gain * (1.0 - np.exp(-rate * fractions)) / (1.0 - math.exp(-rate))
    eval_eps = rng.standard_normal(len(fractions))
    loss = loss_curve(fractions, rng, loss_noise)
    return CurveDraw(quality, eval_eps, None, None, loss, 1.0, gain)
