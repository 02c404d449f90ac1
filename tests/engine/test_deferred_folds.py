"""Jobs whose verdicts the policy does not act on: their reports are folded only when read
(POL-12, ENG-17), with every state, view and log as the pure engine's."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from builders import Stateless, make_job
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector, StopAtProgress
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import fifo
from evalstop.core.policy import Policy, PolicyState
from evalstop.core.wrapper import evalstop
from evalstop.engine import Simulator
from evalstop.engine.errors import EngineError
from evalstop.engine.fast import FastSimulator

DECLINING = (0.5, 0.4, 0.3, 0.2, 0.1, 0.05)


@attrs.frozen
class Counting(Stateless):
    """``inner`` itself, with its state, counting the checkpoint views it is asked about, by
    job."""

    asked: list[int] = attrs.field(factory=list, eq=False)

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        if cause is EventKind.CHECKPOINT and changed is not None:
            self.asked.append(changed.job_id)
        return self.inner.needs_decision(cause, changed)

    def start_run(self, total_gpus: int) -> PolicyState | None:
        start = getattr(self.inner, "start_run", None)
        return None if start is None else start(total_gpus)


def _jobs() -> list[Job]:
    return [
        make_job(1, scores=DECLINING, kind=JobKind.RLHF),
        make_job(2, scores=DECLINING, kind=JobKind.DPO),
        make_job(3, submit=5, scores=DECLINING, kind=JobKind.LORA, gpus=2),
    ]


def test_pol12_unwatched_jobs_are_folded_only_when_read() -> None:
    """POL-12, ENG-17: under evalstop+fifo the DPO and LoRA jobs' records are deferred (no fold
    at their checkpoints, no view shown to the policy even once their watch fired), the RLHF
    job's is not; the state, read mid-run, and the log equal the pure engine's, which shows the
    policy the fired DPO and LoRA checkpoints."""
    fast_policy, pure_policy = Counting(evalstop(fifo)), Counting(evalstop(fifo))
    fast, pure = FastSimulator(fast_policy, 8), Simulator(pure_policy, 8)
    for job in _jobs():
        fast.submit(job)
        pure.submit(job)
    fast.run(horizon=25)
    pure.run(horizon=25)
    records = fast._active
    assert records[2].deferred and records[3].deferred and not records[1].deferred
    assert records[2].folding is None and records[1].folding is not None
    assert fast.state == pure.state  # the deferred watches folded when read
    fast.run(horizon=45)  # job 1 was stopped at its second decline, job 2's watch fired
    pure.run(horizon=45)
    assert fast.state == pure.state
    verdict = fast.state.active[2].view.verdict("evalstop(k=2)")
    assert verdict is not None and verdict.fired_step == 30
    fast.run()
    pure.run()
    assert fast.log == pure.log
    assert fast_policy.asked == [1]  # the RLHF job's fired checkpoint, then it was stopped
    assert {2, 3} <= set(pure_policy.asked)


def test_pol12_a_state_without_watched_watches_every_job() -> None:
    """POL-12: a base state that does not say ``watched`` may act on any job's verdict, so
    EvalStop's state over it defers nothing; nor does a run whose detector is not folded in
    place (ENG-17)."""
    for policy in (evalstop(_Plain()), evalstop(fifo, StopAtProgress(0.9))):
        sim = FastSimulator(policy, 8)
        for job in _jobs():
            sim.submit(job)
        sim.run(horizon=25)
        assert len(sim._active) == 3
        assert not any(record.deferred for record in sim._active.values())


@attrs.frozen
class _Plain:
    """fifo, whose state does not say ``watched``."""

    name: str = "plain-fifo"
    detectors: tuple[Detector[Any], ...] = ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return fifo.needs_decision(cause, changed)

    def __call__(self, view: ClusterView) -> Decision:
        return fifo(view)

    def start_run(self, total_gpus: int) -> PolicyState:
        state = fifo.start_run(total_gpus)
        assert state is not None
        return _Without(state)


class _Without:
    """A state that forwards everything but ``watched``."""

    def __init__(self, inner: PolicyState) -> None:
        self._inner = inner
        self.queued, self.started = inner.queued, inner.started
        self.reported, self.ended, self.decide = inner.reported, inner.ended, inner.decide

    @property
    def checkpoint_views(self) -> bool:
        return self._inner.checkpoint_views


@attrs.frozen
class Liar(Stateless):
    """fifo wrapped by EvalStop for every kind, whose state says it watches no job (a broken
    POL-12 promise: the wrapper stops any fired job)."""

    inner: Policy = attrs.field(factory=lambda: evalstop(fifo, kinds=frozenset(JobKind)))

    def start_run(self, total_gpus: int) -> PolicyState:
        state = self.inner.start_run(total_gpus)  # type: ignore[attr-defined]
        state.watched = lambda job: False
        return state  # type: ignore[no-any-return]


def test_pol12_eng20_check_catches_a_broken_promise() -> None:
    """POL-12, ENG-20: with ``check=True`` a deferred job whose watch fired is shown to the
    policy; a policy that then needs a decision makes the engine raise, naming POL-12."""
    sim = FastSimulator(Liar(), 8, check=True)
    for job in _jobs():
        sim.submit(job)
    with pytest.raises(EngineError, match="POL-12"):
        sim.run()
