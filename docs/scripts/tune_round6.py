"""Choose issue 26's sixth-round candidate on the gym's dev split (spec ``SIG-19``).

Run ``python docs/scripts/tune_round6.py --cache PATH --holdout-cache PATH >
docs/scripts/tune_round6.out`` (``--cache`` as ``tune_default.py``'s: a pickle of dev seeds
0-3999, checked on load; ``--holdout-cache`` a pickle of dev seeds 4000-4999).

Data: the gym's ``dev`` split only (``GYM-8``, distribution ``V2``): seeds 0-2999 choose;
seeds 4000-4999, which no earlier round read, are a hold-out scored once for the pick and the
shipped contenders, for information. Never read here: the gym's other split, the real RLHF
corpus the package ships and the supervised curves.

Candidates (``SIG-19``): ``learned`` at its shipped weights with seven thresholds, and thirty
``noise-aware`` points; the rule is round 4's (``tune_default.choose``). Printed for
information, choosing nothing: where the floored regret goes, other kept-checkpoint rules on
``learned``'s stops, ``learned`` held over a share of the steps, and ``learned`` joined with an
eval rule (both must have fired).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import pickle
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tune_default  # the same dev runs, the same goal, slack and rule

from evalstop.core.detectors import Detector, observe, start_watch
from evalstop.core.keep_floor import kept_indices
from evalstop.core.learned import LearnedStopDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.registry import make_detector
from evalstop.core.regret import RegretSummary, RunScore, summarize_runs
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.gym import fold_views, run_score, run_views
from evalstop.gym import LabelledRun
from evalstop.gym.generate import generate_runs

TUNING = 3000
HOLDOUT = range(4000, 5000)
THRESHOLDS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
CONTENDERS = ("learned", "divergence", "noise-aware")

Keep = Callable[[Sequence[int], Sequence[float]], int | None]
"""A keep rule: the kept checkpoint (0-based) after the given prefix of steps and scores."""


def grid() -> list[Detector[Any]]:
    """Every candidate, in grid order (``SIG-19``)."""
    learned: list[Detector[Any]] = [LearnedStopDetector(threshold=t) for t in THRESHOLDS]
    noise: list[Detector[Any]] = [
        NoiseAwareDetector(z=z, memory=m, warmup_evals=w)
        for z, m, w in itertools.product((1.0, 1.25, 1.5, 1.75, 2.0), (0.2, 0.3, 0.5), (3, 5))
    ]
    return learned + noise


def holdout_runs(cache: Path | None, workers: int) -> list[LabelledRun]:
    """Dev seeds 4000-4999, from ``cache`` when it holds exactly those."""
    if cache is not None and cache.exists():
        runs: list[LabelledRun] = pickle.loads(cache.read_bytes())
        if [r.config.seed for r in runs] == list(HOLDOUT):
            return runs
    runs = [r for _, _, r in generate_runs(HOLDOUT, workers=workers) if r is not None]
    if cache is not None:
        cache.write_bytes(pickle.dumps(runs))
    return runs


def cells(scores: Sequence[RunScore], runs: Sequence[LabelledRun]) -> dict[int, RegretSummary]:
    """The summary at each density."""
    return {
        e: summarize_runs([s for s, r in zip(scores, runs, strict=True) if r.config.evals == e])
        for e in DENSITIES
    }


def show_cells(label: str, scores: Sequence[RunScore], runs: Sequence[LabelledRun]) -> None:
    """One line: the worst slack and each density's recall, harmful rate and floored regret."""
    found = cells(scores, runs)
    parts = [
        f"{e}: rec {s.recall:5.1%} harm {s.harmful_rate:5.1%} floored {s.floored_regret:5.1%}"
        for e, s in sorted(found.items())
    ]
    print(f"  {label:44s} | slack {tune_default.slack(found):5.1f} | " + " | ".join(parts))


def where_regret_goes(scores: Sequence[RunScore], runs: Sequence[LabelledRun]) -> None:
    """Each density's mean floored regret split by kind of run and outcome (points of it)."""
    for e in DENSITIES:
        idx = [i for i, r in enumerate(runs) if r.config.evals == e]
        parts: dict[str, list[float]] = {}
        for i in idx:
            s = scores[i]
            kind = ("hacking " if s.collapsing else "healthy ") + (
                "stopped" if s.stopped else "ran"
            )
            parts.setdefault(kind, []).append(s.floored_regret)
        total = sum(sum(v) for v in parts.values()) / len(idx)
        text = "; ".join(
            f"{k} {len(v)} runs {100 * sum(v) / len(idx):.2f} (mean {sum(v) / len(v):.1%})"
            for k, v in sorted(parts.items())
        )
        print(f"    {e}: {100 * total:.2f} points = {text}")


