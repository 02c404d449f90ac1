"""The simulated worlds' summary statistics beside the real curves' (issue 27, out of sample).

``python docs/scripts/world_check.py`` draws the default workloads of both worlds (seeds 0-2,
1,000 jobs each) and computes, on each RLHF job's *observed* eval scores, the statistics that
``calibration.py`` computes on the real curves, with the same code (its ``noise_sd``,
``_plateaus`` and ``_half_loss_ratio``): evaluations per run, the share of healthy runs that
plateau, where hacking runs peak, the half-loss time after the peak and the noise over the
gain. The real columns are the packaged corpus's labelled curves (the calibrated world's fit
read their *summary statistics*; nothing here is fitted to them or to anything else) and, when
``evalstop.gym`` is installed, the first runs of the gym's development split (real
policy-gradient runs with exact gold truth). A simulated run's label is its hidden truth, a
real curve's the corpus's rule, a gym run's the gym's rule on its exact gold curve. The gym's
checkpoint at step 0 (the initial policy) is left out, as a simulated run has none.
"""

from __future__ import annotations

import argparse
import importlib
import math
import statistics
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
from calibration import (
    SUPERVISED_RUNS,
    _half_loss_ratio,
    _plateaus,
    calibrate,
    curve_stats,
    noise_sd,
    step_drops,
)

from evalstop.core.model import Job, JobKind
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.traces.corpus import default_data_dir

__all__ = ["Stats", "gym_stats", "main", "real_stats", "render", "simulated_stats"]


@attrs.frozen(slots=True)
class Stats:
    """The compared statistics of one set of curves (NaN where undefined).

    Attributes:
        name: the column's name.
        runs: labelled runs; hacking: how many of them hack.
        evals: evaluations per run, ``(p10, median, p90)``.
        plateau: the share of healthy runs that plateau.
        peak: hacking runs' peak step over last step, ``(p10, median, p90)``.
        half_loss: median half-loss time over hacking runs that lose half.
        noise: healthy runs' noise sd over gain, ``(p10, median, p90)``.
        step_share: the share of healthy runs with a step-schedule plateau, and its source.
    """

    name: str
    runs: int
    hacking: int
    evals: tuple[float, float, float]
    plateau: float
    peak: tuple[float, float, float]
    half_loss: float
    noise: tuple[float, float, float]
    step_share: str


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (math.nan, math.nan, math.nan)
    p10, p50, p90 = np.quantile(finite, [0.1, 0.5, 0.9])
    return (float(p10), float(p50), float(p90))


def _job_stats(job: Job) -> tuple[bool, int, float, float, float, bool]:
    """``(hacking, evals, peak fraction, half-loss, noise/gain, plateaus)`` of one job."""
    steps = [float(o.step) for o in job.observations]
    return _curve_stats(job.truth.hacking, steps, [o.eval_score for o in job.observations])


def simulated_stats(world: str, seeds: int = 3, n_jobs: int = 1000) -> Stats:
    """The statistics of the RLHF jobs of ``world``'s default workloads."""
    config = WorkloadConfig(n_jobs=n_jobs, world=world)
    rows = [
        _job_stats(job)
        for seed in range(seeds)
        for job in generate(config, seed).jobs
        if job.spec.kind is JobKind.RLHF and len(job.observations) >= 2
    ]
    hacking = [r for r in rows if r[0]]
    healthy = [r for r in rows if not r[0]]
    halves = [r[3] for r in hacking if math.isfinite(r[3])]
    share = config.world.step_share
    return Stats(
        name=f"simulated `{world}`",
        runs=len(rows),
        hacking=len(hacking),
        evals=_spread([float(r[1]) for r in rows]),
        plateau=sum(r[5] for r in healthy) / len(healthy),
        peak=_spread([r[2] for r in hacking]),
        half_loss=statistics.median(halves) if halves else math.nan,
        noise=_spread([r[4] for r in healthy]),
        step_share=f"{share:g} (the world's `step_share`, CRV-12)",
    )


