"""The engine: hand-worked schedules and properties of random workloads (ENG-*)."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import Recorder, Scripted, log_lines, make_job, records_of, simulate
from evalstop import EngineError, InvalidDecisionError
from evalstop.core.boundary import EventKind
from evalstop.core.decision import Decision, StopOrder
from evalstop.core.detectors import DeclineDetector
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import BASE_POLICIES, fifo, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.wrapper import evalstop
from evalstop.engine import (
    ActiveJob,
    JobStatus,
    Scenario,
    SimState,
    Simulator,
    check_invariants,
    initial_state,
    step,
)
from evalstop.engine.events import Event
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import LogKind

# --- shared checks over a finished run ------------------------------------------------------


def replay_checks(sim: Simulator, overhead: int) -> None:
    """Independent checks of a whole log: GPU use (ENG-3, ENG-6), ended is final (ENG-5),
    monotone time (ENG-1), drain (ENG-9) and exact service accounting (ENG-11, ENG-12)."""
    jobs = sim.world.jobs
    total = sim.state.total_gpus
    in_use = 0
    running: set[int] = set()
    ended: set[int] = set()
    arrived: set[int] = set()
    service: dict[int, int] = {}
    progress_from: dict[int, int] = {}
    resumed: dict[int, bool] = {}
    last_time = 0
    for record in sim.log:
        job_id, t = record.job_id, record.time
        assert t >= last_time  # ENG-1
        last_time = t
        assert job_id not in ended, f"{record} after the job ended"  # ENG-5
        gpus = jobs[job_id].spec.gpus
        if record.kind is LogKind.ARRIVE:
            arrived.add(job_id)
            service[job_id] = 0
        elif record.kind is LogKind.START:
            assert job_id in arrived and job_id not in running
            running.add(job_id)
            in_use += gpus
            progress_from[job_id] = t + (overhead if resumed.get(job_id) else 0)
        elif record.kind is LogKind.PREEMPT:
            running.remove(job_id)
            in_use -= gpus
            service[job_id] += max(0, t - progress_from.pop(job_id))
            resumed[job_id] = True
        elif record.kind is LogKind.CHECKPOINT:
            assert job_id in running
            reached = service[job_id] + t - progress_from[job_id]
            assert reached == jobs[job_id].checkpoint_service(record.index)  # ENG-12
        elif record.kind in (LogKind.FINISH, LogKind.STOP):
            if job_id in running:
                running.remove(job_id)
                in_use -= gpus
            else:
                assert record.kind is LogKind.STOP  # a queued job can be stopped, not finish
            ended.add(job_id)
        assert 0 <= in_use <= total  # ENG-3, ENG-6
    assert ended == arrived == set(jobs)  # ENG-9
    assert not running
    for record in records_of(sim.log, LogKind.FINISH):  # after exactly its true duration
        assert record.index == jobs[record.job_id].checkpoints


SCORE = st.one_of(st.integers(0, 3).map(float), st.just(math.nan))


@st.composite
def workloads(draw: st.DrawFn, total_gpus: int = 4) -> list[Job]:
    """Up to 7 small jobs, submit times in [0, 12] (many ties), any kind."""
    jobs = []
    for job_id in range(draw(st.integers(1, 7))):
        n = draw(st.integers(1, 4))
        jobs.append(
            make_job(
                job_id,
                submit=draw(st.integers(0, 12)),
                gpus=draw(st.integers(1, total_gpus)),
                scores=draw(st.lists(SCORE, min_size=n, max_size=n)),
                duration=draw(st.integers(n, 6 * n)),
                estimate=draw(st.integers(1, 40)),
                kind=draw(st.sampled_from(list(JobKind))),
            )
        )
    return jobs


def policies() -> st.SearchStrategy[Policy]:
    base = st.sampled_from(sorted(BASE_POLICIES)).map(lambda name: BASE_POLICIES[name])
    wrapped = st.builds(
        lambda b, k: evalstop(b, DeclineDetector(k), kinds=frozenset(JobKind)),
        base,
        st.integers(1, 2),
    )
    return st.one_of(base, wrapped)


@given(jobs=workloads(), policy=policies(), overhead=st.sampled_from([0, 3, 30]))
def test_eng3_eng4_eng5_eng6_eng9_eng12_random_workloads(
    jobs: list[Job], policy: Policy, overhead: int
) -> None:
    """ENG-3, ENG-4, ENG-5, ENG-6, ENG-9, ENG-11, ENG-12: random workloads under every base
    policy, with and without EvalStop: the invariants hold after every event (check=True),
    the log replays to a sound GPU count and exact service, and everything ends."""
    sim = simulate(policy, jobs, total_gpus=4, preemption_overhead=overhead)
    assert not sim.state.active and not sim.state.queued and not sim.state.running
    assert sim.state.free_gpus == 4
    assert sim.state.ended_count == len(jobs)
    replay_checks(sim, overhead)


@attrs.frozen(eq=False)
class Always:
    """``base`` without its ``needs_decision`` hook: the engine consults it at every event."""

    base: Policy

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def detectors(self) -> tuple[Any, ...]:
        return self.base.detectors

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: Any) -> Decision:
        return self.base(view)


@given(jobs=workloads(), policy=policies(), overhead=st.sampled_from([0, 30]))
def test_eng13_skipped_decisions_would_change_nothing(
    jobs: list[Job], policy: Policy, overhead: int
) -> None:
    """ENG-13: a policy's needs_decision hook only saves work: consulting the same policy at
    every event gives the same log, for every base policy, with and without EvalStop."""
    assert hasattr(policy, "needs_decision")
    skipping = simulate(policy, jobs, total_gpus=4, preemption_overhead=overhead)
    always = simulate(Always(policy), jobs, total_gpus=4, preemption_overhead=overhead)
    assert repr(skipping.log) == repr(always.log)  # repr: NaN scores compare unequal


# --- ENG-1 -----------------------------------------------------------------------------------


def test_eng1_event_before_the_clock_is_an_error() -> None:
    """ENG-1: step refuses an event earlier than the clock; the clock moves to the event."""
    world = Scenario({1: make_job(1)}, fifo)
    state = attrs.evolve(initial_state(2), time=10)
    with pytest.raises(EngineError, match="before the clock"):
        step(world, state, Event(9, EventKind.ARRIVAL, 1))
    moved = step(world, state, Event(12, EventKind.ARRIVAL, 1)).state
    assert moved.time == 12


def test_eng1_submission_before_the_clock_is_an_error() -> None:
    """ENG-1: a job cannot be submitted into the past; at the current second it can."""
    sim = Simulator(fifo, 1)
    sim.submit(make_job(1))
    sim.run(horizon=15)
    assert sim.state.time == 10
    with pytest.raises(EngineError, match="before the clock"):
        sim.submit(make_job(2, submit=9))
    sim.submit(make_job(3, submit=10))
    sim.run()
    assert sim.state.ended_jobs() == {1: JobStatus.FINISHED, 3: JobStatus.FINISHED}


def test_eng1_unknown_and_duplicate_jobs() -> None:
    """ENG-1: events for an unknown job and a second submission of a job are errors."""
    with pytest.raises(EngineError, match="unknown job"):
        step(Scenario({}, fifo), initial_state(1), Event(0, EventKind.ARRIVAL, 7))
    sim = Simulator(fifo, 1)
    sim.submit(make_job(1))
    with pytest.raises(EngineError, match="submitted twice"):
        sim.submit(make_job(1, submit=3))


# --- ENG-2 -----------------------------------------------------------------------------------


def test_eng2_completion_then_checkpoint_then_arrival_at_equal_time() -> None:
    """ENG-2: at t=10, job 1 completes (rank 0), job 2 checkpoints (rank 1) and job 3 arrives
    (rank 2), in that order although job 3 was submitted first. Job 3 then gets the GPU job 1
    freed at the same second."""
    jobs = [
        make_job(3, submit=10, scores=[0.1]),
        make_job(1, scores=[0.1]),  # 10 s: completes at 10
        make_job(2, scores=[0.1, 0.2]),  # checkpoint 1 at 10, completion at 20
    ]
    sim = simulate(fifo, jobs, total_gpus=2)
    assert [line for line in log_lines(sim.log) if line[0] == 10] == [
        (10, "checkpoint", 1),
        (10, "finish", 1),
        (10, "checkpoint", 2),
        (10, "arrive", 3),
        (10, "start", 3),
    ]


def test_eng2_equal_rank_ties_in_scheduling_order() -> None:
    """ENG-2: equal time and rank: the event scheduled first is handled first.

    Jobs 5 and 4 arrive at t=0 in that submission order (ARRIVE 5 first); both fit, and each
    is started in the event of its own arrival, so 5 starts first and its checkpoints (same
    schedule) come before 4's at every tie. The queue itself is by (submit, id): on a full
    cluster, jobs 7 and 6 arriving at the same second start in id order.
    """
    jobs = [
        make_job(5, scores=[0.1, 0.2]),
        make_job(4, scores=[0.1, 0.2]),
        make_job(7, submit=1, scores=[0.1]),
        make_job(6, submit=1, scores=[0.1]),
    ]
    sim = simulate(fifo, jobs, total_gpus=2)
    assert log_lines(sim.log) == [
        (0, "arrive", 5),
        (0, "start", 5),
        (0, "arrive", 4),
        (0, "start", 4),
        (1, "arrive", 7),
        (1, "arrive", 6),
        (10, "checkpoint", 5),
        (10, "checkpoint", 4),
        (20, "checkpoint", 5),
        (20, "finish", 5),
        (20, "start", 6),
        (20, "checkpoint", 4),
        (20, "finish", 4),
        (20, "start", 7),
        (30, "checkpoint", 6),
        (30, "finish", 6),
        (30, "checkpoint", 7),
        (30, "finish", 7),
    ]


def test_eng2_event_scheduled_at_its_own_time() -> None:
    """ENG-2: with no preemption overhead, a job preempted at the very second its checkpoint
    falls (t=10: job 1's completion, rank 0, is handled before job 2's checkpoint, rank 1, and
    the 3-GPU job 3 takes the cluster) resumes with that checkpoint already due: restarted by
    job 4's arrival (rank 2) at t=15, its checkpoint is scheduled at t=15 and handled right
    after the arrival, whatever its rank."""
    jobs = [
        make_job(1, scores=[0.1], estimate=1, duration=10),
        make_job(2, scores=[0.1, 0.2], estimate=50, duration=20),
        make_job(3, gpus=3, scores=[0.1], estimate=20, duration=30),
        make_job(4, submit=15, scores=[0.1], estimate=1, duration=5),
    ]
    sim = simulate(srtf_est, jobs, total_gpus=3, preemption_overhead=0)
    lines = log_lines(sim.log)
    assert [line for line in lines if line[0] in (10, 15)] == [
        (10, "checkpoint", 1),
        (10, "finish", 1),
        (10, "preempt", 2),  # its checkpoint 1 (t=10, rank 1) is now stale (ENG-7)
        (10, "start", 3),
        (15, "arrive", 4),
        (15, "preempt", 3),
        (15, "start", 4),
        (15, "start", 2),
        (15, "checkpoint", 2),  # scheduled at t=15 by the arrival's transition
    ]
    replay_checks(sim, 0)


@given(jobs=workloads(), policy=policies())
def test_eng2_deterministic(jobs: list[Job], policy: Policy) -> None:
    """ENG-2: the same workload gives the same log, run after run."""
    first = simulate(policy, jobs, total_gpus=4).log
    second = simulate(policy, jobs, total_gpus=4).log
    assert repr(first) == repr(second)  # repr: NaN scores compare unequal


# --- ENG-3, ENG-4, ENG-6: the checker itself ------------------------------------------------


def sound_state() -> tuple[SimState, dict[int, Job]]:
    """At t=10 on 4 GPUs: job 1 running (2 GPUs), job 2 (3 GPUs) queued, job 3 finished."""
    jobs = {1: make_job(1, gpus=2), 2: make_job(2, gpus=3, submit=1), 3: make_job(3, scores=[1])}
    sim = Simulator(fifo, 4, check=True)
    for job in jobs.values():
        sim.submit(job)
    sim.run(horizon=10)
    assert sim.state.status(1) is JobStatus.RUNNING
    assert sim.state.status(2) is JobStatus.QUEUED
    assert sim.state.status(3) is JobStatus.FINISHED
    assert sim.state.status(9) is None
    assert check_invariants(sim.state, jobs) == []
    return sim.state, jobs


def test_eng3_checker_catches_lost_gpus() -> None:
    """ENG-3: free + allocated must equal the total."""
    state, jobs = sound_state()
    problems = check_invariants(attrs.evolve(state, free_gpus=state.free_gpus + 1), jobs)
    assert any(p.startswith("ENG-3") for p in problems)


def test_eng6_checker_catches_negative_free() -> None:
    """ENG-6: free GPUs never go negative."""
    state, jobs = sound_state()
    problems = check_invariants(attrs.evolve(state, free_gpus=-1), jobs)
    assert any(p.startswith("ENG-6") for p in problems)


def test_eng4_checker_catches_a_job_in_two_places() -> None:
    """ENG-4: a job in both queued and running, an active map out of step, a bad count."""
    state, jobs = sound_state()
    twice = attrs.evolve(state, queued=(*state.queued, 1))
    assert any(p.startswith("ENG-4") for p in check_invariants(twice, jobs))
    extra = dict(state.active)
    extra[3] = ActiveJob(state.active[2].view, 1, 0, ())
    assert any(
        p.startswith("ENG-4") for p in check_invariants(attrs.evolve(state, active=extra), jobs)
    )
    miscount = attrs.evolve(state, ended_count=state.ended_count + 1)
    assert any(p.startswith("ENG-4") for p in check_invariants(miscount, jobs))
    swapped = attrs.evolve(state, queued=state.running, running=state.queued)
    assert any("running_since" in p for p in check_invariants(swapped, jobs))


def test_eng4_checker_names_each_broken_invariant() -> None:
    """ENG-4, ENG-3: the checker reports exactly the invariants a state breaks, each in its
    own words: a job in two places (also twice in one tuple), a miscount, an active map out
    of step, and queued/running swapped (which also breaks the GPU sum)."""
    state, jobs = sound_state()
    place = "ENG-4: a job is in more than one of queued, running, ended"
    extra = dict(state.active)
    extra[3] = ActiveJob(state.active[2].view, 1, 0, ())
    cases = [
        (
            attrs.evolve(state, queued=(*state.queued, 1)),
            [place, "ENG-4: queued job 1 has a running_since"],
        ),
        (attrs.evolve(state, queued=(2, 2)), [place]),
        (
            attrs.evolve(state, ended_count=state.ended_count + 1),
            ["ENG-4: ended_count disagrees with the ended chain"],
        ),
        (
            attrs.evolve(state, active=extra),
            ["ENG-4: active map disagrees with queued and running"],
        ),
        (
            attrs.evolve(state, queued=state.running, running=state.queued),
            [
                "ENG-3: free 2 + allocated 3 != total 4",
                "ENG-4: running job 2 has no running_since",
                "ENG-4: queued job 1 has a running_since",
            ],
        ),
    ]
    for broken, problems in cases:
        assert check_invariants(broken, jobs) == problems


def test_eng4_each_job_in_one_place() -> None:
    """ENG-4: status() reports exactly one place per arrived job, matching the tuples."""
    state, _ = sound_state()
    assert state.queued == (2,)
    assert state.running == (1,)
    assert state.ended_jobs() == {3: JobStatus.FINISHED}
    assert set(state.active) == {1, 2}


# --- ENG-5 -----------------------------------------------------------------------------------


def test_eng5_ended_is_final() -> None:
    """ENG-5: job 1 (declining) is stopped at its 2nd checkpoint (t=20); its pending checkpoint
    at t=30 is ignored (no log, no policy call); it never appears in a later view."""
    recorder = Recorder(evalstop(fifo, DeclineDetector(1)))
    jobs = [make_job(1, scores=[0.5, 0.4, 0.3, 0.2]), make_job(2, scores=[0.1] * 6)]
    sim = Simulator(recorder, 2, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run(horizon=20)
    assert sim.state.status(1) is JobStatus.STOPPED
    pending = [e for e in sim.queue._items if e[3].job_id == 1]
    assert len(pending) == 1  # the checkpoint scheduled at t=20 for t=30 is still queued
    stale = pending[0][3]
    assert stale.time == 30
    before, calls = sim.state, len(recorder.views)
    transition = step(sim.world, before, stale)
    assert transition.state == attrs.evolve(before, time=30)
    assert transition.events == () and transition.log == ()
    assert len(recorder.views) == calls
    sim.run()
    later = [v for v in recorder.views if v.time > 20]
    assert later
    for view in later:
        assert 1 not in {j.job_id for j in (*view.queued, *view.running)}
    assert [r.kind for r in sim.log if r.job_id == 1][-1] is LogKind.STOP


def test_eng5_a_stopped_queued_job_never_starts() -> None:
    """ENG-5: a queued job stopped by the policy never runs; it frees no GPUs (it held none)."""
    stop_two = Decision(stop=(StopOrder(2, "cancelled"),))
    policy = Scripted(fifo, when=1, decision=stop_two)
    sim = simulate(policy, [make_job(1), make_job(2, submit=1)], total_gpus=1)
    assert sim.state.ended_jobs() == {2: JobStatus.STOPPED, 1: JobStatus.FINISHED}
    assert [r.kind for r in sim.log if r.job_id == 2] == [LogKind.ARRIVE, LogKind.STOP]


# --- ENG-6 -----------------------------------------------------------------------------------


def test_eng6_too_big_job_rejected_at_submission() -> None:
    """ENG-6: a job needing more GPUs than the cluster has is rejected with EngineError."""
    sim = Simulator(fifo, 4)
    with pytest.raises(EngineError, match="needs 5 GPUs"):
        sim.submit(make_job(1, gpus=5))
    assert len(sim.queue) == 0
    with pytest.raises(EngineError, match="needs 5 GPUs"):
        step(
            Scenario({1: make_job(1, gpus=5)}, fifo),
            initial_state(4),
            Event(0, EventKind.ARRIVAL, 1),
        )


def test_eng6_gang_allocation() -> None:
    """ENG-6: a 3-GPU job waits while only 2 are free; it starts when all 3 are."""
    jobs = [make_job(1, gpus=2, scores=[0.1, 0.2]), make_job(2, gpus=3, submit=1)]
    sim = simulate(fifo, jobs, total_gpus=4)
    assert [(r.time, r.job_id) for r in records_of(sim.log, LogKind.START)] == [(0, 1), (20, 2)]


# --- ENG-7 -----------------------------------------------------------------------------------


def test_eng7_stale_checkpoint_of_a_preempted_job() -> None:
    """ENG-7: job 1 (checkpoint 1 due at t=10, epoch 1) is preempted at t=5 and restarted at
    t=15 (epoch 2, resuming at 45, checkpoint 1 at 50). The t=10 event is stale: only the
    clock moves, no log, no policy call."""
    recorder = Recorder(srtf_est)
    jobs = [make_job(1, estimate=1_000), make_job(2, submit=5, scores=[0.5], estimate=10)]
    sim = Simulator(recorder, 1, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run(horizon=9)
    event = sim.queue.peek()
    assert event == Event(10, EventKind.CHECKPOINT, 1, index=1, epoch=1)
    assert sim.state.active[1].epoch == 1
    assert sim.state.status(1) is JobStatus.QUEUED
    before, calls, log_size = sim.state, len(recorder.views), len(sim.log)
    sim.advance()
    assert sim.state == attrs.evolve(before, time=10)
    assert len(recorder.views) == calls
    assert len(sim.log) == log_size
    sim.run()
    checkpoints = [
        (r.time, r.index) for r in sim.log if r.job_id == 1 and r.kind is LogKind.CHECKPOINT
    ]
    assert checkpoints == [(50, 1), (60, 2), (70, 3), (80, 4)]


def test_eng7_stale_checkpoint_of_a_restarted_job() -> None:
    """ENG-7: job 1 is preempted at t=2 and restarted at t=5 (a new epoch) before its old
    checkpoint time t=10: running again, but the t=10 event belongs to the old epoch."""
    jobs = [make_job(1, estimate=1_000), make_job(2, submit=2, scores=[0.5], duration=3)]
    sim = Simulator(srtf_est, 1, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run(horizon=9)
    assert sim.state.status(1) is JobStatus.RUNNING
    assert sim.state.active[1].epoch == 2
    stale = sim.queue.peek()
    assert stale is not None and (stale.time, stale.epoch) == (10, 1)
    before = sim.state
    assert step(sim.world, before, stale).state == attrs.evolve(before, time=10)
    sim.run()
    checkpoints = [r.time for r in sim.log if r.job_id == 1 and r.kind is LogKind.CHECKPOINT]
    assert checkpoints == [43, 53, 63, 73]  # resumes at 5 + 30, 8 s left to checkpoint 1


# --- ENG-8 -----------------------------------------------------------------------------------

# At t=5: job 1 (1 GPU) running, job 4 finished at t=1, job 2 (2 GPUs) queued since t=2, job 5
# (1 GPU) arriving; 1 of 2 GPUs free.
SETUP = [
    make_job(1, scores=[0.1, 0.2, 0.3, 0.4]),
    make_job(4, scores=[0.1], duration=1),
    make_job(2, submit=2, gpus=2),
    make_job(5, submit=5),
]

BAD_DECISIONS = {
    "start unknown": Decision(start=(99,)),
    "start running": Decision(start=(1,)),
    "start ended": Decision(start=(4,)),
    "preempt queued": Decision(preempt=(2,)),
    "preempt ended": Decision(preempt=(4,)),
    "preempt unknown": Decision(preempt=(99,)),
    "stop ended": Decision(stop=(StopOrder(4, "x"),)),
    "stop unknown": Decision(stop=(StopOrder(99, "x"),)),
    "start twice": Decision(start=(5, 5)),
    "stop twice": Decision(stop=(StopOrder(5, "x"), StopOrder(5, "y"))),
    "preempt and start": Decision(start=(1,), preempt=(1,)),
    "stop and start": Decision(start=(5,), stop=(StopOrder(5, "x"),)),
    "stop and preempt": Decision(preempt=(1,), stop=(StopOrder(1, "x"),)),
    "does not fit": Decision(start=(2,)),
    "together do not fit": Decision(start=(2, 5)),
    "stopping a queued job frees nothing": Decision(start=(2,), stop=(StopOrder(5, "x"),)),
    "preemption frees too little": Decision(start=(2, 5), preempt=(1,)),
}


ENGINES = pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])


def simulator_at_five(
    decision: Decision, engine: type[Simulator] | type[FastSimulator] = Simulator
) -> Simulator | FastSimulator:
    sim = engine(Scripted(fifo, when=5, decision=decision), 2, check=True)
    for job in SETUP:
        sim.submit(job)
    sim.run(horizon=4)
    assert sim.state.time == 2  # the last event at or before the horizon: job 2's arrival
    if isinstance(sim, FastSimulator):
        time, _, _, job_id, _, _ = sim.queue[0]
        assert (time, job_id) == (5, 5)
    else:
        assert sim.queue.peek() == Event(5, EventKind.ARRIVAL, 5)
    return sim


@pytest.mark.parametrize("check", [True, False], ids=["checked", "unchecked"])
def test_eng9_fast_engine_stops_at_the_horizon(check: bool) -> None:
    """ENG-9: FastSimulator.run(horizon) handles every event at or before the horizon and no
    later one, checked or not, and leaves the state the pure engine has there."""
    pure = simulator_at_five(Decision())
    for horizon, clock in [(1, 1), (4, 2), (5, 5)]:
        fast = FastSimulator(Scripted(fifo, when=5, decision=Decision()), 2, check=check)
        for job in SETUP:
            fast.submit(job)
        fast.run(horizon=horizon)
        assert fast.state.time == clock
        assert fast.queue[0][0] > horizon
    pure.advance()
    assert fast.state == pure.state
    assert list(fast.log) == list(pure.log)


@pytest.mark.parametrize("name", sorted(BAD_DECISIONS))
def test_eng8_invalid_decision_applies_nothing(name: str) -> None:
    """ENG-8: each kind of bad decision raises InvalidDecisionError; nothing is applied: the
    simulator's state, log and queue are as before (and step itself is pure)."""
    sim = simulator_at_five(BAD_DECISIONS[name])
    assert isinstance(sim, Simulator)
    state, log, pending = sim.state, list(sim.log), list(sim.queue._items)
    snapshot = copy.deepcopy(state)
    event = sim.queue.peek()
    assert event is not None
    with pytest.raises(InvalidDecisionError):
        step(sim.world, state, event)
    with pytest.raises(InvalidDecisionError):
        sim.advance()
    assert sim.state is state and state == snapshot
    assert sim.log == log
    assert list(sim.queue._items) == pending


