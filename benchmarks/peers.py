"""What a scheduler researcher would write instead: an idiomatic SimPy model and a bare heapq loop.

Both model what the engine does under ``fifo`` and, with ``stop=True``, under
``evalstop+fifo``: each job arrives, waits in a queue in arrival order, starts when FIFO first
fit (no reservation) finds room at an arrival, a completion or a stop, reaches its checkpoints
one after the other (the last one is its completion; the engine logs every one), and frees its
GPUs. With ``stop``, an RLHF job whose eval score has declined at two consecutive checkpoints
(the paper's k = 2 rule, spec ``DET-1``, ``DET-3``: a strict decline, a non-finite score
skipped) is stopped at that checkpoint, unless it is its last, and its GPUs go to the queue in
the same event (``EVS-1``, ``EVS-2``). Equal-time ties follow the engine's rule (``ENG-2``):
completions, then checkpoints, then arrivals; within a rank, the order in which the events were
scheduled. :func:`outcome` reads the same (start, end, stopped) triples from an evalstop
result, so the benchmark checks that the three agree job by job before it compares times.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator, Iterable, Sequence
from typing import Any

import simpy
from simpy.events import NORMAL, URGENT, Event, EventPriority

from evalstop.core.model import Job, JobKind
from evalstop.engine.log import LogKind, LogRecord

__all__ = ["PeerJob", "outcome", "peer_jobs", "run_heapq", "run_simpy"]

PeerJob = tuple[int, int, int, tuple[int, ...], bool, tuple[float, ...]]
"""(job id, submit time, GPUs, service at each checkpoint (the last is the duration), whether
it is an RLHF job (watched by the stop rule), its eval score at each checkpoint)."""

Outcome = dict[int, tuple[int, int, bool]]
"""job id -> (first start, end, whether it was stopped)."""

K = 2


def peer_jobs(jobs: Iterable[Job]) -> list[PeerJob]:
    """The jobs as plain tuples, in arrival order (submit time, then id)."""
    out = [
        (
            job.job_id,
            job.spec.submit_time,
            job.spec.gpus,
            tuple(job.checkpoint_service(i) for i in range(1, job.checkpoints + 1)),
            job.spec.kind is JobKind.RLHF,
            tuple(obs.eval_score for obs in job.observations[: job.checkpoints]),
        )
        for job in jobs
    ]
    out.sort(key=lambda j: (j[1], j[0]))
    return out


def outcome(log: Iterable[LogRecord]) -> Outcome:
    """Each ended job's first start, its end and whether it was stopped, from a log."""
    starts: dict[int, int] = {}
    out: Outcome = {}
    for record in log:
        if record.kind is LogKind.START:
            starts.setdefault(record.job_id, record.time)
        elif record.kind is LogKind.FINISH or record.kind is LogKind.STOP:
            out[record.job_id] = (starts[record.job_id], record.time, record.kind is LogKind.STOP)
    return out


LAST = EventPriority(NORMAL + 1)


class _At(Event):
    """A timeout with a priority, so that completions come before arrivals at equal times."""

    def __init__(self, env: simpy.Environment, delay: int, priority: EventPriority) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority, delay)


def run_simpy(jobs: Sequence[PeerJob], gpus: int, stop: bool = False) -> Outcome:
    """The SimPy model: one process per job, a dispatcher called at arrivals, completions and
    stops."""
    env = simpy.Environment()
    queue: list[PeerJob] = []
    free = gpus
    out: Outcome = {}
    signals: dict[int, Event] = {}

    def dispatch() -> None:
        nonlocal free
        kept: list[PeerJob] = []
        for job in queue:
            if job[2] <= free:
                free -= job[2]
                signals[job[0]].succeed(env.now)
            else:
                kept.append(job)
        queue[:] = kept

    def job_process(job: PeerJob) -> Generator[Event, Any, None]:
        nonlocal free
        job_id, submit, demand, services, watched, scores = job
        yield _At(env, submit, LAST)  # arrivals last among equal-time events
        signals[job_id] = env.event()
        queue.append(job)
        dispatch()
        start = yield signals[job_id]
        done, last = 0, len(services) - 1
        declines, previous = 0, math.nan
        for i, service in enumerate(services):
            yield _At(env, service - done, URGENT if i == last else NORMAL)
            done = service
            if stop and watched and i < last:
                score = scores[i]
                if math.isfinite(score):
                    declines = declines + 1 if score < previous else 0
                    previous = score
                if declines >= K:  # stopped: its GPUs go to the queue now
                    free += demand
                    out[job_id] = (start, int(env.now), True)
                    dispatch()
                    return
        free += demand
        out[job_id] = (start, int(env.now), False)
        dispatch()

    for job in jobs:
        env.process(job_process(job))
    env.run()
    return out


def run_heapq(jobs: Sequence[PeerJob], gpus: int, stop: bool = False) -> Outcome:
    """The bare loop: one heap of (time, rank, seq, job, checkpoint) tuples."""
    heap = [(job[1], 2, index, index, 0) for index, job in enumerate(jobs)]  # seq = index
    heapq.heapify(heap)
    seq = len(heap)
    queue: list[int] = []
    free = gpus
    started: dict[int, int] = {}
    declines = [0] * len(jobs)
    previous = [math.nan] * len(jobs)
    out: Outcome = {}
    push, pop, isfinite = heapq.heappush, heapq.heappop, math.isfinite
    while heap:
        now, rank, _, index, cp = pop(heap)
        job = jobs[index]
        if rank == 2:
            queue.append(index)
        else:
            services = job[3]
            if cp < len(services):
                if stop and job[4]:
                    score = job[5][cp - 1]
                    if isfinite(score):
                        declines[index] = declines[index] + 1 if score < previous[index] else 0
                        previous[index] = score
                    if declines[index] >= K:
                        free += job[2]
                        out[job[0]] = (started[job[0]], now, True)
                        cp = 0  # stopped: no next checkpoint; the queue gets its GPUs below
                if cp:
                    rank = int(cp + 1 < len(services))  # 0: the next one is the completion
                    push(heap, (now + services[cp] - services[cp - 1], rank, seq, index, cp + 1))
                    seq += 1
                    continue
            else:
                free += job[2]
                out[job[0]] = (started[job[0]], now, False)
        kept: list[int] = []
        for q in queue:
            demand = jobs[q][2]
            if demand <= free:
                free -= demand
                started[jobs[q][0]] = now
                push(heap, (now + jobs[q][3][0], int(len(jobs[q][3]) > 1), seq, q, 1))
                seq += 1
            else:
                kept.append(q)
        queue = kept
    return out
