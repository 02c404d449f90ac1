"""Simulation API (SIM-1, SIM-2, SIM-3) and named systems (SYS-1)."""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor
from typing import NoReturn

import pytest

from builders import make_job
from evalstop.core.detectors import DeclineDetector, LossPlateau, Never, StopAtProgress
from evalstop.core.policies import BASE_POLICIES
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import EvalStop
from evalstop.engine import JobStatus
from evalstop.engine.errors import EngineError
from evalstop.engine.log import LogKind
from evalstop.sim import run as run_module
from evalstop.sim.run import Cluster, Result, simulate
from evalstop.sim.workload import WorkloadConfig, generate

CONFIG = WorkloadConfig(n_jobs=120, gpus=16)


def _run(seed: int) -> Result:
    return simulate(generate(CONFIG, seed), make_policy("evalstop+srtf-est"), Cluster(gpus=16))


def test_sim1_equal_inputs_equal_results_also_across_processes() -> None:
    """SIM-1: deterministic, no global state: the same in this process and in two others."""
    here = _run(4)
    assert here == _run(4)
    with ProcessPoolExecutor(max_workers=2) as pool:
        there = list(pool.map(_run, [4, 4]))
    assert there[0].log == here.log and there[1].log == here.log
    assert _run(5).log != here.log


def test_sim2_every_job_ends_and_the_log_says_how() -> None:
    """SIM-2: every job has exactly one FINISH or STOP record; checked engine invariants."""
    workload = generate(CONFIG, 8)
    result = simulate(workload, make_policy("evalstop+las"), Cluster(gpus=16), check=True)
    ends = [r.job_id for r in result.log if r.kind in (LogKind.FINISH, LogKind.STOP)]
    assert sorted(ends) == [job.job_id for job in workload.jobs]
    assert result.events >= len(workload.jobs)
    assert JobStatus.FINISHED.value == "finished"


@pytest.mark.parametrize("base", sorted(BASE_POLICIES))
def test_sys1_names_build_the_documented_systems(base: str) -> None:
    """SYS-1: base alone, or detector+base."""
    assert make_policy(base) is BASE_POLICIES[base]
    cases = {
        "evalstop": DeclineDetector(3),
        "stopat-0.65": StopAtProgress(0.65),
        "lossplateau": LossPlateau(),
        "never": Never(),
    }
    for prefix, detector in cases.items():
        policy = make_policy(f"{prefix}+{base}", k=3)
        assert isinstance(policy, EvalStop)
        assert policy.detector == detector
        assert policy.base is BASE_POLICIES[base]


@pytest.mark.parametrize("name", ["nope", "evalstop+nope", "magic+fifo", "stopat-x+fifo"])
def test_sys1_unknown_names_raise_with_choices(name: str) -> None:
    """SYS-1: ValueError naming the problem."""
    with pytest.raises(ValueError, match=r"unknown|bad"):
        make_policy(name)


def test_sim3_the_order_jobs_come_in_does_not_change_the_result() -> None:
    """SIM-3: shuffled, reversed or in order (ties in submit time included), the same log:
    jobs are submitted by (submit time, job id)."""
    tied = [make_job(i, submit=10 * (i // 3), gpus=1 + i % 3) for i in range(30)]
    workload = generate(CONFIG, 2)
    for jobs, gpus in ((tied, 4), (list(workload.jobs), 16)):
        shuffled = list(jobs)
        random.Random(7).shuffle(shuffled)
        for system in ("fifo", "evalstop+srtf-est"):
            expected = simulate(jobs, make_policy(system), Cluster(gpus=gpus))
            for given in (shuffled, jobs[::-1]):
                result = simulate(given, make_policy(system), Cluster(gpus=gpus))
                assert result.log == expected.log and result.events == expected.events


def test_sim3_jobs_in_order_are_not_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    """SIM-3: jobs already in (submit time, job id) order are submitted in one pass."""

    def no_sort(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("sorted jobs that were in order")

    workload = generate(CONFIG, 3)
    expected = simulate(workload, make_policy("fifo"), Cluster(gpus=16))
    monkeypatch.setattr(run_module, "sorted", no_sort, raising=False)
    assert simulate(workload, make_policy("fifo"), Cluster(gpus=16)).log == expected.log
    with pytest.raises(AssertionError, match="in order"):
        simulate(workload.jobs[::-1], make_policy("fifo"), Cluster(gpus=16))


def test_sim3_a_submit_error_is_the_one_the_sorted_order_meets_first() -> None:
    """SIM-3: of two jobs too large for the cluster, given latest first, the error names the
    one that arrives first; given in order, the first one given."""
    late, early = make_job(1, submit=50, gpus=9), make_job(2, submit=0, gpus=9)
    with pytest.raises(EngineError, match="job 2 needs 9 GPUs"):
        simulate([late, early], make_policy("fifo"), Cluster(gpus=8))
    with pytest.raises(EngineError, match="job 1 needs 9 GPUs"):
        simulate([make_job(1, submit=0, gpus=9), late], make_policy("fifo"), Cluster(gpus=8))
    with pytest.raises(EngineError, match="job 1 submitted twice"):
        simulate([make_job(1, submit=0), late], make_policy("fifo"), Cluster(gpus=8))
