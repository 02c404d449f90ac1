"""Render ``docs/tradeoffs.md`` from a trade-off sweep (``SCB-6`` to ``SCB-8``).

Every number on the page comes from the sweep passed in (:func:`render_page`); the prose only
names which goal gives way and why, from those numbers. ``tradeoff_noise_aware.py`` calls it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from evalstop.core.model import JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.experiments.grid import NAD_WARMUP, NAD_Z, goal_noise
from evalstop.experiments.tables import pct
from evalstop.experiments.tradeoff.report import Miss
from evalstop.experiments.tradeoff.sweep import (
    GOAL_HARMFUL,
    GOAL_RECALL,
    GOAL_REGRET,
    OperatingPoint,
    Panel,
    Tradeoff,
    nearest_goal,
)
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import WORLDS

__all__ = ["gain_in_noise", "render_page"]


def gain_in_noise(world: str, evals: int, jobs: int, seed: int) -> float:
    """Median over a goal cell's RLHF runs of the true gain (best minus first checkpoint) in
    units of the eval noise sigma."""
    sigma = goal_noise(world)
    config = WorkloadConfig(n_jobs=jobs, world=WORLDS[world], eval_noise=sigma, evals_per_run=evals)
    runs = [job for job in generate(config, seed).jobs if job.spec.kind is JobKind.RLHF]
    return statistics.median(
        float(job.truth.quality[job.truth.peak_index] - job.truth.quality[0]) / sigma
        for job in runs
    )


def _cell(panel: Panel) -> str:
    return f"{panel.world} {panel.evals}"


def _floor(panel: Panel, name: str) -> OperatingPoint:
    return next(p for p in panel.floors if p.setting == name)


def _default(points: Sequence[OperatingPoint]) -> OperatingPoint:
    return next(p for p in points if p.default and p.family == "noise-aware")


def _short(point: OperatingPoint | None) -> str:
    if point is None:
        return "none"
    s = point.summary
    return f"{point.family} {point.setting}: {pct(s.recall, 0)} / {pct(s.harmful_rate, 1)}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _recall_section(board: Tradeoff) -> list[str]:
    rows = []
    for panel in board.panels:
        default = _default(panel.points).summary
        safe, sure = nearest_goal(panel.points)
        rows.append(
            [
                _cell(panel),
                f"{pct(default.recall, 0)} / {pct(default.harmful_rate, 1)}",
                _short(safe),
                _short(sure),
            ]
        )
    short = [_cell(p) for p in board.panels if not any(_both(q) for q in p.points)]
    met = [_cell(p) for p in board.panels if _both(_default(p.points))]
    note = (
        f"No swept point of any detector reaches 90% recall with harmful stops on at most 5% "
        f"of healthy runs in {len(short)} of {len(board.panels)} goal cells "
        f"({', '.join(short) or 'none'}): there the recall goal gives way to the harmful-stop "
        f"goal, which protects healthy runs. The default meets both in "
        f"{', '.join(met) or 'no cell'}."
    )
    header = [
        "goal cell",
        "default noise-aware: recall / harmful",
        "frontier, highest recall at harmful <= 5%",
        "frontier, fewest harmful at recall >= 90%",
    ]
    return [*_table(header, rows), "", note]


def _recall(point: OperatingPoint) -> float:
    recall = point.summary.recall
    return 0.0 if math.isnan(recall) else recall


def _both(point: OperatingPoint) -> bool:
    return _recall(point) >= GOAL_RECALL and point.summary.harmful_rate <= GOAL_HARMFUL


def _regret_rows(board: Tradeoff, gains: Sequence[float]) -> list[list[str]]:
    rows = []
    for panel, gain in zip(board.panels, gains, strict=True):
        default = _default(panel.points).summary
        safe = [p for p in panel.points if p.summary.harmful_rate <= 0.05]
        lowest = min(safe, key=lambda p: p.summary.mean_regret)
        rows.append(
            [
                _cell(panel),
                f"{gain:.2f}",
                pct(default.mean_regret, 1),
                f"{pct(lowest.summary.mean_regret, 1)} ({lowest.family} {lowest.setting})",
                pct(_floor(panel, "hindsight keep, keep best observed").summary.mean_regret, 1),
                pct(_floor(panel, "oracle stop, keep best observed").summary.mean_regret, 1),
                pct(_floor(panel, "stop floor, keep best observed").summary.mean_regret, 1),
                pct(_floor(panel, "stop floor, keep level(0.05)").summary.mean_regret, 1),
            ]
        )
    return rows


def _regret_section(board: Tradeoff, gains: Sequence[float]) -> list[str]:
    header = [
        "goal cell",
        "median gain / sigma",
        "default mean regret",
        "lowest mean regret at harmful <= 5%",
        "hindsight keep",
        "oracle stop",
        "stop floor (best observed)",
        "stop floor (level)",
    ]
    over = [
        _cell(p)
        for p in board.panels
        if min(_floor(p, n).summary.mean_regret for n in _FLOORS) > GOAL_REGRET
    ]
    text = [
        *_table(header, _regret_rows(board, gains)),
        "",
        f"The stop floor exceeds 2% of the gain in {len(over)} of {len(board.panels)} goal "
        f"cells ({', '.join(over) or 'none'}): there, no detector that keeps the best observed "
        "checkpoint or the noise-aware level's peak can meet the regret goal, whatever it does.",
    ]
    return text


_FLOORS = ("stop floor, keep best observed", "stop floor, keep level(0.05)")


def _tail_section(board: Tradeoff) -> list[str]:
    rows = []
    for panel in board.panels:
        s = _default(panel.points).summary
        rows.append(
            [
                _cell(panel),
                pct(s.mean_regret, 1),
                pct(s.median_regret, 1),
                pct(s.floored_regret, 1),
                pct(s.stop_regret, 1),
            ]
        )
    header = ["goal cell", "mean (the goal)", "median", "gain-floored mean", "stop regret"]
    return _table(header, rows)


def _real_section(board: Tradeoff, misses: Sequence[Miss]) -> list[str]:
    rows = [
        [
            f"{p.family} {p.setting}" + (" (default)" if p.default else ""),
            pct(p.summary.recall, 0),
            f"{p.summary.harmful_healthy} of {p.summary.healthy}",
            pct(p.summary.mean_regret, 1),
            pct(p.summary.median_regret, 1),
        ]
        for p in board.real
        if f"warmup={NoiseAwareDetector().warmup_evals}" in p.setting or p.family != "noise-aware"
    ]
    header = ["operating point", "recall", "harmful on healthy", "mean regret", "median"]
    miss_rows = [
        [m.name, str(m.points), str(m.eligible), f"{m.gain:.1f}", f"{m.drop:.1f}", f"{m.reach:.2f}"]
        for m in misses
    ]
    miss_header = ["missed curve", "points", "eligible", "gain / sigma", "drop / sigma", "reach"]
    return [
        *_table(header, rows),
        "",
        _real_verdict(board, misses),
        "",
        *_table(miss_header, miss_rows),
    ]


def _real_verdict(board: Tradeoff, misses: Sequence[Miss]) -> str:
    """Which real-curve goal gives way (recall >= 90% with no harmful stop on a healthy run),
    computed over every swept point, and how many misses the warm-up alone explains."""
    both = [
        f"{p.family} {p.setting}"
        for p in board.real
        if _recall(p) >= GOAL_RECALL and p.summary.harmful_healthy == 0
    ]
    unreachable = sum(m.eligible == 0 for m in misses)
    if both:
        head = (
            f"{len(both)} of {len(board.real)} swept points reach 90% recall with no harmful "
            f"stop on a healthy curve ({', '.join(both)}); none of them chose a default."
        )
    else:
        head = (
            f"None of the {len(board.real)} swept points reaches 90% recall with no harmful stop "
            "on a healthy curve: on the real curves the recall goal gives way to the "
            "no-harmful-stop goal, as in the simulator."
        )
    return (
        f"{head} Of the {len(misses)} hacking curves the default misses, {unreachable} have no "
        "point where a fire would be a stop (too short for the warm-up): no threshold can stop "
        "them; only a shorter warm-up can, at the price of more harmful stops on short runs "
        "(the warm-up table below)."
    )


def _knob_section(board: Tradeoff, knob: str, settings: Sequence[str]) -> list[str]:
    rows = []
    for setting in settings:
        row = [f"`{setting}`"]
        for panel in board.panels:
            s = next(p for p in panel.points if p.family == knob and p.setting == setting).summary
            row.append(f"{pct(s.recall, 0)} / {pct(s.harmful_rate, 1)} / {pct(s.mean_regret, 0)}")
        rows.append(row)
    return _table([knob, *(_cell(p) for p in board.panels)], rows)


_INTRO = """# Trade-offs: which goals give way, and why

