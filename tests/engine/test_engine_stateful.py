"""The engine against a deliberately naive reference model, driven by Hypothesis stateful tests.

The reference (:class:`Reference`) is written from the spec alone: a plain list of pending
events scanned with ``min()`` for the smallest (time, rank, seq); a dict of job statuses; GPUs
counted by hand; service accounted as "banked + (now - resumed at)"; the decline rule, the
FIFO and SRTF-Est orders and first fit re-implemented in a few lines. It consults the policy at
*every* non-stale event, so it also checks that the engine's habit of skipping decisions that
cannot change anything (``needs_decision``) is exact.

Two machines: :class:`FifoMachine` (EvalStop over FIFO, no preemption) and
:class:`SrtfMachine` (EvalStop over SRTF-Est: preemption, overhead, stale checkpoints). Both
also stop jobs on request, through :class:`StopOnRequest`. :class:`FastFifoMachine` and
:class:`FastSrtfMachine` run the same histories through the fast engine (ENG-15).
Clauses: ENG-1 to ENG-12 (see the rules and invariants below), ENG-13 (the engine may skip
a decision only when consulting the policy would change nothing: the reference never
skips), EVS-1, EVS-2, EVS-4, DET-2, DET-3, DET-4, POL-2, POL-3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from builders import examples, make_job
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision, StopOrder
from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import fifo, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.wrapper import evalstop
from evalstop.engine import JobStatus, Simulator, check_invariants
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import LogRecord

TOTAL_GPUS = 4
MAX_JOBS = 12
REQUESTED = "requested"

# (time, kind, job, detail): detail is the checkpoint index, or (saved step, reason) of a stop
Line = tuple[int, str, int, Any]


@attrs.frozen(eq=False)
class StopOnRequest:
    """A policy that stops the jobs the state machine asked to stop, then asks ``base``.

    It reads only its ClusterView (and the test's request set). ``handled`` remembers which
    requests became stops, so that ``needs_decision`` can let the engine skip decisions only
    while no request is outstanding (then it defers to ``base``'s own hook).
    """

    base: Policy
    requests: set[int] = attrs.field(factory=set)
    handled: set[int] = attrs.field(factory=set)

    @property
    def name(self) -> str:
        return f"requests+{self.base.name}"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return self.base.detectors

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        if self.requests - self.handled:
            return True
        hook = getattr(self.base, "needs_decision", None)
        return hook is None or bool(hook(cause, changed))

    def __call__(self, view: ClusterView) -> Decision:
        stops = tuple(
            StopOrder(job.job_id, REQUESTED)
            for job in (*view.running, *view.queued)
            if job.job_id in self.requests
        )
        drop = {order.job_id for order in stops}
        self.handled.update(drop)
        remaining = view.without_running(drop)
        remaining = attrs.evolve(
            remaining, queued=tuple(job for job in view.queued if job.job_id not in drop)
        )
        return self.base(remaining).with_stops(stops)


@attrs.define
class RefJob:
    """The reference's bookkeeping for one arrived job."""

    job: Job
    status: str = "queued"
    next_index: int = 1
    epoch: int = 0
    banked: int = 0
    resumed_at: int | None = None
    preemptions: int = 0
    declines: int = 0
    previous: float | None = None
    best_step: int | None = None
    best_score: float | None = None
    fired: bool = False

    def attained(self, now: int) -> int:
        if self.resumed_at is None:
            return self.banked
        return self.banked + max(0, now - self.resumed_at)


class Reference:
    """The naive model of spec/engine.md for StopOnRequest(evalstop(fifo or srtf-est))."""

    def __init__(self, *, preemptive: bool, k: int, overhead: int, requests: set[int]) -> None:
        self.preemptive = preemptive
        self.k = k
        self.overhead = overhead
        self.requests = requests
        self.now = 0
        self.free = TOTAL_GPUS
        self.pending: list[tuple[int, int, int, int, int, int]] = []  # time rank seq job idx ep
        self.seq = 0
        self.jobs: dict[int, RefJob] = {}
        self.submitted: dict[int, Job] = {}
        self.running: list[int] = []  # start order
        self.log: list[Line] = []
        self.ended_before: set[int] = set()
        self.stale = 0  # statistics only
        self.ties = 0
        self.last_handled: tuple[int, int] = (-1, -1)

    # -- events ---------------------------------------------------------------------------
    def schedule(self, time: int, rank: int, job_id: int, index: int = 0, epoch: int = 0) -> None:
        self.pending.append((time, rank, self.seq, job_id, index, epoch))
        self.seq += 1

    def submit(self, job: Job) -> None:
        self.submitted[job.job_id] = job
        self.schedule(job.spec.submit_time, 2, job.job_id)

    def queued(self) -> list[int]:
        ids = [j for j, r in self.jobs.items() if r.status == "queued"]
        return sorted(ids, key=lambda j: (self.jobs[j].job.spec.submit_time, j))

    def ended(self, status: str) -> set[int]:
        return {j for j, r in self.jobs.items() if r.status == status}

    def emit(self, kind: str, job_id: int, detail: Any = None) -> None:
        assert job_id not in self.ended_before, f"{kind} for ended job {job_id}"  # ENG-5
        self.log.append((self.now, kind, job_id, detail))

    def advance(self) -> bool:
        if not self.pending:
            return False
        item = min(self.pending, key=lambda e: e[:3])
        self.pending.remove(item)
        time, rank, _, job_id, index, epoch = item
        assert time >= self.now
        self.now = time
        if self.last_handled[0] == time and self.last_handled[1] != job_id:
            self.ties += 1
        self.last_handled = (time, job_id)
        if rank == 2:
            job = self.submitted[job_id]
            self.jobs[job_id] = RefJob(job)
            self.emit("arrive", job_id)
        else:
            ref = self.jobs.get(job_id)
            if ref is None or ref.status != "running" or ref.epoch != epoch:
                self.stale += 1
                return True  # stale: nothing but the clock (ENG-7)
            self.checkpoint(ref, index)
        self.decide()
        self.ended_before = self.ended("finished") | self.ended("stopped")
        return True

    def checkpoint(self, ref: RefJob, index: int) -> None:
        job = ref.job
        assert ref.resumed_at is not None
        reached = ref.banked + (self.now - ref.resumed_at)
        assert reached == job.checkpoint_service(index)  # ENG-12, by the reference's own count
        obs = job.observations[index - 1]
        score = obs.eval_score
        if math.isfinite(score):  # DET-3
            ref.declines = (
                ref.declines + 1 if ref.previous is not None and score < ref.previous else 0
            )
            ref.previous = score
            if ref.best_score is None or score > ref.best_score:
                ref.best_step, ref.best_score = obs.step, score
            ref.fired = ref.fired or ref.declines >= self.k
        self.emit("checkpoint", job.job_id, index)
        n = job.checkpoints
        if index == n:
            ref.status = "finished"
            self.free += job.spec.gpus
            self.running.remove(job.job_id)
            self.emit("finish", job.job_id, index)
        else:
            ref.next_index = index + 1
            time = ref.resumed_at + job.checkpoint_service(index + 1) - ref.banked
            self.schedule(time, 0 if index + 1 == n else 1, job.job_id, index + 1, ref.epoch)

    # -- the policy ------------------------------------------------------------------------
    def key(self, job_id: int) -> tuple[int, int, int]:
        ref = self.jobs[job_id]
        spec = ref.job.spec
        remaining = max(0, spec.estimated_duration - ref.attained(self.now))
        return (remaining if self.preemptive else 0, spec.submit_time, job_id)

    def stop(self, job_id: int, detail: tuple[int | None, str]) -> None:
        ref = self.jobs[job_id]
        if ref.status == "running":
            self.running.remove(job_id)
            self.free += ref.job.spec.gpus
        ref.status = "stopped"
        self.emit("stop", job_id, detail)

    def decide(self) -> None:
        for job_id in [*self.running, *self.queued()]:
            if job_id in self.requests:
                self.stop(job_id, (None, REQUESTED))
        detector = f"evalstop(k={self.k})"
        for job_id in list(self.running):
            ref = self.jobs[job_id]
            if ref.job.spec.kind is JobKind.RLHF and ref.fired:  # EVS-1, EVS-4
                self.stop(job_id, (ref.best_step, detector))
        queued = self.queued()
        if self.preemptive:  # rank everything, pack the whole cluster (POL-3)
            order, room = sorted([*queued, *self.running], key=self.key), TOTAL_GPUS
        else:  # fill the free GPUs (POL-2)
            order, room = sorted(queued, key=self.key), self.free
        picked: list[int] = []
        for job_id in order:  # first fit, no reservation
            gpus = self.jobs[job_id].job.spec.gpus
            if gpus <= room:
                picked.append(job_id)
                room -= gpus
        if self.preemptive:
            for job_id in list(self.running):
                if job_id not in picked:
                    self.preempt(job_id)
        for job_id in picked:
            if job_id in queued:
                self.start(job_id)

    def preempt(self, job_id: int) -> None:
        ref = self.jobs[job_id]
        ref.banked = ref.attained(self.now)  # ENG-11: the exact service is kept
        ref.resumed_at = None
        ref.preemptions += 1
        ref.status = "queued"
        self.running.remove(job_id)
        self.free += ref.job.spec.gpus
        self.emit("preempt", job_id)

    def start(self, job_id: int) -> None:
        ref = self.jobs[job_id]
        job = ref.job
        assert job.spec.gpus <= self.free  # ENG-6
        self.free -= job.spec.gpus
        ref.status = "running"
        self.running.append(job_id)
        ref.epoch += 1
        ref.resumed_at = self.now + (self.overhead if ref.preemptions else 0)  # ENG-11
        time = ref.resumed_at + job.checkpoint_service(ref.next_index) - ref.banked
        rank = 0 if ref.next_index == job.checkpoints else 1
        self.schedule(time, rank, job_id, ref.next_index, ref.epoch)
        self.emit("start", job_id)


def engine_lines(log: Sequence[LogRecord]) -> list[Line]:
    lines: list[Line] = []
    for record in log:
        kind = record.kind.value
        detail: Any = None
        if kind in ("checkpoint", "finish"):
            detail = record.index
        elif kind == "stop":
            detail = (record.step, record.reason)
        lines.append((record.time, kind, record.job_id, detail))
    return lines


SCORE = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.just(math.nan))


def scores(n: int) -> st.SearchStrategy[list[float]]:
    """Any scores (ties and NaN included), or a strict fall from some checkpoint on, sometimes
    with one missing evaluation inside the fall (DET-3)."""
    falling = st.lists(st.integers(0, 9), min_size=n, max_size=n, unique=True).map(
        lambda xs: sorted(map(float, xs), reverse=True)
    )
    with_hole = st.tuples(falling, st.integers(0, n - 1)).map(
        lambda pair: [math.nan if i == pair[1] else x for i, x in enumerate(pair[0])]
    )
    return st.one_of(st.lists(SCORE, min_size=n, max_size=n), falling, with_hole)


JobShape = tuple[int, int, JobKind, int, list[float], int]


@st.composite
def job_shapes(draw: st.DrawFn) -> JobShape:
    """(delay, GPUs, kind, estimate, scores, duration) of a small job: at most 5 checkpoints
    and 3 s per checkpoint, so that checkpoint times of different jobs often coincide."""
    n = draw(st.integers(1, 5), label="checkpoints")
    return (
        draw(st.integers(0, 3), label="delay"),
        draw(st.integers(1, TOTAL_GPUS), label="gpus"),
        draw(st.sampled_from([JobKind.RLHF, JobKind.RLHF, JobKind.DPO, JobKind.LORA])),
        draw(st.integers(1, 30), label="estimate"),
        draw(scores(n), label="scores"),
        draw(st.integers(n, 3 * n), label="duration"),
    )


class EngineMachine(RuleBasedStateMachine):
    """Drives a Simulator and the Reference side by side and compares them after each step."""

    PREEMPTIVE = False
    OVERHEADS: tuple[int, ...] = (30,)
    ENGINE: type[Simulator] | type[FastSimulator] = Simulator
    REQUESTS = True  # False: the engine runs the EvalStop policy itself, without requests

    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulator | FastSimulator | None = None
        self.ref: Reference | None = None
        self.policy: StopOnRequest | None = None
        self.next_id = 0
        self.last_time = 0

    @initialize(
        target=jobs,
        k=st.integers(1, 3),
        overhead=st.sampled_from([0, 3, 30]),
        first=st.lists(job_shapes(), min_size=1, max_size=6),
    )
    def setup(self, k: int, overhead: int, first: list[JobShape]) -> MultipleResults[int]:
        """A fresh pair (EvalStop with k declines over the machine's base policy) and a first
        batch of jobs, so that every example has something to schedule."""
        if overhead not in self.OVERHEADS:
            overhead = self.OVERHEADS[0]
        requests: set[int] = set()
        base = srtf_est if self.PREEMPTIVE else fifo
        wrapped = evalstop(base, DeclineDetector(k))
        self.policy = StopOnRequest(wrapped, requests)
        run = self.policy if self.REQUESTS else wrapped
        self.sim = self.ENGINE(run, TOTAL_GPUS, preemption_overhead=overhead)
        self.ref = Reference(preemptive=self.PREEMPTIVE, k=k, overhead=overhead, requests=requests)
        return multiple(*(self.add(shape) for shape in first))

    @property
    def pair(self) -> tuple[Simulator | FastSimulator, Reference]:
        assert self.sim is not None and self.ref is not None
        return self.sim, self.ref

    def add(self, shape: JobShape) -> int:
        sim, ref = self.pair
        delay, gpus, kind, estimate, observed, duration = shape
        job = make_job(
            self.next_id,
            submit=sim.state.time + delay,
            gpus=gpus,
            scores=observed,
            duration=duration,
            estimate=estimate,
            kind=kind,
        )
        self.next_id += 1
        sim.submit(job)
        ref.submit(job)
        self.compare()
        return job.job_id

    # -- rules --------------------------------------------------------------------------
    @precondition(lambda self: self.next_id < MAX_JOBS)
    @rule(target=jobs, shape=job_shapes())
    def submit(self, shape: JobShape) -> int:
        """Submit a job at now + delay (ties with other events are common)."""
        return self.add(shape)

    @rule()
    def advance(self) -> None:
        """Handle one event in both (ENG-2: the reference picks the min (time, rank, seq))."""
        sim, ref = self.pair
        assert sim.advance() == ref.advance()
        self.compare()

    @rule(count=st.integers(2, 6))
    def advance_some(self, count: int) -> None:
        sim, ref = self.pair
        for _ in range(count):
            assert sim.advance() == ref.advance()
            self.compare()

    @precondition(lambda self: self.REQUESTS)
    @rule(job_id=jobs)
    def request_stop(self, job_id: int) -> None:
        """Ask for a job to be stopped; it is at the next decision if it is still active."""
        assert self.policy is not None
        self.policy.requests.add(job_id)

    @rule()
    def drain(self) -> None:
        """ENG-9: run to the end; every submitted job finished or was stopped."""
        sim, ref = self.pair
        sim.run()
        while ref.advance():
            pass
        self.compare()
        assert not sim.state.active
        assert sim.pending == 0
        ended = sim.state.ended_jobs()
        assert set(ended) == set(sim.world.jobs)
        assert sim.state.free_gpus == TOTAL_GPUS

    def teardown(self) -> None:
        """Finish every example by draining both, one compared event at a time (ENG-9), and
        label what it exercised (see --hypothesis-show-statistics)."""
        if self.sim is None or self.ref is None:
            return
        while self.sim.advance():
            assert self.ref.advance()
            self.compare()
            self.eng3_eng4_checker_is_clean()
            self.eng1_time_is_monotone()
            self.eng5_ended_jobs_are_gone()
            self.eng6_free_gpus_in_range()
        assert not self.ref.advance()
        assert not self.sim.state.active
        assert set(self.sim.state.ended_jobs()) == set(self.sim.world.jobs)
        kinds = {line[1] for line in self.ref.log}
        stops = {line[3][1] for line in self.ref.log if line[1] == "stop"}
        times = [line[0] for line in self.ref.log]
        event(f"records: {min(len(times) // 20, 3) * 20}+")
        event(f"preempted: {'preempt' in kinds}")
        event(f"stopped by detector: {any(r.startswith('evalstop') for r in stops)}")
        event(f"stopped on request: {REQUESTED in stops}")
        event(f"equal-time events of two jobs: {self.ref.ties > 0}")
        event(f"stale checkpoints: {self.ref.stale > 0}")

    # -- comparison and invariants ----------------------------------------------------------
    def compare(self) -> None:
        sim, ref = self.pair
        state = sim.state
        assert state.time == ref.now
        assert state.free_gpus == ref.free
        assert state.queued == tuple(ref.queued())
        assert state.running == tuple(ref.running)
        ended = state.ended_jobs()
        finished = {j for j, s in ended.items() if s is JobStatus.FINISHED}
        stopped = {j for j, s in ended.items() if s is JobStatus.STOPPED}
        assert finished == ref.ended("finished")
        assert stopped == ref.ended("stopped")
        assert engine_lines(sim.log) == ref.log
        assert sim.pending == len(ref.pending)
        for job_id, entry in state.active.items():  # ENG-11, ENG-12: exact service
            mine = ref.jobs[job_id]
            assert entry.view.attained_service(state.time) == mine.attained(ref.now)
            assert entry.view.preemptions == mine.preemptions
            assert (entry.view.running_since is None) == (mine.resumed_at is None)

    @invariant()
    def eng3_eng4_checker_is_clean(self) -> None:
        """ENG-3, ENG-4: check_invariants finds nothing."""
        if self.sim is not None:
            assert check_invariants(self.sim.state, self.sim.world.jobs) == []

    @invariant()
    def eng1_time_is_monotone(self) -> None:
        """ENG-1: the clock never goes back."""
        if self.sim is not None:
            assert self.sim.state.time >= self.last_time
            self.last_time = self.sim.state.time

    @invariant()
    def eng5_ended_jobs_are_gone(self) -> None:
        """ENG-5: no finished or stopped job is queued, running or active."""
        if self.sim is not None:
            state = self.sim.state
            ended = set(state.ended_jobs())
            assert not ended & (set(state.queued) | set(state.running) | set(state.active))

    @invariant()
    def eng6_free_gpus_in_range(self) -> None:
        """ENG-6: 0 <= free <= total."""
        if self.sim is not None:
            assert 0 <= self.sim.state.free_gpus <= TOTAL_GPUS


class FifoMachine(EngineMachine):
    """EvalStop over FIFO: no preemption; stops by detector and by request."""

    PREEMPTIVE = False
    OVERHEADS = (30,)


class SrtfMachine(EngineMachine):
    """EvalStop over SRTF-Est: preemption with overhead 0, 3 or 30 and stale checkpoints."""

    PREEMPTIVE = True
    OVERHEADS = (0, 3, 30)


STATEFUL = settings(
    max_examples=examples(200),  # more under the 'long' profile
    stateful_step_count=50,
)


class FastFifoMachine(FifoMachine):
    """ENG-15: the fast engine against the same reference, on the FIFO machine's histories."""

    ENGINE = FastSimulator


class FastSrtfMachine(SrtfMachine):
    """ENG-15: the fast engine against the same reference, on the SRTF machine's histories."""

    ENGINE = FastSimulator


TestFifoAgainstReference = FifoMachine.TestCase
TestFifoAgainstReference.settings = STATEFUL
TestSrtfAgainstReference = SrtfMachine.TestCase
TestSrtfAgainstReference.settings = STATEFUL
TestFastFifoAgainstReference = FastFifoMachine.TestCase
TestFastFifoAgainstReference.settings = STATEFUL
TestFastSrtfAgainstReference = FastSrtfMachine.TestCase
TestFastSrtfAgainstReference.settings = STATEFUL
