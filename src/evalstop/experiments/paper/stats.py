"""Mean and 95% confidence interval over seeds (Student's t, no SciPy needed)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

__all__ = ["Estimate", "estimate"]

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def _t975(dof: int) -> float:
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


@attrs.frozen(slots=True)
class Estimate:
    """Mean of the defined values, half-width of its 95% interval, and how many were defined.

    NaN values (an undefined rate in one seed) are left out and counted in ``n`` no more.
    With fewer than two values the half-width is NaN.
    """

    mean: float
    ci95: float
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        def clean(x: float) -> float | None:
            return round(x, 6) if math.isfinite(x) else None

        return {"mean": clean(self.mean), "ci95": clean(self.ci95), "n": self.n}


def estimate(values: Iterable[float]) -> Estimate:
    """Mean and t-based 95% half-width of the finite ``values``."""
    data = [v for v in values if math.isfinite(v)]
    n = len(data)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    mean = math.fsum(data) / n
    if n == 1:
        return Estimate(mean, math.nan, 1)
    var = math.fsum((v - mean) ** 2 for v in data) / (n - 1)
    return Estimate(mean, _t975(n - 1) * math.sqrt(var / n), n)
