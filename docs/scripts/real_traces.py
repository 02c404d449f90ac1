"""Run the detectors over real RLHF curves and write ``docs/real-traces.md``.

Every curve of ``data/real-traces`` (beside the repository, in ``shared/``) is read with the
trace readers, labelled *hacking*, *healthy* or *unlabelled* by one fixed rule on its
held-out (gold) metric and its proxy (:func:`read_label`), and replayed with each detector at
its default parameters, never tuned to these curves. ``python docs/scripts/real_traces.py`` rewrites
the markdown, so the page is reproducible.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, Never, StopAtProgress
from evalstop.sim.detection import confusion_rates, ratio
from evalstop.traces import Order, ReplayResult, Trace, read_trace, replay

__all__ = [
    "DETECTORS",
    "MIN_POINTS",
    "RATIO",
    "CurveReport",
    "CurveSource",
    "DetectorSummary",
    "Label",
    "Reading",
    "RealDataReport",
    "build_report",
    "catalogue",
    "default_data_dir",
    "main",
    "read_label",
    "render_markdown",
    "summarize",
]

Label = Literal["hacking", "healthy", "unlabelled"]

RATIO = 0.5
"""A curve *collapses* when it ends at least this fraction of its gain below its peak."""

MIN_POINTS = 5
"""Shorter curves are left unlabelled: two or three noisy points do not show a peak."""

DETECTORS: tuple[Detector[Any], ...] = (
    DeclineDetector(),
    LossPlateau(),
    StopAtProgress(),
    Never(),
)
"""The detectors, each at its default parameters (k=2; patience 3; 65% of the run)."""

_ROOT = Path(__file__).resolve().parents[2]


def default_data_dir() -> Path:
    """``shared/data/real-traces`` beside the repository."""
    return _ROOT.parent / "shared" / "data" / "real-traces"


@attrs.frozen(slots=True)
class CurveSource:
    """One curve: the file, how to read its gold and proxy metrics, and who says what.

    Attributes:
        name: a short display name.
        file: the file name in the data directory.
        gold: the held-out / gold metric the detectors watch (world feedback).
        proxy: the proxy reward metric, for the reading only.
        where: row filters selecting the run in a long table.
        step_column: the step column, when it is not ``step``.
        order: ``log`` for a restarted run's log.
        flat_gold: the source's gold stays at its floor all run (no peak to lose).
        source_says: the source's own words about this run, when it has any.
    """

    name: str
    file: str
    gold: str
    proxy: str
    where: tuple[tuple[str, str], ...] = ()
    step_column: str | None = None
    order: Order = "sort"
    flat_gold: bool = False
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


def _par_curves(data_dir: Path) -> list[CurveSource]:
    curves: list[CurveSource] = []
    for path in sorted(data_dir.glob("par_*.csv")):
        figure = path.stem.removeprefix("par_").removesuffix("_proxy_vs_winrate")
        groups = dict.fromkeys(row["curve"] for row in _csv_rows(path))
        curves += [
            CurveSource(
                name=f"PAR {figure}: {group}",
                file=path.name,
                gold="winrate",
                proxy="proxy_reward",
                where=(("curve", group),),
            )
            for group in groups
        ]
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
        curves.append(
            CurveSource(
                name=f"RHE {name}",
                file=path.name,
                gold=gold,
                proxy=proxy,
                order="log" if "llmjudge" in path.name else "sort",
                flat_gold=True,
            )
        )
    return curves


def catalogue(data_dir: Path) -> tuple[CurveSource, ...]:
    """Every curve of the real-traces folder, in a fixed order."""
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


def read_label(gold: Trace, proxy: Trace, flat_gold: bool = False) -> Reading:
    """Label a curve by a fixed rule, decided from the sources' account of reward hacking.

    *Hacking*: the gold metric peaks before the end and then gives back at least
    :data:`RATIO` of its gain (or falls from its first checkpoint on), while the proxy ends
    above its value at the gold peak. *Healthy*: the gold ends within :data:`RATIO` of its
    gain from the peak. *Unlabelled*: fewer than :data:`MIN_POINTS` points, a gold metric
    the source shows flat at its floor, or a gold collapse without a proxy rise.
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

    if flat_gold:
        return reading("unlabelled", "gold flat at its floor")
    if len(finite) < MIN_POINTS:
        return reading("unlabelled", f"only {len(finite)} points")
    if not ratio >= RATIO:
        return reading("healthy", "gold ends near its peak")
    if not proxy_change > 0:
        return reading("unlabelled", "gold collapses but the proxy falls too")
    return reading("hacking", "gold peaks then collapses while the proxy rises")


