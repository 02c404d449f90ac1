"""The trade-off sweep: every detector's main knob at the goal cells, beside keep floors.

Spec ``SCB-6`` to ``SCB-8``. On the scoreboard's evaluation data (seed 1; the ``paper`` world
at sigma 0.12 and the ``calibrated`` world at its own noise; 10, 20 and 40 evaluations per run)
each detector is scored at a fixed grid of operating points (:data:`SWEEP`): the noise-aware
detector over ``z`` and its warm-up, EvalStop's rule over ``k``, the loss plateau over its
patience, the fixed stop over its fraction of the run. Beside them, the keep floors
(``RGT-6``) of the two keep rules on the same runs. The same sweep runs on the real RLHF
curves, as a disclosure of sensitivity: the defaults are fixed (``NAD-9``) and nothing here
chooses a parameter. The scoreboard's own ``z`` trade-off (``SCB-1``) is the slice of this
sweep at the default warm-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.keep_floor import keep_floors, kept_indices
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import KEEP_MEMORY, NoiseAwareDetector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES, NAD_WARMUP, NAD_Z, goal_noise
from evalstop.experiments.scoreboard.board import real_scores, sim_scores
from evalstop.sim.detection import job_run_score
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import WORLDS

__all__ = [
    "GOAL_HARMFUL",
    "GOAL_RECALL",
    "GOAL_REGRET",
    "KEEP_RULES",
    "SWEEP",
    "OperatingPoint",
    "Panel",
    "Tradeoff",
    "floor_points",
    "frontier",
    "nearest_goal",
    "real_points",
    "run_tradeoff",
    "sim_panel",
]

GOAL_RECALL = 0.90
GOAL_HARMFUL = 0.05
GOAL_REGRET = 0.02
"""The issue's goal box: recall >= 90%, harmful stops on <= 5% of healthy runs, mean regret
<= 2% of the gain."""

KEEP_RULES: tuple[tuple[str, float | None], ...] = (
    ("best observed", None),
    (f"level({KEEP_MEMORY:g})", KEEP_MEMORY),
)
"""The keep rules whose floors are reported: the best reported score (``DET-4``, every
detector but the noise-aware one) and the noise-aware level keep at its default (``NAD-10``)."""


def _sweep() -> tuple[tuple[str, str, Detector[Any]], ...]:
    nad = [
        ("noise-aware", f"z={z:g} warmup={w}", NoiseAwareDetector(z=z, warmup_evals=w))
        for w in NAD_WARMUP
        for z in NAD_Z
    ]
    rest: list[tuple[str, str, Detector[Any]]] = [
        *(("evalstop", f"k={k}", DeclineDetector(k)) for k in (1, 2, 3, 4, 6)),
        *(("lossplateau", f"patience={p}", LossPlateau(patience=p)) for p in (1, 2, 3, 5, 8)),
        *(("stopat", f"fraction={f:g}", StopAtProgress(f)) for f in (0.3, 0.5, 0.65, 0.8, 0.9)),
    ]
    return (*nad, *rest)


SWEEP: tuple[tuple[str, str, Detector[Any]], ...] = _sweep()
"""``(family, knob setting, detector)`` of every operating point, fixed before any result."""


@attrs.frozen(slots=True)
class OperatingPoint:
    """One operating point's (or floor's) summary on one data set.

    Attributes:
        family: the detector's registry name, or ``floor`` for a keep floor.
        setting: the knob setting (``z=2 warmup=5``), or the floor's name.
        summary: the regret-first scores (``RGT-3``, ``RGT-5``).
        default: the detector at its registered defaults.
    """

    family: str
    setting: str
    summary: RegretSummary
    default: bool = False


@attrs.frozen(slots=True)
class Panel:
    """A goal cell: its world, noise and density, the sweep's points and the keep floors."""

    world: str
    noise: float
    evals: int
    points: tuple[OperatingPoint, ...]
    floors: tuple[OperatingPoint, ...]


@attrs.frozen(slots=True)
class Tradeoff:
    """Every goal cell's panel, the real-curve sweep (corpus, healthy folder) and the setup."""

    panels: tuple[Panel, ...]
    real: tuple[OperatingPoint, ...]
    healthy: tuple[OperatingPoint, ...]
    jobs: int
    seed: int


def _is_default(detector: Detector[Any]) -> bool:
    defaults: tuple[Detector[Any], ...] = (NoiseAwareDetector(), DeclineDetector(), LossPlateau())
    return detector in defaults or detector == StopAtProgress()


