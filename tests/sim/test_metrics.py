"""System metrics on tiny hand-built workloads whose answers are worked out by hand (MET)."""

from __future__ import annotations

import gc
import math
import random
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.boundary import ClusterView
from evalstop.core.decision import Decision, StopOrder
from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import fifo, srtf_est
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.engine.log import EventLog, LogKind, LogRecord
from evalstop.sim import metrics
from evalstop.sim.metrics import JobOutcome, jct_stats, job_outcomes, kept_at, system_metrics
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate, generate_noise_sweep

# Job A: 1 GPU at t=0, checkpoints every 10 s; true quality peaks at its 2nd checkpoint.
HACKING_SCORES = (0.1, 0.5, 0.3, 0.2, 0.1)


def two_jobs() -> list[Job]:
    a = make_job(0, submit=0, scores=HACKING_SCORES, hacking=True)
    b = make_job(1, submit=5, scores=(0.2, 0.4), kind=JobKind.DPO)
    return [a, b]


def test_met1_to_met6_fifo_by_hand() -> None:
    """MET-1, MET-2, MET-3, MET-4, MET-5, MET-6: on FIFO, 1 GPU.

    A runs 0-50, B waits 5-50 then runs 50-70.
    """
    result = simulate(two_jobs(), fifo, Cluster(gpus=1))
    outcomes = job_outcomes(result)
    a, b = outcomes[0], outcomes[1]
    assert (a.jct, b.jct) == (50, 65)  # MET-1
    assert (a.queueing_delay, b.queueing_delay) == (0, 45)  # MET-2
    metrics = system_metrics(result)
    assert metrics.jct.mean == 57.5
    assert metrics.jct.median == 57.5
    assert metrics.jct.p95 == pytest.approx(50 + 0.95 * 15)
    assert metrics.jct_by_kind["rlhf"].mean == 50
    assert metrics.queueing_delay_mean == 22.5
    assert metrics.makespan == 70  # MET-3
    assert metrics.utilization == 1.0  # MET-4: 50 + 20 GPU-s over 1 GPU x 70 s
    assert a.wasted_gpu_time == 30  # MET-5: progress 50 s, peak checkpoint at 20 s
    assert b.wasted_gpu_time == 0
    assert a.kept_index == 4
    assert a.quality_retained == pytest.approx(0.1 / 0.5)  # MET-6: last checkpoint kept
    assert b.quality_retained == 1.0


def test_met5_met6_evalstop_saves_the_best_checkpoint() -> None:
    """MET-5, MET-6: with EvalStop(k=2): A stops at t=40 (2nd decline), saving step 20."""
    result = simulate(two_jobs(), evalstop(fifo, DeclineDetector(2)), Cluster(gpus=1))
    outcomes = job_outcomes(result)
    a, b = outcomes[0], outcomes[1]
    assert a.stopped and a.end == 40 and a.jct == 40
    assert a.wasted_gpu_time == 20
    assert a.kept_index == 1
    assert a.quality_retained == 1.0
    assert (b.first_start, b.end) == (40, 60)
    metrics = system_metrics(result)
    assert metrics.stopped == 1
    assert metrics.wasted_gpu_time == 20
    assert metrics.quality_retained_rlhf == 1.0


def test_met8_rlhf_gpu_time_counts_rlhf_jobs_only() -> None:
    """MET-8: all GPU-seconds held by RLHF jobs: A's 50 s on FIFO (B is DPO), 40 s when
    EvalStop stops it."""
    assert system_metrics(simulate(two_jobs(), fifo, Cluster(gpus=1))).rlhf_gpu_time == 50
    stopped = simulate(two_jobs(), evalstop(fifo, DeclineDetector(2)), Cluster(gpus=1))
    assert system_metrics(stopped).rlhf_gpu_time == 40


def test_met7_service_discounts_the_preemption_overhead() -> None:
    """MET-7, ENG-11: A (100 s) is preempted at 10 by B (20 s); A resumes at 30 (+30 s)."""
    a = make_job(0, submit=0, scores=(0.1, 0.2, 0.3, 0.4), duration=100)
    b = make_job(1, submit=10, scores=(0.1, 0.2), duration=20)
    result = simulate([a, b], srtf_est, Cluster(gpus=1, preemption_overhead=30))
    outcomes = job_outcomes(result)
    assert outcomes[1].end == 30
    assert outcomes[0].end == 150
    assert outcomes[0].service == 100
    assert outcomes[0].gpu_time == 10 + 120
    assert system_metrics(result).utilization == pytest.approx((130 + 20) / 150)


def test_jct_stats_of_nothing_is_nan() -> None:
    """MET-1: summaries of an empty set are undefined, not zero."""
    assert math.isnan(jct_stats([]).mean)


