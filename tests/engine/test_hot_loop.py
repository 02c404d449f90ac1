"""The fast engine's hot loop against the pure engine where its shortcuts could show."""

from __future__ import annotations

import pytest

from builders import make_job
from evalstop.core.policies import fifo
from evalstop.core.registry import make_policy
from evalstop.engine import FastSimulator, Simulator


@pytest.mark.parametrize("system", ["fifo", "evalstop+fifo"])
def test_eng9_a_run_without_horizon_drains_events_at_any_time(system: str) -> None:
    """ENG-9: ``run()`` without a horizon handles every event however late (the hot loop
    first runs to a far integer limit, then on), with the pure engine's log."""
    late = 2**62 - 15  # its checkpoints fall on both sides of the first limit
    jobs = [
        make_job(0, submit=0, scores=(0.5, 0.4, 0.3, 0.2)),
        make_job(1, submit=late, scores=(0.1, 0.2, 0.3, 0.4)),
        make_job(2, submit=late + 1, gpus=2, scores=(0.1, 0.0, -0.1, 0.2)),
    ]
    policy = fifo if system == "fifo" else make_policy(system)
    fast, pure = FastSimulator(policy, 2), Simulator(policy, 2)
    for job in jobs:
        fast.submit(job)
        pure.submit(job)
    fast.run()
    pure.run()
    assert fast.pending == 0
    assert repr(list(fast.log)) == repr(list(pure.log))
    assert fast.events_handled == pure.events_handled
    assert fast.log[-1].time > 2**62


def test_eng15_a_checkpoint_event_holds_its_jobs_record_an_arrival_its_id() -> None:
    """ENG-15: in the fast engine's heap an arrival's key is its job's id and a checkpoint's
    the job's record; a stopped job's pending checkpoint is stale (ENG-5, ENG-7): dropped
    without a row, as the pure engine drops it."""
    policy = make_policy("evalstop+fifo")
    jobs = [make_job(0, scores=(0.5, 0.4, 0.3, 0.2, 0.1)), make_job(1, submit=1, gpus=2)]
    fast, pure = FastSimulator(policy, 2), Simulator(policy, 2)
    for job in jobs:
        fast.submit(job)
        pure.submit(job)
    assert fast.advance() and pure.advance()  # job 0 arrives and starts
    keys = sorted((item[1], type(item[3]).__name__) for item in fast.queue)
    assert keys == [(1, "JobRecord"), (2, "int")]  # its first checkpoint, job 1's arrival
    fast.run()
    pure.run()
    assert repr(list(fast.log)) == repr(list(pure.log))
    assert fast.events_handled == pure.events_handled
    assert [r.kind.value for r in fast.log if r.job_id == 0][-1] == "stop"
