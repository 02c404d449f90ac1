"""The detector scoreboard: every registered detector, regret-first, simulated and real.

``evalstop detectors`` (spec ``SCB``) runs each detector at its defaults over

- the simulator: both worlds (``paper``, ``calibrated``), each noise level of
  :data:`~evalstop.experiments.grid.SCOREBOARD_NOISES` and 10, 20 and 40 evaluations per run,
  folding every job's reports exactly as EvalStop sees them (``RGT-4``);
- the real RLHF corpus the package ships (``COR``), and optionally a folder of healthy curves
  (every numeric column of every CSV, each scored as a healthy run),

and reports recall, harmful and benign stops, mean regret, the post-peak compute saved and the
delay of each (``RGT-3``), plus the trade-off of the noise-aware detector's ``z`` at the goal
cells. No parameter is chosen here: this module only measures.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from evalstop.core.detectors import Detector
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import (
    DENSITIES,
    SCOREBOARD_DETECTORS,
    SCOREBOARD_NOISES,
    TRADEOFF_Z,
    goal_noise,
)
from evalstop.experiments.tables import format_table, pct
from evalstop.sim.detection import fold_job, job_run_score, job_views
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import WORLDS
from evalstop.traces.corpus import catalogue, default_data_dir, read_label, score_curve
from evalstop.traces.reader import read_trace

__all__ = [
    "Cell",
    "Scoreboard",
    "real_scores",
    "render",
    "run_scoreboard",
    "sim_scoreboard",
    "sim_scores",
    "to_json",
]


@attrs.frozen(slots=True)
class Cell:
    """One detector's summary on one data set: ``source`` is ``sim``, ``real`` or ``healthy``."""

    detector: str
    source: str
    summary: RegretSummary
    world: str = ""
    noise: float = math.nan
    evals: int = 0


@attrs.frozen(slots=True)
class Scoreboard:
    """Every cell, and the noise-aware ``z`` trade-off (cells named ``noise-aware(z=..)``)."""

    cells: tuple[Cell, ...]
    tradeoff: tuple[Cell, ...]
    jobs: int
    seed: int


def sim_scores(
    detectors: Sequence[Detector[Any]], config: WorkloadConfig, seed: int
) -> list[list[RunScore]]:
    """Each detector's per-run scores on the RLHF jobs of one simulated workload (``SCB-1``):
    the jobs EvalStop watches. Each job's reports are built once for all detectors."""
    jobs = [job for job in generate(config, seed).jobs if job.spec.kind is JobKind.RLHF]
    scores: list[list[RunScore]] = [[] for _ in detectors]
    for job in jobs:
        views = job_views(job)
        for row, detector in zip(scores, detectors, strict=True):
            row.append(job_run_score(job, *fold_job(detector, job, views)))
    return scores


def _sim_cells(
    detectors: Sequence[Detector[Any]], jobs: int, seed: int, worlds: Sequence[str]
) -> Iterable[tuple[Cell, ...]]:
    """Per workload: the cells of :data:`~evalstop.experiments.grid.SCOREBOARD_DETECTORS`, then,
    at a goal cell (the paper world at sigma 0.12, the calibrated world at its own noise), those
    of the ``z`` trade-off. Each workload is drawn once."""
    variants = [attrs.evolve(NoiseAwareDetector(), z=z) for z in TRADEOFF_Z]
    labels = [*SCOREBOARD_DETECTORS, *(f"noise-aware(z={z:g})" for z in TRADEOFF_Z)]
    for world in (WORLDS[name] for name in worlds):
        goal = goal_noise(world.name)
        noises = dict.fromkeys(world.eval_noise if n is None else n for n in SCOREBOARD_NOISES)
        for noise in noises:
            for evals in DENSITIES:
                config = WorkloadConfig(
                    n_jobs=jobs, world=world, eval_noise=noise, evals_per_run=evals
                )
                folded = [*detectors, *(variants if noise == goal else [])]
                yield tuple(
                    Cell(name, "sim", summarize_runs(scores), world.name, config.sigma, evals)
                    for name, scores in zip(labels, sim_scores(folded, config, seed), strict=False)
                )


def _healthy_curves(folder: Path) -> Iterable[tuple[str, Path, str, str]]:
    """``(name, path, step column, metric)`` for every numeric column of every CSV."""
    for path in sorted(folder.glob("*.csv")):
        with path.open(encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if row and not row[0].startswith("#")]
        step, *metrics = rows[0]
        for metric in metrics:
            yield f"{path.stem}: {metric}", path, step, metric


