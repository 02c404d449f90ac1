"""Choose the gym's second distribution (``V2``, spec ``GYM-5``) from runs of its first (issue 22).

Run ``python docs/scripts/gym_distribution.py > docs/scripts/gym_distribution.out``.

Target (named by issue 22 itself, not a detector result): the eval noise over the gain of the
healthy runs should spread like the real corpus's, 0.03 to 0.45, measured with the corpus's own
estimator (``calibration.py``'s ``noise_sd`` over the observed gain, maximum minus first
observed score) on observed scores. The real curves include their step-0 point (the initial
policy) and so does every gym run, so the choice is judged *with* the step-0 point; the value
without it is printed beside (the real healthy curves: median 0.106 [p10 0.072, p90 0.169]
with it, 0.144 [0.105, 0.282] without).

Data: the first 2,000 runs of the ``dev`` split drawn from the first distribution (``V1``);
nothing else. Each candidate narrows some of ``V1``'s ranges; a log-uniform draw restricted to
a sub-range is log-uniform on it, so the ``V1`` runs whose parameters fall inside a candidate's
ranges are a sample of the candidate, weighted so its KL-free share is the candidate's. The
candidates (the grid a first exploration of these same dev runs looked at): ``eval_samples``
[8, 64], [16, 64] or [16, 128];
the KL coefficient capped at 1 (none), 0.5 or 0.3; ``lr`` [0.15, 1] or [0.15, 0.5]; ``steps``
[300, 3000], [300, 1500] or [300, 1000]; KL-free share 0.2 or 0.3.

Rule (written after that exploration, before this script's run): admissible when, with the
step-0 point, the healthy runs' noise over gain has p10 >= 0.03 and p90 <= 0.45, the hacking
share is within 30-70% and the median Gao R^2 of hacking runs is >= 0.8 (the issue's other
goals); among those, the highest share of healthy runs inside 0.03-0.45, ties (within one point)
to the median nearest the real healthy curves' 0.106, then to the first in grid order. The
chosen candidate becomes ``V2``; ``gym_validation.py`` then measures ``V2`` itself on its own
dev runs.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections.abc import Sequence

import attrs
import numpy as np
from calibration import noise_sd

from evalstop.gym import LabelledRun, generate_split
from evalstop.gym.config import V1, Distribution
from evalstop.gym.gao import fit_gao

__all__ = ["Candidate", "Measured", "candidates", "choose", "main", "measure", "ratio"]

RUNS = 2000
LOW, HIGH = 0.03, 0.45
REAL_MEDIAN = 0.106
TIE = 0.01


def ratio(values: Sequence[float]) -> float:
    """The corpus's noise over gain of one observed curve (NaN without a gain)."""
    v = np.asarray(values, dtype=np.float64)
    gain = float(v.max() - v[0])
    return noise_sd(v) / gain if gain > 0 else math.nan


@attrs.frozen
class Candidate:
    """A narrowing of ``V1`` (each range inside ``V1``'s)."""

    eval_samples: tuple[int, int]
    kl_cap: float
    lr: tuple[float, float]
    steps: tuple[int, int]
    kl_free_share: float

    def holds(self, run: LabelledRun) -> bool:
        c = run.config
        return (
            self.eval_samples[0] <= c.eval_samples <= self.eval_samples[1]
            and c.kl_coef <= self.kl_cap
            and self.lr[0] <= c.lr <= self.lr[1]
            and self.steps[0] <= c.steps <= self.steps[1]
        )

    def distribution(self) -> Distribution:
        return attrs.evolve(
            V1,
            eval_samples=self.eval_samples,
            kl_coef=(V1.kl_coef[0], min(self.kl_cap, V1.kl_coef[1])),
            lr=self.lr,
            steps=self.steps,
            kl_free_share=self.kl_free_share,
        )

    def __str__(self) -> str:
        return (
            f"eval_samples {self.eval_samples[0]}-{self.eval_samples[1]}, kl_coef <= "
            f"{self.kl_cap:g}, lr {self.lr[0]:g}-{self.lr[1]:g}, steps "
            f"{self.steps[0]}-{self.steps[1]}, KL-free {self.kl_free_share:g}"
        )


@attrs.frozen
class Measured:
    """A candidate's statistics on its weighted sample of ``V1`` runs."""

    candidate: Candidate
    runs: int
    hacking: float
    peak: float
    r2: float
    with0: tuple[float, float, float, float]
    without0: tuple[float, float, float, float]

    @property
    def admissible(self) -> bool:
        p10, _, p90, _ = self.with0
        return p10 >= LOW and p90 <= HIGH and 0.3 <= self.hacking <= 0.7 and self.r2 >= 0.8

    def line(self) -> str:
        def spread(q: tuple[float, float, float, float]) -> str:
            return f"{q[1]:.3f} [{q[0]:.3f}, {q[2]:.3f}] in {q[3]:4.0%}"

        mark = "*" if self.admissible else " "
        return (
            f"{mark} {self.candidate!s:78s} n={self.runs:4d} hacking {self.hacking:4.0%} "
            f"peak {self.peak:.2f} R2 {self.r2:.3f} | with step 0 {spread(self.with0)} | "
            f"without {spread(self.without0)}"
        )


