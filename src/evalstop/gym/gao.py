"""Gao et al.'s functional form for RL, fitted to a run's exact gold curve (spec ``GYM-12``).

Gao, Schulman and Hilton (2023) found the gold reward of an RL policy, measured from the
initial policy's, follows ``R(d) = d (alpha - beta log d)`` with ``d = sqrt(KL)``. The form is
linear in ``alpha`` and ``beta``, so the fit is ordinary least squares on the regressors ``d``
and ``-d log d`` (no intercept: ``R(0) = 0``). Pure: numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

__all__ = ["GaoFit", "fit_gao"]


@attrs.frozen(slots=True)
class GaoFit:
    """A least-squares fit of ``R(d) = d (alpha - beta log d)``.

    Attributes:
        alpha: the fitted ``alpha``.
        beta: the fitted ``beta``.
        r2: the coefficient of determination of the fit (``1 - SS_res / SS_tot`` about the
            mean of ``R``), NaN when ``R`` does not vary.
    """

    alpha: float
    beta: float
    r2: float


def fit_gao(gold: Sequence[float], kl: Sequence[float]) -> GaoFit:
    """Fit Gao's RL form to gold rewards (centred on the first) against exact KLs."""
    reward = np.asarray(gold, dtype=np.float64) - gold[0]
    d = np.sqrt(np.maximum(np.asarray(kl, dtype=np.float64), 0.0))
    log_d = np.log(np.where(d > 0, d, 1.0))
    design = np.column_stack([d, -d * log_d])
    (alpha, beta), *_ = np.linalg.lstsq(design, reward, rcond=None)
    residual = reward - design @ np.array([alpha, beta])
    total = float(((reward - reward.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else float("nan")
    return GaoFit(alpha=float(alpha), beta=float(beta), r2=r2)