def real_scores(
    detector: Detector[Any], data: Path | None = None, healthy: Path | None = None
) -> tuple[list[RunScore], list[RunScore]]:
    """A detector's scores on the labelled corpus curves and on a folder of healthy curves."""
    data = default_data_dir() if data is None else data
    corpus: list[RunScore] = []
    for source in catalogue(data):
        if source.excluded:
            continue
        gold = source.read(data, source.gold)
        label = read_label(gold, source.read(data, source.proxy), source.scale).label
        if label != "unlabelled":
            corpus.append(score_curve(gold, detector, label == "hacking", scale=source.scale)[0])
    extra: list[RunScore] = []
    if healthy is not None:
        for _, path, step, metric in _healthy_curves(healthy):
            trace = read_trace(path, metric, step_column=step)
            extra.append(score_curve(trace, detector, collapsing=False)[0])
    return corpus, extra


def run_scoreboard(
    *,
    quick: bool = False,
    seed: int = 1,
    data: Path | None = None,
    healthy: Path | None = None,
    jobs: int | None = None,
) -> Scoreboard:
    """Run every cell (``SCB-1``); ``quick`` uses 250 jobs a workload instead of 1000, and
    ``jobs`` sets the number directly."""
    if jobs is None:
        jobs = 250 if quick else 1000
    board = sim_scoreboard(jobs=jobs, seed=seed)
    cells = list(board.cells)
    for name in SCOREBOARD_DETECTORS:
        corpus, extra = real_scores(make_detector(name), data, healthy)
        cells.append(Cell(name, "real", summarize_runs(corpus)))
        if healthy is not None:
            cells.append(Cell(name, "healthy", summarize_runs(extra)))
    return attrs.evolve(board, cells=tuple(cells))


def sim_scoreboard(*, jobs: int, seed: int = 1, worlds: Sequence[str] | None = None) -> Scoreboard:
    """The simulator part alone: every detector's cells and the ``z`` trade-off of ``worlds``
    (default: every world), as ``reproduce`` includes it (``SCB-5``)."""
    names = tuple(WORLDS) if worlds is None else tuple(worlds)
    detectors = [make_detector(name) for name in SCOREBOARD_DETECTORS]
    cells: list[Cell] = []
    tradeoff: list[Cell] = []
    for workload in _sim_cells(detectors, jobs, seed, names):
        cells.extend(workload[: len(SCOREBOARD_DETECTORS)])
        tradeoff.extend(workload[len(SCOREBOARD_DETECTORS) :])
    order = {"paper": 0, "calibrated": 1}
    tradeoff.sort(key=lambda cell: (order.get(cell.world, 2), cell.evals))
    return Scoreboard(tuple(cells), tuple(tradeoff), jobs, seed)


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _cell_json(cell: Cell) -> dict[str, Any]:
    summary = {
        k: _number(v) if isinstance(v, float) else v for k, v in attrs.asdict(cell.summary).items()
    }
    where: dict[str, Any] = {"detector": cell.detector, "source": cell.source}
    if cell.source == "sim":
        where |= {"world": cell.world, "noise": cell.noise, "evals_per_run": cell.evals}
    return where | summary


def to_json(board: Scoreboard) -> dict[str, Any]:
    """The scoreboard as JSON-compatible values (NaN as null)."""
    return {
        "jobs_per_workload": board.jobs,
        "seed": board.seed,
        "cells": [_cell_json(cell) for cell in board.cells],
        "tradeoff": [_cell_json(cell) for cell in board.tradeoff],
    }


def _row(cell: Cell) -> list[str]:
    s = cell.summary
    where = (
        "real RLHF"
        if cell.source == "real"
        else "healthy"
        if cell.source == "healthy"
        else (f"{cell.world} s={cell.noise:g} n={cell.evals}")
    )
    delay = "n/a" if math.isnan(s.delay) else f"{s.delay:.1f}"
    return [
        where,
        cell.detector,
        str(s.runs),
        pct(s.recall, 0),
        pct(s.harmful_rate, 1),
        pct(s.benign_rate, 0),
        pct(s.mean_regret, 1),
        pct(s.median_regret, 1),
        pct(s.floored_regret, 1),
        pct(s.stop_regret, 1),
        pct(s.saved_share, 0),
        delay,
    ]


HEADER = [
    "data",
    "detector",
    "runs",
    "recall",
    "harmful",
    "benign",
    "regret",
    "median",
    "floored",
    "stop regret",
    "saved",
    "delay",
]


def render(board: Scoreboard, cells: Sequence[Cell] | None = None) -> str:
    """The printed table: one row per (data, detector) cell (``SCB-2``)."""
    rows = [_row(cell) for cell in (board.cells if cells is None else cells)]
    title = (
        f"detector scoreboard ({board.jobs} jobs a simulated workload, seed {board.seed}); "
        "recall: collapsing runs stopped; harmful/benign: stops on healthy runs; regret: "
        "kept checkpoint vs best, share of gain (mean; median; floored: gain floored at 0.02, "
        "RGT-5)"
    )
    return format_table(HEADER, rows, title=title)