*Generated by `python docs/scripts/tradeoff_noise_aware.py` (spec `SCB-6` to `SCB-8`; the full
tables are in [`tradeoff_noise_aware.out`](scripts/tradeoff_noise_aware.out)); do not edit by
hand.*

The goals of the noise-aware detector (issue 11), in the paper world at sigma 0.12 and the
calibrated world at its own noise, at 10, 20 and 40 evaluations per run: stop **>= 90%** of
collapsing runs, with a **mean regret <= 2%** of the gain, and harmful stops on **<= 5%** of
healthy runs. This page measures every detector at a fixed grid of operating points on the
scoreboard's evaluation data ({jobs} jobs a workload, seed {seed}, the RLHF runs), beside keep
floors that no detector can beat. The defaults are **fixed** (noise-aware: z = {z:g}, memory
{memory:g}, warm-up {warmup}, level keep, chosen in the simulator on seeds 1001-1002, `NAD-9`);
nothing on this page chose or changed a parameter.

![recall against harmful stops per goal cell; mean regret against the floors](img/tradeoffs.png)

*Each panel: every operating point (noise-aware over z and warm-up, EvalStop over k, the loss
plateau over its patience, the fixed stop over its fraction), defaults starred, the
recall/harmful frontier as a line, the recall and harmful goals shaded green. Last panel: mean
regret of the default, of the best swept point and of the keep floors, against the 2% goal.*
"""

_WHY = """## Regret: noise against gain

