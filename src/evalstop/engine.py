"""The discrete-event engine: a pure transition and a small driver around it.

:func:`step` is a pure function ``(world, state, event) -> Transition``: it reads the immutable
:class:`SimState`, never mutates it, and returns the next state, the events to schedule and
the log records written. :class:`Simulator` is the imperative shell: it owns the
:class:`~evalstop.event_queue.EventQueue` and the log, and feeds events to :func:`step` in
(time, rank, sequence) order until the queue drains or a horizon is reached.

Costs: a transition copies the map of *active* (queued or running) jobs and asks the policy
for a decision, so it is O(a log a) for a active jobs; ended jobs live in a persistent chain
(:class:`Ended`) that is shared, not copied. See ``spec/engine.md`` for every clause.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from evalstop.boundary import (
    CheckpointView,
    ClusterView,
    JobView,
    make_job_view,
)
from evalstop.cluster import allocate, release
from evalstop.decision import Decision
from evalstop.detectors import Watch, observe, start_watch, verdict_of
from evalstop.event_queue import EventQueue
from evalstop.events import Event, EventKind, LogKind, LogRecord
from evalstop.model import Job, JobId
from evalstop.policies import Policy

__all__ = [
    "ActiveJob",
    "Ended",
    "EngineError",
    "InvalidDecisionError",
    "JobStatus",
    "SimState",
    "Simulator",
    "Transition",
    "World",
    "check_invariants",
    "initial_state",
    "step",
]


class EngineError(RuntimeError):
    """The engine was driven outside its contract (time going back, a job submitted twice)."""


class InvalidDecisionError(EngineError):
    """A policy returned a decision that cannot be applied (spec ``ENG-8``)."""


class JobStatus(enum.Enum):
    """Where a job is: exactly one of these once it has arrived (spec ``ENG-4``)."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"


@attrs.frozen(slots=True)
class Ended:
    """A persistent chain of ended jobs (newest first): O(1) to extend, shared between states."""

    job_id: JobId
    status: JobStatus
    parent: Ended | None

    def __iter__(self) -> Iterator[tuple[JobId, JobStatus]]:
        node: Ended | None = self
        while node is not None:
            yield node.job_id, node.status
            node = node.parent


@attrs.frozen(slots=True)
class ActiveJob:
    """Engine bookkeeping for a queued or running job.

    ``view`` is what policies see; ``next_index`` the next checkpoint (1-based); ``epoch``
    counts run segments so that checkpoints of a preempted segment go stale; ``watches`` holds
    one detector fold per detector of the policy, aligned with ``policy.detectors``.
    """

    view: JobView
    next_index: int
    epoch: int
    watches: tuple[Watch[Any], ...]


@attrs.frozen(slots=True)
class SimState:
    """The whole simulation state; immutable, replaced by every transition."""

    time: int
    total_gpus: int
    free_gpus: int
    queued: tuple[JobId, ...] = ()
    running: tuple[JobId, ...] = ()
    active: Mapping[JobId, ActiveJob] = attrs.field(factory=dict)
    ended: Ended | None = None
    ended_count: int = 0

    def status(self, job_id: JobId) -> JobStatus | None:
        """Where ``job_id`` is, or None if it has not arrived. O(1) if active, else O(ended)."""
        if job_id in self.active:
            return (
                JobStatus.RUNNING
                if self.active[job_id].view.running_since is not None
                else JobStatus.QUEUED
            )
        for ended_id, status in self.ended or ():
            if ended_id == job_id:
                return status
        return None

    def ended_jobs(self) -> dict[JobId, JobStatus]:
        """Every ended job and how it ended. O(ended)."""
        return dict(self.ended or ())


def initial_state(total_gpus: int) -> SimState:
    """An empty cluster of ``total_gpus`` GPUs at time 0."""
    if total_gpus <= 0:
        raise ValueError(f"total_gpus must be > 0, got {total_gpus}")
    return SimState(time=0, total_gpus=total_gpus, free_gpus=total_gpus)


@attrs.frozen(slots=True)
class World:
    """What a transition reads besides the state: the jobs, the policy and the cost model.

    ``preemption_overhead`` is the seconds a resumed job holds its GPUs before it makes
    progress again (restoring its checkpoint); progress itself is kept exactly
    (spec ``ENG-11``).
    """

    jobs: Mapping[JobId, Job]
    policy: Policy
    preemption_overhead: int = 30

    def __attrs_post_init__(self) -> None:
        if self.preemption_overhead < 0:
            raise ValueError(f"preemption_overhead must be >= 0, got {self.preemption_overhead}")


