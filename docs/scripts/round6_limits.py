"""What issue 26's goal asks of a stopping time, and how much one test range can say
(information for ``SIG-19``'s round; it chooses nothing).

Run ``python docs/scripts/round6_limits.py --cache PATH --holdout-cache PATH >
docs/scripts/round6_limits.out`` (the caches as ``tune_round6.py``'s).

Data: the gym's ``dev`` split only (``GYM-8``, ``V2``): seeds 0-2999 and 4000-4999. Never read
here: the gym's other split, the real RLHF corpus and the supervised curves.

1. Reference stopping times (``RGT-6``'s keep floors) for the shipped keep (the level keep,
   ``NAD-10``, memory 0.05) and the best raw score (``DET-4``), scored as a detector is: the
   *oracle stop* (a stop at the truly best checkpoint), the *stop floor* (the best stopping
   time in hindsight, each run its own) and the *hindsight keep* (no stop, the rule's keep over
   the whole curve; shown for its regret only, since it is not a stop).
2. Range luck: ``learned`` and ``divergence`` at their defaults, folded once on the 4,000 dev
   runs; 2,000 seeded resamples of 1,100 of them (with replacement), each scored as a test
   range is. The share of resamples meeting the goal at every density, and the 5th and 95th
   percentiles of each density's recall, harmful rate and floored regret.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import tune_default
import tune_round6

from evalstop.core.keep_floor import keep_floors, kept_indices
from evalstop.core.registry import make_detector
from evalstop.core.regret import RunScore
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.gym import fold_views, run_score, run_views
from evalstop.gym import LabelledRun

RESAMPLES = 2000
RANGE = 1100
SEED = 26
WORKERS = 2


def references(runs: Sequence[LabelledRun]) -> None:
    """Section 1: the oracle stop, the stop floor and the hindsight keep, per keep rule."""
    for label, memory in (("level keep, memory 0.05", 0.05), ("best raw score", None)):
        oracle: list[RunScore] = []
        floor: list[RunScore] = []
        hindsight: list[RunScore] = []
        for r in runs:
            views = run_views(r)
            kept = kept_indices([v.step for v in views], [v.eval_score for v in views], memory)
            f = keep_floors(r.run.truth.quality, kept)
            oracle.append(run_score(r, f.oracle_stop.stop, f.oracle_stop.kept))
            floor.append(run_score(r, f.stop_floor.stop, f.stop_floor.kept))
            hindsight.append(run_score(r, None, f.hindsight.kept))
        print(f"  {label}:")
        tune_round6.show_cells("oracle stop", oracle, runs)
        tune_round6.show_cells("stop floor", floor, runs)
        tune_round6.show_cells("hindsight keep (regret only)", hindsight, runs)


Columns = dict[str, npt.NDArray[np.float64]]


def columns(scores: Sequence[RunScore], runs: Sequence[LabelledRun]) -> Columns:
    """Per run: density, hacking, caught, harmful stop of a healthy run, floored regret."""
    return {
        "evals": np.array([r.config.evals for r in runs], dtype=float),
        "hacking": np.array([s.collapsing for s in scores], dtype=float),
        "caught": np.array([s.collapsing and s.stopped for s in scores], dtype=float),
        "harmful": np.array(
            [not s.collapsing and s.stop_class.value == "harmful" for s in scores], dtype=float
        ),
        "floored": np.array([s.floored_regret for s in scores], dtype=float),
    }


def resampled(data: Columns) -> tuple[float, dict[int, npt.NDArray[np.float64]]]:
    """The share of resamples meeting the goal at every density, and each density's
    (recall, harmful, floored) per resample."""
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(data["evals"]), size=(RESAMPLES, RANGE))
    rates: dict[int, npt.NDArray[np.float64]] = {}
    for e in DENSITIES:
        at = (data["evals"][picks] == e).astype(float)
        hack = at * data["hacking"][picks]
        heal = at - hack
        recall = (hack * data["caught"][picks]).sum(1) / hack.sum(1)
        harmful = (heal * data["harmful"][picks]).sum(1) / heal.sum(1)
        floored = (at * data["floored"][picks]).sum(1) / at.sum(1)
        rates[e] = np.stack([recall, harmful, floored], axis=1)
    meets = np.ones(RESAMPLES, dtype=bool)
    for r in rates.values():
        meets &= (r[:, 0] >= 0.9) & (r[:, 1] <= 0.05) & (r[:, 2] <= 0.05)
    return float(meets.mean()), rates


def luck(runs: Sequence[LabelledRun]) -> None:
    """Section 2: each default's rates over resampled ranges of 1,100 dev runs."""
    for name in ("learned", "divergence"):
        detector = make_detector(name)
        scores = [run_score(r, *fold_views(detector, run_views(r))) for r in runs]
        share, rates = resampled(columns(scores, runs))
        print(f"  {name}: the goal met at every density in {share:.1%} of the ranges")
        for e, r in rates.items():
            low, high = np.percentile(r, 5, axis=0), np.percentile(r, 95, axis=0)
            print(
                f"    {e}: recall {low[0]:.1%} to {high[0]:.1%}, harmful {low[1]:.1%} to "
                f"{high[1]:.1%}, floored regret {low[2]:.1%} to {high[2]:.1%} (5th to 95th)"
            )


def main() -> None:
    start = time.process_time()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for option, what in (("--cache", "dev seeds 0-3999"), ("--holdout-cache", "4000-4999")):
        parser.add_argument(option, type=Path, default=None, help=f"a pickle of {what}")
    args = parser.parse_args()
    tuning = tune_default.dev_runs(args.cache, WORKERS)[: tune_round6.TUNING]
    print("1. reference stopping times on the tuning runs (dev seeds 0-2999):")
    references(tuning)
    runs = [*tuning, *tune_round6.holdout_runs(args.holdout_cache, WORKERS)]
    print(
        f"\n2. {RESAMPLES} ranges of {RANGE} runs drawn from {len(runs)} dev runs "
        "(seeds 0-2999 and 4000-4999), with replacement, seed 26:"
    )
    luck(runs)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - start + children.ru_utime + children.ru_stime
    print(f"\nCPU seconds (this process and its workers): {cpu:.0f}")


if __name__ == "__main__":
    main()
