"""The leakage audit (LEAK-1 to LEAK-5)."""

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
    CURVE_AUC_LIMIT,
    CURVE_OBSERVABLES,
    ERROR_MARGIN,
    JUDGED_JOBS,
    Leakage,
    audit,
    first_trained,
    label_aucs,
    length_errors,
    mann_whitney_auc,
    stratified_auc,
)
from evalstop.sim.curves import gold_shape
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
def test_leak3_leak4_leak5_no_world_leaks(world: str) -> None:
    """LEAK-3, LEAK-4, LEAK-5: in both worlds no curve observable of the first checkpoint,
    nor all of them jointly, says more than 0.55 of the label within strata of the estimate,
    and no predictor over the first 1 or 3 checkpoints beats the estimate by 10%; the stated
    label/length link shows in the length carriers and the true length."""
    pytest.importorskip("sklearn")
    result = audit(_jobs(world))
    assert isinstance(result, Leakage)
    assert not result.label_leak, (result.label_auc_given_estimate, result.learned)
    assert result.curve_auc_max <= CURVE_AUC_LIMIT
    assert not result.length_leak, (result.length_errors, result.learned)
    assert result.learned is not None
    assert [k for k, _ in result.learned.length_error] == [1, 3]
    assert result.length_error_estimate <= result.length_error_raw_estimate
    aucs = dict(result.label_auc)
    assert {"eval_score", "proxy_reward", "step"} <= set(aucs)
    assert result.label_length_link > 0.6 and aucs["estimated_duration"] > 0.6
    assert 0.0 < result.early_turn_share < 1.0
    assert {n for n, _ in result.label_auc_given_estimate} == set(CURVE_OBSERVABLES)


def test_leak3_an_audit_under_the_judged_size_is_not_judged() -> None:
    """LEAK-3: an audit of fewer than JUDGED_JOBS jobs prints its figures with the verdict
    ``not judged`` (its raw comparisons kept); from JUDGED_JOBS on the verdict is theirs."""
    small = audit(_jobs("paper", seeds=1, n_jobs=300), learned=False)
    assert (small.jobs, small.judged) == (300, False)
    assert small.verdict == f"not judged (300 jobs, under {JUDGED_JOBS:,})"
    judged = attrs.evolve(  # every AUC at chance, the first checkpoint no better
        small,
        jobs=JUDGED_JOBS,
        label_auc=tuple((name, 0.5) for name, _ in small.label_auc),
        label_auc_given_estimate=tuple((n, 0.5) for n, _ in small.label_auc_given_estimate),
        length_error_first_checkpoint=small.length_error_estimate,
    )
    assert judged.judged and not judged.label_leak and not judged.length_leak
    assert judged.verdict == "no leak"
    planted = (("eval_score", 0.9), *judged.label_auc_given_estimate[1:])
    leaking = attrs.evolve(judged, label_auc_given_estimate=planted)
    assert leaking.label_leak and leaking.verdict == "LEAKS"
    assert attrs.evolve(leaking, jobs=JUDGED_JOBS - 1).verdict.startswith("not judged")


def _on_the_fraction_clock(job: Job, rng: np.random.Generator) -> Job:
    """``job`` redrawn with world v2's paper curves (CRV-1 to CRV-3 before issue 27): every
    quantity a function of ``t = step / last step``, so every run is the same curve
    stretched to its length (the rise ``g(t / P) / g(1 / P)``, the proxy linear in ``t / P``,
    the loss ``exp(-t / tau)`` with ``tau`` in [0.1, 1] of the run)."""
    steps = [obs.step for obs in job.observations]
    t = np.array(steps, dtype=np.float64) / steps[-1]
    q0, gain = rng.uniform(0.472, 0.516), rng.uniform(0.085, 0.228)
    peak, beta = rng.uniform(1.5, 4.0), rng.uniform(0.118, 0.175)
    quality = q0 + gain * gold_shape(t / peak) / gold_shape(np.array([1 / peak]))[0]
    scores = quality + 0.02 * gain * rng.standard_normal(len(t))
    proxy = rng.uniform(-1, 0) + gain * (0.38 / beta) * t / peak
    start = rng.uniform(0.8, 1.2)
    floor = start * rng.uniform(0.3, 0.6)
    loss = floor + (start - floor) * np.exp(-t / math.exp(rng.uniform(math.log(0.1), 0.0)))
    rlhf = job.spec.kind is JobKind.RLHF
    reports = [
        Observation(step, score, lo, p if rlhf else None)
        for step, score, lo, p in zip(
            steps, scores.tolist(), loss.tolist(), proxy.tolist(), strict=True
        )
    ]
    return Job(job.spec, attrs.evolve(job.truth, quality=quality), reports)


