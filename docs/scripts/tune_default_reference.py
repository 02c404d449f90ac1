"""An upper reference for issue 26's goal on the dev split: how many hacking runs a flexible
classifier flags at a harmful-stop rate of 5% when it sees each run up to the last checkpoint
where a stop still counts (information for ``SIG-9``'s fourth round; it chooses nothing).

Run ``python docs/scripts/tune_default_reference.py --cache PATH > ...reference.out`` (the
cache as ``tune_default.py``'s). Data: the 3,000 dev runs ``tune_default.py`` tunes on (seeds
0-2999), nothing else. For each density, each run's features are its eval, proxy and sqrt(KL)
at nine evenly spaced checkpoints before its last (eval and proxy relative to their first
value, over their range), its eval roughness and its eval-to-proxy range ratio; a
gradient-boosted classifier's 5-fold cross-validated probability of `hacking` then flags the
runs above the lowest threshold whose flagged healthy runs that a stop at that checkpoint
would harm (the noise-aware level keep, ``NAD-10``, more than 5% of the gain below the best)
are at most 5% of the healthy runs. It is not a detector: it needs the run's planned length and
is not an O(1) fold.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.regret import HARMFUL_REGRET, regret_fraction
from evalstop.experiments.grid import DENSITIES
from evalstop.experiments.scoreboard.gym import run_views
from evalstop.gym import LabelledRun

TUNING = 3000


def features(run: LabelledRun) -> tuple[list[float], bool]:
    """The run's features up to its last checkpoint but one, and whether a stop there, keeping
    the noise-aware level keep's checkpoint, would be harmful."""
    views = run_views(run)[:-1]
    ev = np.array([v.eval_score for v in views])
    proxy = np.array([v.proxy_reward or 0.0 for v in views])
    kl = np.array([max(v.kl or 0.0, 0.0) for v in views])
    scale, pscale = max(ev.max() - ev.min(), 1e-9), max(proxy.max() - proxy.min(), 1e-9)
    at = np.linspace(0, len(views) - 1, 9).round().astype(int)
    rough = float(np.abs(np.diff(ev, 2)).mean()) / scale
    ratio = scale / max(abs(float(proxy[-1] - proxy[0])), 1e-9)
    row = [*((ev[at] - ev[0]) / scale), *((proxy[at] - proxy[0]) / pscale), *np.sqrt(kl[at])]
    rule = NoiseAwareDetector()
    state = rule.initial()
    for view in views:
        state = rule.update(state, view)
    kept = rule.kept(state)
    assert kept is not None
    index = next(i for i, v in enumerate(views) if v.step == kept[0])
    quality = run.run.truth.quality
    harm = regret_fraction(max(quality), quality[0], quality[index]) > HARMFUL_REGRET
    return [*(float(x) for x in row), rough, ratio], harm


def reference(runs: list[LabelledRun]) -> tuple[float, float]:
    """Recall and harmful rate at the lowest threshold with harmful stops <= 5%."""
    rows = [features(r) for r in runs]
    x = np.array([f for f, _ in rows])
    y = np.array([r.label == "hacking" for r in runs])
    harm = np.array([h for _, h in rows])
    model: Any = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    p = cross_val_predict(model, x, y, cv=folds, method="predict_proba")[:, 1]
    healthy = ~y
    for threshold in sorted(set(p.tolist())):
        flagged = p >= threshold
        rate = float((flagged & healthy & harm).sum() / healthy.sum())
        if rate <= 0.05:
            return float((flagged & y).sum() / y.sum()), rate
    return 0.0, 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="tune_default.py's pickle")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import tune_default  # the same runs, from the same cache

    runs = tune_default.dev_runs(args.cache, args.workers)[:TUNING]
    for evals in DENSITIES:
        mine = [r for r in runs if r.config.evals == evals]
        recall, rate = reference(mine)
        hacking = sum(r.label == "hacking" for r in mine)
        print(
            f"{evals} evaluations: {len(mine)} runs, {hacking} hacking; flagged {recall:.1%} of "
            f"hacking runs at harmful {rate:.1%} (5-fold cross-validated)"
        )


if __name__ == "__main__":
    main()
