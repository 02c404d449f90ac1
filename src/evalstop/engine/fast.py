"""The fast engine: an imperative simulator proven equal to the pure :func:`step` (``ENG-15``).

:class:`FastSimulator` handles the same events in the same order as
:class:`~evalstop.engine.simulator.Simulator` and writes the same log, but it owns one mutable
state and changes it in place: per event a few dictionary operations and a ``heapq`` push, no
new world value. Job views are built only when read, and a policy that keeps its own ordered
state (:class:`~evalstop.core.policy.IncrementalPolicy`, spec ``POL-6``) is told each change
instead of being shown a whole :class:`~evalstop.core.boundary.ClusterView`; any other policy
is consulted exactly as the pure engine consults it (slower: O(active) per decision).

The pure ``step`` stays the reference: the stateful tests drive both engines (and a naive
model) on every generated history and compare them after every event. A fast simulator that
raised is broken: it refuses further events. It names no policy and no detector class: it
specialises only through the policy's own state (``POL-6``; a state that takes its own starts
off its queue is not told them, ``POL-10``) and the in-place fold of a lone built-in rule
(``ENG-17``), which the core describes.

Longer than 400 lines: the hot loop and the handlers it calls share the engine's fields and
inline each other's work; split across modules they would read them through another object
at every event, which is the cost this module exists to avoid.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Watch, start_watch, verdict_of
from evalstop.core.model import Job, JobId
from evalstop.core.policy import Policy, PolicyState
from evalstop.core.registry import alone
from evalstop.engine.arrivals import Arrivals, QueueItem
from evalstop.engine.collector import engine_only, paused
from evalstop.engine.errors import EngineError
from evalstop.engine.log import KIND_CODES, EventLog, LogKind, LogRecord, LogWriter, Row
from evalstop.engine.record import JobRecord, materialize, placed
from evalstop.engine.simulator import check_policy
from evalstop.engine.state import JobStatus, Scenario, SimState, check_invariants
from evalstop.engine.validate import validate

__all__ = ["FastSimulator"]

_ARRIVAL, _CHECKPOINT, _COMPLETION = EventKind.ARRIVAL, EventKind.CHECKPOINT, EventKind.COMPLETION
_KINDS = {int(kind): kind for kind in EventKind}
_ARRIVE, _START, _CKPT, _PREEMPT, _FINISH = (
    KIND_CODES[kind]
    for kind in (LogKind.ARRIVE, LogKind.START, LogKind.CHECKPOINT, LogKind.PREEMPT, LogKind.FINISH)
)
_STOP = LogKind.STOP
# an enum's member read from its class costs about 100 ns a read (Python 3.11), a global 20
_FINISHED, _STOPPED = JobStatus.FINISHED, JobStatus.STOPPED

_COMPLETION_RANK, _CHECKPOINT_RANK = int(_COMPLETION), int(_CHECKPOINT)
_ARRIVAL_RANK = int(_ARRIVAL)
_isfinite = math.isfinite
_push = heapq.heappush
_record = tuple.__new__  # a LogRecord from all its fields (a named tuple's own __new__ is Python)
_FAR = 2**62  # run()'s first limit without a horizon: an int compares with a time faster than inf
Fold = Callable[[Any, int, float], bool]  # an in-place fold (ENG-17): fold(state, step, score)


class FastSimulator:
    """The imperative engine; the same interface as ``Simulator`` (``check=True``: invariants
    after every event, O(n) each)."""

    # slots: the hot loops read these fields at every event; as instance attributes a
    # thirtieth field made loss-aware on the Philly trace about 2% slower (CPython 3.11,
    # measured: likely its limit of 30 attributes stored inline); as slots their number does
    # not matter
    __slots__ = (
        "_active",
        "_arrivals",
        "_broken",
        "_check",
        "_decides_nothing",
        "_detectors",
        "_ended",
        "_engine_only",
        "_free",
        "_fresh",
        "_in_place",
        "_jobs",
        "_needs",
        "_needs_arrival",
        "_needs_completion",
        "_needs_unchanged",
        "_now",
        "_overhead",
        "_policy_state",
        "_rows",
        "_running",
        "_seq",
        "_tell_starts",
        "_total",
        "_verdicts0",
        "_watched",
        "_writer",
        "events_handled",
        "queue",
        "world",
    )

    def __init__(
        self,
        policy: Policy,
        total_gpus: int,
        *,
        preemption_overhead: int = 30,
        check: bool = False,
    ) -> None:
        check_policy(policy)
        if total_gpus <= 0:
            raise ValueError(f"total_gpus must be > 0, got {total_gpus}")
        self._jobs: dict[JobId, Job] = {}
        self.world = Scenario(self._jobs, policy, preemption_overhead)
        self._overhead = preemption_overhead
        self._total = self._free = total_gpus
        self._now = 0
        self.queue: list[QueueItem] = []  # a heap: the first pending event is queue[0]
        self._arrivals = Arrivals()  # the later arrivals, fed into it one by one
        self._seq = itertools.count().__next__  # the next event's sequence number (ENG-2)
        self._active: dict[JobId, JobRecord] = {}
        self._running: dict[JobId, None] = {}  # start order
        self._ended: dict[JobId, JobStatus] = {}
        self._writer = LogWriter(exact=True)  # see submit
        self._rows = self._writer.rows  # the engine appends log rows here (ENG-16)
        self.events_handled = 0
        self._check = check
        self._broken: BaseException | None = None
        self._detectors = policy.detectors
        self._in_place = alone(self._detectors)  # ENG-17: a built-in rule alone folds in place
        self._engine_only = engine_only(policy)
        start_run = getattr(policy, "start_run", None)
        self._policy_state: PolicyState | None = (
            start_run(total_gpus) if start_run is not None else None
        )
        self._needs = policy.needs_decision
        self._read_state(self._policy_state)
        # the initial watches, immutable values: shared by every record when no detector's
        # state lives outside the record (ENG-17), else made per job
        shared = self._in_place is not None or not policy.detectors
        self._fresh = self._watches() if shared else None
        # the verdicts every view shows before the job's first checkpoint, built once a run
        self._verdicts0 = tuple(map(verdict_of, self._detectors, self._watches()))

    def _read_state(self, state: PolicyState | None) -> None:
        """What the engine reads once a run of the policy's state, ``state`` (POL-6), and of
        the policy: when to tell it, ask it, or fold for it."""
        # POL-10: a state whose decide takes its own starts off its queue is not told them
        keeps = bool(getattr(state, "keeps_starts", False))
        self._tell_starts = state is not None and not keeps
        # ENG-13: a policy that keeps a state is asked once a run whether it needs a decision
        # after an event that changed no view, for each kind of event
        self._needs_unchanged: dict[EventKind, bool] | None = (
            None if state is None else {kind: bool(self._needs(kind, None)) for kind in EventKind}
        )
        unchanged = self._needs_unchanged or {}
        self._needs_arrival = unchanged.get(_ARRIVAL, True)
        self._needs_completion = unchanged.get(_COMPLETION, True)
        # POL-12: a state that never looks at a checkpoint may say whose verdicts it acts on;
        # the in-place folds of the others' reports are deferred (folded only when read)
        deferring = self._in_place is not None and not getattr(state, "checkpoint_views", True)
        watched = getattr(state, "watched", None) if deferring else None
        self._watched: Callable[[JobView], bool] | None = watched
        # POL-14: a state that can tell when a checkpoint decides nothing (a job not fired)
        self._decides_nothing: Callable[[int], bool] | None = (
            None
            if state is None or not state.checkpoint_views
            else getattr(state, "decides_nothing", None)
        )

    @property
    def log(self) -> EventLog:
        """The log written so far (later events do not change the returned value)."""
        return self._writer.log()

    @property
    def state(self) -> SimState:
        """The state the pure engine would hold now (built on each read: O(n))."""
        return materialize(
            self._now, self._total, self._free, self._active, self._running, self._ended
        )

    @property
    def pending(self) -> int:
        """How many events are pending: ``queue`` and the arrivals not fed into it yet."""
        return len(self.queue) + len(self._arrivals)

    def submit(self, job: Job) -> None:
        """Register ``job`` and schedule its arrival at its submit time."""
        spec, jobs = job.spec, self._jobs
        job_id, time = spec.job_id, spec.submit_time
        if job_id in jobs:
            raise EngineError(f"job {job_id} submitted twice")
        if time < self._now:
            raise EngineError(f"job {job_id} submitted at t={time}, before the clock t={self._now}")
        if spec.gpus > self._total:
            raise EngineError(f"job {job_id} needs {spec.gpus} GPUs; the cluster has {self._total}")
        # ENG-16: the rows' job ids and GPUs are exact ints while every job's are (the writer
        # then checks only the types of their times, steps and scores)
        if type(job_id) is not int or type(spec.gpus) is not int:
            self._writer.exact = False
        jobs[job_id] = job
        self._arrivals.submit(self.queue, (time, _ARRIVAL_RANK, self._seq(), job_id, 0, 0))

    def advance(self) -> bool:
        """Handle the next event; False when the queue is empty."""
        if self._broken is not None:
            raise EngineError(f"the simulator is broken by an earlier error: {self._broken}")
        if not self.queue:
            return False
        time, rank, _, job_id, index, epoch = heapq.heappop(self.queue)
        try:
            self._handle(time, _KINDS[rank], job_id, index, epoch)
        except BaseException as error:
            self._broken = error
            raise
        self.events_handled += 1
        if len(self._rows) >= self._writer.chunk:
            self._writer.pack()
        if self._check:
            problems = check_invariants(self.state, self._jobs)
            if problems:
                raise EngineError("; ".join(problems))
        return True

    def run(self, horizon: int | None = None) -> None:
        """Handle events until the queue drains or the next event is after ``horizon``
        (``ENG-9`` as in ``Simulator.run``). The cyclic garbage collector is paused meanwhile
        when no code but the library's runs (``collector.engine_only``, ``ENG-19``), and
        restored."""
        with paused(self._engine_only):
            self._run(horizon)

    def _run(self, horizon: int | None) -> None:
        if self._check:
            while self.queue and (horizon is None or self.queue[0][0] <= horizon):
                self.advance()
        else:
            if self._broken is not None:
                raise EngineError(f"the simulator is broken by an earlier error: {self._broken}")
            try:
                self._loop(_FAR if horizon is None else horizon)
                if horizon is None and self.queue:  # events after _FAR: none in practice
                    self._loop(math.inf)
            except BaseException as error:
                self._broken = error
                raise
        if not self.pending:
            self._writer.settle()  # a finished run: its log is kept, without spare room
        if not self.pending and self._active:
            stuck = sorted(self._active)[:5]
            raise EngineError(
                f"the queue drained with {len(self._active)} jobs never ended "
                f"(first: {stuck}); the policy left them waiting"
            )

    def _loop(self, limit: float) -> None:
        """The hot loop: :meth:`_quiet_loop` when a checkpoint is shown the policy only when a
        watch fired (POL-6) or the state cannot say it decides nothing (POL-14), else each
        event handled by :meth:`_arrival` or :meth:`_handle`."""
        state, folding, nothing = self._policy_state, self._in_place, self._decides_nothing
        if state is not None and (not state.checkpoint_views or nothing is not None):
            fold = None if folding is None else folding.fold
            self._quiet_loop(limit, fold, fold is None and bool(self._detectors))
            return
        queue, pop, handle, arrival = self.queue, heapq.heappop, self._handle, self._arrival
        rows, writer, arriving = self._rows, self._writer, _ARRIVAL_RANK
        chunk, now, handled = writer.chunk, self._now, 0
        try:
            while queue and queue[0][0] <= limit:
                now, rank, _, job_id, index, epoch = pop(queue)
                handled += 1
                if rank == arriving:
                    arrival(now, job_id)
                else:
                    handle(now, _KINDS[rank], job_id, index, epoch)
                if len(rows) >= chunk:
                    writer.pack()
        finally:
            self._now, self.events_handled = now, self.events_handled + handled
        writer.pack()

    def _quiet_loop(self, limit: float, fold: Fold | None, reports: bool) -> None:
        """``_loop`` when the policy looks at no checkpoint (POL-6), or only at those its state
        does not say decide nothing (POL-14): ``_checkpoint`` inline (ENG-17 ``fold``, or BND-5
        ``reports``); the next checkpoint replaces its event atop the heap."""
        queue, pop, report, nothing = self.queue, heapq.heappop, self._report, self._decides_nothing
        arrival, rows, writer, seq = self._arrival, self._rows, self._writer, self._seq
        row, chunk, complete = rows.append, writer.chunk, self._complete
        place = heapq.heappush if reports else heapq.heapreplace  # a detector's fold may raise
        arriving, ckpt, finish, checkpoint_rank = _ARRIVAL_RANK, _CKPT, _FINISH, _CHECKPOINT_RANK
        time, handled = self._now, 0
        try:
            while queue and queue[0][0] <= limit:
                time, rank, _, key, index, epoch = queue[0]
                handled += 1
                if rank == arriving:
                    pop(queue)
                    arrival(time, key)
                    if len(rows) >= chunk:
                        writer.pack()
                    continue
                record: JobRecord = key  # a checkpoint's event holds its job's record
                if (
                    record.epoch != epoch
                    or record.since is None
                    or reports
                    or index != record.evals_done + 1
                ):
                    pop(queue)
                    if not report(record, time, index, epoch):
                        continue  # stale (ENG-7)
                observations = record.observations
                obs = observations[index - 1]
                service, step, score = record.next_service, obs.step, obs.eval_score
                record.evals_done, record.service, record.since = index, service, time
                row((time, ckpt, record.job_id, record.gpus, index, step, score))
                if index == (planned := record.planned):
                    if not reports:
                        pop(queue)
                    complete(record, (time, finish, record.job_id, record.gpus, index, step, score))
                    if len(rows) >= chunk:
                        writer.pack()
                    continue
                record.next_service = due = (  # Job.checkpoint_service(index + 1) (MOD-3)
                    observations[index].step * record.duration // record.last_step
                )
                index += 1
                rank = checkpoint_rank if index < planned else _COMPLETION_RANK
                place(queue, (time + due - service, rank, seq(), record, index, epoch))
                watch = record.folding  # None: no fold, or folded only when read (POL-12)
                if watch is not None:
                    fold(watch, step, score)  # type: ignore[misc]  # set with record.folding
                    fired = watch.fired_step is not None
                else:
                    fired = reports and record.fired()
                if fired or (nothing is not None and not nothing(time)):
                    self._shown(record, time)
        finally:
            self._now, self.events_handled = time, self.events_handled + handled
        writer.pack()

    def _report(self, record: JobRecord, time: int, index: int, epoch: int) -> bool:
        """The quiet loop's checkpoint ``index`` of ``epoch`` at ``time``, popped, for
        ``record`` that is not folded in place: False when stale (ENG-7), raises when out of
        order, else its report is folded into the watches (before its row, as in
        ``_checkpoint``) and True."""
        if record.epoch != epoch or record.since is None:
            return False
        if index != record.evals_done + 1:
            raise _out_of_order(record.job_id, index, record)
        record.fold_report(time, index)
        return True

    # -- one event -----------------------------------------------------------------------------

    def _handle(self, time: int, kind: EventKind, key: Any, index: int, epoch: int) -> None:
        """The event of ``kind`` at ``time``: ``key`` is the arriving job's id, or the record
        of the job whose checkpoint ``index`` of ``epoch`` it is."""
        if time < self._now:
            raise EngineError(f"event at t={time} is before the clock t={self._now}")
        if kind is _ARRIVAL:
            self._arrival(time, key)
            return
        self._now = time
        changed: JobView | None = None
        record: JobRecord = key
        if record.epoch != epoch or record.since is None:
            return  # stale (ENG-7; an ended record's since is None): nothing but the clock
        if not self._checkpoint(record, index) and kind is _CHECKPOINT:
            state = self._policy_state
            if state is None or state.checkpoint_views:
                nothing = self._decides_nothing
                # a fired job is shown first (the wrapper's stop); nothing(time) may note the
                # empty decision, so it is asked last
                if (
                    nothing is not None
                    and not (self._detectors and record.fired())
                    and nothing(time)
                ):
                    if self._check:
                        self._check_nothing(record)
                    return  # POL-14: no view, no report, no decision
                changed = record.view()
                if state is not None:
                    state.reported(changed)
            elif record.deferred:  # the policy acts on no verdict of this job (POL-12)
                if self._check:
                    self._check_deferred(record)
                return
            elif record.fired():
                changed = record.view()
            else:
                return  # the policy cannot need a decision here (POL-6)
        self._consult(kind, changed)

    def _consult(self, kind: EventKind, changed: JobView | None) -> None:
        """Ask for a decision after an event of ``kind`` that changed ``changed``, and apply
        it. With a state, whether the policy needs one when no view changed is asked once a
        run for each kind (``ENG-13``)."""
        if changed is None and self._needs_unchanged is not None:
            if not self._needs_unchanged[kind]:
                return
        elif not self._needs(kind, changed):
            return
        state = self._policy_state
        if state is None or self._check:
            self._apply(self._decide(kind, changed))
            return
        decision = state.decide(self._now, self._free, kind, changed)
        if decision.start or decision.preempt or decision.stop:  # else nothing to check or do
            validate(decision, self._active, self._free, placed)
            self._apply(decision)

    def _watches(self) -> tuple[Watch[Any], ...]:
        return tuple(start_watch(d) for d in self._detectors)

    def _arrival(self, time: int, job_id: JobId) -> None:
        """Job ``job_id`` arrives at ``time`` (not before the clock): its record, then the
        decision."""
        self._now = time
        job = self._jobs.get(job_id)
        if job is None:
            raise EngineError(f"event for unknown job {job_id}")
        active = self._active
        if job_id in active:
            raise EngineError(f"job {job_id} arrived twice")
        arrivals = self._arrivals
        fed = arrivals.fed
        if fed is not None and fed[3] == job_id:
            arrivals.arrived(self.queue, time, job_id)
        watches = self._fresh if self._fresh is not None else self._watches()
        record = active[job_id] = JobRecord(
            job, self._detectors, watches, self._in_place, self._verdicts0
        )
        self._rows.append((time, _ARRIVE, job_id, record.gpus, 0, 0, 0.0))
        state = self._policy_state
        if state is None:
            self._consult(_ARRIVAL, None)
            return
        view = record.view()
        if self._watched is not None and not self._watched(view):
            record.defer()  # POL-12: its reports are folded only when read
        state.queued(view)
        if self._check:
            self._consult(_ARRIVAL, None)
        elif self._needs_arrival:  # _consult's state path, inline (one call less an event)
            decision = state.decide(time, self._free, _ARRIVAL, None)
            if decision.preempt or decision.stop:
                validate(decision, active, self._free, placed)
                self._apply(decision)
            elif decision.start:  # starts only: _apply's last phase, inline
                validate(decision, active, self._free, placed)
                start = self._start
                for started in decision.start:
                    start(active[started])

    def _checkpoint(self, record: JobRecord, index: int) -> bool:
        """Fold checkpoint ``index`` into ``record``; True when it was the last one (finish)."""
        now, job_id = self._now, record.job_id
        if index != record.evals_done + 1:
            raise _out_of_order(job_id, index, record)
        observations = record.observations
        obs = observations[index - 1]
        service, step, score = record.next_service, obs.step, obs.eval_score
        if record.folding is not None:
            record.fold(step, score)
        elif self._detectors and not record.deferred:
            record.fold_report(now, index)
        record.evals_done, record.service, record.since = index, service, now
        self._rows.append((now, _CKPT, job_id, record.gpus, index, step, score))
        if index == record.planned:
            self._end(record, (now, _FINISH, job_id, record.gpus, index, step, score))
            return True
        # Job.checkpoint_service(index + 1), inlined (MOD-3)
        gap = observations[index].step * record.duration // record.last_step - service
        record.next_service = service + gap
        rank = _COMPLETION_RANK if index + 1 == record.planned else _CHECKPOINT_RANK
        _push(self.queue, (now + gap, rank, self._seq(), record, index + 1, record.epoch))
        return False

    def _end(self, record: JobRecord, row: Row) -> None:
        """The job's last checkpoint was folded and logged: it finishes (``row``)."""
        job_id = record.job_id
        del self._running[job_id], self._active[job_id]
        self._free += record.gpus
        record.since = None  # an ended record's events are stale (ENG-5)
        self._ended[job_id] = _FINISHED
        if self._policy_state is not None:
            self._policy_state.ended(job_id)
        self._rows.append(row)

    def _complete(self, record: JobRecord, row: Row) -> None:
        """The job finishes (``row``: its time is the clock's), then the decision at its
        completion."""
        self._now = now = row[0]
        self._end(record, row)
        state = self._policy_state
        if state is None or self._check:
            self._consult(_COMPLETION, None)
        elif self._needs_completion:  # _consult's state path, inline
            decision = state.decide(now, self._free, _COMPLETION, None)
            if decision.start or decision.preempt or decision.stop:
                validate(decision, self._active, self._free, placed)
                self._apply(decision)

    def _check_deferred(self, record: JobRecord) -> None:
        """``check=True`` (ENG-20) for a deferred job (POL-12): once its watch fired, its view
        is what the pure engine shows the policy at this checkpoint, and the policy must not
        need a decision on it."""
        if record.fired():
            view = record.view()
            if self._needs(_CHECKPOINT, view):
                raise EngineError(
                    f"{self.world.policy.name}: at t={self._now} its PolicyState said it acts on "
                    f"no verdict of job {view.job_id} (POL-12), but the policy needs a decision "
                    "at its checkpoint"
                )

    def _check_nothing(self, record: JobRecord) -> None:
        """``check=True`` (ENG-20) at a checkpoint the state said decides nothing (POL-14):
        the policy itself, shown the job's view, must need no decision or decide nothing."""
        view = record.view()
        if self._needs(_CHECKPOINT, view):
            plain = self.world.policy(self._cluster(_CHECKPOINT, view))
            if plain.start or plain.preempt or plain.stop:
                raise EngineError(
                    f"{self.world.policy.name}: at t={self._now} its PolicyState said a "
                    f"checkpoint of job {view.job_id} decides nothing (POL-14), but the policy "
                    f"decided {plain}"
                )

    def _shown(self, record: JobRecord, time: int) -> None:
        """The policy is shown the running job's checkpoint at ``time`` (its watch fired, or
        the state did not say it decides nothing, POL-14): the report, if the state reads
        them, then the decision."""
        self._now = time
        view = record.view()
        state = self._policy_state
        if state is not None and state.checkpoint_views:
            state.reported(view)
        self._consult(_CHECKPOINT, view)

    # -- the decision ----------------------------------------------------------------------------

    def _decide(self, kind: EventKind, changed: JobView | None) -> Decision:
        state = self._policy_state
        if state is None:
            decision = self.world.policy(self._cluster(kind, changed))
        else:
            decision = state.decide(self._now, self._free, kind, changed)
            if self._check:  # the state against the policy itself (POL-6, ENG-15)
                plain = self.world.policy(self._cluster(kind, changed))
                if plain != decision:
                    raise EngineError(
                        f"{self.world.policy.name}: at t={self._now} its PolicyState decided "
                        f"{decision}, the policy {plain} on the same cluster (POL-6)"
                    )
        validate(decision, self._active, self._free, placed)
        return decision

    def _cluster(self, kind: EventKind, changed: JobView | None) -> ClusterView:
        active, running = self._active, self._running
        queued = sorted((r.job.spec.submit_time, j) for j, r in active.items() if j not in running)
        return ClusterView(
            time=self._now,
            total_gpus=self._total,
            free_gpus=self._free,
            queued=tuple([active[j].view() for _, j in queued]),
            running=tuple([active[j].view() for j in running]),
            cause=kind,
            changed=() if changed is None else (changed,),
        )

    def _apply(self, decision: Decision) -> None:
        """Stops, then preemptions, then starts (the phases of ``step``)."""
        if decision.stop:
            self._stop(decision)
        active = self._active
        for job_id in decision.preempt:
            self._preempt(active[job_id])
        start = self._start
        for job_id in decision.start:
            start(active[job_id])

    def _stop(self, decision: Decision) -> None:
        now, writer, state = self._now, self._writer, self._policy_state
        for order in decision.stop:
            job_id = order.job_id
            record = self._active.pop(job_id)
            gpus = 0
            if record.since is not None:
                gpus = record.gpus
                del self._running[job_id]
                self._free += gpus
                record.since = None  # its pending checkpoint is stale (ENG-5)
            self._ended[job_id] = _STOPPED
            if state is not None:
                state.ended(job_id)
            # LogRecord(now, _STOP, ...): every field given, without its Python-level __new__
            writer.append(
                _record(
                    LogRecord,
                    (
                        now,
                        _STOP,
                        job_id,
                        gpus,
                        record.evals_done,
                        order.saved_step,
                        order.saved_score,
                        order.reason,
                    ),
                )
            )

    def _preempt(self, record: JobRecord) -> None:
        now, job_id = self._now, record.job_id
        assert record.since is not None
        record.service += max(0, now - record.since)  # ENG-11: the exact service is kept
        record.since = None
        record.placement = (record.gpus, False)
        record.preemptions += 1
        record.cached_view = None
        del self._running[job_id]
        self._free += record.gpus
        self._rows.append((now, _PREEMPT, job_id, record.gpus, record.evals_done, 0, 0.0))
        if self._policy_state is not None:
            self._policy_state.queued(record.view())

    def _start(self, record: JobRecord) -> None:
        now, job_id, gpus = self._now, record.job_id, record.gpus
        self._free -= gpus
        self._running[job_id] = None
        resumes_at = now + self._overhead if record.preemptions else now
        record.epoch = epoch = record.epoch + 1
        record.since = resumes_at
        record.placement = (gpus, True)
        record.cached_view = None
        index = record.evals_done + 1
        rank = _COMPLETION_RANK if index == record.planned else _CHECKPOINT_RANK
        gap = record.next_service - record.service
        _push(self.queue, (resumes_at + gap, rank, self._seq(), record, index, epoch))
        self._rows.append((now, _START, job_id, gpus, record.evals_done, 0, 0.0))
        if self._tell_starts:
            self._policy_state.started(record.view())  # type: ignore[union-attr]


def _out_of_order(job_id: JobId, index: int, record: JobRecord) -> EngineError:
    return EngineError(f"job {job_id}: checkpoint {index}, expected {record.next_index}")
