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
