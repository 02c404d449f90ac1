"""The information boundary: the only values schedulers and detectors ever receive.

A platform sees a job's submission (kind, GPUs, submit time, estimated duration), the service
it has given the job, and what the job reports at its checkpoints. It never sees the true
duration, the true number of steps, the noise-free quality or the hacking label (spec
``BND-1``). :func:`make_job_view` builds a :class:`JobView` from an explicit whitelist of
:class:`~evalstop.core.model.JobSpec` fields (``BND-2``); the views store plain values only, no
reference to a :class:`~evalstop.core.model.Job` and no closure over one (``BND-3``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from typing import Any

import attrs

from evalstop.core.model import Job, JobId, JobKind, JobSpec

__all__ = [
    "OBSERVABLE_SPEC_FIELDS",
    "CheckpointView",
    "ClusterView",
    "EventKind",
    "JobView",
    "Verdict",
    "checkpoint_report",
    "make_job_view",
    "trusted_job_view",
    "trusted_verdict",
]


class EventKind(enum.IntEnum):
    """What an event is; the value is its rank among events at the same time (spec ``ENG-2``).

    A job's last checkpoint is its completion, so completions free GPUs before the other
    checkpoints and arrivals of the same second are handled.
    """

    COMPLETION = 0
    CHECKPOINT = 1
    ARRIVAL = 2


OBSERVABLE_SPEC_FIELDS: tuple[str, ...] = (
    "estimated_duration",
    "eval_interval",
    "gpus",
    "job_id",
    "kind",
    "name",
    "submit_time",
    "tenant",
)
"""The whitelist: the :class:`JobSpec` fields a view may copy (spec ``BND-2``)."""


@attrs.frozen(slots=True)
class CheckpointView:
    """One checkpoint's observable report, the input of every detector's fold.

    Attributes:
        job_id: the reporting job.
        kind: its kind.
        index: the checkpoint's number, 1-based.
        step: its training step.
        time: when it was reported, in seconds of simulated (or wall) time.
        eval_score: the held-out eval score (may be NaN).
        loss: the training loss (may be NaN).
        proxy_reward: the reward model's score (RLHF only; None otherwise).
        estimated_progress: service received over the *estimated* duration, capped at 1: the
            platform's own guess of how far the job is, since the true length is hidden.
        kl: the KL divergence from the initial policy the run reports (None when it reports
            none; spec ``SIG-1``).
    """

    job_id: JobId
    kind: JobKind
    index: int
    step: int
    time: int
    eval_score: float
    loss: float
    proxy_reward: float | None
    estimated_progress: float
    kl: float | None = None


def checkpoint_report(job: Job, index: int, time: int) -> CheckpointView:
    """What checkpoint ``index`` (1-based) of ``job`` reports at ``time`` (``BND-5``): its
    observation's step, eval score, loss, proxy reward and KL, and the progress the platform
    estimates from the service received at that checkpoint over the *estimated* duration,
    capped at 1. The reference engine and the offline folds build every report with it. O(1).
    """
    obs = job.observations[index - 1]
    service = job.checkpoint_service(index)
    return CheckpointView(
        job_id=job.job_id,
        kind=job.spec.kind,
        index=index,
        step=obs.step,
        time=time,
        eval_score=obs.eval_score,
        loss=obs.loss,
        proxy_reward=obs.proxy_reward,
        estimated_progress=min(1.0, service / job.spec.estimated_duration),
        kl=obs.kl,
    )


@attrs.frozen(slots=True, weakref_slot=False)
class Verdict:
    """A detector's observable conclusion about one job so far.

    Attributes:
        detector: the detector's name.
        fired: True once the detector's rule has triggered (it latches).
        fired_step: the step of the checkpoint at which it first fired.
        evals: valid (non-NaN) evaluations seen.
        best_step: step of the best observed eval score so far (the checkpoint to keep).
        best_score: that score.
    """

    detector: str
    fired: bool
    fired_step: int | None
    evals: int
    best_step: int | None
    best_score: float | None


@attrs.frozen(slots=True, weakref_slot=False)
class JobView:
    """Everything a policy may know about one job (spec ``BND-1``).

    Service is kept as ``service`` seconds banked before the current run segment plus the
    segment's start (``running_since``), so that :meth:`attained_service` is exact at any time
    without rebuilding the view at every event.

    Attributes:
        job_id: the job.
        kind: LoRA, DPO or RLHF.
        gpus: GPUs it needs, all at once.
        submit_time: when it was submitted, in seconds.
        estimated_duration: the user's estimate of its service time, in seconds.
        eval_interval: training steps between its evaluations.
        tenant: who submitted it (spec ``TAB-5``).
        name: the submission's name, if it has one (spec ``TAB-5``).
        evals_done: checkpoints reported so far.
        service: seconds of service banked before the current run segment.
        running_since: when the current run segment started; None when not running.
        preemptions: times the job was preempted.
        last_score: the last eval score reported; None before the first.
        first_loss: the first finite training loss reported.
        previous_loss: the finite loss reported before ``last_loss``.
        last_loss: the last finite loss reported.
        verdicts: the verdicts of the detectors the policy reads, one per detector.
    """

    job_id: JobId
    kind: JobKind
    gpus: int
    submit_time: int
    estimated_duration: int
    eval_interval: int
    tenant: str
    name: str | None
    evals_done: int = 0
    service: int = 0
    running_since: int | None = None
    preemptions: int = 0
    last_score: float | None = None
    first_loss: float | None = None
    previous_loss: float | None = None
    last_loss: float | None = None
    verdicts: tuple[Verdict, ...] = ()

    def attained_service(self, now: int) -> int:
        """Seconds of service received up to ``now``."""
        if self.running_since is None:
            return self.service
        return self.service + max(0, now - self.running_since)

    def attained_gpu_service(self, now: int) -> int:
        """GPU-seconds of service received up to ``now`` (the LAS priority)."""
        return self.gpus * self.attained_service(now)

    def estimated_remaining(self, now: int) -> int:
        """The estimated duration minus the service received, floored at 0 (SRTF-Est)."""
        return max(0, self.estimated_duration - self.attained_service(now))

    def estimated_progress(self, now: int) -> float:
        """Service received over the estimated duration, capped at 1."""
        return min(1.0, self.attained_service(now) / self.estimated_duration)

    def recent_loss_drop(self) -> float | None:
        """Normalised loss reduction over the last evaluation interval (LossAware priority).

        ``(previous_loss - last_loss) / |first_loss|``; None until two finite losses exist.
        """
        if self.previous_loss is None or self.last_loss is None or self.first_loss is None:
            return None
        scale = abs(self.first_loss) or 1.0
        return (self.previous_loss - self.last_loss) / scale

    def after_checkpoint(
        self,
        index: int,
        service: int,
        now: int,
        score: float,
        loss: float,
        verdicts: tuple[Verdict, ...],
    ) -> JobView:
        """This view once checkpoint ``index`` has reported at ``now`` (a running job).

        Built field by field rather than with ``attrs.evolve``: it runs once per event.
        """
        first_loss, previous_loss, last_loss = record_losses(self, loss)
        return JobView(
            job_id=self.job_id,
            kind=self.kind,
            gpus=self.gpus,
            submit_time=self.submit_time,
            estimated_duration=self.estimated_duration,
            eval_interval=self.eval_interval,
            tenant=self.tenant,
            name=self.name,
            evals_done=index,
            service=service,
            running_since=now,
            preemptions=self.preemptions,
            last_score=score,
            first_loss=first_loss,
            previous_loss=previous_loss,
            last_loss=last_loss,
            verdicts=verdicts,
        )

    def verdict(self, detector: str) -> Verdict | None:
        """The verdict of the named detector, or None if it does not watch this job."""
        for verdict in self.verdicts:
            if verdict.detector == detector:
                return verdict
        return None


def make_job_view(spec: JobSpec) -> JobView:
    """Build the initial view of a job from the whitelisted fields of its spec (``BND-2``)."""
    fields = {name: getattr(spec, name) for name in OBSERVABLE_SPEC_FIELDS}
    return JobView(**fields)


def _filling(cls: type) -> type:
    """A mutable class of the frozen ``cls``'s slot layout (its fields as slots, and no other):
    a trusted constructor (``BND-6``) fills an object of it with plain stores, then makes it a
    ``cls`` by setting its class, which CPython allows between classes of one layout."""
    names = tuple(sorted(field.name for field in attrs.fields(cls)))
    return type(f"_{cls.__name__}Filling", (), {"__slots__": names})


_Filling, _VerdictFilling = _filling(JobView), _filling(Verdict)
_new = object.__new__


def trusted_job_view(
    job_id: JobId,
    kind: JobKind,
    gpus: int,
    submit_time: int,
    estimated_duration: int,
    eval_interval: int,
    tenant: str,
    name: str | None,
    evals_done: int,
    service: int,
    running_since: int | None,
    preemptions: int,
    last_score: float | None,
    first_loss: float | None,
    previous_loss: float | None,
    last_loss: float | None,
    verdicts: tuple[Verdict, ...],
) -> JobView:
    """``JobView(job_id, ..., verdicts)``, every field given, positionally (spec ``BND-6``): an
    equal, frozen ``JobView``, its fields stored into a mutable object of its slot layout whose
    class is then set to ``JobView`` (attrs' ``__init__`` fills each slot through
    ``object.__setattr__``; a ``JobView`` has no validator or converter to skip), in about a
    third of the CPU instructions. For the fast engine's views (ENG-15)."""
    view: Any = _new(_Filling)  # its attributes are JobView's (a test pins them)
    view.job_id = job_id
    view.kind = kind
    view.gpus = gpus
    view.submit_time = submit_time
    view.estimated_duration = estimated_duration
    view.eval_interval = eval_interval
    view.tenant = tenant
    view.name = name
    view.evals_done = evals_done
    view.service = service
    view.running_since = running_since
    view.preemptions = preemptions
    view.last_score = last_score
    view.first_loss = first_loss
    view.previous_loss = previous_loss
    view.last_loss = last_loss
    view.verdicts = verdicts
    view.__class__ = JobView
    return view  # type: ignore[no-any-return]