@attrs.frozen(slots=True)
class Transition:
    """The result of one :func:`step`."""

    state: SimState
    events: tuple[Event, ...]
    log: tuple[LogRecord, ...]


_NO_DECISION = Decision()


def _queue_position(queued: Sequence[JobId], views: Mapping[JobId, ActiveJob], job: JobView) -> int:
    # O(log q) probes: the queue is kept sorted by (submit time, job id).
    return bisect.bisect(
        queued, (job.submit_time, job.job_id), key=lambda j: (views[j].view.submit_time, j)
    )


def _checkpoint_event(time: int, job: Job, index: int, epoch: int) -> Event:
    kind = EventKind.COMPLETION if index == job.spec.planned_evals else EventKind.CHECKPOINT
    return Event(time, kind, job.job_id, index, epoch)


def step(world: World, state: SimState, event: Event) -> Transition:
    """Apply ``event`` to ``state`` and then the policy's decision (pure; spec ``ENG-1..13``)."""
    if event.time < state.time:
        raise EngineError(f"event at t={event.time} is before the clock t={state.time}")
    now = event.time
    job = world.jobs.get(event.job_id)
    if job is None:
        raise EngineError(f"event for unknown job {event.job_id}")
    active = dict(state.active)
    queued = list(state.queued)
    running = list(state.running)
    free = state.free_gpus
    ended, ended_count = state.ended, state.ended_count
    events: list[Event] = []
    log: list[LogRecord] = []
    detectors = world.policy.detectors
    job_id = event.job_id

    if event.kind is EventKind.ARRIVAL:
        if job_id in active:  # Simulator.submit rejects ended duplicates up front
            raise EngineError(f"job {job_id} arrived twice")
        if job.spec.gpus > state.total_gpus:
            raise EngineError(
                f"job {job_id} needs {job.spec.gpus} GPUs; the cluster has {state.total_gpus}"
            )
        watches = tuple(start_watch(d) for d in detectors)
        view = attrs.evolve(
            make_job_view(job.spec),
            verdicts=tuple(verdict_of(d, w) for d, w in zip(detectors, watches, strict=True)),
        )
        active[job_id] = ActiveJob(view, 1, 0, watches)
        queued.insert(_queue_position(queued, active, view), job_id)
        log.append(LogRecord(now, LogKind.ARRIVE, job_id, gpus=job.spec.gpus))
    else:
        current = active.get(job_id)
        if current is None or current.epoch != event.epoch or current.view.running_since is None:
            # A checkpoint of a preempted segment or of an ended job: stale (ENG-7).
            return Transition(attrs.evolve(state, time=now), (), ())
        index = event.index
        if index != current.next_index:
            raise EngineError(f"job {job_id}: checkpoint {index}, expected {current.next_index}")
        obs = job.observations[index - 1]
        service = job.checkpoint_service(index)
        report = CheckpointView(
            job_id=job_id,
            kind=job.spec.kind,
            index=index,
            step=obs.step,
            time=now,
            eval_score=obs.eval_score,
            loss=obs.loss,
            proxy_reward=obs.proxy_reward,
            estimated_progress=min(1.0, service / job.spec.estimated_duration),
        )
        watches = tuple(
            observe(d, w, report) for d, w in zip(detectors, current.watches, strict=True)
        )
        view = current.view.after_checkpoint(
            index,
            service,
            now,
            obs.eval_score,
            obs.loss,
            tuple(verdict_of(d, w) for d, w in zip(detectors, watches, strict=True)),
        )
        log.append(
            LogRecord(
                now,
                LogKind.CHECKPOINT,
                job_id,
                gpus=job.spec.gpus,
                index=index,
                step=obs.step,
                score=obs.eval_score,
            )
        )
        if index == job.spec.planned_evals:
            running.remove(job_id)
            free = release(free, job.spec.gpus, state.total_gpus)
            del active[job_id]
            ended, ended_count = Ended(job_id, JobStatus.FINISHED, ended), ended_count + 1
            log.append(
                LogRecord(
                    now,
                    LogKind.FINISH,
                    job_id,
                    gpus=job.spec.gpus,
                    index=index,
                    step=obs.step,
                    score=obs.eval_score,
                )
            )
        else:
            active[job_id] = ActiveJob(view, index + 1, current.epoch, watches)
            gap = job.checkpoint_service(index + 1) - service
            events.append(_checkpoint_event(now + gap, job, index + 1, current.epoch))

    decision = _NO_DECISION
    reported = active.get(job_id)
    changed_view = reported.view if reported and event.kind is EventKind.CHECKPOINT else None
    needs_decision = getattr(world.policy, "needs_decision", None)
    if needs_decision is None or needs_decision(event.kind, changed_view):
        changed = () if changed_view is None else (changed_view,)
        cluster = ClusterView(
            time=now,
            total_gpus=state.total_gpus,
            free_gpus=free,
            queued=tuple([active[j].view for j in queued]),
            running=tuple([active[j].view for j in running]),
            cause=event.kind,
            changed=changed,
        )
        decision = world.policy(cluster)
        _validate(decision, active, free)

    for order in decision.stop:
        entry = active.pop(order.job_id)
        gpus = 0  # GPUs held: none for a queued job
        if entry.view.running_since is not None:
            gpus = entry.view.gpus
            running.remove(order.job_id)
            free = release(free, gpus, state.total_gpus)
        else:
            queued.remove(order.job_id)
        ended, ended_count = Ended(order.job_id, JobStatus.STOPPED, ended), ended_count + 1
        log.append(
            LogRecord(
                now,
                LogKind.STOP,
                order.job_id,
                gpus=gpus,
                index=entry.view.evals_done,
                step=order.saved_step,
                score=order.saved_score,
                reason=order.reason,
            )
        )
    for job_id in decision.preempt:
        entry = active[job_id]
        view = attrs.evolve(
            entry.view,
            service=entry.view.attained_service(now),
            running_since=None,
            preemptions=entry.view.preemptions + 1,
        )
        active[job_id] = attrs.evolve(entry, view=view)
        running.remove(job_id)
        free = release(free, view.gpus, state.total_gpus)
        queued.insert(_queue_position(queued, active, view), job_id)
        log.append(LogRecord(now, LogKind.PREEMPT, job_id, gpus=view.gpus, index=view.evals_done))
    for job_id in decision.start:
        entry = active[job_id]
        job = world.jobs[job_id]
        free = allocate(free, entry.view.gpus)
        queued.remove(job_id)
        running.append(job_id)
        overhead = world.preemption_overhead if entry.view.preemptions else 0
        resumes_at = now + overhead
        epoch = entry.epoch + 1
        view = attrs.evolve(entry.view, running_since=resumes_at)
        active[job_id] = ActiveJob(view, entry.next_index, epoch, entry.watches)
        gap = job.checkpoint_service(entry.next_index) - entry.view.service
        events.append(_checkpoint_event(resumes_at + gap, job, entry.next_index, epoch))
        log.append(LogRecord(now, LogKind.START, job_id, gpus=view.gpus, index=view.evals_done))

    new_state = SimState(
        time=now,
        total_gpus=state.total_gpus,
        free_gpus=free,
        queued=tuple(queued),
        running=tuple(running),
        active=active,
        ended=ended,
        ended_count=ended_count,
    )
    return Transition(new_state, tuple(events), tuple(log))