def centred(scores: Sequence[float], half: int, triangular: bool) -> int | None:
    """The checkpoint whose centred mean of the scores seen (``half`` each side, cut at the
    ends; weights ``half + 1 - distance`` when ``triangular``) is highest, the first of ties."""
    best, value = None, -float("inf")
    for i in range(len(scores)):
        lo, hi = max(0, i - half), min(len(scores) - 1, i + half)
        weights = [half + 1 - abs(i - j) if triangular else 1 for j in range(lo, hi + 1)]
        mean = sum(w * scores[j] for w, j in zip(weights, range(lo, hi + 1), strict=True))
        mean /= sum(weights)
        if mean > value:
            best, value = i, mean
    return best


def keep_rules() -> dict[str, Keep]:
    """The kept-checkpoint rules compared on ``learned``'s stops."""
    rules: dict[str, Keep] = {"best raw score (DET-4)": functools.partial(last_kept, None)}
    for m in (0.02, 0.05, 0.1, 0.2, 0.3):
        rules[f"level keep, memory {m:g}"] = functools.partial(last_kept, m)
    for half, tri in itertools.product((1, 2), (False, True)):
        name = f"centred {'triangular' if tri else 'flat'} mean of {2 * half + 1}"
        rules[name] = functools.partial(centred_keep, half, tri)
    return rules


def last_kept(memory: float | None, steps: Sequence[int], scores: Sequence[float]) -> int | None:
    """The checkpoint ``kept_indices`` holds after the whole prefix (``RGT-6``)."""
    return kept_indices(steps, scores, memory)[-1]


def centred_keep(
    half: int, triangular: bool, steps: Sequence[int], scores: Sequence[float]
) -> int | None:
    """:func:`centred` as a keep rule."""
    del steps
    return centred(scores, half, triangular)


def keep_table(runs: Sequence[LabelledRun]) -> None:
    """``learned``'s stops (its shipped point), each kept by every rule, and by the oracle."""
    detector = make_detector("learned")
    stops = [fold_views(detector, run_views(r))[0] for r in runs]
    rules = keep_rules()
    for name, rule in rules.items():
        scores = []
        for r, stop in zip(runs, stops, strict=True):
            views = run_views(r)
            if stop is None:
                scores.append(run_score(r, None, len(views) - 1))
                continue
            seen = views[: stop + 1]
            kept = rule([v.step for v in seen], [v.eval_score for v in seen])
            scores.append(run_score(r, stop, kept))
        show_cells(name, scores, runs)
    oracle = []
    for r, stop in zip(runs, stops, strict=True):
        q = r.run.truth.quality
        last = len(q) - 1
        kept = last if stop is None else max(range(stop + 1), key=lambda i: (q[i], -i))
        oracle.append(run_score(r, stop, kept))
    show_cells("truly best checkpoint seen (oracle)", oracle, runs)


class Trace:
    """``learned``'s score (None where it cannot fire), its kept checkpoint and the latched
    fires of the eval rules, at each checkpoint of one run."""

    def __init__(self, run: LabelledRun, others: Sequence[Detector[Any]]) -> None:
        views = run_views(run)
        rule = LearnedStopDetector()
        state = rule.initial()
        self.steps = [v.step for v in views]
        self.score: list[float | None] = []
        self.kept: list[int | None] = []
        for view in views:
            state = rule.update(state, view)
            live = state.eval.evals >= rule.warmup_evals and not rule.uses_fallback(state)
            self.score.append(state.score if live and state.eval.differences else None)
            kept = rule.kept(state)
            self.kept.append(None if kept is None else self.steps.index(kept[0]))
        self.fires: list[list[bool]] = []
        for other in others:
            watch, fired = start_watch(other), []
            for view in views:
                watch = observe(other, watch, view)
                fired.append(watch.fired_step is not None)
            self.fires.append(fired)

    def holds(self, i: int, threshold: float) -> bool:
        score = self.score[i]
        return score is not None and score > threshold


