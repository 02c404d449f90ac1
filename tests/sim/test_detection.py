"""Detection quality against hidden labels (DQ-1 to DQ-4)."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.detectors import DeclineDetector
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import fifo
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.sim.detection import detection_metrics, folded_outcomes
from evalstop.sim.metrics import JobOutcome, job_outcomes
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate

PEAKED = (0.1, 0.5, 0.3, 0.2, 0.1)  # 2nd decline at checkpoint 4: stopped
RISING = (0.1, 0.2, 0.3, 0.4, 0.5)
LATE = (0.1, 0.2, 0.3, 0.5, 0.4)  # one decline only: finishes
NOISY = (0.1, 0.3, 0.2, 0.15, 0.5)  # healthy truth, noisy declines: stopped


def run(jobs: list[Job]) -> dict[int, JobOutcome]:
    result = simulate(jobs, evalstop(fifo, DeclineDetector(2)), Cluster(gpus=8))
    return job_outcomes(result)


def test_dq1_dq2_confusion_counts_and_rates() -> None:
    """DQ-1, DQ-2: one of each cell gives precision = recall = FPR = F1 = 0.5."""
    jobs = [
        make_job(0, scores=PEAKED, hacking=True),
        make_job(1, scores=LATE, hacking=True, quality=(0.1, 0.2, 0.3, 0.5, 0.4)),
        make_job(2, scores=NOISY, hacking=False, quality=RISING),
        make_job(3, scores=RISING, hacking=False),
        make_job(4, scores=PEAKED, kind=JobKind.DPO),  # not RLHF: not counted, not watched
    ]
    outcomes = run(jobs)
    metrics = detection_metrics(outcomes.values(), {job.job_id: job for job in jobs})
    assert (metrics.tp, metrics.fn, metrics.fp, metrics.tn) == (1, 1, 1, 1)
    assert metrics.jobs == 4
    assert metrics.precision == metrics.recall == metrics.fpr == metrics.f1 == 0.5


def test_dq2_undefined_rates_are_nan() -> None:
    """DQ-2: no stops -> precision undefined; no healthy jobs -> FPR undefined."""
    jobs = [make_job(0, scores=RISING, hacking=True, quality=PEAKED)]
    metrics = detection_metrics(run(jobs).values(), {0: jobs[0]})
    assert math.isnan(metrics.precision)
    assert math.isnan(metrics.fpr)
    assert metrics.recall == 0.0
    assert metrics.f1 == 0.0


def test_dq3_delay_from_the_peak_checkpoint() -> None:
    """DQ-3: peak at checkpoint 2, stop at checkpoint 4: 2 evaluations, 20 s x 4 GPUs."""
    job = make_job(0, scores=PEAKED, hacking=True, gpus=4)
    metrics = detection_metrics(run([job]).values(), {0: job})
    assert metrics.delay_evals == 2
    assert metrics.delay_gpu_hours == pytest.approx(4 * 20 / 3600)


def test_rgt4_fold_job_matches_the_simulator_and_skips_a_last_point_fire() -> None:
    """RGT-4, NAD-10: fold_job stops where EvalStop stops the job and keeps what it keeps (the
    noise-aware level keep too); a fire at the last point is no stop."""
    from evalstop.core.noise_aware import NoiseAwareDetector
    from evalstop.sim.detection import fold_job, job_run_score, job_views, regret_metrics
    from evalstop.sim.workload import WorkloadConfig, generate

    workload = generate(WorkloadConfig(n_jobs=120, eval_noise=0.1), seed=3)
    jobs = {job.job_id: job for job in workload.jobs}
    for detector in (DeclineDetector(2), NoiseAwareDetector(), NoiseAwareDetector(keep="level")):
        outcomes = job_outcomes(simulate(workload.jobs, evalstop(fifo, detector), Cluster(64)))
        for job_id, outcome in outcomes.items():
            if outcome.kind is not JobKind.RLHF:
                continue  # EvalStop watches RLHF jobs only (EVS)
            stop, kept = fold_job(detector, jobs[job_id])
            assert fold_job(detector, jobs[job_id], job_views(jobs[job_id])) == (stop, kept)
            assert (stop is not None) == outcome.stopped
            if stop is not None:
                assert stop == outcome.evals_seen - 1 and kept == outcome.kept_index
        rlhf = [job for job in workload.jobs if job.spec.kind is JobKind.RLHF]
        folded = [job_run_score(job, *fold_job(detector, job)) for job in rlhf]
        summary = regret_metrics(outcomes.values(), jobs)
        assert summary.runs == len(folded) > 40
        assert summary.harmful == sum(r.stop_class.value == "harmful" for r in folded)
        for run in folded:  # RGT-5: gain and loss in the quality's units (a rate, scale 1)
            assert run.gain >= 0 and run.lost >= 0
            if run.gain > 0:
                assert run.regret == pytest.approx(run.lost / run.gain)
    last_only = make_job(1, scores=(0.1, 0.5, 0.4))  # k=1 fires at the last checkpoint only
    assert fold_job(DeclineDetector(1), last_only) == (None, 2)


def test_rgt4_fold_job_fast_paths_equal_the_generic_fold() -> None:
    """RGT-4, DET-10, NAD-11: fold_job's fast paths (the decline rule by observe_decline, the
    noise-aware rule in place, Never without a fold) give the generic fold's stop and kept
    checkpoint on every job of two generated workloads, for several parameters of each."""
    import attrs

    from evalstop.core.detectors import DeclineDetector, Detector, Never
    from evalstop.core.noise_aware import NoiseAwareDetector
    from evalstop.sim.detection import fold_job
    from evalstop.sim.workload import WorkloadConfig, generate

    @attrs.frozen
    class SlowDecline(DeclineDetector):
        """The decline rule under another type: fold_job's generic path."""

    @attrs.frozen
    class SlowNoise(NoiseAwareDetector):
        """The noise-aware rule under another type: fold_job's generic path."""

    @attrs.frozen
    class SlowNever(Never):
        """Never under another type: fold_job's generic path."""

    pairs: list[tuple[Detector[Any], Detector[Any]]] = [
        (DeclineDetector(k, delta), SlowDecline(k, delta))
        for k in (1, 2, 4)
        for delta in (0.0, 0.01)
    ]
    for keep in ("best", "level"):
        for z in (1.0, 2.25):
            noise_aware = NoiseAwareDetector(z=z, keep=keep)
            pairs.append((noise_aware, SlowNoise(**attrs.asdict(noise_aware))))
    pairs.append((Never(), SlowNever()))
    jobs = [
        job
        for world, noise in (("paper", 0.12), ("calibrated", None))
        for job in generate(WorkloadConfig(n_jobs=120, world=world, eval_noise=noise), 5).jobs
    ]
    stopped = 0
    for fast, slow in pairs:
        for job in jobs:
            answer = fold_job(fast, job)
            assert answer == fold_job(slow, job), (fast, job.job_id)
            stopped += answer[0] is not None
    assert stopped > 100  # the rules do stop jobs here, so the comparison means something