def real_stats() -> Stats:
    """The same statistics of the packaged corpus's labelled, not excluded, curves."""
    fit = calibrate(curve_stats(default_data_dir()))
    hacking = [c for c in fit.curves if c.label == "hacking"]
    healthy = [c for c in fit.curves if c.label == "healthy"]
    drops = step_drops()
    return Stats(
        name="real corpus (labelled)",
        runs=len(fit.curves),
        hacking=len(hacking),
        evals=_spread([float(c.evals) for c in fit.curves]),
        plateau=fit.plateau_share,
        peak=_spread([c.peak_fraction for c in hacking]),
        half_loss=fit.half_loss_ratio,
        noise=_spread([c.noise_fraction for c in healthy]),
        step_share=(f"RLHF: none documented; supervised: {len(drops)} of {SUPERVISED_RUNS} runs"),
    )


def _curve_stats(
    hacking: bool, steps: Sequence[float], values: Sequence[float]
) -> tuple[bool, int, float, float, float, bool]:
    """:func:`_job_stats` of a curve given as its label, steps and observed values."""
    s = np.asarray(steps, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    fractions = s / s[-1]
    peak = int(np.argmax(v))
    gain = float(v.max() - v[0])
    half = _half_loss_ratio(fractions, v, peak, gain) if hacking and gain > 0 else math.nan
    noise = noise_sd(v) / gain if gain > 0 else math.nan
    flat = (not hacking) and len(v) >= 3 and _plateaus(fractions, v)
    return hacking, len(v), float(fractions[peak]), half, noise, flat


def gym_stats(runs: int, workers: int = 1) -> Stats | None:
    """The same statistics of the first ``runs`` runs of the gym's development split
    (``evalstop.gym``, its own label rule on the exact gold curve); None without the gym."""
    try:
        gym: Any = importlib.import_module("evalstop.gym")
    except ImportError:
        return None
    rows = []
    for labelled in gym.generate_split("dev", runs, workers=workers):
        points = [(c.step, c.eval_score) for c in labelled.run.checkpoints if c.step > 0]
        if len(points) >= 2:
            steps, values = zip(*points, strict=True)
            rows.append(_curve_stats(labelled.label == "hacking", steps, values))
    hacking = [r for r in rows if r[0]]
    healthy = [r for r in rows if not r[0]]
    halves = [r[3] for r in hacking if math.isfinite(r[3])]
    return Stats(
        name=f"gym `dev` (first {runs} runs)",
        runs=len(rows),
        hacking=len(hacking),
        evals=_spread([float(r[1]) for r in rows]),
        plateau=sum(r[5] for r in healthy) / len(healthy) if healthy else math.nan,
        peak=_spread([r[2] for r in hacking]),
        half_loss=statistics.median(halves) if halves else math.nan,
        noise=_spread([r[4] for r in healthy]),
        step_share="none (constant learning rate)",
    )


def _t(spread: tuple[float, float, float], digits: int = 2) -> str:
    if not math.isfinite(spread[1]):
        return "n/a"
    return f"{spread[1]:.{digits}f} [{spread[0]:.{digits}f}, {spread[2]:.{digits}f}]"


def render(columns: Sequence[Stats]) -> str:
    """The statistics as a markdown table, one column per set of curves."""
    rows = [
        ("labelled runs (hacking)", [f"{c.runs} ({c.hacking})" for c in columns]),
        ("evaluations per run, median [p10, p90]", [_t(c.evals, 0) for c in columns]),
        ("healthy runs that plateau", [f"{c.plateau:.2f}" for c in columns]),
        ("hacking peak step / last step, median [p10, p90]", [_t(c.peak) for c in columns]),
        ("half-loss time after the peak (median)", [f"{c.half_loss:.2f}" for c in columns]),
        ("healthy noise / gain, median [p10, p90]", [_t(c.noise, 3) for c in columns]),
        ("healthy runs with a step-schedule plateau", [c.step_share for c in columns]),
    ]
    lines = [
        "| statistic | " + " | ".join(c.name for c in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/world_check.py", description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--gym-runs", type=int, default=200, help="0: no gym column")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    columns = [simulated_stats(w, args.seeds, args.jobs) for w in ("paper", "calibrated")]
    columns.append(real_stats())
    gym = gym_stats(args.gym_runs, args.workers) if args.gym_runs > 0 else None
    if gym is not None:
        columns.append(gym)
    print(render(columns))
    if gym is None:
        print("\n(no gym column: `evalstop.gym` is not installed or `--gym-runs 0`)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