A stopped run keeps a checkpoint chosen by its **noisy** scores: the best reported one
(`DET-4`) or the peak of the noise-aware level (`NAD-10`). The **stop floor** (`RGT-6`) gives
every run the best stopping time in hindsight (or no stop), keeping by the same rule; it is a
lower bound, run by run, on every detector that keeps that way (a property test checks it
against every detector on simulated runs). The **hindsight keep** applies the rule to the
whole curve; the **oracle stop** stops at the truly best checkpoint. Both are what the noise
alone costs; neither is a bound.
"""

_TAIL = """## The heavy tail of the mean

Runs whose gain is tiny give huge ratios: a run that gains 0.001 and keeps a checkpoint 0.02
below its best has a regret of 2000%. The goal stays the mean; beside it the **median** and a
**gain-floored mean** (`RGT-5`: the loss over max(gain, 0.02 of the metric's scale); the floor
is the 5th percentile of the gain on the tuning seeds 1001-1002, rounded, read from no
evaluation data). Missed collapses weigh most: a missed collapse's regret is its whole drop
(more than 5% of the gain by definition, often more than half). The default noise-aware
detector:
"""

_USER = """## What a user can do

- **`z`** (the noise-aware threshold, in noise units): lower it to stop more collapsing runs at
  the price of more harmful stops, most of all at 40 evaluations per run (first table).
- **`warmup_evals`**: fewer evaluations before the first possible stop raise recall a little
  and harmful stops with it; a longer warm-up hurts short runs (10 evaluations, second table).
- **More evaluations per run** lower what the noise costs the kept checkpoint (the floors
  above fall from 10 to 40 evaluations in the paper world) and raise recall at every `z`.
- **The keep rule** barely matters for regret: the stop floors of the best observed score and
  of the level keep differ by {keep_gap} points at most (the table above).
- `min_delta` and `baseline` were not swept: they only add conditions to a stop (fewer stops).

Measured at every goal cell (recall / harmful / mean regret):
"""


def _keep_gap(board: Tradeoff) -> str:
    gaps = [
        abs(_floor(p, _FLOORS[0]).summary.mean_regret - _floor(p, _FLOORS[1]).summary.mean_regret)
        for p in board.panels
    ]
    return f"{100 * max(gaps):.1f}"


def render_page(board: Tradeoff, misses: Sequence[Miss], gains: Sequence[float]) -> str:
    """The page: the figure, the recall and regret verdicts, the floors, the tail, the real
    curves and the knobs, every number from ``board``, ``misses`` and ``gains`` (the median
    gain in noise units of each goal cell, :func:`gain_in_noise`)."""
    rule = NoiseAwareDetector()
    zs = [f"z={z:g} warmup={rule.warmup_evals}" for z in NAD_Z]
    warmups = [f"z={rule.z:g} warmup={w}" for w in NAD_WARMUP]
    parts = [
        _INTRO.format(
            jobs=board.jobs, seed=board.seed, z=rule.z, memory=rule.memory, warmup=rule.warmup_evals
        ),
        "## Recall against harmful stops\n",
        *_recall_section(board),
        "",
        _WHY,
        *_regret_section(board, gains),
        "",
        _TAIL,
        *_tail_section(board),
        "",
        "## Real RLHF curves: a disclosure of sensitivity, not a tuning\n",
        "The same sweep on the corpus the package ships "
        f"({board.real[0].summary.collapsing} hacking, {board.real[0].summary.healthy} healthy "
        "curves). No "
        "point of it chose a default. Then the hacking curves the default misses: *eligible* "
        "are the points after the warm-up and before the last (a fire at the last point is no "
        "stop), *drop / sigma* the fall from the peak to the last point in the detector's own "
        "noise estimate, *reach* the largest smoothed drop over the firing threshold (1 "
        "fires). A drop of a few sigma from the peak to the last point does not fire by "
        f"itself: the rule compares the smoothed level (memory {rule.memory:g} of the steps "
        "so far) with its peak, and widens the threshold while the noise estimate rests on "
        "few second differences. With the default warm-up of "
        f"{rule.warmup_evals}, a 5-point curve has {max(5 - rule.warmup_evals, 0)} point(s) "
        "where a fire is a stop.\n",
        *_real_section(board, misses),
        "",
        _USER.format(keep_gap=_keep_gap(board)),
        *_knob_section(board, "noise-aware", zs),
        "",
        *_knob_section(board, "noise-aware", warmups),
        "",
        *_knob_section(board, "evalstop", [f"k={k}" for k in (1, 2, 3, 4, 6)]),
    ]
    return "\n".join(parts) + "\n"
