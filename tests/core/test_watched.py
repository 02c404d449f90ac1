"""Which jobs' verdicts a policy's state acts on (POL-12)."""

from __future__ import annotations

import pytest

from builders import make_job
from evalstop.core.boundary import EventKind, make_job_view
from evalstop.core.fairshare import fair_share
from evalstop.core.model import JobKind
from evalstop.core.policies import fifo, las, loss_aware, sjf_est, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.wrapper import evalstop

KINDS = tuple(JobKind)


def _watched(policy: Policy, kind: JobKind) -> bool:
    state = policy.start_run(64)  # type: ignore[attr-defined]
    assert state is not None
    return bool(state.watched(make_job_view(make_job(1, kind=kind).spec)))


@pytest.mark.parametrize("base", [fifo, sjf_est, srtf_est, fair_share], ids=lambda p: p.name)
def test_pol12_bases_that_never_replan_at_a_checkpoint_watch_no_job(base: Policy) -> None:
    """POL-12: the states of the bases that never re-plan at a checkpoint say False for every
    job; wrapped by EvalStop, True for a watched kind only (RLHF by default, EVS-4)."""
    assert not base.needs_decision(EventKind.CHECKPOINT, None)
    assert [_watched(base, kind) for kind in KINDS] == [False] * len(KINDS)
    assert [_watched(evalstop(base), kind) for kind in KINDS] == [
        kind is JobKind.RLHF for kind in KINDS
    ]
    every = evalstop(base, kinds=frozenset(JobKind))
    assert all(_watched(every, kind) for kind in KINDS)


@pytest.mark.parametrize("base", [las, loss_aware], ids=lambda p: p.name)
def test_pol12_bases_that_replan_at_checkpoints_watch_every_job(base: Policy) -> None:
    """POL-12: `las` and `loss-aware` re-plan at checkpoints, so their states (and EvalStop's
    over them) say True for every job."""
    assert base.needs_decision(EventKind.CHECKPOINT, None)
    for policy in (base, evalstop(base)):
        assert all(_watched(policy, kind) for kind in KINDS)
