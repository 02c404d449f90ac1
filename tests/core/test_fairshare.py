"""The fair-share base policy: max-min share between tenants (FSH-*, TAB-5)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sortedcontainers import SortedList

from builders import cluster_view, job_view, log_lines, make_job, simulate
from evalstop.core import fairshare
from evalstop.core.boundary import EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.fairshare import fair_share, fair_share_ranking
from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import EvalStop
from evalstop.engine.fast import FastSimulator
from evalstop.sim.workload import WorkloadConfig, generate


def test_fsh1_a_burst_of_one_tenant_does_not_starve_another() -> None:
    """FSH-1: tenant a queued eight 1-GPU jobs before tenant b's two; on 4 GPUs each gets 2."""
    a = [job_view(i, submit=0, tenant="a") for i in range(8)]
    b = [job_view(10 + i, submit=5, tenant="b") for i in range(2)]
    decision = fair_share(cluster_view(total=4, queued=[*a, *b]))
    assert decision.start == (0, 10, 1, 11)


def test_fsh1_small_tenant_gets_all_it_asks_the_others_split_the_rest() -> None:
    """FSH-1: 12 GPUs; a asks 2, b and c ask 8 each: a gets 2, b and c get 5 each."""
    jobs = [job_view(0, tenant="a", gpus=2)]
    jobs += [job_view(1 + i, submit=1, tenant="b") for i in range(8)]
    jobs += [job_view(20 + i, submit=2, tenant="c") for i in range(8)]
    started = fair_share(cluster_view(total=12, queued=jobs)).start
    by_tenant = {t: sum(1 for j in jobs if j.job_id in started and j.tenant == t) for t in "abc"}
    assert by_tenant == {"a": 1, "b": 5, "c": 5}


def test_fsh1_an_arriving_tenant_preempts_the_tenant_over_its_share() -> None:
    """FSH-1: a holds all 4 GPUs with four jobs; b arrives: a's latest two jobs are preempted."""
    running = [job_view(i, submit=i, tenant="a", running_since=0) for i in range(4)]
    queued = [job_view(9, submit=10, tenant="b", gpus=2)]
    decision = fair_share(cluster_view(total=4, queued=queued, running=running, time=10))
    assert decision.start == (9,)
    assert decision.preempt == (2, 3)


@given(n=st.integers(1, 8), gpus=st.lists(st.integers(1, 3), min_size=8, max_size=8))
def test_fsh1_one_tenant_is_fifo_order(n: int, gpus: list[int]) -> None:
    """FSH-1: with one tenant the ranking is submit order."""
    jobs = tuple(job_view(i, submit=10 - i, gpus=gpus[i]) for i in range(n))
    ranked = fair_share_ranking(jobs)
    assert [j.job_id for j in ranked] == sorted(range(n), key=lambda i: 10 - i)


def test_fsh2_replans_at_arrivals_and_completions_only() -> None:
    """FSH-2: a checkpoint does not ask for a decision; arrivals and completions do."""
    assert not fair_share.needs_decision(EventKind.CHECKPOINT, None)
    assert fair_share.needs_decision(EventKind.ARRIVAL, None)
    assert fair_share.needs_decision(EventKind.COMPLETION, None)


def test_fsh3_composes_with_evalstop_and_sees_tenants_in_a_simulation() -> None:
    """FSH-3, TAB-5: evalstop+fair-share is an EvalStop over fair-share, and in a simulation
    the tenant reaches the policy: tenant a holds all 4 GPUs with two 2-GPU jobs (two more
    queued); when tenant b's job arrives at 10 it starts at once and a's second job is
    preempted."""
    policy = make_policy("evalstop+fair-share")
    assert isinstance(policy, EvalStop)
    assert policy.base is fair_share
    jobs = [_with_tenant(make_job(i, gpus=2, duration=100), "a") for i in range(4)]
    jobs.append(_with_tenant(make_job(9, submit=10, gpus=2, duration=100), "b"))
    sim = simulate(policy, jobs, total_gpus=4)
    lines = log_lines(sim.log)
    assert (10, "start", 9) in lines
    assert (10, "preempt", 1) in lines
    assert (0, "start", 0) in lines


def _with_tenant(job: Job, tenant: str) -> Job:
    return Job(attrs.evolve(job.spec, tenant=tenant), job.truth, job.observations)