@settings(max_examples=10)
@given(st.integers(min_value=0, max_value=1000), st.sampled_from(["fifo", "srtf-est", "las"]))
def test_met_bounds_on_random_workloads(seed: int, name: str) -> None:
    """MET-1, MET-4, MET-7: JCT >= service, utilisation in [0, 1], progress = true duration."""
    from evalstop.core.registry import make_policy

    workload = generate(WorkloadConfig(n_jobs=60, gpus=16), seed)
    result = simulate(workload, make_policy(f"evalstop+{name}"), Cluster(gpus=16))
    outcomes = job_outcomes(result)
    assert len(outcomes) == 60
    jobs = {job.job_id: job for job in workload.jobs}
    for outcome in outcomes.values():
        assert outcome.jct >= outcome.service
        assert outcome.gpu_time >= outcome.gpus * outcome.service
        if not outcome.stopped:
            assert outcome.service == jobs[outcome.job_id].truth.duration
    metrics = system_metrics(result)
    assert 0.0 <= metrics.utilization <= 1.0


@attrs.frozen
class StopOnArrival:
    """Stops every job as soon as it is queued (a policy for edge cases)."""

    @property
    def name(self) -> str:
        return "stop-on-arrival"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: ClusterView) -> Decision:
        return Decision(stop=tuple(StopOrder(job.job_id, "test") for job in view.queued))


def test_met6_a_job_stopped_before_any_checkpoint_retains_nothing() -> None:
    """MET-6: no checkpoint, nothing kept: retained 0, no service, no waste, JCT 0."""
    result = simulate([make_job(0, submit=7)], StopOnArrival(), Cluster(gpus=1))
    outcome = job_outcomes(result)[0]
    assert outcome.stopped and outcome.kept_index == -1
    assert outcome.quality_retained == 0.0
    assert (outcome.service, outcome.wasted_gpu_time, outcome.jct) == (0, 0, 0)


def test_met4_stopping_a_queued_job_logs_no_gpus_held() -> None:
    """MET-4, ENG-8: a queued job holds no GPUs, so its STOP record says 0 and adds no GPU-time."""
    result = simulate([make_job(0, submit=3, gpus=2)], StopOnArrival(), Cluster(gpus=2))
    stop = [record for record in result.log if record.reason]
    assert [(record.job_id, record.gpus) for record in stop] == [(0, 0)]
    assert job_outcomes(result)[0].gpu_time == 0


def _same(a: dict[int, JobOutcome], b: dict[int, JobOutcome]) -> bool:
    """Equal outcome maps, NaN equal to NaN (a job with a non-positive peak retains NaN)."""
    return a.keys() == b.keys() and all(repr(a[key]) == repr(b[key]) for key in a)


@settings(max_examples=12, deadline=None)
@given(
    system=st.sampled_from(
        ["stopat-0.65+srtf-est", "lossplateau+srtf-est", "stopat-0.3+fifo", "lossplateau+las"]
    ),
    world=st.sampled_from(["paper", "calibrated"]),
    seed=st.integers(0, 10_000),
    noises=st.lists(st.sampled_from([0.0, 0.01, 0.05, 0.12, 0.5]), min_size=2, max_size=3),
)
def test_met9_kept_at_another_sigma_is_the_simulation_there(
    system: str, world: str, seed: int, noises: list[float]
) -> None:
    """MET-9: for a system whose decisions read no eval score, the outcomes of its run at one
    sigma re-kept on the workload at another equal those of a simulation there."""
    configs = [WorkloadConfig(n_jobs=60, gpus=16, world=world, eval_noise=n) for n in noises]
    sweep = generate_noise_sweep(configs, seed)
    cluster = Cluster(gpus=16)
    first = job_outcomes(simulate(sweep[0], make_policy(system), cluster))
    for workload in sweep[1:]:
        jobs = {job.job_id: job for job in workload.jobs}
        simulated = job_outcomes(simulate(workload, make_policy(system), cluster))
        assert _same(kept_at(first.values(), jobs), simulated)


def test_met9_a_stopped_job_keeps_its_best_report_at_the_new_sigma() -> None:
    """MET-9: with the noise changed, some stopped jobs keep another checkpoint (so the check
    above is not vacuous) and the kept report is the best valid one up to the stop."""
    configs = [WorkloadConfig(n_jobs=120, gpus=16, eval_noise=n) for n in (0.01, 0.5)]
    low, high = generate_noise_sweep(configs, 4)
    first = job_outcomes(simulate(low, make_policy("stopat-0.65+srtf-est"), Cluster(gpus=16)))
    jobs = {job.job_id: job for job in high.jobs}
    moved = 0
    for outcome in kept_at(first.values(), jobs).values():
        if not outcome.stopped:
            assert outcome == first[outcome.job_id]
            continue
        scores = [obs.eval_score for obs in jobs[outcome.job_id].observations]
        seen = scores[: outcome.evals_seen]
        assert outcome.kept_index == seen.index(max(seen))
        moved += outcome.kept_index != first[outcome.job_id].kept_index
    assert moved > 0


