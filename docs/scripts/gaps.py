"""One factor at a time: what moves EvalStop's figures away from the paper's (docs/reproduction.md).

``python docs/scripts/gaps.py [--seeds 5] [--jobs 1000]`` starts from the ``paper`` world and
changes one factor at a time toward the ``calibrated`` world (or toward no noise, or denser
evaluation), runs ``srtf-est`` and ``evalstop+srtf-est`` (k = 2) on the same workloads, and
prints a markdown table: precision, recall, FPR, the JCT, post-peak (MET-5) and RLHF GPU-time
(MET-8) changes, and why the missed hacking runs were missed:

- *short tail*: fewer than k + 1 checkpoints after the true peak, so even noise-free scores
  cannot complete k declines before the run's own end;
- *fires at end*: the observed scores complete k declines only at the last checkpoint, when the
  run ends anyway (a stop there saves nothing and does not count);
- *noise*: the remaining misses, whose post-peak declines the noise breaks up.

Nothing here is tuned: the factors are the worlds' own parameters (spec CRV-7).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

import attrs

from evalstop.core.model import Job, JobKind
from evalstop.core.registry import make_policy
from evalstop.sim.detection import detection_metrics
from evalstop.sim.metrics import job_outcomes, system_metrics
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import CALIBRATED, PAPER, World

__all__ = ["VARIANTS", "K", "Variant", "fire_index", "main", "measure", "miss_reason", "toward"]

K = 2


@attrs.frozen(slots=True)
class Variant:
    """One row: a name, the world and the overrides of the workload."""

    name: str
    world: World
    eval_noise: float | None = None
    evals_per_run: int | None = None


def toward(name: str, *fields: str) -> Variant:
    """The row ``name``: the paper world with its ``fields`` set to the calibrated world's."""
    return Variant(name, attrs.evolve(PAPER, **{f: getattr(CALIBRATED, f) for f in fields}))


VARIANTS = (
    Variant("paper world (sigma 0.02, 10 evaluations)", PAPER),
    Variant("sigma 0", PAPER, eval_noise=0.0),
    Variant(
        f"sigma {CALIBRATED.eval_noise:g} (calibrated noise)",
        PAPER,
        eval_noise=CALIBRATED.eval_noise,
    ),
    Variant("20 evaluations per run", PAPER, evals_per_run=20),
    Variant("40 evaluations per run", PAPER, evals_per_run=40),
    toward(f"calibrated collapse speed (kappa {CALIBRATED.decline_rate:g})", "decline_rate"),
    toward("calibrated turn range U({:g}, {:g})".format(*CALIBRATED.turn_range), "turn_range"),
    toward(
        f"calibrated rise (on the planned steps, plateau share {CALIBRATED.plateau_share:g})",
        "plateau_share",
        "rise_on_plan",
    ),
    toward(
        "calibrated noise spread logU({:g}, {:g})".format(*CALIBRATED.noise_spread),
        "noise_spread",
    ),
    toward(
        f"calibrated step schedules (share {CALIBRATED.step_share:g})",
        "step_share",
        "step_drop_range",
        "step_level_range",
    ),
    *(
        [toward(f"{CALIBRATED.rlhf_evals} evaluations per run (calibrated density)", "rlhf_evals")]
        if CALIBRATED.rlhf_evals != PAPER.rlhf_evals
        else []
    ),
    Variant("calibrated world (all of the above)", CALIBRATED),
)
"""The rows: the paper world, then one factor changed at a time (the calibrated density only
where it differs from the paper's), then the calibrated world."""


def fire_index(scores: Sequence[float], k: int = K) -> int | None:
    """0-based index of the checkpoint at which k consecutive declines complete, or None."""
    run = 0
    for i in range(1, len(scores)):
        run = run + 1 if scores[i] < scores[i - 1] else 0
        if run >= k:
            return i
    return None


def miss_reason(job: Job, k: int = K) -> str:
    """Why a hacking job that ran to its end was not stopped (see the module docstring)."""
    after_peak = job.checkpoints - 1 - job.truth.peak_index
    if after_peak < k + 1:
        return "short tail"
    fired = fire_index([obs.eval_score for obs in job.observations], k)
    return "fires at end" if fired == job.checkpoints - 1 else "noise"


def _change(system: float, base: float) -> float:
    return 100.0 * (system - base) / base


def measure(variant: Variant, seeds: int, jobs: int) -> dict[str, float]:
    """Mean figures of ``variant`` over ``seeds`` workloads of ``jobs`` jobs."""
    config = WorkloadConfig(
        n_jobs=jobs,
        world=variant.world,
        eval_noise=variant.eval_noise,
        evals_per_run=variant.evals_per_run,
    )
    rows: list[dict[str, float]] = []
    for seed in range(seeds):
        workload = generate(config, seed)
        by_id = {job.job_id: job for job in workload.jobs}
        base = system_metrics(simulate(workload, make_policy("srtf-est"), Cluster()))
        result = simulate(workload, make_policy("evalstop+srtf-est", k=K), Cluster())
        outcomes = job_outcomes(result)
        ours = system_metrics(result, list(outcomes.values()))
        det = detection_metrics(outcomes.values(), by_id)
        missed = [
            miss_reason(by_id[o.job_id])
            for o in outcomes.values()
            if o.kind is JobKind.RLHF and o.hacking and not o.stopped
        ]
        hacking = det.tp + det.fn
        row = {
            "precision": det.precision,
            "recall": det.recall,
            "fpr": det.fpr,
            "jct": _change(ours.jct.mean, base.jct.mean),
            "wasted": _change(ours.wasted_gpu_time, base.wasted_gpu_time),
            "rlhf": _change(ours.rlhf_gpu_time, base.rlhf_gpu_time),
        }
        for reason in ("short tail", "fires at end", "noise"):
            row[reason] = missed.count(reason) / hacking if hacking else float("nan")
        rows.append(row)
    return {key: statistics.fmean(row[key] for row in rows) for key in rows[0]}


def render(results: Sequence[tuple[Variant, dict[str, float]]], seeds: int, jobs: int) -> str:
    """The markdown table."""
    lines = [
        f"*{seeds} seeds of {jobs} jobs per row; EvalStop(k={K}) over srtf-est against srtf-est "
        "alone; misses as a share of hacking runs.*",
        "",
        "| change from the paper world | precision | recall | FPR | JCT | post-peak GPU-time "
        "| RLHF GPU-time | missed: short tail | missed: fires at end | missed: noise |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, m in results:
        pct = [f"{100 * m[key]:.1f}%" for key in ("precision", "recall", "fpr")]
        change = [f"{m[key]:+.1f}%" for key in ("jct", "wasted", "rlhf")]
        miss = [f"{100 * m[key]:.1f}%" for key in ("short tail", "fires at end", "noise")]
        lines.append("| " + " | ".join([variant.name, *pct, *change, *miss]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the one-factor-at-a-time table."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/gaps.py", description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args(argv)
    results = [(v, measure(v, args.seeds, args.jobs)) for v in VARIANTS]
    print(render(results, args.seeds, args.jobs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
