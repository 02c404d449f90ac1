"""POL-10: a non-preemptive base's per-demand heaps decide what the policy decides, over a run
of arrivals, ends and decisions whose starts the state takes off its queue itself."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import examples
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.firstfit import FirstFitState
from evalstop.core.model import JobKind
from evalstop.core.policies import fifo, sjf_est, srtf_est
from evalstop.core.wrapper import evalstop

# ("arrive", gpus, estimate) | ("end", which) | ("decide", 0, 0)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.integers(1, 6), st.sampled_from([5, 10, 3_600])),
        st.tuples(st.just("end"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("decide"), st.just(0), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=examples(300))
@given(ops=OPS, total=st.integers(1, 12), sjf=st.booleans(), started=st.booleans())
def test_pol10_per_demand_heaps_decide_as_the_policy(
    ops: list[tuple[str, int, int]], total: int, sjf: bool, started: bool
) -> None:
    """POL-10, POL-2: at every decision the state starts what the policy starts on the view of
    the same jobs, whether or not it is told the starts (``keeps_starts``), with queued and
    running jobs ending in between (an end frees GPUs: the next decision fits every demand;
    with none freed it fits only the jobs queued since)."""
    policy = sjf_est if sjf else fifo
    state = policy.start_run(total)
    assert isinstance(state, FirstFitState) and state.keeps_starts
    queued: dict[int, JobView] = {}
    running: dict[int, JobView] = {}
    free, time = total, 0
    for op, a, b in ops:
        time += 1
        if op == "arrive":
            job_id = len(queued) + len(running) + time * 100
            view = JobView(job_id, JobKind.LORA, min(a, total), time // 3, b, 1, "t", None)
            queued[job_id] = view
            state.queued(view)
            continue
        if op == "end":
            ids = sorted([*queued, *running])
            if ids:
                job_id = ids[a % len(ids)]
                if job_id in running:
                    free += running.pop(job_id).gpus
                else:
                    del queued[job_id]
                state.ended(job_id)
            continue
        order = sorted(queued.values(), key=lambda v: (v.submit_time, v.job_id))
        cluster = ClusterView(
            time, total, free, tuple(order), tuple(running.values()), EventKind.ARRIVAL
        )
        decided = state.decide(time, free, EventKind.ARRIVAL, None)
        assert decided == policy(cluster)
        for job_id in decided.start:
            job = running[job_id] = attrs.evolve(queued.pop(job_id), running_since=time)
            free -= job.gpus
            if started:
                state.started(job)


def test_pol10_freed_gpus_reach_a_job_queued_before_the_last_decision() -> None:
    """POL-10: a job queued before the last decision starts once an end frees one GPU more
    than that decision left (the fresh-only fit applies only up to that room)."""
    state = fifo.start_run(2)
    assert state is not None
    first, second, third = (
        JobView(i, JobKind.LORA, g, i, 10, 1, "t", None) for i, g in ((1, 1), (2, 1), (3, 1))
    )
    state.queued(first)
    assert state.decide(0, 2, EventKind.ARRIVAL, None).start == (1,)
    state.queued(second)
    assert state.decide(1, 1, EventKind.ARRIVAL, None).start == (2,)  # room left: 0
    state.queued(third)
    assert state.decide(2, 0, EventKind.ARRIVAL, None).start == ()
    state.ended(1)  # one GPU free: one more than the room the last decision left
    assert state.decide(3, 1, EventKind.COMPLETION, None).start == (3,)


def test_pol10_after_nothing_queued_the_arrivals_fit_from_the_fresh_list() -> None:
    """POL-10: a decision that found nothing queued leaves any room: the next arrivals are
    fitted from the jobs queued since, in key order, and one that does not fit waits in its
    heap until an end frees enough, ahead of a later, smaller job."""
    state = fifo.start_run(4)
    assert state is not None
    assert state.decide(0, 2, EventKind.COMPLETION, None).start == ()  # nothing queued
    big, small, later = (
        JobView(i, JobKind.LORA, g, i, 10, 1, "t", None) for i, g in ((1, 3), (2, 1), (3, 1))
    )
    state.queued(big)
    state.queued(small)
    assert state.decide(1, 2, EventKind.ARRIVAL, None).start == (2,)  # big waits: room 1
    state.queued(later)
    assert state.decide(2, 1, EventKind.ARRIVAL, None).start == (3,)  # the fresh one fits
    assert state.decide(3, 3, EventKind.COMPLETION, None).start == (1,)  # an end: big first


def test_pol10_a_wrapper_keeps_its_starts_when_its_base_does() -> None:
    """POL-10: EvalStop's state says what its base's says; a preemptive base's state keeps
    none (it reads its running jobs)."""
    for base, keeps in ((fifo, True), (sjf_est, True), (srtf_est, False)):
        state = evalstop(base).start_run(8)
        assert state is not None
        assert getattr(state, "keeps_starts", False) is keeps
        base_state = base.start_run(8)
        assert getattr(base_state, "keeps_starts", False) is keeps
