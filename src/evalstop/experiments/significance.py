"""What a difference between two detectors can be trusted to be: intervals and paired tests
(spec ``SCB-9``).

- :func:`wilson`: the Wilson score interval of a rate (Wilson 1927), which keeps inside [0, 1]
  and stays honest at 0 or n successes, where the normal interval collapses;
- :func:`mcnemar`: the exact McNemar test of two detectors' stops on the same runs: under the
  null, each run one detector stops and the other does not is as likely either way, so the
  discordant count is Binomial(b + c, 1/2); the two-sided p-value doubles its smaller tail;
- :func:`paired_bootstrap`: the mean of per-run differences (e.g. of regret) with a
  percentile interval and a two-sided p-value from resampling the runs, from a fixed seed so
  the same runs give the same numbers.

Pure functions of counts and lists; numpy only for the resampling.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.regret import RegretSummary, RunScore, StopClass

__all__ = [
    "ALPHA",
    "BOOTSTRAP_SEED",
    "Comparison",
    "Paired",
    "compare",
    "intervals",
    "mcnemar",
    "paired_bootstrap",
    "wilson",
]

ALPHA = 0.05
"""The significance level the scoreboard marks differences at."""

BOOTSTRAP_SEED = 26
"""The resampling seed (any fixed number: the issue's; no result chose it)."""

_Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile."""


def wilson(successes: int, trials: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / trials`` (95% by default); ``(nan, nan)``
    for no trials.

    Raises:
        ValueError: negative counts or more successes than trials.
    """
    if successes < 0 or trials < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}, {trials}")
    if trials == 0:
        return math.nan, math.nan
    p = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # at 0 or n successes the bound is exactly 0 or 1; rounding must not move it inside
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def mcnemar(only_first: int, only_second: int) -> float:
    """The exact two-sided McNemar p-value for ``only_first`` runs where only the first
    detector stops and ``only_second`` where only the second does (1 with none discordant).

    Raises:
        ValueError: a negative count.
    """
    if only_first < 0 or only_second < 0:
        raise ValueError(f"counts must be >= 0, got {only_first}, {only_second}")
    n = only_first + only_second
    if n == 0:
        return 1.0
    low = min(only_first, only_second)
    tail = math.fsum(math.comb(n, i) for i in range(low + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


@attrs.frozen(slots=True)
class Paired:
    """A paired comparison of per-run values (first minus second).

    Attributes:
        mean: the mean difference.
        low: the 2.5th percentile of the resampled means.
        high: the 97.5th percentile.
        p_value: two-sided: twice the smaller share of resampled means on either side of 0
            (capped at 1); 1 when every difference is 0.
        runs: the pairs compared.
    """

    mean: float
    low: float
    high: float
    p_value: float
    runs: int


def paired_bootstrap(
    first: Sequence[float], second: Sequence[float], reps: int = 2000, seed: int = BOOTSTRAP_SEED
) -> Paired:
    """Resample the runs ``reps`` times (with replacement) and report the mean difference.

    Raises:
        ValueError: the sequences differ in length or are empty, or ``reps < 1``.
    """
    if len(first) != len(second) or not first:
        raise ValueError(f"need two equal, non-empty sequences, got {len(first)}, {len(second)}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    diffs = np.asarray(first, dtype=np.float64) - np.asarray(second, dtype=np.float64)
    mean = float(diffs.mean())
    if not np.any(diffs):
        return Paired(0.0, 0.0, 0.0, 1.0, len(diffs))
    means = diffs[_picks(len(diffs), reps, seed)].mean(axis=1)
    below, above = float(np.mean(means <= 0.0)), float(np.mean(means >= 0.0))
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(mean, float(low), float(high), min(1.0, 2.0 * min(below, above)), len(diffs))


@functools.lru_cache(maxsize=2)
def _picks(runs: int, reps: int, seed: int) -> npt.NDArray[np.signedinteger[Any]]:
    """The run indices :func:`paired_bootstrap` resamples: a function of the number of runs,
    ``reps`` and the seed alone, so drawn once for the detectors compared on the same runs
    (read-only: the cache hands out one array)."""
    picks = np.random.default_rng(seed).integers(0, runs, size=(reps, runs))
    picks.flags.writeable = False
    return picks


def intervals(summary: RegretSummary) -> dict[str, tuple[float, float]]:
    """The Wilson intervals of a summary's rates: ``recall`` (collapsing runs stopped),
    ``harmful_rate`` and ``benign_rate`` (healthy runs with such a stop)."""
    caught = summary.collapsing - summary.missed
    benign = round(summary.benign_rate * summary.healthy) if summary.healthy else 0
    return {
        "recall": wilson(caught, summary.collapsing),
        "harmful_rate": wilson(summary.harmful_healthy, summary.healthy),
        "benign_rate": wilson(benign, summary.healthy),
    }


@attrs.frozen(slots=True)
class Comparison:
    """A detector against the default on the same runs (``SCB-9``).

    Attributes:
        recall_p: McNemar's p on the collapsing runs' stops (recall).
        harmful_p: McNemar's p on the healthy runs' harmful stops.
        regret: the paired bootstrap of the per-run regret, this detector minus the default
            (gain-floored, ``RGT-5``, when every run's gain is known; else plain).
        recall_change: this detector's recall minus the default's.
        harmful_change: its harmful rate minus the default's.
    """

    recall_p: float
    harmful_p: float
    regret: Paired
    recall_change: float
    harmful_change: float

    @property
    def significant(self) -> bool:
        """Any of the three differences at p < :data:`ALPHA`."""
        return min(self.recall_p, self.harmful_p, self.regret.p_value) < ALPHA


def _discordant(pairs: list[tuple[bool, bool]]) -> tuple[int, int]:
    return sum(a and not b for a, b in pairs), sum(b and not a for a, b in pairs)


def _rate(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def compare(scores: Sequence[RunScore], default: Sequence[RunScore]) -> Comparison:
    """``scores`` against ``default``, run by run (the same runs in the same order).

    Raises:
        ValueError: the lists differ in length or in which runs collapse.
    """
    if len(scores) != len(default) or any(
        a.collapsing != b.collapsing for a, b in zip(scores, default, strict=False)
    ):
        raise ValueError("compare needs the same runs in the same order")
    pairs = list(zip(scores, default, strict=True))
    caught = [(a.stopped, b.stopped) for a, b in pairs if a.collapsing]
    harmed = [
        (a.stop_class is StopClass.HARMFUL, b.stop_class is StopClass.HARMFUL)
        for a, b in pairs
        if not a.collapsing
    ]
    floored = all(not math.isnan(r.floored_regret) for r in (*scores, *default))
    first = [r.floored_regret if floored else r.regret for r in scores]
    second = [r.floored_regret if floored else r.regret for r in default]
    regret = paired_bootstrap(first, second) if pairs else Paired(0.0, 0.0, 0.0, 1.0, 0)
    return Comparison(
        recall_p=mcnemar(*_discordant(caught)),
        harmful_p=mcnemar(*_discordant(harmed)),
        regret=regret,
        recall_change=_rate([a for a, _ in caught]) - _rate([b for _, b in caught]),
        harmful_change=_rate([a for a, _ in harmed]) - _rate([b for _, b in harmed]),
    )
