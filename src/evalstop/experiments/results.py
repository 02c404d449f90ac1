"""Aggregate per-seed figures into the tables of ``results.json`` (schema: docs/reproduction.md).

Changes are paired: a system's JCT change in one seed is measured against its base policy on
the same workload, then averaged over seeds with a 95% interval (spec ``REP-3``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstop.experiments.paper import PAPER
from evalstop.experiments.plan import (
    BASE_RATES,
    BASES,
    DETECTORS,
    KS,
    MAIN_BASE,
    MAIN_SYSTEMS,
    NOISES,
    Settings,
    Sim,
)
from evalstop.experiments.runner import Figures
from evalstop.experiments.stats import estimate

__all__ = ["RESULTS_VERSION", "build_results"]

RESULTS_VERSION = 1
RATES = ("precision", "recall", "fpr", "f1", "delay_evals", "delay_gpu_hours")

Row = dict[str, Any]


def _put(row: Row, name: str, values: list[float]) -> None:
    est = estimate(values)
    cells = est.as_dict()
    row[name] = cells["mean"]
    row[f"{name}_ci95"] = cells["ci95"]


def _change(system: float, base: float) -> float:
    return 100.0 * (system - base) / base if base else float("nan")


class _Table:
    """Look-ups of one seed's figures."""

    def __init__(self, settings: Settings, figures: Mapping[Sim, Figures]) -> None:
        self.settings = settings
        self.figures = figures

    def get(
        self,
        system: str,
        seed: int,
        *,
        noise: float | None = None,
        share: float | None = None,
        k: int | None = None,
    ) -> Figures:
        s = self.settings
        sim = Sim(
            s.noise if noise is None else noise,
            s.hacking_share if share is None else share,
            seed,
            system,
            s.k if k is None else k,
        )
        return self.figures[sim]

    def seeds(self) -> range:
        return range(self.settings.seeds)

    def row(
        self,
        row: Row,
        system: str,
        base: str,
        *,
        noise: float | None = None,
        share: float | None = None,
        k: int | None = None,
    ) -> Row:
        """Fill ``row`` with ``system``'s changes against ``base`` and its rates, per seed."""
        pairs = [
            (
                self.get(system, seed, noise=noise, share=share, k=k),
                self.get(base, seed, noise=noise, share=share),
            )
            for seed in self.seeds()
        ]
        _put(row, "jct_change_pct", [_change(s["jct_mean"], b["jct_mean"]) for s, b in pairs])
        _put(
            row,
            "wasted_change_pct",
            [_change(s["wasted_gpu_time"], b["wasted_gpu_time"]) for s, b in pairs],
        )
        for metric in RATES:
            _put(row, metric, [s[metric] for s, _ in pairs])
        _put(row, "quality_retained_rlhf", [s["quality_retained_rlhf"] for s, _ in pairs])
        return row


def build_results(settings: Settings, figures: Mapping[Sim, Figures]) -> dict[str, Any]:
    """The full ``results.json`` object."""
    table = _Table(settings, figures)
    main = [table.row({"system": system}, system, MAIN_BASE) for system in MAIN_SYSTEMS]
    composability = [
        table.row({"base": base, "system": f"evalstop+{base}"}, f"evalstop+{base}", base)
        for base in BASES
    ]
    noise = [
        table.row(
            {"sigma": sigma, "detector": detector},
            f"{detector}+{MAIN_BASE}",
            MAIN_BASE,
            noise=sigma,
        )
        for sigma in NOISES
        for detector in DETECTORS
    ]
    base_rate = [
        table.row(
            {"hacking_share": share, "detector": detector},
            f"{detector}+{MAIN_BASE}",
            MAIN_BASE,
            share=share,
        )
        for share in BASE_RATES
        for detector in DETECTORS
    ]
    k_rows = [
        table.row({"k": k, "detector": "evalstop"}, f"evalstop+{MAIN_BASE}", MAIN_BASE, k=k)
        for k in KS
    ]
    return {
        "version": RESULTS_VERSION,
        "settings": {
            "seeds": settings.seeds,
            "jobs": settings.jobs,
            "gpus": settings.gpus,
            "load": settings.load,
            "noise": settings.noise,
            "hacking_share": settings.hacking_share,
            "k": settings.k,
            "base": MAIN_BASE,
        },
        "main": main,
        "composability": composability,
        "noise": noise,
        "base_rate": base_rate,
        "k": k_rows,
        "paper": PAPER,
    }
