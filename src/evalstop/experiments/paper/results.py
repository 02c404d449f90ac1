"""Aggregate per-seed figures into typed tables (schema of ``results.json``: REP-4, REP-7).

Changes are paired: a system's JCT change in one seed is measured against its base policy on
the same workload, then averaged over seeds with a 95% interval (spec ``REP-3``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from evalstop.experiments.grid import (
    BASE_RATES,
    DENSITIES,
    DENSITY_KS,
    KS,
    PAPER_DETECTORS,
    PAPER_NOISES,
)
from evalstop.experiments.leakage import Leakage
from evalstop.experiments.paper.figures import PAPER_FIGURES, PaperFigures, paper_json
from evalstop.experiments.paper.plan import (
    BASES,
    DENSITY_WORLDS,
    MAIN_BASE,
    MAIN_SYSTEMS,
    Settings,
    Sim,
)
from evalstop.experiments.paper.runner import Figures
from evalstop.experiments.paper.stats import Estimate, estimate
from evalstop.sim.philly import fitted_trace
from evalstop.sim.worlds import World, world_named

__all__ = [
    "METRICS",
    "RESULTS_VERSION",
    "ResultRow",
    "Results",
    "WorldResults",
    "build_results",
    "results_json",
]

RESULTS_VERSION = 2
METRICS = (
    "jct_change_pct",
    "wasted_change_pct",
    "rlhf_gpu_time_change_pct",
    "precision",
    "recall",
    "fpr",
    "f1",
    "delay_evals",
    "delay_gpu_hours",
    "quality_retained_rlhf",
)
"""Every metric of a row, in output order (each a mean with its 95% half-width)."""

_NAN = estimate([])


@attrs.frozen(slots=True)
class ResultRow:
    """One row of a table: a system in one cell, its changes against ``base`` and its rates.

    ``base`` is None for density-sweep rows, which report detection quality only (their
    changes are NaN).
    """

    system: str
    base: str | None
    sigma: float
    hacking_share: float
    evals_per_run: int
    k: int
    jct_change_pct: Estimate
    wasted_change_pct: Estimate
    rlhf_gpu_time_change_pct: Estimate
    precision: Estimate
    recall: Estimate
    fpr: Estimate
    f1: Estimate
    delay_evals: Estimate
    delay_gpu_hours: Estimate
    quality_retained_rlhf: Estimate

    @property
    def detector(self) -> str:
        """The wrapping detector's name (``evalstop``, ...), or "" for a base alone."""
        head, plus, _ = self.system.partition("+")
        return head if plus else ""

    def metric(self, name: str) -> Estimate:
        """The estimate of metric ``name`` (one of :data:`METRICS`)."""
        value: Estimate = getattr(self, name)
        return value

    def to_json(self) -> dict[str, Any]:
        """Keys, then each metric's mean as ``name`` and half-width as ``name_ci95``."""
        out: dict[str, Any] = {
            "system": self.system,
            "base": self.base,
            "detector": self.detector,
            "sigma": self.sigma,
            "hacking_share": self.hacking_share,
            "evals_per_run": self.evals_per_run,
            "k": self.k,
        }
        for name in METRICS:
            cells = self.metric(name).as_dict()
            out[name] = cells["mean"]
            out[f"{name}_ci95"] = cells["ci95"]
        return out


def _change(system: float, base: float) -> float:
    return 100.0 * (system - base) / base if base else float("nan")


