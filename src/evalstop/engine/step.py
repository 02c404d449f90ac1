"""The pure transition of the discrete-event engine (spec ``ENG-1..13``).

:func:`step` is a pure function ``(world, state, event) -> Transition``: it reads the immutable
:class:`SimState`, never mutates it, and returns the next state, the events to schedule and
the log records written. :class:`Simulator` is the imperative shell: it owns the
:class:`~evalstop.engine.queue.EventQueue` and the log, and feeds events to :func:`step` in
(time, rank, sequence) order until the queue drains or a horizon is reached.

Costs: a transition copies the map of *active* (queued or running) jobs and asks the policy
for a decision, so it is O(a log a) for a active jobs; ended jobs live in a persistent chain
(:class:`Ended`) that is shared, not copied. See ``spec/engine.md`` for every clause.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence

import attrs

from evalstop.core.boundary import (
    ClusterView,
    EventKind,
    JobView,
    checkpoint_report,
    make_job_view,
)
from evalstop.core.decision import Decision
from evalstop.core.detectors import observe, start_watch, verdict_of
from evalstop.core.gpus import allocate, release
from evalstop.core.model import Job, JobId
from evalstop.engine.errors import EngineError
from evalstop.engine.events import Event
from evalstop.engine.log import LogKind, LogRecord
from evalstop.engine.state import ActiveJob, Ended, JobStatus, Scenario, SimState, Transition
from evalstop.engine.validate import validate

__all__ = ["step"]


_NO_DECISION = Decision()


def _queue_position(queued: Sequence[JobId], views: Mapping[JobId, ActiveJob], job: JobView) -> int:
    # O(log q) probes: the queue is kept sorted by (submit time, job id).
    return bisect.bisect(
        queued, (job.submit_time, job.job_id), key=lambda j: (views[j].view.submit_time, j)
    )


def _checkpoint_event(time: int, job: Job, index: int, epoch: int) -> Event:
    kind = EventKind.COMPLETION if index == job.checkpoints else EventKind.CHECKPOINT
    return Event(time, kind, job.job_id, index, epoch)


@attrs.define(slots=True)
class _Draft:
    """The working copy one transition edits: copies of the state's containers, never the
    state's own (so :func:`step` stays pure, ``ENG-10``), plus what it emits."""

    now: int
    total: int
    free: int
    active: dict[JobId, ActiveJob]
    queued: list[JobId]
    running: list[JobId]
    ended: Ended | None
    ended_count: int
    events: list[Event]
    log: list[LogRecord]

    def end(self, job_id: JobId, status: JobStatus) -> None:
        self.ended, self.ended_count = Ended(job_id, status, self.ended), self.ended_count + 1

    def freeze(self) -> Transition:
        state = SimState(
            time=self.now,
            total_gpus=self.total,
            free_gpus=self.free,
            queued=tuple(self.queued),
            running=tuple(self.running),
            active=self.active,
            ended=self.ended,
            ended_count=self.ended_count,
        )
        return Transition(state, tuple(self.events), tuple(self.log))


def step(world: Scenario, state: SimState, event: Event) -> Transition:
    """Apply ``event`` to ``state`` and then the policy's decision (pure; spec ``ENG-1..13``).

    The spec's phases, in order, each a private function of this module: the event itself
    (``_arrive`` or ``_checkpoint``), consulting the policy (``_consult_policy``), then the
    decision's stops (``_apply_stops``), preemptions (``_apply_preemptions``) and starts
    (``_apply_starts``).
    """
    if event.time < state.time:
        raise EngineError(f"event at t={event.time} is before the clock t={state.time}")
    job = world.jobs.get(event.job_id)
    if job is None:
        raise EngineError(f"event for unknown job {event.job_id}")
    if event.kind is not EventKind.ARRIVAL:
        current = state.active.get(event.job_id)
        if current is None or current.epoch != event.epoch or current.view.running_since is None:
            # A checkpoint of a preempted segment or of an ended job (ENG-7).
            return Transition(attrs.evolve(state, time=event.time), (), ())
    draft = _Draft(
        now=event.time,
        total=state.total_gpus,
        free=state.free_gpus,
        active=dict(state.active),
        queued=list(state.queued),
        running=list(state.running),
        ended=state.ended,
        ended_count=state.ended_count,
        events=[],
        log=[],
    )
    if event.kind is EventKind.ARRIVAL:
        _arrive(world, draft, job)
    else:
        _checkpoint(world, draft, job, event.index)
    decision = _consult_policy(world, draft, event)
    if decision.stop:
        _apply_stops(draft, decision)
    if decision.preempt:
        _apply_preemptions(draft, decision)
    if decision.start:
        _apply_starts(world, draft, decision)
    return draft.freeze()


def _arrive(world: Scenario, draft: _Draft, job: Job) -> None:
    """Phase 1, arrival: the job's first view (BND-2) joins the queue; ``ARRIVE`` is logged."""
    job_id = job.job_id
    if job_id in draft.active:  # Simulator.submit rejects ended duplicates up front
        raise EngineError(f"job {job_id} arrived twice")
    if job.spec.gpus > draft.total:
        raise EngineError(f"job {job_id} needs {job.spec.gpus} GPUs; the cluster has {draft.total}")
    detectors = world.policy.detectors
    watches = tuple(start_watch(d) for d in detectors)
    view = attrs.evolve(
        make_job_view(job.spec),
        verdicts=tuple(verdict_of(d, w) for d, w in zip(detectors, watches, strict=True)),
    )
    draft.active[job_id] = ActiveJob(view, 1, 0, watches)
    draft.queued.insert(_queue_position(draft.queued, draft.active, view), job_id)
    draft.log.append(LogRecord(draft.now, LogKind.ARRIVE, job_id, gpus=job.spec.gpus))


