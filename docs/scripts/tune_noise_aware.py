"""Choose the noise-aware detector's defaults in the simulator only (spec ``NAD-9``).

Run ``python docs/scripts/tune_noise_aware.py > docs/scripts/tune_noise_aware.out``.

Data: simulated RLHF runs only (the runs EvalStop watches), drawn with seeds 1001 and 1002,
disjoint from the scoreboard's seed (1), ``reproduce``'s seeds (0-9) and the tests'. Both
worlds at the goal noise levels: the ``paper`` world at sigma 0.12 and the ``calibrated`` world
at its own noise, each at 10, 20 and 40 evaluations per run: six *goal cells*. A 5-evaluation
cell of each world is printed for information and plays no part in the choice. Held out: the
real RLHF corpus the package ships, ``tests/data/healthy-supervised`` and every other real
curve (never read here).

Grid: ``z`` in {1.5, 1.75, 2, 2.25, 2.5, 3}, ``memory`` in {0.1, 0.15, 0.2, 0.3},
``warmup_evals`` in {3, 4, 5}, keep rule in {best (the reported argmax, ``DET-4``), level with
``keep_memory`` 0.05, 0.1, 0.2 (``NAD-10``)}.

Selection rule, written before any result of this script was seen:

1. feasible: harmful stops on <= 5% of healthy runs in each of the six goal cells, and within
   each world the harmful rate varies by <= 5 points over 10/20/40 evaluations;
2. among feasible candidates, the lowest mean regret (``RGT-3``, over every run, stopped or
   not: it charges missed collapses and poor kept checkpoints alike), averaged over the six
   goal cells; candidates within 0.1 point of the lowest are tied;
3. among tied candidates, the highest recall averaged over the six goal cells; then the
   largest ``z`` (the more cautious), then the largest warm-up.

Added after the first full run, which left keep rules of one stop configuration tied (same
stops, so the same recall, ``z`` and warm-up; the script had broken the tie by grid order):
4. then the lowest mean regret (rule 2's own measure). It can only choose among keep rules of
   identical stops, so it changes no recall or harmful rate.

The keep-rule table prints, for the chosen stop configuration, every keep rule's mean regret
and stop regret (regret over the stops of collapsing runs) per cell: the before/after of
``NAD-10``.

Each candidate's runs are folded with the detector itself (``NoiseAwareDetector.update``); the
script checks that its fold equals :func:`evalstop.sim.detection.fold_job` on a sample.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections.abc import Sequence

import attrs

from evalstop.core.model import Job, JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.regret import RegretSummary, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.sim.detection import fold_job, job_run_score, job_views
from evalstop.sim.workload import WorkloadConfig, generate

SEEDS = (1001, 1002)
GOAL_CELLS = (("paper", 0.12), ("calibrated", None))
INFO_DENSITY = 5
Z = (1.5, 1.75, 2.0, 2.25, 2.5, 3.0)
MEMORY = (0.1, 0.15, 0.2, 0.3)
WARMUP = (3, 4, 5)
KEEP: tuple[tuple[str, float], ...] = (
    ("best", 0.2),
    ("level", 0.05),
    ("level", 0.1),
    ("level", 0.2),
)
HARMFUL_CAP = 0.05
DENSITY_SPREAD = 0.05
TIE = 0.001


@attrs.frozen(slots=True)
class CellData:
    """The RLHF jobs of one cell, their views, and each keep rule's kept index per checkpoint."""

    world: str
    sigma: float
    evals: int
    jobs: tuple[Job, ...]
    views: tuple[tuple[object, ...], ...]
    kept: dict[tuple[str, float], tuple[tuple[int, ...], ...]]


