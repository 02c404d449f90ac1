"""Workload generator (WRK-1 to WRK-6)."""

from __future__ import annotations

import numpy as np
import pytest

from evalstop.core.model import JobKind
from evalstop.sim.workload import (
    GPU_CHOICES,
    PLANNED_EVALS,
    WorkloadConfig,
    expected_gpu_seconds,
    generate,
)


def test_wrk1_same_seed_same_workload_other_seed_differs() -> None:
    """WRK-1: equal (config, seed) give equal workloads; another seed differs."""
    config = WorkloadConfig(n_jobs=50)
    assert generate(config, 3) == generate(config, 3)
    assert generate(config, 3) != generate(config, 4)


def test_wrk1_first_jobs_curves_do_not_depend_on_job_count() -> None:
    """WRK-1: job i's curves come from a stream keyed by i."""
    small = generate(WorkloadConfig(n_jobs=40), 11)
    large = generate(WorkloadConfig(n_jobs=60), 11)
    compared = 0
    for a, b in zip(small.jobs, large.jobs, strict=False):
        if a.spec.kind is b.spec.kind and a.truth.hacking == b.truth.hacking:
            np.testing.assert_array_equal(a.truth.quality, b.truth.quality)
            compared += 1
    assert compared >= 5, "too few comparable jobs: the check would be vacuous"


def test_wrk2_poisson_arrivals_match_the_rate() -> None:
    """WRK-2: mean gap is 1/rate; first arrival at 0; submit times non-decreasing."""
    workload = generate(WorkloadConfig(n_jobs=4000, arrival_rate=6.0), 1)
    submits = np.array([job.spec.submit_time for job in workload.jobs])
    assert submits[0] == 0
    assert np.all(np.diff(submits) >= 0)
    mean_gap = submits[-1] / (len(submits) - 1)
    assert abs(mean_gap - 600.0) / 600.0 < 0.06


def test_wrk2_load_sets_the_rate() -> None:
    """WRK-2: without a rate, rate * E[GPU-seconds] / GPUs equals the load."""
    config = WorkloadConfig(gpus=64, load=0.7)
    assert abs(config.jobs_per_second() * expected_gpu_seconds(config) / 64 - 0.7) < 1e-12


def test_wrk3_mix_and_hacking_share() -> None:
    """WRK-3: kind shares and the hacking share of RLHF jobs; only RLHF hacks."""
    workload = generate(WorkloadConfig(n_jobs=5000, hacking_share=0.3), 2)
    kinds = [job.spec.kind for job in workload.jobs]
    assert abs(kinds.count(JobKind.RLHF) / 5000 - 0.6) < 0.03
    assert abs(kinds.count(JobKind.DPO) / 5000 - 0.25) < 0.03
    rlhf = [job for job in workload.jobs if job.spec.kind is JobKind.RLHF]
    assert abs(sum(job.truth.hacking for job in rlhf) / len(rlhf) - 0.3) < 0.03
    assert not any(job.truth.hacking for job in workload.jobs if job.spec.kind is not JobKind.RLHF)
    for share, expected in ((0.0, 0), (1.0, len(rlhf))):
        other = generate(WorkloadConfig(n_jobs=5000, hacking_share=share), 2)
        assert sum(job.truth.hacking for job in other.jobs) == expected


def test_wrk4_sizes_follow_the_documented_laws() -> None:
    """WRK-4: Gavel durations, GPUs by kind, evaluations by kind."""
    workload = generate(WorkloadConfig(n_jobs=3000), 5)
    durations = np.array([job.truth.duration for job in workload.jobs])
    assert durations.min() >= int(60 * 10**1.5) - 1
    assert durations.max() <= 60 * 10**4 + 1
    long_share = float(np.mean(durations > 60 * 10**3))
    assert abs(long_share - 0.2) < 0.03
    for job in workload.jobs:
        assert job.spec.gpus in GPU_CHOICES[job.spec.kind][0]
        assert job.spec.planned_evals == PLANNED_EVALS[job.spec.kind]
    capped = generate(WorkloadConfig(n_jobs=200, gpus=4), 5)
    assert max(job.spec.gpus for job in capped.jobs) == 4


def test_wrk5_estimates_are_biased_and_noisy() -> None:
    """WRK-5: median estimate/true ratio 1.2, log-sd 0.5."""
    workload = generate(WorkloadConfig(n_jobs=5000), 9)
    ratio = np.array([job.spec.estimated_duration / job.truth.duration for job in workload.jobs])
    assert abs(np.median(ratio) - 1.2) < 0.05
    assert abs(np.log(ratio).std() - 0.5) < 0.03


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"gpus": 0}, "gpus"),
        ({"load": -1.0}, "load"),
        ({"arrival_rate": 0.0}, "arrival_rate"),
        ({"hacking_share": 1.5}, "hacking_share"),
        ({"eval_noise": -0.1}, "eval_noise"),
        ({"mix": {JobKind.RLHF: -1.0}}, "mix"),
        ({"mix": {JobKind.RLHF: 0.0}}, "mix"),
    ],
)
def test_wrk6_bad_configs_name_the_field(kwargs: dict[str, object], field: str) -> None:
    """WRK-6: a ValueError naming the field."""
    with pytest.raises(ValueError, match=field):
        WorkloadConfig(**kwargs)  # type: ignore[arg-type]


def test_wrk6_negative_seed_is_rejected() -> None:
    """WRK-6: seeds are non-negative."""
    with pytest.raises(ValueError, match="seed"):
        generate(WorkloadConfig(n_jobs=1), -1)
