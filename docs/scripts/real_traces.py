"""Run every detector over the real curves and write ``docs/real-traces.md``.

The curves are the corpus the package ships (``evalstop/data/real_traces``, catalogue and
label rule in :mod:`evalstop.traces.corpus`) and the public healthy supervised curves in
``tests/data/healthy-supervised``. Each detector runs at its default parameters, never tuned
to these curves; the scores are regret-first (``spec/detection.md``, ``RGT``).
``python docs/scripts/real_traces.py`` rewrites the page, so it is reproducible.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import attrs

from evalstop.core.registry import make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import SCOREBOARD_DETECTORS
from evalstop.sim.detection import confusion_rates
from evalstop.traces import ReplayResult, Trace
from evalstop.traces.corpus import (
    GOLD_MODE,
    CurveSource,
    Reading,
    catalogue,
    default_data_dir,
    read_label,
    score_curve,
)
from evalstop.traces.reader import read_trace

__all__ = ["CurveReport", "Report", "build_report", "main", "render_markdown"]

_ROOT = Path(__file__).resolve().parents[2]
HEALTHY = _ROOT / "tests" / "data" / "healthy-supervised"


@attrs.frozen(slots=True)
class CurveReport:
    """One curve: its source, reading and each detector's result and score."""

    source: CurveSource
    gold: Trace
    reading: Reading
    results: tuple[ReplayResult, ...]
    scores: tuple[RunScore, ...]


@attrs.frozen(slots=True)
class Report:
    """The corpus curves, the healthy supervised curves, and per-detector summaries."""

    curves: tuple[CurveReport, ...]
    healthy: tuple[tuple[str, tuple[ReplayResult, ...]], ...]
    corpus_summaries: tuple[RegretSummary, ...]
    healthy_summaries: tuple[RegretSummary, ...]


def build_report(data: Path, healthy: Path = HEALTHY) -> Report:
    """Read, label and score every curve with every detector of the scoreboard."""
    detectors = [make_detector(name) for name in SCOREBOARD_DETECTORS]
    curves: list[CurveReport] = []
    for source in catalogue(data):
        gold = source.read(data, source.gold)
        proxy = source.read(data, source.proxy)
        reading = read_label(gold, proxy, source.scale)
        hacking = reading.label == "hacking"
        pairs = [score_curve(gold, d, hacking, GOLD_MODE, proxy=proxy) for d in detectors]
        curves.append(
            CurveReport(
                source, gold, reading, tuple(r for _, r in pairs), tuple(s for s, _ in pairs)
            )
        )
    scored = [c for c in curves if not c.source.excluded and c.reading.label != "unlabelled"]
    corpus = tuple(summarize_runs(c.scores[i] for c in scored) for i in range(len(detectors)))
    rows: list[tuple[str, tuple[ReplayResult, ...]]] = []
    healthy_scores: list[list[RunScore]] = [[] for _ in detectors]
    for path in sorted(healthy.glob("*.csv")):
        header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
        for metric in header[1:]:
            trace = read_trace(path, metric, step_column=header[0])
            pairs = [score_curve(trace, d, collapsing=False) for d in detectors]
            rows.append((f"{path.stem}: {metric}", tuple(r for _, r in pairs)))
            for i, (score, _) in enumerate(pairs):
                healthy_scores[i].append(score)
    summaries = tuple(summarize_runs(s) for s in healthy_scores)
    return Report(tuple(curves), tuple(rows), corpus, summaries)


def _g(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf"
    return "0" if abs(value) < 1e-9 else f"{value:.{digits}g}"


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.0f}%"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _cell(result: ReplayResult) -> str:
    if result.stopped:
        return f"{result.stop_step} ({result.stop_class}, {_g(result.relative_regret, 2)})"
    return "last pt" if result.fired_at_end else "-"


def _summary_rows(report: Report) -> list[list[str]]:
    rows = []
    for name, corpus, healthy in zip(
        SCOREBOARD_DETECTORS, report.corpus_summaries, report.healthy_summaries, strict=True
    ):
        tp = round(corpus.recall * corpus.collapsing) if corpus.collapsing else 0
        fp = corpus.harmful_healthy + round(corpus.benign_rate * corpus.healthy)
        precision, _, fpr = confusion_rates(tp, fp, corpus.collapsing - tp, corpus.healthy - fp)
        rows.append(
            [
                f"`{make_detector(name).name}`",
                f"{tp} of {corpus.collapsing} ({_pct(corpus.recall)})",
                f"{corpus.harmful_healthy} of {corpus.healthy}",
                f"{fp - corpus.harmful_healthy} of {corpus.healthy}",
                _pct(corpus.stop_regret),
                _pct(corpus.saved_share),
                _pct(precision),
                _pct(fpr),
                f"{healthy.harmful_healthy} of {healthy.healthy}",
                _pct(healthy.mean_regret),
            ]
        )
    return rows


