"""Write ``docs/gym-track.md``: every detector on the gym's test split, with intervals and
paired tests, and the goals of the default detector (spec ``SCB-9``, ``SCB-10``, ``SIG-9``).

Run ``python docs/scripts/gym_track_page.py`` after the defaults are committed
(``docs/scripts/tune_signals.py``); it reads the gym's dev split only to pick each eval-only
family's operating point at the default's harmful-stop rate (the comparison at matched
harmful rate), then scores everything on the test split, the shipped corpus and the supervised
curves. Nothing here chooses a default.
"""

from __future__ import annotations

import argparse
import itertools
import math
import resource
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstop.core.bocpd import BocpdDetector
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.ewma import EwmaDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import DEFAULT_DETECTOR, DEV_PICK, DEV_PICK_MEETS_GOAL, make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES, SCOREBOARD_DETECTORS
from evalstop.experiments.scoreboard.board import real_scores
from evalstop.experiments.scoreboard.gym import GYM_RUNS, gym_runs, gym_scores
from evalstop.experiments.significance import ALPHA, compare, intervals, mcnemar

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "tests" / "data" / "healthy-supervised"
PAGE = ROOT / "docs" / "gym-track.md"
DEV_RUNS = 500
"""Dev runs the matched-harmful comparison picks each family's point on (the tuning's 500)."""
EVAL_ONLY = ("evalstop", "noise-aware", "ewma", "bocpd", "lossplateau", "stopat")


def families() -> dict[str, list[Detector[Any]]]:
    """Each eval-only family's swept points (the trade-off sweep's grid, ``SCB-6``, and the
    ``SIG-9`` grids of ewma and bocpd)."""
    return {
        "evalstop": [DeclineDetector(k) for k in (1, 2, 3, 4, 6)],
        "noise-aware": [
            NoiseAwareDetector(z=z, warmup_evals=w)
            for z, w in itertools.product((1.0, 1.5, 2.0, 2.25, 2.5, 3.0, 4.0), (3, 4, 5, 6))
        ],
        "ewma": [
            EwmaDetector(alpha=a, drop=d, warmup_evals=w)
            for a, d, w in itertools.product((0.2, 0.3, 0.5), (0.1, 0.2, 0.3, 0.5), (3, 5))
        ],
        "bocpd": [
            BocpdDetector(hazard=h, threshold=t, slope_scale=s)
            for h, t, s in itertools.product(
                (0.05, 0.1, 0.2), (0.8, 0.9, 0.95, 0.99), (0.5, 1.0, 2.0)
            )
        ],
        "lossplateau": [LossPlateau(patience=p) for p in (1, 2, 3, 5, 8)],
        "stopat": [StopAtProgress(f) for f in (0.3, 0.5, 0.65, 0.8, 0.9)],
    }


def pct(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.{digits}f}%"


def ci(pair: tuple[float, float]) -> str:
    return "" if math.isnan(pair[0]) else f" [{pct(pair[0], 0)}, {pct(pair[1], 0)}]"