def _kept_indices(job: Job, views: Sequence[object], keep: tuple[str, float]) -> tuple[int, ...]:
    """The kept 0-based index after each checkpoint, under one keep rule."""
    steps = {obs.step: i for i, obs in enumerate(job.observations)}
    out: list[int] = []
    if keep[0] == "best":
        best, best_i = -math.inf, 0
        for i, obs in enumerate(job.observations):
            if math.isfinite(obs.eval_score) and obs.eval_score > best:
                best, best_i = obs.eval_score, i
            out.append(best_i)
        return tuple(out)
    detector = NoiseAwareDetector(keep="level", keep_memory=keep[1])
    state = detector.initial()
    for view in views:
        state = detector.update(state, view)  # type: ignore[arg-type]
        kept = detector.kept(state)
        out.append(0 if kept is None else steps[kept[0]])
    return tuple(out)


def load_cell(world: str, noise: float | None, evals: int, jobs: int) -> CellData:
    """Draw the cell's workloads (every seed) and precompute views and kept indices."""
    runs: list[Job] = []
    sigma = math.nan
    for seed in SEEDS:
        config = WorkloadConfig(n_jobs=jobs, world=world, eval_noise=noise, evals_per_run=evals)
        sigma = config.sigma
        runs += [j for j in generate(config, seed).jobs if j.spec.kind is JobKind.RLHF]
    views = tuple(job_views(j) for j in runs)
    kept = {
        k: tuple(_kept_indices(j, v, k) for j, v in zip(runs, views, strict=True)) for k in KEEP
    }
    return CellData(world, sigma, evals, tuple(runs), views, kept)


def stops(detector: NoiseAwareDetector, cell: CellData) -> list[int | None]:
    """The 0-based stop index of each job (None: not stopped; a fire at the end is no stop)."""
    out: list[int | None] = []
    for views in cell.views:
        state, stop = detector.initial(), None
        for index, view in enumerate(views[:-1]):
            state = detector.update(state, view)  # type: ignore[arg-type]
            if detector.fired(state):
                stop = index
                break
        out.append(stop)
    return out


def summary(cell: CellData, stop: Sequence[int | None], keep: tuple[str, float]) -> RegretSummary:
    """Regret-first summary of one candidate's stops under one keep rule."""
    scores = []
    for job, s, kept in zip(cell.jobs, stop, cell.kept[keep], strict=True):
        scores.append(
            job_run_score(job, s, None if s is None else kept[s])
            if s is not None
            else job_run_score(job, None, len(job.observations) - 1)
        )
    return summarize_runs(scores)


def check_fold(cell: CellData) -> None:
    """The script's fold equals ``fold_job`` with the detector's own keep rule, on 50 jobs."""
    for keep in KEEP:
        detector = NoiseAwareDetector(keep=keep[0], keep_memory=keep[1], warmup_evals=3)
        stop = stops(detector, attrs.evolve(cell, jobs=cell.jobs[:50], views=cell.views[:50]))
        for job, s, kept in zip(cell.jobs[:50], stop, cell.kept[keep], strict=False):
            expected = fold_job(detector, job)
            got = (s, len(job.observations) - 1 if s is None else kept[s])
            assert got == expected, (job.job_id, keep, got, expected)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs a workload (1000)")
    args = parser.parse_args(argv)
    started = time.process_time()
    cells = {
        (w, n): load_cell(w, noise, n, args.jobs)
        for w, noise in GOAL_CELLS
        for n in (*DENSITIES, INFO_DENSITY)
    }
    check_fold(cells[("calibrated", 10)])
    results = []
    for z, memory, warmup in itertools.product(Z, MEMORY, WARMUP):
        detector = NoiseAwareDetector(z=z, memory=memory, warmup_evals=warmup)
        per_cell = {key: stops(detector, cell) for key, cell in cells.items()}
        for keep in KEEP:
            sums = {key: summary(cells[key], per_cell[key], keep) for key in cells}
            results.append(((z, memory, warmup, keep), sums))
    report(results, cells)
    print(f"\nCPU seconds: {time.process_time() - started:.0f}")


def _goal(sums: dict[tuple[str, int], RegretSummary]) -> list[RegretSummary]:
    return [sums[(w, n)] for w, _ in GOAL_CELLS for n in DENSITIES]