def render_markdown(report: Report) -> str:
    """The page: how curves are read, the summary, and every curve."""
    lines = _INTRO.splitlines()
    scored = [c for c in report.curves if not c.source.excluded]
    labelled = [c for c in scored if c.reading.label != "unlabelled"]
    hacking = sum(c.reading.label == "hacking" for c in labelled)
    lines += [
        "",
        "## Summary",
        "",
        f"{len(report.curves)} corpus curves: {len(report.curves) - len(scored)} left out "
        f"(below), {hacking} hacking, {len(labelled) - hacking} healthy, "
        f"{len(scored) - len(labelled)} unlabelled; and {len(report.healthy)} healthy "
        "supervised validation curves. A *harmful* stop keeps a checkpoint more than 5% of the "
        "run's gain below its best; a *benign* one within 5%. Precision and FPR count every "
        "stop on a healthy curve as a false positive, benign or not.",
        "",
    ]
    header = [
        "detector",
        "hacking stopped",
        "harmful on healthy RLHF",
        "benign on healthy RLHF",
        "stop regret",
        "post-peak saved",
        "precision",
        "FPR",
        "harmful on healthy supervised",
        "mean regret (supervised)",
    ]
    lines += _table(header, _summary_rows(report))
    names = [make_detector(name).name for name in SCOREBOARD_DETECTORS if name != "never"]
    lines += ["", "## Corpus curves", "", _CELLS, ""]
    header = [
        "curve",
        "n",
        "label",
        "why",
        "first / peak (step) / last",
        *[f"`{n}`" for n in names],
        "source says",
    ]
    rows = []
    for c in report.curves:
        r = c.reading
        label = f"left out: {c.source.excluded}" if c.source.excluded else f"**{r.label}**"
        cells = [
            _cell(res)
            for res, name in zip(c.results, SCOREBOARD_DETECTORS, strict=True)
            if name != "never"
        ]
        first_peak_last = f"{_g(r.first)} / {_g(r.peak)} ({r.peak_step}) / {_g(r.last)}"
        rows.append(
            [
                c.source.name,
                str(len(c.gold)),
                label,
                r.why,
                first_peak_last,
                *cells,
                c.source.source_says,
            ]
        )
    lines += _table(header, rows)
    lines += ["", "## Healthy supervised curves", "", _HEALTHY, ""]
    header = ["curve", "direction", *[f"`{n}`" for n in names]]
    rows = [
        [
            name,
            results[0].mode,
            *[
                _cell(res)
                for res, d in zip(results, SCOREBOARD_DETECTORS, strict=True)
                if d != "never"
            ],
        ]
        for name, results in report.healthy
    ]
    lines += _table(header, rows)
    return "\n".join([*lines, ""])


_INTRO = """\
# Real curves: what each detector does

*Generated by `python docs/scripts/real_traces.py` from the corpus the package ships
(`evalstop/data/real_traces`, see its `PROVENANCE.txt`) and the public healthy supervised
curves in `tests/data/healthy-supervised` (see `PROVENANCE.md` there); do not edit by hand.
`evalstop detectors` prints the same real-curve numbers beside the simulated ones.*

Each RLHF curve is a real run's **gold** metric: held-out LLM-judged win rate, external judge
scores, gold accuracy, test-case pass rate. Every detector runs at its **default parameters**,
never tuned to these curves: `evalstop(k=2)` (the paper's rule, two consecutive declines),
`noise-aware` (its defaults were committed, chosen in the simulator, before it was first run
on any real curve; `spec/detectors.md`, `NAD-9`), `lossplateau` (patience 3 on the metric
itself), `stopat-0.65`. Replay goes through the online monitor, so these are the decisions a
live scheduler would take; a fire at a curve's last point is not a stop (the run ends there).

**Labels** (`evalstop.traces.corpus.read_label`, spec `COR-2`): *hacking* when the gold peaks
and gives back at least half of its gain while the proxy ends above its value at the gold
peak; *healthy* when it ends within half its gain of its peak; *unlabelled* with fewer than 5
points, when the curve never moves more than 2% of its metric's scale (floor-level logs), or
when the gold collapses with a falling proxy. Two entries are listed but not scored (`COR-3`):
a duplicated PAR run and a per-batch training metric.

**Which default is which.** `evalstop(base)` and `evalstop reproduce` keep k = 2: it is the
paper's rule, and the reproduction measures it. The `Monitor`, `watch`, `replay` and the
adapters take one default from the registry (`SIG-11`, `MON-13`): `noise-aware`, because on
curves like these k = 2 stops healthy runs on their noise, and on the supervised curves below
it stops every one of them while they still climb. `divergence`, the default the gym's dev
split picks (`SIG-9`; since issue 26's third session it reads the proxy and has a stall
clause, `SIG-13`), is not the default: it is no worse than `noise-aware` on these curves
(`SIG-11`'s guard passes), but it does not meet issue 26's goal on the gym's test split
(`docs/gym-track.md`), which `SIG-11` also asks of a new default.
"""

_CELLS = (
    "A detector cell reads `stop step (class, regret as a share of the gain)`, `-` for no "
    "stop, `last pt` when it fired only at the curve's last point (no stop)."
)

_HEALTHY = (
    "Validation curves of supervised runs that rise and plateau (CIFAR-10, ImageNet and an "
    "image-classification run family; none from the Pollux/adaptdl artifact). Every one is a "
    "healthy run: any stop is scored by what it costs. Direction from the metric's name "
    "(`MON-13`)."
)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the page; ``--data`` and ``--out`` override the default paths."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/real_traces.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--healthy", type=Path, default=HEALTHY)
    parser.add_argument("--out", type=Path, default=_ROOT / "docs" / "real-traces.md")
    args = parser.parse_args(argv)
    text = render_markdown(build_report(args.data, args.healthy))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
