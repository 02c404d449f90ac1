"""The scoreboard's gym track: detectors scored on real small-scale overoptimization runs
(spec ``SCB-10``).

Each run of the gym (:mod:`evalstop.gym`) is folded as a platform would see it: one
:class:`~evalstop.core.boundary.CheckpointView` per logged checkpoint carrying its step, eval
score, loss, proxy reward and KL, the estimated progress being the step over the last step
(the run's length is known to the gym's config, as to a replay, ``RPL-4``). A fire at the
last checkpoint is not a stop (``RGT-4``). Regret is read on the run's exact expected gold
(its hidden truth), the collapse label is the gym's own (``GYM-6``), and compute is steps.
Only this module and the gym read the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalstop.core.boundary import CheckpointView
from evalstop.core.detectors import Detector, observe, start_watch
from evalstop.core.model import JobKind
from evalstop.core.regret import RunScore, regret_fraction
from evalstop.gym import LabelledRun, generate_split

__all__ = [
    "GYM_RUNS",
    "GYM_SCALE",
    "fold_views",
    "gym_runs",
    "gym_scores",
    "run_score",
    "run_views",
]

GYM_RUNS = 1100
"""Runs of the test split the gym track scores, each at the evaluation density its config
draws (10, 20 or 40, ``GYM-5``). Issue 22 asks for 95% intervals of +-5 points or tighter on
recall and on harmful stops; at a rate of 0.5 that takes 385 runs of each kind, and the dev
split's hacking share under the second distribution (37.8% of its first 500 runs) puts 385
hacking runs at about 1,020 runs: 1,100 leaves two standard deviations of the count for the
test split's own share (``SCB-10``). The second distribution made a run about half as costly,
so 1,100 runs cost about the CPU 500 did before."""

GYM_SCALE = 1.0
"""The full scale of the gym's gold reward for the gain-floored regret (``RGT-5``): one gold
unit (content qualities have standard deviation 0.5, style is worth at most 0.25), fixed from
the task's definition, not from any run."""


def gym_runs(split: str, runs: int, workers: int = 1) -> list[LabelledRun]:
    """The first ``runs`` runs of ``split``, labelled, in seed order."""
    return generate_split(split, runs, workers=workers)


def run_views(run: LabelledRun) -> tuple[CheckpointView, ...]:
    """What a platform sees of ``run``, checkpoint by checkpoint."""
    checkpoints = run.run.checkpoints
    last = checkpoints[-1].step
    return tuple(
        CheckpointView(
            1,
            JobKind.RLHF,
            i + 1,
            c.step,
            c.step,
            c.eval_score,
            c.loss,
            c.proxy_reward,
            c.step / last if last > 0 else 1.0,
            c.kl,
        )
        for i, c in enumerate(checkpoints)
    )


def fold_views(
    detector: Detector[Any], views: Sequence[CheckpointView]
) -> tuple[int | None, int | None]:
    """``(stop, kept)`` as :func:`~evalstop.sim.detection.fold_job` gives them (``RGT-4``):
    0-based checkpoints, no stop for a fire at the last one."""
    watch = start_watch(detector)
    last = len(views) - 1
    for index, view in enumerate(views):
        watch = observe(detector, watch, view)
        if watch.fired_step is not None and index < last:
            best = watch.best_step
            kept = None
            if best is not None:
                kept = next(i for i, v in enumerate(views) if v.step == best)
            return index, kept
    return None, last


def run_score(run: LabelledRun, stop: int | None, kept: int | None) -> RunScore:
    """The regret-first score of ``run`` stopped at ``stop`` keeping ``kept``, on its exact
    gold (``RGT-1`` to ``RGT-5``; compute in steps)."""
    quality = run.run.truth.quality
    steps = [c.step for c in run.run.checkpoints]
    peak = max(range(len(quality)), key=lambda i: (quality[i], -i))
    best, first = quality[peak], quality[0]
    kept_value = first if kept is None else quality[kept]
    saved = 0.0 if stop is None else float(steps[-1] - max(steps[stop], steps[peak]))
    return RunScore(
        stopped=stop is not None,
        regret=regret_fraction(best, first, kept_value),
        collapsing=run.label == "hacking",
        post_peak=float(steps[-1] - steps[peak]),
        saved=saved,
        delay=None if stop is None else stop - peak,
        gain=(best - first) / GYM_SCALE,
        lost=max(best - kept_value, 0.0) / GYM_SCALE,
    )


def gym_scores(
    detectors: Sequence[Detector[Any]], runs: Sequence[LabelledRun]
) -> list[list[RunScore]]:
    """Each detector's per-run scores on ``runs`` (the views built once a run)."""
    scores: list[list[RunScore]] = [[] for _ in detectors]
    for run in runs:
        views = run_views(run)
        for row, detector in zip(scores, detectors, strict=True):
            row.append(run_score(run, *fold_views(detector, views)))
    return scores
