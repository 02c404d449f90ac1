"""POL-6: a built-in policy's ordered state decides exactly what the policy decides on the
cluster view of the same jobs, for any mix of queued and running jobs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.model import JobKind
from evalstop.core.policies import BASE_POLICIES, PriorityPolicy

LOSS = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 2.0]))


@st.composite
def clusters(draw: st.DrawFn) -> ClusterView:
    """A cluster at time ``now`` with queued jobs and running jobs that fit in it."""
    total = draw(st.integers(1, 24))
    now = draw(st.integers(0, 40_000))
    queued: list[JobView] = []
    running: list[JobView] = []
    free = total
    for job_id in range(draw(st.integers(0, 16))):
        gpus = draw(st.integers(1, min(total, 8)))
        runs = gpus <= free and draw(st.booleans())
        view = JobView(
            job_id=job_id,
            kind=draw(st.sampled_from(list(JobKind))),
            gpus=gpus,
            submit_time=draw(st.integers(0, 5)),
            estimated_duration=draw(st.sampled_from([1, 10, 3_600, 20_000])),
            eval_interval=5,
            tenant=draw(st.sampled_from(["a", "b"])),
            name=None,
            service=draw(st.sampled_from([0, 5, 3_000, 9_000])),
            running_since=draw(st.integers(0, now + 30)) if runs else None,
            first_loss=draw(LOSS),
            previous_loss=draw(LOSS),
            last_loss=draw(LOSS),
        )
        if runs:
            free -= gpus
            running.append(view)
        else:
            queued.append(view)
    queued.sort(key=lambda v: (v.submit_time, v.job_id))
    running_order = draw(st.permutations(running))  # start order is arbitrary
    return ClusterView(now, total, free, tuple(queued), tuple(running_order), EventKind.ARRIVAL)


@settings(max_examples=max(400, settings().max_examples))
@given(cluster=clusters(), name=st.sampled_from(sorted(BASE_POLICIES)))
def test_pol6_ordered_state_decides_as_the_policy(cluster: ClusterView, name: str) -> None:
    """POL-6: told the same jobs, a base policy's state decides what the policy decides."""
    policy = BASE_POLICIES[name]
    state = policy.start_run(cluster.total_gpus)
    assert state is not None
    for view in cluster.queued:
        state.queued(view)
    for view in cluster.running:
        state.started(view)
    decided = state.decide(cluster.time, cluster.free_gpus, EventKind.ARRIVAL, None)
    assert decided == policy(cluster)


def test_pol6_ended_forgets_a_job_twice_without_error() -> None:
    """POL-6: ``ended`` twice for one job (the wrapper tells its base first) is harmless."""
    state = BASE_POLICIES["fifo"].start_run(4)
    assert state is not None
    view = JobView(1, JobKind.LORA, 2, 0, 10, 1, "default", None)
    state.queued(view)
    state.ended(1)
    state.ended(1)
    assert state.decide(0, 4, EventKind.ARRIVAL, None).start == ()


def test_pol6_user_priority_policy_is_not_incremental_by_default() -> None:
    """POL-6: a user's PriorityPolicy makes no promise about its key, so it gets no state."""
    policy = PriorityPolicy("mine", lambda job, now: (now - job.submit_time, job.job_id))
    assert policy.start_run(4) is None
