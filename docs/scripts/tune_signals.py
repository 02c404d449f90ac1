"""Choose the multi-signal detectors' defaults and the entry points' default detector on the
gym's development split only (spec ``SIG-9``).

Run ``python docs/scripts/tune_signals.py > docs/scripts/tune_signals.out``.

Data: the first 500 runs of the gym's ``dev`` split (``GYM-8``; since issue 22's second
distribution, ``GYM-5``, the runs of ``V2``), each at the evaluation
density its config draws (10, 20 or 40). The simulator's tuning seeds 1001-1002 at the
``NAD-9`` cells are printed for the chosen points, for information only. Held out, never read
here: the gym's other split, the real RLHF corpus the package ships and the supervised curves.

Grids (fixed before the first run):

- ``ewma``: ``alpha`` 0.2, 0.3, 0.5 x ``drop`` 0.1, 0.2, 0.3, 0.5 x ``warmup_evals`` 3, 5;
- ``divergence``: ``z`` 0.5, 0.75, 1, 1.5 x ``side_z`` 0, 1, 2, 3 x ``fallback_z`` 2, 3 x
  ``signal`` proxy_reward, kl (memory 0.3 and warm-up 5, the noise-aware defaults); then
  (added in issue 26's second session, before its run: ``SIG-12``) ``growth`` 0.25, 0.5, 1 x
  ``z`` 0.5, 0.75, 1 x ``side_z`` 1, 2 x ``fallback_z`` 2, 3 x ``signal`` proxy_reward, kl;
- ``kl-budget``: ``z`` 0.5, 1, 1.5, 2, 3 x ``warmup_evals`` 4, 6, 8;
- ``bocpd``: ``hazard`` 0.05, 0.1, 0.2 x ``threshold`` 0.8, 0.9, 0.95, 0.99 x ``slope_scale``
  0.5, 1, 2 (level scale 1, 16 hypotheses, warm-up 5).

Rule (``SIG-9``, written before the first run): admissible when harmful stops are <= 5% of
the healthy runs at each density; the highest mean recall over the densities, ties within one
point broken by the lower mean gain-floored regret, then grid order; with no admissible point,
the lowest highest harmful rate. The entry points' default: the same rule over every
registered detector at its defaults (the four at their chosen ones); that pick
(``registry.DEV_PICK``) becomes ``DEFAULT_DETECTOR`` only if it passes ``SIG-11``'s guard.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence
from typing import Any

from evalstop.core.bocpd import BocpdDetector
from evalstop.core.detectors import Detector
from evalstop.core.divergence import DivergenceDetector
from evalstop.core.ewma import EwmaDetector
from evalstop.core.kl_budget import KlBudgetDetector
from evalstop.core.registry import make_detector
from evalstop.core.regret import RegretSummary, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.board import sim_scores
from evalstop.experiments.scoreboard.gym import gym_scores
from evalstop.gym import generate_split
from evalstop.sim.workload import WorkloadConfig
from evalstop.sim.worlds import WORLDS

SPLIT = "dev"
RUNS = 500
HARMFUL_CAP = 0.05
TIE = 0.01
SIM_SEEDS = (1001, 1002)
SIM_CELLS = (("paper", 0.12), ("calibrated", None))
BASELINES = ("noise-aware", "evalstop", "lossplateau", "stopat", "never")


def grids() -> dict[str, list[Detector[Any]]]:
    """Every detector's grid, in grid order."""
    ewma: list[Detector[Any]] = [
        EwmaDetector(alpha=a, drop=d, warmup_evals=w)
        for a, d, w in itertools.product((0.2, 0.3, 0.5), (0.1, 0.2, 0.3, 0.5), (3, 5))
    ]
    divergence: list[Detector[Any]] = [
        DivergenceDetector(z=z, side_z=s, fallback_z=f, signal=signal, stall=0.0)
        for z, s, f, signal in itertools.product(
            (0.5, 0.75, 1.0, 1.5), (0.0, 1.0, 2.0, 3.0), (2.0, 3.0), ("proxy_reward", "kl")
        )
    ]
    divergence += [
        DivergenceDetector(z=z, side_z=s, fallback_z=f, signal=signal, growth=g, stall=0.0)
        for g, z, s, f, signal in itertools.product(
            (0.25, 0.5, 1.0), (0.5, 0.75, 1.0), (1.0, 2.0), (2.0, 3.0), ("proxy_reward", "kl")
        )
    ]
    divergence += [
        DivergenceDetector(
            z=z,
            side_z=s,
            fallback_z=f,
            signal="proxy_reward",
            stall=stall,
            stall_gain_z=gain,
            stall_z=below,
        )
        for stall, gain, below, z, s, f in itertools.product(
            (0.1, 0.15, 0.25), (3.0, 4.0), (0.5, 1.0), (1.25, 1.5), (1.0, 2.0, 3.0), (2.0, 3.0)
        )
    ]
    kl: list[Detector[Any]] = [
        KlBudgetDetector(z=z, warmup_evals=w)
        for z, w in itertools.product((0.5, 1.0, 1.5, 2.0, 3.0), (4, 6, 8))
    ]
    bocpd: list[Detector[Any]] = [
        BocpdDetector(hazard=h, threshold=t, slope_scale=s)
        for h, t, s in itertools.product((0.05, 0.1, 0.2), (0.8, 0.9, 0.95, 0.99), (0.5, 1.0, 2.0))
    ]
    return {"ewma": ewma, "divergence": divergence, "kl-budget": kl, "bocpd": bocpd}


