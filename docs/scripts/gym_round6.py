"""Score issue 26's sixth round once (spec ``SIG-19``): the dev pick of
``docs/scripts/tune_round6.py`` on a fresh range of the gym's test split, paired with
``noise-aware`` (the default), ``learned`` and ``divergence``, and ``SIG-11``'s guard on the
shipped corpus and the supervised curves. Writes ``docs/gym-round6.md``.

Run ``python docs/scripts/gym_round6.py --commit HASH > docs/scripts/gym_round6.out`` after
the commit that fixed the pick (``HASH``, the one that added ``tune_round6.out``). The range,
seeds 1,003,100 to 1,004,199, was written into ``SIG-19`` before this script ran; rounds 3 to 5
scored seeds 1,000,000 to 1,003,099. Nothing here chooses anything: the verdict follows the
rule the spec wrote down (the goal at every density on the tuning runs and on this range, and
the guard).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from gym_round5 import by_density, harmed, met, p_value, pct, publish, summaries

from evalstop.core.detectors import Detector
from evalstop.core.registry import DEFAULT_DETECTOR, make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.guard import guard
from evalstop.experiments.scoreboard.gym import gym_scores
from evalstop.experiments.significance import mcnemar, paired_bootstrap, wilson
from evalstop.gym import LabelledRun
from evalstop.gym.generate import generate_runs

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "tests" / "data" / "healthy-supervised"
PAGE = ROOT / "docs" / "gym-round6.md"
TUNED = ROOT / "docs" / "scripts" / "tune_round6.out"
FIRST_SEED = 1_003_100
RUNS = 1100
CONTENDERS: tuple[str, ...] = ("noise-aware", "learned", "divergence")


def dev_verdict() -> tuple[str, bool]:
    """The pick's name and whether it met the goal on the tuning runs, as the committed output
    of ``tune_round6.py`` says."""
    text = TUNED.read_text(encoding="utf-8")
    pick = re.search(r"^chosen pick: (.+)$", text, flags=re.MULTILINE)
    meets = re.search(r"^meets the goal on the tuning runs: (True|False)$", text, re.MULTILINE)
    if pick is None or meets is None:
        raise SystemExit(f"{TUNED} holds no pick")
    return pick[1], meets[1] == "True"


def lineup(pick: str) -> tuple[list[str], list[Detector[object]]]:
    """The labels and detectors scored: the pick first, then each contender it is not."""
    detectors = [make_detector(n) for n in CONTENDERS]
    names = list(CONTENDERS)
    match = [i for i, d in enumerate(detectors) if d.name == pick]
    if not match:
        raise SystemExit(f"the pick {pick} is none of {CONTENDERS}: score it by its parameters")
    first = match[0]
    order = [first, *(i for i in range(len(names)) if i != first)]
    return [names[i] for i in order], [detectors[i] for i in order]


def paired(mine: Sequence[RunScore], theirs: Sequence[RunScore]) -> str:
    """McNemar's p on recall and on harmful stops, a paired bootstrap's on floored regret, with
    the discordant counts."""
    hack = [(a.stopped, b.stopped) for a, b in zip(mine, theirs, strict=True) if a.collapsing]
    heal = [
        (a.stop_class.value == "harmful", b.stop_class.value == "harmful")
        for a, b in zip(mine, theirs, strict=True)
        if not a.collapsing
    ]
    r1, r2 = sum(a and not b for a, b in hack), sum(b and not a for a, b in hack)
    h1, h2 = sum(a and not b for a, b in heal), sum(b and not a for a, b in heal)
    boot = paired_bootstrap([a.floored_regret for a in mine], [b.floored_regret for b in theirs])
    return (
        f"recall p {mcnemar(r1, r2):.2g} ({r1} vs {r2} caught by one only), harmful p "
        f"{mcnemar(h1, h2):.2g} ({h1} vs {h2}), floored regret p {p_value(boot.p_value)}"
    )


def interval(successes: int, trials: int) -> str:
    low, high = wilson(successes, trials)
    return f"{pct(successes / trials)} [{pct(low)}, {pct(high)}]"


HEADER = (
    "| detector | evaluations | runs (hacking) | recall | harmful | mean floored regret "
    "| median regret | regret > 5% | goal |",
    "|---|---|---|---|---|---|---|---|---|",
)


def row(name: str, evals: int, s: RegretSummary, caught: int) -> str:
    """One table row: ``caught`` of ``s``'s hacking runs stopped, at density ``evals`` (0:
    every run)."""
    goal = ("met" if met(s) else "NOT met") if evals else ""
    return (
        f"| {name} | {evals or 'all'} | {s.runs} ({s.collapsing}) | "
        f"{interval(caught, s.collapsing)} | {interval(s.harmful_healthy, s.healthy)} | "
        f"{pct(s.floored_regret)} | {pct(s.median_regret)} | {pct(s.over_share)} | {goal} |"
    )


def table(
    runs: Sequence[LabelledRun], names: Sequence[str], scores: Sequence[list[RunScore]]
) -> list[str]:
    """One row per detector and density (and every density), and the paired tests."""
    out = list(HEADER)
    for name, mine in zip(names, scores, strict=True):
        out += [
            row(name, evals, s, sum(mine[i].stopped and mine[i].collapsing for i in keep))
            for evals, keep, s in summaries(runs, mine)
        ]
    out.append("")
    for k, other in enumerate(names[1:], start=1):
        for evals, keep in by_density(runs):
            tests = paired([scores[0][i] for i in keep], [scores[k][i] for i in keep])
            where = f"{evals} evaluations" if evals else "every density"
            out.append(f"- {names[0]} vs {other}, {where}: {tests}")
    return out


def guard_lines(pick: str, detector: Detector[object]) -> tuple[list[str], bool]:
    """``SIG-11``'s guard of the pick against ``noise-aware``, and whether it passes."""
    verdict = guard(detector, make_detector("noise-aware"), HEALTHY)
    c, p = verdict.candidate, verdict.previous
    lines = [
        f"- {pick}: {c.caught} of {c.corpus.collapsing} hacking corpus curves stopped, "
        f"harmful stops {c.harmful[0]} of {c.corpus.healthy} healthy corpus curves and "
        f"{c.harmful[1]} of {c.supervised.healthy} supervised curves",
        f"- noise-aware: {p.caught} of {p.corpus.collapsing} stopped, harmful {p.harmful[0]} "
        f"and {p.harmful[1]}",
        f"- guard: {'passes' if verdict.passes else 'fails: ' + '; '.join(verdict.reasons)}",
        f"- healthy corpus curves {pick} stops harmfully: " + (", ".join(harmed(pick)) or "none"),
    ]
    return lines, verdict.passes


