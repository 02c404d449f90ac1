"""ENG-20: with check=True the fast engine checks a policy's own state against the policy."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from builders import Stateless
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.policies import srtf_est
from evalstop.core.wrapper import evalstop
from evalstop.engine.errors import EngineError
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate


@attrs.frozen
class Widest:
    """A user's policy: start the queued jobs with the most GPUs first (first fit)."""

    name: str = "widest"
    detectors: tuple[Detector[Any], ...] = ()
    wrong: bool = False  # the state skips every job after one that does not fit

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return cause is not EventKind.CHECKPOINT

    def __call__(self, view: ClusterView) -> Decision:
        free, start = view.free_gpus, []
        for job in sorted(view.queued, key=lambda j: (-j.gpus, j.submit_time, j.job_id)):
            if job.gpus <= free:
                start.append(job.job_id)
                free -= job.gpus
        return Decision(start=tuple(start))

    def start_run(self, total_gpus: int) -> WidestState:
        return WidestState(self.wrong)


class WidestState:
    """The queued jobs in the policy's order, a dict kept sorted at each decision (small)."""

    def __init__(self, wrong: bool) -> None:
        self._queued: dict[int, tuple[int, int, int]] = {}
        self._wrong = wrong

    @property
    def checkpoint_views(self) -> bool:
        return False

    def queued(self, job: JobView) -> None:
        self._queued[job.job_id] = (-job.gpus, job.submit_time, job.job_id)

    def started(self, job: JobView) -> None:
        self._queued.pop(job.job_id, None)

    def reported(self, job: JobView) -> None:
        pass

    def ended(self, job_id: int) -> None:
        self._queued.pop(job_id, None)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        start = []
        for minus_gpus, _, job_id in sorted(self._queued.values()):
            if -minus_gpus <= free_gpus:
                start.append(job_id)
                free_gpus += minus_gpus
            elif self._wrong:
                break  # wrong: a narrower job after it may still fit
        return Decision(start=tuple(start))


WORKLOAD = generate(WorkloadConfig(n_jobs=150, gpus=16, load=1.3), seed=3)


@pytest.mark.parametrize("wrap", [False, True])
def test_eng20_a_right_state_passes_and_matches_its_plain_form(wrap: bool) -> None:
    """ENG-20: a user-written incremental policy (alone and wrapped) runs checked at every
    decision, and its log equals the one of the same policy without its state."""
    policy: Any = evalstop(Widest()) if wrap else Widest()
    plain = evalstop(Stateless(Widest())) if wrap else Stateless(Widest())
    checked = simulate(WORKLOAD, policy, Cluster(gpus=16), check=True)
    assert checked.log == simulate(WORKLOAD, plain, Cluster(gpus=16)).log


def test_eng20_a_wrong_state_is_caught_at_its_first_wrong_decision() -> None:
    """ENG-20: a state that stops at the first job that does not fit decides otherwise than
    its policy: the checked run raises, naming the policy, the time and both decisions; the
    unchecked run does not look."""
    with pytest.raises(EngineError, match=r"widest: at t=\d+ its PolicyState decided .* the"):
        simulate(WORKLOAD, Widest(wrong=True), Cluster(gpus=16), check=True)
    simulate(WORKLOAD, Widest(wrong=True), Cluster(gpus=16))


def test_eng20_built_in_states_pass_the_check() -> None:
    """ENG-20, POL-8: srtf-est's own state agrees with srtf-est at every decision."""
    simulate(WORKLOAD, evalstop(srtf_est), Cluster(gpus=16), check=True)
