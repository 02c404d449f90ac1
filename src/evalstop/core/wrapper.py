"""EvalStop: a function from (base policy, detector) to a policy.

:func:`evalstop` wraps any :class:`~evalstop.core.policy.Policy`. At each decision the wrapper
stops every running job of a watched kind whose detector has fired, keeps its best checkpoint,
and hands the base policy a view in which those jobs are gone and their GPUs are free, so the
base policy re-allocates them in the same event (spec ``EVS-1`` to ``EVS-5``).
"""

from __future__ import annotations

from typing import Any

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision, StopOrder
from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.model import JobKind
from evalstop.core.policy import Policy

__all__ = ["DEFAULT_WATCHED_KINDS", "EvalStop", "evalstop"]

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
        if job.kind not in self.kinds or job.running_since is None:
            return False
        verdict = job.verdict(self.detector.name)
        return verdict is not None and verdict.fired

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        """A decision is needed when the reporting job fired, or when the base wants one."""
        if changed is not None and self._fired(changed):
            return True
        return self.base.needs_decision(cause, changed)

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        inner = self.base.detectors
        return inner if self.detector in inner else (*inner, self.detector)

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
