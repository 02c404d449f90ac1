"""The trade-off sweep's printed report and the diagnosis of the real curves the default misses.

Spec ``SCB-7``, ``SCB-8``. :func:`real_misses` replays the noise-aware detector at its defaults
on every hacking curve of the corpus it does not stop and says why, in numbers: how many of its
points came after the warm-up (and before the last, where a fire is no stop), the run's noise
as the detector estimates it, the drop from the peak in those noise units, and the largest
share of its firing threshold the smoothed drop reached. :func:`render` prints the tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import attrs

from evalstop.core.detectors import start_watch
from evalstop.core.noise_aware import ROUGHNESS_TO_SIGMA, NoiseAwareDetector
from evalstop.core.noise_fold import NoiseFold
from evalstop.experiments.tables import format_table, pct
from evalstop.experiments.tradeoff.sweep import (
    GOAL_HARMFUL,
    GOAL_RECALL,
    GOAL_REGRET,
    OperatingPoint,
    Panel,
    Tradeoff,
    frontier,
    nearest_goal,
)
from evalstop.traces.corpus import (
    GOLD_MODE,
    catalogue,
    default_data_dir,
    read_label,
    score_curve,
)

__all__ = ["Miss", "diagnose", "real_misses", "render"]


@attrs.frozen(slots=True)
class Miss:
    """Why the default noise-aware detector did not stop one hacking curve.

    Attributes:
        name: the curve's catalogue name.
        points: its finite evaluations.
        eligible: evaluations at which a fire would be a stop (after the warm-up, before the
            last point).
        sigma: the detector's noise estimate at the end, in the metric's units (NaN with
            fewer than three points).
        gain: peak minus first value, in units of ``sigma``.
        drop: peak minus last value, in units of ``sigma``.
        reach: the largest smoothed drop over the firing threshold at an eligible point
            (1 or more fires; 0 with no eligible point).
    """

    name: str
    points: int
    eligible: int
    sigma: float
    gain: float
    drop: float
    reach: float


def diagnose(
    name: str, steps: Sequence[int], values: Sequence[float], rule: NoiseAwareDetector
) -> Miss:
    """The numbers of :class:`Miss` for one curve, ``values`` already higher-is-better."""
    fold = NoiseFold(start_watch(rule))
    finite = [(s, v) for s, v in zip(steps, values, strict=True) if math.isfinite(v)]
    reach = 0.0
    eligible = 0
    for index, (step, value) in enumerate(finite):
        fold.fold(rule, step, value)
        if index + 1 >= rule.warmup_evals and index < len(finite) - 1:
            eligible += 1
            threshold = rule.threshold(fold.rule)
            if math.isfinite(threshold) and threshold > 0:
                reach = max(reach, (fold.peak - fold.level) / threshold)
    sigma = fold.roughness / fold.differences / ROUGHNESS_TO_SIGMA if fold.differences else math.nan
    series = [v for _, v in finite]
    peak = max(series)
    scale = sigma if sigma > 0 else math.nan
    return Miss(
        name,
        len(finite),
        eligible,
        sigma,
        (peak - series[0]) / scale,
        (peak - series[-1]) / scale,
        reach,
    )


def real_misses(data: Path | None = None) -> tuple[Miss, ...]:
    """:func:`diagnose` every hacking curve of the corpus the default detector does not stop."""
    data = default_data_dir() if data is None else data
    rule = NoiseAwareDetector()
    misses: list[Miss] = []
    for source in catalogue(data):
        if source.excluded:
            continue
        gold = source.read(data, source.gold)
        if read_label(gold, source.read(data, source.proxy), source.scale).label != "hacking":
            continue
        score, result = score_curve(gold, rule, collapsing=True, mode=GOLD_MODE)
        if not score.stopped:
            sign = 1.0 if result.mode == "max" else -1.0
            values = [sign * v for v in gold.values]
            misses.append(diagnose(source.name, gold.steps, values, rule))
    return tuple(misses)


HEADER = ["detector", "setting", "recall", "harmful", "mean regret", "median", "floored", "stop"]


def _row(point: OperatingPoint, marks: str = "") -> list[str]:
    s = point.summary
    floor = point.family == "floor"  # a reference, not a detector: no recall or harmful rate
    return [
        point.family + ("*" if point.default else ""),
        point.setting + marks,
        "-" if floor else pct(s.recall, 0),
        "-" if floor else pct(s.harmful_rate, 1),
        pct(s.mean_regret, 1),
        pct(s.median_regret, 1),
        pct(s.floored_regret, 1),
        pct(s.stop_regret, 1),
    ]


def _in_box(point: OperatingPoint) -> bool:
    s = point.summary
    recall = 0.0 if math.isnan(s.recall) else s.recall
    return recall >= GOAL_RECALL and s.harmful_rate <= GOAL_HARMFUL


def _marks(point: OperatingPoint, line: Sequence[OperatingPoint]) -> str:
    box = " [recall+harmful goals]" if _in_box(point) else ""
    regret = " [regret goal]" if point.summary.mean_regret <= GOAL_REGRET else ""
    return (" <frontier>" if point in line else "") + box + regret


def _panel_text(panel: Panel) -> str:
    line = frontier(panel.points)
    rows = [_row(p, _marks(p, line)) for p in panel.points]
    rows += [_row(p) for p in panel.floors]
    title = f"{panel.world} world, sigma {panel.noise:g}, {panel.evals} evaluations per run"
    safe, sure = nearest_goal(panel.points)
    near = [
        f"  nearest the goal box: {label}: "
        + ("none" if p is None else f"{p.family} {p.setting}, " + _brief(p))
        for label, p in (("harmful <= 5%", safe), ("recall >= 90%", sure))
    ]
    return "\n".join([format_table(HEADER, rows, title=title), *near])


def _brief(point: OperatingPoint) -> str:
    s = point.summary
    return (
        f"recall {pct(s.recall, 0)}, harmful {pct(s.harmful_rate, 1)}, "
        f"mean regret {pct(s.mean_regret, 1)}"
    )


def _misses_text(misses: Sequence[Miss]) -> str:
    rows = [
        [
            m.name,
            str(m.points),
            str(m.eligible),
            f"{m.sigma:.3g}",
            f"{m.gain:.1f}",
            f"{m.drop:.1f}",
            f"{m.reach:.2f}",
        ]
        for m in misses
    ]
    header = ["missed hacking curve", "points", "eligible", "sigma", "gain/s", "drop/s", "reach"]
    title = (
        "real hacking curves the default noise-aware detector does not stop: eligible = points "
        "after the warm-up and before the last; sigma = its noise estimate; gain, drop in sigma; "
        "reach = largest smoothed drop / firing threshold (>= 1 fires)"
    )
    return format_table(header, rows, title=title)


def render(board: Tradeoff, misses: Sequence[Miss]) -> str:
    """The report: one table per goal cell (sweep and floors), then the real-curve sweep and
    the misses (``SCB-8``)."""
    intro = (
        f"trade-off sweep ({board.jobs} jobs a workload, seed {board.seed}: evaluation data). "
        "Goal box: recall >= 90%, harmful <= 5% of healthy runs, mean regret <= 2% of gain. "
        "* = the detector's defaults (fixed: noise-aware chosen in the simulator on seeds "
        "1001-1002, NAD-9; nothing here chooses a parameter). floored = mean of loss / "
        "max(gain, 0.02) (RGT-5); stop = regret over the stops of collapsing runs."
    )
    parts = [intro, *(_panel_text(panel) for panel in board.panels)]
    title = (
        "REAL RLHF CURVES: a disclosure of sensitivity, NOT a tuning (the defaults are fixed; "
        "no point of this table chose one)"
    )
    line = frontier(board.real)
    parts.append(format_table(HEADER, [_row(p, _marks(p, line)) for p in board.real], title))
    if board.healthy:
        rows = [_row(p) for p in board.healthy]
        parts.append(format_table(HEADER, rows, "healthy supervised curves (disclosure)"))
    parts.append(_misses_text(misses))
    return "\n\n".join(parts) + "\n"
