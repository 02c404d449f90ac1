"""The fast engine's own decisions for the built-in systems (spec ``ENG-18``).

:class:`BuiltinSimulator` is a :class:`~evalstop.engine.fast.FastSimulator` that takes the
decisions of a built-in non-preemptive base (``fifo``, ``sjf-est``), alone or wrapped once by
EvalStop with one detector, itself, from its own records: no ``JobView``, no ``Decision``, no
validation per event. Its queue is one heap per GPU demand, keyed by a function of the job's
:class:`~evalstop.core.model.JobSpec` alone (every field of which is observable, ``BND-2``);
the stop rule reads only the job's kind and its verdict. What it reads of a job at a decision
is what the job's view shows (``BND-1``): the hidden fields (the true duration, the future
observations, the number of checkpoints) are read only to time the job's own events, as the
pure engine does. :func:`simulator_for` picks it for the systems it knows and the generic
engine for any other policy; the stateful tests prove both equal to the pure ``step``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

from evalstop.core.boundary import EventKind
from evalstop.core.detectors import DeclineDetector, Watch, start_watch
from evalstop.core.model import JobId, JobKind, JobSpec
from evalstop.core.policies import fifo, sjf_est
from evalstop.core.policy import Policy
from evalstop.core.wrapper import EvalStop
from evalstop.engine.errors import EngineError
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import KIND_CODES, LogKind, LogRecord, Row
from evalstop.engine.record import JobRecord
from evalstop.engine.state import JobStatus, SimState

__all__ = ["BuiltinPlan", "BuiltinSimulator", "builtin_plan", "simulator_for"]

Key = tuple[int, ...]
Kept = tuple[int | None, float | None, str]  # a stop's saved step and score, and its reason
_ARRIVAL, _CHECKPOINT_RANK = EventKind.ARRIVAL, int(EventKind.CHECKPOINT)
_COMPLETION_RANK = int(EventKind.COMPLETION)
_KINDS = {int(kind): kind for kind in EventKind}
_ARRIVAL_RANK = int(_ARRIVAL)
_ARRIVE, _START, _CKPT, _FINISH = (
    KIND_CODES[kind] for kind in (LogKind.ARRIVE, LogKind.START, LogKind.CHECKPOINT, LogKind.FINISH)
)
_isfinite = math.isfinite


def fifo_order(spec: JobSpec) -> Key:
    """``fifo``'s key of a job (``policies._fifo_key`` of its view, which never moves)."""
    return (spec.submit_time, spec.job_id)


def sjf_order(spec: JobSpec) -> Key:
    """``sjf-est``'s key of a job (``policies._sjf_key`` of its view, which never moves)."""
    return (spec.estimated_duration, spec.submit_time, spec.job_id)


_ORDERS: tuple[tuple[Policy, Callable[[JobSpec], Key]], ...] = (
    (fifo, fifo_order),
    (sjf_est, sjf_order),
)


class BuiltinPlan:
    """What :class:`BuiltinSimulator` needs to know of a built-in system."""

    __slots__ = ("kinds", "order", "stopper")

    def __init__(
        self, order: Callable[[JobSpec], Key], stopper: str | None, kinds: frozenset[JobKind]
    ) -> None:
        self.order = order  # the base's key, from the job's observable spec
        self.stopper = stopper  # the wrapper's detector name (None: no wrapper)
        self.kinds = kinds  # the kinds the wrapper stops


def builtin_plan(policy: Policy) -> BuiltinPlan | None:
    """The plan for ``policy`` if it is a built-in system this path takes (``ENG-18``): the
    ``fifo`` or ``sjf-est`` object itself, or :class:`EvalStop` once around one of them with a
    single detector; None for anything else."""
    stopper: str | None = None
    kinds: frozenset[JobKind] = frozenset()
    base = policy
    if type(policy) is EvalStop:
        if len(policy.detectors) != 1:
            return None
        base, stopper, kinds = policy.base, policy.detector.name, policy.kinds
    for builtin, order in _ORDERS:
        if base is builtin:
            return BuiltinPlan(order, stopper, kinds)
    return None


def simulator_for(
    policy: Policy, total_gpus: int, *, preemption_overhead: int = 30, check: bool = False
) -> FastSimulator:
    """The fast engine for ``policy``: :class:`BuiltinSimulator` when it knows the system,
    else the generic :class:`FastSimulator` (same results, ``ENG-15``, ``ENG-18``)."""
    engine = BuiltinSimulator if builtin_plan(policy) is not None else FastSimulator
    return engine(policy, total_gpus, preemption_overhead=preemption_overhead, check=check)


