"""ENG-8 as ``validate`` judges it: the shortcut for one stop and starts against the rule."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalstop import InvalidDecisionError
from evalstop.core.decision import Decision, StopOrder
from evalstop.engine.validate import validate

Placed = tuple[int, bool]


def by_the_rule(decision: Decision, active: dict[int, Placed], free: int) -> str | None:
    """The rule of ENG-8, written plainly: None when ``decision`` can be applied whole, else
    the error."""
    named = [o.job_id for o in decision.stop] + list(decision.preempt) + list(decision.start)
    if len(named) != len(set(named)):
        return f"a job is named twice in {decision}"
    freed = 0
    for order in decision.stop:
        if order.job_id not in active:
            return f"cannot stop job {order.job_id}: it is not active"
        gpus, running = active[order.job_id]
        freed += gpus if running else 0
    for job_id in decision.preempt:
        if job_id not in active or not active[job_id][1]:
            return f"cannot preempt job {job_id}: it is not running"
        freed += active[job_id][0]
    wanted = 0
    for job_id in decision.start:
        if job_id not in active or active[job_id][1]:
            return f"cannot start job {job_id}: it is not queued"
        wanted += active[job_id][0]
    if wanted > free + freed:
        return f"starts need {wanted} GPUs but only {free + freed} would be free"
    return None


def judged(decision: Decision, active: dict[int, Placed], free: int) -> str | None:
    try:
        validate(decision, active, free, lambda placed: placed)
    except InvalidDecisionError as error:
        return str(error)
    return None


jobs = st.dictionaries(st.integers(0, 6), st.tuples(st.integers(1, 4), st.booleans()), max_size=6)


@given(
    active=jobs,
    stopped=st.integers(0, 7),
    starts=st.lists(st.integers(0, 7), max_size=4),
    preempts=st.lists(st.integers(0, 7), max_size=2),
    free=st.integers(0, 8),
)
def test_eng8_one_stop_and_starts_judged_as_the_rule_says(
    active: dict[int, Placed], stopped: int, starts: list[int], preempts: list[int], free: int
) -> None:
    """ENG-8: a decision of one stop and any starts (the stop path, checked without building
    the list and set of every named job) is accepted or refused as the rule says, with the
    rule's first error; so is any decision with a preemption besides."""
    stop = (StopOrder(stopped, "x"),)
    for decision in (
        Decision(start=tuple(starts), stop=stop),
        Decision(start=tuple(starts), preempt=tuple(preempts), stop=stop),
    ):
        assert judged(decision, active, free) == by_the_rule(decision, active, free)
