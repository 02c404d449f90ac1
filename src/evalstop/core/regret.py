"""Regret-first scoring: what stopping (or not) a run cost, as a fraction of the run's gain.

Pure helpers shared by the simulator's metrics and trace replay (spec ``RGT``). A run ends
with a *kept* checkpoint: the best observed one up to the stop when a detector stopped it, the
last one when it ran to its end. Its **regret** is how far that checkpoint's quality lies below
the run's best, over the run's gain (best minus the first checkpoint's quality). A stop is
*harmful* when its regret exceeds :data:`HARMFUL_REGRET`, *benign* otherwise; a collapsing run
that is never stopped is *missed*. Beside the mean regret, a summary gives two tail-robust
views of it (``RGT-5``): the median, and a mean whose denominators are floored at
:data:`GAIN_FLOOR` of the metric's scale.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Iterable

import attrs

__all__ = [
    "GAIN_FLOOR",
    "HARMFUL_REGRET",
    "RegretSummary",
    "RunScore",
    "StopClass",
    "classify",
    "regret_fraction",
    "summarize_runs",
]

HARMFUL_REGRET = 0.05
"""A stop whose regret exceeds this fraction of the run's gain is harmful (the issue's 5%)."""

GAIN_FLOOR = 0.02
"""The gain-floored mean's smallest denominator, in units of the metric's full scale
(``RGT-5``). Chosen on the tuning seeds only (1001-1002, the simulator's RLHF runs of both
worlds at their goal noise, 10/20/40 evaluations): the 5th percentile of the runs' gain (0.017)
rounded to one significant figure. No evaluation data (scoreboard seed 1, ``reproduce``'s seeds,
real curves) was read to choose it."""


class StopClass(enum.Enum):
    """What a detector's decision on one run amounts to (spec ``RGT-2``)."""

    HARMFUL = "harmful"
    """Stopped, and the kept checkpoint is more than 5% of the gain below the run's best."""
    BENIGN = "benign"
    """Stopped, and the kept checkpoint is within 5% of the gain of the run's best."""
    MISSED = "missed"
    """A collapsing run that was never stopped."""
    RAN = "ran"
    """A run that does not collapse and was not stopped: nothing to do, nothing lost."""


def regret_fraction(best: float, first: float, kept: float) -> float:
    """``(best - kept) / (best - first)``, floored at 0 (spec ``RGT-1``).

    A run whose best is its first checkpoint has no gain: its regret is 0 when the kept value
    equals the best and 1 ("all of it") when it is lower.

    pre: math.isfinite(best) and math.isfinite(first) and math.isfinite(kept)
    post: __return__ >= 0
    """
    gain = best - first
    lost = max(best - kept, 0.0)
    if gain <= 0:
        return 0.0 if lost == 0 else 1.0
    return lost / gain


def classify(stopped: bool, regret: float, collapsing: bool) -> StopClass:
    """The class of one run's outcome (spec ``RGT-2``)."""
    if stopped:
        return StopClass.HARMFUL if regret > HARMFUL_REGRET else StopClass.BENIGN
    return StopClass.MISSED if collapsing else StopClass.RAN


