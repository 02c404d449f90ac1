"""The fair-share base policy: max-min share between tenants (FSH-*, TAB-5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import cluster_view, job_view, log_lines, make_job, simulate
from evalstop.core import fairshare
from evalstop.core.boundary import EventKind
from evalstop.core.decision import Decision
from evalstop.core.fairshare import fair_share, fair_share_ranking
from evalstop.core.model import Job
from evalstop.core.ranking import RunningTail
from evalstop.core.registry import make_policy
from evalstop.core.tenantorder import TenantOrder
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
    without ranking every active job; a second tenant's job sends it to the tenants' orders,
    which decide from then on, also once that tenant is gone."""
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

    def counting(self: fairshare.FairShareState, first: Any = None) -> Decision:
        ranked.append(1)
        return original(self, first)

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
    assert state.decide(2_002, 0, EventKind.ARRIVAL, None) == Decision() and ranked == [1]


def test_fsh4_several_tenants_read_the_ranking_only_as_far_as_it_can_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-4: tenants a and b run five 1-GPU jobs each on 10 GPUs and queue 500 each; a job
    of a new tenant c arrives: the decision (the policy's: c's job starts, b's latest running
    job is preempted) computes no queued job's key but the tenants' first ones (kept between
    decisions) and reads only a few running jobs from the lowest ranked up."""
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
    keyed: list[int] = []
    drawn: list[int] = []
    key = TenantOrder.key

    def counting_key(self: TenantOrder, i: int) -> Any:
        keyed.append(i)
        return key(self, i)

    def counting_tail(source: Iterator[Any]) -> RunningTail:
        def draw() -> Iterator[Any]:
            for entry in source:
                drawn.append(1)
                yield entry

        return RunningTail(draw())

    monkeypatch.setattr(TenantOrder, "key", counting_key)
    monkeypatch.setattr(fairshare, "RunningTail", counting_tail)
    decided = state.decide(600, 0, EventKind.ARRIVAL, None)
    queued_order = sorted([*queued, new], key=lambda v: (v.submit_time, v.job_id))
    expected = fair_share(cluster_view(total=10, running=running, queued=queued_order, time=600))
    assert decided == expected
    assert decided.start == (9_999,) and decided.preempt == (9,)
    assert len(keyed) <= 2 and len(drawn) <= 3, (keyed, drawn)


def _count_tenant_orders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets one item each time the state builds a per-tenant order (FSH-4)."""
    built: list[int] = []

    class Counted(TenantOrder):
        def __init__(self) -> None:
            built.append(1)
            super().__init__()

    monkeypatch.setattr(fairshare, "TenantOrder", Counted)
    return built


