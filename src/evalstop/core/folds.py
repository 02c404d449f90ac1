"""The paper's decline rule, written once: its state and its fold in place (spec ``DET-10``).

:class:`DeclineFold` holds a watch of :class:`~evalstop.core.detectors.DeclineDetector` (the
rule's two numbers and the watch's four fields) as mutable fields; :func:`decline_folder` gives
the function that folds a report into it from the report's step and score alone. It is the
only copy of the rule's arithmetic (``DET-1`` to ``DET-3``, ``DET-5``, ``DET-11``):
``DeclineDetector.update`` runs it on a scratch fold, and the fast paths of the engine
(``ENG-17``), the monitor (``MON-14``, ``MON-17``) and ``fold_job`` run it on their records.
Which fold applies to a detector is said in one place, the registry's
:func:`~evalstop.core.registry.in_place` (the noise-aware rule's fold is
:mod:`evalstop.core.noise_fold`'s).

The module imports nothing of the package, so the detector that it folds can import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs

__all__ = ["DeclineFold", "DeclineRule", "DeclineState", "WatchFields", "decline_folder"]

S_co = TypeVar("S_co", covariant=True)


@attrs.frozen(slots=True)
class DeclineState:
    """Consecutive declines and the previous valid score.

    Attributes:
        declines: consecutive declines so far (0 after a tie or a rise).
        previous: the last valid eval score; None before the first.
    """

    declines: int = 0
    previous: float | None = None


class DeclineRule(Protocol):
    """The parameters of the decline rule (those of ``DeclineDetector``)."""

    @property
    def k(self) -> int: ...

    @property
    def min_delta(self) -> float: ...

    @property
    def warmup_steps(self) -> int: ...


class WatchFields(Protocol[S_co]):
    """What a fold is built from: a ``Watch``'s fields (``evalstop.core.detectors.Watch``)."""

    @property
    def rule(self) -> S_co: ...

    @property
    def evals(self) -> int: ...

    @property
    def best_step(self) -> int | None: ...

    @property
    def best_score(self) -> float | None: ...

    @property
    def fired_step(self) -> int | None: ...


class DeclineFold:
    """A watch of the decline rule as mutable fields, folded in place by a
    :func:`decline_folder` (spec ``DET-10``).

    Built from a watch (``DeclineFold(watch)``, as ``NoiseFold(watch)``). Mutable on purpose:
    it lives only inside a fast path, and :attr:`rule` gives the rule's immutable state.

    Attributes:
        declines: consecutive declines (``DeclineState.declines``).
        previous: the last valid score the rule counted (``DeclineState.previous``).
        evals: valid evaluations folded.
        best_step: step of the best valid score.
        best_score: that score.
        fired_step: step at which the rule fired; None until then.
    """

    __slots__ = ("best_score", "best_step", "declines", "evals", "fired_step", "previous")

    def __init__(self, watch: WatchFields[DeclineState]) -> None:
        rule = watch.rule
        self.declines = rule.declines
        self.previous = rule.previous
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    @property
    def rule(self) -> DeclineState:
        """The rule's state, as an immutable value."""
        return DeclineState(self.declines, self.previous)


def decline_folder(rule: DeclineRule) -> Callable[[DeclineFold, int, float], bool]:
    """The function ``fold(state, step, score)`` that folds a report of ``score`` at ``step``
    into ``state`` in place, as ``observe(rule, watch, view)`` does for any view with that step
    and score (the rule reads nothing else); True when ``score`` is finite. O(1).

    A decline is a valid score more than ``min_delta`` below the previous valid one
    (``DET-1``); it adds one to the count, anything else resets it (``DET-2``); a NaN or
    infinite score changes neither (``DET-3``); a report before ``warmup_steps`` is not
    counted by the rule (``DET-11``) but is a valid evaluation of the watch. The rule fires at
    ``k`` declines, and the fired step latches (``DET-5``)."""
    k, min_delta, warmup_steps = rule.k, rule.min_delta, rule.warmup_steps

    def fold(s: DeclineFold, step: int, score: float) -> bool:
        if score - score == 0.0:  # finite: inf - inf and NaN - NaN are NaN
            if step < warmup_steps:  # the rule ignores the report (DET-11)
                declines = s.declines
            else:
                previous = s.previous
                fall = previous is not None and score < previous - min_delta
                s.declines = declines = s.declines + 1 if fall else 0
                s.previous = score
            s.evals += 1
            best = s.best_score
            if best is None or score > best:
                s.best_step, s.best_score = step, score
            if declines >= k and s.fired_step is None:
                s.fired_step = step
            return True
        if s.declines >= k and s.fired_step is None:
            s.fired_step = step
        return False

    return fold
