"""Scale: a 100,000-job synthetic simulation on 6,400 GPUs, and the whole Philly trace.

Each case runs in a fresh Python process, so its peak resident memory (``ru_maxrss``) is its
own; building the workload (generating it, or reading the trace and attaching curves) and
simulating it are timed apart. The Philly case runs all 82,247 jobs on a cluster sized to the
trace's load (spec PHL-3: the smallest multiple of 8 GPUs at offered load <= 0.9), at their
real arrival times.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence

from evalstop.core.model import Job
from evalstop.core.registry import make_policy
from evalstop.experiments.tables import format_table
from evalstop.sim.philly import TraceSpec, trace_workload
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate

__all__ = ["main", "run_case"]

Figures = dict[str, float | str]


def _build(case: str, jobs: int, gpus: int) -> tuple[tuple[Job, ...], int]:
    if case == "philly":
        workload, fitted = trace_workload(TraceSpec(load=0.9), seed=0)
        return workload.jobs, fitted.gpus
    return generate(WorkloadConfig(n_jobs=jobs, gpus=gpus), seed=0).jobs, gpus


def run_case(case: str, policy: str, jobs: int, gpus: int) -> Figures:
    """Build and simulate one case in this process; times in seconds, memory in MiB."""
    start = time.perf_counter()
    workload, cluster_gpus = _build(case, jobs, gpus)
    built = time.perf_counter()
    result = simulate(workload, make_policy(policy), Cluster(gpus=cluster_gpus))
    done = time.perf_counter()
    return {
        "case": case,
        "policy": policy,
        "jobs": float(len(workload)),
        "gpus": float(cluster_gpus),
        "events": float(result.events),
        "build_s": built - start,
        "simulate_s": done - built,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _in_subprocess(case: str, policy: str, jobs: int, gpus: int) -> Figures:
    args = ["--case", case, "--policy", policy, "--jobs", str(jobs), "--gpus", str(gpus)]
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    figures: Figures = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_scale.py")
    parser.add_argument("--policy", action="append", help="default: evalstop+srtf-est")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--gpus", type=int, default=6_400)
    parser.add_argument("--case", choices=("synthetic", "philly"), default=None)
    args = parser.parse_args(argv)
    policies = args.policy or ["evalstop+srtf-est"]
    if args.case is not None:  # the child: one case, one JSON line
        print(json.dumps(run_case(args.case, policies[0], args.jobs, args.gpus)))
        return 0
    rows = []
    for policy in policies:
        for case in ("synthetic", "philly"):
            r = _in_subprocess(case, policy, args.jobs, args.gpus)
            rows.append(
                [
                    f"{r['case']}, {policy}",
                    f"{int(r['jobs']):,} jobs, {int(r['gpus']):,} GPUs",
                    f"{int(r['events']):,}",
                    f"{r['build_s']:.1f}",
                    f"{r['simulate_s']:.1f}",
                    f"{float(r['events']) / float(r['simulate_s']):,.0f}",
                    f"{r['peak_mib']:,.0f}",
                ]
            )
    header = ["case", "size", "events", "build s", "simulate s", "events/s", "peak MiB"]
    print(format_table(header, rows, title="scale benchmark (one process per case)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