@attrs.frozen(slots=True)
class RunScore:
    """One run's outcome under one detector.

    Attributes:
        stopped: the detector stopped the run before its last checkpoint.
        regret: the kept checkpoint's regret (:func:`regret_fraction`).
        collapsing: the run collapses (hidden truth in the simulator, the label on real
            curves): running it to its end loses more than :data:`HARMFUL_REGRET` of its gain.
        post_peak: compute the run spends after its best checkpoint when it runs to its end
            (GPU-seconds in the simulator, steps on real curves).
        saved: the part of ``post_peak`` a stop avoided (0 without a stop; a stop before the
            peak saves all of it).
        delay: evaluations from the best checkpoint to the stop (negative: before it), None
            without a stop.
        gain: the run's gain (best minus first) in units of the metric's full scale; NaN
            when the scale is unknown (``RGT-5``).
        lost: the kept checkpoint's distance below the run's best in the same units, NaN
            when unknown.
    """

    stopped: bool
    regret: float
    collapsing: bool
    post_peak: float = 0.0
    saved: float = 0.0
    delay: int | None = None
    gain: float = math.nan
    lost: float = math.nan

    @property
    def stop_class(self) -> StopClass:
        return classify(self.stopped, self.regret, self.collapsing)

    @property
    def floored_regret(self) -> float:
        """``min(regret, lost / GAIN_FLOOR)`` (``RGT-5``): ``lost / max(gain, GAIN_FLOOR)`` for a
        run with a gain, the ``RGT-1`` value (0 or 1) for one without; NaN when the gain or the
        loss is unknown."""
        if math.isnan(self.gain) or math.isnan(self.lost):
            return math.nan
        return min(self.regret, self.lost / GAIN_FLOOR)


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


@attrs.frozen(slots=True)
class RegretSummary:
    """Regret-first scores of one detector over a set of runs (spec ``RGT-3``).

    Rates with an empty denominator are NaN. ``recall`` is the share of collapsing runs
    stopped; ``harmful_rate`` / ``benign_rate`` are the shares of *healthy* (non-collapsing)
    runs with a harmful / benign stop; ``mean_regret`` is over every run (stopped or not);
    ``stop_regret`` over the stops on collapsing runs; ``saved_share`` is the post-peak
    compute of collapsing runs that stops avoided over all of it; ``delay`` the mean
    evaluations from the peak to the stop over stopped collapsing runs. ``median_regret`` and
    ``floored_regret`` are the tail-robust views of ``mean_regret`` (``RGT-5``);
    ``over_share`` the share of runs whose regret exceeds :data:`HARMFUL_REGRET` (``RGT-7``).
    """

    runs: int
    collapsing: int
    healthy: int
    harmful: int
    benign: int
    missed: int
    harmful_healthy: int
    recall: float
    harmful_rate: float
    benign_rate: float
    mean_regret: float
    stop_regret: float
    saved_share: float
    delay: float
    median_regret: float = math.nan
    floored_regret: float = math.nan
    over_share: float = math.nan


def summarize_runs(scores: Iterable[RunScore]) -> RegretSummary:
    """Summarise per-run scores (spec ``RGT-3``)."""
    runs = list(scores)
    collapsing = [r for r in runs if r.collapsing]
    healthy = [r for r in runs if not r.collapsing]
    classes = [r.stop_class for r in runs]
    harmful_healthy = sum(r.stop_class is StopClass.HARMFUL for r in healthy)
    benign_healthy = sum(r.stop_class is StopClass.BENIGN for r in healthy)
    caught = [r for r in collapsing if r.stopped]
    post_peak = math.fsum(r.post_peak for r in collapsing)
    return RegretSummary(
        runs=len(runs),
        collapsing=len(collapsing),
        healthy=len(healthy),
        harmful=classes.count(StopClass.HARMFUL),
        benign=classes.count(StopClass.BENIGN),
        missed=classes.count(StopClass.MISSED),
        harmful_healthy=harmful_healthy,
        recall=_share(len(caught), len(collapsing)),
        harmful_rate=_share(harmful_healthy, len(healthy)),
        benign_rate=_share(benign_healthy, len(healthy)),
        mean_regret=_mean([r.regret for r in runs]),
        stop_regret=_mean([r.regret for r in caught]),
        saved_share=math.fsum(r.saved for r in collapsing) / post_peak if post_peak else math.nan,
        delay=_mean([float(r.delay) for r in caught if r.delay is not None]),
        median_regret=_median([r.regret for r in runs]),
        floored_regret=_mean([r.floored_regret for r in runs]),
        over_share=_share(sum(r.regret > HARMFUL_REGRET for r in runs), len(runs)),
    )