Row = tuple[Detector[Any], dict[int, RegretSummary]]


def score(detectors: Sequence[Detector[Any]], by_density: dict[int, list[Any]]) -> list[Row]:
    """Each detector's summary at each density."""
    summaries: list[dict[int, RegretSummary]] = [{} for _ in detectors]
    for evals, runs in by_density.items():
        for row, scores in zip(summaries, gym_scores(detectors, runs), strict=True):
            row[evals] = summarize_runs(scores)
    return list(zip(detectors, summaries, strict=True))


def _mean(row: Row, field: str) -> float:
    values = [float(getattr(s, field)) for s in row[1].values()]
    return sum(values) / len(values)


def choose(rows: Sequence[Row]) -> Row:
    """The ``SIG-9`` rule."""
    admissible = [r for r in rows if all(s.harmful_rate <= HARMFUL_CAP for s in r[1].values())]
    if not admissible:
        return min(rows, key=lambda r: max(s.harmful_rate for s in r[1].values()))
    top = max(_mean(r, "recall") for r in admissible)
    tied = [r for r in admissible if _mean(r, "recall") >= top - TIE]
    return min(tied, key=lambda r: _mean(r, "floored_regret"))


def line(row: Row) -> str:
    detector, cells = row
    parts = [
        f"{e}: rec {s.recall:5.1%} harm {s.harmful_rate:5.1%} floored {s.floored_regret:5.1%}"
        for e, s in sorted(cells.items())
    ]
    return f"{detector.name:72s} | " + " | ".join(parts)


def sim_lines(detectors: Sequence[Detector[Any]], jobs: int) -> list[str]:
    """The chosen points in the simulator's tuning cells (information only)."""
    out = []
    for (world, noise), evals in itertools.product(SIM_CELLS, DENSITIES):
        sigma = WORLDS[world].eval_noise if noise is None else noise
        per = [[] for _ in detectors]  # type: list[list[Any]]
        for seed in SIM_SEEDS:
            config = WorkloadConfig(
                n_jobs=jobs, world=WORLDS[world], eval_noise=sigma, evals_per_run=evals
            )
            for row, scores in zip(per, sim_scores(detectors, config, seed), strict=True):
                row.extend(scores)
        for detector, scores in zip(detectors, per, strict=True):
            s = summarize_runs(scores)
            out.append(
                f"sim {world} s={sigma:g} n={evals}: {detector.name:60s} rec {s.recall:5.1%} "
                f"harm {s.harmful_rate:5.1%} regret {s.mean_regret:5.1%}"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--jobs", type=int, default=500, help="jobs a simulated workload")
    parser.add_argument("--workers", type=int, default=2, help="gym worker processes (2)")
    args = parser.parse_args()
    start = time.process_time()
    runs = generate_split(SPLIT, args.runs, workers=args.workers)
    by_density = {e: [r for r in runs if r.config.evals == e] for e in DENSITIES}
    labels = {e: sum(r.label == "hacking" for r in rs) for e, rs in by_density.items()}
    print(f"gym {SPLIT} split, first {args.runs} runs: hacking/runs by density ", end="")
    print(", ".join(f"{e}: {labels[e]}/{len(rs)}" for e, rs in by_density.items()))
    chosen: dict[str, Detector[Any]] = {}
    for name, grid in grids().items():
        rows = score(grid, by_density)
        print(f"\n{name}: {len(grid)} points")
        for row in rows:
            print("  " + line(row))
        best = choose(rows)
        chosen[name] = best[0]
        print(f"chosen {name}: {best[0].name}")
    candidates = [*chosen.values(), *(make_detector(n) for n in BASELINES)]
    rows = score(candidates, by_density)
    print("\nentry points' default: every registered detector at its (chosen) defaults")
    for row in rows:
        print("  " + line(row))
    default = choose(rows)
    print(f"chosen default: {default[0].name}")
    print("\nsimulator tuning seeds 1001-1002 (information; not part of the choice):")
    for text in sim_lines([*chosen.values(), make_detector("noise-aware")], args.jobs):
        print("  " + text)
    print(f"\nCPU seconds: {time.process_time() - start:.0f}")


if __name__ == "__main__":
    main()