class BuiltinSimulator(FastSimulator):
    """The fast engine deciding itself for a built-in system (see the module)."""

    def __init__(
        self,
        policy: Policy,
        total_gpus: int,
        *,
        preemption_overhead: int = 30,
        check: bool = False,
    ) -> None:
        plan = builtin_plan(policy)
        if plan is None:
            raise ValueError(f"{policy.name}: not a system the built-in path takes (ENG-18)")
        super().__init__(policy, total_gpus, preemption_overhead=preemption_overhead, check=check)
        self._policy_state = None  # this class decides; nothing else is told (POL-6)
        self._plan = plan
        self._buckets: dict[int, list[Key]] = {}  # GPU demand -> heap of queued keys
        # A built-in decline rule lives in the record's fields (ENG-17): its initial watch,
        # an immutable value, is shared by every record; any other detector's is made per job.
        self._fresh = self._watches() if self._inline() else None

    @property
    def state(self) -> SimState:
        """As ``FastSimulator.state``; this engine builds no view while it runs, so the views
        cached by an earlier read are dropped first."""
        for record in self._active.values():
            record.cached_view = None
        return super().state

    # -- events ------------------------------------------------------------------------------

    def _handle(self, time: int, kind: EventKind, job_id: JobId, index: int, epoch: int) -> None:
        if time < self._now:
            raise EngineError(f"event at t={time} is before the clock t={self._now}")
        self._now = time
        if kind is _ARRIVAL:
            self._admit(job_id, time)
            return
        record = self._active.get(job_id)
        if record is None or record.epoch != epoch or record.since is None:
            return  # stale (ENG-7): nothing but the clock
        if self._checkpoint(record, index):
            self._start_all(self._choose(self._free))
        elif record.fired():
            self._stop_fired(job_id, record, time)

    def _admit(self, job_id: JobId, time: int) -> None:
        """An arrival: the job's record, then the decision. Nothing queued fits in the free
        GPUs between decisions (every decision first-fits the whole queue, and GPUs are freed
        only by events that decide), so first fit starts the new job alone, if it fits."""
        self._now = time
        job = self._jobs.get(job_id)
        if job is None:
            raise EngineError(f"event for unknown job {job_id}")
        if job_id in self._active:
            raise EngineError(f"job {job_id} arrived twice")
        self._arrivals.arrived(self.queue, time, job_id)
        watches = self._fresh if self._fresh is not None else self._watches()
        record = self._active[job_id] = JobRecord(job, self._detectors, watches)
        gpus = record.gpus
        self._rows.append((self._now, _ARRIVE, job_id, gpus, 0, 0, 0.0))
        if gpus <= self._free:
            self._launch(job_id, record)
            return
        bucket = self._buckets.get(gpus)
        if bucket is None:
            bucket = self._buckets[gpus] = []
        heapq.heappush(bucket, self._plan.order(job.spec))

    def _watches(self) -> tuple[Watch[Any], ...]:
        return tuple(start_watch(detector) for detector in self._detectors)

    def _inline(self) -> bool:
        """Whether checkpoints fold in the record (no detector, or the decline rule alone)."""
        detectors = self._detectors
        return not detectors or (len(detectors) == 1 and type(detectors[0]) is DeclineDetector)

    def _stop_fired(self, job_id: JobId, record: JobRecord, time: int) -> None:
        """A running job's watch fired at ``time``: stop it if the wrapper says so, then the
        base's decision with its GPUs free."""
        self._now = time
        keep = self._stop_keeps(job_id, record)
        if keep is None:
            return
        del self._active[job_id], self._running[job_id]
        self._free += record.gpus
        self._ended[job_id] = JobStatus.STOPPED
        self._writer.append(
            LogRecord(
                time,
                LogKind.STOP,
                job_id,
                record.gpus,
                record.evals_done,
                *keep,
            )
        )
        self._start_all(self._choose(self._free))

    # -- the decision ------------------------------------------------------------------------

    def _stop_keeps(self, job_id: JobId, record: JobRecord) -> Kept | None:
        """EvalStop's rule (``EVS-1``) for a running job whose verdict fired: the checkpoint
        to keep (its verdict's best step and score) and the detector's name, when the system
        has a wrapper that watches the job's kind; else None."""
        stopper, kinds = self._plan.stopper, self._plan.kinds
        if stopper is None or self._jobs[job_id].spec.kind not in kinds:
            return None
        if (folding := record.folding) is not None:  # the verdict's fields (ENG-17)
            return folding.best_step, folding.best_score, stopper
        verdict = record.verdicts()[0]
        return verdict.best_step, verdict.best_score, stopper

    def _choose(self, free: int) -> list[JobId]:
        """First fit in key order into ``free`` GPUs (``POL-2``): repeatedly the smallest key
        among the demands that still fit (a job skipped for lack of room never fits later).
        Takes the chosen jobs off the queue."""
        starts: list[JobId] = []
        buckets = self._buckets
        while free:
            best: Key | None = None
            take = 0
            for gpus, heap in buckets.items():
                if gpus <= free and heap and (best is None or heap[0] < best):
                    best, take = heap[0], gpus
            if best is None:
                break
            heapq.heappop(buckets[take])
            free -= take
            starts.append(best[-1])
        return starts

    def _start_all(self, starts: list[JobId]) -> None:
        active, launch = self._active, self._launch
        for job_id in starts:
            launch(job_id, active[job_id])

    def _launch(self, job_id: JobId, record: JobRecord) -> None:
        """``FastSimulator._start`` without telling a policy state (there is none)."""
        now, gpus = self._now, record.gpus
        self._free -= gpus
        self._running[job_id] = None
        resumes_at = now + (self._overhead if record.preemptions else 0)
        record.epoch = epoch = record.epoch + 1
        record.since = resumes_at
        index = record.next_index
        rank = _COMPLETION_RANK if index == record.planned else _CHECKPOINT_RANK
        time = resumes_at + record.next_service - record.service
        heapq.heappush(self.queue, (time, rank, self._seq, job_id, index, epoch))
        self._seq += 1
        self._rows.append((now, _START, job_id, gpus, record.evals_done, 0, 0.0))

    def _finish(self, job_id: JobId, record: JobRecord, row: Row) -> None:
        """The last checkpoint was folded and logged: the job ends (the ``row``'s time is the
        clock's), then the decision."""
        self._now = row[0]
        del self._running[job_id], self._active[job_id]
        self._free += record.gpus
        self._ended[job_id] = JobStatus.FINISHED
        self._rows.append(row)
        self._start_all(self._choose(self._free))

    # -- the hot loop ------------------------------------------------------------------------

    def _loop(self, limit: float) -> None:
        """As ``FastSimulator._loop``, with the arrivals and the jobs' checkpoints inline: a
        checkpoint is folded (the decline rule in the record, ENG-17, or no detector) and
        logged here; its job finishes, or is stopped if its watch fired. A system whose
        detector is not folded in the record has its checkpoints handled by :meth:`_handle`."""
        queue, active, pop, push = self.queue, self._active, heapq.heappop, heapq.heappush
        handle, rows, writer = self._handle, self._rows, self._writer
        row, chunk, detectors = rows.append, writer.chunk, self._detectors
        admit, finish = self._admit, self._finish
        folds, inline = bool(detectors), self._inline()
        time, pending, pushed = self._now, self.pending, self._seq
        try:
            while queue and queue[0][0] <= limit:
                if len(rows) >= chunk:
                    writer.pack()
                time, rank, _, job_id, index, epoch = pop(queue)
                if rank == _ARRIVAL_RANK:
                    admit(job_id, time)
                    continue
                if not inline:
                    handle(time, _KINDS[rank], job_id, index, epoch)
                    continue
                record = active.get(job_id)
                if record is None or record.epoch != epoch or record.since is None:
                    continue  # stale (ENG-7)
                if index != record.next_index:
                    raise _out_of_order(job_id, index, record)
                observations = record.observations
                obs = observations[index - 1]
                service, score, loss, step = record.next_service, obs.eval_score, obs.loss, obs.step
                fired = folds and record.fold(step, score)
                record.evals_done, record.service, record.since = index, service, time
                record.last_score = score
                if _isfinite(loss):
                    if record.first_loss is None:
                        record.first_loss = loss
                    record.previous_loss, record.last_loss = record.last_loss, loss
                row((time, _CKPT, job_id, record.gpus, index, step, score))
                if index == record.planned:
                    finish(job_id, record, (time, _FINISH, job_id, record.gpus, index, step, score))
                    continue
                record.next_index = nxt = index + 1
                # Job.checkpoint_service(nxt), inlined (MOD-3)
                gap = observations[index].step * record.duration // record.last_step - service
                record.next_service = service + gap
                rank = _COMPLETION_RANK if nxt == record.planned else _CHECKPOINT_RANK
                push(queue, (time + gap, rank, self._seq, job_id, nxt, epoch))
                self._seq += 1
                if fired:
                    self._stop_fired(job_id, record, time)
        finally:
            # every new event is numbered (ENG-2): what was popped was pending or new
            handled = pending + self._seq - pushed - self.pending
            self._now, self.events_handled = time, self.events_handled + handled
        writer.pack()


def _out_of_order(job_id: JobId, index: int, record: JobRecord) -> EngineError:
    return EngineError(f"job {job_id}: checkpoint {index}, expected {record.next_index}")