@pytest.mark.parametrize("name", sorted(BAD_DECISIONS))
def test_eng8_invalid_decision_applies_nothing_in_the_fast_engine(name: str) -> None:
    """ENG-8: the fast engine refuses the same decisions; nothing of the decision is applied
    (its state and log are those of the arrival alone, as the pure engine's after an empty
    decision), and the engine refuses to go on."""
    sim = simulator_at_five(BAD_DECISIONS[name], FastSimulator)
    with pytest.raises(InvalidDecisionError):
        sim.advance()
    arrival_only = simulator_at_five(Decision())
    arrival_only.advance()
    assert sim.state == arrival_only.state
    assert list(sim.log) == list(arrival_only.log)
    with pytest.raises(EngineError, match="broken by an earlier error"):
        sim.run()


@ENGINES
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("stop unknown", "cannot stop job 99: it is not active"),
        ("stop ended", "cannot stop job 4: it is not active"),
        ("preempt queued", "cannot preempt job 2: it is not running"),
        ("preempt unknown", "cannot preempt job 99: it is not running"),
        ("start running", "cannot start job 1: it is not queued"),
        ("start unknown", "cannot start job 99: it is not queued"),
        ("start twice", "a job is named twice in Decision(start=(5, 5), preempt=(), stop=())"),
        ("does not fit", "starts need 2 GPUs but only 1 would be free"),
        ("stopping a queued job frees nothing", "starts need 2 GPUs but only 1 would be free"),
        ("preemption frees too little", "starts need 3 GPUs but only 2 would be free"),
    ],
)
def test_eng8_invalid_decision_names_the_job_and_what_it_is_not(
    engine: type[Simulator] | type[FastSimulator], name: str, message: str
) -> None:
    """ENG-8: the error of a decision naming a job in the wrong place says which job, what the
    decision wanted to do and where the job had to be; one that does not fit says how many
    GPUs the starts need and how many would be free (a stopped queued job frees none)."""
    sim = simulator_at_five(BAD_DECISIONS[name], engine)
    with pytest.raises(InvalidDecisionError, match=f"^{re.escape(message)}$"):
        sim.advance()


