"""EvalStop: a function from (base policy, detector) to a policy.

:func:`evalstop` wraps any :class:`~evalstop.core.policy.Policy`. At each decision the wrapper
stops every running job of a watched kind whose detector has fired, keeps its best checkpoint,
and hands the base policy a view in which those jobs are gone and their GPUs are free, so the
base policy re-allocates them in the same event (spec ``EVS-1`` to ``EVS-5``).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView, Verdict
from evalstop.core.decision import Decision, StopOrder, trusted_decision, trusted_stop_order
from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.model import JobKind
from evalstop.core.policy import Policy, PolicyState

__all__ = ["DEFAULT_WATCHED_KINDS", "EvalStop", "EvalStopState", "evalstop"]

DEFAULT_WATCHED_KINDS: frozenset[JobKind] = frozenset({JobKind.RLHF})
"""Only RLHF optimises a learned reward, so only RLHF jobs are watched by default
(``EVS-4``); DPO and LoRA curves saturate and their noise would read as declines."""


@attrs.frozen(slots=True)
class EvalStop:
    """The wrapper policy; build it with :func:`evalstop`."""

    base: Policy
    detector: Detector[Any]
    kinds: frozenset[JobKind] = DEFAULT_WATCHED_KINDS

    @property
    def name(self) -> str:
        return f"{self.detector.name}+{self.base.name}"

    def _fired(self, job: JobView) -> bool:
        return _fired(job, self.detector.name, self._watched) is not None

    @functools.cached_property
    def _watched(self) -> tuple[JobKind, ...]:
        # the watched kinds as a tuple: a kind is found by identity, without hashing an enum
        # (a slot, not a field: no eq, no hash)
        return tuple(self.kinds)

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        """A decision is needed when the reporting job fired, or when the base wants one."""
        if changed is not None and self._fired(changed):
            return True
        return self.base.needs_decision(cause, changed)

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        inner = self.base.detectors
        return inner if self.detector in inner else (*inner, self.detector)

    def start_run(self, total_gpus: int) -> PolicyState | None:
        """An ordered state over the base's own (``POL-6``), or None if the base has none."""
        start = getattr(self.base, "start_run", None)
        base = start(total_gpus) if start is not None else None
        return None if base is None else EvalStopState(self, base)

    def __call__(self, view: ClusterView) -> Decision:
        name = self.detector.name
        stops: list[StopOrder] = []
        # Verdicts change only on the job that just reported (view.changed); when the view
        # does not say, every running job is looked at.
        candidates = view.running if view.changed is None else view.changed
        for job in candidates:
            if self._fired(job):
                verdict = job.verdict(name)
                assert verdict is not None
                stops.append(StopOrder(job.job_id, name, verdict.best_step, verdict.best_score))
        remaining = view.without_running(order.job_id for order in stops)
        return self.base(remaining).with_stops(tuple(stops))


class EvalStopState:
    """The wrapper's per-run state: its base's state, told first about the jobs it stops.

    ``decide`` is :meth:`EvalStop.__call__` on the same jobs: only the reporting job can have
    just fired, so it is stopped, the base forgets it and decides with its GPUs free. The
    changes the engine tells it go to the base's own methods, bound once (no call of the
    wrapper's in between); the detector's name and the watched kinds are read once a run.
    """

    def __init__(self, policy: EvalStop, base: PolicyState) -> None:
        """The state of ``policy`` for one run, over ``base``, its base's state."""
        self._base = base
        self._base_decide = base.decide
        self._name = policy.detector.name
        self._kinds = policy._watched
        # POL-10: the wrapper starts only what its base decides, so it keeps its starts when
        # the base does
        self.keeps_starts = bool(getattr(base, "keeps_starts", False))
        self.queued = base.queued
        self.started = base.started
        self.ended = base.ended
        # the base is told a report only when it reads them (POL-6)
        self.reported = base.reported if base.checkpoint_views else _ignore
        self._base_watched = getattr(base, "watched", None)
        # POL-14: a report of a job whose verdict has not fired matters only to the base
        self.decides_nothing = getattr(base, "decides_nothing", None)

    @property
    def checkpoint_views(self) -> bool:
        # Besides what the base needs, the wrapper acts only on a job whose verdict fired,
        # which the engine shows it whatever this says (POL-6).
        return self._base.checkpoint_views

    def watched(self, job: JobView) -> bool:
        """``POL-12``: the wrapper stops a job of a watched kind when its verdict fires; any
        other job's verdicts matter only as far as its base says (a base state that does not
        say may act on any)."""
        if job.kind in self._kinds:
            return True
        base = self._base_watched
        return base is None or bool(base(job))

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        if changed is None:
            return self._base_decide(time, free_gpus, cause, None)
        verdict = _fired(changed, self._name, self._kinds)
        if verdict is None:
            return self._base_decide(time, free_gpus, cause, changed)
        job_id = changed.job_id
        stop = (trusted_stop_order(job_id, self._name, verdict.best_step, verdict.best_score),)
        self.ended(job_id)
        decision = self._base_decide(time, free_gpus + changed.gpus, cause, None)
        # decision.with_stops(stop), without a call: the one decision built here
        return trusted_decision(decision.start, decision.preempt, stop + decision.stop)


def _fired(job: JobView, name: str, kinds: tuple[JobKind, ...]) -> Verdict | None:
    """The verdict of detector ``name`` on ``job`` if it fired and the wrapper stops the job
    for it (a running job of a watched kind, ``EVS-1``, ``EVS-4``), else None."""
    if job.kind not in kinds or job.running_since is None:
        return None
    verdict = job.verdict(name)
    return verdict if verdict is not None and verdict.fired else None


def _ignore(job: JobView) -> None:
    """A report the base does not read."""


def evalstop(
    base: Policy,
    detector: Detector[Any] | None = None,
    *,
    kinds: frozenset[JobKind] = DEFAULT_WATCHED_KINDS,
) -> EvalStop:
    """Wrap ``base`` so that jobs are stopped when ``detector`` fires (default k = 2 declines).

    Wrapping twice with the same detector stops the same jobs once: the outer wrapper removes
    them before the inner one looks (``EVS-5``).
    """
    return EvalStop(base, detector if detector is not None else DeclineDetector(2), kinds)
