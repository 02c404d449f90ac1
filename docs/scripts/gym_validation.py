"""The gym against its goals and against Gao et al.'s law (spec ``GYM-12``, issue 22).

``python docs/scripts/gym_validation.py`` generates the first runs of the ``dev`` split
(default 500) and prints: the hacking share and the labels at each evaluation density; the
distribution of the ``R^2`` of Gao's RL form ``R(d) = d (alpha - beta log d)``,
``d = sqrt(KL)``, fitted to each run's exact gold against its exact KL (hacking and healthy);
the eval noise over the gain of healthy runs with the real corpus's own estimator
(``calibration.py``'s ``noise_sd`` over the observed gain, maximum minus first observed score,
on the observed scores), with the step-0 point (as the real curves have theirs) and without it;
where hacking runs peak; the
hacking share and the KL at the gold peak by KL coefficient, proxy samples and capacity (Gao's
qualitative findings); and, from the label counts of the first runs of the ``test`` split
(the docs may read it, ``GYM-8``), the half-width of a 95% Wilson interval on a rate over its
hacking runs (recall) and over its healthy runs (harmful stops). No detector runs here. The
output is committed beside it (``gym_validation.out``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from calibration import noise_sd

from evalstop.experiments.scoreboard.gym import GYM_RUNS
from evalstop.gym import Checkpoint, LabelledRun, RunConfig, RunResult, Truth, generate_split
from evalstop.gym.config import DISTRIBUTION
from evalstop.gym.gao import fit_gao

__all__ = ["main", "noise_sd", "observed_ratio", "read_runs", "render", "wilson_half_width"]

QUANTILES = (5, 10, 25, 50, 75, 90, 95)
LOW, HIGH = 0.03, 0.45
"""The real corpus's range of eval noise over gain (issue 22)."""


def read_runs(folder: Path) -> list[LabelledRun]:
    """The runs ``evalstop gym`` wrote into ``folder``, in their order."""
    runs = []
    for run_dir in sorted(folder.glob("run-*")):
        truth = json.loads((run_dir / "truth.json").read_text(encoding="utf-8"))
        lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        checkpoints = tuple(Checkpoint(**json.loads(line)) for line in lines)
        hidden = Truth(tuple(truth["true_quality"]), tuple(truth["true_kl"]))
        run = RunResult(RunConfig(**truth["params"]), checkpoints, hidden)
        runs.append(LabelledRun(run, truth["label"]))
    return runs


def observed_ratio(values: Sequence[float]) -> float:
    """The corpus's noise over gain of one observed curve (``calibration.py``: ``noise_sd``
    over the maximum minus the first value); NaN without a gain."""
    gain = max(values) - values[0]
    return noise_sd(values) / gain if gain > 0 else math.nan


def wilson_half_width(p: float, n: int, z: float = 1.959964) -> float:
    """Half the width of the Wilson score interval of a rate ``p`` over ``n`` trials."""
    return z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)


def _quantiles(values: Sequence[float]) -> str:
    if not values:
        return "-"
    q = np.percentile(np.asarray(values), QUANTILES)
    return "  ".join(f"p{k}={v:.3f}" for k, v in zip(QUANTILES, q, strict=True))


def _peak_kl(run: LabelledRun) -> float:
    quality = run.run.truth.quality
    return run.run.truth.kl[max(range(len(quality)), key=quality.__getitem__)]


def _cells(runs: Sequence[LabelledRun]) -> list[str]:
    """Hacking share and median KL at the gold peak, by KL coefficient x proxy samples x
    capacity."""
    kl_bins: list[tuple[str, Callable[[float], bool]]] = [
        ("kl_coef 0", lambda c: c == 0.0),
        ("kl_coef 0.01-0.1", lambda c: 0.0 < c < 0.1),
        (f"kl_coef 0.1-{DISTRIBUTION.kl_coef[1]:g}", lambda c: c >= 0.1),
    ]
    lines = [f"{'cell':46s}  runs  hacking  median KL at peak (hacking)"]
    for kl_name, kl_in in kl_bins:
        for low, high in ((20, 200), (200, 2001)):
            for capacity in (1, 2):
                cell = [
                    r
                    for r in runs
                    if kl_in(r.config.kl_coef)
                    and low <= r.config.proxy_samples < high
                    and r.config.capacity == capacity
                ]
                hacking = [r for r in cell if r.label == "hacking"]
                share = len(hacking) / len(cell) if cell else math.nan
                peak = float(np.median([_peak_kl(r) for r in hacking])) if hacking else math.nan
                name = f"{kl_name}, proxy {low}-{min(high, 2000)}, capacity {capacity}"
                lines.append(f"{name:46s} {len(cell):5d}  {share:7.0%}  {peak:8.2f}")
    return lines


