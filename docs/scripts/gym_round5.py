"""Score issue 26's fifth round once (spec ``SIG-17``): ``learned`` on a fresh range of the
gym's test split, paired with ``noise-aware`` (the default) and ``divergence``, and
``SIG-11``'s guard on the shipped corpus and the supervised curves. Writes ``docs/gym-round5.md``.

Run ``python docs/scripts/gym_round5.py --commit HASH > docs/scripts/gym_round5.out`` after
the commit that ships ``learned``'s weights (``HASH``). The range, seeds 1,002,000 to
1,003,099, was written into ``SIG-17`` before this script ran; rounds 3 and 4 scored seeds
1,000,000 to 1,001,099. Nothing here chooses anything: the verdict follows the rule the spec
wrote down (the goal at every density and the guard).
"""

from __future__ import annotations

import argparse
import resource
from collections.abc import Sequence
from pathlib import Path

from evalstop.core.registry import DEFAULT_DETECTOR, make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.guard import guard
from evalstop.experiments.scoreboard.gym import gym_scores
from evalstop.experiments.significance import mcnemar, paired_bootstrap
from evalstop.gym import LabelledRun
from evalstop.gym.generate import generate_runs
from evalstop.traces.corpus import GOLD_MODE, catalogue, default_data_dir, read_label, score_curve

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "tests" / "data" / "healthy-supervised"
PAGE = ROOT / "docs" / "gym-round5.md"
FIRST_SEED = 1_002_000
RUNS = 1100
CANDIDATE = "learned"
NAMES: tuple[str, ...] = (CANDIDATE, "noise-aware", "divergence")


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def met(s: RegretSummary) -> bool:
    """Issue 26's goal for the default at one density (``SCB-10``)."""
    return s.recall >= 0.9 and s.harmful_rate <= 0.05 and s.floored_regret <= 0.05


def paired(mine: Sequence[RunScore], theirs: Sequence[RunScore]) -> str:
    """McNemar's p on recall and on harmful stops, a paired bootstrap's on floored regret."""
    hack = [(a.stopped, b.stopped) for a, b in zip(mine, theirs, strict=True) if a.collapsing]
    heal = [
        (a.stop_class.value == "harmful", b.stop_class.value == "harmful")
        for a, b in zip(mine, theirs, strict=True)
        if not a.collapsing
    ]
    p_rec = mcnemar(sum(a and not b for a, b in hack), sum(b and not a for a, b in hack))
    p_harm = mcnemar(sum(a and not b for a, b in heal), sum(b and not a for a, b in heal))
    boot = paired_bootstrap([a.floored_regret for a in mine], [b.floored_regret for b in theirs])
    return f"recall p {p_rec:.2g}, harmful p {p_harm:.2g}, floored regret p {p_value(boot.p_value)}"


def p_value(p: float) -> str:
    """A bootstrap p of 0 is below its resolution (2,000 resamples)."""
    return "< 0.001" if p == 0 else f"{p:.2g}"


def by_density(runs: Sequence[LabelledRun]) -> list[tuple[int, list[int]]]:
    """Each density's run indices, then every run's (density 0)."""
    return [
        (evals, [i for i, r in enumerate(runs) if evals in (0, r.config.evals)])
        for evals in (*DENSITIES, 0)
    ]


def summaries(
    runs: Sequence[LabelledRun], mine: Sequence[RunScore]
) -> list[tuple[int, list[int], RegretSummary]]:
    """Each density's (then every run's) indices and ``mine``'s summary over them."""
    return [(e, keep, summarize_runs([mine[i] for i in keep])) for e, keep in by_density(runs)]


