"""POL-6, POL-7, POL-8, POL-9: a built-in policy's ordered state decides exactly what the
policy decides on the cluster view of the same jobs, for any mix of queued and running jobs,
also over a run of decisions where it keeps the running jobs ordered between them."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import Any, SupportsIndex

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import examples, job_view
from evalstop.core import ranking
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.model import JobKind
from evalstop.core.policies import BASE_POLICIES, PriorityPolicy, las, loss_aware, srtf_est
from evalstop.core.policy import IncrementalPolicy, PolicyState
from evalstop.core.ranking import Ranked, RunningTail

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


@settings(max_examples=examples(400))
def _state_told(policy: IncrementalPolicy, cluster: ClusterView) -> PolicyState:
    """The policy's incremental state told the cluster's queued and running jobs (POL-6)."""
    state = policy.start_run(cluster.total_gpus)
    assert state is not None
    for view in cluster.queued:
        state.queued(view)
    for view in cluster.running:
        state.started(view)
    return state


@given(cluster=clusters(), name=st.sampled_from(sorted(BASE_POLICIES)))
def test_pol6_ordered_state_decides_as_the_policy(cluster: ClusterView, name: str) -> None:
    """POL-6: told the same jobs, a base policy's state decides what the policy decides."""
    policy = BASE_POLICIES[name]
    assert _state_told(policy, cluster).decide(
        cluster.time, cluster.free_gpus, EventKind.ARRIVAL, None
    ) == policy(cluster)


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


def _ragged_key(job: JobView, now: int) -> tuple[float, ...]:
    """A key of varying length that ends with the job id: GPUs first; a job of 2 GPUs or more
    is ranked by submit time too, so some keys are longer than others."""
    if job.gpus < 2:
        return (job.gpus, job.job_id)
    return (job.gpus, job.submit_time, job.job_id)


def _never_moves(job: JobView, now: int) -> int | None:
    return None


@settings(max_examples=examples(200))
@given(cluster=clusters())
def test_pol6_a_users_incremental_key_of_varying_length_decides_as_the_policy(
    cluster: ClusterView,
) -> None:
    """POL-6: a user's preemptive incremental policy whose keys end with the job id but differ
    in length: its ordered state (the keys themselves as entries, ids read off their ends)
    decides what the policy decides."""
    policy = PriorityPolicy(
        "ragged", _ragged_key, preemptive=True, incremental=True, moves_at=_never_moves
    )
    state = _state_told(policy, cluster)
    assert isinstance(state, ranking.PriorityState)
    assert state.decide(cluster.time, cluster.free_gpus, EventKind.ARRIVAL, None) == policy(cluster)


def _apply(view: ClusterView, decision: Decision, time: int, state: PolicyState) -> ClusterView:
    """The cluster after ``decision`` at ``time`` (a preempted job banks its service)."""
    running = {j.job_id: j for j in view.running}
    queued = {j.job_id: j for j in view.queued}
    free = view.free_gpus
    for job_id in decision.preempt:
        job = running.pop(job_id)
        queued[job_id] = attrs.evolve(
            job, service=job.attained_service(time), running_since=None, preemptions=1
        )
        free += job.gpus
        state.queued(queued[job_id])
    for job_id in decision.start:
        job = queued.pop(job_id)
        running[job_id] = attrs.evolve(job, running_since=time)
        free -= job.gpus
        state.started(running[job_id])
    order = sorted(queued.values(), key=lambda v: (v.submit_time, v.job_id))
    return attrs.evolve(view, free_gpus=free, queued=tuple(order), running=tuple(running.values()))


@settings(max_examples=examples(300))
@given(
    cluster=clusters(),
    name=st.sampled_from(sorted(BASE_POLICIES)),
    steps=st.lists(st.tuples(st.integers(0, 20_000), st.booleans()), min_size=1, max_size=8),
)
def test_pol7_running_order_kept_between_decisions(
    cluster: ClusterView, name: str, steps: list[tuple[int, bool]]
) -> None:
    """POL-6, POL-7: over a run of decisions at later and later times, each applied (starts,
    preemptions) and a running job reporting in between, the state keeps deciding what the
    policy decides on the cluster of that moment."""
    policy = BASE_POLICIES[name]
    state = policy.start_run(cluster.total_gpus)
    assert state is not None
    for view in cluster.queued:
        state.queued(view)
    for view in cluster.running:
        state.started(view)
    time = cluster.time
    for delay, report in steps:
        time += delay
        cluster = attrs.evolve(cluster, time=time)
        if report and cluster.running:  # the first running job reports at `time`
            job = cluster.running[0]
            job = attrs.evolve(
                job,
                service=job.attained_service(time),
                running_since=max(time, job.running_since or 0),
            )
            cluster = attrs.evolve(cluster, running=(job, *cluster.running[1:]))
            if state.checkpoint_views:
                state.reported(job)
            else:
                continue  # a policy not told of reports is not asked here either
        decided = state.decide(time, cluster.free_gpus, EventKind.CHECKPOINT, None)
        assert decided == policy(cluster)
        cluster = _apply(cluster, decided, time, state)


