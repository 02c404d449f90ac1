"""The policy contract: what the engine calls, and when it may skip the call (spec ``ENG-13``)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.model import JobId

__all__ = ["IncrementalPolicy", "Policy", "PolicyState", "missing_policy_members"]


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: a pure function from a cluster view to a decision.

    ``detectors`` lists the detectors whose verdicts the policy reads; the engine folds each
    job's checkpoints through them and shows the verdicts on the job views.

    ``needs_decision(cause, changed)`` is called first with the kind of the event and the view
    the event updated (None if none); the engine builds a cluster view and asks for a decision
    only when it returns True (spec ``ENG-13``). A policy that cannot tell returns True. It is
    part of the contract, not an optional hook: a policy without it is rejected when the
    simulator is built, so a misspelt method cannot silently change when a policy is asked.
    """

    @property
    def name(self) -> str: ...

    @property
    def detectors(self) -> tuple[Detector[Any], ...]: ...

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool: ...

    def __call__(self, view: ClusterView) -> Decision: ...


class PolicyState(Protocol):
    """A policy's own state for one run, kept in step with the engine (spec ``POL-6``).

    The fast engine (:class:`~evalstop.engine.fast.FastSimulator`) tells the state every change
    of the active jobs, so the state can keep them ordered (e.g. a ``SortedList`` by key)
    instead of ranking a whole :class:`ClusterView` at each decision. It sees only
    :class:`JobView` values (``BND-4``). Its contract: :meth:`decide` returns exactly what the
    policy returns for the :class:`ClusterView` of the same jobs, at every event.

    ``checkpoint_views`` says whether the policy can need a decision at a checkpoint that is
    not a completion. When False it promises that it can only if a verdict of the reporting job
    has fired: at any other such checkpoint the engine neither builds the job's view nor calls
    :meth:`reported` or the policy (a wrapper that stops fired jobs relies on this).

    Three members are optional: ``keeps_starts`` (``POL-10``), ``watched(job) -> bool``
    (``POL-12``; True for every job when absent): with ``checkpoint_views`` False, False for a
    job promises that the policy never needs a decision at a checkpoint of that job that does
    not end it, fired verdict or not. It is asked once, with the job's view when it arrives;
    the engine then folds that job's reports only when its watch is read. And
    ``decides_nothing(time) -> bool`` (``POL-14``; None or absent when the state cannot tell):
    with ``checkpoint_views`` True, True promises that at a checkpoint at ``time`` that does
    not end its job (whose verdicts have not fired) the decision is empty, noted by the state
    as :meth:`decide` would note it, and that skipping both :meth:`reported` and
    :meth:`decide` there changes no later decision.
    """

    @property
    def checkpoint_views(self) -> bool: ...

    def queued(self, job: JobView) -> None:
        """``job`` joined the queue (it arrived, or it was preempted)."""

    def started(self, job: JobView) -> None:
        """``job`` started (its view has the new ``running_since``)."""

    def reported(self, job: JobView) -> None:
        """A running job's view after a checkpoint that did not end it."""

    def ended(self, job_id: JobId) -> None:
        """The job finished or was stopped; a second call for the same job does nothing."""

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        """The decision the policy takes on the cluster view of the jobs it was told about."""
        ...


@runtime_checkable
class IncrementalPolicy(Policy, Protocol):
    """A policy that can keep its own ordered state (``POL-6``).

    ``start_run(total_gpus)`` returns a fresh :class:`PolicyState` for one run, or None when
    this instance cannot (then the engine builds a :class:`ClusterView` at each decision, as
    for any :class:`Policy`).
    """

    def start_run(self, total_gpus: int) -> PolicyState | None: ...


_MEMBERS = ("name", "detectors", "needs_decision", "__call__")


def missing_policy_members(policy: object) -> list[str]:
    """The members of :class:`Policy` that ``policy`` lacks (empty when it conforms)."""
    return [member for member in _MEMBERS if not hasattr(policy, member)]