@ENGINES
@pytest.mark.parametrize(
    ("decision", "free_after"),
    [
        (Decision(start=(5,)), 0),
        (Decision(start=(2,), preempt=(1,)), 0),  # preemption frees exactly enough
        (Decision(start=(2,), stop=(StopOrder(1, "x"),)), 0),  # so does a stop
        (Decision(stop=(StopOrder(2, "x"), StopOrder(5, "y"))), 1),  # stopping queued jobs
        (Decision(stop=(StopOrder(1, "x"),)), 2),  # stopping a running one
        (Decision(), 1),
    ],
    ids=["fifo", "preempt-start", "stop-start", "stop-queued", "stop-running", "nothing"],
)
def test_eng8_valid_decisions_apply_whole(
    engine: type[Simulator] | type[FastSimulator], decision: Decision, free_after: int
) -> None:
    """ENG-8: decisions within the rules are applied: stops, then preemptions, then starts; a
    stop frees (and logs) the job's GPUs if it was running and none if it was queued."""
    sim = simulator_at_five(decision, engine)
    sim.advance()
    at_five = [(r.kind, r.job_id, r.gpus) for r in sim.log if r.time == 5]
    gpus = {1: 1, 2: 2, 5: 1}
    expected = [(LogKind.ARRIVE, 5, 1)]
    expected += [(LogKind.STOP, o.job_id, gpus[o.job_id] * (o.job_id == 1)) for o in decision.stop]
    expected += [(LogKind.PREEMPT, j, gpus[j]) for j in decision.preempt]
    expected += [(LogKind.START, j, gpus[j]) for j in decision.start]
    assert at_five == expected
    assert sim.state.free_gpus == free_after
    assert check_invariants(sim.state, sim.world.jobs) == []


