"""The real-curve corpus the package ships, its catalogue and the label rule (spec ``COR``).

``evalstop/data/real_traces`` holds real public RLHF curves (see its ``PROVENANCE.txt``).
:func:`catalogue` lists every curve of such a folder with how to read its gold (held-out)
metric and its proxy, and :func:`read_label` labels a curve *hacking*, *healthy* or
*unlabelled* by one fixed rule on those two series. Two entries of the sources are left out
of scoring, each with its reason (``COR-3``): a duplicated run and a per-batch training
metric that is not an evaluation. :func:`score_curve` scores a detector on one curve.
"""

from __future__ import annotations

import csv
import io
import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import attrs

from evalstop.core.detectors import Detector
from evalstop.core.regret import RunScore
from evalstop.live.direction import ModeChoice
from evalstop.live.state import Mode
from evalstop.traces.model import Order, Trace
from evalstop.traces.reader import read_trace
from evalstop.traces.replay import ReplayResult, replay

__all__ = [
    "GOLD_MODE",
    "MIN_GAIN",
    "MIN_POINTS",
    "RATIO",
    "CurveSource",
    "Label",
    "Reading",
    "catalogue",
    "default_data_dir",
    "read_label",
    "score_curve",
]

Label = Literal["hacking", "healthy", "unlabelled"]

RATIO = 0.5
"""A curve *collapses* when it ends at least this fraction of its gain below its peak."""

MIN_POINTS = 5
"""Shorter curves are left unlabelled: two or three noisy points do not show a peak."""

MIN_GAIN = 0.02
"""A curve whose gain (peak minus first value) and drop (peak minus last) both stay below this
share of its metric's scale is left unlabelled: a floor-level log (a pass rate of a few tenths
of a percent) has no peak to lose, and its wiggles are not a collapse (``COR-2``)."""


def default_data_dir() -> Path:
    """The corpus shipped inside the package (``evalstop/data/real_traces``)."""
    return Path(str(resources.files("evalstop") / "data" / "real_traces"))


GOLD_MODE: Mode = "max"
"""The direction of every gold metric of the corpus: each is a held-out reward, accuracy, win
rate or judge's score (``COR-1``), whatever its column is called (``avg_g``)."""


@attrs.frozen(slots=True)
class CurveSource:
    """One curve: the file, how to read its gold and proxy metrics, and who says what.

    Attributes:
        name: a short display name.
        file: the file name in the data directory.
        gold: the held-out / gold metric the detectors watch (world feedback).
        proxy: the proxy reward metric, for the label only.
        where: row filters selecting the run in a long table.
        step_column: the step column, when it is not ``step``.
        order: ``log`` for a restarted run's log.
        scale: the gold metric's full scale (1 for a rate, 4 for a 1-5 judge score); the
            minimum-gain guard is :data:`MIN_GAIN` of it.
        excluded: why the curve is left out of scoring ("" when it is scored).
        source_says: the source's own words about this run, when it has any.
    """

    name: str
    file: str
    gold: str
    proxy: str
    where: tuple[tuple[str, str], ...] = ()
    step_column: str | None = None
    order: Order = "sort"
    scale: float = 1.0
    excluded: str = ""
    source_says: str = ""

    def read(self, data_dir: Path, metric: str) -> Trace:
        """Read ``metric`` of this curve."""
        return read_trace(
            data_dir / self.file,
            metric,
            step_column=self.step_column,
            where=dict(self.where),
            order=self.order,
        )


