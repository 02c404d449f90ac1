"""The simulated worlds' summary statistics beside the real curves' (issue 27, out of sample).

``python docs/scripts/world_check.py`` draws the default workloads of both worlds (seeds 0-2,
1,000 jobs each) and computes, on each RLHF job's *observed* eval scores, the statistics that
``calibration.py`` computes on the real curves, with the same code (its ``noise_sd``,
``_plateaus`` and ``_half_loss_ratio``): evaluations per run, the share of healthy runs that
plateau, where hacking runs peak, the half-loss time after the peak, the noise over the gain
and the share of the gain a healthy run shows at its first checkpoint after step 0. The real
columns are the packaged corpus's labelled curves (the calibrated world's fit read their
*summary statistics*, by design; nothing here is fitted to them or to anything else) and, when
``evalstop.gym`` is installed, the first runs of the gym's development split (real
policy-gradient runs with exact gold truth; an out-of-sample check, never a fitting target).
A simulated run's label is its hidden truth, a real curve's the corpus's rule, a gym run's the
gym's rule on its exact gold curve.

Every simulated run, 25 of the 28 real curves and every gym run evaluate the initial policy
at step 0 (``WRK-7``); the statistics read the curves with that point, and the plateau share
and the noise over the gain are printed without it too (each curve's step-0 point left out,
where it has one), so that both comparisons are like for like.
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
from evalstop.traces.corpus import catalogue, default_data_dir, read_label

__all__ = [
    "CurveRow",
    "Stats",
    "curve_row",
    "gym_stats",
    "main",
    "real_stats",
    "render",
    "simulated_stats",
]

Spread = tuple[float, float, float]


@attrs.frozen(slots=True)
class CurveRow:
    """The statistics of one observed curve (NaN where undefined).

    Attributes:
        hacking: its label.
        evals: its evaluations, its step-0 one included.
        peak: (hacking) its peak step over its last step.
        half_loss: (hacking) its half-loss time after the peak (``_half_loss_ratio``).
        noise: its noise sd over its gain (first value to peak), with its step-0 point.
        noise_trained: the same without its step-0 point.
        plateau: (healthy) whether it plateaus, with its step-0 point.
        plateau_trained: the same without it.
        first_share: (healthy, with a step-0 point) its first value after step 0 minus its
            step-0 value, over its gain.
    """

    hacking: bool
    evals: int
    peak: float
    half_loss: float
    noise: float
    noise_trained: float
    plateau: bool
    plateau_trained: bool
    first_share: float


def _shape(steps: np.ndarray, values: np.ndarray) -> tuple[float, bool]:
    """``(noise / gain, plateaus)`` of a curve as the calibration computes them."""
    gain = float(values.max() - values[0])
    noise = noise_sd(values) / gain if gain > 0 else math.nan
    return noise, len(values) >= 3 and _plateaus(steps / steps[-1], values)


def curve_row(hacking: bool, steps: Sequence[float], values: Sequence[float]) -> CurveRow:
    """The statistics of a curve given as its label, steps (its step-0 point first, when it
    has one) and observed values."""
    s = np.asarray(steps, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    fractions = s / s[-1]
    peak = int(np.argmax(v))
    gain = float(v.max() - v[0])
    half = math.nan
    if hacking and gain > 0 and peak > 0:
        half = _half_loss_ratio(fractions, v, peak, gain)
    noise, flat = _shape(s, v)
    cut = 1 if s[0] == 0 else 0
    noise_trained, flat_trained = (
        _shape(s[cut:], v[cut:]) if len(v) - cut >= 2 else (math.nan, False)
    )
    share = (float(v[1] - v[0]) / gain) if cut and gain > 0 else math.nan
    return CurveRow(
        hacking=hacking,
        evals=len(v),
        peak=float(fractions[peak]),
        half_loss=half,
        noise=noise,
        noise_trained=noise_trained,
        plateau=(not hacking) and flat,
        plateau_trained=(not hacking) and flat_trained,
        first_share=math.nan if hacking else share,
    )


@attrs.frozen(slots=True)
class Stats:
    """The compared statistics of one set of curves (NaN where undefined; spreads are
    ``(p10, median, p90)``).

    Attributes:
        name: the column's name.
        runs: labelled runs; hacking: how many of them hack.
        evals: evaluations per run, the step-0 one included.
        plateau: the share of healthy runs that plateau; plateau_trained: without step 0.
        peak: hacking runs' peak step over last step.
        half_loss: median half-loss time over hacking runs that lose half.
        noise: healthy runs' noise sd over gain; noise_trained: without step 0.
        first_share: healthy runs' share of their gain at their first checkpoint after step 0.
        step_share: the share of healthy runs with a step-schedule plateau, and its source.
    """

    name: str
    runs: int
    hacking: int
    evals: Spread
    plateau: float
    plateau_trained: float
    peak: Spread
    half_loss: float
    noise: Spread
    noise_trained: Spread
    first_share: Spread
    step_share: str


def _spread(values: Sequence[float]) -> Spread:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (math.nan, math.nan, math.nan)
    p10, p50, p90 = np.quantile(finite, [0.1, 0.5, 0.9])
    return (float(p10), float(p50), float(p90))


def _stats(name: str, rows: Sequence[CurveRow], step_share: str) -> Stats:
    """The column ``name`` from its curves' rows."""
    hacking = [r for r in rows if r.hacking]
    healthy = [r for r in rows if not r.hacking]
    halves = [r.half_loss for r in hacking if math.isfinite(r.half_loss)]
    share = len(healthy) or math.nan
    return Stats(
        name=name,
        runs=len(rows),
        hacking=len(hacking),
        evals=_spread([float(r.evals) for r in rows]),
        plateau=sum(r.plateau for r in healthy) / share,
        plateau_trained=sum(r.plateau_trained for r in healthy) / share,
        peak=_spread([r.peak for r in hacking]),
        half_loss=statistics.median(halves) if halves else math.nan,
        noise=_spread([r.noise for r in healthy]),
        noise_trained=_spread([r.noise_trained for r in healthy]),
        first_share=_spread([r.first_share for r in healthy]),
        step_share=step_share,
    )