def _las_two_running_one_waiting(
    policy: PriorityPolicy = las,
) -> tuple[ranking.PriorityState, ClusterView]:
    """Under las (or ``policy``, a variant of it), two running 1-GPU jobs filling 2 GPUs and
    one waiting, after a decision (the policy's: nothing to do)."""
    running = [job_view(i, running_since=0) for i in range(2)]
    waiting = job_view(2, submit=5)
    state = policy.start_run(2)
    assert isinstance(state, ranking.PriorityState)
    for view in running:
        state.started(view)
    state.queued(waiting)
    cluster = ClusterView(10, 2, 0, (waiting,), tuple(running), EventKind.ARRIVAL)
    assert state.decide(10, 0, EventKind.ARRIVAL, None) == las(cluster) == Decision()
    return state, cluster


def _count_ranks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the running jobs ``PriorityState._rank`` (re-)keys from now on, in order."""
    ranked: list[int] = []
    original = ranking.PriorityState._rank

    def counting(self: ranking.PriorityState, job_id: int, *rest: Any) -> None:
        ranked.append(job_id)
        original(self, job_id, *rest)

    monkeypatch.setattr(ranking.PriorityState, "_rank", counting)
    return ranked


def test_pol7_a_report_that_moves_no_key_leaves_the_order_untouched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-7: under las without POL-13 (so that a report re-keys its job at the next
    decision) two running jobs and a queued one fill 2 GPUs; one running job reports at 100 s,
    short of the first threshold (its key, level 0, is as it was): the next decision (the
    policy's: nothing moves) re-keys it without removing or adding an entry of the running
    order; a report past the threshold moves it."""
    rekeying = attrs.evolve(las, reports_keep_keys=False)
    state, cluster = _las_two_running_one_waiting(rekeying)
    running = list(cluster.running)
    changed: list[Any] = []
    ranked = _count_ranks(monkeypatch)

    class Counting(list[Ranked]):
        """A sorted list of the running order that records each entry added or taken out."""

        def insert(self, index: SupportsIndex, value: Ranked) -> None:
            changed.append(value)
            super().insert(index, value)

        def __delitem__(self, index: Any) -> None:
            changed.append(self[index])
            super().__delitem__(index)

    monkeypatch.setattr(state, "_fixed", Counting(state._fixed))
    monkeypatch.setattr(state, "_moving", Counting(state._moving))
    reported = attrs.evolve(running[0], service=100, running_since=100, evals_done=1)
    state.reported(reported)
    cluster = attrs.evolve(cluster, time=100, running=(reported, running[1]))
    assert state.decide(100, 0, EventKind.CHECKPOINT, None) == rekeying(cluster) == Decision()
    assert ranked == [0]  # re-keyed, to the entry it had
    assert changed == []
    past = attrs.evolve(reported, service=3_700, running_since=3_700, evals_done=2)
    state.reported(past)
    cluster = attrs.evolve(cluster, time=3_700, running=(past, running[1]))
    assert state.decide(3_700, 0, EventKind.CHECKPOINT, None) == rekeying(cluster)
    assert len(changed) >= 2  # its old entry out, its new one in