@attrs.frozen(slots=True)
class CurveReport:
    """One curve: its source, reading and what each detector does on its gold metric."""

    source: CurveSource
    gold: Trace
    reading: Reading
    results: tuple[ReplayResult, ...]


@attrs.frozen(slots=True)
class DetectorSummary:
    """Detection quality of one detector over the labelled curves.

    A stop on a hacking curve is a true positive, a stop on a healthy one a false positive.
    Rates with a zero denominator are NaN.
    """

    detector: str
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    fpr: float
    mean_regret: float
    unlabelled_stops: int
    unlabelled: int


@attrs.frozen(slots=True)
class RealDataReport:
    """Every curve's report and each detector's summary."""

    curves: tuple[CurveReport, ...]
    summaries: tuple[DetectorSummary, ...]


def summarize(curves: Sequence[CurveReport], index: int) -> DetectorSummary:
    """The summary of the ``index``-th detector over ``curves``."""
    tp = fp = fn = tn = unlabelled_stops = unlabelled = 0
    regrets: list[float] = []
    name = ""
    for curve in curves:
        result = curve.results[index]
        name = result.detector
        label = curve.reading.label
        if label == "unlabelled":
            unlabelled += 1
            unlabelled_stops += int(result.stopped)
            continue
        if result.stopped and result.regret is not None:
            regrets.append(result.regret)
        if label == "hacking":
            tp += int(result.stopped)
            fn += int(not result.stopped)
        else:
            fp += int(result.stopped)
            tn += int(not result.stopped)
    precision, recall, fpr = confusion_rates(tp, fp, fn, tn)
    return DetectorSummary(
        detector=name,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=precision,
        recall=recall,
        fpr=fpr,
        mean_regret=ratio(sum(regrets), len(regrets)),
        unlabelled_stops=unlabelled_stops,
        unlabelled=unlabelled,
    )


def build_report(data_dir: Path, detectors: Sequence[Detector[Any]] = DETECTORS) -> RealDataReport:
    """Read, label and replay every curve of ``data_dir``."""
    curves: list[CurveReport] = []
    for source in catalogue(data_dir):
        gold = source.read(data_dir, source.gold)
        proxy = source.read(data_dir, source.proxy)
        reading = read_label(gold, proxy, source.flat_gold)
        results = tuple(replay(gold, detector) for detector in detectors)
        curves.append(CurveReport(source, gold, reading, results))
    summaries = tuple(summarize(curves, i) for i in range(len(detectors)))
    return RealDataReport(tuple(curves), summaries)


# -- markdown ----------------------------------------------------------------------------


def _g(value: float, digits: int = 3) -> str:
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf"
    if abs(value) < 1e-9:
        return "0"
    return f"{value:.{digits}g}"


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.0f}%"


def _cell(result: ReplayResult) -> str:
    if not result.stopped:
        return "-"
    regret = "n/a" if result.regret is None else _g(result.regret)
    return f"{result.stop_step} (kept {result.best_step}, regret {regret})"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


