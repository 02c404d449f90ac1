"""Synthetic training curves after Gao, Schulman & Hilton (2023).

RLHF gold quality follows the RL form of Gao et al.: ``R(d) = d (alpha - beta ln d)`` with
``d = sqrt(KL(pi || pi_init))`` growing linearly in training steps. It peaks at
``d* = exp(alpha / beta - 1)`` with ``R(d*) = beta d*``. Normalising by that peak and writing
``x = d / d*`` gives one universal shape, ``g(x) = x (1 - ln x)``: 0 at the start, 1 at the
peak (x = 1), back to 0 at x = e and negative beyond. ``alpha`` and ``beta`` therefore only
set where the peak lies in KL units; whether a run hacks is decided by where its last step
falls relative to the peak (spec ``CRV-1``, ``CRV-2``).

The proxy reward keeps rising (linearly in d, as Gao et al. observe for RL) and the training
loss keeps falling whatever the gold quality does (``CRV-3``): the decoupling the paper is
about. DPO and LoRA quality saturates and never declines (``CRV-4``).

All functions are vectorised over a run's checkpoint fractions and draw randomness only from
the ``numpy.random.Generator`` they are given.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import numpy.typing as npt

__all__ = [
    "ALPHA_RL",
    "BETA_RL_RANGE",
    "HACKING_PEAK_RANGE",
    "HEALTHY_PEAK_RANGE",
    "CurveSample",
    "gold_shape",
    "loss_curve",
    "rlhf_curves",
    "saturating_curves",
]

FloatArray = npt.NDArray[np.float64]

ALPHA_RL = 0.38
"""Gao et al. 2023, RL gold-reward fit: alpha read off their plots (design.md)."""

BETA_RL_RANGE = (0.118, 0.175)
"""Gao et al. 2023: beta_RL from ~0.175 (small reward model) to ~0.118 (3B reward model)."""

HACKING_PEAK_RANGE = (0.25, 0.75)
"""Where a hacking run's true quality peaks, as a fraction of its steps: inside the run, with
at least a quarter of the run after the peak so the collapse is part of the run."""

HEALTHY_PEAK_RANGE = (1.5, 4.0)
"""Where a healthy run's peak would be, as a multiple of its length: beyond the last step
(a bigger reward model or a tighter KL budget moves d* out; Gao et al. Fig. 1)."""


def gold_shape(x: FloatArray) -> FloatArray:
    """``g(x) = x (1 - ln x)`` for ``x = d / d*`` (``g(0) = 0``, peak ``g(1) = 1``)."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, x * (1.0 - np.log(safe)), 0.0)


@attrs.frozen(slots=True)
class CurveSample:
    """One run's curves at its checkpoints (index i is checkpoint i + 1).

    ``quality`` is noise-free; ``eval_score``, ``loss`` and ``proxy_reward`` are what the
    checkpoints report. ``peak_fraction`` is where the continuous quality curve peaks as a
    fraction of the run (> 1 when beyond the end).
    """

    quality: FloatArray
    eval_score: FloatArray
    loss: FloatArray
    proxy_reward: FloatArray | None
    peak_fraction: float


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


def rlhf_curves(
    fractions: FloatArray,
    *,
    hacking: bool,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of one RLHF run at checkpoint ``fractions`` of its steps (CRV-1, CRV-2).

    The peak fraction is drawn from :data:`HACKING_PEAK_RANGE` for a hacking run and from
    :data:`HEALTHY_PEAK_RANGE` for a healthy one; beta from :data:`BETA_RL_RANGE`. Eval score
    = gold quality (normalised: 0 at the initial policy, 1 at the run's potential peak) plus
    Gaussian noise of standard deviation ``eval_noise``.
    """
    low, high = HACKING_PEAK_RANGE if hacking else HEALTHY_PEAK_RANGE
    peak_fraction = float(rng.uniform(low, high))
    beta = float(rng.uniform(*BETA_RL_RANGE))
    x = fractions / peak_fraction
    quality = gold_shape(x)
    eval_score = quality + eval_noise * rng.standard_normal(len(fractions))
    # Proxy reward: linear in d, in the same normalised units: alpha d / (beta d*).
    proxy = (ALPHA_RL / beta) * x + eval_noise * rng.standard_normal(len(fractions))
    loss = loss_curve(fractions, rng, loss_noise)
    return CurveSample(quality, eval_score, loss, proxy, peak_fraction)


def saturating_curves(
    fractions: FloatArray,
    *,
    rng: np.random.Generator,
    eval_noise: float,
    loss_noise: float,
) -> CurveSample:
    """Curves of a DPO or LoRA run: quality ``1 - exp(-r t)`` rises and saturates (CRV-4).

    ``r ~ U(2, 5)``: most of the gain comes in the first half of the run, then it plateaus;
    normalised to 1 at the end of the run. It never declines, so its peak is its last step.
    """
    rate = rng.uniform(2.0, 5.0)
    quality = (1.0 - np.exp(-rate * fractions)) / (1.0 - math.exp(-rate))
    eval_score = quality + eval_noise * rng.standard_normal(len(fractions))
    loss = loss_curve(fractions, rng, loss_noise)
    return CurveSample(quality, eval_score, loss, None, 1.0)
