"""The detector scoreboard: every registered detector, regret-first, simulated and real.

``evalstop detectors`` (spec ``SCB``) runs each detector at its defaults over

- the simulator: both worlds (``paper``, ``calibrated``), each noise level of
  :data:`~evalstop.experiments.grid.SCOREBOARD_NOISES` and 10, 20 and 40 evaluations per run,
  folding every job's reports exactly as EvalStop sees them (``RGT-4``);
- the real RLHF corpus the package ships (``COR``; each curve's proxy metric beside it), and
  optionally a folder of healthy curves (every numeric column of every CSV, each scored as a
  healthy run);
- the gym's test split (``SCB-10``, :mod:`~evalstop.experiments.scoreboard.gym`),

and reports recall, harmful and benign stops (with Wilson intervals), mean, median and
gain-floored regret and the share of runs over 5% (``RGT-7``), the post-peak compute saved and
the delay of each (``RGT-3``), each detector against the default with paired tests
(``SCB-9``), plus the trade-off of the noise-aware detector's ``z`` at the goal cells. No
parameter is chosen here: this module only measures.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from evalstop.core.detectors import Detector
from evalstop.core.model import Job, JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import DEFAULT_DETECTOR, make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import (
    DENSITIES,
    SCOREBOARD_DETECTORS,
    SCOREBOARD_NOISES,
    TRADEOFF_Z,
    goal_noise,
)
from evalstop.experiments.scoreboard.gym import GYM_RUNS, gym_runs, gym_scores
from evalstop.experiments.significance import ALPHA, Comparison, compare, intervals
from evalstop.experiments.tables import format_table, pct
from evalstop.sim.detection import fold_job, job_views, run_scorer
from evalstop.sim.workload import WorkloadConfig, generate, sweep_jobs
from evalstop.sim.worlds import WORLDS
from evalstop.traces.corpus import (
    GOLD_MODE,
    catalogue,
    default_data_dir,
    read_label,
    score_curve,
)
from evalstop.traces.reader import read_trace

__all__ = [
    "Cell",
    "Scoreboard",
    "compared",
    "gym_cells",
    "real_scores",
    "render",
    "run_scoreboard",
    "sim_scoreboard",
    "sim_scores",
    "to_json",
]


@attrs.frozen(slots=True)
class Cell:
    """One detector's summary on one data set: ``source`` is ``sim``, ``real``, ``healthy`` or
    ``gym`` (``evals`` 0: every density), with its comparison to the default detector on the
    same runs (None for the default itself)."""

    detector: str
    source: str
    summary: RegretSummary
    world: str = ""
    noise: float = math.nan
    evals: int = 0
    comparison: Comparison | None = None


@attrs.frozen(slots=True)
class Scoreboard:
    """Every cell, and the noise-aware ``z`` trade-off (cells named ``noise-aware(z=..)``)."""

    cells: tuple[Cell, ...]
    tradeoff: tuple[Cell, ...]
    jobs: int
    seed: int
    gym_runs: int = 0


def sim_scores(
    detectors: Sequence[Detector[Any]], config: WorkloadConfig, seed: int
) -> list[list[RunScore]]:
    """Each detector's per-run scores on the RLHF jobs of one simulated workload (``SCB-1``):
    the jobs EvalStop watches. Each job's reports are built once for all detectors."""
    return _scores(detectors, generate(config, seed).jobs)


def _scores(detectors: Sequence[Detector[Any]], jobs: Iterable[Job]) -> list[list[RunScore]]:
    """:func:`sim_scores` on the RLHF jobs of ``jobs``; each job's reports and the facts of its
    score that no stop changes are found once for all detectors, and equal detectors (the
    trade-off's ``z=2`` is the default ``noise-aware``) are folded once (``SCB-1``): a
    detector is a frozen value, its fold a function of that value and the job. Detectors that
    stop a job at the same checkpoint keeping the same one share its (frozen) score."""
    distinct = list(dict.fromkeys(detectors))
    scores: list[list[RunScore]] = [[] for _ in distinct]
    for job in jobs:
        if job.spec.kind is not JobKind.RLHF:
            continue
        views = job_views(job)
        score = run_scorer(job)
        scored: dict[tuple[int | None, int | None], RunScore] = {}  # a frozen score per answer
        for row, detector in zip(scores, distinct, strict=True):
            answer = fold_job(detector, job, views)
            if answer not in scored:
                scored[answer] = score(*answer)
            row.append(scored[answer])
    return [list(scores[distinct.index(detector)]) for detector in detectors]