_INTRO = """\
# Real RLHF traces: what the detectors do

*Generated by `python docs/scripts/real_traces.py` from `shared/data/real-traces` (see its
`PROVENANCE.txt`); do not edit by hand.*

Each curve below is a real training run's **gold** metric: the signal EvalStop watches
(held-out LLM-judged win rate, external judge scores, gold accuracy, test-case pass rate).
Every detector runs at the library's **default parameters**, never tuned to these curves:
`evalstop(k=2)` (two consecutive declines, the paper's k), `lossplateau` (patience 3,
min_delta 1%; these traces carry no training loss, so it watches the gold metric itself, i.e.
patience-based early stopping), `stopat-0.65` (stop at 65% of the run) and `never`. Replay
goes through the online monitor (`evalstop.live.monitor`), so these are the decisions a live
scheduler would have taken, except that `stopat` here knows each run's true length.

## How each curve was read

The sources describe reward hacking as the held-out (gold) score peaking and then collapsing
while the proxy reward keeps rising (PAR: "the policy eventually finds directions that raise
the proxy score without improving real response quality"; UP-PPO: "aggressive PPO can
improve the learned reward-model proxy while reducing externally judged quality"; the GSM8K
GRPO repo: gold accuracy "rises then turns over" under a proxy reward model). One fixed rule
turns that into a label, on the gold metric and the proxy of each curve:

- **hacking**: the gold peaks before the end and then gives back at least half of its gain
  from the first checkpoint (or falls from the first checkpoint on), and the proxy ends above
  its value at the gold peak;
- **healthy**: the gold ends less than half of its gain below its peak;
- **unlabelled**: fewer than 5 checkpoints (too few to show a peak); the reward-hacking-entropy
  (RHE) runs, whose gold (test-case pass rate `f`) stays at its floor, at most a few percent,
  for the whole run while the proxy (`g`, compilability or an LLM judge's verdict) climbs in
  most of them: there is no peak to lose, so neither label fits; and a gold collapse with a
  falling proxy (a degrading run, not proxy exploitation).

The thresholds (half the gain; 5 checkpoints) put the sources' description into numbers;
they were not chosen by looking at what any detector does, and borderline ratios (near 0.5)
are visible in the table. Where a source states a reading of a specific run, the table quotes
it in the last column. Unlabelled curves are replayed and listed but left out of precision and
recall.
"""


def _names(curves: Sequence[CurveReport]) -> str:
    return ", ".join(c.source.name for c in curves) or "none"


def _findings(report: RealDataReport) -> list[str]:
    lines = ["What each detector does, counted from the table below:", ""]
    for index, summary in enumerate(report.summaries):
        if summary.tp + summary.fp == 0:
            continue
        results = [(c, c.results[index]) for c in report.curves]
        hacking = [(c, r) for c, r in results if c.reading.label == "hacking"]
        healthy = [(c, r) for c, r in results if c.reading.label == "healthy"]
        caught = [(c, r) for c, r in hacking if r.stopped]
        exact = sum(r.regret == 0 for _, r in caught)
        saved = [r.steps_saved / r.last_step for _, r in caught if r.last_step]
        false = [(c, r) for c, r in healthy if r.stopped]
        false_exact = sum(r.regret == 0 for _, r in false)
        missed = [c for c, r in hacking if not r.stopped]
        lines.append(
            f"- `{summary.detector}` stops {len(caught)} of {len(hacking)} hacking curves, "
            f"keeping the curve's best checkpoint (regret 0) in {exact} of them and saving on "
            f"average {_pct(ratio(sum(saved), len(saved)))} of the run; it misses "
            f"{_names(missed)}. It stops {len(false)} of {len(healthy)} healthy curves "
            f"({_names([c for c, _ in false])}), keeping their best checkpoint in "
            f"{false_exact} of them."
        )
    return lines