def feasible(sums: dict[tuple[str, int], RegretSummary]) -> bool:
    """Rule 1: harmful <= 5% in every goal cell and a spread <= 5 points in each world."""
    for world, _ in GOAL_CELLS:
        rates = [sums[(world, n)].harmful_rate for n in DENSITIES]
        if max(rates) > HARMFUL_CAP or max(rates) - min(rates) > DENSITY_SPREAD:
            return False
    return True


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _label(candidate: tuple[float, float, int, tuple[str, float]]) -> str:
    z, memory, warmup, (keep, keep_memory) = candidate
    rule = "best" if keep == "best" else f"level({keep_memory:g})"
    return f"z={z:g} memory={memory:g} warmup={warmup} keep={rule}"


def report(results: list, cells: dict) -> None:  # type: ignore[type-arg]
    """Print the cells, the ranking under the rule, and the chosen candidate's numbers."""
    print("cells (RLHF runs, seeds 1001-1002):")
    for (world, n), cell in cells.items():
        role = "goal" if n in DENSITIES else "info only"
        print(f"  {world} sigma={cell.sigma:.3f} n={n}: {len(cell.jobs)} runs ({role})")
    rows = []
    for candidate, sums in results:
        goal = _goal(sums)
        rows.append(
            (
                candidate,
                feasible(sums),
                _mean([s.mean_regret for s in goal]),
                _mean([s.recall for s in goal]),
                max(s.harmful_rate for s in goal),
                sums,
            )
        )
    feasible_rows = [r for r in rows if r[1]]
    print(f"\ncandidates: {len(rows)}, feasible under rule 1: {len(feasible_rows)}")
    pool = feasible_rows or rows
    best_regret = min(r[2] for r in pool)
    tied = [r for r in pool if r[2] <= best_regret + TIE]
    chosen = max(tied, key=lambda r: (r[3], r[0][0], r[0][2], -r[2]))
    print("\nbest 15 by rule 2 (mean regret over goal cells), feasible only:")
    print("  candidate                                         regret  recall  max harmful")
    for r in sorted(pool, key=lambda r: (r[2], -r[3]))[:15]:
        print(f"  {_label(r[0]):48s}  {r[2]:6.1%}  {r[3]:6.1%}  {r[4]:6.1%}")
    print("\nbest infeasible by regret (for the trade-off):")
    for r in sorted([r for r in rows if not r[1]], key=lambda r: r[2])[:5]:
        print(f"  {_label(r[0]):48s}  {r[2]:6.1%}  {r[3]:6.1%}  {r[4]:6.1%}")
    print(f"\nchosen: {_label(chosen[0])} (tied within 0.1 point: {len(tied)})")
    keep_table(results, chosen[0])
    for label, candidate in (("chosen", chosen[0]), ("old defaults", (2.0, 0.2, 5, ("best", 0.2)))):
        sums = next(s for c, s in results if c == candidate)
        print(f"\n{label}: {_label(candidate)}")
        print("  cell                     recall  harmful  benign  mean regret  stop regret")
        for (world, n), s in sums.items():
            sigma = cells[(world, n)].sigma
            print(
                f"  {world:10s} s={sigma:.3f} n={n:2d}  {s.recall:6.1%}  {s.harmful_rate:7.1%}"
                f"  {s.benign_rate:6.1%}  {s.mean_regret:11.1%}  {s.stop_regret:11.1%}"
            )


def keep_table(results: list, chosen: tuple) -> None:  # type: ignore[type-arg]
    """Every keep rule's mean / stop regret per cell, for the chosen stop configuration."""
    print(
        f"\nkeep rules at z={chosen[0]:g} memory={chosen[1]:g} warmup={chosen[2]} "
        "(mean regret / stop regret per cell):"
    )
    for candidate, sums in results:
        if candidate[:3] != chosen[:3]:
            continue
        cells = "  ".join(f"{s.mean_regret:6.1%}/{s.stop_regret:5.1%}" for s in sums.values())
        print(f"  {_label(candidate).split()[-1]:18s} {cells}")
    print("  (cells in the order of the cell list above)")


if __name__ == "__main__":
    main()