@given(
    job=clusters().filter(lambda c: bool(c.running)).map(lambda c: (c.running[0], c.time)),
    later=st.integers(0, 80_000),
)
def test_pol7_a_key_does_not_move_before_its_time(job: tuple[JobView, int], later: int) -> None:
    """POL-7: ``key(view, t) == key(view, now)`` for every t before ``moves_at(view, now)``."""
    view, now = job
    for policy in (loss_aware, las):
        assert policy.moves_at is not None
        moves = policy.moves_at(view, now)
        for t in (now, now + later, now + later // 7):
            if moves is None or t < moves:
                assert policy.key(view, now=t) == policy.key(view, now=now)
        if moves is not None:  # and it is a real move, not a bound too early (LAS: exact)
            assert policy.key(view, now=moves) != policy.key(view, now=moves - 1)


def test_pol7_las_moves_at_a_whole_second() -> None:
    """POL-7, MOD-1: las's next move is the first whole second at which the job's attained
    GPU service reaches the next threshold, also when its GPUs do not divide the threshold
    (7 GPUs: 514 s give 3,598 GPU-seconds, 515 s give 3,605 >= 3,600)."""
    view = job_view(1, gpus=7, running_since=100)
    moves = las.moves_at(view, 100) if las.moves_at is not None else None
    assert moves == 615 and type(moves) is int
    assert las.key(view, now=615) != las.key(view, now=614)


def test_pol7_las_at_a_threshold_moves_at_the_next_one() -> None:
    """POL-7: a job whose attained GPU service is exactly at a threshold has reached it; its
    next move is the next threshold (a time after now), not now."""
    view = job_view(1, gpus=1, running_since=0)
    moves = las.moves_at(view, 3_600) if las.moves_at is not None else None
    assert moves == 36_000


@given(
    job=clusters().filter(lambda c: bool(c.running)).map(lambda c: (c.running[0], c.time)),
    later=st.integers(0, 80_000),
)
def test_pol8_srtf_key_falls_until_its_time(job: tuple[JobView, int], later: int) -> None:
    """POL-8: while ``falls_until`` says so, srtf-est's key is its key at ``now`` with the
    first part lowered by the time passed; otherwise it stays put until ``moves_at``."""
    view, now = job
    assert srtf_est.falls_until is not None and srtf_est.moves_at is not None
    key = srtf_est.key(view, now=now)
    until = srtf_est.falls_until(view, now)
    if until is not None:
        assert until > now
        for t in (now, min(until, now + later), until):
            assert srtf_est.key(view, now=t) == (key[0] - (t - now), *key[1:])
        return
    moves = srtf_est.moves_at(view, now)
    for t in (now, now + later):
        if moves is None or t < moves:
            assert srtf_est.key(view, now=t) == key


def test_pol8_srtf_waits_out_its_overhead_then_falls_to_zero() -> None:
    """POL-8, ENG-11: 100 s estimated, 10 s done, resumed at 20 with its overhead until 50: the
    key stays 90 until 50, then falls to 0 at 140, where it stays."""
    view = job_view(1, estimate=100, service=10, running_since=50)
    assert srtf_est.moves_at is not None and srtf_est.falls_until is not None
    assert (srtf_est.moves_at(view, 20), srtf_est.falls_until(view, 20)) == (50, None)
    assert srtf_est.falls_until(view, 50) == 140
    assert [srtf_est.key(view, now=t)[0] for t in (20, 50, 100, 140, 500)] == [90, 90, 40, 0, 0]
    assert (srtf_est.moves_at(view, 140), srtf_est.falls_until(view, 140)) == (None, None)


def _full_cluster(policy: PriorityPolicy, running: int) -> tuple[PolicyState, ClusterView]:
    """``running`` 1-GPU jobs filling the cluster (estimates 1,000 s + id; under las past its
    first threshold, under loss-aware with no loss drop), and a decision."""
    service = 4_000 if policy is las else 0
    losses: dict[str, Any] = {"first_loss": 1.0, "previous_loss": 1.0, "last_loss": 1.0}
    views = [
        job_view(i, estimate=1_000 + i, running_since=0, service=service, **losses)
        for i in range(running)
    ]
    state = policy.start_run(running)
    assert state is not None
    for view in views:
        state.started(view)
    cluster = ClusterView(10, running, 0, (), tuple(views), EventKind.ARRIVAL)
    assert state.decide(10, 0, EventKind.ARRIVAL, None) == policy(cluster) == Decision()
    return state, cluster


def test_pol9_a_demand_that_fits_nowhere_past_the_position_is_not_looked_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-9: under srtf-est 2,000 running 1-GPU jobs fill the cluster and a 1,500-GPU job
    waits, ranked above the twelve lowest; a 2-GPU job that ranks first arrives: the walk
    starts it (then looks up its demand's next job) and preempts the two lowest ranked,
    passing the big job's place, and never looks the big job's demand up past it (the running
    jobs ranked after the walk's position hold fewer GPUs than it lacks). The decision is the
    policy's."""
    state, cluster = _full_cluster(srtf_est, 2_000)
    big = job_view(5_000, gpus=1_500, estimate=2_977, submit=5)
    state.queued(big)
    assert state.decide(11, 0, EventKind.ARRIVAL, None) == Decision()
    new = job_view(9_999, gpus=2, estimate=1, submit=10)
    state.queued(new)
    looked: list[Any] = []

    def counting(bucket: list[Any], value: Any) -> int:
        looked.append(value)
        return bisect_right(bucket, value)  # a short bucket's lookup (a long one: SortedList)

    monkeypatch.setattr(ranking, "bisect_right", counting)
    decided = state.decide(20, 0, EventKind.ARRIVAL, None)
    expected = srtf_est(attrs.evolve(cluster, time=20, queued=(big, new)))
    assert decided == expected
    assert decided.start == (9_999,) and decided.preempt == (1_998, 1_999)
    assert [value[-1] for value in looked] == [9_999]  # only past the started job, in its demand


@pytest.mark.parametrize("policy", [srtf_est, las, loss_aware], ids=lambda p: p.name)
def test_pol9_a_preemptive_decision_reads_running_jobs_from_the_bottom(
    policy: PriorityPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POL-9: 2,000 running 1-GPU jobs fill the cluster; a 2-GPU job that ranks first arrives:
    the decision (the policy's) starts it and preempts the two lowest ranked, having read only
    a few running jobs from the bottom of their order."""
    state, cluster = _full_cluster(policy, 2_000)
    tails: list[RunningTail] = []
    original = RunningTail.__init__

    def record(self: RunningTail, source: Iterator[tuple[Ranked, int]]) -> None:
        original(self, source)
        tails.append(self)

    monkeypatch.setattr(RunningTail, "__init__", record)
    losses: dict[str, Any] = {"first_loss": 1.0, "previous_loss": 9.0, "last_loss": 0.0}
    new = job_view(9_999, gpus=2, estimate=1, submit=10, **losses)
    state.queued(new)
    decided = state.decide(20, 0, EventKind.ARRIVAL, None)
    expected = policy(attrs.evolve(cluster, time=20, queued=(new,)))
    assert decided == expected
    assert decided.start == (9_999,) and len(decided.preempt) == 2
    assert len(tails) == 1 and len(tails[0]._entries) <= 4


@given(
    job=clusters().filter(lambda c: bool(c.running)).map(lambda c: (c.running[0], c.time)),
    report=st.integers(0, 40_000),
    later=st.integers(0, 80_000),
)
def test_pol13_a_report_keeps_the_key_of_a_policy_that_says_so(
    job: tuple[JobView, int], report: int, later: int
) -> None:
    """POL-13: for every policy with ``reports_keep_keys`` (``las``), a running job's view
    after a report at ``now + report`` (its attained service carried, as the engine reports
    it) has the key and the move time of the view before, at every time from the report on."""
    view, now = job
    when = now + report
    since = view.running_since
    assert since is not None
    new = attrs.evolve(view, service=view.attained_service(when), running_since=max(when, since))
    keeping = [p for p in BASE_POLICIES.values() if getattr(p, "reports_keep_keys", False)]
    assert [p.name for p in keeping] == ["las"]
    for policy in keeping:
        assert isinstance(policy, PriorityPolicy) and policy.moves_at is not None
        time = when + later
        assert policy.key(new, time) == policy.key(view, time)
        assert policy.moves_at(new, time) == policy.moves_at(view, time)


def test_pol13_a_las_report_is_not_rekeyed_and_keeps_the_packing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-13: under las two running 1-GPU jobs fill 2 GPUs and a job waits; after an applied
    decision one runner reports: the next decision (the policy's: nothing to do) re-keys
    nothing."""
    state, cluster = _las_two_running_one_waiting()
    running = list(cluster.running)
    ranked = _count_ranks(monkeypatch)
    reported = attrs.evolve(running[0], service=500, running_since=500, evals_done=1)
    state.reported(reported)
    cluster = attrs.evolve(cluster, time=500, running=(reported, running[1]))
    assert state.decide(500, 0, EventKind.CHECKPOINT, reported) == las(cluster) == Decision()
    assert ranked == []