def _csv_rows(path: Path) -> list[dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


_PAR_DUPLICATE = {
    "PAR data_efficiency: PARref10": "the same run as 'PAR ppo_gemma2-2b_ultrafb: PAR' "
    "(max difference 0.0002 over all points); counted once",
}


def _par_curves(data_dir: Path) -> list[CurveSource]:
    curves: list[CurveSource] = []
    for path in sorted(data_dir.glob("par_*.csv")):
        figure = path.stem.removeprefix("par_").removesuffix("_proxy_vs_winrate")
        groups = dict.fromkeys(row["curve"] for row in _csv_rows(path))
        for group in groups:
            name = f"PAR {figure}: {group}"
            curves.append(
                CurveSource(
                    name=name,
                    file=path.name,
                    gold="winrate",
                    proxy="proxy_reward",
                    where=(("curve", group),),
                    excluded=_PAR_DUPLICATE.get(name, ""),
                )
            )
    return curves


_UPPPO = "upppo_rlhf_rollout_summary_all.csv"
_UPPPO_SAYS = {
    "ppo_beta0_aggressive": "hacking: 'PPO improves the proxy reward from -0.734 to -0.657 "
    "between steps 1000 and 1200, while the two-judge mean falls from 2.988 to 2.754'",
}


def _upppo_curves(data_dir: Path) -> list[CurveSource]:
    rows = _csv_rows(data_dir / _UPPPO)
    families = dict.fromkeys(
        row["family"] for row in rows if row["model_label"] == "ppo" and row["checkpoint_step"]
    )
    return [
        CurveSource(
            name=f"UP-PPO {family}",
            file=_UPPPO,
            gold="mean_judge_avg",
            proxy="mean_R_phi",
            where=(("family", family), ("model_label", "ppo")),
            step_column="checkpoint_step",
            scale=4.0,
            source_says=_UPPPO_SAYS.get(family, ""),
        )
        for family in families
    ]


_VINCE_SAYS = "hacking: 'gold accuracy (the true objective), rises then turns over'"


def _vince_curves() -> list[CurveSource]:
    return [
        CurveSource(
            name="Vince GRPO gsm8k: train-batch gold",
            file="vince_grpo_gsm8k_proxyRM_qwen05b_train_metrics.jsonl",
            gold="gold_acc",
            proxy="reward_mean",
            excluded="gold accuracy on each training batch: per-batch noise, not an evaluation",
            source_says=_VINCE_SAYS + " (said of this run's held-out probe)",
        ),
        CurveSource(
            name="Vince GRPO gsm8k: held-out probe",
            file="vince_grpo_gsm8k_heldout_probe_summary.csv",
            gold="gold_acc_mean",
            proxy="proxy_rm_logit_mean",
            source_says=_VINCE_SAYS,
        ),
    ]


def _rhe_curves(data_dir: Path) -> list[CurveSource]:
    curves: list[CurveSource] = []
    for path in sorted(data_dir.glob("rhe_llama3b_*")):
        run = path.name.removeprefix("rhe_llama3b_")
        if path.name.endswith("_heldout_f_g.json"):
            name, gold, proxy = (
                run.removesuffix("_heldout_f_g.json") + " held-out",
                "avg_f",
                "avg_g",
            )
        elif path.name.endswith("_train_metrics.jsonl"):
            name = run.removesuffix("_train_metrics.jsonl") + " train"
            gold, proxy = "reward/f", "reward/g"
        else:
            continue
        order: Order = "log" if "llmjudge" in path.name else "sort"
        curves.append(CurveSource(f"RHE {name}", path.name, gold, proxy, order=order))
    return curves


def catalogue(data_dir: Path) -> tuple[CurveSource, ...]:
    """Every curve of the corpus folder ``data_dir``, in a fixed order (spec ``COR-1``)."""
    return (
        *_par_curves(data_dir),
        *_upppo_curves(data_dir),
        *_vince_curves(),
        *_rhe_curves(data_dir),
    )


@attrs.frozen(slots=True)
class Reading:
    """A curve's label and the numbers it rests on (gold in the curve's own units).

    Attributes:
        label: hacking, healthy or unlabelled.
        why: the rule's reason, in words.
        first: the first gold value; peak: the best one; last: the last one.
        peak_step: the step of the peak.
        ratio: the drop from peak to last over the gain from first to peak (inf when the
            peak is the first point and the curve falls; NaN when flat).
        proxy_change: the proxy at the last step minus the proxy at the gold peak.
    """

    label: Label
    why: str
    first: float
    peak: float
    last: float
    peak_step: int
    ratio: float
    proxy_change: float


def _value_at(trace: Trace, step: int) -> float:
    by_step = dict(zip(trace.steps, trace.values, strict=True))
    return by_step.get(step, math.nan)


def read_label(gold: Trace, proxy: Trace, scale: float = 1.0) -> Reading:
    """Label a curve by a fixed rule, decided from the sources' account of reward hacking.

    *Unlabelled* when it has fewer than :data:`MIN_POINTS` points or neither its gain (first
    point to peak) nor its drop (peak to last) reaches :data:`MIN_GAIN` of ``scale`` (a
    floor-level log); else
    *hacking* when the gold peaks and then gives back at least :data:`RATIO` of its gain while
    the proxy ends above its value at the gold peak, *unlabelled* when the gold collapses with
    a falling proxy, and *healthy* otherwise (spec ``COR-2``).
    """
    finite = [(s, v) for s, v in zip(gold.steps, gold.values, strict=True) if math.isfinite(v)]
    peak_index = gold.best_index()
    peak_step, peak = gold.steps[peak_index], gold.values[peak_index]
    first, last = finite[0][1], finite[-1][1]
    gain, drop = peak - first, peak - last
    ratio = drop / gain if gain > 0 else (math.inf if drop > 0 else math.nan)
    proxy_change = _value_at(proxy, finite[-1][0]) - _value_at(proxy, peak_step)

    def reading(label: Label, why: str) -> Reading:
        return Reading(label, why, first, peak, last, peak_step, ratio, proxy_change)

    if len(finite) < MIN_POINTS:
        return reading("unlabelled", f"only {len(finite)} points")
    if max(gain, drop) < MIN_GAIN * scale:
        return reading("unlabelled", "moves less than 2% of the metric's scale (floor-level)")
    if not ratio >= RATIO:
        return reading("healthy", "gold ends near its peak")
    if not proxy_change > 0:
        return reading("unlabelled", "gold collapses but the proxy falls too")
    return reading("hacking", "gold peaks then collapses while the proxy rises")


def score_curve(
    trace: Trace,
    detector: Detector[Any],
    collapsing: bool,
    mode: ModeChoice = "auto",
    scale: float | None = None,
    proxy: Trace | None = None,
) -> tuple[RunScore, ReplayResult]:
    """The regret-first score of ``detector`` on one real curve (spec ``COR-4``).

    The curve is replayed (``RPL-9``: a fire at its last point is not a stop); regret is the
    kept checkpoint's (``RGT-1``); compute is steps: the post-peak steps of the curve run to its
    end, and those a stop avoids. With the metric's full ``scale`` the score also carries the
    run's gain and the kept checkpoint's loss in its units (``RGT-5``). ``proxy``, when given,
    is the curve's proxy reward, which the replay's reports carry (``SIG-10``).
    """
    result = replay(trace, detector, mode, proxy=proxy)
    sign = 1.0 if result.mode == "max" else -1.0
    finite = [
        (s, sign * v) for s, v in zip(trace.steps, trace.values, strict=True) if math.isfinite(v)
    ]
    peak_step = max(finite, key=lambda pair: (pair[1], -pair[0]))[0] if finite else trace.last_step
    stop = result.stop_step
    gain = lost = math.nan
    if scale is not None and finite:
        best = max(value for _, value in finite)
        kept = finite[0][1] if result.kept_value is None else sign * result.kept_value
        gain, lost = (best - finite[0][1]) / scale, max(best - kept, 0.0) / scale
    score = RunScore(
        stopped=result.stopped,
        regret=0.0 if result.relative_regret is None else result.relative_regret,
        collapsing=collapsing,
        post_peak=float(trace.last_step - peak_step),
        saved=0.0 if stop is None else float(trace.last_step - max(stop, peak_step)),
        delay=None if stop is None else _evals_between(trace, peak_step, stop),
        gain=gain,
        lost=lost,
    )
    return score, result


def _evals_between(trace: Trace, start: int, end: int) -> int:
    """Evaluations after ``start`` up to ``end`` (negative when ``end`` comes first)."""
    if end >= start:
        return sum(start < s <= end for s in trace.steps)
    return -sum(end < s <= start for s in trace.steps)
