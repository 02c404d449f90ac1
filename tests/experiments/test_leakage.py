"""The leakage audit (LEAK-1 to LEAK-3)."""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.model import Job, JobKind, Observation
from evalstop.experiments.leakage import (
    AUC_LIMIT,
    Leakage,
    audit,
    label_aucs,
    length_errors,
    mann_whitney_auc,
)
from evalstop.sim.workload import WorkloadConfig, generate


def _jobs(world: str, seeds: int = 3, n_jobs: int = 1000) -> list[Job]:
    config = WorkloadConfig(n_jobs=n_jobs, world=world)
    return [
        attrs.evolve(
            job,
            spec=attrs.evolve(job.spec, job_id=seed * n_jobs + job.job_id),
        )
        for seed in range(seeds)
        for job in generate(config, seed).jobs
    ]


def test_leak1_auc_extremes_and_ties() -> None:
    """LEAK-1: perfect separation is 1, reversed 0, all ties 0.5; NaN scores are left out."""
    assert mann_whitney_auc([1, 2, 3, 4], [False, False, True, True]) == 1.0
    assert mann_whitney_auc([4, 3, 2, 1], [False, False, True, True]) == 0.0
    assert mann_whitney_auc([1, 1, 1, 1], [False, True, False, True]) == 0.5
    assert mann_whitney_auc([1, math.nan, 3], [False, True, True]) == 1.0
    assert math.isnan(mann_whitney_auc([1, 2], [True, True]))


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_leak1_auc_is_the_pairwise_probability(pairs: list[tuple[int, bool]]) -> None:
    """LEAK-1: the AUC equals P(positive > negative) + P(tie) / 2 counted over all pairs."""
    scores = [float(s) for s, _ in pairs]
    labels = [y for _, y in pairs]
    pos = [s for s, y in pairs if y]
    neg = [s for s, y in pairs if not y]
    if not pos or not neg:
        assert math.isnan(mann_whitney_auc(scores, labels))
        return
    wins = sum((p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg))
    assert mann_whitney_auc(scores, labels) == pytest.approx(wins / (len(pos) * len(neg)))


@pytest.mark.parametrize("world", ["paper", "calibrated"])
def test_leak3_no_world_leaks(world: str) -> None:
    """LEAK-3: in both worlds no first-checkpoint observable separates the labels (AUC <=
    0.65) and the first checkpoint predicts the length no better than the estimate."""
    result = audit(_jobs(world))
    assert isinstance(result, Leakage)
    assert result.label_auc_max <= AUC_LIMIT, result.label_auc
    assert not result.label_leak
    assert not result.length_leak, result.length_errors
    assert result.length_error_estimate <= result.length_error_raw_estimate
    assert {name for name, _ in result.label_auc} >= {"eval_score", "proxy_reward", "step"}


def _fixed_fraction(job: Job, n: int = 10) -> Job:
    """``job`` evaluated at fixed fractions of its true length: the old, leaky schedule."""
    total = job.truth.total_steps
    steps = [round((i + 1) * total / n) for i in range(n)]
    first = job.observations[0]
    observations = [attrs.evolve(first, step=step) for step in steps]
    quality = np.full(n, float(job.truth.quality[0]))
    truth = attrs.evolve(job.truth, quality=quality)
    return Job(attrs.evolve(job.spec, eval_interval=steps[0]), truth, observations)


def test_leak3_flags_a_fixed_fraction_schedule() -> None:
    """LEAK-2, LEAK-3: evaluating at fixed fractions of the true length gives it away."""
    jobs = [_fixed_fraction(j) for j in _jobs("paper", seeds=1) if j.truth.total_steps >= 10]
    result = audit(jobs)
    assert result.length_leak
    assert result.length_error_first_checkpoint < 0.05
    errors = length_errors(jobs)
    assert errors["service x c"] < 0.05 < errors["log-linear(estimate)"]


def test_leak3_flags_a_label_in_the_first_eval_score() -> None:
    """LEAK-3: a first eval score that carries the label is flagged."""
    jobs = []
    for job in _jobs("paper", seeds=1):
        if job.spec.kind is JobKind.RLHF and job.truth.hacking:
            first = job.observations[0]
            shifted: Observation = attrs.evolve(first, eval_score=first.eval_score + 1.0)
            jobs.append(attrs.evolve(job, observations=(shifted, *job.observations[1:])))
        else:
            jobs.append(job)
    aucs = label_aucs(jobs)
    assert aucs["eval_score"] == 1.0
    assert audit(jobs).label_leak