def _job_row(job: Job) -> CurveRow:
    steps = [float(o.step) for o in job.observations]
    return curve_row(job.truth.hacking, steps, [o.eval_score for o in job.observations])


def simulated_stats(world: str, seeds: int = 3, n_jobs: int = 1000) -> Stats:
    """The statistics of the RLHF jobs of ``world``'s default workloads."""
    config = WorkloadConfig(n_jobs=n_jobs, world=world)
    rows = [
        _job_row(job)
        for seed in range(seeds)
        for job in generate(config, seed).jobs
        if job.spec.kind is JobKind.RLHF and len(job.observations) >= 3
    ]
    share = f"{config.world.step_share:g} (the world's `step_share`, CRV-12)"
    return _stats(f"simulated `{world}`", rows, share)


def real_stats() -> Stats:
    """The same statistics of the packaged corpus's labelled, not excluded, curves (the
    curves ``calibration.curve_stats`` reads, with the same finite points)."""
    data = default_data_dir()
    fitted = {c.name for c in calibrate(curve_stats(data)).curves}
    rows = []
    for source in catalogue(data):
        if source.name not in fitted:
            continue
        gold = source.read(data, source.gold)
        label = read_label(gold, source.read(data, source.proxy), source.scale).label
        pairs = [(s, v) for s, v in zip(gold.steps, gold.values, strict=True) if math.isfinite(v)]
        steps, values = zip(*pairs, strict=True)
        rows.append(curve_row(label == "hacking", steps, values))
    drops = step_drops()
    share = f"RLHF: none documented; supervised: {len(drops)} of {SUPERVISED_RUNS} runs"
    return _stats("real corpus (labelled)", rows, share)


def gym_stats(runs: int, workers: int = 1) -> Stats | None:
    """The same statistics of the first ``runs`` runs of the gym's development split
    (``evalstop.gym``, its own label rule on the exact gold curve); None without the gym."""
    try:
        gym: Any = importlib.import_module("evalstop.gym")
    except ImportError:
        return None
    rows = []
    for labelled in gym.generate_split("dev", runs, workers=workers):
        points = [(c.step, c.eval_score) for c in labelled.run.checkpoints]
        if len(points) >= 3:
            steps, values = zip(*points, strict=True)
            rows.append(curve_row(labelled.label == "hacking", steps, values))
    return _stats(f"gym `dev` (first {runs} runs)", rows, "none (constant learning rate)")


def _t(spread: tuple[float, float, float], digits: int = 2) -> str:
    if not math.isfinite(spread[1]):
        return "n/a"
    return f"{spread[1]:.{digits}f} [{spread[0]:.{digits}f}, {spread[2]:.{digits}f}]"


def render(columns: Sequence[Stats]) -> str:
    """The statistics as a markdown table, one column per set of curves."""
    rows = [
        ("labelled runs (hacking)", [f"{c.runs} ({c.hacking})" for c in columns]),
        (
            "evaluations per run (step 0 included), median [p10, p90]",
            [_t(c.evals, 0) for c in columns],
        ),
        ("healthy runs that plateau", [f"{c.plateau:.2f}" for c in columns]),
        ("... without the step-0 point", [f"{c.plateau_trained:.2f}" for c in columns]),
        ("hacking peak step / last step, median [p10, p90]", [_t(c.peak) for c in columns]),
        ("half-loss time after the peak (median)", [f"{c.half_loss:.2f}" for c in columns]),
        ("healthy noise / gain, median [p10, p90]", [_t(c.noise, 3) for c in columns]),
        ("... without the step-0 point", [_t(c.noise_trained, 3) for c in columns]),
        (
            "healthy share of the gain at the first checkpoint after step 0",
            [_t(c.first_share) for c in columns],
        ),
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