def _sim_cells(
    detectors: Sequence[Detector[Any]], jobs: int, seed: int, worlds: Sequence[str]
) -> Iterable[tuple[Cell, ...]]:
    """Per workload: the cells of :data:`~evalstop.experiments.grid.SCOREBOARD_DETECTORS`, then,
    at a goal cell (the paper world at sigma 0.12, the calibrated world at its own noise), those
    of the ``z`` trade-off. The workloads of one world and density differ in eval noise only:
    they are drawn together, once, their RLHF jobs alone (``WRK-8``, ``WRK-9``)."""
    variants = [attrs.evolve(NoiseAwareDetector(), z=z) for z in TRADEOFF_Z]
    labels = [*SCOREBOARD_DETECTORS, *(f"noise-aware(z={z:g})" for z in TRADEOFF_Z)]
    for world in (WORLDS[name] for name in worlds):
        goal = goal_noise(world.name)
        noises = dict.fromkeys(world.eval_noise if n is None else n for n in SCOREBOARD_NOISES)
        sweeps = {
            evals: sweep_jobs(
                [
                    WorkloadConfig(n_jobs=jobs, world=world, eval_noise=noise, evals_per_run=evals)
                    for noise in noises
                ],
                seed,
                JobKind.RLHF,
            )
            for evals in DENSITIES
        }
        for position, noise in enumerate(noises):
            for evals in DENSITIES:
                folded = [*detectors, *(variants if noise == goal else [])]
                scores = _scores(folded, sweeps[evals][position])
                yield tuple(
                    attrs.evolve(cell, world=world.name, noise=noise, evals=evals)
                    for cell in compared("sim", labels, scores)
                )


def compared(source: str, names: Sequence[str], scores: Sequence[list[RunScore]]) -> list[Cell]:
    """One cell per detector of ``names`` (scored on the same runs), each registered detector
    compared with :data:`~evalstop.core.registry.DEFAULT_DETECTOR` when it is among them."""
    default = scores[names.index(DEFAULT_DETECTOR)] if DEFAULT_DETECTOR in names else None
    return [
        Cell(
            name,
            source,
            summarize_runs(row),
            comparison=None
            if default is None or name == DEFAULT_DETECTOR or name not in SCOREBOARD_DETECTORS
            else compare(row, default),
        )
        for name, row in zip(names, scores, strict=False)
    ]


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
        gold, proxy = source.read(data, source.gold), source.read(data, source.proxy)
        label = read_label(gold, proxy, source.scale).label
        if label != "unlabelled":
            collapsing = label == "hacking"
            scored = score_curve(gold, detector, collapsing, GOLD_MODE, source.scale, proxy=proxy)
            corpus.append(scored[0])
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
    gym_runs: int | None = None,
) -> Scoreboard:
    """Run every cell (``SCB-1``); ``quick`` uses 250 jobs a workload instead of 1000 and 50
    gym runs instead of 500; ``jobs`` and ``gym_runs`` set the numbers directly (0 gym runs:
    no gym track)."""
    if jobs is None:
        jobs = 250 if quick else 1000
    if gym_runs is None:
        gym_runs = 50 if quick else GYM_RUNS
    board = sim_scoreboard(jobs=jobs, seed=seed)
    cells = list(board.cells)
    real = [real_scores(make_detector(name), data, healthy) for name in SCOREBOARD_DETECTORS]
    cells.extend(compared("real", SCOREBOARD_DETECTORS, [corpus for corpus, _ in real]))
    if healthy is not None:
        cells.extend(compared("healthy", SCOREBOARD_DETECTORS, [extra for _, extra in real]))
    if gym_runs:
        cells.extend(gym_cells(gym_runs))
    return attrs.evolve(board, cells=tuple(cells), gym_runs=gym_runs)