def test_fsh4_one_tenant_keeps_no_per_tenant_order_until_a_second_tenant_is_active(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-4: while one tenant is active the state builds no per-tenant order; when a job of
    a second tenant arrives it is built from the active jobs, and the decisions are the
    policy's before and after (and once that tenant is gone)."""
    built = _count_tenant_orders(monkeypatch)
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


def test_fsh5_an_arrival_that_fits_nowhere_decides_nothing_without_a_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-5: tenants a and b hold all 8 GPUs (the last decision applied); a job of a, which
    ranks after every running job, arrives: nothing fits, decided without a walk. A job of a
    new tenant c, ranked first, fits by preempting b's last job: the decision walks on from it
    (its first change), and is the policy's."""
    running = [job_view(i, submit=i, tenant="ab"[i % 2], running_since=0) for i in range(8)]
    state = fair_share.start_run(8)
    for view in running:
        state.started(view)
    walked: list[int | None] = []  # each walk's first change, when known
    original = fairshare.FairShareState._walk

    def counting(self: fairshare.FairShareState, first: Any = None) -> Decision:
        walked.append(None if first is None else first[0][-1])
        return original(self, first)

    monkeypatch.setattr(fairshare.FairShareState, "_walk", counting)
    assert state.decide(8, 0, EventKind.ARRIVAL, None) == Decision()  # settles
    late = job_view(20, submit=9, tenant="a")
    state.queued(late)
    walked.clear()
    cluster = cluster_view(total=8, running=running, queued=[late], time=9)
    assert state.decide(9, 0, EventKind.ARRIVAL, None) == fair_share(cluster) == Decision()
    assert walked == []
    new = job_view(21, submit=10, tenant="c")
    state.queued(new)
    cluster = attrs.evolve(cluster, queued=(late, new), time=10)
    expected = fair_share(cluster)
    assert expected.start == (21,) and expected.preempt == (7,)
    assert state.decide(10, 0, EventKind.ARRIVAL, None) == expected and walked == [21]


def _tenanted(draw: st.DrawFn) -> tuple[tuple[Job, ...], int, list[int]]:
    n = draw(st.integers(5, 60))
    gpus = draw(st.sampled_from([4, 8, 16]))
    load = draw(st.sampled_from([0.8, 1.5, 3.0]))
    seed = draw(st.integers(0, 2**16))
    jobs = generate(WorkloadConfig(n_jobs=n, gpus=gpus, load=load), seed=seed).jobs
    tenants = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    coarse = draw(st.sampled_from([1, 200]))  # 200: many jobs submitted at the same time
    jobs = tuple(
        Job(
            attrs.evolve(job.spec, tenant=t, submit_time=job.spec.submit_time // coarse * coarse),
            job.truth,
            job.observations,
        )
        for job, t in zip(jobs, tenants, strict=True)
    )
    order = draw(st.permutations(range(n)))  # submitted in any order: ties arrive in it
    return jobs, gpus, order


@given(st.composite(_tenanted)(), st.sampled_from(["fair-share", "evalstop+fair-share"]))
def test_fsh4_fsh5_several_tenants_decide_as_the_policy(
    work: tuple[tuple[Job, ...], int, list[int]], system: str
) -> None:
    """FSH-4, FSH-5, POL-6: up to four tenants, jobs submitted at the same times and in any
    order (a job can join its tenant's order before one it follows: rebuilt), deep queues and
    preemptions: every decision of the fast engine's state equals the policy's on the same
    cluster (``check=True`` compares them at each decision)."""
    jobs, gpus, order = work
    sim = FastSimulator(make_policy(system), gpus, check=True)
    for i in order:
        sim.submit(jobs[i])
    sim.run()
    assert len(sim.log) >= 2 * len(jobs)


@given(
    st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.booleans()), min_size=1, max_size=40),
    st.integers(0, 60),
    st.integers(0, 3),
)
def test_fsh4_a_tenant_order_finds_keys_as_a_sum_over_its_active_jobs(
    jobs: list[tuple[int, bool, bool]], bound: int, seen: int
) -> None:
    """FSH-4: a tenant's order (Fenwick tree) gives each active job's key (GPUs of the
    active jobs before it, submit, id), the last position whose jobs ask for fewer than a
    bound, and the first queued job of a demand ranked after a key, as sums over its active
    jobs do."""
    order = TenantOrder()
    active: dict[int, int] = {}
    for job_id, (gpus, _ends, queued) in enumerate(jobs):
        i = order.append(job_id, job_id, gpus)
        assert i == job_id + 1
        active[i] = gpus
        if queued:
            order.queued.setdefault(gpus, []).append(i)
    for i, (gpus, ends, queued) in enumerate(jobs, start=1):
        if ends:
            order.add(i, -gpus)
            del active[i]
            if queued:
                order.queued[gpus].remove(i)
    for i in active:
        assert order.key(i) == (sum(g for j, g in active.items() if j < i), i - 1, i - 1)
    below = max(
        [m for m in range(len(jobs) + 1) if sum(active.get(j, 0) for j in range(1, m + 1)) < bound],
        default=-1,
    )
    assert order.below(bound) == below
    at = (bound, seen, seen)
    for gpus, indices in order.queued.items():
        later = [order.key(i) for i in indices if order.key(i) > at]
        assert order.after(gpus, at) == (min(later) if later else None)


