"""POL-11: a preemptive ordered state whose keys never move decides an arrival after an
applied decision from the GPUs that decision left, and still decides what the policy decides,
over runs of arrivals (in and out of key order), ends, reports and applied decisions."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import examples
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.fairshare import fair_share
from evalstop.core.model import JobKind
from evalstop.core.policies import BASE_POLICIES
from evalstop.core.ranking import PriorityState

# ("arrive", gpus, submit delay) | ("late", gpus, 0): an arrival submitted before the others
# | ("end", which, 0) | ("decide", 0, 0) | ("skip", 0, 0): a decision not applied at once
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.integers(1, 6), st.integers(0, 3)),
        st.tuples(st.just("late"), st.integers(1, 6), st.just(0)),
        st.tuples(st.just("end"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("decide"), st.just(0), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=examples(300))
@given(ops=OPS, total=st.integers(1, 12), name=st.sampled_from(["fair-share", "srtf-est", "las"]))
def test_pol11_settled_state_decides_as_the_policy(
    ops: list[tuple[str, int, int]], total: int, name: str
) -> None:
    """POL-11, POL-6: at every decision the state decides what the policy decides on the view
    of the same jobs; each decision is applied as the engine applies it (preemptions told as
    queued, starts as started), then arrivals, late arrivals (keys before the others') and
    ends come in between."""
    policy = fair_share if name == "fair-share" else BASE_POLICIES[name]
    state = policy.start_run(total)
    assert state is not None
    queued: dict[int, JobView] = {}
    running: dict[int, JobView] = {}
    free, time, submit, late = total, 0, 100, 99
    for op, a, b in ops:
        time += 1
        if op in ("arrive", "late"):
            job_id = 1_000 + time
            if op == "late":
                at, late = late, late - 1
            else:
                submit += b
                at = submit
            view = JobView(job_id, JobKind.LORA, min(a, total), at, 50, 1, "one", None)
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
        for job_id in decided.preempt:
            job = running.pop(job_id)
            job = queued[job_id] = attrs.evolve(
                job,
                service=job.attained_service(time),
                running_since=None,
                preemptions=job.preemptions + 1,
            )
            free += job.gpus
            state.queued(job)
        for job_id in decided.start:
            job = running[job_id] = attrs.evolve(queued.pop(job_id), running_since=time)
            free -= job.gpus
            state.started(job)


def test_pol11_an_arrival_after_an_applied_decision_does_not_walk(monkeypatch: object) -> None:
    """POL-11: fair share with one tenant (submit order): once a decision is applied, an
    arrival, which ranks after every active job, is decided from the free GPUs alone, without
    walking the ranking; an end makes the next decision walk again."""
    state = fair_share.start_run(4)
    assert state is not None
    inner = state._one  # type: ignore[attr-defined]
    assert isinstance(inner, PriorityState)
    walks: list[int] = []
    original = PriorityState._walk

    def counting(self: PriorityState, time: int) -> object:
        walks.append(time)
        return original(self, time)

    setattr(PriorityState, "_walk", counting)  # noqa: B010
    try:
        views = [JobView(i, JobKind.LORA, 2, i, 50, 1, "one", None) for i in range(4)]
        state.queued(views[0])
        state.queued(views[1])
        first = state.decide(0, 4, EventKind.ARRIVAL, None)
        assert first.start == (0, 1)
        for job_id in first.start:
            state.started(attrs.evolve(views[job_id], running_since=0))
        state.queued(views[2])
        assert state.decide(1, 0, EventKind.ARRIVAL, None).start == ()
        state.queued(views[3])
        assert state.decide(2, 0, EventKind.ARRIVAL, None).start == ()
        assert walks == []
        state.ended(0)
        assert state.decide(3, 2, EventKind.COMPLETION, None).start == (2,)
    finally:
        setattr(PriorityState, "_walk", original)  # noqa: B010