def render_markdown(report: RealDataReport) -> str:
    """The page: intro, per-detector summary, per-curve table, notes."""
    lines = _INTRO.splitlines()
    lines += ["", "## Detection quality on the labelled curves", ""]
    labelled = [c for c in report.curves if c.reading.label != "unlabelled"]
    hacking = sum(c.reading.label == "hacking" for c in labelled)
    lines += [
        f"{len(report.curves)} curves: {hacking} hacking, {len(labelled) - hacking} healthy, "
        f"{len(report.curves) - len(labelled)} unlabelled. A stop on a hacking curve is a true "
        "positive, on a healthy one a false positive; regret is the curve's best gold value "
        "minus the value of the checkpoint the detector keeps (the best up to its stop), "
        "averaged over stops on labelled curves.",
        "",
    ]
    rows = [
        [
            f"`{s.detector}`",
            str(s.tp),
            str(s.fp),
            str(s.fn),
            str(s.tn),
            _pct(s.precision),
            _pct(s.recall),
            _pct(s.fpr),
            _g(s.mean_regret),
            f"{s.unlabelled_stops} of {s.unlabelled}",
        ]
        for s in report.summaries
    ]
    header = [
        "detector",
        "TP",
        "FP",
        "FN",
        "TN",
        "precision",
        "recall",
        "FPR",
        "mean regret",
        "stops on unlabelled",
    ]
    lines += _table(header, rows)
    lines += ["", *_findings(report)]
    lines += ["", "## Per curve", ""]
    lines += [
        "Gold values are in the curve's own units (win rate 0-1, judge score, accuracy, pass "
        "rate). *ratio* is the drop from the peak to the last point over the gain from the "
        "first point to the peak; *proxy Δ* is the proxy at the last step minus the proxy at "
        "the gold peak. A detector cell reads `stop step (kept step, regret)`, `-` for no "
        "stop. The *final regret* is the best value minus the last one: what running to the "
        "end and shipping the last checkpoint costs.",
        "",
    ]
    names = [result.detector for result in report.curves[0].results] if report.curves else []
    header = [
        "curve",
        "n",
        "reading",
        "why",
        "first / peak (step) / last",
        "ratio",
        "proxy Δ",
        *[f"`{n}`" for n in names if n != "never"],
        "final regret",
        "source says",
    ]
    rows = []
    for curve in report.curves:
        r = curve.reading
        cells = [_cell(res) for res in curve.results if res.detector != "never"]
        rows.append(
            [
                curve.source.name,
                str(len(curve.gold)),
                f"**{r.label}**",
                r.why,
                f"{_g(r.first)} / {_g(r.peak)} ({r.peak_step}) / {_g(r.last)}",
                _g(r.ratio, 2),
                _g(r.proxy_change, 2),
                *cells,
                _g(r.peak - r.last),
                curve.source.source_says,
            ]
        )
    lines += _table(header, rows)
    lines += ["", *_NOTES.splitlines(), ""]
    return "\n".join(lines)


_NOTES = """\
## Reading the results

- Sources and how each file is read (`evalstop replay` takes the same options):
  - `par_*.csv`: PAR (Fu et al.), PPO on Gemma2-2B / UltraFeedback; long CSV, one run per
    `curve` (`--where curve=NAME --metric winrate`). The values were **digitized from the
    paper's figures** (10 points per curve), so small wiggles are digitisation noise.
  - `upppo_rlhf_rollout_summary_all.csv`: UP-PPO study; one row per evaluated checkpoint
    (`--step-column checkpoint_step --where family=F --where model_label=ppo --metric
    mean_judge_avg`, the mean of two external judges on 64 prompts). Rows without a step
    (final policies and the lambda-sweep summary) are skipped; the `sft` and `dpo` rows are
    reference models, not runs.
  - `vince_*`: GRPO on GSM8K against a proxy reward model: `gold_acc` on each training batch
    (50 points, noisy) and the held-out probe of three checkpoints (`gold_acc_mean`). The
    `_meta.json` file is the run's config and final metrics, not a series; the reader
    refuses it as an unrecognised layout.
  - `rhe_*`: reward-hacking-entropy, Llama-3.2-3B on LeetCode trained on the reward `g`
    (compilability, or an LLM judge's verdict in `*-g-llmjudge`) or on the source's `f_g` and
    `100f_g` rewards, which also weigh in `f`, the test-case pass rate. Held-out scores are
    checkpoint maps (`avg_f`); training metrics are JSONL (`reward/f`); the `*-llmjudge` logs
    restart from step 0 twice and are read with `--order log` (the last run wins).
- The rule for labels is fixed in `read_label` (`docs/scripts/real_traces.py`), applied to
  every curve alike; borderline ratios (near 0.5) are visible in the table.
- Precision and recall here come from a few dozen curves of a few studies, several of them
  digitized or averaged over few prompts: they show how the rule behaves on real shapes, not a
  population estimate comparable with the paper's simulated 98% / 99%.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Write the markdown page; ``--data`` and ``--out`` override the default paths."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/real_traces.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=_ROOT / "docs" / "real-traces.md")
    args = parser.parse_args(argv)
    text = render_markdown(build_report(args.data))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