def test_fsh4_one_tenant_decides_in_submit_order_without_ranking_everyone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-4: 1,000 running jobs of one tenant fill the cluster and a 2-GPU job of the same
    tenant arrives: the state's decision is the policy's (nothing moves: it ranks last), taken
    without ranking every active job; a second tenant's job sends it back to the ranking,
    and once that tenant is gone it leaves it again."""
    running = [job_view(i, submit=i, running_since=i) for i in range(1_000)]
    state = fair_share.start_run(1_000)
    for view in running:
        state.started(view)
    late = job_view(5_000, submit=2_000, gpus=2)
    other = job_view(6_000, submit=2_001, tenant="b")
    state.queued(late)
    cluster = cluster_view(total=1_000, running=running, queued=[late], time=2_000)
    ranked: list[int] = []
    original = fairshare.FairShareState._walk

    def counting(self: fairshare.FairShareState) -> Decision:
        ranked.append(1)
        return original(self)

    monkeypatch.setattr(fairshare.FairShareState, "_walk", counting)
    assert state.decide(2_000, 0, EventKind.ARRIVAL, None) == fair_share(cluster) == Decision()
    state.queued(other)
    cluster = attrs.evolve(cluster, queued=(late, other))
    expected = fair_share(cluster)
    assert expected.start == (6_000,) and expected.preempt == (999,)
    ranked.clear()
    assert state.decide(2_001, 0, EventKind.ARRIVAL, None) == expected and ranked == [1]
    state.ended(6_000)
    ranked.clear()
    assert state.decide(2_002, 0, EventKind.ARRIVAL, None) == Decision() and ranked == []


def test_fsh4_several_tenants_read_the_ranking_only_as_far_as_it_can_change() -> None:
    """FSH-4: tenants a and b run five 1-GPU jobs each on 10 GPUs and queue 500 each; a job
    of a new tenant c arrives: the decision (the policy's: c's job starts, b's latest running
    job is preempted) reads the ranking only up to the last running job and c's job."""
    running = [job_view(i, submit=i, tenant=t, running_since=100) for i in range(5) for t in "ab"]
    running = [attrs.evolve(v, job_id=v.job_id * 2 + (v.tenant == "b")) for v in running]
    queued = [job_view(1_000 + i, submit=10 + i, tenant=t) for i in range(500) for t in "ab"]
    queued = [attrs.evolve(v, job_id=v.job_id * 2 + (v.tenant == "b")) for v in queued]
    new = job_view(9_999, submit=600, tenant="c")
    state = fair_share.start_run(10)
    for view in running:
        state.started(view)
    for view in [*queued, new]:
        state.queued(view)
    read: list[int] = []

    class Counting(dict[int, JobView]):
        """The queued jobs, counting lookups: the walk looks up each job it reads once."""

        def get(self, key: int, default: Any = None) -> Any:
            read.append(key)
            return super().get(key, default)

    assert isinstance(state, fairshare.FairShareState)
    state._queued = Counting(state._queued)
    decided = state.decide(600, 0, EventKind.ARRIVAL, None)
    queued_order = sorted([*queued, new], key=lambda v: (v.submit_time, v.job_id))
    expected = fair_share(cluster_view(total=10, running=running, queued=queued_order, time=600))
    assert decided == expected
    assert decided.start == (9_999,) and decided.preempt == (9,)
    assert len(set(read)) <= 13  # the jobs read (each looked up once a read)


def test_fsh4_one_tenant_keeps_no_per_tenant_order_until_a_second_tenant_is_active(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-4: while one tenant is active the state builds no per-tenant order; when a job of
    a second tenant arrives it is built from the active jobs, and the decisions are the
    policy's before and after (and once that tenant is gone)."""
    built: list[int] = []

    class Counted(SortedList):  # type: ignore[type-arg]
        def __init__(self, *args: Any) -> None:
            built.append(1)
            super().__init__(*args)

    monkeypatch.setattr(fairshare, "SortedList", Counted)
    running = [job_view(i, submit=i, running_since=i, gpus=2) for i in range(5)]
    queued = [job_view(10 + i, submit=10 + i, gpus=3) for i in range(4)]
    state = fair_share.start_run(10)
    for view in running:
        state.started(view)
    for view in queued:
        state.queued(view)
    cluster = cluster_view(total=10, running=running, queued=queued, time=20)
    assert state.decide(20, 0, EventKind.ARRIVAL, None) == fair_share(cluster)
    assert built == []
    other = job_view(99, submit=21, tenant="b", gpus=3)
    state.queued(other)
    assert built  # a's order and b's
    cluster = attrs.evolve(cluster, queued=(*queued, other), time=21)
    expected = fair_share(cluster)
    assert expected.start == (99,) and expected.preempt == (3, 4)
    assert state.decide(21, 0, EventKind.ARRIVAL, None) == expected
    state.ended(99)
    assert state.decide(22, 0, EventKind.COMPLETION, None) == Decision()


@given(st.lists(st.sampled_from("aab"), min_size=30, max_size=30), st.integers(0, 2**16))
def test_fsh4_the_state_decides_as_the_policy_as_tenants_come_and_go(
    tenants: list[str], seed: int
) -> None:
    """FSH-4, POL-6: jobs of one tenant first, then of several (the per-tenant order built
    mid-run): every decision of the fast engine's state equals the policy's on the same
    cluster (``check=True`` compares them at each decision)."""
    jobs = generate(WorkloadConfig(n_jobs=30, gpus=8, load=1.5), seed=seed).jobs
    jobs = tuple(
        _with_tenant(job, tenant if i >= 10 else "a")
        for i, (job, tenant) in enumerate(zip(jobs, tenants, strict=True))
    )
    sim = FastSimulator(fair_share, 8, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run()
    assert len(sim.log) >= 2 * len(jobs)