def floor_points(config: WorkloadConfig, seed: int) -> tuple[OperatingPoint, ...]:
    """The keep floors (``RGT-6``) of :data:`KEEP_RULES` on the RLHF runs of a workload."""
    jobs = [job for job in generate(config, seed).jobs if job.spec.kind is JobKind.RLHF]
    names = ("hindsight keep", "stop floor", "oracle stop")
    scores: dict[tuple[str, str], list[RunScore]] = {}
    for job in jobs:
        steps = [obs.step for obs in job.observations]
        observed = [obs.eval_score for obs in job.observations]
        quality = [float(value) for value in job.truth.quality]
        for rule, memory in KEEP_RULES:
            floors = keep_floors(quality, kept_indices(steps, observed, memory))
            choices = (floors.hindsight, floors.stop_floor, floors.oracle_stop)
            for name, choice in zip(names, choices, strict=True):
                run = job_run_score(job, choice.stop, choice.kept)
                scores.setdefault((name, rule), []).append(run)
    return tuple(
        OperatingPoint("floor", f"{name}, keep {rule}", summarize_runs(runs))
        for (name, rule), runs in scores.items()
    )


def sim_panel(world: str, evals: int, jobs: int, seed: int) -> Panel:
    """One goal cell: the sweep's points and the keep floors on the same runs (``SCB-6``)."""
    noise = goal_noise(world)
    config = WorkloadConfig(n_jobs=jobs, world=WORLDS[world], eval_noise=noise, evals_per_run=evals)
    detectors = [detector for _, _, detector in SWEEP]
    points = tuple(
        OperatingPoint(family, setting, summarize_runs(runs), _is_default(detector))
        for (family, setting, detector), runs in zip(
            SWEEP, sim_scores(detectors, config, seed), strict=True
        )
    )
    return Panel(world, config.sigma, evals, points, floor_points(config, seed))


def real_points(data: Path | None, healthy: Path | None) -> tuple[tuple[OperatingPoint, ...], ...]:
    """The sweep on the real corpus and on a healthy folder (``SCB-7``): a disclosure of
    sensitivity, not a tuning."""
    corpus: list[OperatingPoint] = []
    extra: list[OperatingPoint] = []
    for family, setting, detector in SWEEP:
        runs, healthy_runs = real_scores(detector, data, healthy)
        default = _is_default(detector)
        corpus.append(OperatingPoint(family, setting, summarize_runs(runs), default))
        if healthy is not None:
            extra.append(OperatingPoint(family, setting, summarize_runs(healthy_runs), default))
    return tuple(corpus), tuple(extra)


def run_tradeoff(
    *,
    jobs: int = 1000,
    seed: int = 1,
    worlds: Sequence[str] = ("paper", "calibrated"),
    data: Path | None = None,
    healthy: Path | None = None,
) -> Tradeoff:
    """Every goal cell of ``worlds`` at :data:`~evalstop.experiments.grid.DENSITIES`, and the
    real-curve sweep."""
    panels = tuple(sim_panel(world, evals, jobs, seed) for world in worlds for evals in DENSITIES)
    real, extra = real_points(data, healthy)
    return Tradeoff(panels, real, extra, jobs, seed)


def _recall(point: OperatingPoint) -> float:
    recall = point.summary.recall
    return 0.0 if math.isnan(recall) else recall


def frontier(points: Sequence[OperatingPoint]) -> list[OperatingPoint]:
    """The points no other point beats on both recall and harmful rate (higher recall, fewer
    harmful stops; ``SCB-6``), by increasing harmful rate."""
    ordered = sorted(points, key=lambda p: (p.summary.harmful_rate, -_recall(p)))
    kept: list[OperatingPoint] = []
    for point in ordered:
        if not kept or _recall(point) > _recall(kept[-1]):
            kept.append(point)
    return kept


def nearest_goal(
    points: Sequence[OperatingPoint],
) -> tuple[OperatingPoint | None, OperatingPoint | None]:
    """The two frontier points nearest the goal box: the highest recall with harmful stops on
    at most :data:`GOAL_HARMFUL` of healthy runs, and the fewest harmful stops with a recall of
    at least :data:`GOAL_RECALL` (None when no point qualifies)."""
    line = frontier(points)
    safe = [p for p in line if p.summary.harmful_rate <= GOAL_HARMFUL]
    sure = [p for p in line if _recall(p) >= GOAL_RECALL]
    return (safe[-1] if safe else None), (sure[0] if sure else None)