def _validate(decision: Decision, active: Mapping[JobId, ActiveJob], free: int) -> None:
    """Raise :class:`InvalidDecisionError` unless ``decision`` can be applied whole (``ENG-8``).

    O(jobs named by the decision): each is looked up in the active map.
    """
    if not (decision.start or decision.preempt or decision.stop):
        return
    named = [o.job_id for o in decision.stop] + list(decision.preempt) + list(decision.start)
    if len(named) != len(set(named)):
        raise InvalidDecisionError(f"a job is named twice in {decision}")

    def view_of(job_id: JobId, running: bool | None, verb: str, state: str) -> JobView:
        entry = active.get(job_id)
        if entry is None or (
            running is not None and (entry.view.running_since is not None) != running
        ):
            raise InvalidDecisionError(f"cannot {verb} job {job_id}: it is not {state}")
        return entry.view

    freed = 0
    for order in decision.stop:
        view = view_of(order.job_id, None, "stop", "active")
        freed += view.gpus if view.running_since is not None else 0
    for job_id in decision.preempt:
        freed += view_of(job_id, True, "preempt", "running").gpus
    wanted = sum(view_of(job_id, False, "start", "queued").gpus for job_id in decision.start)
    if wanted > free + freed:
        raise InvalidDecisionError(
            f"starts need {wanted} GPUs but only {free + freed} would be free"
        )


