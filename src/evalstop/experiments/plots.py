"""PNG plots of a reproduction (needs the optional ``plots`` extra: matplotlib).

:func:`plots_available` says whether matplotlib can be imported; :func:`write_plots` writes one
PNG per sweep plus example curves and returns the paths written.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from evalstop.core.model import Job, JobKind
from evalstop.experiments.plan import Settings
from evalstop.sim.workload import generate

__all__ = ["PLOTS_HINT", "plots_available", "write_plots"]

PLOTS_HINT = "plots skipped: matplotlib is missing; pip install 'evalstop[plots]' to get them"


def plots_available() -> bool:
    """True when matplotlib is importable."""
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(
    rows: list[dict[str, Any]], key: str, detector: str, metric: str
) -> tuple[list[float], list[float], list[float]]:
    picked = [row for row in rows if row["detector"] == detector]
    xs = [float(row[key]) for row in picked]
    ys = [np.nan if row[metric] is None else float(row[metric]) for row in picked]
    es = [0.0 if row[f"{metric}_ci95"] is None else float(row[f"{metric}_ci95"]) for row in picked]
    return xs, ys, es


def _sweep_plot(
    plt: Any,
    rows: list[dict[str, Any]],
    key: str,
    xlabel: str,
    path: Path,
    title: str,
    diagonal: bool = False,
) -> None:
    detectors = sorted({row["detector"] for row in rows})
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, metric in zip(axes, ("precision", "recall", "fpr"), strict=True):
        for detector in detectors:
            xs, ys, es = _series(rows, key, detector, metric)
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=detector)
        if diagonal and metric == "precision":
            ax.plot([0, 1], [0, 1], "k:", label="constant classifier")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _k_plot(plt: Any, rows: list[dict[str, Any]], path: Path) -> None:
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
    fig.suptitle("Threshold sweep: EvalStop(k) over srtf-est")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _composability_plot(plt: Any, rows: list[dict[str, Any]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.8))
    bases = [row["base"] for row in rows]
    means = [row["jct_change_pct"] or 0.0 for row in rows]
    errs = [row["jct_change_pct_ci95"] or 0.0 for row in rows]
    ax.bar(bases, means, yerr=errs, capsize=4, color="tab:blue", label="ours")
    ax.axhspan(-25.2, -8.9, color="tab:orange", alpha=0.2, label="paper: -8.9% to -25.2%")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_ylabel("JCT change vs base alone (%)")
    ax.legend(fontsize=8)
    ax.set_title("Composability: EvalStop over each base policy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _example(jobs: tuple[Job, ...], hacking: bool) -> Job | None:
    for job in jobs:
        if job.spec.kind is JobKind.RLHF and job.truth.hacking == hacking:
            return job
    return None


def _curves_plot(plt: Any, settings: Settings, path: Path) -> None:
    workload = generate(settings.config(settings.noise, settings.hacking_share), 0)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for hacking, style in ((True, "tab:red"), (False, "tab:green")):
        job = _example(workload.jobs, hacking)
        if job is None:
            continue
        label = "hacking" if hacking else "healthy"
        last = job.observations[-1].step
        x = np.array([o.step / last for o in job.observations])
        axes[0].plot(
            x,
            [o.eval_score for o in job.observations],
            "o-",
            color=style,
            label=f"{label}: observed eval",
        )
        axes[0].plot(x, job.truth.quality, "--", color=style, label=f"{label}: true quality")
        axes[1].plot(x, [o.proxy_reward for o in job.observations], "o-", color=style, label=label)
        axes[2].plot(x, [o.loss for o in job.observations], "o-", color=style, label=label)
    for ax, name in zip(
        axes, ("eval score (world feedback)", "proxy reward", "training loss"), strict=True
    ):
        ax.set_xlabel("fraction of the run")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Example RLHF runs: the proxy rises and the loss falls while quality collapses")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(results: dict[str, Any], settings: Settings, out: Path) -> list[Path]:
    """Write noise.png, base_rate.png, k.png, composability.png and curves.png into ``out``."""
    plt = _pyplot()
    paths = {
        name: out / f"{name}.png" for name in ("noise", "base_rate", "k", "composability", "curves")
    }
    _sweep_plot(
        plt,
        results["noise"],
        "sigma",
        "eval noise sigma",
        paths["noise"],
        "Noise sweep (detectors over srtf-est)",
    )
    _sweep_plot(
        plt,
        results["base_rate"],
        "hacking_share",
        "hacking share of RLHF jobs",
        paths["base_rate"],
        "Base-rate sweep",
        diagonal=True,
    )
    _k_plot(plt, results["k"], paths["k"])
    _composability_plot(plt, results["composability"], paths["composability"])
    _curves_plot(plt, settings, paths["curves"])
    return list(paths.values())
