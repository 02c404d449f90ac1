"""The swept values of the three studies, in one place.

The paper's reproduction (:mod:`~evalstop.experiments.paper`, spec ``REP``), the detector
scoreboard (:mod:`~evalstop.experiments.scoreboard`, ``SCB-1`` to ``SCB-5``) and the trade-off
sweep (:mod:`~evalstop.experiments.tradeoff`, ``SCB-6`` to ``SCB-8``) all plan 10, 20 and 40
evaluations per run (:data:`DENSITIES`). Their noise levels and detectors differ on purpose,
so each study's is named for it: the paper's sweep is the paper's five sigmas and its three
detectors; the scoreboard adds each world's own noise and scores every registered detector.
The goal cells (:func:`goal_noise`) are shared by the scoreboard and the trade-off.

Every value here was fixed before any result it produces: the paper's by the paper, the
others by the issues that added the studies. Nothing is tuned to the outputs.
"""

from __future__ import annotations

from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.sim.worlds import WORLDS

__all__ = [
    "BASE_RATES",
    "DENSITIES",
    "DENSITY_KS",
    "KS",
    "NAD_WARMUP",
    "NAD_Z",
    "PAPER_DETECTORS",
    "PAPER_NOISES",
    "SCOREBOARD_DETECTORS",
    "SCOREBOARD_NOISES",
    "TRADEOFF_Z",
    "goal_noise",
]

DENSITIES: tuple[int, ...] = (10, 20, 40)
"""Evaluations planned per RLHF run: the paper's density sweep (``REP-8``), the scoreboard's
cells and the trade-off's goal cells."""

PAPER_DETECTORS: tuple[str, ...] = ("evalstop", "stopat-0.65", "lossplateau")
"""The detectors of the paper's noise and base-rate sweeps (``REP-1``)."""

PAPER_NOISES: tuple[float, ...] = (0.01, 0.02, 0.05, 0.08, 0.12)
"""The eval noise levels of the paper's noise and density sweeps."""

BASE_RATES: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)
"""The hacking shares of the paper's base-rate sweep."""

KS: tuple[int, ...] = (1, 2, 3, 4, 5)
"""The k values of the paper's threshold sweep."""

DENSITY_KS: tuple[int, ...] = (1, 2, 3)
"""The k values of the density sweep (beyond 3, recall only falls further)."""

SCOREBOARD_DETECTORS: tuple[str, ...] = (
    "evalstop",
    "noise-aware",
    "lossplateau",
    "stopat",
    "never",
    "ewma",
    "divergence",
    "kl-budget",
    "bocpd",
)
"""Registry names, each at its defaults (``stopat`` at 0.65 of the run; the last four chosen
by ``docs/scripts/tune_signals.py``, ``SIG-9``)."""

SCOREBOARD_NOISES: tuple[float | None, ...] = (None, 0.02, 0.05, 0.12)
"""The scoreboard's eval noise levels; None is the world's own (paper 0.02, calibrated 0.106)."""

TRADEOFF_Z: tuple[float, ...] = (1.0, 1.5, 2.0, 2.5, 3.0)
"""The noise-aware ``z`` values of the scoreboard's trade-off curve."""

NAD_Z: tuple[float, ...] = tuple(sorted({*TRADEOFF_Z, 2.25, 4.0, NoiseAwareDetector().z}))
"""The noise-aware ``z`` values of the trade-off sweep: the scoreboard's 1..3, 2.25, 4 and the
default."""

NAD_WARMUP: tuple[int, ...] = tuple(sorted({3, 4, 5, 6, NoiseAwareDetector().warmup_evals}))
"""The noise-aware warm-ups (evaluations) of the trade-off sweep, the default among them."""


def goal_noise(world: str) -> float:
    """The eval noise of a world's goal cells (the issue's goals): sigma 0.12 in the ``paper``
    world, the world's own noise in any other."""
    return 0.12 if world == "paper" else WORLDS[world].eval_noise