def trusted_verdict(
    detector: str,
    fired: bool,
    fired_step: int | None,
    evals: int,
    best_step: int | None,
    best_score: float | None,
) -> Verdict:
    """``Verdict(detector, ..., best_score)``, every field given, positionally, built as
    :func:`trusted_job_view` builds a view (``BND-6``): an equal, frozen ``Verdict``."""
    verdict: Any = _new(_VerdictFilling)  # its attributes are Verdict's (a test pins them)
    verdict.detector = detector
    verdict.fired = fired
    verdict.fired_step = fired_step
    verdict.evals = evals
    verdict.best_step = best_step
    verdict.best_score = best_score
    verdict.__class__ = Verdict
    return verdict  # type: ignore[no-any-return]


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def record_losses(view: JobView, loss: float) -> tuple[float | None, float | None, float | None]:
    """``(first_loss, previous_loss, last_loss)`` after a checkpoint reports ``loss``.

    A non-finite loss is ignored (the fields stay as they were).
    """
    finite = _finite_or_none(loss)
    if finite is None:
        return view.first_loss, view.previous_loss, view.last_loss
    first = view.first_loss if view.first_loss is not None else finite
    return first, view.last_loss, finite


@attrs.frozen(slots=True)
class ClusterView:
    """What a policy receives at each decision: the clock, GPU counts and the active jobs.

    Finished and stopped jobs are not shown: no policy may act on them (spec ``ENG-5``).

    Attributes:
        time: the clock, in seconds.
        total_gpus: GPUs in the cluster.
        free_gpus: GPUs free now.
        queued: jobs waiting, in arrival order (ties by job id).
        running: jobs running, in start order.
        cause: the kind of event that prompted the decision; None when unknown.
        changed: the views that event updated, so that a wrapper can look at the one job that
            just reported instead of every job; None means "unknown: look at all of them".
    """

    time: int
    total_gpus: int
    free_gpus: int
    queued: tuple[JobView, ...]
    running: tuple[JobView, ...]
    cause: EventKind | None = None
    changed: tuple[JobView, ...] | None = None

    def without_running(self, job_ids: Iterable[JobId]) -> ClusterView:
        """This view with the given running jobs removed and their GPUs counted as free."""
        drop = set(job_ids)
        if not drop:
            return self
        kept = tuple(job for job in self.running if job.job_id not in drop)
        freed = sum(job.gpus for job in self.running if job.job_id in drop)
        changed = (
            None
            if self.changed is None
            else tuple(job for job in self.changed if job.job_id not in drop)
        )
        return ClusterView(
            time=self.time,
            total_gpus=self.total_gpus,
            free_gpus=self.free_gpus + freed,
            queued=self.queued,
            running=kept,
            cause=self.cause,
            changed=changed,
        )
