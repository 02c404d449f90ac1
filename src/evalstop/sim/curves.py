"""Synthetic training curves after Gao, Schulman & Hilton (2023) on an absolute clock (world v3).

Every quantity of a run is a function of its own optimisation steps ``s``, never of
``s / steps[-1]`` (spec ``CRV-8``): a run twice as long is not the same curve stretched, so
its per-step rates say nothing of its length. Its scales are drawn independently of its
length (:mod:`evalstop.sim.clock`):

- its rise tops out at ``S = a P N'`` steps, ``P ~ U(1.5, 4)`` and ``N'`` an independent length
  from its kind's step law, or its planned steps in a world whose rise follows the plan
  (``calibrated``), ``a`` the world's stretch (1 in ``paper``; set from the plateau share in
  ``calibrated``). Before its turn its true quality is ``q0 + G y(s)`` with
  ``y(s) = g(min(s / S, 1))`` (Gao's RL gold curve ``g(x) = x (1 - ln x)``: 0 for the initial
  policy at step 0, 1 at the top, so ``G`` is the gain from the initial policy to the top)
  plus a bounded residual rise after ``S`` (``CRV-1``, ``CRV-14``);
- an RLHF run turns at its turn step ``T`` (``CRV-9``); it *hacks* when ``T`` falls before its
  last step, and then collapses in Gao's post-peak shape at ``kappa`` times his speed,
  ``q0 + G y(T) g(1 + kappa (s - T) / T)``, continued below ``q0`` by an exponential decay
  toward the metric's floor :data:`METRIC_RANGE` ``[0]`` with the same slope, so it never
  leaves the metric's range (``CRV-2``, ``CRV-10``);
- with the world's step share a run follows a step learning-rate schedule: it reaches only
  ``rho`` of its rise until its user's drop step (a fraction of the *planned* steps, from its
  estimate), then jumps to the full rise (``CRV-12``).

The proxy reward rises linearly in the KL clock ``s / S`` and the loss falls on the same clock
whatever the gold quality does (``CRV-3``); the KL is Gao's ``d^2`` on that clock,
``(d* s / S)^2`` with ``d* = exp(alpha / beta - 1)`` (``CRV-13``). DPO and LoRA quality
saturates (``CRV-4``). Eval noise is Gaussian with standard deviation ``sigma m G``, ``m``
the run's own noise multiplier drawn from the world's spread (``CRV-5``, ``CRV-11``). All
functions draw randomness only from the ``numpy.random.Generator`` they are given, in the same
order whatever the turn: nothing before the turn depends on the label (``CRV-6``).

A draw is two steps, :func:`rlhf_start` (every draw from the stream, and the run's scalars)
and :func:`rlhf_finish` (the curves of many runs in one array, ``WRK-8``), and likewise
:func:`saturating_start` and :func:`saturating_finish`, so a workload reads each run's stream
once and evaluates all its curves together.

Longer than 400 lines: the draw order (``CRV-6``) runs from a run's scalars through its batch
evaluation and the saturating draw shares its helpers (``_uniform``, the schedule's and the
loss's draws); split, the order a test pins would be spread over modules that import each
other's private helpers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.model import JobKind
from evalstop.sim.clock import rise_scale, rlhf_rise_base
from evalstop.sim.shapes import (
    HALF_LOSS_X,
    JUMP_WIDTH,
    METRIC_RANGE,
    PLATEAU_SLOPE,
    collapse,
    gold_shape,
    rise,
    rise_at,
    step_factor,
)
from evalstop.sim.worlds import World

__all__ = [
    "ALPHA_RL",
    "BETA_RL_RANGE",
    "GAIN_RANGE",
    "HALF_LOSS_X",
    "INITIAL_RANGE",
    "JUMP_WIDTH",
    "METRIC_RANGE",
    "PLATEAU_SLOPE",
    "RISE_PEAK_RANGE",
    "CurveDraw",
    "CurveSample",
    "RlhfRun",
    "RunPlan",
    "SaturatingRun",
    "gold_shape",
    "loss_curve",
    "loss_params",
    "rlhf_curves",
    "rlhf_draw",
    "rlhf_finish",
    "rlhf_start",
    "saturating_curves",
    "saturating_draw",
    "saturating_finish",
    "saturating_start",
]

FloatArray = npt.NDArray[np.float64]

ALPHA_RL = 0.38
"""Gao et al. 2023, RL gold-reward fit: alpha read off their plots (design.md)."""

BETA_RL_RANGE = (0.118, 0.175)
"""Gao et al. 2023: beta_RL from ~0.175 (small reward model) to ~0.118 (3B reward model)."""

RISE_PEAK_RANGE = (1.5, 4.0)
"""Where the rise's Gao curve would peak, in lengths ``N'`` of the rise (v2's range: a bigger
reward model or a tighter KL budget moves Gao's d* out; Gao et al. Fig. 1)."""

INITIAL_RANGE = (0.472, 0.516)
"""Initial eval score ``q0``: the range of the first values of the labelled real 0-1 gold
metrics the corpus scores (PAR win rate vs SFT; ``docs/scripts/calibration.py``). Same for
both labels and both worlds."""

GAIN_RANGE = (0.085, 0.228)
"""Gain ``G`` (eval-score units): the range of the real 0-1 gold metrics' gains from first
value to peak (same data). Same for both labels and both worlds."""


@attrs.frozen(slots=True)
class RunPlan:
    """What a run's curves need to know of its job besides its stream (``CRV-8``, ``CRV-9``).

    Attributes:
        turn: the RLHF turn step ``T`` (``inf``: never); the run hacks when it falls before
            its last checkpoint step.
        planned_steps: the steps its user planned from the estimate (``WRK-7``): where a
            step schedule drops its learning rate.
        stretch: the world's factor ``a`` on the rise scale
            (:func:`evalstop.sim.clock.plateau_stretch`).
    """

    turn: float = math.inf
    planned_steps: float = math.inf
    stretch: float = 1.0


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
        gain: the run's ``G``.
        noise_multiplier: the run's ``m``: its eval noise sd is ``sigma m G`` (``CRV-11``).
        kl: the KL from the initial policy each checkpoint reports (RLHF only, ``CRV-13``;
            None otherwise).
    """

    quality: FloatArray
    eval_score: FloatArray
    loss: FloatArray
    proxy_reward: FloatArray | None
    peak_fraction: float
    gain: float
    noise_multiplier: float = 1.0
    kl: FloatArray | None = None


def loss_curve(
    steps: FloatArray,
    scale: float,
    rng: np.random.Generator,
    noise: float,
    params: tuple[float, float, float] | None = None,
) -> FloatArray:
    """A falling training loss on the run's own clock, plus relative noise (CRV-3).

    ``L(s) = L_inf + (L0 - L_inf) exp(-s / tau)`` with ``L0 ~ U(0.8, 1.2)``,
    ``L_inf / L0 ~ U(0.3, 0.6)`` and ``tau`` log-uniform in [0.1, 1] of ``scale`` steps (the
    run's rise length): some runs converge early and plateau, others are still improving at
    their end. The shape does not depend on the gold quality: loss and quality decouple.
    ``params`` are the three draws of :func:`loss_params` when already drawn.
    """
    start, ratio, tau = loss_params(rng) if params is None else params
    return _loss_shape(steps, scale, (start, ratio, tau), rng.standard_normal(len(steps)), noise)


_Scalar = float | FloatArray


def _loss_shape(
    steps: FloatArray,
    scale: _Scalar,
    params: tuple[_Scalar, _Scalar, _Scalar],
    eps: FloatArray,
    noise: float,
) -> FloatArray:
    """:func:`loss_curve`'s values from its draws: one scale and ``(L0, L_inf / L0, tau)``
    per run, or one per step (many runs' steps in one array)."""
    start, ratio, tau = params
    floor = start * ratio
    clean = floor + (start - floor) * np.exp(-steps / (scale * tau))
    result: FloatArray = clean * (1.0 + noise * eps)
    return result


def loss_params(rng: np.random.Generator) -> tuple[float, float, float]:
    """``(L0, L_inf / L0, tau / scale)``: the loss's three draws (:func:`loss_curve`)."""
    return _loss_params(rng.random(3).tolist())


def _uniform(u: float, low: float, high: float) -> float:
    """``Generator.uniform(low, high)``'s value from its uniform draw ``u`` (``random()``'s):
    numpy computes ``low + (high - low) * u``, so a run's scalar draws are taken in one
    ``random(n)`` call, in the same order, with the same values (``CRV-6``)."""
    return low + (high - low) * u


def _loss_params(u: list[float]) -> tuple[float, float, float]:
    """:func:`loss_params` from its three uniform draws ``u``."""
    start = _uniform(u[0], 0.8, 1.2)
    ratio = _uniform(u[1], 0.3, 0.6)
    return start, ratio, math.exp(_uniform(u[2], _LOG_TENTH, 0.0))


_LOG_TENTH = math.log(0.1)


@attrs.frozen(slots=True)
class CurveDraw:
    """One run's draws before its eval noise is scaled: everything its curves need except
    sigma (spec ``CRV-5``, ``WRK-8``).

    Eval noise enters a run only as ``sigma m G`` times standard normal draws whose number
    and place in the stream do not depend on sigma, so one draw gives the run's curves at
    every sigma (:meth:`sample`), as the curve functions would draw them from the same stream.

    Attributes:
        quality: the noise-free gold quality (hidden truth).
        eval_eps: the standard normal draws of the eval noise, one per checkpoint.
        proxy: the noise-free proxy reward (RLHF only; None otherwise).
        proxy_eps: the standard normal draws of the proxy's noise (RLHF only).
        loss: the training loss each checkpoint reports (its noise does not scale with sigma).
        peak_fraction: where the continuous quality curve peaks, as a fraction of the run.
        gain: the run's ``G``.
        noise_multiplier: the run's ``m`` (``CRV-11``).
        kl: the KL from the initial policy (RLHF only, ``CRV-13``; it does not scale with
            sigma).
    """

    quality: FloatArray
    eval_eps: FloatArray
    proxy: FloatArray | None
    proxy_eps: FloatArray | None
    loss: FloatArray
    peak_fraction: float
    gain: float
    noise_multiplier: float = 1.0
    kl: FloatArray | None = None

    def sample(self, eval_noise: float) -> CurveSample:
        """The run's curves at eval noise ``eval_noise`` (a fraction of the run's gain): the
        same values, bit for bit, as the curve function drawing them with that noise."""
        scores, proxies = self.scored((eval_noise,))
        return CurveSample(
            self.quality,
            scores[0],
            self.loss,
            None if proxies is None else proxies[0],
            self.peak_fraction,
            self.gain,
            self.noise_multiplier,
            self.kl,
        )

    def scored(self, eval_noises: Sequence[float]) -> tuple[FloatArray, FloatArray | None]:
        """The run's eval scores and proxy rewards (None for a run without one) at each eval
        noise of ``eval_noises``, a row each: quality (or proxy) plus ``sigma m G`` times the
        run's standard normal draws, elementwise, so row ``i`` is :meth:`sample`'s at
        ``eval_noises[i]`` bit for bit (a sweep scores a run's noise levels at once, WRK-8)."""
        scales = np.array([[noise * self.noise_multiplier * self.gain] for noise in eval_noises])
        eval_score: FloatArray = self.quality + scales * self.eval_eps
        proxy = None
        if self.proxy is not None and self.proxy_eps is not None:
            proxy = self.proxy + scales * self.proxy_eps
        return eval_score, proxy


def _schedule_draws(world: World, plan: RunPlan, u: list[float]) -> tuple[float, float, float]:
    """``(drop step, level, noise multiplier)`` from the four uniform draws ``u`` of the step
    schedule and the noise, in this order whatever the world (``CRV-11``, ``CRV-12``)."""
    stepped = u[0] < world.step_share
    where = _uniform(u[1], *world.step_drop_range)
    level = _uniform(u[2], *world.step_level_range)
    low, high = world.noise_spread
    multiplier = math.exp(_uniform(u[3], math.log(low), math.log(high)))
    drop = where * plan.planned_steps if stepped else math.inf
    return drop, level, multiplier


def rlhf_curves(
    steps: FloatArray,
    *,
    plan: RunPlan,
    world: World,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of one RLHF run at its checkpoint ``steps`` (CRV-1, CRV-2, CRV-8).

    Draws, in this order and whatever the turn: ``q0``, ``G``, ``P``, the rise length ``N'``,
    beta, the step schedule, the noise multiplier, the proxy's offset, the loss's scalars,
    then one value per checkpoint of the eval noise, the proxy's noise and the loss's noise
    (:func:`rlhf_draw`, sampled at ``eval_noise``): every scalar comes before the per-checkpoint
    draws, so a longer run has the same curves (``CRV-8``).

    Args:
        steps: the checkpoints' steps, increasing; the last is the run's end.
        plan: the run's turn step, planned steps and the world's stretch.
        world: the curve parameters (:mod:`evalstop.sim.worlds`).
        rng: the run's own random stream.
        eval_noise: the eval noise sigma, as a fraction of the run's gain.
        loss_noise: the relative noise of the loss.

    Returns:
        The run's curves at ``steps``.
    """
    draw = rlhf_draw(steps, plan=plan, world=world, rng=rng, loss_noise=loss_noise)
    return draw.sample(eval_noise)


def rlhf_draw(
    steps: FloatArray,
    *,
    plan: RunPlan,
    world: World,
    rng: np.random.Generator,
    loss_noise: float,
) -> CurveDraw:
    """The draws of :func:`rlhf_curves` before the eval noise is scaled (``WRK-8``); the
    arguments are its own but ``eval_noise``: :func:`rlhf_finish` of :func:`rlhf_start`."""
    started = rlhf_start(steps, plan=plan, world=world, rng=rng)
    return rlhf_finish([started], decline_rate=world.decline_rate, loss_noise=loss_noise)[0]


@attrs.frozen(slots=True)
class RlhfRun:
    """One RLHF run's draws and scalars (:func:`rlhf_start`), its curves not yet evaluated:
    :func:`rlhf_finish` evaluates many runs' at once (``WRK-8``).

    Attributes:
        steps: its checkpoint steps.
        eps: its standard normal draws: eval noise, proxy noise and loss noise, one per
            checkpoint each, in this order (one ``standard_normal`` call gives the values
            three consecutive calls give).
        q0: its initial quality.
        gain: its gain.
        top: its rise top ``S`` (steps).
        drop: the step of its step schedule's drop (``inf``: none).
        level: the share of its rise it reaches before the drop (``rho``).
        turn: its turn step.
        at_turn: its rise at the turn (0 for a run that does not turn before its end).
        slope: its proxy's gain per unit of ``s / S``.
        d_star: Gao's ``d*`` (``CRV-13``).
        proxy_start: its proxy's offset.
        loss: its loss's scale (the rise length ``N'``) and three draws.
        peak_fraction: as :class:`CurveDraw`'s.
        multiplier: as :class:`CurveDraw`'s.
    """

    steps: FloatArray
    eps: FloatArray
    q0: float
    gain: float
    top: float
    drop: float
    level: float
    turn: float
    at_turn: float
    slope: float
    d_star: float
    proxy_start: float
    loss: tuple[float, float, float, float]
    peak_fraction: float
    multiplier: float


def rlhf_start(
    steps: FloatArray, *, plan: RunPlan, world: World, rng: np.random.Generator
) -> RlhfRun:
    """Every draw of one RLHF run from ``rng`` (``CRV-6``), and its scalars: in this order
    and whatever the turn, 13 uniform scalars, then one standard normal per checkpoint for the
    eval noise, the proxy's noise and the loss's noise (:func:`rlhf_curves`)."""
    s = np.asarray(steps, dtype=np.float64)
    u = rng.random(13).tolist()  # the 13 scalar draws, in order (CRV-6)
    q0 = _uniform(u[0], *INITIAL_RANGE)
    gain = _uniform(u[1], *GAIN_RANGE)
    rise_peak = _uniform(u[2], *RISE_PEAK_RANGE)
    length = plan.stretch * rlhf_rise_base(world.rise_on_plan, u[3], plan.planned_steps)
    beta = _uniform(u[4], *BETA_RL_RANGE)
    drop, level, multiplier = _schedule_draws(world, plan, u[5:9])
    proxy_start = _uniform(u[9], -1.0, 0.0)
    start, ratio, tau = _loss_params(u[10:13])
    eps = rng.standard_normal(3 * len(s))
    top = rise_peak * length
    turn, end = plan.turn, float(s[-1])
    at_turn = rise_at(turn, top, drop, level) if turn < end else 0.0
    if turn < end:
        peak_fraction = turn / end
    elif top < end or drop < end:
        peak_fraction = 1.0
    else:
        peak_fraction = top / end
    # Proxy reward: linear in d (Gao et al.), d / d* = s / top on the rise's own clock;
    # the KL is d^2, with Gao's d* = exp(alpha / beta - 1) (CRV-13): no draw of its own.
    slope, d_star = gain * (ALPHA_RL / beta), math.exp(ALPHA_RL / beta - 1.0)
    loss = (length, start, ratio, tau)
    return RlhfRun(
        s,
        eps,
        q0,
        gain,
        top,
        drop,
        level,
        turn,
        at_turn,
        slope,
        d_star,
        proxy_start,
        loss,
        peak_fraction,
        multiplier,
    )


def rlhf_finish(
    runs: Sequence[RlhfRun], *, decline_rate: float, loss_noise: float
) -> list[CurveDraw]:
    """The curve draws of ``runs`` (:func:`rlhf_start`'s), evaluated in one array of all
    their steps: each step's value is the arithmetic :func:`rlhf_curves` describes on its
    run's scalars, element for element, so a run's draw is the same bit for bit in any batch
    (``WRK-8``)."""
    sizes = [len(run.steps) for run in runs]
    s = np.concatenate([run.steps for run in runs])

    def each(values: list[float]) -> FloatArray:
        return np.repeat(np.array(values, dtype=np.float64), sizes)

    top, q0, gain = (each([getattr(r, name) for r in runs]) for name in ("top", "q0", "gain"))
    normalised = rise(s, top)
    stepped = np.repeat([math.isfinite(run.drop) for run in runs], sizes)
    if stepped.any():
        drop, level = each([r.drop for r in runs]), each([r.level for r in runs])
        normalised[stepped] *= step_factor(s[stepped], drop[stepped], level[stepped])
    turn, at_turn = each([r.turn for r in runs]), each([r.at_turn for r in runs])
    quality = collapse(s, normalised, turn, at_turn, decline_rate, q0, gain)
    proxy = each([r.proxy_start for r in runs]) + each([r.slope for r in runs]) * s / top
    kl = (each([r.d_star for r in runs]) * s / top) ** 2
    length, start, ratio, tau = (each([r.loss[i] for r in runs]) for i in range(4))
    noise = np.concatenate([run.eps[2 * n :] for run, n in zip(runs, sizes, strict=True)])
    loss = _loss_shape(s, length, (start, ratio, tau), noise, loss_noise)
    out, at = [], 0
    for run, n in zip(runs, sizes, strict=True):
        cut = slice(at, at + n)
        eval_eps, proxy_eps = run.eps[:n], run.eps[n : 2 * n]
        out.append(
            CurveDraw(
                quality[cut],
                eval_eps,
                proxy[cut],
                proxy_eps,
                loss[cut],
                run.peak_fraction,
                run.gain,
                run.multiplier,
                kl[cut],
            )
        )
        at += n
    return out


def saturating_curves(
    steps: FloatArray,
    *,
    kind: JobKind,
    plan: RunPlan,
    world: World,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of a DPO or LoRA run: quality ``1 - exp(-r s / N')`` rises and saturates (CRV-4).

    ``r ~ U(2, 5)`` and ``N'`` an independent length of the kind's step law: most of the gain
    comes within ``N'`` steps, then it plateaus; ``q0 + G (1 - exp(-r s / N')) / (1 - exp(-r))``
    with ``q0``, ``G`` as for RLHF, times the step schedule's factor (CRV-12). It never
    declines, so its peak is its last step.

    Args:
        steps: the checkpoints' steps, increasing; the last is the run's end.
        kind: the job's kind (its step law sets ``N'``).
        plan: the run's planned steps (its turn is ignored).
        world: the schedule and noise parameters.
        rng: the run's own random stream.
        eval_noise: the eval noise sigma, as a fraction of the run's gain.
        loss_noise: the relative noise of the loss.

    Returns:
        The run's curves at ``steps`` (no proxy reward).
    """
    draw = saturating_draw(steps, kind=kind, plan=plan, world=world, rng=rng, loss_noise=loss_noise)
    return draw.sample(eval_noise)


def saturating_draw(
    steps: FloatArray,
    *,
    kind: JobKind,
    plan: RunPlan,
    world: World,
    rng: np.random.Generator,
    loss_noise: float,
) -> CurveDraw:
    """The draws of :func:`saturating_curves` before the eval noise is scaled (``WRK-8``);
    the arguments are its own but ``eval_noise``: :func:`saturating_finish` of
    :func:`saturating_start`."""
    started = saturating_start(steps, kind=kind, plan=plan, world=world, rng=rng)
    return saturating_finish([started], loss_noise=loss_noise)[0]


@attrs.frozen(slots=True)
class SaturatingRun:
    """One DPO or LoRA run's draws and scalars (:func:`saturating_start`), its curves not yet
    evaluated: :func:`saturating_finish` evaluates many runs' at once (``WRK-8``).

    Attributes:
        steps: its checkpoint steps.
        eps: its standard normal draws: eval noise, then loss noise, one per checkpoint each.
        q0: its initial quality.
        gain: its gain.
        rate: its saturation rate ``r``.
        length: its saturation length ``N'``.
        drop: the step of its step schedule's drop (``inf``: none).
        level: the share of its rise it reaches before the drop (``rho``).
        loss: its loss's three draws.
        multiplier: its noise multiplier ``m``.
    """

    steps: FloatArray
    eps: FloatArray
    q0: float
    gain: float
    rate: float
    length: float
    drop: float
    level: float
    loss: tuple[float, float, float]
    multiplier: float


def saturating_start(
    steps: FloatArray, *, kind: JobKind, plan: RunPlan, world: World, rng: np.random.Generator
) -> SaturatingRun:
    """Every draw of one DPO or LoRA run from ``rng`` (``CRV-6``): 11 uniform scalars, then
    one standard normal per checkpoint for the eval noise and the loss's noise (one call)."""
    s = np.asarray(steps, dtype=np.float64)
    u = rng.random(11).tolist()  # the 11 scalar draws, in order (CRV-6)
    q0 = _uniform(u[0], *INITIAL_RANGE)
    gain = _uniform(u[1], *GAIN_RANGE)
    length = rise_scale(kind, u[2])
    rate = _uniform(u[3], 2.0, 5.0)
    drop, level, multiplier = _schedule_draws(world, plan, u[4:8])
    loss = _loss_params(u[8:11])
    eps = rng.standard_normal(2 * len(s))
    return SaturatingRun(s, eps, q0, gain, rate, length, drop, level, loss, multiplier)


def saturating_finish(runs: Sequence[SaturatingRun], *, loss_noise: float) -> list[CurveDraw]:
    """The curve draws of ``runs`` (:func:`saturating_start`'s) evaluated in one array of all
    their steps, each element its own run's arithmetic (as :func:`rlhf_finish`)."""
    sizes = [len(run.steps) for run in runs]
    s = np.concatenate([run.steps for run in runs])

    def each(values: list[float]) -> FloatArray:
        return np.repeat(np.array(values, dtype=np.float64), sizes)

    length = each([r.length for r in runs])
    rates = [r.rate for r in runs]
    scale = each([-rate for rate in rates]) * s / length
    saturation = (1.0 - np.exp(scale)) / each([1.0 - math.exp(-rate) for rate in rates])
    gained = each([r.gain for r in runs]) * saturation
    stepped = np.repeat([math.isfinite(run.drop) for run in runs], sizes)
    if stepped.any():
        drop, level = each([r.drop for r in runs]), each([r.level for r in runs])
        gained[stepped] *= step_factor(s[stepped], drop[stepped], level[stepped])
    quality = each([r.q0 for r in runs]) + gained
    start, ratio, tau = (each([r.loss[i] for r in runs]) for i in range(3))
    noise = np.concatenate([run.eps[n:] for run, n in zip(runs, sizes, strict=True)])
    loss = _loss_shape(s, length, (start, ratio, tau), noise, loss_noise)
    out, at = [], 0
    for run, n in zip(runs, sizes, strict=True):
        cut = slice(at, at + n)
        eval_eps = run.eps[:n]
        out.append(
            CurveDraw(quality[cut], eval_eps, None, None, loss[cut], 1.0, run.gain, run.multiplier)
        )
        at += n
    return out
