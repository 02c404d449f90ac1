"""PNG plots of a reproduction (needs the optional ``plots`` extra: matplotlib).

:func:`~evalstop.experiments.plotting.plots_available` says whether matplotlib can be
imported; :func:`write_plots` writes,
for each world, one PNG per sweep, the density sweep and example curves, and returns the paths
written. The paper world's files are ``noise.png``, ``base_rate.png``, ``k.png``,
``composability.png``, ``density.png`` and ``curves.png``; another world's carry its name as a
suffix (``noise_calibrated.png``). The paper's composability band comes from
:data:`~evalstop.experiments.paper.figures.PAPER_FIGURES`, drawn on the paper world only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalstop.core.model import Job, JobKind
from evalstop.experiments.grid import DENSITIES, DENSITY_KS, PAPER_NOISES
from evalstop.experiments.paper.figures import PaperFigures
from evalstop.experiments.paper.plan import Settings, Sim
from evalstop.experiments.paper.results import ResultRow, Results, WorldResults
from evalstop.experiments.plotting import pyplot
from evalstop.sim.workload import sweep_jobs

__all__ = ["plot_names", "write_plots"]

PLOTS = ("noise", "base_rate", "k", "composability", "density", "curves")


def plot_names(world: str) -> tuple[str, ...]:
    """The file names (without ``.png``) of ``world``'s plots."""
    return PLOTS if world == "paper" else tuple(f"{name}_{world}" for name in PLOTS)


def _value(row: ResultRow, metric: str) -> tuple[float, float]:
    est = row.metric(metric)
    return est.mean, 0.0 if math.isnan(est.ci95) else est.ci95


def _series(
    rows: Sequence[ResultRow], x: str, detector: str, metric: str
) -> tuple[list[float], list[float], list[float]]:
    picked = [row for row in rows if row.detector == detector]
    values = [_value(row, metric) for row in picked]
    return (
        [float(getattr(row, x)) for row in picked],
        [v for v, _ in values],
        [e for _, e in values],
    )


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sweep_plot(
    plt: Any, rows: Sequence[ResultRow], x: str, xlabel: str, path: Path, title: str, diagonal: bool
) -> None:
    detectors = sorted({row.detector for row in rows})
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, metric in zip(axes, ("precision", "recall", "fpr"), strict=True):
        for detector in detectors:
            xs, ys, es = _series(rows, x, detector, metric)
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=detector)
        if diagonal and metric == "precision":
            ax.plot([0, 1], [0, 1], "k:", label="constant classifier")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    _save(plt, fig, path)


def _k_plot(plt: Any, rows: Sequence[ResultRow], path: Path, title: str) -> None:
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for metric in ("precision", "recall", "fpr"):
        xs, ys, es = _series(rows, "k", "evalstop", metric)
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=metric)
    ax.set_xlabel("k (consecutive declines)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    xs, ys, es = _series(rows, "k", "evalstop", "jct_change_pct")
    bx.errorbar(xs, ys, yerr=es, marker="s", capsize=3, color="tab:red")
    bx.set_xlabel("k")
    bx.set_ylabel("JCT change vs srtf-est (%)")
    bx.grid(alpha=0.3)
    fig.suptitle(title)
    _save(plt, fig, path)


def _composability_plot(
    plt: Any, rows: Sequence[ResultRow], path: Path, title: str, paper: PaperFigures | None
) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.8))
    values = [_value(row, "jct_change_pct") for row in rows]
    bases = [row.base or "-" for row in rows]
    ax.bar(bases, [v for v, _ in values], yerr=[e for _, e in values], capsize=4, label="ours")
    if paper is not None:
        low, high = paper.composability_jct_change_pct
        ax.axhspan(low, high, color="tab:orange", alpha=0.2, label=f"paper: {low}% to {high}%")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_ylabel("JCT change vs base alone (%)")
    ax.legend(fontsize=8)
    ax.set_title(title)
    _save(plt, fig, path)


def _row(rows: Sequence[ResultRow], sigma: float, k: int) -> ResultRow:
    return next(r for r in rows if r.sigma == sigma and r.k == k)


