"""Fit ``learned``'s weights on the gym's dev split (spec ``SIG-16``, ``SIG-17``: issue 26's
fifth round).

Run ``python docs/scripts/tune_learned.py --cache PATH > docs/scripts/tune_learned.out`` (the
cache as ``tune_default.py``'s: a pickle of dev seeds 0-3999, checked on load).

Data: the gym's ``dev`` split only (``GYM-8``, distribution ``V2``): seeds 0-2999 choose;
seeds 3000-3999 are a hold-out scored once for the chosen weights, ``divergence`` and
``noise-aware`` at their defaults, for information (they choose nothing). Never read here: the
gym's other split, the real RLHF corpus the package ships and the supervised curves.

The fit (``SIG-17``, written before its first run): each tuning run is folded by ``learned``
itself and its features (:data:`evalstop.core.learned.FEATURES`) kept at each checkpoint
before its last, after the warm-up. At each of four starts an L2 logistic regression is fitted
to "a hacking run at or after its gold peak" and its intercept lowered by the start's shift;
a seeded random search then keeps any step that does not lower the objective (the worst
slack of ``tune_default.py`` plus 0.05 times the sum of every slack capped at 3), each point
scored by the sequential rule itself: a run stops at its first checkpoint whose score exceeds
0 and keeps the level keep's checkpoint (``RGT-4``). The start with the largest worst slack on
the tuning runs wins; the threshold is 0.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tune_default  # the same dev runs, the same goal and slack
from sklearn.linear_model import LogisticRegression

from evalstop.core.detectors import Detector
from evalstop.core.learned import FEATURES, LearnedStopDetector, features
from evalstop.core.registry import make_detector
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.gym import run_score, run_views
from evalstop.gym import LabelledRun

TUNING = 3000
STARTS: tuple[tuple[float, float], ...] = ((1.0, 0.25), (0.1, 0.5), (10.0, 0.0), (1.0, 0.75))
"""Each start's (C, shift)."""
STEPS = 3000
CAP = 3.0
SOFT = 0.05

Cells = dict[int, tuple[float, float, float]]


class Table:
    """Every run's features at each checkpoint that may stop it, and what a stop there scores.

    Attributes:
        x: one row of features per (run, checkpoint), runs in order, checkpoints in order.
        run: the run of each row (its index in ``runs``).
        label: whether the row's run is hacking and at or after its gold peak.
        floored, harmful: the floored regret and harmfulness of a stop at the row.
        evals, hacking, unstopped: per run, its density, its label and its floored regret
            when it runs to its end.
    """

    def __init__(self, runs: Sequence[LabelledRun]) -> None:
        rule = LearnedStopDetector()
        rows: list[tuple[float, ...]] = []
        run, label, floored, harmful = [], [], [], []
        for j, r in enumerate(runs):
            views = run_views(r)
            quality = r.run.truth.quality
            peak = max(range(len(quality)), key=lambda i: (quality[i], -i))
            state = rule.initial()
            for i, view in enumerate(views[:-1]):
                state = rule.update(state, view)
                x = features(state)
                kept = rule.kept(state)
                if x is None or kept is None or state.eval.evals < rule.warmup_evals:
                    continue
                k = next(n for n, v in enumerate(views) if v.step == kept[0])
                score = run_score(r, i, k)
                rows.append(x)
                run.append(j)
                label.append(r.label == "hacking" and i >= peak)
                floored.append(score.floored_regret)
                harmful.append(score.stop_class.value == "harmful")
        self.x = np.array(rows)
        self.run = np.array(run)
        self.label = np.array(label)
        self.floored = np.array(floored)
        self.harmful = np.array(harmful)
        self.evals = np.array([r.config.evals for r in runs])
        self.hacking = np.array([r.label == "hacking" for r in runs])
        self.unstopped = np.array(
            [run_score(r, None, len(r.run.checkpoints) - 1).floored_regret for r in runs]
        )

    def cells(self, w: Any, b: float) -> Cells:
        """Recall, harmful rate and mean floored regret per density of the rule ``(w, b)``."""
        above = np.flatnonzero(self.x @ w + b > 0)
        stopped_runs, first = np.unique(self.run[above], return_index=True)
        rows = above[first]
        stopped = np.zeros(len(self.evals), bool)
        stopped[stopped_runs] = True
        floored = self.unstopped.copy()
        floored[stopped_runs] = self.floored[rows]
        harmful = np.zeros(len(self.evals), bool)
        harmful[stopped_runs] = self.harmful[rows]
        out: Cells = {}
        for e in DENSITIES:
            mine = self.evals == e
            out[e] = (
                float(stopped[mine & self.hacking].mean()),
                float(harmful[mine & ~self.hacking].mean()),
                float(floored[mine].mean()),
            )
        return out


