"""When the engine consults the policy (ENG-13), and what a policy must offer (ENG-14)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.boundary import ClusterView, EventKind
from evalstop.core.decision import Decision
from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.policies import PriorityPolicy, fifo, las, sjf_est
from evalstop.core.policy import Policy
from evalstop.core.wrapper import evalstop
from evalstop.engine import Simulator
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate


@attrs.frozen
class AlwaysAsk:
    """A base policy without needs_decision: the engine must consult it at every event."""

    inner: PriorityPolicy
    calls: list[EventKind | None] = attrs.field(factory=list, eq=False)

    @property
    def name(self) -> str:
        return f"always({self.inner.name})"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: ClusterView) -> Decision:
        self.calls.append(view.cause)
        return self.inner(view)


def test_eng13_policy_without_the_method_is_consulted_at_every_event() -> None:
    """ENG-13: one call per non-stale event, and the view says what caused it."""
    jobs = [make_job(0, scores=(0.1, 0.2, 0.3)), make_job(1, submit=5, scores=(0.1, 0.2))]
    policy = AlwaysAsk(fifo)
    result = simulate(jobs, policy, Cluster(gpus=1))
    assert len(policy.calls) == result.events == 2 + 3 + 2
    assert policy.calls.count(EventKind.ARRIVAL) == 2
    assert policy.calls.count(EventKind.COMPLETION) == 2
    assert policy.calls.count(EventKind.CHECKPOINT) == 3


def test_eng13_base_policies_say_when_they_need_a_decision() -> None:
    """ENG-13: fifo skips checkpoints, las does not; both re-plan at arrivals and completions."""
    for cause in (EventKind.ARRIVAL, EventKind.COMPLETION):
        assert fifo.needs_decision(cause, None)
        assert las.needs_decision(cause, None)
    assert not fifo.needs_decision(EventKind.CHECKPOINT, None)
    assert las.needs_decision(EventKind.CHECKPOINT, None)


def test_eng13_evalstop_asks_when_the_reporting_job_fired() -> None:
    """ENG-13: the wrapper stops at the firing checkpoint although fifo skips checkpoints."""
    job = make_job(0, scores=(0.1, 0.5, 0.3, 0.2, 0.1), hacking=True)
    result = simulate([job], evalstop(fifo, DeclineDetector(2)), Cluster(gpus=1))
    stop = [r for r in result.log if r.reason]
    assert [(r.time, r.step) for r in stop] == [(40, 20)]


@settings(max_examples=15)
@given(st.integers(min_value=0, max_value=10_000), st.sampled_from([fifo, sjf_est]))
def test_eng13_skipping_checkpoints_is_exact_for_non_preemptive_policies(
    seed: int, base: PriorityPolicy
) -> None:
    """ENG-13: first fit leaves nothing that fits, and a checkpoint frees nothing, so asking
    a non-preemptive policy at every checkpoint changes nothing."""
    workload = generate(WorkloadConfig(n_jobs=40, gpus=8), seed)
    lazy = simulate(workload, evalstop(base), Cluster(gpus=8))
    eager = simulate(workload, evalstop(AlwaysAsk(base)), Cluster(gpus=8))
    assert lazy.log == eager.log


def test_eng14_a_policy_without_needs_decision_is_rejected() -> None:
    """ENG-14: a policy missing a member of the protocol is refused when the simulator is built."""

    class Misspelt:
        name = "misspelt"
        detectors: tuple[Detector[Any], ...] = ()

        def need_decision(self, cause: object, changed: object) -> bool:  # the typo
            return False

        def __call__(self, view: ClusterView) -> Decision:
            return Decision()

    with pytest.raises(TypeError, match="needs_decision"):
        Simulator(Misspelt(), total_gpus=4)  # type: ignore[arg-type]
    assert isinstance(AlwaysAsk(fifo), Policy)