def gym_cells(runs: int, split_name: str = "test") -> list[Cell]:
    """The gym track (``SCB-10``): every detector on the first ``runs`` runs of the test
    split (the tests use the ``dev`` one), at each evaluation density and over all of them
    (``evals`` 0)."""
    split = gym_runs(split_name, runs)
    detectors = [make_detector(name) for name in SCOREBOARD_DETECTORS]
    scores = gym_scores(detectors, split)
    cells: list[Cell] = []
    for evals in (*DENSITIES, 0):
        keep = [i for i, run in enumerate(split) if evals in (0, run.config.evals)]
        subset = [[row[i] for i in keep] for row in scores]
        cells.extend(
            attrs.evolve(cell, world="gym test", evals=evals)
            for cell in compared("gym", SCOREBOARD_DETECTORS, subset)
        )
    return cells


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
    if cell.source == "gym":
        where |= {"world": cell.world, "evals_per_run": cell.evals or None}
    ci = {k: [_number(v) for v in pair] for k, pair in intervals(cell.summary).items()}
    extra: dict[str, Any] = {"intervals": ci}
    if cell.comparison is not None:
        c = cell.comparison
        extra["vs_default"] = {
            "default": DEFAULT_DETECTOR,
            "recall_change": _number(c.recall_change),
            "recall_p": c.recall_p,
            "harmful_change": _number(c.harmful_change),
            "harmful_p": c.harmful_p,
            "regret_change": c.regret.mean,
            "regret_interval": [c.regret.low, c.regret.high],
            "regret_p": c.regret.p_value,
            "significant": c.significant,
        }
    return where | summary | extra


def to_json(board: Scoreboard) -> dict[str, Any]:
    """The scoreboard as JSON-compatible values (NaN as null)."""
    return {
        "jobs_per_workload": board.jobs,
        "seed": board.seed,
        "gym_runs": board.gym_runs,
        "default_detector": DEFAULT_DETECTOR,
        "cells": [_cell_json(cell) for cell in board.cells],
        "tradeoff": [_cell_json(cell) for cell in board.tradeoff],
    }


def _row(cell: Cell) -> list[str]:
    s = cell.summary
    where = {
        "real": "real RLHF",
        "healthy": "healthy",
        "gym": f"gym test n={cell.evals or 'all'}",
    }.get(cell.source, f"{cell.world} s={cell.noise:g} n={cell.evals}")
    delay = "n/a" if math.isnan(s.delay) else f"{s.delay:.1f}"
    ci = intervals(s)
    return [
        where,
        cell.detector,
        str(s.runs),
        f"{pct(s.recall, 0)} {_interval(ci['recall'], 0)}",
        f"{pct(s.harmful_rate, 1)} {_interval(ci['harmful_rate'], 1)}",
        pct(s.benign_rate, 0),
        pct(s.mean_regret, 1),
        pct(s.median_regret, 1),
        pct(s.floored_regret, 1),
        pct(s.over_share, 0),
        pct(s.stop_regret, 1),
        pct(s.saved_share, 0),
        delay,
        _versus(cell.comparison),
    ]


def _interval(pair: tuple[float, float], digits: int) -> str:
    if math.isnan(pair[0]):
        return ""
    return f"[{pct(pair[0], digits)}, {pct(pair[1], digits)}]"


def _versus(c: Comparison | None) -> str:
    """``recall p / harmful p / regret p``, a star on each p < ALPHA, ``ns`` when none."""
    if c is None:
        return "-"
    marks = [
        f"{label} {p:.2g}{'*' if p < ALPHA else ''}"
        for label, p in (("rec", c.recall_p), ("harm", c.harmful_p), ("reg", c.regret.p_value))
    ]
    return " ".join(marks) + ("" if c.significant else " ns")


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
    "> 5%",
    "stop regret",
    "saved",
    "delay",
    f"vs {DEFAULT_DETECTOR} (p)",
]


def render(board: Scoreboard, cells: Sequence[Cell] | None = None) -> str:
    """The printed table: one row per (data, detector) cell (``SCB-2``)."""
    rows = [_row(cell) for cell in (board.cells if cells is None else cells)]
    title = (
        f"detector scoreboard ({board.jobs} jobs a simulated workload, seed {board.seed}); "
        "recall: collapsing runs stopped; harmful/benign: stops on healthy runs; regret: "
        "kept checkpoint vs best, share of gain (mean; median; floored: gain floored at 0.02, "
        "RGT-5; > 5%: share of runs over 5%, RGT-7); [95% Wilson intervals]; p: McNemar on "
        "recall and harmful stops, paired bootstrap on regret, against the default on the same "
        "runs (* p < 0.05; ns: no difference significant, SCB-9)"
    )
    return format_table(HEADER, rows, title=title)
