"""Simulation API (SIM-1, SIM-2) and named systems (SYS-1)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import pytest

from evalstop.core.detectors import DeclineDetector, LossPlateau, Never, StopAtProgress
from evalstop.core.policies import BASE_POLICIES
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import EvalStop
from evalstop.engine import JobStatus
from evalstop.engine.log import LogKind
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
