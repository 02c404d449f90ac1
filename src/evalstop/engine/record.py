"""The fast engine's mutable bookkeeping of one active job, and the way back to a ``SimState``.

A :class:`JobRecord` holds what :class:`~evalstop.engine.state.ActiveJob` holds, as fields
updated in place; its :class:`~evalstop.core.boundary.JobView` is built only when someone reads
it (a policy, a test) and cached until the job changes again. A checkpoint changes only the
evaluations done, the service and the segment's start: the last score and the losses a view
shows are read back from the job's reported observations when the view is built. When the
policy's detectors are exactly one built-in rule with an in-place fold
(:func:`~evalstop.core.registry.alone`), its watch lives in that fold's state, folded in place
(spec ``ENG-17``), and is built only when read.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any

from evalstop.core.boundary import (
    JobView,
    Verdict,
    checkpoint_report,
    trusted_job_view,
    trusted_verdict,
)
from evalstop.core.detectors import Detector, Watch, observe, verdict_of
from evalstop.core.model import Job, JobId, JobSpec
from evalstop.core.registry import InPlace, alone
from evalstop.engine.state import ActiveJob, Ended, JobStatus, SimState

__all__ = ["JobRecord", "materialize", "placed"]

_isfinite = math.isfinite


class JobRecord:
    """An active job in the fast engine (fields as in :class:`JobView` and ``ActiveJob``)."""

    __slots__ = (
        "_deferred",
        "_fold",
        "_folded",
        "_initial",
        "_last",
        "_watches",
        "cached_view",
        "detectors",
        "duration",
        "epoch",
        "evals_done",
        "folding",
        "gpus",
        "job",
        "job_id",
        "last_step",
        "next_service",
        "observations",
        "placement",
        "planned",
        "preemptions",
        "service",
        "since",
    )

    def __init__(
        self,
        job: Job,
        detectors: tuple[Detector[Any], ...],
        watches: tuple[Watch[Any], ...],
        fold: InPlace | None = None,
        initial: tuple[Verdict, ...] | None = None,
    ) -> None:
        """``fold`` is ``alone(detectors)`` (computed here when not given: a simulator passes
        the one it computed once); ``initial``, when given, the verdicts of ``watches`` (the
        watches before any report, so that a run's records share the verdicts their views
        show until their first checkpoint)."""
        self.job = job
        spec = job.spec
        self.job_id = spec.job_id
        self.gpus = gpus = spec.gpus
        self.placement = (gpus, False)  # what validate reads: (GPUs, running); see placed
        self.detectors = detectors  # the policy's, aligned with watches
        self._watches = watches
        self._initial = initial
        # ENG-17: a built-in rule alone keeps its watch as its in-place fold's state
        fold = alone(detectors) if fold is None and len(detectors) == 1 else fold
        self.folding: Any = None if fold is None else fold.kind(watches[0])
        self._deferred: Any = None  # the fold's state while it is folded only when read
        self._fold = None if fold is None else fold.fold
        self.observations = observations = job.observations  # read by Job.checkpoint_service
        self.planned = len(observations)  # Job.checkpoints
        self.duration = duration = job.truth.duration
        self.last_step = last_step = observations[-1].step
        # service at the next checkpoint: Job.checkpoint_service(1), inlined (MOD-3)
        self.next_service = observations[0].step * duration // last_step
        self.epoch = 0
        self.evals_done = 0
        self.service = 0
        self.since: int | None = None
        self.preemptions = 0
        # set to None when the job starts or is preempted; a view of fewer evaluations than
        # evals_done is stale (a checkpoint changes nothing else a view shows)
        self.cached_view: JobView | None = None
        self._last: JobView | None = None  # the last view built, stale or not (view)

    @property
    def next_index(self) -> int:
        """The checkpoint the job reaches next (1-based)."""
        return self.evals_done + 1

    @property
    def watches(self) -> tuple[Watch[Any], ...]:
        """The detector watches, aligned with ``detectors`` (built from the fold under ENG-17)."""
        folding = self._in_place()
        if folding is None:
            return self._watches
        return (InPlace.watch(folding),)

    @watches.setter
    def watches(self, watches: tuple[Watch[Any], ...]) -> None:
        if self.folding is not None or self._deferred is not None:
            raise TypeError("this record folds its rule in place (ENG-17)")
        self._watches = watches

    @property
    def deferred(self) -> bool:
        """Whether the in-place fold runs only when the watch is read (:meth:`defer`)."""
        return self._deferred is not None

    def defer(self) -> None:
        """Fold the job's reports only when its watch, its verdicts or its view is read, not at
        each checkpoint (``POL-12``: the policy acts on no verdict of this job). Only a record
        that folds in place (ENG-17) and has folded no report yet is deferred; ``folding`` is
        then None and the engine folds nothing into it."""
        if self.folding is not None and not self.evals_done:
            self._deferred, self._folded, self.folding = self.folding, 0, None

    def _in_place(self) -> Any:
        """The in-place fold's state with every reported checkpoint folded (None: no in-place
        fold): a deferred record folds the reports since the last read, from its observations
        (the fold reads only their step and score, ``DET-10``)."""
        folding = self.folding
        if folding is None and self._deferred is not None:
            folding, done = self._deferred, self.evals_done
            if self._folded < done:
                fold = self._fold
                for obs in self.observations[self._folded : done]:
                    fold(folding, obs.step, obs.eval_score)  # type: ignore[misc]
                self._folded = done
        return folding

    def fold(self, step: int, score: float) -> bool:
        """Fold one report into the in-place fold's state (ENG-17); True once fired."""
        folding = self.folding
        self._fold(folding, step, score)  # type: ignore[misc]  # set with folding
        return folding.fired_step is not None

    def fold_report(self, now: int, index: int) -> None:
        """Fold checkpoint ``index``, reported at ``now``, into each watch (any detectors, not
        folded in place) through one report, built as every engine builds it (``BND-5``)."""
        if self._fold is not None:
            raise TypeError("this record folds its rule in place (ENG-17)")
        view = checkpoint_report(self.job, index, now)
        detectors, watches = self.detectors, self._watches
        if len(detectors) == 1:  # the common case, without a generator
            self._watches = (observe(detectors[0], watches[0], view),)
            return
        pairs = zip(detectors, watches, strict=True)
        self._watches = tuple(observe(detector, watch, view) for detector, watch in pairs)

    def fired(self) -> bool:
        """Whether any of the job's detectors has fired."""
        folding = self._in_place()
        if folding is not None:
            return folding.fired_step is not None
        watches = self._watches
        if len(watches) == 1:  # the common case, without a generator
            return watches[0].fired_step is not None
        return any(watch.fired_step is not None for watch in watches)

    def verdicts(self) -> tuple[Verdict, ...]:
        """The verdicts a view shows (``verdict_of`` of each watch)."""
        if not self.detectors:
            return ()
        folding = self._in_place()
        if folding is None:
            return tuple(
                verdict_of(d, w) for d, w in zip(self.detectors, self._watches, strict=True)
            )
        fired = folding.fired_step
        return (
            trusted_verdict(
                self.detectors[0].name,
                fired is not None,
                fired,
                folding.evals,
                folding.best_step,
                folding.best_score,
            ),
        )

    def reported(self) -> tuple[float | None, float | None, float | None, float | None]:
        """The last score and the first, previous and last finite losses of the checkpoints
        reported so far, as ``boundary.record_losses`` folds them (a non-finite loss changes
        none of them): read back from the observations, from the newest, O(1) unless losses
        are missing."""
        done = self.evals_done
        if not done:
            return None, None, None, None
        observations = self.observations
        last = previous = None
        at = done - 1
        while at >= 0:
            loss = observations[at].loss
            if _isfinite(loss):
                if last is None:
                    last = loss
                else:
                    previous = loss
                    break
            at -= 1
        first = last
        if previous is not None:
            for obs in islice(observations, at + 1):
                if _isfinite(obs.loss):
                    first = obs.loss
                    break
        return observations[done - 1].eval_score, first, previous, last

    def view(self) -> JobView:
        """The job's view (built on demand, then cached until the job changes).

        Derived from the last view built (``_last``, ENG-15): its spec fields, and its report
        fields (score, losses, verdicts) when it shows as many evaluations as the job has done
        (a start or a preemption changes only the service, the segment's start and the
        preemptions); else the one report since is folded in, or all are read back."""
        view = self.cached_view
        done = self.evals_done
        if view is not None and view.evals_done == done:
            return view
        last = self._last
        source: JobView | JobSpec
        verdicts: tuple[Verdict, ...] | None
        if last is not None and last.evals_done == done:  # started or preempted since
            source, verdicts = last, last.verdicts
            score, first, previous, latest = (
                last.last_score,
                last.first_loss,
                last.previous_loss,
                last.last_loss,
            )
        else:
            source = self.job.spec if last is None else last
            if last is not None and last.evals_done == done - 1:  # one report since: fold it
                obs = self.observations[done - 1]
                score, loss = obs.eval_score, obs.loss
                first, previous, latest = last.first_loss, last.previous_loss, last.last_loss
                if _isfinite(loss):  # as boundary.record_losses folds it
                    previous, latest = latest, loss
                    if first is None:
                        first = loss
            else:
                score, first, previous, latest = self.reported()
            verdicts = self._initial if not done else None  # the watches moved since
            if verdicts is None:
                verdicts = self.verdicts() if self.detectors else ()
        view = self.cached_view = self._last = trusted_job_view(
            source.job_id,
            source.kind,
            source.gpus,
            source.submit_time,
            source.estimated_duration,
            source.eval_interval,
            source.tenant,
            source.name,
            done,
            self.service,
            self.since,
            self.preemptions,
            score,
            first,
            previous,
            latest,
            verdicts,
        )
        return view


def materialize(
    time: int,
    total: int,
    free: int,
    active: Mapping[JobId, JobRecord],
    running: Mapping[JobId, None],
    ended: Mapping[JobId, JobStatus],
) -> SimState:
    """The :class:`SimState` the pure engine would hold (O(n); for tests and checks)."""
    queued = sorted(
        (j for j in active if j not in running),
        key=lambda j: (active[j].job.spec.submit_time, j),
    )
    chain: Ended | None = None
    for job_id, status in ended.items():
        chain = Ended(job_id, status, chain)
    return SimState(
        time=time,
        total_gpus=total,
        free_gpus=free,
        queued=tuple(queued),
        running=tuple(running),
        active={
            j: ActiveJob(r.view(), r.next_index, r.epoch, r.watches) for j, r in active.items()
        },
        ended=chain,
        ended_count=len(ended),
    )


placed: Callable[[JobRecord], tuple[int, bool]] = operator.attrgetter("placement")
"""A record's GPUs and whether it runs, as :func:`~evalstop.engine.validate.validate` reads
them (the engine sets ``placement`` when the job starts and when it is preempted)."""
