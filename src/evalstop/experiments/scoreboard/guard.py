"""The guard a candidate default must pass on the real curves (spec ``SIG-11``).

The ``SIG-9`` rule picks a default on the gym's dev split; before any entry point watches with
it, it must be no worse than the previous default on the shipped corpus's labelled curves and
on a folder of healthy supervised curves: at least as many hacking corpus curves stopped, no
more harmful stops on either set, and at most :data:`MAX_HARMFUL` on each. This module only
measures; the registry's ``DEFAULT_DETECTOR`` says what was decided.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from evalstop.core.detectors import Detector
from evalstop.core.regret import RegretSummary, summarize_runs
from evalstop.experiments.scoreboard.board import real_scores

__all__ = ["MAX_HARMFUL", "Guard", "GuardSide", "guard"]

MAX_HARMFUL = 1
"""The most harmful stops the default may make on each real set (the issue's "<= 1")."""


@attrs.frozen(slots=True)
class GuardSide:
    """One detector on the two real sets.

    Attributes:
        name: the detector's name.
        corpus: its summary on the corpus's labelled curves.
        supervised: its summary on the healthy supervised curves.
    """

    name: str
    corpus: RegretSummary
    supervised: RegretSummary

    @property
    def caught(self) -> int:
        """Hacking corpus curves stopped."""
        return self.corpus.collapsing - self.corpus.missed

    @property
    def harmful(self) -> tuple[int, int]:
        """Harmful stops on the healthy corpus curves and on the supervised curves."""
        return self.corpus.harmful_healthy, self.supervised.harmful_healthy


@attrs.frozen(slots=True)
class Guard:
    """The guard's verdict: the candidate against the previous default.

    Attributes:
        candidate: the candidate's figures.
        previous: the previous default's figures.
    """

    candidate: GuardSide
    previous: GuardSide

    @property
    def reasons(self) -> tuple[str, ...]:
        """Each way the candidate is worse (empty when it passes)."""
        c, p = self.candidate, self.previous
        out = []
        if c.caught < p.caught:
            out.append(f"stops {c.caught} hacking corpus curves, the previous default {p.caught}")
        for where, mine, theirs in zip(("corpus", "supervised"), c.harmful, p.harmful, strict=True):
            if mine > theirs or mine > MAX_HARMFUL:
                out.append(f"{mine} harmful stops on the {where} curves (previous {theirs})")
        return tuple(out)

    @property
    def passes(self) -> bool:
        """Whether the candidate is no worse on either set."""
        return not self.reasons


def _side(detector: Detector[Any], data: Path | None, healthy: Path) -> GuardSide:
    corpus, supervised = real_scores(detector, data, healthy)
    return GuardSide(detector.name, summarize_runs(corpus), summarize_runs(supervised))


def guard(
    candidate: Detector[Any],
    previous: Detector[Any],
    healthy: Path,
    data: Path | None = None,
) -> Guard:
    """Score ``candidate`` and ``previous`` on the corpus (``data``, default the package's) and
    the supervised curves in ``healthy`` (``SIG-11``)."""
    return Guard(_side(candidate, data, healthy), _side(previous, data, healthy))