def _errorbar(
    axis: Any, xs: Sequence[float], points: Sequence[tuple[float, float]], **style: Any
) -> None:
    axis.errorbar(xs, [v for v, _ in points], yerr=[e for _, e in points], capsize=3, **style)


def _density_plot(plt: Any, world: WorldResults, path: Path, title: str) -> None:
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    sigma = world.world.eval_noise
    for evals in DENSITIES:
        rows = [r for r in world.density if r.evals_per_run == evals]
        label = f"{evals} evals/run"
        fpr = [_value(_row(rows, s, 2), "fpr") for s in PAPER_NOISES]
        _errorbar(ax, PAPER_NOISES, fpr, marker="o", label=label)
        rec = [_value(_row(rows, sigma, k), "recall") for k in DENSITY_KS]
        _errorbar(bx, DENSITY_KS, rec, marker="s", label=label)
    ax.set_xlabel("eval noise sigma")
    ax.set_ylabel("FPR of EvalStop(k=2)")
    bx.set_xlabel("k")
    bx.set_ylabel(f"recall at sigma {sigma:g}")
    for axis in (ax, bx):
        axis.set_ylim(-0.02, 1.02)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle(title)
    _save(plt, fig, path)


def _example(jobs: tuple[Job, ...], hacking: bool) -> Job | None:
    for job in jobs:
        if job.spec.kind is JobKind.RLHF and job.truth.hacking == hacking and job.checkpoints >= 6:
            return job
    return None


def _curves_plot(plt: Any, settings: Settings, world: str, path: Path) -> None:
    sim = Sim.at(settings, world, 0, "srtf-est")
    (jobs,) = sweep_jobs((settings.config(sim),), 0, JobKind.RLHF)  # WRK-9: RLHF jobs alone
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for hacking, style in ((True, "tab:red"), (False, "tab:green")):
        job = _example(jobs, hacking)
        if job is None:
            continue
        label = "hacking" if hacking else "healthy"
        last = job.observations[-1].step
        x = np.array([o.step / last for o in job.observations])
        scores = [o.eval_score for o in job.observations]
        axes[0].plot(x, scores, "o-", color=style, label=f"{label}: observed eval")
        axes[0].plot(x, job.truth.quality, "--", color=style, label=f"{label}: true quality")
        axes[1].plot(x, [o.proxy_reward for o in job.observations], "o-", color=style, label=label)
        axes[2].plot(x, [o.loss for o in job.observations], "o-", color=style, label=label)
    names = ("eval score (world feedback)", "proxy reward", "training loss")
    for ax, name in zip(axes, names, strict=True):
        ax.set_xlabel("fraction of the run")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Example RLHF runs, world {world}: the proxy rises and the loss falls")
    _save(plt, fig, path)


def write_plots(results: Results, out: Path) -> list[Path]:
    """Write every world's plots into ``out`` (see the module docstring)."""
    plt = pyplot()
    written: list[Path] = []
    for world in results.worlds:
        name = world.world.name
        paths = {p: out / f"{f}.png" for p, f in zip(PLOTS, plot_names(name), strict=True)}
        paper = results.paper if name == "paper" else None
        tag = f" (world {name})"
        _sweep_plot(
            plt,
            world.noise,
            "sigma",
            "eval noise sigma",
            paths["noise"],
            "Noise sweep (detectors over srtf-est)" + tag,
            diagonal=False,
        )
        _sweep_plot(
            plt,
            world.base_rate,
            "hacking_share",
            "hacking share of RLHF jobs",
            paths["base_rate"],
            "Base-rate sweep" + tag,
            diagonal=True,
        )
        _k_plot(plt, world.k, paths["k"], "Threshold sweep: EvalStop(k) over srtf-est" + tag)
        _composability_plot(
            plt,
            world.composability,
            paths["composability"],
            "Composability: EvalStop over each base" + tag,
            paper,
        )
        if world.density:
            _density_plot(plt, world, paths["density"], "Evaluation density" + tag)
        else:
            del paths["density"]
        _curves_plot(plt, results.settings, name, paths["curves"])
        written += list(paths.values())
    return written