def observed_fold(detector: Any, job: Job) -> tuple[int | None, int | None]:
    """The fold of RGT-4 written with observe and a watch per report (fold_job's definition)."""
    from evalstop.core.detectors import observe, start_watch
    from evalstop.sim.detection import job_views

    watch, views = start_watch(detector), job_views(job)
    last = len(views) - 1
    for index, view in enumerate(views):
        watch = observe(detector, watch, view)
        if watch.fired_step is not None and index < last:
            steps = [obs.step for obs in job.observations]
            return index, None if watch.best_step is None else steps.index(watch.best_step)
    return None, last


def test_rgt4_fold_job_equals_the_observed_fold() -> None:
    """RGT-4: fold_job's generic path (its watch in local variables) stops and keeps what a
    fold by observe does, for every registered detector (the kept hook of divergence and
    learned included) on jobs of both worlds, with NaN reports among them."""
    from evalstop.core.registry import DETECTOR_NAMES, make_detector
    from evalstop.sim.detection import fold_job

    jobs = [
        job
        for world, noise in (("paper", 0.12), ("calibrated", None))
        for job in generate(WorkloadConfig(n_jobs=150, world=world, eval_noise=noise), 8).jobs
        if job.spec.kind is JobKind.RLHF
    ]
    gappy = [
        attrs.evolve(job, observations=tuple(
            attrs.evolve(obs, eval_score=math.nan) if i % 4 == 1 else obs
            for i, obs in enumerate(job.observations)
        ))
        for job in jobs[:60]
    ]  # fmt: skip
    stopped = 0
    for name in DETECTOR_NAMES:
        detector = make_detector(name)
        for job in [*jobs, *gappy]:
            answer = fold_job(detector, job)
            assert answer == observed_fold(detector, job), (name, job.job_id)
            stopped += answer[0] is not None
    assert stopped > 300


@settings(max_examples=20, deadline=None)
@given(
    detector=st.sampled_from(["evalstop", "noise-aware", "stopat", "lossplateau", "ewma"]),
    base=st.sampled_from(["srtf-est", "fifo", "las"]),
    k=st.integers(1, 3),
    world=st.sampled_from(["paper", "calibrated"]),
    evals=st.sampled_from([None, 5, 20, 40]),
    noise=st.sampled_from([None, 0.0, 0.05, 0.3]),
    seed=st.integers(0, 10_000),
)
def test_dq4_folded_outcomes_are_the_simulated_ones(
    detector: str, base: str, k: int, world: str, evals: int | None, noise: float | None, seed: int
) -> None:
    """DQ-4, RGT-4: the folded outcome of every RLHF job (stopped, evaluations seen, service,
    kept checkpoint, quality retained) is its outcome in a simulation of EvalStop with the
    detector over any base, on a cluster small enough to queue and preempt; detection_metrics
    reads both the same."""
    config = WorkloadConfig(n_jobs=60, gpus=16, world=world, evals_per_run=evals, eval_noise=noise)
    workload = generate(config, seed)
    policy = make_policy(f"{detector}+{base}", k=k)
    simulated = job_outcomes(simulate(workload, policy, Cluster(gpus=16)))
    folded = folded_outcomes(policy.detectors[0], workload.jobs)
    rlhf = [job.job_id for job in workload.jobs if job.spec.kind is JobKind.RLHF]
    assert [o.job_id for o in folded] == rlhf
    fields = (
        "kind", "gpus", "hacking", "stopped", "service", "evals_seen", "kept_index",
        "quality_retained",
    )  # fmt: skip
    for outcome in folded:
        twin = simulated[outcome.job_id]
        assert repr([getattr(outcome, f) for f in fields]) == repr(
            [getattr(twin, f) for f in fields]
        )
    jobs = {job.job_id: job for job in workload.jobs}
    by_end = [attrs.astuple(detection_metrics(simulated.values(), jobs))]
    by_fold = [attrs.astuple(detection_metrics(folded, jobs))]
    np.testing.assert_allclose(by_fold, by_end, rtol=1e-12)