# --- ENG-9 -----------------------------------------------------------------------------------


@attrs.frozen
class Idle:
    """A policy that never starts anything."""

    name: str = "idle"

    @property
    def detectors(self) -> tuple[Any, ...]:
        return ()

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: Any) -> Decision:
        return Decision()


def test_eng9_drain_ends_every_job() -> None:
    """ENG-9: when the queue drains every arrived job finished or was stopped."""
    jobs = [make_job(i, submit=i, gpus=1 + i % 3, scores=[0.3, 0.2, 0.1, 0.0]) for i in range(6)]
    sim = simulate(evalstop(fifo, DeclineDetector(2)), jobs, total_gpus=3)
    assert len(sim.queue) == 0
    assert set(sim.state.ended_jobs()) == {job.job_id for job in jobs}
    assert set(sim.state.ended_jobs().values()) == {JobStatus.STOPPED}


def test_eng9_a_policy_that_leaves_jobs_waiting_raises() -> None:
    """ENG-9: a policy that never starts a job makes run() raise EngineError at the drain."""
    sim = Simulator(Idle(), 2)
    sim.submit(make_job(1))
    sim.submit(make_job(2, submit=3))
    assert sim.run(horizon=1).queued == (1,)  # a horizon returns early without judging
    with pytest.raises(EngineError, match="2 jobs never ended"):
        sim.run()


