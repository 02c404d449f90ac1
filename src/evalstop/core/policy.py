"""The policy contract: what the engine calls, and when it may skip the call (spec ``ENG-13``)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector

__all__ = ["Policy", "missing_policy_members"]


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


_MEMBERS = ("name", "detectors", "needs_decision", "__call__")


def missing_policy_members(policy: object) -> list[str]:
    """The members of :class:`Policy` that ``policy`` lacks (empty when it conforms)."""
    return [member for member in _MEMBERS if not hasattr(policy, member)]