def _outcomes_record_by_record(result: Any) -> dict[int, JobOutcome]:
    """The outcomes read from every record of the log in order (the reference of the test
    below)."""
    jobs = {job.job_id: job for job in result.jobs}
    held: dict[int, int] = {}
    gpu_time: dict[int, int] = {}
    first: dict[int, int] = {}
    evals: dict[int, int] = {}
    progress: dict[int, int] = {}
    preempted: set[int] = set()
    overhead = result.cluster.preemption_overhead
    out: dict[int, JobOutcome] = {}
    for time, kind, job_id, gpus, index, step, _, reason in result.log:
        if kind is LogKind.CHECKPOINT:
            evals[job_id] = index
        elif kind is LogKind.START:
            held[job_id] = time
            first.setdefault(job_id, time)
        elif kind is not LogKind.ARRIVE:
            if job_id in held:
                start = held.pop(job_id)
                gpu_time[job_id] = gpu_time.get(job_id, 0) + gpus * (time - start)
                resumed = start + (overhead if job_id in preempted else 0)
                progress[job_id] = progress.get(job_id, 0) + max(0, time - resumed)
            if kind is LogKind.PREEMPT:
                preempted.add(job_id)
                continue
            job = jobs[job_id]
            done, service = evals.get(job_id, 0), progress.get(job_id, 0)
            stopped = kind is LogKind.STOP
            steps = [obs.step for obs in job.observations]
            kept = steps.index(step) if stopped and step is not None else done - 1
            quality = job.truth.quality
            peak = int(quality.argmax())
            best = float(quality[peak])
            retained = 0.0 if kept < 0 else (float(quality[kept]) / best if best > 0 else math.nan)
            began = first.get(job_id, time)
            spec = job.spec
            out[job_id] = JobOutcome(
                job_id, spec.kind, spec.gpus, job.truth.hacking, spec.submit_time, began, time,
                stopped, time - spec.submit_time, began - spec.submit_time, service,
                gpu_time.get(job_id, 0),
                spec.gpus * max(0, service - job.checkpoint_service(peak + 1)),
                kept, retained, reason, done,
            )  # fmt: skip
    return out


def _odd(record: LogRecord) -> LogRecord:
    """``record`` as one the log keeps whole (ENG-16), its meaning to the metrics unchanged."""
    if record.kind in (LogKind.CHECKPOINT, LogKind.FINISH):
        return record._replace(score=np.float64(record.score))  # a float subclass
    if record.kind is LogKind.STOP:
        return record
    return record._replace(step=0)  # a field the kind does not carry


@settings(max_examples=15, deadline=None)
@given(
    system=st.sampled_from(["evalstop+srtf-est", "evalstop+las", "stopat-0.5+fifo", "srtf-est"]),
    seed=st.integers(0, 10_000),
    share=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    pick=st.integers(0, 2**32),
)
def test_met10_outcomes_from_the_columns_equal_reading_every_record(
    system: str, seed: int, share: float, pick: int
) -> None:
    """MET-10, ENG-21: `job_outcomes` read through the log's columns equals reading every
    record in order, with a share of the records (checkpoints, a job's last among them) kept
    whole beside the columns."""
    workload = generate(WorkloadConfig(n_jobs=50, gpus=16), seed)
    result = simulate(workload, make_policy(system), Cluster(gpus=16))
    rng = random.Random(pick)
    records = [_odd(r) if rng.random() < share else r for r in result.log]
    odd = attrs.evolve(result, log=EventLog.of(records))
    assert share == 0.0 or odd.log.columns().odd
    reference = _outcomes_record_by_record(result)
    assert _same(job_outcomes(result), reference)
    assert _same(job_outcomes(odd), reference)


def test_met11_outcomes_are_read_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MET-11: the collector is off while each job's outcome is read, on again after, also
    when reading raises; a read leaves nothing for the collector to collect."""
    work = generate(WorkloadConfig(n_jobs=120, gpus=12), seed=8)
    result = simulate(work, make_policy("evalstop+srtf-est"), Cluster(gpus=12))
    expected = job_outcomes(result)
    seen: list[bool] = []
    original = metrics._kept_index

    def spied(*args: Any) -> int:
        seen.append(gc.isenabled())
        return original(*args)

    gc.enable()
    monkeypatch.setattr(metrics, "_kept_index", spied)
    assert job_outcomes(result) == expected
    assert seen and set(seen) == {False}
    assert gc.isenabled()

    def failing(*args: Any) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(metrics, "_kept_index", failing)
    with pytest.raises(RuntimeError, match="boom"):
        job_outcomes(result)
    assert gc.isenabled()
    monkeypatch.undo()
    gc.collect()
    gc.disable()
    try:
        outcomes = job_outcomes(result)
        assert outcomes == expected
        del outcomes
        assert gc.collect() == 0
    finally:
        gc.enable()