def decision(pick: str, dev: bool, test: bool, passes: bool) -> str:
    """``SIG-19``'s rule, in words."""
    said = (
        f"on the tuning runs {'met' if dev else 'NOT met'}, on this range "
        f"{'met' if test else 'NOT met'} at every density, guard "
        f"{'passes' if passes else 'fails'}"
    )
    adopt = dev and test and passes
    text = (
        f"`{pick}` meets the goal on the tuning runs and on this range and passes the guard "
        f"({said}): it becomes the one default (`SIG-11`)."
        if adopt
        else f"`{pick}` does not meet `SIG-19`'s rule ({said}): `noise-aware` stays the one "
        "default (`SIG-11`)."
    )
    if (pick == DEFAULT_DETECTOR) != adopt:
        text += f" The registry's DEFAULT_DETECTOR ({DEFAULT_DETECTOR}) disagrees."
    return text


def intro(pick: str, commit: str, runs: int) -> str:
    return (
        f"The sixth round's pick, `{pick}` (`SIG-16` at its shipped weights and threshold 0), "
        "was chosen by `docs/scripts/tune_round6.py` on gym dev seeds 0-2999 by round 4's rule "
        f"(`SIG-19`) and fixed in commit {commit} (its output `tune_round6.out`); no default "
        "or weight changed in this round (`learned`'s weights: commit 14572cb, `divergence`'s "
        "defaults: efbc5bf, `noise-aware`'s: `NAD-9`). Scored once on gym test seeds "
        f"{FIRST_SEED:,} to {FIRST_SEED + RUNS - 1:,} ({runs} runs, each at the density its "
        "config draws; never scored before), beside `noise-aware` (the default) and "
        "`divergence` (`DEV_PICK`) on the same runs. Goal (issue 26): recall >= 90%, harmful "
        "stops <= 5% of healthy runs, mean gain-floored regret <= 5%, at 10, 20 and 40 "
        "evaluations. Rates with 95% Wilson intervals; p-values: McNemar's exact test on stops, "
        "a paired bootstrap on the floored regret (2,000 resamples).\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True, help="the commit that fixed the pick")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    pick, dev = dev_verdict()
    names, detectors = lineup(pick)
    seeds = range(FIRST_SEED, FIRST_SEED + RUNS)
    runs = [r for _, _, r in generate_runs(seeds, workers=args.workers) if r is not None]
    scores = gym_scores(detectors, runs)
    test = all(
        met(
            summarize_runs([s for s, r in zip(scores[0], runs, strict=True) if r.config.evals == e])
        )
        for e in DENSITIES
    )
    lines, passes = guard_lines(names[0], detectors[0])
    page = [
        "# Issue 26, sixth round: the dev pick on a fresh test range\n",
        "<!-- generated by docs/scripts/gym_round6.py: do not edit -->\n",
        intro(names[0], args.commit, len(runs)),
        *table(runs, names, scores),
        "\n## Guard (`SIG-11`): the shipped corpus and the supervised curves\n",
        *lines,
        "\n## Decision\n",
        decision(names[0], dev, test, passes),
    ]
    publish(PAGE, page)


if __name__ == "__main__":
    main()