def test_leak3_leak4_flag_the_fraction_clock() -> None:
    """LEAK-3, LEAK-4: world v2, whose curves are on ``steps / steps[-1]``, gives the length
    away to the learned predictor over the first 3 checkpoints (the issue measured 38% / 24%
    better than the estimate); LEAK-2's simple predictors alone do not see it."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(5)
    jobs = [_on_the_fraction_clock(j, rng) for j in _jobs("paper")]
    result = audit(jobs)
    assert result.length_leak
    assert result.learned is not None
    estimate = dict(result.learned.length_error_estimate)
    learned = dict(result.learned.length_error)
    assert learned[3] < (1 - ERROR_MARGIN) * estimate[3]
    simple = attrs.evolve(result, learned=None)
    assert not simple.length_leak


def test_leak5_stratified_auc_counts_pairs_within_strata() -> None:
    """LEAK-5: a score that only tracks the stratum key separates the labels marginally but
    not within strata; one that tracks the label does both."""
    rng = np.random.default_rng(1)
    key = rng.random(4000)
    labels = (rng.random(4000) < key).tolist()
    assert mann_whitney_auc(key.tolist(), labels) > 0.7
    assert stratified_auc(key.tolist(), labels, key.tolist()) < 0.56
    assert stratified_auc([float(y) for y in labels], labels, key.tolist()) == 1.0


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
    result = audit(jobs, learned=False)
    assert result.length_leak
    assert result.length_error_first_checkpoint < 0.05
    errors = length_errors(jobs)
    assert errors["service x c"] < 0.05 < errors["log-linear(estimate)"]


def _label_in_score(jobs: list[Job], index: int) -> list[Job]:
    """``jobs`` with 1 added to the eval score of report ``index`` (0-based) of every hacking
    RLHF job."""
    out = []
    for job in jobs:
        if job.spec.kind is JobKind.RLHF and job.truth.hacking:
            reports = list(job.observations)
            reports[index] = attrs.evolve(reports[index], eval_score=reports[index].eval_score + 1)
            out.append(attrs.evolve(job, observations=tuple(reports)))
        else:
            out.append(job)
    return out


def test_leak3_flags_a_label_in_the_first_eval_score() -> None:
    """LEAK-3: a first (trained) eval score that carries the label is flagged; a generated
    job's first trained checkpoint is its second report, after its step-0 evaluation."""
    jobs = _jobs("paper", seeds=1)
    assert all(job.observations[0].step == 0 and first_trained(job) == 2 for job in jobs)
    leaky = _label_in_score(jobs, 1)
    aucs = label_aucs(leaky)
    assert aucs["eval_score"] == 1.0
    assert audit(leaky, learned=False).label_leak


def test_leak1_leak4_the_step_0_evaluation_is_seen_not_judged_alone() -> None:
    """LEAK-1, LEAK-4: the first checkpoint is the first after step 0, so a label in the
    step-0 eval score moves no LEAK-1 AUC; the learned joint classifier sees the step-0 values
    and flags it (the audit still looks at everything observable)."""
    pytest.importorskip("sklearn")
    jobs = _jobs("paper", seeds=2)
    leaky = _label_in_score(jobs, 0)
    assert label_aucs(leaky) == label_aucs(jobs)
    result = audit(leaky)
    assert result.learned is not None
    assert result.learned.label_auc_curves > 0.95
    assert result.label_leak