def render(runs: Sequence[LabelledRun], test_counts: dict[str, int] | None) -> str:
    """The report's text."""
    hacking = [r for r in runs if r.label == "hacking"]
    healthy = [r for r in runs if r.label == "healthy"]
    out = [
        f"dev split, first {len(runs)} runs: {len(hacking)} hacking "
        f"({len(hacking) / len(runs):.1%}), {len(healthy)} healthy"
    ]
    for evals in (10, 20, 40):
        cell = [r for r in runs if r.config.evals == evals]
        k = sum(r.label == "hacking" for r in cell)
        out.append(f"  {evals} evals: {len(cell)} runs, {k} hacking, {len(cell) - k} healthy")
    fits = {id(r): fit_gao(r.run.truth.quality, r.run.truth.kl) for r in runs}
    for name, group in (("hacking", hacking), ("healthy", healthy)):
        r2 = [fits[id(r)].r2 for r in group if math.isfinite(fits[id(r)].r2)]
        out.append(
            f"Gao R^2, {name} ({len(r2)} runs): median {np.median(r2):.3f}; {_quantiles(r2)}"
        )
    alphas = [fits[id(r)].alpha for r in hacking]
    betas = [fits[id(r)].beta for r in hacking]
    out.append(
        f"Gao fit, hacking: median alpha {np.median(alphas):.3f}, "
        f"median beta {np.median(betas):.3f}"
    )
    for name, first in (("with the step-0 point", 0), ("without it", 1)):
        ratios = [
            observed_ratio([c.eval_score for c in r.run.checkpoints][first:]) for r in healthy
        ]
        finite = [x for x in ratios if math.isfinite(x)]
        inside = sum(LOW <= x <= HIGH for x in finite)
        out.append(
            f"eval noise / observed gain, healthy, {name} ({len(finite)} runs with a gain): "
            f"{_quantiles(finite)}"
        )
        out.append(
            f"  within the real corpus's {LOW}-{HIGH}: {inside} of {len(finite)} "
            f"({inside / len(finite):.0%})"
        )
    where = [
        max(range(len(q)), key=q.__getitem__) / (len(q) - 1)
        for q in (r.run.truth.quality for r in hacking)
    ]
    out.append(f"gold peak as a share of the run, hacking: {_quantiles(where)}")
    out.extend(_cells(runs))
    if test_counts is not None:
        n_h, n_ok = test_counts["hacking"], test_counts["healthy"]
        out.append(f"test split, first {n_h + n_ok} runs: {n_h} hacking, {n_ok} healthy")
        for p in (0.5, 0.8, 0.9, 0.95):
            out.append(
                f"  95% Wilson half-width: recall {p:.2f} over {n_h} hacking runs "
                f"+-{100 * wilson_half_width(p, n_h):.1f} pts; harmful-stop rate {1 - p:.2f} "
                f"over {n_ok} healthy runs +-{100 * wilson_half_width(1 - p, n_ok):.1f} pts"
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="dev runs (500)")
    parser.add_argument(
        "--test-runs",
        type=int,
        default=GYM_RUNS,
        help=f"test runs to count ({GYM_RUNS}, the scoreboard's gym track; 0: none)",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--dev-dir", type=Path, help="read the dev runs `evalstop gym` wrote")
    parser.add_argument("--test-dir", type=Path, help="read the test runs `evalstop gym` wrote")
    args = parser.parse_args(argv)
    started = time.process_time()
    if args.dev_dir is not None:
        runs = read_runs(args.dev_dir)
    else:
        runs = generate_split("dev", args.runs, workers=args.workers)
    counts = None
    if args.test_dir is not None or args.test_runs:
        test = (
            read_runs(args.test_dir)
            if args.test_dir is not None
            else generate_split("test", args.test_runs, workers=args.workers)
        )
        counts = {
            "hacking": sum(r.label == "hacking" for r in test),
            "healthy": sum(r.label == "healthy" for r in test),
        }
    print(render(runs, counts))
    print(f"(main-process CPU {time.process_time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