def check_invariants(state: SimState, jobs: Mapping[JobId, Job]) -> list[str]:
    """Every invariant of ``spec/engine.md`` that ``state`` breaks (empty when sound). O(n)."""
    problems: list[str] = []
    allocated = sum(jobs[j].spec.gpus for j in state.running)
    if state.free_gpus + allocated != state.total_gpus:
        problems.append(
            f"ENG-3: free {state.free_gpus} + allocated {allocated} != total {state.total_gpus}"
        )
    if state.free_gpus < 0:
        problems.append(f"ENG-6: negative free GPUs {state.free_gpus}")
    ended = state.ended_jobs()
    groups = [set(state.queued), set(state.running), set(ended)]
    total = sum(len(g) for g in groups)
    if len(set().union(*groups)) != total or len(state.queued) + len(state.running) != total - len(
        ended
    ):
        problems.append("ENG-4: a job is in more than one of queued, running, ended")
    if set(state.active) != set(state.queued) | set(state.running):
        problems.append("ENG-4: active map disagrees with queued and running")
    if len(ended) != state.ended_count:
        problems.append("ENG-4: ended_count disagrees with the ended chain")
    for job_id in state.running:
        if state.active[job_id].view.running_since is None:
            problems.append(f"ENG-4: running job {job_id} has no running_since")
    for job_id in state.queued:
        if state.active[job_id].view.running_since is not None:
            problems.append(f"ENG-4: queued job {job_id} has a running_since")
    return problems


class Simulator:
    """The driver: an event queue, the current state and the log.

    ``check=True`` asserts :func:`check_invariants` after every event (for tests; O(n) each).
    """

    def __init__(
        self,
        policy: Policy,
        total_gpus: int,
        *,
        preemption_overhead: int = 30,
        check: bool = False,
    ) -> None:
        self._jobs: dict[JobId, Job] = {}
        self.world = World(self._jobs, policy, preemption_overhead)
        self.state = initial_state(total_gpus)
        self.queue = EventQueue()
        self.log: list[LogRecord] = []
        self.events_handled = 0
        self._check = check

    def submit(self, job: Job) -> None:
        """Register ``job`` and schedule its arrival at its submit time."""
        if job.job_id in self._jobs:
            raise EngineError(f"job {job.job_id} submitted twice")
        if job.spec.submit_time < self.state.time:
            raise EngineError(
                f"job {job.job_id} submitted at t={job.spec.submit_time}, "
                f"before the clock t={self.state.time}"
            )
        if job.spec.gpus > self.state.total_gpus:
            raise EngineError(
                f"job {job.job_id} needs {job.spec.gpus} GPUs; "
                f"the cluster has {self.state.total_gpus}"
            )
        self._jobs[job.job_id] = job
        self.queue.push(Event(job.spec.submit_time, EventKind.ARRIVAL, job.job_id))

    def advance(self) -> bool:
        """Handle the next event; False when the queue is empty.

        The event leaves the queue only once :func:`step` has succeeded, so an
        :class:`EngineError` (e.g. an invalid decision, ``ENG-8``) leaves the simulator as it was.
        """
        upcoming = self.queue.peek()
        if upcoming is None:
            return False
        transition = step(self.world, self.state, upcoming)
        self.queue.pop()
        self.state = transition.state
        for event in transition.events:
            self.queue.push(event)
        self.log.extend(transition.log)
        self.events_handled += 1
        if self._check:
            problems = check_invariants(self.state, self._jobs)
            if problems:
                raise EngineError("; ".join(problems))
        return True

    def run(self, horizon: int | None = None) -> SimState:
        """Handle events until the queue drains or the next event is after ``horizon``.

        When the queue drains, every arrived job has finished or been stopped (``ENG-9``);
        a policy that leaves jobs waiting on an idle cluster raises :class:`EngineError`.
        """
        while True:
            upcoming = self.queue.peek()
            if upcoming is None:
                break
            if horizon is not None and upcoming.time > horizon:
                return self.state
            self.advance()
        if self.state.active:
            stuck = sorted(self.state.active)[:5]
            raise EngineError(
                f"the queue drained with {len(self.state.active)} jobs never ended "
                f"(first: {stuck}); the policy left them waiting"
            )
        return self.state