def candidates() -> list[Candidate]:
    """The grid, in grid order."""
    return [
        Candidate(es, cap, lr, steps, share)
        for es, cap, lr, steps, share in itertools.product(
            ((8, 64), (16, 64), (16, 128)),
            (1.0, 0.5, 0.3),
            ((0.15, 1.0), (0.15, 0.5)),
            ((300, 3000), (300, 1500), (300, 1000)),
            (0.2, 0.3),
        )
    ]


def _weighted(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    order = np.argsort(values)
    x, w = np.asarray(values)[order], np.asarray(weights)[order]
    cumulative = np.cumsum(w) / w.sum()
    return float(x[min(int(np.searchsorted(cumulative, q)), len(x) - 1)])


def _spread(pairs: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    """Weighted p10, median, p90 and the weighted share inside [LOW, HIGH]."""
    finite = [(v, w) for v, w in pairs if math.isfinite(v)]
    values, weights = [v for v, _ in finite], [w for _, w in finite]
    inside = sum(w for v, w in finite if LOW <= v <= HIGH) / sum(weights)
    return (*(_weighted(values, weights, q) for q in (0.1, 0.5, 0.9)), inside)  # type: ignore[return-value]


@attrs.frozen
class _Run:
    run: LabelledRun
    with0: float
    without0: float
    peak: float
    r2: float


def _prepare(runs: Sequence[LabelledRun]) -> list[_Run]:
    out = []
    for run in runs:
        scores = [c.eval_score for c in run.run.checkpoints]
        quality = run.run.truth.quality
        peak = max(range(len(quality)), key=quality.__getitem__) / (len(quality) - 1)
        r2 = fit_gao(quality, run.run.truth.kl).r2 if run.label == "hacking" else math.nan
        out.append(_Run(run, ratio(scores), ratio(scores[1:]), peak, r2))
    return out


def measure(candidate: Candidate, runs: Sequence[_Run]) -> Measured:
    """The candidate's statistics on the ``V1`` runs inside its ranges."""
    inside = [r for r in runs if candidate.holds(r.run)]
    free = sum(r.run.config.kl_coef == 0 for r in inside)
    share = candidate.kl_free_share
    weights = [
        share / free if r.run.config.kl_coef == 0 else (1 - share) / (len(inside) - free)
        for r in inside
    ]
    hacking = [(r, w) for r, w in zip(inside, weights, strict=True) if r.run.label == "hacking"]
    healthy = [(r, w) for r, w in zip(inside, weights, strict=True) if r.run.label == "healthy"]
    r2 = [(r.r2, w) for r, w in hacking if math.isfinite(r.r2)]
    return Measured(
        candidate=candidate,
        runs=len(inside),
        hacking=sum(w for _, w in hacking),
        peak=_weighted([r.peak for r, _ in hacking], [w for _, w in hacking], 0.5),
        r2=_weighted([v for v, _ in r2], [w for _, w in r2], 0.5),
        with0=_spread([(r.with0, w) for r, w in healthy]),
        without0=_spread([(r.without0, w) for r, w in healthy]),
    )


def choose(rows: Sequence[Measured]) -> Measured | None:
    """The rule of the module docstring; None when no candidate is admissible."""
    admissible = [m for m in rows if m.admissible]
    if not admissible:
        return None
    top = max(m.with0[3] for m in admissible)
    tied = [m for m in admissible if m.with0[3] >= top - TIE]
    return min(tied, key=lambda m: abs(m.with0[1] - REAL_MEDIAN))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"V1 dev runs ({RUNS})")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    args = parser.parse_args(argv)
    started = time.process_time()
    runs = _prepare(generate_split("dev", args.runs, workers=args.workers, distribution=V1))
    print(f"V1 dev runs: {len(runs)}; * admissible")
    print(measure(Candidate((4, 256), 1.0, (0.15, 1.0), (300, 3000), 0.2), runs).line())
    rows = [measure(c, runs) for c in candidates()]
    for row in rows:
        print(row.line())
    chosen = choose(rows)
    print(f"chosen: {chosen.candidate if chosen else 'none admissible'}")
    if chosen is not None:
        print(f"  as a distribution: {chosen.candidate.distribution()}")
    print(f"(main-process CPU {time.process_time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