@pytest.mark.parametrize("engine", [Simulator, FastSimulator], ids=["pure", "fast"])
def test_eng9_the_drain_error_names_the_first_five_waiting_jobs(engine: type[Simulator]) -> None:
    """ENG-9: the error counts the jobs that never ended and names the first five ids."""
    sim = engine(Idle(), 2)
    for job_id in (9, 3, 7, 1, 5, 2, 8):
        sim.submit(make_job(job_id))
    with pytest.raises(EngineError) as info:
        sim.run()
    assert str(info.value) == (
        "the queue drained with 7 jobs never ended (first: [1, 2, 3, 5, 7]); "
        "the policy left them waiting"
    )


# --- ENG-10 ----------------------------------------------------------------------------------

FINITE_SCORE = st.integers(0, 3).map(float)


@given(
    jobs=workloads(),
    policy=policies(),
    overhead=st.sampled_from([0, 30]),
)
def test_eng10_step_is_pure(jobs: list[Job], policy: Policy, overhead: int) -> None:
    """ENG-10: step never mutates its input (deep copy compared before and after) and gives
    equal transitions for the same world, state and event."""
    jobs = [
        attrs.evolve(
            job,
            observations=[
                attrs.evolve(o, eval_score=float(i % 3)) for i, o in enumerate(job.observations)
            ],
        )
        for job in jobs
    ]  # no NaN: NaN != NaN would make equal states compare unequal
    sim = Simulator(policy, 4, preemption_overhead=overhead)
    for job in jobs:
        sim.submit(job)
    while (event := sim.queue.peek()) is not None:
        before = copy.deepcopy(sim.state)
        first = step(sim.world, sim.state, event)
        second = step(sim.world, sim.state, event)
        assert sim.state == before
        assert first == second
        assert first is not second
        sim.advance()
        assert sim.state == first.state


