"""Mann-Whitney AUCs for the leakage audit (spec ``LEAK-1``, ``LEAK-5``): plain, folded and
within strata, which checkpoint of a job is its first trained one, and which hacking jobs
turned before it.

Shared by :mod:`evalstop.experiments.leakage` and :mod:`evalstop.experiments.learned` (which
imports nothing of the audit itself, so the two do not import each other).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evalstop.core.model import Job

__all__ = [
    "STRATA",
    "first_trained",
    "fold",
    "mann_whitney_auc",
    "stratified_auc",
    "turned_before_first",
]

STRATA = 40
"""Quantile strata of the estimate within which
:func:`~evalstop.experiments.leakage.label_aucs_given_estimate` compares hacking and healthy
runs: about 45 RLHF runs a stratum over 3 x 1,000 jobs (first set to 20, raised to 40 after
the first audit showed the link's residual within wider strata; the issue's report says so)."""


def mann_whitney_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """P(score of a positive > score of a negative) + half P(tie); NaN scores are left out.

    NaN when either class is empty. Ranks are averaged over ties.
    """
    values = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels, dtype=bool)
    keep = np.isfinite(values)
    values, positive = values[keep], positive[keep]
    n_pos = int(positive.sum())
    n_neg = len(values) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    _, first, counts = np.unique(ordered, return_index=True, return_counts=True)
    average = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(average, counts)
    u = float(ranks[positive].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def fold(auc: float) -> float:
    """``max(auc, 1 - auc)``; NaN stays NaN."""
    return max(auc, 1.0 - auc) if math.isfinite(auc) else math.nan


def stratified_auc(
    scores: Sequence[float],
    labels: Sequence[bool],
    strata_by: Sequence[float],
    *,
    folded: bool = True,
) -> float:
    """The AUC of ``scores`` counting only pairs within the same stratum: the runs are split
    into :data:`STRATA` quantile bins of ``strata_by``, and the wins and pairs of each bin
    (:func:`mann_whitney_auc`) are pooled (LEAK-5); folded unless ``folded`` is False."""
    key = np.asarray(strata_by, dtype=np.float64)
    values = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels, dtype=bool)
    edges = np.quantile(key, np.linspace(0.0, 1.0, STRATA + 1)[1:-1])
    bins = np.searchsorted(edges, key, side="right")
    wins = pairs = 0.0
    for b in np.unique(bins):
        inside = bins == b
        n_pos = int(positive[inside & np.isfinite(values)].sum())
        n_neg = int((~positive[inside] & np.isfinite(values[inside])).sum())
        auc = mann_whitney_auc(values[inside].tolist(), positive[inside].tolist())
        if math.isfinite(auc):
            wins += auc * n_pos * n_neg
            pairs += n_pos * n_neg
    if not pairs:
        return math.nan
    return fold(wins / pairs) if folded else wins / pairs


def first_trained(job: Job) -> int:
    """The 1-based index of ``job``'s first checkpoint after step 0: 2 when it evaluates its
    initial policy at step 0 (``WRK-7``, ``CRV-14``), else 1 (the audit's *first
    checkpoint*, spec ``LEAK``)."""
    return 2 if job.observations[0].step == 0 else 1


def turned_before_first(job: Job) -> bool:
    """Whether a hacking job's turn (hidden) precedes its first trained checkpoint: its label
    shows in its first trained eval score as its collapse, not as a leak (CRV-6, LEAK-5)."""
    turn = job.truth.peak_fraction * job.truth.total_steps
    return job.truth.hacking and turn < job.observations[first_trained(job) - 1].step