def _row(
    sim: Sim, sigma: float, base: str | None, pairs: list[tuple[Figures, Figures | None]]
) -> ResultRow:
    def paired(read: Callable[[Figures], float]) -> Estimate:
        if base is None:
            return _NAN
        return estimate(_change(read(s), read(b)) for s, b in pairs if b is not None)

    def own(read: Callable[[Figures], float]) -> Estimate:
        return estimate(read(s) for s, _ in pairs)

    return ResultRow(
        system=sim.system,
        base=base,
        sigma=sigma,
        hacking_share=sim.hacking_share,
        evals_per_run=sim.evals,
        k=sim.k,
        jct_change_pct=paired(lambda f: f.jct_mean),
        wasted_change_pct=paired(lambda f: f.wasted_gpu_time),
        rlhf_gpu_time_change_pct=paired(lambda f: f.rlhf_gpu_time),
        precision=own(lambda f: f.precision),
        recall=own(lambda f: f.recall),
        fpr=own(lambda f: f.fpr),
        f1=own(lambda f: f.f1),
        delay_evals=own(lambda f: f.delay_evals),
        delay_gpu_hours=own(lambda f: f.delay_gpu_hours),
        quality_retained_rlhf=own(lambda f: f.quality_retained_rlhf),
    )


class _Table:
    """Look-ups of one world's per-seed figures."""

    def __init__(self, settings: Settings, world: str, figures: Mapping[Sim, Figures]) -> None:
        self.settings = settings
        self.world = world
        self.figures = figures

    def row(self, system: str, base: str | None, **kw: Any) -> ResultRow:
        """``system``'s row against ``base`` in the cell named by ``kw`` (Sim.at's keywords)."""
        sims = [
            Sim.at(self.settings, self.world, seed, system, **kw)
            for seed in range(self.settings.seeds)
        ]
        base_kw = {key: value for key, value in kw.items() if key != "k"}
        pairs = [
            (
                self.figures[sim],
                None
                if base is None
                else self.figures[Sim.at(self.settings, self.world, sim.seed, base, **base_kw)],
            )
            for sim in sims
        ]
        noise = kw.get("noise")
        return _row(sims[0], sims[0].noise if noise is None else noise, base, pairs)


@attrs.frozen(slots=True)
class WorldResults:
    """Every table of one world and its leakage audit."""

    world: World
    main: tuple[ResultRow, ...]
    composability: tuple[ResultRow, ...]
    noise: tuple[ResultRow, ...]
    base_rate: tuple[ResultRow, ...]
    k: tuple[ResultRow, ...]
    density: tuple[ResultRow, ...]
    leakage: Leakage


@attrs.frozen(slots=True)
class Results:
    """A whole reproduction: its settings, each world's tables and the paper's figures."""

    settings: Settings
    worlds: tuple[WorldResults, ...]
    paper: PaperFigures = PAPER_FIGURES

    def world(self, name: str) -> WorldResults:
        """The results of the world called ``name``."""
        for world in self.worlds:
            if world.world.name == name:
                return world
        raise KeyError(name)


def _world_results(
    settings: Settings, name: str, figures: Mapping[Sim, Figures], leakage: Leakage
) -> WorldResults:
    table = _Table(settings, name, figures)
    evalstop = f"evalstop+{MAIN_BASE}"
    densities = DENSITIES if name in DENSITY_WORLDS else ()
    if settings.trace is not None:  # on a trace: the main and composability tables (PHL-5)
        return WorldResults(
            world=world_named(name),
            main=tuple(table.row(system, MAIN_BASE) for system in MAIN_SYSTEMS),
            composability=tuple(table.row(f"evalstop+{base}", base) for base in BASES),
            noise=(),
            base_rate=(),
            k=(),
            density=(),
            leakage=leakage,
        )
    return WorldResults(
        world=world_named(name),
        main=tuple(table.row(system, MAIN_BASE) for system in MAIN_SYSTEMS),
        composability=tuple(table.row(f"evalstop+{base}", base) for base in BASES),
        noise=tuple(
            table.row(f"{d}+{MAIN_BASE}", MAIN_BASE, noise=sigma)
            for sigma in PAPER_NOISES
            for d in PAPER_DETECTORS
        ),
        base_rate=tuple(
            table.row(f"{d}+{MAIN_BASE}", MAIN_BASE, share=share)
            for share in BASE_RATES
            for d in PAPER_DETECTORS
        ),
        k=tuple(table.row(evalstop, MAIN_BASE, k=k) for k in KS),
        density=tuple(
            [
                table.row(evalstop, None, evals=e, noise=sigma)
                for e in densities
                for sigma in PAPER_NOISES
            ]
            + [table.row(evalstop, None, evals=e, k=k) for e in densities for k in DENSITY_KS]
        ),
        leakage=leakage,
    )