# --- ENG-11, ENG-12 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overhead", "checkpoints"),
    [
        (30, [65, 75, 85, 95]),  # restoring 15..45 when preempted at 20: still 5 s banked
        (7, [42, 52, 62, 72]),  # restoring 15..22 when preempted at 20: still 5 s banked
        (0, [20, 40, 50, 60]),  # 15..20 is progress: checkpoint 1 at 20, then 30..60
    ],
)
def test_eng11_preemption_keeps_service_and_pays_overhead(
    overhead: int, checkpoints: list[int]
) -> None:
    """ENG-11: job 1 (40 s, checkpoints every 10 s of service) runs 0-5, is preempted by job 2
    (runs 5-15), restarts at 15, is preempted by job 3 at 20 while still restoring when the
    overhead exceeds 5 s, and restarts at 30. Its banked service is exact, a first start pays
    nothing and each resume holds the GPU for the overhead before progress."""
    jobs = [
        make_job(1, estimate=1_000),
        make_job(2, submit=5, scores=[0.5], estimate=10),
        make_job(3, submit=20, scores=[0.5], estimate=10),
    ]
    recorder = Recorder(srtf_est)
    sim = simulate(recorder, jobs, total_gpus=1, preemption_overhead=overhead)
    preempted = [job for v in recorder.views for job in v.queued if job.preemptions]
    # banked service: 5 after the first preemption; after the second, 5 plus what it ran
    # between 15 + overhead and 20
    assert preempted[0].service == 5
    assert preempted[-1].service == 5 + max(0, 20 - (15 + overhead))
    assert preempted[-1].preemptions == 2
    finish = [(r.time, r.job_id) for r in records_of(sim.log, LogKind.FINISH)]
    assert finish[:2] == [(15, 2), (30, 3)]  # first starts: 10 s of work, no overhead
    assert [r.time for r in sim.log if r.job_id == 1 and r.kind is LogKind.CHECKPOINT] == (
        checkpoints
    )
    replay_checks(sim, overhead)