def table(runs: Sequence[LabelledRun], scores: Sequence[list[RunScore]]) -> list[str]:
    """One row per detector and density (and every density), and the paired tests."""
    out = [
        "| detector | evaluations | runs (hacking) | recall | harmful | mean floored regret "
        "| goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, mine in zip(NAMES, scores, strict=True):
        for evals, _, s in summaries(runs, mine):
            goal = ("met" if met(s) else "NOT met") if evals else ""
            out.append(
                f"| {name} | {evals or 'all'} | {s.runs} ({s.collapsing}) | {pct(s.recall)} | "
                f"{pct(s.harmful_rate)} | {pct(s.floored_regret)} | {goal} |"
            )
    out.append("")
    for other in NAMES[1:]:
        theirs = scores[NAMES.index(other)]
        for evals, keep in by_density(runs):
            tests = paired([scores[0][i] for i in keep], [theirs[i] for i in keep])
            where = f"{evals} evaluations" if evals else "every density"
            out.append(f"- {CANDIDATE} vs {other}, {where}: {tests}")
    return out


def harmed(name: str) -> list[str]:
    """The healthy corpus curves ``name`` stops harmfully (as ``real_scores`` scores them)."""
    data, detector, out = default_data_dir(), make_detector(name), []
    for source in catalogue(data):
        if source.excluded:
            continue
        gold, proxy = source.read(data, source.gold), source.read(data, source.proxy)
        if read_label(gold, proxy, source.scale).label != "healthy":
            continue
        score = score_curve(gold, detector, False, GOLD_MODE, source.scale, proxy=proxy)[0]
        if score.stop_class.value == "harmful":
            out.append(f"{source.name} (regret {pct(score.regret)})")
    return out


def publish(path: Path, page: Sequence[str]) -> None:
    """Write ``page`` to ``path``, print it and the CPU seconds of this process and its
    workers (the round scripts' committed ``.out``)."""
    path.write_text("\n".join(page) + "\n", encoding="utf-8")
    print("\n".join(page))
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    print(f"\nCPU seconds (this process and its workers): {cpu:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True, help="the commit that shipped the weights")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    seeds = range(FIRST_SEED, FIRST_SEED + RUNS)
    runs = [r for _, _, r in generate_runs(seeds, workers=args.workers) if r is not None]
    scores = gym_scores([make_detector(n) for n in NAMES], runs)
    lines = table(runs, scores)
    by_density = {
        e: summarize_runs([s for s, r in zip(scores[0], runs, strict=True) if r.config.evals == e])
        for e in DENSITIES
    }
    goal = all(met(s) for s in by_density.values())
    verdict = guard(make_detector(CANDIDATE), make_detector("noise-aware"), HEALTHY)
    c, p = verdict.candidate, verdict.previous
    guard_lines = [
        f"- {CANDIDATE}: {c.caught} of {c.corpus.collapsing} hacking corpus curves stopped, "
        f"harmful stops {c.harmful[0]} of {c.corpus.healthy} healthy corpus curves and "
        f"{c.harmful[1]} of {c.supervised.healthy} supervised curves",
        f"- noise-aware: {p.caught} of {p.corpus.collapsing} stopped, harmful {p.harmful[0]} "
        f"and {p.harmful[1]}",
        f"- guard: {'passes' if verdict.passes else 'fails: ' + '; '.join(verdict.reasons)}",
        f"- healthy corpus curves {CANDIDATE} stops harmfully: "
        + (", ".join(harmed(CANDIDATE)) or "none"),
    ]
    adopt = goal and verdict.passes
    decision = (
        f"`{CANDIDATE}` meets the goal at every density and passes the guard: it becomes the "
        "one default (`SIG-11`)."
        if adopt
        else f"`{CANDIDATE}` does not meet the goal at every density and the guard "
        f"({'met' if goal else 'NOT met'} / {'passes' if verdict.passes else 'fails'}): "
        "`noise-aware` stays the one default (`SIG-11`)."
    )
    if (DEFAULT_DETECTOR == CANDIDATE) != adopt:
        decision += f" The registry's DEFAULT_DETECTOR ({DEFAULT_DETECTOR}) disagrees."
    page = [
        "# Issue 26, fifth round: the learned stop rule on a fresh test range\n",
        "<!-- generated by docs/scripts/gym_round5.py: do not edit -->\n",
        f"`{CANDIDATE}` (`SIG-16`), fitted on gym dev seeds 0-2999 by "
        "`docs/scripts/tune_learned.py` and shipped in commit "
        f"{args.commit}, scored once (`SIG-17`) on gym test seeds {FIRST_SEED:,} to "
        f"{FIRST_SEED + RUNS - 1:,} ({len(runs)} runs, each at the density its config draws; "
        "never scored before), beside `noise-aware` (the default) and `divergence` (round "
        "4's pick) on the same runs. Goal (issue 26): recall >= 90%, harmful stops <= 5% of "
        "healthy runs, mean gain-floored regret <= 5%, at 10, 20 and 40 evaluations. p-values: "
        "McNemar's exact test on stops, a paired bootstrap on the floored regret.\n",
        *lines,
        "\n## Guard (`SIG-11`): the shipped corpus and the supervised curves\n",
        *guard_lines,
        "\n## Decision\n",
        decision,
    ]
    publish(PAGE, page)


if __name__ == "__main__":
    main()