def _checkpoint(world: Scenario, draft: _Draft, job: Job, index: int) -> None:
    """Phase 1, checkpoint: fold the report into every watch and the view, log ``CHECKPOINT``;
    the last one finishes the job (``FINISH``), any other schedules the next one."""
    job_id, now = job.job_id, draft.now
    current = draft.active[job_id]
    if index != current.next_index:
        raise EngineError(f"job {job_id}: checkpoint {index}, expected {current.next_index}")
    report = checkpoint_report(job, index, now)
    obs, service = job.observations[index - 1], job.checkpoint_service(index)
    detectors = world.policy.detectors
    watches = tuple(observe(d, w, report) for d, w in zip(detectors, current.watches, strict=True))
    verdicts = tuple(verdict_of(d, w) for d, w in zip(detectors, watches, strict=True))
    view = current.view.after_checkpoint(index, service, now, obs.eval_score, obs.loss, verdicts)
    gpus, step_, score = job.spec.gpus, obs.step, obs.eval_score
    draft.log.append(
        LogRecord(now, LogKind.CHECKPOINT, job_id, gpus=gpus, index=index, step=step_, score=score)
    )
    if index == job.checkpoints:
        draft.running.remove(job_id)
        draft.free = release(draft.free, gpus, draft.total)
        del draft.active[job_id]
        draft.end(job_id, JobStatus.FINISHED)
        draft.log.append(
            LogRecord(now, LogKind.FINISH, job_id, gpus=gpus, index=index, step=step_, score=score)
        )
    else:
        draft.active[job_id] = ActiveJob(view, index + 1, current.epoch, watches)
        gap = job.checkpoint_service(index + 1) - service
        draft.events.append(_checkpoint_event(now + gap, job, index + 1, current.epoch))


def _consult_policy(world: Scenario, draft: _Draft, event: Event) -> Decision:
    """Phase 2: ask the policy unless ``needs_decision`` says it would not act (``ENG-13``),
    and validate what it decided before anything is applied (``ENG-8``)."""
    reported = draft.active.get(event.job_id)
    changed_view = reported.view if reported and event.kind is EventKind.CHECKPOINT else None
    if not world.policy.needs_decision(event.kind, changed_view):
        return _NO_DECISION
    active = draft.active
    cluster = ClusterView(
        time=draft.now,
        total_gpus=draft.total,
        free_gpus=draft.free,
        queued=tuple([active[j].view for j in draft.queued]),
        running=tuple([active[j].view for j in draft.running]),
        cause=event.kind,
        changed=() if changed_view is None else (changed_view,),
    )
    decision = world.policy(cluster)
    validate(decision, active, draft.free, _placed)
    return decision


def _apply_stops(draft: _Draft, decision: Decision) -> None:
    """Phase 3: stopped jobs end for good, running ones free their GPUs; ``STOP`` is logged
    with the checkpoint kept."""
    for order in decision.stop:
        entry = draft.active.pop(order.job_id)
        gpus = 0  # GPUs held: none for a queued job
        if entry.view.running_since is not None:
            gpus = entry.view.gpus
            draft.running.remove(order.job_id)
            draft.free = release(draft.free, gpus, draft.total)
        else:
            draft.queued.remove(order.job_id)
        draft.end(order.job_id, JobStatus.STOPPED)
        draft.log.append(
            LogRecord(
                draft.now,
                LogKind.STOP,
                order.job_id,
                gpus=gpus,
                index=entry.view.evals_done,
                step=order.saved_step,
                score=order.saved_score,
                reason=order.reason,
            )
        )


def _apply_preemptions(draft: _Draft, decision: Decision) -> None:
    """Phase 4: preempted jobs bank their exact service (``ENG-11``) and rejoin the queue;
    ``PREEMPT`` is logged."""
    for job_id in decision.preempt:
        entry = draft.active[job_id]
        view = attrs.evolve(
            entry.view,
            service=entry.view.attained_service(draft.now),
            running_since=None,
            preemptions=entry.view.preemptions + 1,
        )
        draft.active[job_id] = attrs.evolve(entry, view=view)
        draft.running.remove(job_id)
        draft.free = release(draft.free, view.gpus, draft.total)
        draft.queued.insert(_queue_position(draft.queued, draft.active, view), job_id)
        draft.log.append(
            LogRecord(draft.now, LogKind.PREEMPT, job_id, gpus=view.gpus, index=view.evals_done)
        )


def _apply_starts(world: Scenario, draft: _Draft, decision: Decision) -> None:
    """Phase 5: started jobs take their GPUs and open a run epoch; a resumed one first pays
    the preemption overhead (``ENG-11``); the next checkpoint is scheduled, ``START`` logged."""
    for job_id in decision.start:
        entry = draft.active[job_id]
        job = world.jobs[job_id]
        draft.free = allocate(draft.free, entry.view.gpus)
        draft.queued.remove(job_id)
        draft.running.append(job_id)
        overhead = world.preemption_overhead if entry.view.preemptions else 0
        resumes_at = draft.now + overhead
        epoch = entry.epoch + 1
        view = attrs.evolve(entry.view, running_since=resumes_at)
        draft.active[job_id] = ActiveJob(view, entry.next_index, epoch, entry.watches)
        gap = job.checkpoint_service(entry.next_index) - entry.view.service
        draft.events.append(_checkpoint_event(resumes_at + gap, job, entry.next_index, epoch))
        draft.log.append(
            LogRecord(draft.now, LogKind.START, job_id, gpus=view.gpus, index=view.evals_done)
        )


def _placed(entry: ActiveJob) -> tuple[int, bool]:
    return entry.view.gpus, entry.view.running_since is not None
