"""What each engine shows a policy it consults (ENG-13) and its refusal of a second submit
(ENG-1), the same in the reference and the fast engine."""

from __future__ import annotations

import pytest

from builders import Recorder, make_job
from evalstop import EngineError
from evalstop.core.boundary import EventKind
from evalstop.core.registry import make_policy
from evalstop.engine import Simulator
from evalstop.engine.fast import FastSimulator


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_eng13_a_view_changes_only_at_a_checkpoint(
    engine: type[Simulator] | type[FastSimulator],
) -> None:
    """ENG-13: the cluster view carries the views the event changed: the reporting job's at a
    checkpoint, none at an arrival or a completion."""
    recorder = Recorder(make_policy("fifo"))
    sim = engine(recorder, 1, preemption_overhead=0)
    sim.submit(make_job(1, submit=5))
    sim.submit(make_job(2, submit=7))
    sim.run()
    causes = {view.cause for view in recorder.views}
    assert {EventKind.ARRIVAL, EventKind.CHECKPOINT} <= causes
    for view in recorder.views:
        if view.cause is EventKind.CHECKPOINT:
            assert view.changed is not None
            assert [v.job_id for v in view.changed] in ([1], [2])
        else:
            assert view.changed == (), view


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_eng1_a_second_submit_names_the_job(engine: type[Simulator] | type[FastSimulator]) -> None:
    """ENG-1: submitting a job id twice raises EngineError naming the job."""
    sim = engine(make_policy("fifo"), 1)
    sim.submit(make_job(7))
    with pytest.raises(EngineError, match=r"^job 7 submitted twice$"):
        sim.submit(make_job(7, submit=3))