def test_eng12_service_counts_only_after_overhead() -> None:
    """ENG-12: a resumed job's next checkpoint falls when its service (after overhead) reaches
    the checkpoint's service time: service 5 banked, resume at 15 + 30, checkpoint 1 (10 s of
    service) at 45 + 5 = 50; the view's service is then exactly 10."""
    jobs = [make_job(1, estimate=1_000), make_job(2, submit=5, scores=[0.5], estimate=10)]
    recorder = Recorder(srtf_est)
    simulate(recorder, jobs, total_gpus=1)
    at_fifty = next(v for v in recorder.views if v.time == 50)
    (job,) = at_fifty.running
    assert (job.service, job.running_since, job.evals_done) == (10, 50, 1)
    at_restart = next(v for v in recorder.views if v.time == 15)
    assert at_restart.queued[0].attained_service(15) == 5


def test_eng12_first_start_has_no_overhead() -> None:
    """ENG-12: on a first start progress begins at once: checkpoints at 10, 20, 30, 40."""
    sim = simulate(srtf_est, [make_job(1, submit=3)], total_gpus=1)
    assert [r.time for r in records_of(sim.log, LogKind.CHECKPOINT)] == [13, 23, 33, 43]


def test_world_rejects_negative_overhead() -> None:
    """ENG-11: the preemption overhead is a non-negative number of seconds (default 30)."""
    assert Scenario({}, fifo).preemption_overhead == 30
    with pytest.raises(ValueError, match="preemption_overhead"):
        Scenario({}, fifo, preemption_overhead=-1)
    with pytest.raises(ValueError, match="total_gpus"):
        initial_state(0)