def persist_stop(trace: Trace, threshold: float, share: float) -> int | None:
    """The first checkpoint (before the last) where the score has exceeded ``threshold`` at
    every evaluation since the last where it did not, over ``share`` of the steps (``SIG-15``)."""
    since: int | None = None
    previous: int | None = None
    for i, step in enumerate(trace.steps[:-1]):
        if not trace.holds(i, threshold):
            since, previous = None, step
            continue
        if since is None:
            since = step if previous is None else previous
        previous = step
        if step - since >= share * step:
            return i
    return None


def joined_stop(trace: Trace, threshold: float, other: int) -> int | None:
    """The first checkpoint (before the last) where both ``learned`` at ``threshold`` and the
    eval rule ``other`` have fired."""
    latched = False
    for i in range(len(trace.steps) - 1):
        latched = latched or trace.holds(i, threshold)
        if latched and trace.fires[other][i]:
            return i
    return None


def traced(
    runs: Sequence[LabelledRun], traces: Sequence[Trace], stop: Callable[[Trace], int | None]
) -> list[RunScore]:
    """Each run's score under the stopping rule ``stop``, keeping ``learned``'s checkpoint."""
    out = []
    for r, t in zip(runs, traces, strict=True):
        at = stop(t)
        out.append(run_score(r, at, t.kept[at] if at is not None else len(t.steps) - 1))
    return out


def variants(runs: Sequence[LabelledRun]) -> None:
    """``learned`` held over a share of the steps, and joined with an eval rule."""
    others: list[Detector[Any]] = [make_detector("divergence")]
    others += [NoiseAwareDetector(z=z) for z in (1.0, 1.25, 1.5)]
    traces = [Trace(r, others) for r in runs]
    print("\nlearned held over a share of the steps (SIG-15's form), shipped weights:")
    for share, t in itertools.product((0.05, 0.1), (-0.5, 0.0, 0.5)):
        scores = traced(runs, traces, functools.partial(persist_stop, threshold=t, share=share))
        show_cells(f"threshold {t:g}, share {share:g}", scores, runs)
    print("\nlearned joined with an eval rule (a stop when both have fired):")
    for k, other in enumerate(others):
        for t in (-1.5, -1.0, -0.75, -0.5, -0.25, 0.0):
            scores = traced(runs, traces, functools.partial(joined_stop, threshold=t, other=k))
            show_cells(f"learned {t:g} and {other.name[:24]}", scores, runs)


def information(tuning: Sequence[LabelledRun]) -> None:
    """The sections that choose nothing."""
    print("\nwhere the mean floored regret goes (tuning runs; points of it, by run and outcome):")
    for name in CONTENDERS:
        detector = make_detector(name)
        scores = [run_score(r, *fold_views(detector, run_views(r))) for r in tuning]
        print(f"  {name}")
        where_regret_goes(scores, tuning)
    print("\nlearned's stops, each kept by another rule (tuning runs):")
    keep_table(tuning)
    variants(tuning)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="gym worker processes (2)")
    parser.add_argument("--cache", type=Path, default=None, help="a pickle of dev seeds 0-3999")
    parser.add_argument("--holdout-cache", type=Path, default=None, help="dev seeds 4000-4999")
    args = parser.parse_args()
    start = time.process_time()
    tuning = tune_default.dev_runs(args.cache, args.workers)[:TUNING]
    rows = tune_default.score(grid(), tuning, args.workers)
    tune_default.show(
        f"gym dev split, tuning runs (seeds 0-{TUNING - 1}): {len(rows)} points", rows
    )
    best = tune_default.choose(rows)
    print(f"meets the goal with margin on the tuning runs: {tune_default.with_margin(best[1])}")
    print(f"meets the goal on the tuning runs: {tune_default.slack(best[1]) >= 0}")
    print(f"chosen pick: {best[0].name}")
    information(tuning)
    holdout = holdout_runs(args.holdout_cache, args.workers)
    print(
        f"\nhold-out inside dev (seeds {HOLDOUT[0]}-{HOLDOUT[-1]}; information, chooses nothing):"
    )
    contenders = [make_detector(n) for n in CONTENDERS]
    picked = [] if best[0].name in {d.name for d in contenders} else [best[0]]
    held = tune_default.score([*picked, *contenders], holdout)
    for row in held:
        show_cells(row[0].name[:44], row[2], holdout)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - start + children.ru_utime + children.ru_stime
    print(f"\nCPU seconds (this process and its workers): {cpu:.0f}")


if __name__ == "__main__":
    main()