def table(names: Sequence[str], rows: Sequence[list[RunScore]], default: list[RunScore]) -> str:
    """One markdown row per detector: rates with intervals, regret, the paired tests."""
    head = (
        "| detector | runs | recall | harmful | mean regret | median | floored | > 5% | "
        f"vs {DEFAULT_DETECTOR}: recall, harmful, regret p |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for name, scores in zip(names, rows, strict=True):
        s = summarize_runs(scores)
        c = intervals(s)
        versus = "default"
        if name != DEFAULT_DETECTOR:
            cmp = compare(scores, default)
            marks = [
                f"{p:.2g}{'*' if p < ALPHA else ''}"
                for p in (cmp.recall_p, cmp.harmful_p, cmp.regret.p_value)
            ]
            versus = ", ".join(marks) + ("" if cmp.significant else " (ns)")
        lines.append(
            f"| {name} | {s.runs} | {pct(s.recall, 0)}{ci(c['recall'])} | "
            f"{pct(s.harmful_rate)}{ci(c['harmful_rate'])} | {pct(s.mean_regret)} | "
            f"{pct(s.median_regret)} | {pct(s.floored_regret)} | {pct(s.over_share, 0)} | "
            f"{versus} |"
        )
    return "\n".join(lines)


def cpu_seconds() -> float:
    """User and system CPU of this process and of its finished workers."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def goal_met(s: RegretSummary) -> bool:
    """Issue 26's goal for the default at one density (``SIG-11``)."""
    return s.recall >= 0.9 and s.harmful_rate <= 0.05 and s.floored_regret <= 0.05


def goals(summaries: dict[int, RegretSummary]) -> list[str]:
    out = []
    for evals, s in sorted(summaries.items()):
        met = goal_met(s)
        out.append(
            f"- {evals} evaluations a run: recall {pct(s.recall)} (goal >= 90%), harmful "
            f"{pct(s.harmful_rate)} (<= 5%), mean gain-floored regret {pct(s.floored_regret)} "
            f"(<= 5%): **{'met' if met else 'NOT met'}**"
        )
    return out


def matched(dev: Sequence[Any], test: Sequence[Any], default: Detector[Any]) -> list[str]:
    """Each eval-only family's best dev point at the default's dev harmful rate, against the
    default on the test split (McNemar on the hacking runs' stops)."""
    cap = summarize_runs(gym_scores([default], dev)[0]).harmful_rate
    (mine,) = gym_scores([default], test)
    out = [
        f"The default's harmful rate on the dev split is {pct(cap)}; each family's point is "
        "the one with the highest dev recall at a dev harmful rate no higher (or, when none "
        "is, its lowest harmful rate), then scored on the test split.\n",
        "| family | point (chosen on dev) | test recall | test harmful | McNemar p on recall "
        "(default vs it) |\n|---|---|---|---|---|",
    ]
    for family, points in families().items():
        rows = [summarize_runs(r) for r in gym_scores(points, dev)]
        ok = [i for i, s in enumerate(rows) if s.harmful_rate <= cap]
        pick = (
            max(ok, key=lambda i: (rows[i].recall, -i))
            if ok
            else min(range(len(rows)), key=lambda i: rows[i].harmful_rate)
        )
        (theirs,) = gym_scores([points[pick]], test)
        s = summarize_runs(theirs)
        pairs = [(a.stopped, b.stopped) for a, b in zip(mine, theirs, strict=True) if a.collapsing]
        p = mcnemar(sum(a and not b for a, b in pairs), sum(b and not a for a, b in pairs))
        out.append(
            f"| {family} | `{points[pick].name}` | {pct(s.recall)} | {pct(s.harmful_rate)} | "
            f"{p:.2g}{'' if p < ALPHA else ' (ns)'} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=GYM_RUNS)
    parser.add_argument(
        "--commit", default="(uncommitted)", help="the commit that fixed the defaults"
    )
    args = parser.parse_args()
    start = cpu_seconds()
    test = gym_runs("test", args.runs, workers=2)
    dev = gym_runs("dev", DEV_RUNS, workers=2)
    detectors = [make_detector(n) for n in SCOREBOARD_DETECTORS]
    scores = gym_scores(detectors, test)
    default = scores[SCOREBOARD_DETECTORS.index(DEFAULT_DETECTOR)]
    parts = [
        "# Detectors on the gym\n",
        "<!-- generated by docs/scripts/gym_track_page.py: do not edit -->\n",
        f"Every registered detector at its defaults on the first {args.runs} runs of the gym's "
        "test split (`SCB-10`; each run at the density its config draws). The defaults of "
        "`ewma`, `divergence`, `kl-budget` and `bocpd` and the dev pick for the entry points' "
        f"default (`{DEV_PICK}`) were chosen by `docs/scripts/tune_signals.py` on the dev "
        f"split only (`SIG-9`) and committed in {args.commit}, before anything here was run. "
        f"The entry points' default is `{DEFAULT_DETECTOR}` (`SIG-11`: the pick becomes it "
        "only if it meets issue 26's goal on this split, below, and is no worse than the "
        "previous default on the shipped corpus and the supervised curves, last section). "
        "Intervals are 95% Wilson; p-values are McNemar's exact test on recall and on harmful "
        f"stops and a paired bootstrap on the gain-floored regret against `{DEFAULT_DETECTOR}` "
        "on the same runs; `*` marks p < 0.05 and `(ns)` a row where no difference is "
        "significant.\n",
    ]
    summaries: dict[str, dict[int, RegretSummary]] = {}
    for evals in (*DENSITIES, 0):
        keep = [i for i, run in enumerate(test) if evals in (0, run.config.evals)]
        rows = [[row[i] for i in keep] for row in scores]
        title = f"{evals} evaluations a run" if evals else "every density"
        parts += [f"\n## {title}\n", table(SCOREBOARD_DETECTORS, rows, [default[i] for i in keep])]
        if evals:
            for name in dict.fromkeys((DEV_PICK, DEFAULT_DETECTOR)):
                mine = scores[SCOREBOARD_DETECTORS.index(name)]
                summaries.setdefault(name, {})[evals] = summarize_runs([mine[i] for i in keep])
    for name, by_density in summaries.items():
        parts += [f"\n## Goals of `{name}`\n", *goals(by_density)]
    met = all(goal_met(s) for s in summaries[DEV_PICK].values())
    if met != DEV_PICK_MEETS_GOAL:
        raise SystemExit(
            f"{DEV_PICK} {'meets' if met else 'does not meet'} the goal on the test split, but "
            f"registry.DEV_PICK_MEETS_GOAL is {DEV_PICK_MEETS_GOAL}: record the measurement"
        )
    parts += [f"\n## `{DEV_PICK}` against each eval-only family at matched harmful rate\n"]
    parts += matched(dev, test, make_detector(DEV_PICK))
    parts += ["\n## The shipped corpus and the supervised curves\n"]
    names = list(dict.fromkeys((DEFAULT_DETECTOR, DEV_PICK, *SCOREBOARD_DETECTORS)))
    lines = [
        "| detector | corpus recall | corpus harmful | supervised harmful |",
        "|---|---|---|---|",
    ]
    for name in names:
        corpus, supervised = real_scores(make_detector(name), healthy=HEALTHY)
        c, h = summarize_runs(corpus), summarize_runs(supervised)
        lines.append(
            f"| {name} | {c.collapsing - c.missed}/{c.collapsing} ({pct(c.recall, 0)}) | "
            f"{c.harmful_healthy}/{c.healthy} | {h.harmful_healthy}/{h.healthy} |"
        )
    parts += lines
    parts += [
        f"\nCPU seconds to generate this page (this process and its workers): "
        f"{cpu_seconds() - start:.0f}.\n"
    ]
    PAGE.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
