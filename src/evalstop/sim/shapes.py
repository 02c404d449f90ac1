"""The shapes of world v3's quality curves (spec ``CRV-1``, ``CRV-2``, ``CRV-10``, ``CRV-12``):
Gao's gold curve, the rise with its residual, the step schedule's factor and the bounded
collapse. :mod:`evalstop.sim.curves` draws a run's parameters and puts them together.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "HALF_LOSS_X",
    "JUMP_WIDTH",
    "METRIC_RANGE",
    "PLATEAU_SLOPE",
    "collapse",
    "gold_shape",
    "rise",
    "rise_at",
    "step_factor",
]

FloatArray = npt.NDArray[np.float64]

HALF_LOSS_X = 2.1555
"""``g(HALF_LOSS_X) = 0.5``: Gao's curve has lost half its peak at 2.1555 times the peak's KL
distance (the calibration converts a measured half-loss time into a decline rate with it)."""

PLATEAU_SLOPE = 0.05
"""After its rise tops out a run keeps gaining, at most this fraction of its top's gain more
(``1 - S / s`` of it, strictly rising at any step a run reaches): far below noise, but its
true peak stays at its last checkpoint (a healthy run wastes nothing)."""

METRIC_RANGE = (0.0, 1.0)
"""The eval metric's range (a 0-1 rate: win rate, accuracy, the corpus's unit sources): no
true quality leaves it (``CRV-10``)."""

JUMP_WIDTH = 0.02
"""A step schedule's jump completes in a few percent of the drop step: ``1 - exp(-(s - s_d) /
(JUMP_WIDTH s_d))`` (the documented drops of the supervised curves finish within one epoch of
35-70, 1.4-3% of the run; ``docs/scripts/calibration.py``)."""


def gold_shape(x: FloatArray) -> FloatArray:
    """``g(x) = x (1 - ln x)`` for ``x = d / d*`` (``g(0) = 0``, peak ``g(1) = 1``)."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, x * (1.0 - np.log(safe)), 0.0)


def rise(s: FloatArray, top: float | FloatArray) -> FloatArray:
    """``y(s)``: Gao's rise from 0 at step 0 (the initial policy, ``g(0) = 0``) to 1 at its
    top at ``top`` steps (one top, or one per step), then the residual (``CRV-1``)."""
    out: FloatArray = gold_shape(np.minimum(s / top, 1.0))
    out += PLATEAU_SLOPE * (1.0 - top / np.maximum(s, top))  # 0 up to the top
    return out


def rise_at(s: float, top: float, drop: float, level: float) -> float:
    """:func:`rise` times :func:`step_factor` at one step ``s > 0``."""
    x = min(s / top, 1.0)
    y = x * (1.0 - math.log(x)) + PLATEAU_SLOPE * (1.0 - top / max(s, top))
    factor = 1.0
    if math.isfinite(drop):
        jump = 1.0 - math.exp(-max(s - drop, 0.0) / (JUMP_WIDTH * drop))
        factor = level + (1.0 - level) * jump
    return y * factor


def step_factor(s: FloatArray, drop: float | FloatArray, level: float | FloatArray) -> FloatArray:
    """A step schedule's share of the rise: ``level`` up to the drop, then a quick jump to 1
    (one drop and level, or one of each per step, all finite)."""
    if np.ndim(drop) == 0 and not math.isfinite(drop):
        return np.ones_like(s)
    after = np.maximum(s - drop, 0.0) / (JUMP_WIDTH * drop)
    out: FloatArray = level + (1.0 - level) * (1.0 - np.exp(-after))
    return out


def collapse(
    s: FloatArray,
    normalised: FloatArray,
    turn: float | FloatArray,
    at_turn: float | FloatArray,
    kappa: float,
    q0: float | FloatArray,
    gain: float | FloatArray,
) -> FloatArray:
    """True quality: ``q0 + G normalised`` before the turn, Gao's bounded collapse after it
    (``CRV-2``, ``CRV-10``). The run's scalars are one per run or one per step (many runs'
    steps in one array: each step's value is the same arithmetic)."""
    quality: FloatArray = q0 + gain * normalised
    after = s > turn
    if not after.any():
        return quality
    t, peak, start, g = (np.broadcast_to(v, s.shape)[after] for v in (turn, at_turn, q0, gain))
    x = 1.0 + kappa * (s[after] - t) / t
    above = np.minimum(x, math.e)
    gao = start + g * peak * above * (1.0 - np.log(above))
    floor = METRIC_RANGE[0]
    rate = g * peak / np.maximum(start - floor, 1e-12)
    below = floor + (start - floor) * np.exp(-np.maximum(x - math.e, 0.0) * rate)
    quality[after] = np.where(x <= math.e, gao, below)
    return quality