@pytest.mark.parametrize("tenants", ["a", "ab", "abcd"])
def test_fsh6_the_state_takes_its_starts_and_is_not_told_them(
    tenants: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FSH-6, POL-10: fair share's state (alone and wrapped) says ``keeps_starts``; in a run
    with queues and preemptions the fast engine never calls its ``started``, and every
    decision is still the policy's (``check=True`` compares them at each decision)."""
    told: list[int] = []
    original = fairshare.FairShareState.started

    def counting(self: fairshare.FairShareState, job: Any) -> None:
        told.append(job.job_id)
        original(self, job)

    monkeypatch.setattr(fairshare.FairShareState, "started", counting)
    jobs = generate(WorkloadConfig(n_jobs=40, gpus=8, load=2.0), seed=3).jobs
    jobs = tuple(_with_tenant(job, tenants[i % len(tenants)]) for i, job in enumerate(jobs))
    for system in ("fair-share", "evalstop+fair-share"):
        policy = make_policy(system)
        state = policy.start_run(8)  # type: ignore[attr-defined]
        assert state.keeps_starts
        sim = FastSimulator(policy, 8, check=True)
        for job in jobs:
            sim.submit(job)
        sim.run()
        assert sum(1 for r in sim.log if r.kind.name == "PREEMPT") > 0
        assert told == []


@given(st.composite(_tenanted)())
def test_fsh4_each_demands_least_first_queued_job_is_kept_as_tenants_change(
    work: tuple[tuple[Job, ...], int, list[int]],
) -> None:
    """FSH-4: at every walk the kept heads (per GPU demand, fewest GPUs first, the least of the
    tenants' first queued jobs) are those of the tenants' first jobs as they stand, through
    arrivals, starts, preemptions, ends and rebuilt orders; so is each tenant's lowest ranked
    running job, where the merge of the running orders starts."""
    jobs, gpus, order = work
    original = fairshare.FairShareState._walk

    def checked(self: fairshare.FairShareState, first: Any = None) -> Decision:
        heads = self._heads
        assert list(self._least.items()) == [(g, min(heads[g].values())) for g in sorted(heads)]
        assert self._tenants is not None
        lows = {
            n: (-o.run[-1][0], -o.run[-1][1], -o.run[-1][2], -1, o.run)
            for n, o in self._tenants.items()
            if o.run
        }
        assert self._lows == lows and all(self._lows[n][4] is lows[n][4] for n in lows)
        return original(self, first)

    fairshare.FairShareState._walk = checked  # type: ignore[method-assign]
    try:
        sim = FastSimulator(fair_share, gpus, check=True)
        for i in order:
            sim.submit(jobs[i])
        sim.run()
    finally:
        fairshare.FairShareState._walk = original  # type: ignore[method-assign]


def test_fsh4_another_tenant_alone_after_the_first_drained_stays_one_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FSH-4: a job of tenant b that comes when every job of tenant a has ended is the one
    tenant's: no per-tenant order is built, and the decisions are the policy's; a job of a
    that comes while b's are active builds them."""
    built = _count_tenant_orders(monkeypatch)
    state = fair_share.start_run(4)
    first = job_view(1, submit=0, gpus=2)
    state.queued(first)
    assert state.decide(0, 4, EventKind.ARRIVAL, None) == Decision(start=(1,))
    state.ended(1)
    assert state.decide(5, 4, EventKind.COMPLETION, None) == Decision()
    other = [job_view(2, submit=6, tenant="b", gpus=3), job_view(3, submit=7, tenant="b")]
    state.queued(other[0])
    state.queued(other[1])
    cluster = cluster_view(total=4, queued=other, time=7)
    assert state.decide(7, 4, EventKind.ARRIVAL, None) == fair_share(cluster)
    assert fair_share(cluster).start == (2, 3)
    assert built == []
    running = [attrs.evolve(view, running_since=7) for view in other]
    late = job_view(4, submit=8, tenant="a")
    state.queued(late)
    assert len(built) == 2  # b's order and a's
    cluster = cluster_view(total=4, running=running, queued=[late], time=8)
    expected = fair_share(cluster)
    assert expected.start == (4,) and expected.preempt == (3,)
    assert state.decide(8, 0, EventKind.ARRIVAL, None) == expected