def build_results(
    settings: Settings, figures: Mapping[Sim, Figures], leakage: Mapping[str, Leakage]
) -> Results:
    """The tables of every world of ``settings`` from the figures of its plan."""
    return Results(
        settings=settings,
        worlds=tuple(
            _world_results(settings, name, figures, leakage[name]) for name in settings.worlds
        ),
    )


def _clean(value: float) -> float | None:
    return round(value, 6) if math.isfinite(value) else None


def _leakage_json(leakage: Leakage) -> dict[str, Any]:
    learned = leakage.learned
    return {
        "label_auc_max": _clean(leakage.label_auc_max),
        "length_error_first_checkpoint": _clean(leakage.length_error_first_checkpoint),
        "length_error_estimate": _clean(leakage.length_error_estimate),
        "length_error_raw_estimate": _clean(leakage.length_error_raw_estimate),
        "label_auc": {name: _clean(value) for name, value in leakage.label_auc},
        "length_errors": {name: _clean(value) for name, value in leakage.length_errors},
        "jobs": leakage.jobs,
        "judged": leakage.judged,
        "label_leak": leakage.label_leak,
        "length_leak": leakage.length_leak,
        "label_length_link": _clean(leakage.label_length_link),
        "label_auc_given_estimate": {
            name: _clean(value) for name, value in leakage.label_auc_given_estimate
        },
        "label_auc_given_estimate_all": {
            name: _clean(value) for name, value in leakage.label_auc_given_estimate_all
        },
        "early_turn_share": _clean(leakage.early_turn_share),
        "curve_auc_max": _clean(leakage.curve_auc_max),
        "learned": None
        if learned is None
        else {
            "length_error": {str(k): _clean(e) for k, e in learned.length_error},
            "length_error_estimate": {str(k): _clean(e) for k, e in learned.length_error_estimate},
            "label_auc_curves": _clean(learned.label_auc_curves),
            "label_auc_curves_given_estimate": _clean(learned.label_auc_curves_given_estimate),
        },
    }


def _world_json(world: WorldResults) -> dict[str, Any]:
    def rows(table: tuple[ResultRow, ...]) -> list[dict[str, Any]]:
        return [row.to_json() for row in table]

    return {
        "world": attrs.asdict(world.world),
        "main": rows(world.main),
        "composability": rows(world.composability),
        "noise": rows(world.noise),
        "base_rate": rows(world.base_rate),
        "k": rows(world.k),
        "density": rows(world.density),
        "leakage": _leakage_json(world.leakage),
    }


def results_json(results: Results) -> dict[str, Any]:
    """The ``results.json`` object: settings, ``worlds`` keyed by name, the paper's figures."""
    s = results.settings
    return {
        "version": RESULTS_VERSION,
        "settings": {
            "seeds": s.seeds,
            "jobs": s.jobs,
            "gpus": s.gpus,
            "load": s.load,
            "hacking_share": s.hacking_share,
            "k": s.k,
            "base": MAIN_BASE,
            "worlds": list(s.worlds),
        },
        "worlds": {world.world.name: _world_json(world) for world in results.worlds},
        "paper": paper_json(results.paper),
        **_trace_json(s),
    }


def _trace_json(settings: Settings) -> dict[str, Any]:
    """``{"trace": ...}`` on a trace (the spec and the fit, PHL-5), else nothing."""
    if settings.trace is None:
        return {}
    return {"trace": {**settings.trace.describe(), **fitted_trace(settings.trace).describe()}}
