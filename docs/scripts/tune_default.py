"""Choose ``divergence``'s defaults and the entry points' pick again, on 3,000 dev runs (spec
``SIG-9``, issue 26's fourth round).

Run ``python docs/scripts/tune_default.py > docs/scripts/tune_default.out``.

Data: the gym's ``dev`` split only (``GYM-8``, distribution ``V2``), seeds 0 to 3,999: the
first 3,000 (seeds 0-2999) choose; the next 1,000 (seeds 3000-3999) are a hold-out inside the
dev split, scored once for the chosen point, the previous default (commit 2fc287e) and
``noise-aware`` and printed for information (they choose nothing: they say how much of the
choice's margin is the tuning runs' luck). Never read here: the gym's other split, the real
RLHF corpus the package ships and the supervised curves. ``--cache PATH`` keeps the generated
runs in a pickle (seeds checked on load), so a re-run need not generate them again.

Grid (fixed before the first run; every point has signal ``proxy_reward``, fallback_z 3,
memory 0.3, warm-up 5), three structural forms of the rule that acts before the eval falls:

- A, the stall clause (``SIG-13``) with thresholds that grow with the looks (``SIG-12``):
  ``z`` 1, 1.25 x ``side_z`` 1, 2 x ``growth`` 0, 0.25, 0.5 x ``stall`` 0.1, 0.2 x
  ``stall_z`` 0.5, 1 (``stall_gain_z`` 4);
- B, the shortfall clause (``SIG-14``) in place of the stall clause: ``z`` 1, 1.25 x
  ``side_z`` 1, 2 x ``growth`` 0, 0.25, 0.5 x ``shortfall`` 3, 4, 5 (``stall_gain_z`` 4);
- C, form A's clauses held over a share of the steps (``SIG-15``): ``persist`` 0.05, 0.1 x
  ``z`` 1, 1.25 x ``side_z`` 1, 2 x ``growth`` 0, 0.25 x ``stall_z`` 0, 0.5 (``stall`` 0.1).

Rule (written before the first run): a point *meets the goal with margin* when, at each of
10, 20 and 40 evaluations, its recall is >= 92%, its harmful-stop rate <= 4% and its mean
gain-floored regret <= 4.5% on the tuning runs (issue 26's goal, 90% / 5% / 5%, with margins
of 2, 1 and 0.5 points); among such points the lowest mean floored regret over the densities
wins. When none does, the point with the largest *worst slack* wins: the least, over the three
densities and the three goals, of the distance to the goal's limit in percentage points
(recall - 90, 5 - harmful, 5 - floored regret; negative: short of the goal); ties within 0.5
points are broken by the lower mean floored regret, then by grid order. The entry points' pick
(``registry.DEV_PICK``): the same rule over every registered detector at its defaults
(``divergence`` at the chosen point; ``ewma``, ``kl-budget`` and ``bocpd`` at the defaults of
``tune_signals.py``, not re-tuned; ``noise-aware`` and ``evalstop`` at ``NAD-9``'s and the
paper's). It becomes ``DEFAULT_DETECTOR`` only if it passes ``SIG-11``.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import pickle
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstop.core.detectors import Detector
from evalstop.core.divergence import DivergenceDetector
from evalstop.core.registry import make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.gym import gym_scores
from evalstop.experiments.significance import mcnemar
from evalstop.gym import LabelledRun, generate_split

SPLIT = "dev"
TUNING = 3000
HOLDOUT = 1000
MARGIN = {"recall": 0.92, "harmful": 0.04, "floored": 0.045}
GOAL = {"recall": 0.90, "harmful": 0.05, "floored": 0.05}
TIE = 0.005
FIXED: dict[str, Any] = {
    "fallback_z": 3.0,
    "signal": "proxy_reward",
    "memory": 0.3,
    "warmup_evals": 5,
    "growth": 0.0,
    "stall": 0.0,
    "stall_gain_z": 4.0,
    "stall_z": 0.5,
    "shortfall": 0.0,
    "persist": 0.0,
}
"""Every field a grid point does not set, pinned: a re-run after the defaults change scores
the same points."""
REGISTERED: tuple[str, ...] = ("noise-aware", "evalstop", "lossplateau", "stopat", "never")
REGISTERED += ("ewma", "kl-budget", "bocpd")


def point(**fields: Any) -> DivergenceDetector:
    """A ``divergence`` point: ``fields`` over :data:`FIXED`."""
    return DivergenceDetector(**{**FIXED, **fields})


PREVIOUS = point(z=1.25, side_z=2.0, stall=0.1)
"""The defaults of commit 2fc287e (``SIG-9``'s third run)."""


def grid() -> list[Detector[Any]]:
    """Every point, in grid order."""
    a: list[Detector[Any]] = [
        point(z=z, side_z=s, growth=g, stall=st, stall_z=u)
        for z, s, g, st, u in itertools.product(
            (1.0, 1.25), (1.0, 2.0), (0.0, 0.25, 0.5), (0.1, 0.2), (0.5, 1.0)
        )
    ]
    b: list[Detector[Any]] = [
        point(z=z, side_z=s, growth=g, shortfall=k)
        for z, s, g, k in itertools.product(
            (1.0, 1.25), (1.0, 2.0), (0.0, 0.25, 0.5), (3.0, 4.0, 5.0)
        )
    ]
    c: list[Detector[Any]] = [
        point(z=z, side_z=s, growth=g, stall=0.1, stall_z=u, persist=p)
        for p, z, s, g, u in itertools.product(
            (0.05, 0.1), (1.0, 1.25), (1.0, 2.0), (0.0, 0.25), (0.0, 0.5)
        )
    ]
    return a + b + c


Row = tuple[Detector[Any], dict[int, RegretSummary], list[RunScore]]


_RUNS: list[Sequence[LabelledRun]] = []
"""The runs the worker processes score (set before they fork)."""


def _scores(detector: Detector[Any]) -> list[RunScore]:
    return gym_scores([detector], _RUNS[0])[0]


def score(
    detectors: Sequence[Detector[Any]], runs: Sequence[LabelledRun], workers: int = 1
) -> list[Row]:
    """Each detector's per-run scores and its summary at each density (``workers`` processes,
    forked with the runs; the scores do not depend on them)."""
    _RUNS[:] = [runs]
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            all_scores = pool.map(_scores, detectors, chunksize=1)
    else:
        all_scores = [_scores(d) for d in detectors]
    rows: list[Row] = []
    for detector, scores in zip(detectors, all_scores, strict=True):
        cells = {
            e: summarize_runs([s for s, r in zip(scores, runs, strict=True) if r.config.evals == e])
            for e in DENSITIES
        }
        rows.append((detector, cells, scores))
    return rows


def _mean_floored(row: Row) -> float:
    return sum(s.floored_regret for s in row[1].values()) / len(row[1])


def slack(cells: dict[int, RegretSummary]) -> float:
    """The least distance to the goal's limits, in percentage points (negative: short)."""
    return 100 * min(
        min(
            s.recall - GOAL["recall"],
            GOAL["harmful"] - s.harmful_rate,
            GOAL["floored"] - s.floored_regret,
        )
        for s in cells.values()
    )


def with_margin(cells: dict[int, RegretSummary]) -> bool:
    """Whether the goal is met with the stated margins at every density."""
    return all(
        s.recall >= MARGIN["recall"]
        and s.harmful_rate <= MARGIN["harmful"]
        and s.floored_regret <= MARGIN["floored"]
        for s in cells.values()
    )


def choose(rows: Sequence[Row]) -> Row:
    """The rule of this script's docstring."""
    meeting = [r for r in rows if with_margin(r[1])]
    if meeting:
        return min(meeting, key=_mean_floored)
    top = max(slack(r[1]) for r in rows)
    tied = [r for r in rows if slack(r[1]) >= top - 100 * TIE]
    return min(tied, key=_mean_floored)


def line(row: Row) -> str:
    detector, cells, _ = row
    parts = [
        f"{e}: rec {s.recall:5.1%} harm {s.harmful_rate:5.1%} floored {s.floored_regret:5.1%}"
        for e, s in sorted(cells.items())
    ]
    return f"{detector.name:96s} | slack {slack(cells):5.1f} | " + " | ".join(parts)


def show(title: str, rows: Sequence[Row]) -> None:
    """Print ``title`` and one :func:`line` a row."""
    print(title)
    for row in rows:
        print("  " + line(row))


def paired(first: Row, second: Row, runs: Sequence[LabelledRun]) -> str:
    """McNemar's p on recall and on harmful stops, ``first`` against ``second``, per density."""
    out = []
    for e in DENSITIES:
        idx = [i for i, r in enumerate(runs) if r.config.evals == e]
        hack = [(first[2][i].stopped, second[2][i].stopped) for i in idx if first[2][i].collapsing]
        heal = [
            (first[2][i].stop_class.value == "harmful", second[2][i].stop_class.value == "harmful")
            for i in idx
            if not first[2][i].collapsing
        ]
        p_rec = mcnemar(sum(a and not b for a, b in hack), sum(b and not a for a, b in hack))
        p_harm = mcnemar(sum(a and not b for a, b in heal), sum(b and not a for a, b in heal))
        out.append(f"{e}: recall p {p_rec:.2g}, harmful p {p_harm:.2g}")
    return "; ".join(out)


def dev_runs(cache: Path | None, workers: int) -> list[LabelledRun]:
    """Dev seeds 0 to TUNING + HOLDOUT - 1, from ``cache`` when it holds exactly those."""
    count = TUNING + HOLDOUT
    if cache is not None and cache.exists():
        runs: list[LabelledRun] = pickle.loads(cache.read_bytes())
        if [r.config.seed for r in runs] == list(range(count)):
            return runs
    runs = generate_split(SPLIT, count, workers=workers)
    if cache is not None:
        cache.write_bytes(pickle.dumps(runs))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="gym worker processes (2)")
    parser.add_argument("--cache", type=Path, default=None, help="a pickle of the dev runs")
    args = parser.parse_args()
    start = time.process_time()
    runs = dev_runs(args.cache, args.workers)
    tuning, holdout = runs[:TUNING], runs[TUNING:]
    for title, part in (("tuning (seeds 0-2999)", tuning), ("hold-out (3000-3999)", holdout)):
        counts = {e: [r for r in part if r.config.evals == e] for e in DENSITIES}
        print(f"gym {SPLIT} split, {title}: hacking/runs by density ", end="")
        print(
            ", ".join(
                f"{e}: {sum(r.label == 'hacking' for r in rs)}/{len(rs)}"
                for e, rs in counts.items()
            )
        )
    rows = score(grid(), tuning, args.workers)
    show(f"\ndivergence: {len(rows)} points (slack: least distance to the goal, points)", rows)
    best = choose(rows)
    print(f"meets the goal with margin on the tuning runs: {with_margin(best[1])}")
    print(f"chosen divergence: {best[0].name}")
    candidates = [best[0], *(make_detector(n) for n in REGISTERED)]
    picks = score(candidates, tuning, args.workers)
    show(
        "\nentry points' pick: every registered detector at its defaults (divergence chosen)", picks
    )
    pick = choose(picks)
    print(f"chosen pick: {pick[0].name}")
    held = score([pick[0], PREVIOUS, make_detector("noise-aware")], holdout)
    show("\nhold-out inside dev (seeds 3000-3999; information, chooses nothing):", held)
    print(f"  pick vs previous (2fc287e): {paired(held[0], held[1], holdout)}")
    print(f"  pick vs noise-aware: {paired(held[0], held[2], holdout)}")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - start + children.ru_utime + children.ru_stime
    print(f"\nCPU seconds (this process and its workers): {cpu:.0f}")


if __name__ == "__main__":
    main()
