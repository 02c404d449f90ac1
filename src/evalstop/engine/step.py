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
    CheckpointView,
    ClusterView,
    EventKind,
    JobView,
    make_job_view,
)
from evalstop.core.decision import Decision
from evalstop.core.detectors import observe, start_watch, verdict_of
from evalstop.core.gpus import allocate, release
from evalstop.core.model import Job, JobId
from evalstop.engine.errors import EngineError, InvalidDecisionError
from evalstop.engine.events import Event
from evalstop.engine.log import LogKind, LogRecord
from evalstop.engine.state import ActiveJob, Ended, JobStatus, SimState, Transition, World

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
        if index == job.checkpoints:
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
    if world.policy.needs_decision(event.kind, changed_view):
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