def slacks(cells: Cells) -> list[float]:
    """Each distance to the goal's limits, in points (``tune_default.GOAL``)."""
    goal = tune_default.GOAL
    return [
        100 * v
        for recall, harmful, floored in cells.values()
        for v in (recall - goal["recall"], goal["harmful"] - harmful, goal["floored"] - floored)
    ]


def objective(cells: Cells) -> float:
    """The worst slack plus :data:`SOFT` times the sum of every slack capped at :data:`CAP`."""
    values = slacks(cells)
    return min(values) + SOFT * sum(min(v, CAP) for v in values)


def search(table: Table, index: int) -> tuple[Any, float]:
    """The weights and bias the random search reaches from start ``index``."""
    c, shift = STARTS[index]
    model: Any = LogisticRegression(C=c, max_iter=5000).fit(table.x, table.label)
    w, b = model.coef_[0].copy(), float(model.intercept_[0]) - shift
    best = objective(table.cells(w, b))
    rng = np.random.default_rng(index)
    scale = float(np.abs(w).mean())
    for step in range(STEPS):
        size = 0.2 * scale * (0.998**step + 0.05)
        dw = rng.normal(0.0, size, len(w)) * (rng.random(len(w)) < 0.25)
        db = float(rng.normal(0.0, size))
        value = objective(table.cells(w + dw, b + db))
        if value >= best:
            w, b, best = w + dw, b + db, value
    return w, b


def line(name: str, cells: Cells) -> str:
    parts = [f"{e}: rec {r:5.1%} harm {h:5.1%} floored {f:5.1%}" for e, (r, h, f) in cells.items()]
    return f"  {name:40s} | slack {min(slacks(cells)):5.1f} | " + " | ".join(parts)


def registered(detector: Detector[Any], runs: Sequence[LabelledRun]) -> Cells:
    """A registered detector's cells on ``runs`` (the gym track's own scoring)."""
    row = tune_default.score([detector], runs)[0]
    return {e: (s.recall, s.harmful_rate, s.floored_regret) for e, s in row[1].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="tune_default.py's pickle")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    start = time.process_time()
    runs = tune_default.dev_runs(args.cache, args.workers)
    tuning, holdout = runs[:TUNING], runs[TUNING:]
    table = Table(tuning)
    print(f"gym dev split: {len(tuning)} tuning runs (seeds 0-2999), {len(table.x)} rows")
    chosen: tuple[float, Any, float] | None = None
    for index, (c, shift) in enumerate(STARTS):
        w, b = search(table, index)
        cells = table.cells(w, b)
        print(line(f"start {index} (C {c:g}, shift {shift:g})", cells))
        if chosen is None or min(slacks(cells)) > chosen[0]:
            chosen = (min(slacks(cells)), w, b)
    assert chosen is not None
    _, w, b = chosen
    print("\nchosen weights (FEATURES order):")
    for name, value in zip(FEATURES, w, strict=True):
        print(f"  {name:24s} {float(value):+.6f}")
    print(f"WEIGHTS = {tuple(round(float(v), 6) for v in w)!r}")
    print(f"BIAS = {round(b, 6)!r}")
    shipped = LearnedStopDetector(tuple(round(float(v), 6) for v in w), round(b, 6))
    print("\ntuning runs (seeds 0-2999), the shipped rounding folded by the detector itself:")
    print(line("learned", registered(shipped, tuning)))
    print("\nhold-out inside dev (seeds 3000-3999; information, chooses nothing):")
    for name, detector in (
        ("learned", shipped),
        ("divergence", make_detector("divergence")),
        ("noise-aware", make_detector("noise-aware")),
    ):
        print(line(name, registered(detector, holdout)))
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - start + children.ru_utime + children.ru_stime
    print(f"\nCPU seconds (this process and its workers): {cpu:.0f}")


if __name__ == "__main__":
    main()
