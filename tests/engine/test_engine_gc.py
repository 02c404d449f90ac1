"""The fast engines pause the cyclic garbage collector while only the library runs (ENG-19)."""

from __future__ import annotations

import gc

import attrs
import pytest

from builders import make_job
from evalstop.core.detectors import DeclineDetector, LossPlateau
from evalstop.core.fairshare import FairShare
from evalstop.core.model import Job
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.policies import BASE_POLICIES, PriorityPolicy, fifo, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.engine.collector import engine_only
from evalstop.engine.fast import FastSimulator
from evalstop.engine.record import JobRecord
from evalstop.sim.workload import WorkloadConfig, generate

OWN = tuple(BASE_POLICIES)  # the six built-in bases, by name
SYSTEMS = (*OWN, *(f"evalstop+{base}" for base in OWN), "noise-aware+srtf-est", "noise-aware+fifo")


class WatchingGeneric(FastSimulator):
    """Notes whether the collector was enabled at each start a decision of the policy made."""

    seen: list[bool]

    def _start(self, record: JobRecord) -> None:
        self.seen.append(gc.isenabled())
        super()._start(record)


class Failing(FastSimulator):
    def _start(self, record: JobRecord) -> None:
        raise RuntimeError("boom")


def watched(policy: Policy, check: bool = False) -> list[bool]:
    sim = WatchingGeneric(policy, 4, check=check)
    sim.seen = []
    for job_id in range(3):
        sim.submit(make_job(job_id, submit=job_id))
    sim.run()
    return sim.seen


def test_eng19_which_systems_run_only_library_code() -> None:
    """ENG-19: the five built-in priority bases and fair share themselves, alone or wrapped
    once, with no detector or one built-in rule that folds in place (the decline rule, the
    noise-aware rule, DET-12); not another detector, a subclass of a built-in one, a look-alike
    base or a second wrapper (a second detector)."""
    for base in BASE_POLICIES.values():
        assert engine_only(base)
        assert engine_only(evalstop(base))
        assert engine_only(evalstop(base, DeclineDetector(3)))
        assert engine_only(evalstop(base, NoiseAwareDetector()))
        assert not engine_only(evalstop(base, LossPlateau()))
        assert not engine_only(evalstop(base, Subclass()))
        assert not engine_only(evalstop(evalstop(base), DeclineDetector(3)))
    assert not engine_only(PriorityPolicy("mine", fifo.key, preemptive=False))
    assert not engine_only(FairShare(name="mine"))
    assert engine_only(make_policy("noise-aware+srtf-est"))
    assert not engine_only(make_policy("lossplateau+srtf-est"))


@attrs.frozen(slots=True)
class Subclass(NoiseAwareDetector):
    """A detector of the built-in rule's type by inheritance only: user code (ENG-19)."""


@pytest.mark.parametrize(
    "system", ["fifo", "evalstop+sjf-est", "srtf-est", "evalstop+las", "evalstop+fair-share"]
)
def test_eng19_the_collector_is_paused_during_a_run_and_restored(system: str) -> None:
    """ENG-19: for such a system the collector is off while run() handles events, on again
    after it; also with check=True (run() one event at a time)."""
    assert gc.isenabled()
    policy = make_policy(system)
    assert watched(policy) == [False] * len(watched(policy))
    assert watched(policy)
    assert gc.isenabled()
    assert set(watched(policy, check=True)) == {False}
    assert gc.isenabled()


def test_eng19_other_code_raises_and_steps_leave_the_collector_as_it_was() -> None:
    """ENG-19: a system whose detector is other code runs with the collector on; a run that
    raises restores it; one-event steps do not pause it; a collector the caller turned off
    stays off."""
    assert set(watched(evalstop(fifo, LossPlateau()))) == {True}
    assert set(watched(evalstop(srtf_est, Subclass()))) == {True}
    assert set(watched(evalstop(srtf_est, NoiseAwareDetector()))) == {False}
    sim = Failing(srtf_est, 4)
    sim.submit(make_job(1))
    with pytest.raises(RuntimeError, match="boom"):
        sim.run()
    assert gc.isenabled()
    stepped = WatchingGeneric(srtf_est, 4)
    stepped.seen = []
    stepped.submit(make_job(1))
    assert stepped.advance()
    assert stepped.seen == [True]
    gc.disable()
    try:
        assert set(watched(srtf_est)) == {False}
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("tenants", [1, 3])
@pytest.mark.parametrize("system", SYSTEMS)
def test_eng19_a_run_leaves_no_cyclic_garbage(system: str, tenants: int) -> None:
    """ENG-19: what the paused collector would have found after a whole run of each such
    system (its policy, its state and the engine's objects): nothing; with one tenant and
    with three (fair share's two kinds of state, FSH-4)."""
    policy = make_policy(system)
    assert engine_only(policy)
    work = generate(WorkloadConfig(n_jobs=150, gpus=12), seed=3)
    jobs = [
        Job(attrs.evolve(job.spec, tenant=f"t{job.job_id % tenants}"), job.truth, job.observations)
        for job in work.jobs
    ]
    gc.collect()
    gc.disable()
    try:
        sim = FastSimulator(policy, 12)
        for job in sorted(jobs, key=lambda j: (j.spec.submit_time, j.job_id)):
            sim.submit(job)
        sim.run()
        assert sim.events_handled > len(work.jobs)
        del sim
        assert gc.collect() == 0
    finally:
        gc.enable()
