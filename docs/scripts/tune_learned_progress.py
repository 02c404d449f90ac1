"""What knowing a run's planned length would add to ``learned`` (information for issue 26's
next step; it chooses nothing, spec ``SIG-17``).

Run ``python docs/scripts/tune_learned_progress.py --cache PATH > ...progress.out`` (the cache
as ``tune_default.py``'s). Data: the gym's ``dev`` split only, as ``tune_learned.py``: the fit
on seeds 0-2999, the hold-out seeds 3000-3999. The features are ``learned``'s fifteen plus the
run's progress (the step over the run's last step, which the gym and a replay know and
``Monitor`` and ``evalstop watch`` do not) and its products with ``drop``, ``gain``, ``lost``,
``proxy_share`` and ``age``; the fit is ``tune_learned.py``'s, start by start. It is not a
shipped detector: ``SIG-16`` reads no planned length because not every entry point knows it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tune_default
import tune_learned
from tune_learned import Table

from evalstop.core.learned import LearnedStopDetector, features
from evalstop.experiments.scoreboard.gym import run_views
from evalstop.gym import LabelledRun

WITH = (0, 1, 2, 4, 5)
"""The features multiplied by the progress (drop, gain, lost, proxy_share, age)."""


def progress(runs: Sequence[LabelledRun]) -> list[float]:
    """The progress at each of :class:`Table`'s rows, in its order."""
    rule, out = LearnedStopDetector(), []
    for run in runs:
        state = rule.initial()
        for view in run_views(run)[:-1]:
            state = rule.update(state, view)
            usable = features(state) is not None and rule.kept(state) is not None
            if usable and state.eval.evals >= rule.warmup_evals:
                out.append(view.estimated_progress)
    return out


def with_progress(runs: Sequence[LabelledRun]) -> Table:
    """:class:`Table` of ``runs`` with the progress features appended."""
    table = Table(runs)
    p = np.array(progress(runs))[:, None]
    table.x = np.hstack([table.x, p, p * table.x[:, WITH]])
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="tune_default.py's pickle")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    runs = tune_default.dev_runs(args.cache, args.workers)
    tuning, holdout = with_progress(runs[:3000]), with_progress(runs[3000:])
    print("learned's features plus the planned length's progress; tuning seeds 0-2999, hold-out")
    print("seeds 3000-3999 (the same fit as tune_learned.py, start by start):")
    for index in range(len(tune_learned.STARTS)):
        w, b = tune_learned.search(tuning, index)
        print(tune_learned.line(f"start {index}, tuning", tuning.cells(w, b)))
        print(tune_learned.line(f"start {index}, hold-out", holdout.cells(w, b)))


if __name__ == "__main__":
    main()
