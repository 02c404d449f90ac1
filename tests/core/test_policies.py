"""Base policies: purity, backfilling, preemption, order and the registry (POL-*)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import cluster_view, job_view, log_lines, make_job, simulate
from evalstop.core.boundary import ClusterView, JobView
from evalstop.core.decision import Decision
from evalstop.core.policies import (
    BASE_POLICIES,
    LAS_THRESHOLDS,
    BasePolicy,
    PriorityPolicy,
    fair_share,
    fifo,
    las,
    loss_aware,
    sjf_est,
    srtf_est,
)
from evalstop.core.registry import base_policy
from evalstop.engine.log import LogKind

NOW = 100

# --- an independent reference of every base policy ---------------------------------------


def attained(job: JobView, now: int) -> int:
    if job.running_since is None:
        return job.service
    return job.service + max(0, now - job.running_since)


def ref_key(name: str, job: JobView, now: int) -> tuple[float, ...]:
    arrival = (float(job.submit_time), float(job.job_id))
    if name == "fifo":
        return arrival
    if name == "sjf-est":
        return (float(job.estimated_duration), *arrival)
    if name == "srtf-est":
        return (float(max(0, job.estimated_duration - attained(job, now))), *arrival)
    if name == "las":
        gpu_seconds = job.gpus * attained(job, now)
        return (float((gpu_seconds >= 3_600) + (gpu_seconds >= 36_000)), *arrival)
    assert name == "loss-aware"
    if job.first_loss is None or job.previous_loss is None or job.last_loss is None:
        return (-math.inf, *arrival)
    scale = abs(job.first_loss) if job.first_loss != 0 else 1.0
    return (-(job.previous_loss - job.last_loss) / scale, *arrival)


def ref_first_fit(jobs: Sequence[JobView], free: int) -> list[JobView]:
    chosen = []
    for job in jobs:
        if job.gpus <= free:
            chosen.append(job)
            free -= job.gpus
    return chosen


def ref_fair_share(jobs: Sequence[JobView]) -> list[JobView]:
    """The FSH-1 order as a greedy: the next job (submit order) of the tenant given least."""
    pending: dict[str, list[JobView]] = {}
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)):
        pending.setdefault(job.tenant, []).append(job)
    given = dict.fromkeys(pending, 0)
    order: list[JobView] = []
    while any(pending.values()):
        tenant = min(
            (t for t in pending if pending[t]),
            key=lambda t: (given[t], pending[t][0].submit_time, pending[t][0].job_id),
        )
        job = pending[tenant].pop(0)
        given[tenant] += job.gpus
        order.append(job)
    return order


def ref_decision(name: str, preemptive: bool, view: ClusterView) -> Decision:
    def key(job: JobView) -> tuple[float, ...]:
        return ref_key(name, job, view.time)

    if name == "fair-share":
        ranked = ref_fair_share([*view.queued, *view.running])
        picked = {j.job_id for j in ref_first_fit(ranked, view.total_gpus)}
        queued = {j.job_id for j in view.queued}
        return Decision(
            start=tuple(j.job_id for j in ranked if j.job_id in picked and j.job_id in queued),
            preempt=tuple(j.job_id for j in view.running if j.job_id not in picked),
        )
    if not preemptive:
        started = ref_first_fit(sorted(view.queued, key=key), view.free_gpus)
        return Decision(start=tuple(j.job_id for j in started))
    ranked = sorted([*view.queued, *view.running], key=key)
    picked = {j.job_id for j in ref_first_fit(ranked, view.total_gpus)}
    queued = {j.job_id for j in view.queued}
    return Decision(
        start=tuple(j.job_id for j in ranked if j.job_id in picked and j.job_id in queued),
        preempt=tuple(j.job_id for j in view.running if j.job_id not in picked),
    )


# --- random views --------------------------------------------------------------------------

LOSS = st.one_of(st.none(), st.floats(-5, 5))


@st.composite
def views(draw: st.DrawFn, *, with_running: bool = True) -> ClusterView:
    """A cluster view with up to 8 jobs (ties in submit time and estimates are common)."""
    n = draw(st.integers(0, 8))
    queued: list[JobView] = []
    running: list[JobView] = []
    for job_id in range(n):
        is_running = with_running and draw(st.booleans())
        first, previous, last = draw(LOSS), draw(LOSS), draw(LOSS)
        if first is None:
            previous = last = None
        elif last is None:
            previous = None
        job = job_view(
            job_id,
            gpus=draw(st.integers(1, 4)),
            submit=draw(st.integers(0, 4)),
            estimate=draw(st.integers(1, 60)),
            service=draw(st.sampled_from([0, 5, 30, 2_000, 20_000, 40_000])),
            running_since=NOW - draw(st.integers(-30, 30)) if is_running else None,
            preemptions=draw(st.integers(0, 2)),
            first_loss=first,
            previous_loss=previous,
            last_loss=last,
            tenant=draw(st.sampled_from(["a", "b", "c"])),
        )
        (running if is_running else queued).append(job)
    queued.sort(key=lambda j: (j.submit_time, j.job_id))
    total = sum(j.gpus for j in running) + draw(st.integers(0, 5))
    return cluster_view(total=max(total, 1), queued=queued, running=running, time=NOW)


POLICIES = sorted(BASE_POLICIES.values(), key=lambda p: p.name)


def gpus_of(view: ClusterView, ids: Sequence[int]) -> int:
    by_id = {j.job_id: j.gpus for j in (*view.queued, *view.running)}
    return sum(by_id[i] for i in ids)


# --- POL-1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
@given(view=views())
def test_pol1_pure_function_of_the_view(policy: BasePolicy, view: ClusterView) -> None:
    """POL-1: equal views give equal decisions; the view is not changed; an equal copy of the
    view (new objects, same values) gives the same decision, and so does calling again."""
    before = copy.deepcopy(view)
    decision = policy(view)
    assert view == before
    assert policy(before) == decision
    assert policy(view) == decision
    rebuilt = attrs.evolve(
        view,
        queued=tuple(attrs.evolve(j) for j in view.queued),
        running=tuple(attrs.evolve(j) for j in view.running),
    )
    assert policy(rebuilt) == decision


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
@given(view=views())
def test_pol1_pol4_policy_matches_reference(policy: BasePolicy, view: ClusterView) -> None:
    """POL-1, POL-4, FSH-1: each policy's decision is what an independent reference of its key
    order (spec table; fair-share as a greedy over tenants) and first fit gives."""
    assert policy(view) == ref_decision(policy.name, policy.preemptive, view)


def test_pol1_policies_have_no_detectors() -> None:
    """POL-1: base policies read only the views; they ask for no detector folds."""
    for policy in BASE_POLICIES.values():
        assert policy.detectors == ()


# --- POL-2 ---------------------------------------------------------------------------------


@given(view=views())
def test_pol2_fifo_never_starts_a_later_arrival_ahead_of_one_that_fits(
    view: ClusterView,
) -> None:
    """POL-2: FIFO scans queued jobs in arrival order; each job not started did not fit in what
    was left at its turn, and the starts fit in the free GPUs."""
    decision = fifo(view)
    started = set(decision.start)
    left = view.free_gpus
    order = sorted(view.queued, key=lambda j: (j.submit_time, j.job_id))
    for job in order:
        if job.job_id in started:
            left -= job.gpus
        else:
            assert job.gpus > left, f"job {job.job_id} fits in {left} but was skipped"
    assert left >= 0
    assert list(decision.start) == [j.job_id for j in order if j.job_id in started]


def test_pol2_backfilling_by_hand() -> None:
    """POL-2: free 3; queue (arrival order) 1: 2 GPUs, 2: 4 GPUs, 3: 1 GPU, 4: 1 GPU.

    1 fits (1 left), 2 does not fit and is skipped, 3 fits (0 left), 4 does not: start (1, 3).
    """
    queued = [
        job_view(1, gpus=2, submit=0),
        job_view(2, gpus=4, submit=1),
        job_view(3, gpus=1, submit=2),
        job_view(4, gpus=1, submit=3),
    ]
    view = cluster_view(total=5, queued=queued, running=[job_view(9, gpus=2, running_since=0)])
    assert fifo(view) == Decision(start=(1, 3))


def test_pol2_fifo_in_the_engine_backfills() -> None:
    """POL-2: on 4 GPUs, a 4-GPU job waits behind a running 2-GPU job; a later 1-GPU job is
    backfilled around it (no reservation), then the big one runs when everything is free."""
    jobs = [
        make_job(1, gpus=2, scores=[0.1, 0.2]),  # runs 0..20
        make_job(2, submit=1, gpus=4, scores=[0.1]),  # needs all 4
        make_job(3, submit=2, gpus=1, scores=[0.1]),  # backfilled at 2, runs 2..12
    ]
    sim = simulate(fifo, jobs, total_gpus=4)
    starts = [(r.time, r.job_id) for r in sim.log if r.kind is LogKind.START]
    assert starts == [(0, 1), (2, 3), (20, 2)]


# --- POL-3 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [fifo, sjf_est], ids=lambda p: p.name)
@given(view=views())
def test_pol3_non_preemptive_never_preempts(policy: PriorityPolicy, view: ClusterView) -> None:
    """POL-3: a non-preemptive policy never preempts and only fills the free GPUs."""
    decision = policy(view)
    assert decision.preempt == ()
    assert decision.stop == ()
    assert gpus_of(view, decision.start) <= view.free_gpus
    assert set(decision.start) <= {j.job_id for j in view.queued}


@pytest.mark.parametrize("policy", [srtf_est, loss_aware, las, fair_share], ids=lambda p: p.name)
@given(view=views())
def test_pol3_preemptive_packs_the_whole_cluster(policy: BasePolicy, view: ClusterView) -> None:
    """POL-3: a preemptive policy's kept and started jobs fit the whole cluster; it preempts
    only running jobs and starts only queued ones; the rest of a running job keeps running."""
    decision = policy(view)
    running = {j.job_id for j in view.running}
    queued = {j.job_id for j in view.queued}
    assert set(decision.preempt) <= running
    assert set(decision.start) <= queued
    kept = running - set(decision.preempt)
    assert gpus_of(view, [*kept, *decision.start]) <= view.total_gpus
    free_after = view.free_gpus + gpus_of(view, decision.preempt)
    assert gpus_of(view, decision.start) <= free_after


def test_pol3_srtf_preempts_the_longest_remaining() -> None:
    """POL-3: 2 GPUs; running A (remaining 90) and B (remaining 5); queued C (remaining 10).

    Ranked B, C, A: B and C fill the cluster, A is preempted and C started.
    """
    a = job_view(1, estimate=100, service=10, running_since=NOW)
    b = job_view(2, estimate=100, service=95, running_since=NOW)
    c = job_view(3, estimate=10, submit=5)
    view = cluster_view(total=2, running=[a, b], queued=[c], time=NOW)
    assert srtf_est(view) == Decision(start=(3,), preempt=(1,))
    assert sjf_est(view) == Decision()  # non-preemptive: nothing free, nothing happens


def test_pol3_preemption_pays_overhead_in_the_engine() -> None:
    """POL-3, ENG-11: a long job preempted by a short one resumes after the overhead."""
    jobs = [
        make_job(1, scores=[0.1, 0.2, 0.3, 0.4], estimate=1_000),  # 40 s of work
        make_job(2, submit=5, scores=[0.5], estimate=10),  # 10 s of work
    ]
    sim = simulate(srtf_est, jobs, total_gpus=1)
    assert log_lines(sim.log) == [
        (0, "arrive", 1),
        (0, "start", 1),
        (5, "arrive", 2),
        (5, "preempt", 1),
        (5, "start", 2),
        (15, "checkpoint", 2),
        (15, "finish", 2),
        (15, "start", 1),  # holds the GPU 15..45 restoring, then 5 s to checkpoint 1
        (50, "checkpoint", 1),
        (60, "checkpoint", 1),
        (70, "checkpoint", 1),
        (80, "checkpoint", 1),
        (80, "finish", 1),
    ]


# --- POL-4 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        (sjf_est, lambda j: j.estimated_duration),
        (srtf_est, lambda j: max(0, j.estimated_duration - attained(j, NOW))),
        (las, lambda j: sum(j.gpus * attained(j, NOW) >= t for t in LAS_THRESHOLDS)),
    ],
    ids=["sjf-est", "srtf-est", "las"],
)
@given(view=views(with_running=False))
def test_pol4_smallest_estimate_or_level_first(
    policy: PriorityPolicy, key: Callable[[JobView], float], view: ClusterView
) -> None:
    """POL-4: among queued jobs that fit, the first started has the smallest estimate
    (sjf-est), estimated remaining (srtf-est) or attained-service level (las)."""
    fitting = [j for j in view.queued if j.gpus <= view.free_gpus]
    decision = policy(view)
    if not fitting:
        assert decision.start == ()
        return
    first = next(j for j in view.queued if j.job_id == decision.start[0])
    assert key(first) == min(key(j) for j in fitting)
    keys = [key(next(j for j in view.queued if j.job_id == i)) for i in decision.start]
    assert keys == sorted(keys)


def test_pol4_by_hand() -> None:
    """POL-4: one GPU, three queued jobs; each policy starts its own favourite.

    1: submitted first, estimate 50, no service, one loss.
    2: estimate 10, 2 GPU-hours attained (LAS level 1), loss drop (2 - 1) / |2| = 0.5.
    3: estimate 30, service 25 (remaining 5), loss drop (0.9 - 0.8) / |1| = 0.1.
    """
    one = job_view(1, submit=0, estimate=50, first_loss=1.0, last_loss=1.0)
    two = job_view(
        2, submit=1, estimate=10, service=7_200, first_loss=2.0, previous_loss=2.0, last_loss=1.0
    )
    three = job_view(
        3, submit=2, estimate=30, service=25, first_loss=1.0, previous_loss=0.9, last_loss=0.8
    )
    view = cluster_view(total=1, queued=[one, two, three], time=NOW)
    assert fifo(view).start == (1,)
    assert sjf_est(view).start == (2,)
    assert srtf_est(view).start == (2,)  # 7,200 s attained > estimate: remaining 0
    assert las(view).start == (1,)  # level 0, earlier than 3 (also level 0)
    assert loss_aware(view).start == (1,)  # fewer than two losses ranks first
    without_one = cluster_view(total=1, queued=[two, three], time=NOW)
    assert loss_aware(without_one).start == (2,)  # drop 0.5 > 0.1
    assert las(without_one).start == (3,)


def test_pol4_loss_aware_drop_over_a_first_loss_of_zero_is_not_scaled() -> None:
    """POL-4: the recent loss drop is divided by |first loss|, but by 1 when that is 0: a
    job whose loss went 0 -> 0.5 -> 0 dropped 0.5, more than one that dropped 0.3 of 1."""
    zero = job_view(1, first_loss=0.0, previous_loss=0.5, last_loss=0.0)
    one = job_view(2, first_loss=-1.0, previous_loss=-0.5, last_loss=-0.8)
    assert zero.recent_loss_drop() == 0.5
    assert one.recent_loss_drop() == pytest.approx(0.3)
    assert loss_aware(cluster_view(total=1, queued=[one, zero], time=NOW)).start == (1,)


def test_pol4_loss_aware_drop_is_divided_by_the_first_loss() -> None:
    """POL-4: a job whose loss fell 2 -> 1 from a first loss of 2 dropped 0.5, less than one
    that fell 1 -> 0.2 from 1 (0.8), so the second goes first."""
    half = job_view(1, first_loss=2.0, previous_loss=2.0, last_loss=1.0)
    most = job_view(2, first_loss=1.0, previous_loss=1.0, last_loss=0.2)
    assert half.recent_loss_drop() == 0.5
    assert most.recent_loss_drop() == pytest.approx(0.8)
    assert loss_aware(cluster_view(total=1, queued=[half, most], time=NOW)).start == (2,)


def test_pol4_ties_by_submit_time_then_id() -> None:
    """POL-4: equal keys fall back to submit time, then job id."""
    jobs = [job_view(5, submit=1), job_view(3, submit=1), job_view(4, submit=0)]
    view = cluster_view(total=3, queued=sorted(jobs, key=lambda j: (j.submit_time, j.job_id)))
    for policy in BASE_POLICIES.values():
        assert policy(view).start == (4, 3, 5)


# --- POL-5 ---------------------------------------------------------------------------------


def test_pol5_registry() -> None:
    """POL-5: base_policy(name) returns the policy of that name."""
    assert sorted(BASE_POLICIES) == [
        "fair-share",
        "fifo",
        "las",
        "loss-aware",
        "sjf-est",
        "srtf-est",
    ]
    for name, policy in BASE_POLICIES.items():
        assert base_policy(name) is policy
        assert policy.name == name
    assert [p.preemptive for p in (fifo, sjf_est, srtf_est, loss_aware, las, fair_share)] == [
        False,
        False,
        True,
        True,
        True,
        True,
    ]


def test_pol5_unknown_name_raises_key_error_naming_choices() -> None:
    """POL-5: an unknown name raises KeyError naming it and every choice."""
    with pytest.raises(KeyError) as info:
        base_policy("nope")
    message = str(info.value)
    assert "nope" in message
    for name in BASE_POLICIES:
        assert name in message


def test_pol4_an_overrun_job_has_zero_remaining_not_one() -> None:
    """POL-4: a job that has run past its estimate has an estimated remaining time of 0 (the
    estimate is clamped at zero, not at one second), so srtf-est ranks it before a job with
    one second left that was submitted earlier."""
    one_left = job_view(1, submit=0, estimate=11, service=10)
    overrun = job_view(2, submit=5, estimate=10, service=50)
    assert one_left.estimated_remaining(NOW) == 1 and overrun.estimated_remaining(NOW) == 0
    view = cluster_view(total=1, queued=[one_left, overrun], time=NOW)
    assert srtf_est(view).start == (2,)


def test_pol4_srtf_jobs_past_their_estimate_tie_at_zero_remaining() -> None:
    """POL-4: srtf-est's key is max(0, estimate - service), so two queued jobs that both ran
    past their estimate have remaining 0 and go in submit order, however far past they are."""
    early = job_view(1, submit=0, estimate=10, service=50)
    late = job_view(2, submit=1, estimate=10, service=900)
    assert srtf_est(cluster_view(total=1, queued=[late, early], time=NOW)).start == (1,)
